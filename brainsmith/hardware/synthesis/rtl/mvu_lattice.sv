// brainsmith's matrix-vector core for Lattice parts, read in place of FINN's mvu.sv.
//
// FINN's core packs several PE lanes into one 27x18 (DSP48E2) product. A Lattice part has
// 18x18 multipliers, so Yosys splits that product in two and adds the halves in the same
// cycle: the slowest path of every matrix layer (about 11 ns on an LFE5U-85F). Here each
// weight times its activation is a product of its own, registered; the products of a PE
// are summed by FINN's pipelined adder tree (add_multi), then accumulated.
//
// Same module name, parameters, ports and latency as FINN's mvu (vld = last delayed by
// 3 + clog2(SIMD) + (SIMD == 1) + 1 cycles), so FINN's mvu_vvu_axi uses it unchanged.
module mvu import mvu_pkg::*; #(
	int unsigned  VERSION = 1,	// FINN's DSP version: no meaning here
	int unsigned  PE,
	int unsigned  SIMD,
	int unsigned  WEIGHT_WIDTH,
	int unsigned  ACTIVATION_WIDTH,
	int unsigned  ACCU_WIDTH,
	bit  SIGNED_ACTIVATIONS = 0,
	bit  NARROW_WEIGHTS   = 0,
	bit  FORCE_BEHAVIORAL = 0	// no vendor primitive here: always behavioural
)(
	input	logic  clk,
	input	logic  rst,
	input	logic  en,

	input	logic  last,
	input	logic  zero,	// this cycle's products count as zero
	input	logic signed [PE-1:0][SIMD-1:0][WEIGHT_WIDTH    -1:0]  w,
	input	logic                [SIMD-1:0][ACTIVATION_WIDTH-1:0]  a,

	output	logic  vld,
	output	logic signed [PE-1:0][ACCU_WIDTH-1:0]  p
);

	localparam int unsigned  LEVELS = $clog2(SIMD);	// registered levels of the adder tree
	localparam int unsigned  PIPELINE_DEPTH = 3 + LEVELS + (SIMD == 1) + 1;	// FINN's
	localparam int unsigned  ACCUMULATE = 3 + LEVELS;	// the stage that accumulates
	localparam int unsigned  SOFT_BITS = 2;	// a factor this narrow is LUTs (synth_ecp5's SOFT_PRODUCT_BITS)

	// the range of one product, for the tree's widths
	localparam longint  W_LO = NARROW_WEIGHTS? 1 - 2**(WEIGHT_WIDTH-1) : -(2**(WEIGHT_WIDTH-1));
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
	logic [PE-1:0][SIMD-1:0][WEIGHT_WIDTH-1:0]  W1 = '0;
	logic [SIMD-1:0][ACTIVATION_WIDTH-1:0]  A1 = '0;
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
			logic signed [WEIGHT_WIDTH+ACTIVATION_WIDTH:0]  product;
			if(!SIGNED_ACTIVATIONS && (ACTIVATION_WIDTH <= SOFT_BITS)) begin : genShiftAdd
				// a narrow unsigned activation: shifted weights added in LUTs (as a signed
				// product it would have a factor one bit wider and take a multiplier block)
				always_comb begin
					product = '0;
					for(int unsigned  b = 0; b < ACTIVATION_WIDTH; b++) begin
						if(A1[s][b])  product += $signed(W1[pe][s]) <<< b;
					end
				end
			end : genShiftAdd
			else begin : genMultiply
				uwire signed [ACTIVATION_WIDTH:0]  act = { SIGNED_ACTIVATIONS && A1[s][ACTIVATION_WIDTH-1], A1[s] };
				assign	product = $signed(W1[pe][s]) * act;
			end : genMultiply
			always_ff @(posedge clk) begin
				if(rst)      M2[s] <= '0;
				else if(en)  M2[s] <= product[PRODUCT_WIDTH-1:0];
			end
		end : genProduct

		// Stages 3 to 2 + LEVELS: the products summed, each level registered
		uwire [SUM_WIDTH-1:0]  sum;
		add_multi #(
			.N(SIMD), .DEPTH(LEVELS), .ARG_WIDTH(PRODUCT_WIDTH),
			.ARG_LO(P_LO), .ARG_HI(P_HI)
		) tree (
			.clk, .rst, .en,
			.arg(M2), .sum
		);

		// Stage 3 + LEVELS: accumulated until the item that was last
		logic signed [ACCU_WIDTH-1:0]  Acc = '0;
		uwire signed [ACCU_WIDTH-1:0]  addend = $signed(sum);
		always_ff @(posedge clk) begin
			if(rst)      Acc <= '0;
			else if(en)  Acc <= addend + (L[ACCUMULATE]? '0 : Acc);
		end

		// Up to PIPELINE_DEPTH: held in step with vld
		localparam int unsigned  HOLD = PIPELINE_DEPTH - ACCUMULATE;
		logic signed [ACCU_WIDTH-1:0]  Out[HOLD] = '{ default: '0 };
		always_ff @(posedge clk) begin
			if(rst)  Out <= '{ default: '0 };
			else if(en) begin
				for(int unsigned  i = 0; i < HOLD-1; i++)  Out[i] <= Out[i+1];
				Out[HOLD-1] <= Acc;
			end
		end
		assign	p[pe] = Out[0];

	end : genPE

endmodule : mvu
