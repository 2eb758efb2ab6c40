// StreamingConcat: for each vector, FOLDS[i] beats of input i (SIMD elements of IBITS[i] bits,
// signed if SIGNED[i]) in input order, each element extended to OBITS. A beat passes straight
// through from the input whose turn it is; no buffering.
module bs_concat #(
    parameter int unsigned N = 2,
    parameter int unsigned SIMD = 1,
    parameter int unsigned OBITS = 8,
    parameter int unsigned IN_WIDTH = 16,         // all inputs' TDATA, packed
    parameter logic [32*N-1:0] FOLDS = '1,        // beats of each input per vector
    parameter logic [32*N-1:0] IBITS = '1,        // element bits of each input
    parameter logic [32*N-1:0] OFFSETS = '0,      // each input's TDATA in s_tdata
    parameter logic [N-1:0] SIGNED = '0
) (
    input  logic clk,
    input  logic rst_n,
    input  logic [IN_WIDTH-1:0] s_tdata,
    input  logic [N-1:0] s_tvalid,
    output logic [N-1:0] s_tready,
    output logic [SIMD*OBITS-1:0] m0_tdata,
    output logic m0_tvalid,
    input  logic m0_tready
);
    logic [SIMD*OBITS-1:0] extended [N];
    for (genvar i = 0; i < N; i++) begin : g_in
        localparam int unsigned BITS = IBITS[32*i +: 32];
        localparam int unsigned OFFSET = OFFSETS[32*i +: 32];
        for (genvar lane = 0; lane < SIMD; lane++) begin : g_lane
            logic [BITS-1:0] element;
            assign element = s_tdata[OFFSET + lane*BITS +: BITS];
            for (genvar b = 0; b < OBITS; b++) begin : g_bit
                if (b < BITS) assign extended[i][lane*OBITS + b] = element[b];
                else assign extended[i][lane*OBITS + b] = SIGNED[i] && element[BITS-1];
            end
        end
    end

    logic [$clog2(N+1)-1:0] turn;  // the input whose beats are due
    logic [31:0] beat;              // beats of it already passed in this vector

    assign m0_tdata = extended[turn];
    assign m0_tvalid = s_tvalid[turn];
    always_comb begin
        s_tready = '0;
        s_tready[turn] = m0_tready;
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            turn <= '0;
            beat <= '0;
        end else if (m0_tvalid && m0_tready) begin
            if (beat == FOLDS[32*turn +: 32] - 1) begin
                beat <= '0;
                turn <= turn == N - 1 ? '0 : turn + 1'b1;
            end else begin
                beat <= beat + 1;
            end
        end
    end
endmodule
