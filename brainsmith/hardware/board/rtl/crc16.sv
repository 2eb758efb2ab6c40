// CRC-16/CCITT-FALSE (polynomial 0x1021, no reflection, no final xor; start from 16'hFFFF):
// the register after one more byte, MSB first.
module brainsmith_crc16 (
  input  logic [15:0] crc,
  input  logic [7:0]  data,
  output logic [15:0] next
);
  always_comb begin
    next = crc ^ {data, 8'h00};
    for (int i = 0; i < 8; i++) next = next[15] ? {next[14:0], 1'b0} ^ 16'h1021 : {next[14:0], 1'b0};
  end
endmodule
