// DuplicateStreams: every input beat goes to each of N outputs. An output that took the beat
// waits for the others; the input beat is accepted once all N have it.
module bs_duplicate_streams #(
    parameter int unsigned WIDTH = 8,
    parameter int unsigned N = 2
) (
    input  logic clk,
    input  logic rst_n,
    input  logic [WIDTH-1:0] s0_tdata,
    input  logic s0_tvalid,
    output logic s0_tready,
    output logic [N*WIDTH-1:0] m_tdata,
    output logic [N-1:0] m_tvalid,
    input  logic [N-1:0] m_tready
);
    logic [N-1:0] sent;  // outputs that already took the current beat

    assign s0_tready = &(sent | m_tready);
    for (genvar i = 0; i < N; i++) begin : g_out
        assign m_tdata[i*WIDTH +: WIDTH] = s0_tdata;
        assign m_tvalid[i] = s0_tvalid && !sent[i];
    end

    always_ff @(posedge clk) begin
        if (!rst_n || (s0_tvalid && s0_tready)) sent <= '0;
        else sent <= sent | (m_tvalid & m_tready);
    end
endmodule
