// GlobalAccPool: per channel, the sum over all PIXELS pixels of a frame. Input: PIXELS x FOLDS
// beats of PE channels; output: FOLDS beats of PE sums, each sent with the last pixel's beat.
module bs_global_acc_pool #(
    parameter int unsigned PE = 1,
    parameter int unsigned FOLDS = 1,  // channels / PE
    parameter int unsigned PIXELS = 1,
    parameter int unsigned IN_BITS = 8,
    parameter int unsigned OUT_BITS = 16,  // holds PIXELS x the input range
    parameter bit SIGNED = 1
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
    function automatic logic [OUT_BITS-1:0] extend(input logic [IN_BITS-1:0] x);
        logic [OUT_BITS-1:0] r;
        for (int b = 0; b < OUT_BITS; b++) r[b] = b < IN_BITS ? x[b] : SIGNED && x[IN_BITS-1];
        return r;
    endfunction

    logic [PE*OUT_BITS-1:0] sums [FOLDS];
    logic [PE*OUT_BITS-1:0] next;
    int unsigned fold, pixel;
    logic last;

    assign last = pixel == PIXELS - 1;
    assign s0_tready = !last || !m0_tvalid || m0_tready;
    always_comb begin
        for (int lane = 0; lane < PE; lane++) begin
            next[lane*OUT_BITS +: OUT_BITS] = extend(s0_tdata[lane*IN_BITS +: IN_BITS])
                + (pixel == 0 ? '0 : sums[fold][lane*OUT_BITS +: OUT_BITS]);
        end
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            fold <= 0;
            pixel <= 0;
            m0_tvalid <= 1'b0;
        end else begin
            if (m0_tready) m0_tvalid <= 1'b0;
            if (s0_tvalid && s0_tready) begin
                sums[fold] <= next;
                if (last) begin
                    m0_tdata <= next;
                    m0_tvalid <= 1'b1;
                end
                if (fold == FOLDS - 1) begin
                    fold <= 0;
                    pixel <= last ? 0 : pixel + 1;
                end else begin
                    fold <= fold + 1;
                end
            end
        end
    end
endmodule
