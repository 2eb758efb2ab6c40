// UART transmitter, 8N1, LSB first. A byte is taken when `valid` and `ready` are both high
// (`ready`: the line is idle); the line stays high between bytes.
module brainsmith_uart_tx #(
  parameter int CLKS_PER_BIT = 868  // clock / baud rate, >= 4
) (
  input  logic       clk,
  input  logic       rst_n,  // synchronous, active low
  input  logic [7:0] data,
  input  logic       valid,
  output logic       ready,
  output logic       tx      // idle high
);
  localparam int CW = $clog2(CLKS_PER_BIT + 1);

  logic [9:0] shift;  // stop, data[7:0], start: shifted out LSB first
  logic [3:0] bits_left;
  logic [CW-1:0] count;

  assign ready = bits_left == 0 && count == 0;  // after the whole stop bit

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      tx <= 1'b1;
      bits_left <= '0;
      count <= '0;
    end else if (ready) begin
      if (valid) begin
        shift <= {1'b1, data, 1'b0};
        bits_left <= 4'd10;
        count <= '0;
      end
    end else if (count != 0) count <= count - 1'b1;
    else if (bits_left != 0) begin
      tx <= shift[0];
      shift <= {1'b1, shift[9:1]};
      count <= CW'(CLKS_PER_BIT - 1);
      bits_left <= bits_left - 1'b1;
    end
  end
endmodule
