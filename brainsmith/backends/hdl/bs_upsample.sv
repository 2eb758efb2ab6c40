// UpsampleNearestNeighbour by whole factors: each input row of WI pixels (FOLD beats each)
// becomes SH output rows in which every pixel appears SW times. The first copy of each pixel
// in the first output row passes straight through from the input and is kept in a row buffer;
// every other copy is read from the buffer. One output beat per cycle, HO * WO * FOLD beats
// per frame.
module bs_upsample #(
    parameter int unsigned WIDTH = 8,  // one beat: SIMD elements
    parameter int unsigned WI = 4,     // input pixels per row
    parameter int unsigned FOLD = 1,   // beats per pixel
    parameter int unsigned SH = 2,     // output rows per input row
    parameter int unsigned SW = 2      // output copies of each pixel in a row
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
    localparam int unsigned WORDS = WI * FOLD;

    logic [WIDTH-1:0] row [WORDS];
    logic [31:0] rep_h, pixel, rep_w, fold;
    logic [31:0] address;
    logic from_input;

    assign address = pixel * FOLD + fold;
    assign from_input = rep_h == 0 && rep_w == 0;
    assign m0_tdata = from_input ? s0_tdata : row[address];
    assign m0_tvalid = from_input ? s0_tvalid : 1'b1;
    assign s0_tready = from_input && m0_tready;

    always_ff @(posedge clk) begin
        if (from_input && s0_tvalid && s0_tready) row[address] <= s0_tdata;
    end

    always_ff @(posedge clk) begin
        if (!rst_n) begin
            {rep_h, pixel, rep_w, fold} <= '0;
        end else if (m0_tvalid && m0_tready) begin
            fold <= fold == FOLD - 1 ? 0 : fold + 1;
            if (fold == FOLD - 1) begin
                rep_w <= rep_w == SW - 1 ? 0 : rep_w + 1;
                if (rep_w == SW - 1) begin
                    pixel <= pixel == WI - 1 ? 0 : pixel + 1;
                    if (pixel == WI - 1) rep_h <= rep_h == SH - 1 ? 0 : rep_h + 1;
                end
            end
        end
    end
endmodule
