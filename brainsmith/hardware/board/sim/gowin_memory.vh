
  // brainsmith: a Gowin block RAM (8-bit lanes: SP, SDPB; 9-bit: SPX9, SDPX9B) as Yosys'
  // brams_map.v uses it: 16 Kbit (18 Kbit) of INIT_RAM_00.. as one flat vector, a word of
  // width W at bits W*w; a port of width W is addressed by AD[13:log2(W)] (9, 18 and 36 as
  // 8, 16 and 32), and at 16/18 and 32/36 bits AD[1:0] and AD[3:0] enable its lanes
  localparam LANE = $bits(INIT_RAM_00) / 32;  // 8 or 9 bits
  localparam BITS = 2048 * LANE;
  reg mem [0:BITS-1];
  reg [BITS-1:0] init;
  integer i;
  initial begin
    init = {INIT_RAM_3F, INIT_RAM_3E, INIT_RAM_3D, INIT_RAM_3C, INIT_RAM_3B, INIT_RAM_3A,
            INIT_RAM_39, INIT_RAM_38, INIT_RAM_37, INIT_RAM_36, INIT_RAM_35, INIT_RAM_34,
            INIT_RAM_33, INIT_RAM_32, INIT_RAM_31, INIT_RAM_30, INIT_RAM_2F, INIT_RAM_2E,
            INIT_RAM_2D, INIT_RAM_2C, INIT_RAM_2B, INIT_RAM_2A, INIT_RAM_29, INIT_RAM_28,
            INIT_RAM_27, INIT_RAM_26, INIT_RAM_25, INIT_RAM_24, INIT_RAM_23, INIT_RAM_22,
            INIT_RAM_21, INIT_RAM_20, INIT_RAM_1F, INIT_RAM_1E, INIT_RAM_1D, INIT_RAM_1C,
            INIT_RAM_1B, INIT_RAM_1A, INIT_RAM_19, INIT_RAM_18, INIT_RAM_17, INIT_RAM_16,
            INIT_RAM_15, INIT_RAM_14, INIT_RAM_13, INIT_RAM_12, INIT_RAM_11, INIT_RAM_10,
            INIT_RAM_0F, INIT_RAM_0E, INIT_RAM_0D, INIT_RAM_0C, INIT_RAM_0B, INIT_RAM_0A,
            INIT_RAM_09, INIT_RAM_08, INIT_RAM_07, INIT_RAM_06, INIT_RAM_05, INIT_RAM_04,
            INIT_RAM_03, INIT_RAM_02, INIT_RAM_01, INIT_RAM_00};
    for (i = 0; i < BITS; i = i + 1) mem[i] = init[i];
  end
  function integer shift(input integer width);  // AD's bits below a word's address
    shift = width >= 32 ? 5 : width >= 16 ? 4 : width >= 8 ? 3 : width == 4 ? 2 : width == 2 ? 1 : 0;
  endfunction
  function lane_on(input [13:0] ad, input integer width, input integer bit_index);
    if (width >= 32) lane_on = ad[bit_index / (width / 4)];
    else if (width >= 16) lane_on = ad[bit_index / (width / 2)];
    else lane_on = 1'b1;
  endfunction
