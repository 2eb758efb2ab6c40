
  // brainsmith: the GateMate's CC_PLL passing its input clock through, locked a few cycles
  // after start
  reg [2:0] cycles = 3'd0;  // locked a few input clocks after start
  always @(posedge CLK_REF) if (cycles != 3'd7) cycles <= cycles + 3'd1;
  assign CLK0 = CLK_REF;
  assign CLK90 = CLK_REF;
  assign CLK180 = CLK_REF;
  assign CLK270 = CLK_REF;
  assign CLK_REF_OUT = CLK_REF;
  assign USR_PLL_LOCKED = cycles == 3'd7;
  assign USR_PLL_LOCKED_STDY = cycles == 3'd7;
