
  // brainsmith: the single port: on CLK with CE, WRE writes; the read register takes the
  // word read (WRE low), the word written (WRITE_MODE 1) or the one before (2), or holds (0)
  // (READ_MODE 0: DO is that register; 1: one more, enabled by OCE); RESET clears them (at once when
  // RESET_MODE is ASYNC)
  localparam W = BIT_WIDTH;
  localparam S = shift(W);
  reg [$bits(DO)-1:0] read, piped;
  always @(posedge CLK)
    if (CE && BLKSEL == BLK_SEL && WRE)
      for (i = 0; i < W; i = i + 1)
        if (lane_on(AD, W, i)) mem[(AD >> S) * W + i] <= DI[i];
  integer j;
  reg [$bits(DO)-1:0] word;  // what the read register takes
  always @* begin
    word = 0;
    for (j = 0; j < W; j = j + 1)
      word[j] = WRE && WRITE_MODE == 1 && lane_on(AD, W, j) ? DI[j] : mem[(AD >> S) * W + j];
  end
  wire take = CE && BLKSEL == BLK_SEL && (!WRE || WRITE_MODE != 0);
  generate
    if (RESET_MODE == "ASYNC") begin : at_once
      always @(posedge CLK or posedge RESET)
        if (RESET) read <= 0;
        else if (take) read <= word;
      always @(posedge CLK or posedge RESET)
        if (RESET) piped <= 0;
        else if (OCE) piped <= read;
    end else begin : on_the_clock
      always @(posedge CLK)
        if (RESET) read <= 0;
        else if (take) read <= word;
      always @(posedge CLK)
        if (RESET) piped <= 0;
        else if (OCE) piped <= read;
    end
  endgenerate
  assign DO = READ_MODE ? piped : read;
