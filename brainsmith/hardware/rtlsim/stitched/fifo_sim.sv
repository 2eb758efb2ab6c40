// A FIFO for simulating the stitched accelerator (rtlsim.stitched.partition) whose depth is
// set when the simulation starts, so that one compile of the whole design serves FIFO sizing
// (unbounded, measuring each FIFO's largest fill), the re-run with the sized depths and the
// final check.
//
// limit == 0: unbounded (it always accepts, as finn-rtllib's fifo_gauge). limit == D: it
// holds at most D items, counting the output register, and its input is ready while it holds
// fewer than D at the start of the cycle. finn-rtllib's fifo.sv of DEPTH D holds at least D
// (its shift and memory styles round their capacity up), so a design that keeps its pace with
// these FIFOs keeps it with fifo.sv's. An item written in one cycle can be read in the next,
// as with fifo_gauge and fifo.sv's shift style.
module brainsmith_fifo_sim #(
	int unsigned  WIDTH = 8
)(
	input	logic  clk,
	input	logic  rst,
	input	logic [31:0]  limit,

	input	logic [WIDTH-1:0]  idat,
	input	logic  ivld,
	output	logic  irdy,

	output	logic [WIDTH-1:0]  odat,
	output	logic  ovld,
	input	logic  ordy,

	output	logic [31:0]  maxcount
);

	logic [WIDTH-1:0]  Q[$] = {};
	logic [31:0]  Count = 0;
	logic [31:0]  MaxCount = 0;
	logic  OVld = 0;
	logic [WIDTH-1:0]  ODat = '0;

	assign	irdy = (limit == 0) || (Count < limit);

	always_ff @(posedge clk) begin
		if(rst) begin
			Q = {};
			Count <= 0;
			MaxCount <= 0;
			OVld <= 0;
			ODat <= '0;
		end
		else begin
			automatic logic [31:0]  count = Count;
			if(ivld && irdy) begin
				Q.push_back(idat);
				count++;
			end
			if(OVld && ordy)  count--;
			Count <= count;
			if(MaxCount < count)  MaxCount <= count;
			if(!OVld || ordy) begin
				if(Q.size() == 0)  OVld <= 0;
				else begin
					OVld <= 1;
					ODat <= Q.pop_front();
				end
			end
		end
	end
	assign	ovld = OVld;
	assign	odat = ODat;
	assign	maxcount = MaxCount;

endmodule : brainsmith_fifo_sim
