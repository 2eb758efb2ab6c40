// Width converter between streams of any two widths, at one beat per cycle on the narrower
// side. The bits form one continuous little-endian stream (first bit in, first bit out): a
// frame's bits must be a whole number of input and of output beats, as FINN's InsertDWC makes
// them. The buffer holds IBITS + 2*OBITS bits; a beat is taken while at most 2*OBITS bits wait,
// so neither side ever waits for the other in steady state, and no ready path is
// combinational.
module bs_width_converter #(
    parameter int unsigned IBITS = 16,
    parameter int unsigned OBITS = 12
) (
    input  logic clk,
    input  logic rst_n,
    input  logic [IBITS-1:0] s0_tdata,
    input  logic s0_tvalid,
    output logic s0_tready,
    output logic [OBITS-1:0] m0_tdata,
    output logic m0_tvalid,
    input  logic m0_tready
);
    localparam int unsigned CAP = IBITS + 2 * OBITS;
    localparam int unsigned CW = $clog2(CAP + 1);

    logic [CAP-1:0] buffer;
    logic [CW-1:0] held;  // bits waiting in buffer[held-1:0]

    assign s0_tready = held <= CW'(2 * OBITS);
    assign m0_tvalid = held >= CW'(OBITS);
    assign m0_tdata = buffer[OBITS-1:0];

    wire take = s0_tvalid && s0_tready;
    wire give = m0_tvalid && m0_tready;
    wire [CW-1:0] kept = give ? held - CW'(OBITS) : held;

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            held <= '0;
            buffer <= '0;
        end else begin
            held <= take ? kept + CW'(IBITS) : kept;
            buffer <= (give ? buffer >> OBITS : buffer)
                | (take ? CAP'(s0_tdata) << kept : '0);
        end
    end
endmodule
