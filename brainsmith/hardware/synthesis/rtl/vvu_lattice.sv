// brainsmith's vector-vector core for Lattice parts, read in place of FINN's
// mvu_vvu_8sx9_dsp58.sv.
//
// FINN's only RTL vector-vector unit (a depthwise convolution's VVAU) packs three 8x9
// products into each DSP58 of a Versal part; its behavioural model packs them the same
// way, in products far wider than a Lattice part's 18x18 multipliers. Here each weight
// times its activation is a product of its own, registered; the products of a PE are
// summed by FINN's adder tree (add_multi), pipelined as far as the latency allows, then
// accumulated.
//
// Same module name, parameters, ports and latency as FINN's core as mvu_vvu_axi counts it
// (vld = last delayed by 3 + ((SIMD+2)/3 - 1)/SEGMENTLEN cycles, 3 with SEGMENTLEN 0), so
// FINN's mvu_vvu_axi uses it unchanged and its output queue never overflows.
module mvu_vvu_8sx9_dsp58 import mvu_pkg::*; #(
	bit IS_MVU,	// 1: one activation vector for every PE (a matrix layer's)
	int unsigned  PE,
	int unsigned  SIMD,
	int unsigned  WEIGHT_WIDTH,
	int unsigned  ACTIVATION_WIDTH,
	int unsigned  ACCU_WIDTH,

	bit  SIGNED_ACTIVATIONS = 0,
	int unsigned  SEGMENTLEN = 0,	// FINN's DSP chain segments: here only the latency
	bit  FORCE_BEHAVIORAL = 0,	// no vendor primitive here: always behavioural

	localparam int unsigned  ACTIVATION_ELEMENTS = (IS_MVU ? 1 : PE) * SIMD,
	localparam int unsigned  WEIGHT_ELEMENTS = PE*SIMD
)(
	input	logic  clk,
	input	logic  rst,
	input	logic  en,

	input	logic  last,
	input	logic  zero,	// this cycle's products count as zero
	input	logic [WEIGHT_ELEMENTS-1:0][WEIGHT_WIDTH-1:0]  w,
	input	logic [ACTIVATION_ELEMENTS-1:0][ACTIVATION_WIDTH-1:0]  a,

	output	logic  vld,
	output	logic [PE-1:0][ACCU_WIDTH-1:0]  p
);

	localparam int unsigned  PIPELINE_DEPTH = 3 + (SEGMENTLEN == 0? 0 : ((SIMD+2)/3 - 1)/SEGMENTLEN);
	localparam int unsigned  LEVELS = $clog2(SIMD);
	localparam int unsigned  TREE_DEPTH = LEVELS < PIPELINE_DEPTH - 3? LEVELS : PIPELINE_DEPTH - 3;
	localparam int unsigned  ACCUMULATE = 3 + TREE_DEPTH;	// the stage that accumulates
	localparam int unsigned  HOLD = PIPELINE_DEPTH - ACCUMULATE;	// registers after it
	localparam int unsigned  SOFT_BITS = 2;	// a factor this narrow is LUTs (synth_ecp5's SOFT_PRODUCT_BITS)

	// the range of one product, for the tree's widths
	localparam longint  W_LO = -(2**(WEIGHT_WIDTH-1));
	localparam longint  W_HI = 2**(WEIGHT_WIDTH-1) - 1;
	localparam longint  A_LO = SIGNED_ACTIVATIONS? -(2**(ACTIVATION_WIDTH-1)) : 0;
	localparam longint  A_HI = SIGNED_ACTIVATIONS? 2**(ACTIVATION_WIDTH-1) - 1 : 2**ACTIVATION_WIDTH - 1;
	localparam longint  P_LO = W_LO*A_HI < W_HI*A_LO? W_LO*A_HI : W_HI*A_LO;
	localparam longint  P_HI = W_LO*A_LO > W_HI*A_HI? W_LO*A_LO : W_HI*A_HI;
	localparam int unsigned  PRODUCT_WIDTH = bitwidth(P_LO, P_HI);
	localparam int unsigned  SUM_WIDTH = sumwidth(SIMD, PRODUCT_WIDTH, P_LO, P_HI);

	initial begin
		if(PRODUCT_WIDTH > 31) begin
			$error("%m: a %0d-bit product is wider than this core's adder tree takes (31 bits).", PRODUCT_WIDTH);
			$finish;
		end
	end

	// Which item is where: L[k] is the last flag of the item k stages in.
	logic [1:PIPELINE_DEPTH]  L = '0;
	always_ff @(posedge clk) begin
		if(rst)      L <= '0;
		else if(en)  L <= { last, L[1:PIPELINE_DEPTH-1] };
	end
	assign	vld = L[PIPELINE_DEPTH];

	// Stage 1: operands
	logic [WEIGHT_ELEMENTS-1:0][WEIGHT_WIDTH-1:0]  W1 = '0;
	logic [ACTIVATION_ELEMENTS-1:0][ACTIVATION_WIDTH-1:0]  A1 = '0;
	always_ff @(posedge clk) begin
		if(rst) begin
			W1 <= '0;
			A1 <= '0;
		end
		else if(en) begin
			W1 <= w;
			A1 <= zero? '0 : a;
		end
	end

	for(genvar  pe = 0; pe < PE; pe++) begin : genPE

		// Stage 2: one registered product per weight
		logic [PRODUCT_WIDTH-1:0]  M2[SIMD];
		for(genvar  s = 0; s < SIMD; s++) begin : genProduct
			localparam int unsigned  AI = IS_MVU? s : pe*SIMD + s;
			uwire [WEIGHT_WIDTH-1:0]  weight = W1[pe*SIMD + s];
			uwire [ACTIVATION_WIDTH-1:0]  activation = A1[AI];
			logic signed [WEIGHT_WIDTH+ACTIVATION_WIDTH:0]  product;
			if(!SIGNED_ACTIVATIONS && (ACTIVATION_WIDTH <= SOFT_BITS)) begin : genShiftAdd
				// a narrow unsigned activation: shifted weights added in LUTs
				always_comb begin
					product = '0;
					for(int unsigned  b = 0; b < ACTIVATION_WIDTH; b++) begin
						if(activation[b])  product += $signed(weight) <<< b;
					end
				end
			end : genShiftAdd
			else begin : genMultiply
				uwire signed [ACTIVATION_WIDTH:0]  act = { SIGNED_ACTIVATIONS && activation[ACTIVATION_WIDTH-1], activation };
				assign	product = $signed(weight) * act;
			end : genMultiply
			always_ff @(posedge clk) begin
				if(rst)      M2[s] <= '0;
				else if(en)  M2[s] <= product[PRODUCT_WIDTH-1:0];
			end
		end : genProduct

		// Stages 3 to 2 + TREE_DEPTH: the products summed, as many levels registered as the
		// latency leaves room for
		uwire [SUM_WIDTH-1:0]  sum;
		add_multi #(
			.N(SIMD), .DEPTH(TREE_DEPTH), .ARG_WIDTH(PRODUCT_WIDTH),
			.ARG_LO(P_LO), .ARG_HI(P_HI)
		) tree (
			.clk, .rst, .en,
			.arg(M2), .sum
		);

		// Stage 3 + TREE_DEPTH: accumulated until the item that was last
		logic signed [ACCU_WIDTH-1:0]  Acc = '0;
		uwire signed [ACCU_WIDTH-1:0]  addend = $signed(sum);
		always_ff @(posedge clk) begin
			if(rst)      Acc <= '0;
			else if(en)  Acc <= addend + (L[ACCUMULATE]? '0 : Acc);
		end

		// Up to PIPELINE_DEPTH: held in step with vld
		if(HOLD == 0) begin : genDirect
			assign	p[pe] = Acc;
		end : genDirect
		else begin : genHeld
			logic signed [ACCU_WIDTH-1:0]  Out[HOLD] = '{ default: '0 };
			always_ff @(posedge clk) begin
				if(rst)  Out <= '{ default: '0 };
				else if(en) begin
					for(int unsigned  i = 0; i < HOLD-1; i++)  Out[i] <= Out[i+1];
					Out[HOLD-1] <= Acc;
				end
			end
			assign	p[pe] = Out[0];
		end : genHeld

	end : genPE

endmodule : mvu_vvu_8sx9_dsp58
