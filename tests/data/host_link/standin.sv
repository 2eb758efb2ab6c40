// A stand-in accelerator for the host link's test: per pair of input words (a, b) one output
// word a * 3 + b * 5 + 7 (OUT_BITS wide), after LATENCY cycles, with both streams stalled at
// random (an LFSR), so the link sees backpressure and gaps on both sides.
module standin_accel #(
  parameter int IN_BITS = 12,
  parameter int OUT_BITS = 24,
  parameter int LATENCY = 5
) (
  input  logic ap_clk,
  input  logic ap_rst_n,
  input  logic [IN_BITS-1:0] in0_V_TDATA,
  input  logic in0_V_TVALID,
  output logic in0_V_TREADY,
  output logic [OUT_BITS-1:0] out0_V_TDATA,
  output logic out0_V_TVALID,
  input  logic out0_V_TREADY
);
  logic [15:0] lfsr;
  logic [IN_BITS-1:0] first;
  logic have_first, busy;
  logic [7:0] wait_cycles;
  logic [OUT_BITS-1:0] result;

  assign in0_V_TREADY = !busy && lfsr[0];
  assign out0_V_TVALID = busy && wait_cycles == 0 && lfsr[3];
  assign out0_V_TDATA = result;

  always_ff @(posedge ap_clk) begin
    lfsr <= {lfsr[14:0], lfsr[15] ^ lfsr[13] ^ lfsr[12] ^ lfsr[10]};
    if (!ap_rst_n) begin
      lfsr <= 16'hACE1;
      have_first <= 1'b0;
      busy <= 1'b0;
    end else begin
      if (in0_V_TVALID && in0_V_TREADY) begin
        if (!have_first) begin
          first <= in0_V_TDATA;
          have_first <= 1'b1;
        end else begin
          result <= OUT_BITS'(first) * 3 + OUT_BITS'(in0_V_TDATA) * 5 + 7;
          have_first <= 1'b0;
          busy <= 1'b1;
          wait_cycles <= 8'(LATENCY);
        end
      end
      if (busy && wait_cycles != 0) wait_cycles <= wait_cycles - 1'b1;
      if (out0_V_TVALID && out0_V_TREADY) busy <= 1'b0;
    end
  end
endmodule
