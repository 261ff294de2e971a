`include "tpu_assert.svh"
// The chip's line-addressed HBM port (docs/architecture.md: one response per accepted request, in request
// order, no ready) on CHANNELS AXI-style channel controllers (rtl/hbm/hbm_ctrl.sv), which answer reads
// (R) and writes (B) by ID, reordered by their schedulers and across channels.
//
// Requests enter a one-entry buffer, so req_ready depends only on the adapter's state (never on the
// request itself): a master may compute valid from ready-independent state, and a cycle-based model
// may drive ready for the next cycle at a clock edge. The buffered request goes to its channel as soon
// as that channel and a tag allow, in the cycle the buffer takes the next one.
//
// Tags: each accepted request takes the next of 2^ID_W tags as its AXI ID; responses land in a reorder
// buffer indexed by tag and leave it in tag order, one per cycle. A request is accepted only while a tag
// is free, so the buffer never overflows and R/B are always ready. Same-line order inside a channel is
// the controller's (acceptance order), so the adapter needs no hazard check of its own.
//
// Mapping (docs/hbm.md): a "unit" is one 64-byte beat holding LPB lines (lines narrower than a beat) or
// one line of BPL beats (lines wider than a beat). unit = line / LPB; channel = the XOR of every
// log2(CHANNELS)-bit group of the unit's 32 bits (low group included); the channel-local beat address is
// (unit / CHANNELS) * BPL. The fold spreads streams whose stride is a multiple of CHANNELS units (rows of
// a tensor) over all channels; it is a bijection, since the local index fixes every group but the lowest,
// and the lowest is XORed with a value of the others. Narrow lines are written with a byte strobe and
// read by selecting their part of the beat; wide lines are INCR bursts of BPL beats.
module hbm_line_adapter #(
  parameter int CHANNELS = 2,      // a power of two
  parameter int LINE_W   = 256,    // a power of two, 32..
  parameter int ID_W     = 6,
  parameter int DATA_W   = 512,    // one 64-byte beat
  parameter int ADDR_W   = 32,     // byte address inside a channel
  parameter int LEN_W    = 4,
  localparam int STRB_W  = DATA_W / 8
) (
  input  logic                        clk_i,
  input  logic                        rst_ni,
  // Chip side.
  input  logic                        req_valid_i,
  output logic                        req_ready_o,
  input  logic                        req_write_i,
  input  logic [31:0]                 req_addr_i,     // line address
  input  logic [LINE_W-1:0]           req_wdata_i,
  output logic                        rsp_valid_o,
  output logic [LINE_W-1:0]           rsp_rdata_o,
  // Controller side: channel c at [c*W +: W]; address, ID and length are shared.
  output logic [CHANNELS-1:0]         ar_valid_o,
  input  logic [CHANNELS-1:0]         ar_ready_i,
  output logic [ID_W-1:0]             ar_id_o,
  output logic [ADDR_W-1:0]           ar_addr_o,
  output logic [LEN_W-1:0]            ar_len_o,
  input  logic [CHANNELS-1:0]         r_valid_i,
  input  logic [CHANNELS*ID_W-1:0]    r_id_i,
  input  logic [CHANNELS*DATA_W-1:0]  r_data_i,
  output logic [CHANNELS-1:0]         aw_valid_o,
  input  logic [CHANNELS-1:0]         aw_ready_i,
  output logic [ID_W-1:0]             aw_id_o,
  output logic [ADDR_W-1:0]           aw_addr_o,
  output logic [LEN_W-1:0]            aw_len_o,
  output logic [CHANNELS-1:0]         w_valid_o,
  input  logic [CHANNELS-1:0]         w_ready_i,
  output logic [CHANNELS*DATA_W-1:0]  w_data_o,
  output logic [CHANNELS*STRB_W-1:0]  w_strb_o,
  output logic [CHANNELS-1:0]         w_last_o,
  input  logic [CHANNELS-1:0]         b_valid_i,
  input  logic [CHANNELS*ID_W-1:0]    b_id_i
);

  // Internals are left out of waveforms (its ports are the subsystem's signals), as in hbm_ctrl.
  /* verilator tracing_off */
  localparam int TAGS   = 1 << ID_W;
  localparam int LPB    = LINE_W < DATA_W ? DATA_W / LINE_W : 1;  // lines per beat
  localparam int BPL    = LINE_W > DATA_W ? LINE_W / DATA_W : 1;  // beats per line
  localparam int LPB_BITS = $clog2(LPB);
  localparam int CH_BITS  = $clog2(CHANNELS);
  localparam int BPL_BITS = $clog2(BPL);
  localparam int SUB_W  = LPB > 1 ? LPB_BITS : 1;
  localparam int CH_W   = CHANNELS > 1 ? CH_BITS : 1;
  localparam int BEAT_W = BPL > 1 ? BPL_BITS : 1;
  localparam int LINE_BYTES = LINE_W / 8;
  localparam int FOLD_STEP  = CHANNELS > 1 ? CH_BITS : 32;  // one channel: a single (masked-out) group

  // ---------------- Request buffer and decode ----------------
  logic              buf_valid_q, buf_write_q;
  logic [31:0]       buf_addr_q;
  logic [LINE_W-1:0] buf_wdata_q;
  logic [31:0]       unit, local_unit, unit_fold;
  logic [CH_W-1:0]   ch;
  logic [SUB_W-1:0]  sub;
  logic [ADDR_W-1:0] beat_addr;
  always_comb begin
    unit       = buf_addr_q >> LPB_BITS;
    local_unit = unit >> CH_BITS;
    unit_fold  = '0;
    for (int g = 0; g < 32; g += FOLD_STEP) unit_fold ^= unit >> g;
    ch         = CH_W'(unit_fold & 32'(CHANNELS - 1));
    sub        = SUB_W'(buf_addr_q & 32'(LPB - 1));
    beat_addr  = ADDR_W'(64'(local_unit) << (BPL_BITS + 6));
  end

  // ---------------- Tags and reorder buffer ----------------
  logic [ID_W:0]     head_q, tail_q;      // oldest unanswered request; next tag to hand out
  logic [TAGS-1:0]   done_q, done_d;
  logic [LINE_W-1:0] rob_q [TAGS];
  // Line-in-beat selectors: unused when a line spans whole beats.
  /* verilator lint_off UNUSEDSIGNAL */
  logic [SUB_W-1:0]  sel_q [TAGS];        // which line of the beat a read returns
  logic [SUB_W-1:0]  w_sub_q [CHANNELS];
  /* verilator lint_on UNUSEDSIGNAL */
  logic [BEAT_W-1:0] beats_q [TAGS];      // read beats received so far (wide lines)

  // ---------------- Write data, one line per channel ----------------
  logic [CHANNELS-1:0] w_pending_q;
  logic [LINE_W-1:0]   w_line_q [CHANNELS];
  logic [BEAT_W-1:0]   w_beat_q [CHANNELS];

  logic tag_free, chan_ready, accept;
  assign tag_free   = (tail_q - head_q) != (ID_W+1)'(TAGS);
  // A channel's write buffer takes the next line in the cycle its last beat leaves.
  logic [CHANNELS-1:0] w_free;
  assign w_free     = ~w_pending_q | (w_ready_i & w_last_o);
  // accept: the buffered request goes to its channel with the next tag.
  assign chan_ready  = buf_write_q ? (aw_ready_i[ch] && w_free[ch]) : ar_ready_i[ch];
  assign accept      = buf_valid_q && tag_free && chan_ready;
  assign req_ready_o = !buf_valid_q || accept;

  assign ar_id_o   = tail_q[ID_W-1:0];
  assign aw_id_o   = tail_q[ID_W-1:0];
  assign ar_addr_o = beat_addr;
  assign aw_addr_o = beat_addr;
  assign ar_len_o  = LEN_W'(BPL - 1);
  assign aw_len_o  = LEN_W'(BPL - 1);

  always_comb begin
    ar_valid_o = '0;
    aw_valid_o = '0;
    if (buf_valid_q && tag_free) begin
      ar_valid_o[ch] = !buf_write_q;
      aw_valid_o[ch] = buf_write_q && w_free[ch];
    end
  end

  // W beats follow their AW from the next cycle on (hbm_ctrl takes W only after AW).
  for (genvar c = 0; c < CHANNELS; c++) begin : gen_w
    if (BPL > 1) begin : gen_burst
      assign w_data_o[c*DATA_W +: DATA_W] = w_line_q[c][32'(w_beat_q[c])*DATA_W +: DATA_W];
      assign w_strb_o[c*STRB_W +: STRB_W] = '1;
      assign w_last_o[c] = w_beat_q[c] == BEAT_W'(BPL - 1);
    end else begin : gen_part
      assign w_data_o[c*DATA_W +: DATA_W] = {LPB{w_line_q[c]}};
      assign w_strb_o[c*STRB_W +: STRB_W] = STRB_W'({LINE_BYTES{1'b1}}) << (32'(w_sub_q[c]) * LINE_BYTES);
      assign w_last_o[c] = 1'b1;
    end
    assign w_valid_o[c] = w_pending_q[c];
  end

  // Every channel may answer a read beat and a write in the same cycle (distinct tags).
  always_comb begin
    done_d = done_q;
    for (int c = 0; c < CHANNELS; c++) begin
      if (r_valid_i[c] && (BPL == 1 || beats_q[r_id_i[c*ID_W +: ID_W]] == BEAT_W'(BPL - 1))) begin
        done_d[r_id_i[c*ID_W +: ID_W]] = 1'b1;
      end
      if (b_valid_i[c]) done_d[b_id_i[c*ID_W +: ID_W]] = 1'b1;
    end
    if (rsp_valid_o) done_d[head_q[ID_W-1:0]] = 1'b0;
  end

  assign rsp_valid_o = (head_q != tail_q) && done_q[head_q[ID_W-1:0]];
  assign rsp_rdata_o = rob_q[head_q[ID_W-1:0]];

  // Asynchronous reset like hbm_ctrl, which this block is always paired with.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      head_q      <= '0;
      tail_q      <= '0;
      done_q      <= '0;
      w_pending_q <= '0;
      buf_valid_q <= 1'b0;
      for (int c = 0; c < CHANNELS; c++) w_beat_q[c] <= '0;
    end else begin
      if (req_valid_i && req_ready_o) buf_valid_q <= 1'b1;
      else if (accept) buf_valid_q <= 1'b0;
      done_q <= done_d;
      if (rsp_valid_o) head_q <= head_q + 1'b1;
      if (accept) tail_q <= tail_q + 1'b1;
      for (int c = 0; c < CHANNELS; c++) begin
        if (w_pending_q[c] && w_ready_i[c]) begin
          w_beat_q[c] <= w_beat_q[c] + 1'b1;
          if (w_last_o[c]) begin
            w_pending_q[c] <= 1'b0;
            w_beat_q[c] <= '0;
          end
        end
      end
      if (accept && buf_write_q) w_pending_q[ch] <= 1'b1;
    end
  end

  // Data paths without reset.
  always_ff @(posedge clk_i) begin
    if (req_valid_i && req_ready_o) begin
      buf_write_q <= req_write_i;
      buf_addr_q  <= req_addr_i;
      buf_wdata_q <= req_wdata_i;
    end
    if (accept) sel_q[tail_q[ID_W-1:0]] <= sub;
    if (accept && buf_write_q) begin
      w_line_q[ch] <= buf_wdata_q;
      w_sub_q[ch]  <= sub;
    end
  end
  if (BPL > 1) begin : gen_rob_wide
    // Beats of one burst arrive in order; bursts of different tags may interleave.
    always_ff @(posedge clk_i) begin
      if (accept) beats_q[tail_q[ID_W-1:0]] <= '0;
      for (int c = 0; c < CHANNELS; c++) begin
        if (r_valid_i[c]) begin
          rob_q[r_id_i[c*ID_W +: ID_W]][32'(beats_q[r_id_i[c*ID_W +: ID_W]])*DATA_W +: DATA_W] <=
              r_data_i[c*DATA_W +: DATA_W];
          beats_q[r_id_i[c*ID_W +: ID_W]] <= beats_q[r_id_i[c*ID_W +: ID_W]] + 1'b1;
        end
      end
    end
  end else begin : gen_rob_narrow
    always_ff @(posedge clk_i) begin
      for (int c = 0; c < CHANNELS; c++) begin
        if (r_valid_i[c]) begin
          rob_q[r_id_i[c*ID_W +: ID_W]] <=
              r_data_i[c*DATA_W + 32'(sel_q[r_id_i[c*ID_W +: ID_W]])*LINE_W +: LINE_W];
        end
      end
    end
    for (genvar t = 0; t < TAGS; t++) begin : gen_no_beats
      assign beats_q[t] = '0;
    end
  end

`ifndef SYNTHESIS
  initial begin
    assert (CHANNELS == (1 << CH_BITS)) else $fatal(1, "hbm_line_adapter: CHANNELS must be a power of two");
    assert (LINE_W == (1 << $clog2(LINE_W))) else $fatal(1, "hbm_line_adapter: LINE_W must be a power of two");
    assert (BPL <= (1 << LEN_W)) else $fatal(1, "hbm_line_adapter: a line needs more beats than a burst holds");
  end
`endif

  // The address channels' id, address and length are shared by the channel controllers: one valid at
  // a time.
  `TPU_ASSERT(OneReadAddressAtATime, $onehot0(ar_valid_o))
  `TPU_ASSERT(OneWriteAddressAtATime, $onehot0(aw_valid_o))

/* verilator tracing_on */
endmodule
