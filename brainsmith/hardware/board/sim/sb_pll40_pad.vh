
  // brainsmith: SB_PLL40_PAD passing its pad's clock through, locked a few cycles after start
  reg [2:0] cycles = 3'd0;  // LOCK a few input clocks after start
  always @(posedge PACKAGEPIN) if (cycles != 3'd7) cycles <= cycles + 3'd1;
  assign PLLOUTCORE = PACKAGEPIN;
  assign PLLOUTGLOBAL = PACKAGEPIN;
  assign LOCK = cycles == 3'd7;
  assign SDO = 1'b0;
