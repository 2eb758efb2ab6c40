// IntAdd: PE sums per beat of two integer streams of any widths and signedness. A beat is
// taken from both inputs at once; one register stage.
module bs_int_add #(
    parameter int unsigned PE = 1,
    parameter int unsigned A_BITS = 8,
    parameter bit A_SIGNED = 1,
    parameter int unsigned B_BITS = 8,
    parameter bit B_SIGNED = 1,
    parameter int unsigned OUT_BITS = 9  // holds every sum
) (
    input  logic clk,
    input  logic rst_n,
    input  logic [PE*A_BITS-1:0] s0_tdata,
    input  logic s0_tvalid,
    output logic s0_tready,
    input  logic [PE*B_BITS-1:0] s1_tdata,
    input  logic s1_tvalid,
    output logic s1_tready,
    output logic [PE*OUT_BITS-1:0] m0_tdata,
    output logic m0_tvalid,
    input  logic m0_tready
);
    function automatic logic [OUT_BITS-1:0] extend_a(input logic [A_BITS-1:0] x);
        logic [OUT_BITS-1:0] r;
        for (int b = 0; b < OUT_BITS; b++) r[b] = b < A_BITS ? x[b] : A_SIGNED && x[A_BITS-1];
        return r;
    endfunction

    function automatic logic [OUT_BITS-1:0] extend_b(input logic [B_BITS-1:0] x);
        logic [OUT_BITS-1:0] r;
        for (int b = 0; b < OUT_BITS; b++) r[b] = b < B_BITS ? x[b] : B_SIGNED && x[B_BITS-1];
        return r;
    endfunction

    logic [PE*OUT_BITS-1:0] sums;
    logic ready;

    always_comb begin
        for (int lane = 0; lane < PE; lane++) begin
            sums[lane*OUT_BITS +: OUT_BITS] = extend_a(s0_tdata[lane*A_BITS +: A_BITS])
                + extend_b(s1_tdata[lane*B_BITS +: B_BITS]);
        end
    end

    assign ready = !m0_tvalid || m0_tready;
    assign s0_tready = ready && s1_tvalid;
    assign s1_tready = ready && s0_tvalid;
    always_ff @(posedge clk) begin
        if (!rst_n) begin
            m0_tvalid <= 1'b0;
        end else begin
            if (m0_tready) m0_tvalid <= 1'b0;
            if (s0_tvalid && s1_tvalid && ready) begin
                m0_tdata <= sums;
                m0_tvalid <= 1'b1;
            end
        end
    end
endmodule
