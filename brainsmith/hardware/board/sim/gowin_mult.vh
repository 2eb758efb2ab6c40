
  // brainsmith: Gowin's multiplier as Yosys' dsp_map.v uses it: every register bypassed
  // (AREG, BREG, OUT_REG, PIPE_REG, ASIGN_REG, BSIGN_REG, SOA_REG all 0; the gate-level
  // check refuses another mode), A and B chosen (ASEL, BSEL 0), signed where ASIGN, BSIGN
  localparam N = $bits(A);
  wire signed [N:0] a = {ASIGN & A[N-1], A};
  wire signed [N:0] b = {BSIGN & B[N-1], B};
  wire signed [2*N+1:0] product = a * b;
  assign DOUT = product[2*N-1:0];
  assign SOA = A;
  assign SOB = B;
