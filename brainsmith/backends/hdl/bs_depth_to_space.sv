// DepthToSpace of a channels-last stream: each input row of W pixels of C*R*R channels
// becomes R output rows of W*R pixels of C channels. Output pixel (i, w*R + j) channel c of a
// row is input pixel w channel c*R*R + i*R + j (CRD = 1, torch's PixelShuffle) or
// (i*R + j)*C + c (CRD = 0). An input row is written into one of two row buffers while the
// other is read R times, so one beat moves in and one out per cycle once the first row is in.
module bs_depth_to_space #(
    parameter int unsigned BITS = 8,  // bits of one element
    parameter int unsigned SIMD = 1,  // elements per beat
    parameter int unsigned W = 4,     // input pixels per row
    parameter int unsigned C = 1,     // output channels
    parameter int unsigned R = 2,     // block size
    parameter int unsigned CRD = 1
) (
    input  logic clk,
    input  logic rst_n,
    input  logic [SIMD*BITS-1:0] s0_tdata,
    input  logic s0_tvalid,
    output logic s0_tready,
    output logic [SIMD*BITS-1:0] m0_tdata,
    output logic m0_tvalid,
    input  logic m0_tready
);
    localparam int unsigned DEPTH = C * R * R;  // input channels
    localparam int unsigned ROW = W * DEPTH;    // elements of one input row
    localparam int unsigned BEATS = ROW / SIMD;
    localparam int unsigned FOLD = C / SIMD;
    localparam int unsigned AW = $clog2(2 * ROW);

    // both row buffers in one memory of elements: row buffer b holds [b * ROW, b * ROW + ROW)
    logic [BITS-1:0] buffer [2 * ROW];
    logic [1:0] full;
    logic write_bank, read_bank;
    logic [AW-1:0] beat, i, w, j, fold;

    assign s0_tready = !full[write_bank];
    assign m0_tvalid = full[read_bank];

    always_comb begin
        for (int unsigned l = 0; l < SIMD; l++) begin
            automatic logic [AW-1:0] c = AW'(fold * SIMD + l);
            automatic logic [AW-1:0] k = CRD != 0 ? AW'(c * R * R + i * R + j)
                                                  : AW'((i * R + j) * C + c);
            m0_tdata[l*BITS +: BITS] = buffer[AW'(read_bank * ROW + w * DEPTH + k)];
        end
    end

    always_ff @(posedge clk) begin
        if (s0_tvalid && s0_tready)
            for (int unsigned l = 0; l < SIMD; l++)
                buffer[AW'(write_bank * ROW + beat * SIMD + l)] <= s0_tdata[l*BITS +: BITS];
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            full <= '0;
            {write_bank, read_bank} <= '0;
            {beat, i, w, j, fold} <= '0;
        end else begin
            if (s0_tvalid && s0_tready) begin
                beat <= beat == BEATS - 1 ? 0 : beat + 1;
                if (beat == BEATS - 1) begin
                    full[write_bank] <= 1'b1;
                    write_bank <= !write_bank;
                end
            end
            if (m0_tvalid && m0_tready) begin
                fold <= fold == FOLD - 1 ? 0 : fold + 1;
                if (fold == FOLD - 1) begin
                    j <= j == R - 1 ? 0 : j + 1;
                    if (j == R - 1) begin
                        w <= w == W - 1 ? 0 : w + 1;
                        if (w == W - 1) begin
                            i <= i == R - 1 ? 0 : i + 1;
                            if (i == R - 1) begin  // the row read R times: its buffer is free
                                full[read_bank] <= 1'b0;
                                read_bank <= !read_bank;
                            end
                        end
                    end
                end
            end
        end
    end
endmodule
