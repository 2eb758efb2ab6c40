// LabelSelect (TopK): the indices of the K largest of LABELS values, largest first; of equal
// values the lower index comes first (ONNX TopK). PE values arrive per beat, lowest index in
// the lowest bits; each is placed into a sorted list of K as it arrives. After a vector's last
// beat the list moves to an output buffer (as its last index leaves, if one is still
// leaving) and the next vector is taken at once while the K indices leave, one per beat.
module bs_label_select #(
    parameter int unsigned PE = 1,
    parameter int unsigned LABELS = 10,
    parameter int unsigned K = 1,
    parameter int unsigned IN_BITS = 8,
    parameter bit SIGNED = 1,
    parameter int unsigned OUT_BITS = 8
) (
    input  logic clk,
    input  logic rst_n,
    input  logic [PE*IN_BITS-1:0] s0_tdata,
    input  logic s0_tvalid,
    output logic s0_tready,
    output logic [OUT_BITS-1:0] m0_tdata,
    output logic m0_tvalid,
    input  logic m0_tready
);
    localparam int unsigned FOLDS = LABELS / PE;
    localparam int unsigned IW = LABELS > 1 ? $clog2(LABELS) : 1;
    localparam int unsigned FW = FOLDS > 1 ? $clog2(FOLDS) : 1;
    localparam int unsigned KW = $clog2(K + 1);
    typedef logic signed [IN_BITS:0] value_t;  // one bit wider: signed or unsigned alike

    value_t value[K];
    logic [IW-1:0] index[K];
    logic [K-1:0] used;
    logic [FW-1:0] fold;
    logic [IW-1:0] ready_index[K];  // the finished vector's indices, leaving one per beat
    logic [KW-1:0] left;  // indices still to send

    value_t next_value[K];
    logic [IW-1:0] next_index[K];
    logic [K-1:0] next_used;

    wire last = fold == FW'(FOLDS - 1);
    assign s0_tready = !last || left == '0 || (left == KW'(1) && m0_tready);
    wire take = s0_tvalid && s0_tready;
    assign m0_tvalid = left != '0;
    assign m0_tdata = OUT_BITS'(ready_index[K-KW'(left)]);
    wire give = m0_tvalid && m0_tready;

    always_comb begin  // the list with this beat's PE values placed, one after another
        next_value = value;
        next_index = index;
        next_used = used;
        for (int p = 0; p < PE; p++) begin
            automatic value_t v = SIGNED ? value_t'($signed(s0_tdata[p*IN_BITS +: IN_BITS]))
                                         : value_t'({1'b0, s0_tdata[p*IN_BITS +: IN_BITS]});
            automatic logic [IW-1:0] i = IW'(fold * PE + p);
            automatic logic [K-1:0] after;  // after[q]: the new value goes at or before q
            for (int q = 0; q < K; q++) after[q] = !next_used[q] || v > next_value[q];
            for (int q = K - 1; q > 0; q--) begin
                if (after[q] && after[q-1]) begin
                    next_value[q] = next_value[q-1];
                    next_index[q] = next_index[q-1];
                    next_used[q] = next_used[q-1];
                end else if (after[q]) begin
                    next_value[q] = v;
                    next_index[q] = i;
                    next_used[q] = 1'b1;
                end
            end
            if (after[0]) begin
                next_value[0] = v;
                next_index[0] = i;
                next_used[0] = 1'b1;
            end
        end
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            used <= '0;
            fold <= '0;
            left <= '0;
        end else begin
            if (give) left <= left - 1'b1;
            if (take) begin
                if (last) begin
                    ready_index <= next_index;
                    left <= KW'(K);
                    used <= '0;
                    fold <= '0;
                end else begin
                    value <= next_value;
                    index <= next_index;
                    used <= next_used;
                    fold <= fold + 1'b1;
                end
            end
        end
    end
endmodule
