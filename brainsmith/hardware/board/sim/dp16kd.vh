
  // brainsmith: the behaviour (Yosys' cells_sim.v declares DP16KD without one)
  reg [17:0] mem [0:1023];
  reg [35:0] do36 = 36'd0;
  integer i;
  initial begin
    for (i = 0; i < 16; i = i + 1) begin
      mem[16 * 0 + i] = INITVAL_00[i * 20 +: 18];
      mem[16 * 1 + i] = INITVAL_01[i * 20 +: 18];
      mem[16 * 2 + i] = INITVAL_02[i * 20 +: 18];
      mem[16 * 3 + i] = INITVAL_03[i * 20 +: 18];
      mem[16 * 4 + i] = INITVAL_04[i * 20 +: 18];
      mem[16 * 5 + i] = INITVAL_05[i * 20 +: 18];
      mem[16 * 6 + i] = INITVAL_06[i * 20 +: 18];
      mem[16 * 7 + i] = INITVAL_07[i * 20 +: 18];
      mem[16 * 8 + i] = INITVAL_08[i * 20 +: 18];
      mem[16 * 9 + i] = INITVAL_09[i * 20 +: 18];
      mem[16 * 10 + i] = INITVAL_0A[i * 20 +: 18];
      mem[16 * 11 + i] = INITVAL_0B[i * 20 +: 18];
      mem[16 * 12 + i] = INITVAL_0C[i * 20 +: 18];
      mem[16 * 13 + i] = INITVAL_0D[i * 20 +: 18];
      mem[16 * 14 + i] = INITVAL_0E[i * 20 +: 18];
      mem[16 * 15 + i] = INITVAL_0F[i * 20 +: 18];
      mem[16 * 16 + i] = INITVAL_10[i * 20 +: 18];
      mem[16 * 17 + i] = INITVAL_11[i * 20 +: 18];
      mem[16 * 18 + i] = INITVAL_12[i * 20 +: 18];
      mem[16 * 19 + i] = INITVAL_13[i * 20 +: 18];
      mem[16 * 20 + i] = INITVAL_14[i * 20 +: 18];
      mem[16 * 21 + i] = INITVAL_15[i * 20 +: 18];
      mem[16 * 22 + i] = INITVAL_16[i * 20 +: 18];
      mem[16 * 23 + i] = INITVAL_17[i * 20 +: 18];
      mem[16 * 24 + i] = INITVAL_18[i * 20 +: 18];
      mem[16 * 25 + i] = INITVAL_19[i * 20 +: 18];
      mem[16 * 26 + i] = INITVAL_1A[i * 20 +: 18];
      mem[16 * 27 + i] = INITVAL_1B[i * 20 +: 18];
      mem[16 * 28 + i] = INITVAL_1C[i * 20 +: 18];
      mem[16 * 29 + i] = INITVAL_1D[i * 20 +: 18];
      mem[16 * 30 + i] = INITVAL_1E[i * 20 +: 18];
      mem[16 * 31 + i] = INITVAL_1F[i * 20 +: 18];
      mem[16 * 32 + i] = INITVAL_20[i * 20 +: 18];
      mem[16 * 33 + i] = INITVAL_21[i * 20 +: 18];
      mem[16 * 34 + i] = INITVAL_22[i * 20 +: 18];
      mem[16 * 35 + i] = INITVAL_23[i * 20 +: 18];
      mem[16 * 36 + i] = INITVAL_24[i * 20 +: 18];
      mem[16 * 37 + i] = INITVAL_25[i * 20 +: 18];
      mem[16 * 38 + i] = INITVAL_26[i * 20 +: 18];
      mem[16 * 39 + i] = INITVAL_27[i * 20 +: 18];
      mem[16 * 40 + i] = INITVAL_28[i * 20 +: 18];
      mem[16 * 41 + i] = INITVAL_29[i * 20 +: 18];
      mem[16 * 42 + i] = INITVAL_2A[i * 20 +: 18];
      mem[16 * 43 + i] = INITVAL_2B[i * 20 +: 18];
      mem[16 * 44 + i] = INITVAL_2C[i * 20 +: 18];
      mem[16 * 45 + i] = INITVAL_2D[i * 20 +: 18];
      mem[16 * 46 + i] = INITVAL_2E[i * 20 +: 18];
      mem[16 * 47 + i] = INITVAL_2F[i * 20 +: 18];
      mem[16 * 48 + i] = INITVAL_30[i * 20 +: 18];
      mem[16 * 49 + i] = INITVAL_31[i * 20 +: 18];
      mem[16 * 50 + i] = INITVAL_32[i * 20 +: 18];
      mem[16 * 51 + i] = INITVAL_33[i * 20 +: 18];
      mem[16 * 52 + i] = INITVAL_34[i * 20 +: 18];
      mem[16 * 53 + i] = INITVAL_35[i * 20 +: 18];
      mem[16 * 54 + i] = INITVAL_36[i * 20 +: 18];
      mem[16 * 55 + i] = INITVAL_37[i * 20 +: 18];
      mem[16 * 56 + i] = INITVAL_38[i * 20 +: 18];
      mem[16 * 57 + i] = INITVAL_39[i * 20 +: 18];
      mem[16 * 58 + i] = INITVAL_3A[i * 20 +: 18];
      mem[16 * 59 + i] = INITVAL_3B[i * 20 +: 18];
      mem[16 * 60 + i] = INITVAL_3C[i * 20 +: 18];
      mem[16 * 61 + i] = INITVAL_3D[i * 20 +: 18];
      mem[16 * 62 + i] = INITVAL_3E[i * 20 +: 18];
      mem[16 * 63 + i] = INITVAL_3F[i * 20 +: 18];
    end
    if (REGMODE_A != "NOREG" || REGMODE_B != "NOREG" || CSDECODE_A != "0b000" ||
        CSDECODE_B != "0b000" || DATA_WIDTH_B == 36 && DATA_WIDTH_A != 36)
      $fatal(1, "brainsmith's DP16KD model: no output registers, chip selects or x36 reads alone");
  end
  function automatic [4:0] lane(input integer width, input [13:0] ad);  // the part's first bit
    case (width)
      4: lane = (ad[3] ? 5'd9 : 5'd0) + {2'd0, ad[2], 2'd0};
      2: lane = (ad[3] ? 5'd9 : 5'd0) + {2'd0, ad[2:1], 1'd0};
      1: lane = (ad[3] ? 5'd9 : 5'd0) + {2'd0, ad[2:0]};
      default: lane = ad[3] ? 5'd9 : 5'd0;
    endcase
  endfunction
  function automatic [17:0] read_word(input integer width, input [13:0] ad, input [17:0] word);
    case (width)
      18: read_word = word;
      9: read_word = {9'd0, word[lane(9, ad) +: 9]};
      4: read_word = {14'd0, word[lane(4, ad) +: 4]};
      2: read_word = {16'd0, word[lane(2, ad) +: 2]};
      default: read_word = {17'd0, word[lane(1, ad)]};
    endcase
  endfunction
  function automatic [17:0] write_word(
      input integer width, input [13:0] ad, input [17:0] word, input [17:0] data);
    write_word = word;
    case (width)
      18: begin
        if (ad[0]) write_word[8:0] = data[8:0];
        if (ad[1]) write_word[17:9] = data[17:9];
      end
      9: write_word[lane(9, ad) +: 9] = data[8:0];
      4: write_word[lane(4, ad) +: 4] = data[3:0];
      2: write_word[lane(2, ad) +: 2] = data[1:0];
      default: write_word[lane(1, ad)] = data[0];
    endcase
  endfunction
  function automatic [35:0] read36(input [13:0] ad);
    read36 = {mem[{ad[13:5], 1'b1}], mem[{ad[13:5], 1'b0}]};
  endfunction
  task automatic write36(input [13:0] ad, input [17:0] low, input [17:0] high);
    if (ad[0]) mem[{ad[13:5], 1'b0}][8:0] <= low[8:0];
    if (ad[1]) mem[{ad[13:5], 1'b0}][17:9] <= low[17:9];
    if (ad[2]) mem[{ad[13:5], 1'b1}][8:0] <= high[8:0];
    if (ad[3]) mem[{ad[13:5], 1'b1}][17:9] <= high[17:9];
  endtask

  wire [17:0] diA = {DIA17, DIA16, DIA15, DIA14, DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2, DIA1, DIA0};
  wire [13:0] adA = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5, ADA4, ADA3, ADA2, ADA1, ADA0};
  wire clkA = CLKAMUX == "INV" ? ~CLKA : CLKA;
  wire arstA = RESETMODE == "ASYNC" && RSTA;
  reg [17:0] doA = 18'd0;
  always @(posedge clkA or posedge arstA) begin
    if (RSTA) begin  // not gated by CE; a reset blocks the write
      doA <= 18'd0;
    end else if (CEA && {CSA2, CSA1, CSA0} == 3'b000) begin
      if (DATA_WIDTH_A == 36) begin if (WEA) write36(adA, diA, diB); end
      else if (WEA) begin
        if (WRITEMODE_A == "READBEFOREWRITE")
          doA <= read_word(DATA_WIDTH_A, adA, mem[adA[13:4]]);
        mem[adA[13:4]] <= write_word(DATA_WIDTH_A, adA, mem[adA[13:4]], diA);
        if (WRITEMODE_A == "WRITETHROUGH")
          doA <= read_word(DATA_WIDTH_A, adA,
                                write_word(DATA_WIDTH_A, adA, mem[adA[13:4]], diA));
      end else doA <= read_word(DATA_WIDTH_A, adA, mem[adA[13:4]]);
    end
  end

  wire [17:0] diB = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7, DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0};
  wire [13:0] adB = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5, ADB4, ADB3, ADB2, ADB1, ADB0};
  wire clkB = CLKBMUX == "INV" ? ~CLKB : CLKB;
  wire arstB = RESETMODE == "ASYNC" && RSTB;
  reg [17:0] doB = 18'd0;
  always @(posedge clkB or posedge arstB) begin
    if (RSTB) begin  // not gated by CE; a reset blocks the write
      doB <= 18'd0;
      if (DATA_WIDTH_B == 36) do36 <= 36'd0;
    end else if (CEB && {CSB2, CSB1, CSB0} == 3'b000) begin
      if (DATA_WIDTH_B == 36) begin do36 <= read36(adB); end
      else if (WEB) begin
        if (WRITEMODE_B == "READBEFOREWRITE")
          doB <= read_word(DATA_WIDTH_B, adB, mem[adB[13:4]]);
        mem[adB[13:4]] <= write_word(DATA_WIDTH_B, adB, mem[adB[13:4]], diB);
        if (WRITEMODE_B == "WRITETHROUGH")
          doB <= read_word(DATA_WIDTH_B, adB,
                                write_word(DATA_WIDTH_B, adB, mem[adB[13:4]], diB));
      end else doB <= read_word(DATA_WIDTH_B, adB, mem[adB[13:4]]);
    end
  end

  assign {DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10, DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = DATA_WIDTH_B == 36 ? do36[17:0] : doA;
  assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5, DOB4, DOB3, DOB2, DOB1, DOB0} = DATA_WIDTH_B == 36 ? do36[35:18] : doB;
