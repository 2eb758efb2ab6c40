// DepthToSpace of a channels-last stream: each input row of W pixels of C*R*R channels
// becomes R output rows of W*R pixels of C channels. Output pixel (i, w*R + j) channel c of a
// row is input pixel w channel c*R*R + i*R + j (CRD = 1, torch's PixelShuffle) or
// (i*R + j)*C + c (CRD = 0). An input row is written into one of two row buffers while the
// other is read R times, so one beat moves in and one out per cycle once the first row is in.
// Addresses are kept as running sums (no multipliers).
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
    // An output beat is one written beat of the buffer unless CRD lanes are R*R apart: then
    // the buffer is addressed by element, SIMD reads at once.
    localparam bit BY_BEAT = CRD == 0 || SIMD == 1;
    localparam int unsigned UNIT = BY_BEAT ? SIMD : 1;  // elements per address
    localparam int unsigned ADDRESSES = 2 * ROW / UNIT;
    localparam int unsigned AW = $clog2(ADDRESSES + 1);
    // address steps: between lanes, between sub-positions (i*R + j), between output beats
    localparam int unsigned LANE = CRD != 0 ? R * R : 1;
    localparam int unsigned SUB = (CRD != 0 ? 1 : C) / UNIT;
    localparam int unsigned STEP = SIMD * LANE / UNIT;

    logic [1:0] full;
    logic write_bank, read_bank;
    logic [AW-1:0] beat, written;                 // input beat of the row, its address
    logic [AW-1:0] i, w, j, fold;                 // output loops, outermost first
    logic [AW-1:0] row_base, pixel, sub, channel; // the read address, in parts
    logic [AW-1:0] address;

    assign s0_tready = !full[write_bank];
    assign m0_tvalid = full[read_bank];
    assign address = row_base + pixel + sub + channel;

    if (BY_BEAT) begin : beats
        // both row buffers in one memory of beats: row buffer b holds [b * BEATS, b * BEATS + BEATS)
        logic [SIMD*BITS-1:0] buffer [ADDRESSES];
        assign m0_tdata = buffer[address];
        always_ff @(posedge clk) begin
            if (s0_tvalid && s0_tready) buffer[written] <= s0_tdata;
        end
    end else begin : elements
        logic [BITS-1:0] buffer [ADDRESSES];
        always_comb begin
            for (int unsigned l = 0; l < SIMD; l++)
                m0_tdata[l*BITS +: BITS] = buffer[address + AW'(l * LANE)];
        end
        always_ff @(posedge clk) begin
            if (s0_tvalid && s0_tready)
                for (int unsigned l = 0; l < SIMD; l++)
                    buffer[written + AW'(l)] <= s0_tdata[l*BITS +: BITS];
        end
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            full <= '0;
            {write_bank, read_bank} <= '0;
            {beat, written, i, w, j, fold, row_base, pixel, sub, channel} <= '0;
        end else begin
            if (s0_tvalid && s0_tready) begin
                beat <= beat == AW'(BEATS - 1) ? '0 : beat + 1;
                written <= written == AW'(ADDRESSES - SIMD / UNIT) ? '0 : written + AW'(SIMD / UNIT);
                if (beat == AW'(BEATS - 1)) begin
                    full[write_bank] <= 1'b1;
                    write_bank <= !write_bank;
                end
            end
            if (m0_tvalid && m0_tready) begin
                fold <= fold == AW'(FOLD - 1) ? '0 : fold + 1;
                channel <= fold == AW'(FOLD - 1) ? '0 : channel + AW'(STEP);
                if (fold == AW'(FOLD - 1)) begin
                    j <= j == AW'(R - 1) ? '0 : j + 1;
                    if (j != AW'(R - 1)) sub <= sub + AW'(SUB);
                    else if (w != AW'(W - 1)) sub <= sub - AW'((R - 1) * SUB);
                    else if (i != AW'(R - 1)) sub <= sub + AW'(SUB);
                    else sub <= '0;
                    if (j == AW'(R - 1)) begin
                        w <= w == AW'(W - 1) ? '0 : w + 1;
                        pixel <= w == AW'(W - 1) ? '0 : pixel + AW'(DEPTH / UNIT);
                        if (w == AW'(W - 1)) begin
                            i <= i == AW'(R - 1) ? '0 : i + 1;
                            if (i == AW'(R - 1)) begin  // the row read R times: its buffer is free
                                full[read_bank] <= 1'b0;
                                read_bank <= !read_bank;
                                row_base <= read_bank ? '0 : AW'(ROW / UNIT);
                            end
                        end
                    end
                end
            end
        end
    end
endmodule
