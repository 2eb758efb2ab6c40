// OuterShuffle: a permutation of a frame's outer dimensions (the innermost dimension, SIMD
// elements per beat, stays innermost), as a transformer's head split and merge need. Two
// frame buffers: one is written in input order while the other is read in output order, so
// frames stream at one beat per cycle once the first is in. The output order is DIMS nested
// loops of SIZES beats (loop 0 outermost); at each step the input beat read is the sum of
// the loop indices times their STRIDES.
module bs_outer_shuffle #(
    parameter int unsigned WIDTH = 8,  // bits per beat
    parameter int unsigned WORDS = 4,  // beats per frame
    parameter int unsigned DIMS = 1,
    parameter logic [32*DIMS-1:0] SIZES = 32'd4,  // loop d in bits [32*d +: 32]
    parameter logic [32*DIMS-1:0] STRIDES = 32'd1
) (
    input  logic clk,
    input  logic rst_n,
    input  logic [WIDTH-1:0] s0_tdata,
    input  logic s0_tvalid,
    output logic s0_tready,
    output logic [WIDTH-1:0] m0_tdata,
    output logic m0_tvalid,
    input  logic m0_tready
);
    (* ram_style = "block" *) logic [WIDTH-1:0] memory [2*WORDS];

    logic [1:0] full;  // frame buffer b holds a whole frame not yet read out
    logic wbank, rbank;

    // write side: input order
    logic [31:0] waddr;
    logic write, wlast;
    assign s0_tready = rst_n && !full[wbank];
    assign write = s0_tvalid && s0_tready;
    assign wlast = waddr == WORDS - 1;
    always_ff @(posedge clk) begin
        if (write) memory[wbank ? WORDS + waddr : waddr] <= s0_tdata;
    end

    // read side: output order, the loop indices and the input beat they address
    logic [31:0] index [DIMS];
    logic [31:0] index_next [DIMS];
    logic [31:0] raddr, raddr_next;
    logic rlast;
    always_comb begin
        logic carry;
        carry = 1'b1;
        raddr_next = raddr;
        for (int d = DIMS - 1; d >= 0; d--) begin
            index_next[d] = index[d];
            if (carry) begin
                if (index[d] == SIZES[32*d +: 32] - 1) begin
                    index_next[d] = 0;
                    raddr_next = raddr_next - (SIZES[32*d +: 32] - 1) * STRIDES[32*d +: 32];
                end else begin
                    index_next[d] = index[d] + 1;
                    raddr_next = raddr_next + STRIDES[32*d +: 32];
                    carry = 1'b0;
                end
            end
        end
        rlast = carry;
    end

    // a memory read takes a cycle: reads are issued while the two-beat output buffer has
    // room for them, so the output streams one beat per cycle
    logic [WIDTH-1:0] rdata;
    logic [WIDTH-1:0] held [2];
    logic [1:0] count;  // beats in the output buffer
    logic inflight, issue, pop;
    assign pop = m0_tvalid && m0_tready;
    assign issue = full[rbank] && (2'(count + inflight) - 2'(pop)) < 2;
    assign m0_tvalid = count != 0;
    assign m0_tdata = held[0];
    always_ff @(posedge clk) begin
        if (issue) rdata <= memory[rbank ? WORDS + raddr : raddr];
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            full <= '0;
            wbank <= 1'b0;
            rbank <= 1'b0;
            waddr <= 0;
            raddr <= 0;
            for (int d = 0; d < DIMS; d++) index[d] <= 0;
            count <= 0;
            inflight <= 1'b0;
        end else begin
            if (write) begin
                waddr <= wlast ? 0 : waddr + 1;
                if (wlast) wbank <= !wbank;
            end
            if (issue) begin
                index <= index_next;
                raddr <= rlast ? 0 : raddr_next;
                if (rlast) rbank <= !rbank;
            end
            for (int b = 0; b < 2; b++) begin
                if (write && wlast && wbank == 1'(b)) full[b] <= 1'b1;
                if (issue && rlast && rbank == 1'(b)) full[b] <= 1'b0;
            end
            inflight <= issue;
            if (pop) held[0] <= held[1];
            if (inflight) held[2'(count) - 2'(pop)] <= rdata;
            count <= count + 2'(inflight) - 2'(pop);
        end
    end
endmodule
