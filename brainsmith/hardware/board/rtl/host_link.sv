// Host link: a host PC drives a dataflow accelerator (AXI-stream in0/out0) over a UART.
//
// Frames, both directions: SYNC 8'hB5 | TYPE | SEQ | LEN (2 B, LE: payload bytes) | PAYLOAD |
// CRC (2 B, LE), the CRC-16/CCITT-FALSE of TYPE, SEQ, LEN and PAYLOAD; a reply echoes SEQ.
//   8'h01 IDENTIFY (LEN 0) -> 8'h81: "BSMH", version 2, IN_BITS (2 B), OUT_BITS (2 B),
//         IN_WORDS (4 B), OUT_WORDS (4 B), CLKS_PER_BIT (4 B), DESIGN_HASH (32 B, MSB first)
//   8'h02 INFER (one frame: IN_WORDS words of IN_BYTES bytes, LE) -> 8'h82: OUT_WORDS words of
//         OUT_BYTES bytes, LE, then 4 B LE: cycles from the first input word accepted to the
//         last output word (0 in the same cycle; it stops at 2^32-1)
//   8'h03 BENCH (N: 4 B LE, at least 1, then one frame as INFER's) -> 8'h83: the N-th frame's
//         OUT_WORDS words as INFER's, then 8 B LE: cycles from the first input word of the
//         first frame accepted to the last output word of the N-th (frames fed back to back;
//         it stops at 2^48-1), 4 B LE: the CRC-32 (zlib's) of every output word of the N
//         frames, each OUT_BYTES bytes LE
//   error -> 8'hEE, 1 B: 1 bad CRC, 2 wrong length, 3 unknown type, 4 timeout (a frame with
//         no byte for TIMEOUT_BYTES byte times is dropped), 5 busy (an INFER or BENCH that
//         began while another request was waiting: its payload was not kept), 6 a BENCH of
//         N 0
// Bytes before a SYNC are skipped. Requests are received while a reply goes out: the link
// holds one request while it answers another (two RAM banks for the frames of INFER and
// BENCH), so a host may keep two requests outstanding; a frame that completes while both
// places are taken is dropped without a reply. An INFER's outputs are kept in a RAM as they come (s_tready is high
// until the frame's last output word), so the cycle count is the accelerator's own, and the
// reply goes out once the frame is done. uart_rx is synchronised here: it may come from a pin.
module brainsmith_host_link #(
  parameter int CLKS_PER_BIT = 868,      // design clock / baud rate, >= 4
  parameter int IN_BITS  = 8,            // accelerator input stream TDATA width (FINN pads to a multiple of 8)
  parameter int OUT_BITS = 8,            // accelerator output stream TDATA width (multiple of 8)
  parameter int IN_WORDS  = 1,           // input stream words per frame (one inference)
  parameter int OUT_WORDS = 1,           // output stream words per frame
  parameter logic [255:0] DESIGN_HASH = '0  // sha-256 of the design, returned by IDENTIFY
) (
  input  logic clk,
  input  logic rst_n,                    // synchronous, active low
  input  logic uart_rx,                  // from the host (idle high)
  output logic uart_tx,                  // to the host (idle high)
  output logic [IN_BITS-1:0]  m_tdata,   // to the accelerator's in0_V
  output logic                m_tvalid,
  input  logic                m_tready,
  input  logic [OUT_BITS-1:0] s_tdata,   // from the accelerator's out0_V
  input  logic                s_tvalid,
  output logic                s_tready
);
  localparam int IN_BYTES = (IN_BITS + 7) / 8;
  localparam int OUT_BYTES = (OUT_BITS + 7) / 8;
  localparam int IN_LEN = IN_WORDS * IN_BYTES;  // an INFER request's payload
  localparam int OUT_DATA = OUT_WORDS * OUT_BYTES;
  localparam int OUT_LEN = OUT_DATA + 4;  // an INFER reply's payload
  localparam int BENCH_LEN = OUT_DATA + 12;  // a BENCH reply's
  localparam int ID_LEN = 53;
  localparam int TIMEOUT_BYTES = 1024;  // 3.4 ms at 3 Mbaud: longer than a USB frame's gap
  localparam int TIMEOUT = TIMEOUT_BYTES * 10 * CLKS_PER_BIT;
  localparam int TW = $clog2(TIMEOUT + 1);
  localparam int IAW = $clog2(2 * IN_WORDS);  // two banks of IN_WORDS words
  localparam int IWW = $clog2(IN_WORDS + 1);
  localparam int OWW = $clog2(OUT_WORDS + 1);
  localparam int IBW = IN_BYTES > 1 ? $clog2(IN_BYTES) : 1;
  localparam int OBW = OUT_BYTES > 1 ? $clog2(OUT_BYTES) : 1;

  localparam logic [7:0] SYNC = 8'hB5;
  localparam logic [7:0] IDENTIFY = 8'h01, INFER = 8'h02, BENCH = 8'h03, ERROR = 8'hEE;
  localparam logic [7:0] BAD_CRC = 8'd1, BAD_LENGTH = 8'd2, BAD_TYPE = 8'd3, TIMED_OUT = 8'd4,
                         BUSY = 8'd5, BAD_COUNT = 8'd6;

  if (CLKS_PER_BIT < 4) begin : g_too_fast
    $error("brainsmith_host_link: CLKS_PER_BIT must be at least 4");
  end
  if (IN_LEN + 4 > 65535 || BENCH_LEN > 65535) begin : g_too_long
    $error("brainsmith_host_link: a frame's payload must fit LEN's 16 bits");
  end

  function automatic logic [8*ID_LEN-1:0] identity();
    logic [8*ID_LEN-1:0] v = '0;
    v[31:0] = "HMSB";  // "BSMH", first byte lowest
    v[39:32] = 8'd2;  // protocol version
    v[40 +: 16] = 16'(IN_BITS);
    v[56 +: 16] = 16'(OUT_BITS);
    v[72 +: 32] = 32'(IN_WORDS);
    v[104 +: 32] = 32'(OUT_WORDS);
    v[136 +: 32] = 32'(CLKS_PER_BIT);
    for (int j = 0; j < 32; j++) v[(21 + j) * 8 +: 8] = DESIGN_HASH[255 - 8 * j -: 8];
    return v;
  endfunction
  localparam logic [8*ID_LEN-1:0] ID_PAYLOAD = identity();

  // CRC-32 (reflected 0xEDB88320, as zlib's before its final inversion) of a word's bytes, LE
  function automatic logic [31:0] crc32_word(logic [31:0] crc, logic [8*OUT_BYTES-1:0] word);
    for (int i = 0; i < 8 * OUT_BYTES; i++)
      crc = (crc >> 1) ^ ((crc[0] ^ word[i]) ? 32'hEDB88320 : 32'h0);
    return crc;
  endfunction

  // ---- UART ------------------------------------------------------------------------------
  logic [7:0] rx_data, tx_data;
  logic rx_valid, tx_valid, tx_ready;

  brainsmith_uart_rx #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_rx (
    .clk, .rst_n, .rx(uart_rx), .data(rx_data), .valid(rx_valid)
  );
  brainsmith_uart_tx #(.CLKS_PER_BIT(CLKS_PER_BIT)) u_tx (
    .clk, .rst_n, .data(tx_data), .valid(tx_valid), .ready(tx_ready), .tx(uart_tx)
  );

  // ---- the pending request: filled by the parser, emptied by the executor ------------------
  typedef enum logic [1:0] {DO_IDENTIFY, DO_INFER, DO_ERROR, DO_BENCH} kind_t;
  logic c_valid, c_bank;
  kind_t c_kind;
  logic [7:0] c_seq, c_code;
  logic push, pop;
  kind_t push_kind;
  logic [7:0] push_code;

  // ---- parser -----------------------------------------------------------------------------
  typedef enum logic [2:0] {P_HUNT, P_TYPE, P_SEQ, P_LEN0, P_LEN1, P_PAYLOAD, P_CRC0, P_CRC1}
    pstate_t;
  pstate_t p_state;
  logic [7:0] p_type, p_seq, p_crc_low;
  logic [15:0] p_len, p_count, p_crc, p_crc_next;
  logic [TW-1:0] p_idle;
  logic p_store, w_bank, p_frame_byte, p_data;
  logic [31:0] p_n;  // a BENCH's N, its payload's first 4 bytes (kept as its frame is)
  logic [15:0] p_want;  // the payload a request of p_type must have
  logic [IBW-1:0] p_lane;
  logic [IWW-1:0] p_word;
  logic [IAW-1:0] p_addr;

  brainsmith_crc16 u_rx_crc (.crc(p_crc), .data(rx_data), .next(p_crc_next));

  assign p_addr = w_bank ? IAW'(IN_WORDS) + IAW'(p_word) : IAW'(p_word);
  assign p_data = p_type == INFER || p_type == BENCH;  // a request with a frame
  assign p_want = p_type == INFER ? 16'(IN_LEN) : p_type == BENCH ? 16'(IN_LEN + 4) : 16'd0;
  assign p_frame_byte = p_type != BENCH || p_count[15:2] != '0;  // past a BENCH's N

  // what a complete frame asks for (at its last CRC byte)
  always_comb begin
    push = 1'b0;
    push_kind = DO_ERROR;
    push_code = '0;
    if (p_state == P_CRC1 && rx_valid) begin
      push = !c_valid;
      if ({rx_data, p_crc_low} != p_crc) push_code = BAD_CRC;
      else if (p_type != IDENTIFY && !p_data) push_code = BAD_TYPE;
      else if (p_len != p_want) push_code = BAD_LENGTH;
      else if (p_data && !p_store) push_code = BUSY;
      else if (p_type == BENCH && p_n == '0) push_code = BAD_COUNT;
      else push_kind = p_type == INFER ? DO_INFER : p_type == BENCH ? DO_BENCH : DO_IDENTIFY;
    end else if (p_state != P_HUNT && p_idle == TW'(TIMEOUT)) begin
      push = !c_valid;
      push_code = TIMED_OUT;
    end
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      p_state <= P_HUNT;
      p_idle <= '0;
      w_bank <= 1'b0;
      c_valid <= 1'b0;
    end else begin
      if (pop) c_valid <= 1'b0;
      if (push) begin  // only when the slot is empty, so never in the cycle of a pop
        c_valid <= 1'b1;
        c_kind <= push_kind;
        c_seq <= p_seq;
        c_code <= push_code;
        c_bank <= w_bank;
        if (push_kind == DO_INFER || push_kind == DO_BENCH) w_bank <= !w_bank;
      end
      p_idle <= p_state == P_HUNT || rx_valid ? '0 : p_idle + 1'b1;
      if (p_state != P_HUNT && p_idle == TW'(TIMEOUT)) p_state <= P_HUNT;
      else if (rx_valid) begin
        if (p_state != P_CRC0 && p_state != P_CRC1) p_crc <= p_crc_next;
        case (p_state)
          P_HUNT: if (rx_data == SYNC) begin
            p_state <= P_TYPE;
            p_crc <= 16'hFFFF;
          end
          P_TYPE: begin
            p_type <= rx_data;
            p_state <= P_SEQ;
          end
          P_SEQ: begin
            p_seq <= rx_data;
            p_state <= P_LEN0;
          end
          P_LEN0: begin
            p_len[7:0] <= rx_data;
            p_state <= P_LEN1;
          end
          P_LEN1: begin
            p_len[15:8] <= rx_data;
            // a frame is kept when a bank is free: no request is pending
            p_store <= p_data && {rx_data, p_len[7:0]} == p_want && !c_valid;
            p_count <= '0;
            p_lane <= '0;
            p_word <= '0;
            p_state <= {rx_data, p_len[7:0]} == 0 ? P_CRC0 : P_PAYLOAD;
          end
          P_PAYLOAD: begin
            p_count <= p_count + 1'b1;
            if (p_count + 1'b1 == p_len) p_state <= P_CRC0;
            if (!p_frame_byte) begin  // (the pending request's N stays until it is taken)
              if (p_store) p_n <= {rx_data, p_n[31:8]};  // LE: the first byte ends lowest
            end
            else if (p_lane == IBW'(IN_BYTES - 1)) begin
              p_lane <= '0;
              p_word <= p_word + 1'b1;
            end else p_lane <= p_lane + 1'b1;
          end
          P_CRC0: begin
            p_crc_low <= rx_data;
            p_state <= P_CRC1;
          end
          default: p_state <= P_HUNT;  // P_CRC1: the frame is complete
        endcase
      end
    end
  end

  // ---- input RAM: two banks of IN_WORDS words, written a byte at a time ----------------------
  logic [8*IN_BYTES-1:0] in_ram[2 * IN_WORDS];
  logic [8*IN_BYTES-1:0] in_word;
  logic [IAW-1:0] f_addr;
  logic f_load;

  always_ff @(posedge clk) begin
    if (rx_valid && p_state == P_PAYLOAD && p_store && p_frame_byte)
      for (int lane = 0; lane < IN_BYTES; lane++)
        if (p_lane == IBW'(lane)) in_ram[p_addr][8 * lane +: 8] <= rx_data;
    if (f_load) in_word <= in_ram[f_addr];
  end

  // ---- executor: one request at a time --------------------------------------------------------
  // A BENCH's N frames are counted down (f_left, o_left: frames after the one under way), each
  // output word is folded into the CRC-32 one cycle after it is kept (a register between the
  // accelerator's stream and the CRC's XOR network), and the reply's last bytes are picked
  // from the figures by an index: long compares and wide sums stay off the accelerator's paths.
  typedef enum logic [3:0] {T_IDLE, T_RUN, T_SYNC, T_TYPE, T_SEQ, T_LEN0, T_LEN1, T_PAYLOAD,
                            T_CRC0, T_CRC1} tstate_t;
  tstate_t t_state;
  kind_t e_kind;
  logic [7:0] e_seq, e_code, t_byte;
  logic e_bank;
  logic [15:0] t_len, t_count, t_crc, t_crc_next;
  logic [31:0] f_left, o_left;  // frames to load, to keep, after the one under way
  logic f_final, o_final;  // the frame under way is the last one
  logic [IWW-1:0] f_word;  // input words of the frame loaded
  logic [OWW-1:0] o_word;  // output words of the frame kept
  logic [OWW-1:0] t_word;  // output word being sent
  logic [OBW-1:0] t_lane;
  logic [3:0] t_tail;  // byte of the reply's figures after the output words
  logic [7:0] t_tail_byte;  // that byte, a cycle after t_tail moves (a UART byte takes 40+)
  logic t_in_data;  // the payload byte being sent is an output word's (t_count < OUT_DATA)
  logic [48:0] cycles;  // bit 48: the count passed 2^48-1
  logic [15:0] cycles_low;  // the count's low bits; the high ones follow their carry a cycle
  logic [32:0] cycles_high;  // later (the count is read many cycles after it stops)
  logic low_wrapped;
  logic [31:0] frames;  // frames to run: 1, or the BENCH's N
  logic [127:0] figures;  // the reply's bytes after the output words, lowest first
  logic [31:0] o_crc;  // CRC-32 of the output words so far (not yet inverted)
  logic [8*OUT_BYTES-1:0] crc_word;  // the word kept last cycle, folded into o_crc now
  logic crc_due;
  logic counting, started, fed, kept;
  logic [8*OUT_BYTES-1:0] out_ram[OUT_WORDS];
  logic [8*OUT_BYTES-1:0] out_word;
  logic m_fire, s_fire, last_word, last_out;

  assign pop = t_state == T_IDLE && c_valid;
  assign m_fire = m_tvalid && m_tready;
  assign s_fire = s_tvalid && s_tready;
  assign last_word = o_word == OWW'(OUT_WORDS - 1);
  assign last_out = s_fire && last_word && o_final;
  assign s_tready = t_state == T_RUN && !kept;
  assign f_load = t_state == T_RUN && !fed && (!m_tvalid || m_tready);
  assign f_addr = e_bank ? IAW'(IN_WORDS) + IAW'(f_word) : IAW'(f_word);
  assign m_tdata = in_word[IN_BITS-1:0];
  assign frames = c_kind == DO_BENCH ? p_n : 32'd1;
  assign cycles = {cycles_high, cycles_low};
  // a BENCH's count stops at 2^48-1, an INFER's at 2^32-1
  assign figures = e_kind == DO_BENCH
      ? {32'd0, ~o_crc, 16'd0, cycles[48] ? 48'hFFFF_FFFF_FFFF : cycles[47:0]}
      : {96'd0, cycles[48:32] != '0 ? 32'hFFFF_FFFF : cycles[31:0]};

  always_ff @(posedge clk) begin
    if (s_fire) out_ram[o_word] <= (8 * OUT_BYTES)'(s_tdata);
    out_word <= out_ram[t_word];
    crc_word <= (8 * OUT_BYTES)'(s_tdata);
    t_tail_byte <= figures[8 * t_tail +: 8];
  end

  always_comb begin
    case (t_state)
      T_SYNC: t_byte = SYNC;
      T_TYPE:
        case (e_kind)
          DO_IDENTIFY: t_byte = 8'h81;
          DO_INFER: t_byte = 8'h82;
          DO_BENCH: t_byte = 8'h83;
          default: t_byte = ERROR;
        endcase
      T_SEQ: t_byte = e_seq;
      T_LEN0: t_byte = t_len[7:0];
      T_LEN1: t_byte = t_len[15:8];
      T_PAYLOAD:
        if (e_kind == DO_IDENTIFY) t_byte = ID_PAYLOAD[8 * t_count[5:0] +: 8];
        else if (e_kind == DO_ERROR) t_byte = e_code;
        else if (t_in_data) t_byte = out_word[8 * t_lane +: 8];
        else t_byte = t_tail_byte;
      T_CRC0: t_byte = t_crc[7:0];
      default: t_byte = t_crc[15:8];
    endcase
  end
  assign tx_data = t_byte;
  assign tx_valid = t_state >= T_SYNC;

  brainsmith_crc16 u_tx_crc (.crc(t_crc), .data(t_byte), .next(t_crc_next));

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      t_state <= T_IDLE;
      m_tvalid <= 1'b0;
      counting <= 1'b0;
      crc_due <= 1'b0;
    end else begin
      if (f_load) begin  // the frame's words, then the next frame's from its first
        m_tvalid <= 1'b1;
        if (f_word == IWW'(IN_WORDS - 1)) begin
          f_word <= '0;
          if (f_final) fed <= 1'b1;
          f_left <= f_left - 1'b1;
          f_final <= f_left == 32'd1;
        end else f_word <= f_word + 1'b1;
      end else if (m_tready) m_tvalid <= 1'b0;
      crc_due <= s_fire;
      if (crc_due) o_crc <= crc32_word(o_crc, crc_word);
      if (s_fire) begin
        if (last_word) begin
          o_word <= '0;
          o_left <= o_left - 1'b1;
          o_final <= o_left == 32'd1;
        end else o_word <= o_word + 1'b1;
      end
      if (last_out) kept <= 1'b1;
      // cycles: from the first input word accepted to the last frame's last output word (the
      // edges after the first's up to the last's; 0 when they are one), counted on registers
      // alone, so the accelerator's handshakes stay off the counter's enable
      low_wrapped <= 1'b0;
      if (counting && !cycles_high[32]) {low_wrapped, cycles_low} <= {1'b0, cycles_low} + 1'b1;
      if (low_wrapped) cycles_high <= cycles_high + 1'b1;
      if (m_fire && !started) begin
        started <= 1'b1;
        counting <= 1'b1;
        cycles_low <= '0;
        cycles_high <= '0;
      end
      if (last_out) counting <= 1'b0;
      case (t_state)
        T_IDLE: if (c_valid) begin
          e_kind <= c_kind;
          e_seq <= c_seq;
          e_code <= c_code;
          e_bank <= c_bank;
          f_word <= '0;
          o_word <= '0;
          f_left <= frames - 1'b1;
          o_left <= frames - 1'b1;
          f_final <= frames == 32'd1;
          o_final <= frames == 32'd1;
          o_crc <= '1;
          fed <= 1'b0;
          kept <= 1'b0;
          started <= 1'b0;
          t_len <= c_kind == DO_IDENTIFY ? 16'(ID_LEN) : c_kind == DO_INFER ? 16'(OUT_LEN)
                   : c_kind == DO_BENCH ? 16'(BENCH_LEN) : 16'd1;
          t_state <= c_kind == DO_INFER || c_kind == DO_BENCH ? T_RUN : T_SYNC;
        end
        T_RUN:  // every input word taken, every output word kept and folded into the CRC
          if (fed && !m_tvalid && kept && !crc_due) t_state <= T_SYNC;
        default: if (tx_ready) begin
          if (t_state != T_SYNC && t_state != T_CRC0) t_crc <= t_crc_next;  // TYPE..PAYLOAD
          case (t_state)
            T_SYNC: begin
              t_crc <= 16'hFFFF;
              t_count <= '0;
              t_word <= '0;
              t_lane <= '0;
              t_tail <= '0;
              t_in_data <= 1'b1;  // (OUT_DATA >= 1)
              t_state <= T_TYPE;
            end
            T_LEN1: t_state <= T_PAYLOAD;
            T_PAYLOAD: begin
              t_count <= t_count + 1'b1;
              if (t_count + 1'b1 == t_len) t_state <= T_CRC0;
              if (!t_in_data) t_tail <= t_tail + 1'b1;
              if (t_count + 1'b1 == 16'(OUT_DATA)) t_in_data <= 1'b0;
              if (t_lane == OBW'(OUT_BYTES - 1)) begin
                t_lane <= '0;
                t_word <= t_word + 1'b1;
              end else t_lane <= t_lane + 1'b1;
            end
            T_CRC1: t_state <= T_IDLE;
            default: t_state <= tstate_t'(t_state + 1'b1);
          endcase
        end
      endcase
    end
  end
endmodule
