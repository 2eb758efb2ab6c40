// Pool: max, sum or shifted sum over a window of WINDOW values per channel. Input in the
// order of FINN's depthwise sliding window: per output pixel, per channel fold, WINDOW beats
// of PE channels; output: one beat of PE results per WINDOW input beats.
module bs_pool #(
    parameter int unsigned PE = 1,
    parameter int unsigned WINDOW = 4,  // kernel height x width
    parameter int unsigned IN_BITS = 8,
    parameter int unsigned ACC_BITS = 12,  // holds WINDOW x the input range
    parameter int unsigned OUT_BITS = 8,
    parameter bit SIGNED = 1,
    parameter int unsigned FUNCTION = 0,  // 0 max, 1 sum, 2 sum >> SHIFT
    parameter int unsigned SHIFT = 0
) (
    input  logic clk,
    input  logic rst_n,
    input  logic [PE*IN_BITS-1:0] s0_tdata,
    input  logic s0_tvalid,
    output logic s0_tready,
    output logic [PE*OUT_BITS-1:0] m0_tdata,
    output logic m0_tvalid,
    input  logic m0_tready
);
    function automatic logic [ACC_BITS-1:0] extend(input logic [IN_BITS-1:0] x);
        logic [ACC_BITS-1:0] r;
        for (int b = 0; b < ACC_BITS; b++) r[b] = b < IN_BITS ? x[b] : SIGNED && x[IN_BITS-1];
        return r;
    endfunction

    function automatic logic greater(input logic [ACC_BITS-1:0] a, input logic [ACC_BITS-1:0] b);
        return SIGNED ? $signed(a) > $signed(b) : a > b;
    endfunction

    function automatic logic [OUT_BITS-1:0] result(input logic [ACC_BITS-1:0] acc);
        logic [ACC_BITS-1:0] shifted;
        shifted = SIGNED ? ACC_BITS'($signed(acc) >>> SHIFT) : acc >> SHIFT;
        return FUNCTION == 2 ? shifted[OUT_BITS-1:0] : acc[OUT_BITS-1:0];
    endfunction

    logic [PE*ACC_BITS-1:0] acc, next;
    logic [PE*OUT_BITS-1:0] out;
    int unsigned position;  // within the window
    logic last;

    assign last = position == WINDOW - 1;
    assign s0_tready = !last || !m0_tvalid || m0_tready;
    always_comb begin
        for (int lane = 0; lane < PE; lane++) begin
            logic [ACC_BITS-1:0] value, held;
            value = extend(s0_tdata[lane*IN_BITS +: IN_BITS]);
            held = acc[lane*ACC_BITS +: ACC_BITS];
            if (position == 0) next[lane*ACC_BITS +: ACC_BITS] = value;
            else if (FUNCTION == 0) next[lane*ACC_BITS +: ACC_BITS] = greater(value, held) ? value : held;
            else next[lane*ACC_BITS +: ACC_BITS] = held + value;
            out[lane*OUT_BITS +: OUT_BITS] = result(next[lane*ACC_BITS +: ACC_BITS]);
        end
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            position <= 0;
            m0_tvalid <= 1'b0;
        end else begin
            if (m0_tready) m0_tvalid <= 1'b0;
            if (s0_tvalid && s0_tready) begin
                acc <= next;
                if (last) begin
                    m0_tdata <= out;
                    m0_tvalid <= 1'b1;
                end
                position <= last ? 0 : position + 1;
            end
        end
    end
endmodule
