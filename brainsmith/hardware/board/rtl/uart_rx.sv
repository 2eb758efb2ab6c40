// UART receiver, 8N1, LSB first: one byte per `valid` pulse. The line is synchronised (two
// flip-flops), the start bit is confirmed at its middle (a shorter glitch is ignored) and each
// bit is sampled at its middle; a byte whose stop bit is low (a framing error or a break) is
// dropped, and the receiver waits for the line to go idle (high) before the next start bit.
module brainsmith_uart_rx #(
  parameter int CLKS_PER_BIT = 868  // clock / baud rate, >= 4
) (
  input  logic       clk,
  input  logic       rst_n,  // synchronous, active low
  input  logic       rx,     // idle high
  output logic [7:0] data,
  output logic       valid   // one cycle per byte received
);
  localparam int CW = $clog2(CLKS_PER_BIT + 1);

  typedef enum logic [2:0] {IDLE, START, BITS, STOP, WAIT_IDLE} state_t;
  state_t state;
  logic [1:0] sync;
  logic [CW-1:0] count;
  logic [2:0] bit_index;
  logic line;

  assign line = sync[1];

  always_ff @(posedge clk) begin
    sync <= {sync[0], rx};
    valid <= 1'b0;
    if (!rst_n) begin
      sync <= 2'b11;
      state <= IDLE;
      count <= '0;
      bit_index <= '0;
    end else begin
      case (state)
        IDLE: if (!line) begin
          state <= START;
          count <= CW'(CLKS_PER_BIT / 2 - 1);
        end
        START:
          if (count != 0) count <= count - 1'b1;
          else if (line) state <= IDLE;  // a glitch, not a start bit
          else begin
            state <= BITS;
            count <= CW'(CLKS_PER_BIT - 1);
            bit_index <= '0;
          end
        BITS:
          if (count != 0) count <= count - 1'b1;
          else begin
            data <= {line, data[7:1]};
            count <= CW'(CLKS_PER_BIT - 1);
            bit_index <= bit_index + 1'b1;
            if (bit_index == 3'd7) state <= STOP;
          end
        STOP:
          if (count != 0) count <= count - 1'b1;
          else if (line) begin
            valid <= 1'b1;
            state <= IDLE;
          end else state <= WAIT_IDLE;
        default: if (line) state <= IDLE;  // WAIT_IDLE
      endcase
    end
  end
endmodule
