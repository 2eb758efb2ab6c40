
  // brainsmith: MULT18X18D's product with every register bypassed (Yosys gives no model)
  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
  wire [35:0] product = $signed({{18{SIGNEDA & A17}}, a}) * $signed({{18{SIGNEDB & B17}}, b});
  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = product;
  assign SIGNEDP = SIGNEDA | SIGNEDB;
  initial if (REG_INPUTA_CLK != "NONE" || REG_INPUTB_CLK != "NONE" || REG_INPUTC_CLK != "NONE" || REG_PIPELINE_CLK != "NONE" || REG_OUTPUT_CLK != "NONE")
    $fatal(1, "brainsmith's MULT18X18D model has no pipeline registers");
