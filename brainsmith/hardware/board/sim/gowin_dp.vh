
  // brainsmith: the true dual port (DPB, DPX9B): ports A and B, each as a single port on its
  // own clock (its WRITE_MODE, READ_MODE and reset), writing one memory
  integer i_a, i_b;
  localparam WA = BIT_WIDTH_0;
  localparam SA = shift(WA);
  reg [$bits(DOA)-1:0] read_a, piped_a;
  always @(posedge CLKA)
    if (CEA && BLKSELA == BLK_SEL_0 && WREA)
      for (i_a = 0; i_a < WA; i_a = i_a + 1)
        if (lane_on(ADA, WA, i_a)) mem[(ADA >> SA) * WA + i_a] <= DIA[i_a];
  integer j_a;
  reg [$bits(DOA)-1:0] word_a;  // what the read_a register takes
  always @* begin
    word_a = 0;
    for (j_a = 0; j_a < WA; j_a = j_a + 1)
      word_a[j_a] = WREA && WRITE_MODE0 == 1 && lane_on(ADA, WA, j_a) ? DIA[j_a] : mem[(ADA >> SA) * WA + j_a];
  end
  wire take_a = CEA && BLKSELA == BLK_SEL_0 && (!WREA || WRITE_MODE0 != 0);
  generate
    if (RESET_MODE == "ASYNC") begin : at_once_a
      always @(posedge CLKA or posedge RESETA)
        if (RESETA) read_a <= 0;
        else if (take_a) read_a <= word_a;
      always @(posedge CLKA or posedge RESETA)
        if (RESETA) piped_a <= 0;
        else if (OCEA) piped_a <= read_a;
    end else begin : on_the_clock_a
      always @(posedge CLKA)
        if (RESETA) read_a <= 0;
        else if (take_a) read_a <= word_a;
      always @(posedge CLKA)
        if (RESETA) piped_a <= 0;
        else if (OCEA) piped_a <= read_a;
    end
  endgenerate
  assign DOA = READ_MODE0 ? piped_a : read_a;
  localparam WB = BIT_WIDTH_1;
  localparam SB = shift(WB);
  reg [$bits(DOB)-1:0] read_b, piped_b;
  always @(posedge CLKB)
    if (CEB && BLKSELB == BLK_SEL_1 && WREB)
      for (i_b = 0; i_b < WB; i_b = i_b + 1)
        if (lane_on(ADB, WB, i_b)) mem[(ADB >> SB) * WB + i_b] <= DIB[i_b];
  integer j_b;
  reg [$bits(DOB)-1:0] word_b;  // what the read_b register takes
  always @* begin
    word_b = 0;
    for (j_b = 0; j_b < WB; j_b = j_b + 1)
      word_b[j_b] = WREB && WRITE_MODE1 == 1 && lane_on(ADB, WB, j_b) ? DIB[j_b] : mem[(ADB >> SB) * WB + j_b];
  end
  wire take_b = CEB && BLKSELB == BLK_SEL_1 && (!WREB || WRITE_MODE1 != 0);
  generate
    if (RESET_MODE == "ASYNC") begin : at_once_b
      always @(posedge CLKB or posedge RESETB)
        if (RESETB) read_b <= 0;
        else if (take_b) read_b <= word_b;
      always @(posedge CLKB or posedge RESETB)
        if (RESETB) piped_b <= 0;
        else if (OCEB) piped_b <= read_b;
    end else begin : on_the_clock_b
      always @(posedge CLKB)
        if (RESETB) read_b <= 0;
        else if (take_b) read_b <= word_b;
      always @(posedge CLKB)
        if (RESETB) piped_b <= 0;
        else if (OCEB) piped_b <= read_b;
    end
  endgenerate
  assign DOB = READ_MODE1 ? piped_b : read_b;
