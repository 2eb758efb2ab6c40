
  // brainsmith: the semi-dual port: A writes on CLKA with CEA; B reads on CLKB with CEB
  // (READ_MODE 0: DO is that register; 1: one more, enabled by OCE); RESETB clears them (at once when
  // RESET_MODE is ASYNC)
  localparam W0 = BIT_WIDTH_0, W1 = BIT_WIDTH_1;
  localparam S0 = shift(W0), S1 = shift(W1);
  always @(posedge CLKA)
    if (CEA && BLKSELA == BLK_SEL_0)
      for (i = 0; i < W0; i = i + 1)
        if (lane_on(ADA, W0, i)) mem[(ADA >> S0) * W0 + i] <= DI[i];
  reg [$bits(DO)-1:0] read, piped;
  integer j;
  generate
    if (RESET_MODE == "ASYNC") begin : at_once
      always @(posedge CLKB or posedge RESETB)
        if (RESETB) read <= 0;
        else if (CEB && BLKSELB == BLK_SEL_1)
          for (j = 0; j < $bits(DO); j = j + 1) read[j] <= j < W1 ? mem[(ADB >> S1) * W1 + j] : 1'b0;
      always @(posedge CLKB or posedge RESETB)
        if (RESETB) piped <= 0;
        else if (OCE) piped <= read;
    end else begin : on_the_clock
      always @(posedge CLKB)
        if (RESETB) read <= 0;
        else if (CEB && BLKSELB == BLK_SEL_1)
          for (j = 0; j < $bits(DO); j = j + 1) read[j] <= j < W1 ? mem[(ADB >> S1) * W1 + j] : 1'b0;
      always @(posedge CLKB)
        if (RESETB) piped <= 0;
        else if (OCE) piped <= read;
    end
  endgenerate
  assign DO = READ_MODE ? piped : read;
