`include "tpu_assert.svh"
// HBM2 channel controller: an AXI-style front end (AR/R, AW/W/B with bursts and IDs) feeding a read
// queue and a write queue, an FR-FCFS scheduler with an open-page policy, write draining between a
// high and a low watermark, per-bank JEDEC timing state and all-bank refresh, behind a DFI-like
// interface with a row command bus (ACT/PRE/PREA/REF) and a column command bus (RD/WR) as on HBM2.
//
// Units: one data beat is one column burst (BL4 on a 128-bit channel = 64 bytes). Addresses on the
// front end are byte addresses; the line address (addr >> 6) is split into column, bank group, bank,
// pseudo channel and row by the *_LSB/*_BITS parameters (channel bits, if any, lie above the row and
// are decoded by whoever routes requests to this channel). Write data travels with the WR command;
// the device takes it CWL cycles later. Read data returns in RD order, CL + burst cycles later.
// Timing parameters are in controller cycles (tCK); defaults are DRAMSim3's HBM2_8Gb_x128 (docs/hbm.md).
module hbm_ctrl #(
  parameter int ADDR_W   = 32,   // byte address width
  parameter int ID_W     = 6,
  parameter int LEN_W    = 4,    // burst length field: beats - 1
  parameter int DATA_W   = 512,  // one 64-byte burst
  // Address mapping on line addresses.
  parameter int COL_BITS = 4,
  parameter int BG_BITS  = 2,
  parameter int BA_BITS  = 2,
  parameter int PC_BITS  = 0,
  parameter int ROW_BITS = 15,
  parameter int COL_LSB  = 0,
  parameter int BG_LSB   = 4,
  parameter int BA_LSB   = 6,
  parameter int PC_LSB   = 8,
  parameter int ROW_LSB  = 8,
  // Timing (cycles).
  /* verilator lint_off UNUSEDPARAM */
  parameter int T_CL     = 14,   // read data returns in order, so only T_RTW depends on it
  /* verilator lint_on UNUSEDPARAM */
  parameter int T_CWL    = 4,
  parameter int T_BURST  = 2,    // BL/2: data-bus cycles per burst
  parameter int T_RCD    = 14,
  parameter int T_RP     = 14,
  parameter int T_RAS    = 34,
  parameter int T_RC     = 48,
  parameter int T_WR     = 16,
  parameter int T_RTP    = 6,
  parameter int T_RRD_S  = 4,
  parameter int T_RRD_L  = 6,
  parameter int T_FAW    = 30,
  parameter int T_CCD_S  = 1,
  parameter int T_CCD_L  = 2,
  parameter int T_WTR_S  = 6,
  parameter int T_WTR_L  = 8,
  parameter int T_RTW    = 13,   // RD to WR, any bank: CL + burst - CWL + 1 bus turnaround
  parameter int T_REFI   = 3900,
  parameter int T_RFC    = 260,
  // Queues.
  parameter int RQ_DEPTH = 16,
  parameter int WQ_DEPTH = 128,  // depth and watermarks: the sweep in docs/hbm.md
  parameter int WQ_HI    = 120,
  parameter int WQ_LO    = 8,
  parameter int RSP_DEPTH = 16,
  parameter int BQ_DEPTH = 8,
  // 0: B once a burst's last beat is queued (posted writes); 1: B once every beat of the burst has gone
  // to the device, so memory read behind the controller's back (a backdoor) already holds it.
  parameter bit B_AFTER_ISSUE = 1'b0,
  localparam int STRB_W  = DATA_W / 8,
  localparam int NB_W    = PC_BITS + BG_BITS + BA_BITS,
  localparam int NBANKS  = 1 << NB_W,
  localparam int NBG     = 1 << (PC_BITS + BG_BITS)
) (
  input  logic                clk_i,
  input  logic                rst_ni,
  // Read address / data.
  input  logic                ar_valid_i,
  output logic                ar_ready_o,
  input  logic [ID_W-1:0]     ar_id_i,
  /* verilator lint_off UNUSEDSIGNAL */
  input  logic [ADDR_W-1:0]   ar_addr_i,      // bits [5:0]: offset inside a 64-byte beat
  input  logic [LEN_W-1:0]    ar_len_i,
  output logic                r_valid_o,
  input  logic                r_ready_i,
  output logic [ID_W-1:0]     r_id_o,
  /* verilator tracing_off */
  output logic [DATA_W-1:0]   r_data_o,
  /* verilator tracing_on */
  output logic                r_last_o,
  output logic [1:0]          r_resp_o,
  // Write address / data / response.
  input  logic                aw_valid_i,
  output logic                aw_ready_o,
  input  logic [ID_W-1:0]     aw_id_i,
  input  logic [ADDR_W-1:0]   aw_addr_i,
  input  logic [LEN_W-1:0]    aw_len_i,       // the write burst ends at w_last_i
  /* verilator lint_on UNUSEDSIGNAL */
  input  logic                w_valid_i,
  output logic                w_ready_o,
  /* verilator tracing_off */
  input  logic [DATA_W-1:0]   w_data_i,
  input  logic [STRB_W-1:0]   w_strb_i,
  /* verilator tracing_on */
  input  logic                w_last_i,
  output logic                b_valid_o,
  input  logic                b_ready_i,
  output logic [ID_W-1:0]     b_id_o,
  output logic [1:0]          b_resp_o,
  // DFI-like device interface.
  output logic [2:0]          dfi_row_cmd_o,   // hbm cmd codes below
  output logic [NB_W-1:0]     dfi_row_bank_o,
  output logic [ROW_BITS-1:0] dfi_row_addr_o,
  output logic [1:0]          dfi_col_cmd_o,
  output logic [NB_W-1:0]     dfi_col_bank_o,
  output logic [COL_BITS-1:0] dfi_col_addr_o,
  /* verilator tracing_off */
  output logic [DATA_W-1:0]   dfi_wrdata_o,
  output logic [STRB_W-1:0]   dfi_wrmask_o,    // 1 = byte written
  /* verilator tracing_on */
  input  logic                dfi_rddata_valid_i,
  /* verilator tracing_off */
  input  logic [DATA_W-1:0]   dfi_rddata_i
  /* verilator tracing_on */
);

  // Waveforms hold the ports, the queues' valid bits and the bank state (open banks, write mode,
  // refresh); the rest of the internals would double a dump's size and its host time.
  /* verilator tracing_off */
  // Command codes (also in tb/hbm and sysc/dram_device.h).
  localparam logic [2:0] RowNop = 3'd0, RowAct = 3'd1, RowPre = 3'd2, RowPrea = 3'd3, RowRef = 3'd4;
  localparam logic [1:0] ColNop = 2'd0, ColRd = 2'd1, ColWr = 2'd2;
  localparam int LINE_W = ADDR_W - 6;
  localparam int RQ_W = $clog2(RQ_DEPTH + 1);
  localparam int WQ_W = $clog2(WQ_DEPTH + 1);
  localparam int WQ_IW = $clog2(WQ_DEPTH);    // write queue index
  localparam int RSP_PW = $clog2(RSP_DEPTH);
  localparam int BQ_PW = $clog2(BQ_DEPTH);
  localparam int REFI_W = $clog2(T_REFI + 1);
  localparam int WR_TO_PRE = T_CWL + T_BURST + T_WR;
  localparam int WR_TO_RD_S = T_CWL + T_BURST + T_WTR_S;
  localparam int WR_TO_RD_L = T_CWL + T_BURST + T_WTR_L;
  localparam int CCD_S = T_CCD_S > T_BURST ? T_CCD_S : T_BURST;
  localparam int CCD_L = T_CCD_L > T_BURST ? T_CCD_L : T_BURST;

  // State arrays are flat vectors sliced with +: (what Yosys 0.23 handles).
  typedef logic [31:0] time_t;
  // Functions assign their result to their name: Yosys 0.23 does not accept `return`.

  // True when time t has been reached at now (wrap-safe while differences stay below 2^31).
  function automatic logic reached(time_t t, time_t now);
    logic signed [31:0] diff;
    diff = now - t;
    reached = diff >= 0;
  endfunction
  function automatic time_t later(time_t a, time_t b);
    logic signed [31:0] diff;
    diff = a - b;
    later = (diff < 0) ? b : a;
  endfunction

  function automatic logic [NB_W-1:0] bank_of(logic [LINE_W-1:0] line);
    logic [63:0] wide, bg, ba, pc;
    wide = 64'(line);
    bg = (wide >> BG_LSB) & ((64'd1 << BG_BITS) - 64'd1);
    ba = (wide >> BA_LSB) & ((64'd1 << BA_BITS) - 64'd1);
    pc = (wide >> PC_LSB) & ((64'd1 << PC_BITS) - 64'd1);
    bank_of = NB_W'((pc << (BG_BITS + BA_BITS)) | (bg << BA_BITS) | ba);
  endfunction
  function automatic logic [ROW_BITS-1:0] row_of(logic [LINE_W-1:0] line);
    row_of = ROW_BITS'(line >> ROW_LSB);
  endfunction
  function automatic logic [COL_BITS-1:0] col_of(logic [LINE_W-1:0] line);
    col_of = COL_BITS'(line >> COL_LSB);
  endfunction
  // Bank group index (pseudo channel included) of a flat bank index.
  function automatic int unsigned group_of(logic [NB_W-1:0] bank);
    group_of = 32'(bank) >> BA_BITS;
  endfunction

  time_t now_q;

  // ---------------- Front end: burst splitters ----------------
  logic              rd_busy_q, wr_busy_q;
  logic [ID_W-1:0]   rd_id_q, wr_id_q;
  logic [LINE_W-1:0] rd_line_q, wr_line_q;
  logic [LEN_W-1:0]  rd_left_q;
  // Same-address order between the read and write paths follows AR/AW acceptance (AR first when both
  // are accepted in one cycle). A burst accepted while a burst of the other kind is still being split
  // into the queues waits until that one is fully queued, so queue entries are pushed in acceptance
  // order and the cross-age matrix below captures it.
  logic              rd_wait_q, wr_wait_q;

  // ---------------- Queues ----------------
  /* verilator tracing_on */
  logic [RQ_DEPTH-1:0]             rq_valid_q, rq_valid_d;
  /* verilator tracing_off */
  logic [RQ_DEPTH*ID_W-1:0] rq_id_q, rq_id_d;
  logic [RQ_DEPTH*LINE_W-1:0] rq_line_q, rq_line_d;
  logic [RQ_DEPTH-1:0] rq_last_q, rq_last_d;
  logic [RQ_DEPTH*RQ_DEPTH-1:0] rq_older_q, rq_older_d;  // bit i*RQ_DEPTH+j: entry i older than j
  /* verilator tracing_on */
  logic [WQ_DEPTH-1:0]             wq_valid_q, wq_valid_d;
  /* verilator tracing_off */
  logic [WQ_DEPTH*LINE_W-1:0] wq_line_q, wq_line_d;
  logic [DATA_W-1:0]               wq_data_q [WQ_DEPTH];
  logic [STRB_W-1:0]               wq_strb_q [WQ_DEPTH];
  logic [WQ_DEPTH*WQ_DEPTH-1:0] wq_older_q, wq_older_d;
  // Same-line order between the queues, recorded when an entry is pushed (entries are pushed in
  // acceptance order, so everything already queued is older):
  // - a read keeps the youngest older write of its line (its source): it waits for that write, which
  //   is issued after every older write of the line, or is answered from it when its strobes are full;
  // - a write keeps the reads of its line queued before it (it waits until they have left the read
  //   queue) and the youngest older write of its line still queued (written to the device first);
  // - the youngest write of each line (newest) takes later writes of that line into its entry as long
  //   as no queued read has it as its source.
  logic [RQ_DEPTH-1:0]             rq_src_valid_q, rq_src_valid_d;
  logic [RQ_DEPTH*WQ_IW-1:0]       rq_src_q, rq_src_d;
  logic [WQ_DEPTH-1:0]             wq_newest_q, wq_newest_d;
  logic [WQ_DEPTH-1:0]             wq_full_q, wq_full_d;      // every byte strobed: can answer a read
  logic [WQ_DEPTH-1:0]             wq_prev_valid_q, wq_prev_valid_d;
  logic [WQ_DEPTH*WQ_IW-1:0]       wq_prev_q, wq_prev_d;
  logic [WQ_DEPTH*RQ_DEPTH-1:0]    wq_rd_wait_q, wq_rd_wait_d;  // bit j*RQ_DEPTH+i: write j after read i
  logic [RQ_W-1:0]                 rq_count;
  logic [WQ_W-1:0]                 wq_count;

  // ---------------- Bank and timing state ----------------
  /* verilator tracing_on */
  logic [NBANKS-1:0]   open_q, open_d;
  /* verilator tracing_off */
  logic [NBANKS*ROW_BITS-1:0] open_row_q, open_row_d;
  logic [NBANKS*32-1:0] act_ok_q, act_ok_d;
  logic [NBANKS*32-1:0] pre_ok_q, pre_ok_d;
  logic [NBANKS*32-1:0] col_ok_q, col_ok_d;          // tRCD after ACT
  logic [NBG*32-1:0] rd_ok_q, rd_ok_d;             // column spacing per bank group
  logic [NBG*32-1:0] wr_ok_q, wr_ok_d;
  logic [4*32-1:0] faw_q, faw_d;               // last four ACT times, [0] oldest
  time_t ref_ok_q, ref_ok_d;
  /* verilator tracing_on */
  logic               write_mode_q, write_mode_d;
  /* verilator tracing_off */
  /* verilator tracing_on */
  logic               ref_pending_q, ref_pending_d;
  /* verilator tracing_off */
  logic [REFI_W-1:0]  refi_cnt_q;

  // ---------------- Read response buffer (in RD order) ----------------
  logic [ID_W-1:0]   rsp_id_q   [RSP_DEPTH];
  logic              rsp_last_q [RSP_DEPTH];
  logic [DATA_W-1:0] rsp_data_q [RSP_DEPTH];
  // Slots are taken in order by RDs and by forwarded reads; forwarded ones hold their data at once,
  // RD data fills the slots of the RDs in flight in RD order (rd_slot_q).
  logic [RSP_DEPTH-1:0] rsp_have_q;
  logic [RSP_PW-1:0] rsp_head_q, rsp_tail_q;
  logic [RSP_PW:0]   rsp_alloc_q;                // slots allocated (in flight, forwarded, ready)
  logic [RSP_PW-1:0] rd_slot_q [RSP_DEPTH];
  logic [RSP_PW-1:0] rd_slot_head_q, rd_slot_tail_q;
  logic [RSP_PW:0]   rd_inflight_q;              // RDs whose data has not come back

  // ---------------- Write response queue ----------------
  logic [ID_W-1:0]   bq_id_q [BQ_DEPTH];
  logic [BQ_PW-1:0]  bq_head_q, bq_tail_q;
  logic [BQ_PW:0]    bq_count_q;
  logic [BQ_PW-1:0]  wq_burst_q [WQ_DEPTH];           // B queue slot of each write queue entry's burst
  logic [BQ_DEPTH*WQ_W-1:0] bq_left_q, bq_left_d;     // beats of each burst not yet issued

  // Free slots: lowest-index free entry of each queue.
  logic              rq_has_free, wq_has_free;
  logic [$clog2(RQ_DEPTH)-1:0] rq_free;
  logic [$clog2(WQ_DEPTH)-1:0] wq_free;
  always_comb begin
    rq_has_free = 1'b0;
    rq_free = '0;
    rq_count = '0;
    for (int i = RQ_DEPTH - 1; i >= 0; i--) begin
      if (!rq_valid_q[i]) begin
        rq_has_free = 1'b1;
        rq_free = ($clog2(RQ_DEPTH))'(i);
      end else begin
        rq_count = rq_count + 1'b1;
      end
    end
    wq_has_free = 1'b0;
    wq_free = '0;
    wq_count = '0;
    for (int i = WQ_DEPTH - 1; i >= 0; i--) begin
      if (!wq_valid_q[i]) begin
        wq_has_free = 1'b1;
        wq_free = ($clog2(WQ_DEPTH))'(i);
      end else begin
        wq_count = wq_count + 1'b1;
      end
    end
  end

  logic rd_push, wr_push, ar_accept, aw_accept, rd_burst_done, wr_burst_done;
  // A new burst may be accepted in the cycle the previous one's last beat is queued.
  assign ar_ready_o = !rd_busy_q || rd_burst_done;
  assign aw_ready_o = !wr_busy_q || wr_burst_done;
  assign ar_accept  = ar_valid_i && ar_ready_o;
  assign aw_accept  = aw_valid_i && aw_ready_o;
  assign rd_push    = rd_busy_q && !rd_wait_q && rq_has_free;
  assign w_ready_o  = wr_busy_q && !wr_wait_q && wq_has_free && (bq_count_q < (BQ_PW+1)'(BQ_DEPTH));
  assign wr_push    = w_valid_i && w_ready_o;
  assign rd_burst_done = rd_push && rd_left_q == '0;
  assign wr_burst_done = wr_push && w_last_i;

  // ---------------- Scheduler ----------------
  // Read blocked: an older read with the same ID is still queued (R order per ID), or an older write
  // to the same line (the write is acknowledged, so the read must see it). Write blocked: an older
  // write or an older read to the same line (the read must not see it).
  logic [RQ_DEPTH-1:0] rq_blocked, rq_wait_wr, rq_fwd_src, rq_fwd_ready, rq_fwd, rq_leave, rq_bank_wait, rq_hit, rq_col_ready, rq_row_cand, rq_row_sel;
  logic [WQ_DEPTH-1:0] wq_blocked, wq_wait_rd, wq_hit, wq_col_ready, wq_row_cand, wq_row_sel;
  logic [WQ_DEPTH-1:0] wq_src_of_read;
  logic                fwd_fire;
  logic [DATA_W-1:0]   fwd_data;
  logic [NBANKS-1:0]   bank_hit_pending;
  logic                rq_any_unblocked, rq_any_wait_wr, wq_any_unblocked;
  logic                faw_ok, rsp_credit;
  logic [1:0]          col_cmd;
  logic [2:0]          row_cmd;
  logic [NB_W-1:0]     col_bank, row_bank;
  logic [COL_BITS-1:0] col_addr;
  logic [ROW_BITS-1:0] row_addr;
  logic [RQ_DEPTH-1:0] rq_issue;
  logic [WQ_DEPTH-1:0] wq_issue;
  logic [DATA_W-1:0]   wr_data;
  logic [STRB_W-1:0]   wr_strb;
  logic [ID_W-1:0]     rd_issue_id;
  logic                rd_issue_last;
  logic                all_closed, prea_ok;
  logic [RQ_DEPTH*RQ_DEPTH-1:0] rq_older_col;
  logic [WQ_DEPTH*WQ_DEPTH-1:0] wq_older_col;

  always_comb begin
    faw_ok = reached(faw_q[(0)*32 +: 32] + 32'(T_FAW), now_q);
    rsp_credit = rsp_alloc_q < (RSP_PW+1)'(RSP_DEPTH);
    rq_any_unblocked = 1'b0;
    rq_any_wait_wr = 1'b0;
    wq_any_unblocked = 1'b0;
    bank_hit_pending = '0;
    wq_src_of_read = '0;
    for (int i = 0; i < RQ_DEPTH; i++) begin
      rq_blocked[i] = 1'b0;
      rq_bank_wait[i] = 1'b0;
      for (int j = 0; j < RQ_DEPTH; j++) begin
        if (rq_valid_q[j] && rq_older_q[(j)*RQ_DEPTH + (i)] && rq_id_q[(j)*ID_W +: ID_W] == rq_id_q[(i)*ID_W +: ID_W]) begin
          rq_blocked[i] = 1'b1;
          if (bank_of(rq_line_q[(j)*LINE_W +: LINE_W]) == bank_of(rq_line_q[(i)*LINE_W +: LINE_W])) rq_bank_wait[i] = 1'b1;
        end
      end
      // A read with a source write never goes to the device before that write: answered from the
      // write queue when the source covers the whole beat (once older reads of its ID have gone, for R
      // order), otherwise read after the source is written.
      rq_wait_wr[i] = rq_src_valid_q[i];
      rq_fwd_src[i] = rq_src_valid_q[i] && wq_full_q[rq_src_q[(i)*WQ_IW +: WQ_IW]];
      rq_fwd_ready[i] = rq_valid_q[i] && rq_fwd_src[i] && !rq_blocked[i];
      if (rq_valid_q[i] && rq_src_valid_q[i]) wq_src_of_read[rq_src_q[(i)*WQ_IW +: WQ_IW]] = 1'b1;
      if (rq_wait_wr[i]) rq_blocked[i] = 1'b1;
      rq_hit[i] = open_q[bank_of(rq_line_q[(i)*LINE_W +: LINE_W])] && open_row_q[(bank_of(rq_line_q[(i)*LINE_W +: LINE_W]))*ROW_BITS +: ROW_BITS] == row_of(rq_line_q[(i)*LINE_W +: LINE_W]);
      if (rq_valid_q[i] && !rq_blocked[i]) rq_any_unblocked = 1'b1;
      if (rq_valid_q[i] && rq_wait_wr[i] && !rq_fwd_src[i]) rq_any_wait_wr = 1'b1;
      // Only hits that will be served in this mode keep their row open: a hit waiting for a write, or
      // for an older read of its ID on the same bank, would hold off the very access it waits for.
      if (rq_valid_q[i] && !rq_wait_wr[i] && !rq_bank_wait[i] && rq_hit[i] && !write_mode_q) bank_hit_pending[bank_of(rq_line_q[(i)*LINE_W +: LINE_W])] = 1'b1;
    end
    for (int i = 0; i < WQ_DEPTH; i++) begin
      wq_wait_rd[i] = wq_rd_wait_q[i*RQ_DEPTH +: RQ_DEPTH] != '0;
      wq_blocked[i] = wq_prev_valid_q[i] || wq_wait_rd[i];
      wq_hit[i] = open_q[bank_of(wq_line_q[(i)*LINE_W +: LINE_W])] && open_row_q[(bank_of(wq_line_q[(i)*LINE_W +: LINE_W]))*ROW_BITS +: ROW_BITS] == row_of(wq_line_q[(i)*LINE_W +: LINE_W]);
      if (wq_valid_q[i] && !wq_blocked[i]) wq_any_unblocked = 1'b1;
      if (wq_valid_q[i] && !wq_wait_rd[i] && wq_hit[i] && write_mode_q) bank_hit_pending[bank_of(wq_line_q[(i)*LINE_W +: LINE_W])] = 1'b1;
    end

    // Column candidates: row hits whose bank and bank group timing allow the access.
    for (int i = 0; i < RQ_DEPTH; i++) begin
      rq_col_ready[i] = rq_valid_q[i] && !rq_blocked[i] && rq_hit[i] && !write_mode_q && !ref_pending_q &&
                        rsp_credit && reached(col_ok_q[(bank_of(rq_line_q[(i)*LINE_W +: LINE_W]))*32 +: 32], now_q) &&
                        reached(rd_ok_q[(group_of(bank_of(rq_line_q[(i)*LINE_W +: LINE_W])))*32 +: 32], now_q);
      // Row candidates: a closed bank to open, or an open bank on another row with no hit waiting.
      // Entries waiting for older ones of their kind may prepare their row (hides tRCD behind older
      // accesses); entries waiting for the other kind may open a closed bank but never close one.
      rq_row_cand[i] = rq_valid_q[i] && !rq_fwd_src[i] && !write_mode_q && !ref_pending_q && !rq_hit[i] &&
                       (open_q[bank_of(rq_line_q[(i)*LINE_W +: LINE_W])]
                          ? (!rq_wait_wr[i] && !bank_hit_pending[bank_of(rq_line_q[(i)*LINE_W +: LINE_W])] &&
                             reached(pre_ok_q[(bank_of(rq_line_q[(i)*LINE_W +: LINE_W]))*32 +: 32], now_q))
                          : (faw_ok && reached(act_ok_q[(bank_of(rq_line_q[(i)*LINE_W +: LINE_W]))*32 +: 32], now_q)));
    end
    for (int i = 0; i < WQ_DEPTH; i++) begin
      wq_col_ready[i] = wq_valid_q[i] && !wq_blocked[i] && wq_hit[i] && write_mode_q && !ref_pending_q &&
                        reached(col_ok_q[(bank_of(wq_line_q[(i)*LINE_W +: LINE_W]))*32 +: 32], now_q) &&
                        reached(wr_ok_q[(group_of(bank_of(wq_line_q[(i)*LINE_W +: LINE_W])))*32 +: 32], now_q);
      wq_row_cand[i] = wq_valid_q[i] && write_mode_q && !ref_pending_q && !wq_hit[i] &&
                       (open_q[bank_of(wq_line_q[(i)*LINE_W +: LINE_W])]
                          ? (!wq_wait_rd[i] && !bank_hit_pending[bank_of(wq_line_q[(i)*LINE_W +: LINE_W])] &&
                             reached(pre_ok_q[(bank_of(wq_line_q[(i)*LINE_W +: LINE_W]))*32 +: 32], now_q))
                          : (faw_ok && reached(act_ok_q[(bank_of(wq_line_q[(i)*LINE_W +: LINE_W]))*32 +: 32], now_q)));
    end
    // Entries not waiting for the other kind go first on the row bus, so a waiting entry cannot reopen
    // its row after another one closed it.
    rq_row_sel = ((rq_row_cand & ~rq_wait_wr) != '0) ? (rq_row_cand & ~rq_wait_wr) : rq_row_cand;
    wq_row_sel = ((wq_row_cand & ~wq_wait_rd) != '0) ? (wq_row_cand & ~wq_wait_rd) : wq_row_cand;

    // Transposed age matrices: bit i*DEPTH+j set when entry j is older than entry i.
    for (int i = 0; i < RQ_DEPTH; i++) begin
      for (int j = 0; j < RQ_DEPTH; j++) rq_older_col[(i)*RQ_DEPTH + (j)] = rq_older_q[(j)*RQ_DEPTH + (i)];
    end
    for (int i = 0; i < WQ_DEPTH; i++) begin
      for (int j = 0; j < WQ_DEPTH; j++) wq_older_col[(i)*WQ_DEPTH + (j)] = wq_older_q[(j)*WQ_DEPTH + (i)];
    end
    // Oldest ready first (FR-FCFS: hits are served on the column bus, misses on the row bus).
    col_cmd = ColNop;
    col_bank = '0;
    col_addr = '0;
    rq_issue = '0;
    wq_issue = '0;
    wr_data = '0;
    wr_strb = '0;
    rd_issue_id = '0;
    rd_issue_last = 1'b0;
    row_cmd = RowNop;
    row_bank = '0;
    row_addr = '0;
    for (int i = 0; i < RQ_DEPTH; i++) begin
      if (rq_col_ready[i] && (rq_col_ready & rq_older_col[i*RQ_DEPTH +: RQ_DEPTH]) == '0) begin
        col_cmd = ColRd;
        col_bank = bank_of(rq_line_q[(i)*LINE_W +: LINE_W]);
        col_addr = col_of(rq_line_q[(i)*LINE_W +: LINE_W]);
        rq_issue[i] = 1'b1;
        rd_issue_id = rq_id_q[(i)*ID_W +: ID_W];
        rd_issue_last = rq_last_q[i];
      end
      if (rq_row_sel[i] && (rq_row_sel & rq_older_col[i*RQ_DEPTH +: RQ_DEPTH]) == '0) begin
        row_bank = bank_of(rq_line_q[(i)*LINE_W +: LINE_W]);
        row_addr = row_of(rq_line_q[(i)*LINE_W +: LINE_W]);
        row_cmd = open_q[row_bank] ? RowPre : RowAct;
      end
    end
    for (int i = 0; i < WQ_DEPTH; i++) begin
      if (wq_col_ready[i] && (wq_col_ready & wq_older_col[i*WQ_DEPTH +: WQ_DEPTH]) == '0) begin
        col_cmd = ColWr;
        col_bank = bank_of(wq_line_q[(i)*LINE_W +: LINE_W]);
        col_addr = col_of(wq_line_q[(i)*LINE_W +: LINE_W]);
        wq_issue[i] = 1'b1;
        wr_data = wq_data_q[i];
        wr_strb = wq_strb_q[i];
      end
      if (wq_row_sel[i] && (wq_row_sel & wq_older_col[i*WQ_DEPTH +: WQ_DEPTH]) == '0) begin
        row_bank = bank_of(wq_line_q[(i)*LINE_W +: LINE_W]);
        row_addr = row_of(wq_line_q[(i)*LINE_W +: LINE_W]);
        row_cmd = open_q[row_bank] ? RowPre : RowAct;
      end
    end
    // Forwarding: the oldest read whose source write covers its beat takes a response slot in a cycle
    // without RD (one slot per cycle); it does not use the device, so any mode and refresh allow it.
    rq_fwd = '0;
    fwd_data = '0;
    for (int i = 0; i < RQ_DEPTH; i++) begin
      if (rq_fwd_ready[i] && (rq_fwd_ready & rq_older_col[i*RQ_DEPTH +: RQ_DEPTH]) == '0) begin
        rq_fwd[i] = 1'b1;
        fwd_data = wq_data_q[rq_src_q[(i)*WQ_IW +: WQ_IW]];
        if (col_cmd != ColRd) begin
          rd_issue_id = rq_id_q[(i)*ID_W +: ID_W];
          rd_issue_last = rq_last_q[i];
        end
      end
    end
    fwd_fire = rq_fwd != '0 && rsp_credit && col_cmd != ColRd;
    if (!fwd_fire) rq_fwd = '0;
    rq_leave = rq_issue | rq_fwd;

    // Refresh: close every bank with one PREA once each allows it, then REF after tRP.
    all_closed = (open_q == '0);
    prea_ok = 1'b1;
    for (int b = 0; b < NBANKS; b++) begin
      if (open_q[b] && !reached(pre_ok_q[(b)*32 +: 32], now_q)) prea_ok = 1'b0;
    end
    if (ref_pending_q) begin
      row_addr = '0;
      row_bank = '0;
      if (!all_closed) row_cmd = prea_ok ? RowPrea : RowNop;
      else row_cmd = reached(ref_ok_q, now_q) ? RowRef : RowNop;
    end
  end

  assign dfi_row_cmd_o  = row_cmd;
  assign dfi_row_bank_o = row_bank;
  assign dfi_row_addr_o = row_addr;
  assign dfi_col_cmd_o  = col_cmd;
  assign dfi_col_bank_o = col_bank;
  assign dfi_col_addr_o = col_addr;
  assign dfi_wrdata_o   = wr_data;
  assign dfi_wrmask_o   = wr_strb;

  // ---------------- Next state: timing ----------------
  always_comb begin
    open_d = open_q;
    open_row_d = open_row_q;
    act_ok_d = act_ok_q;
    pre_ok_d = pre_ok_q;
    col_ok_d = col_ok_q;
    rd_ok_d = rd_ok_q;
    wr_ok_d = wr_ok_q;
    faw_d = faw_q;
    ref_ok_d = ref_ok_q;
    unique case (row_cmd)
      RowAct: begin
        for (int b = 0; b < NBANKS; b++) begin
          if (b == 32'(row_bank)) begin
            act_ok_d[(b)*32 +: 32] = later(act_ok_q[(b)*32 +: 32], now_q + 32'(T_RC));
          end else if (group_of(NB_W'(b)) == group_of(row_bank)) begin
            act_ok_d[(b)*32 +: 32] = later(act_ok_q[(b)*32 +: 32], now_q + 32'(T_RRD_L));
          end else begin
            act_ok_d[(b)*32 +: 32] = later(act_ok_q[(b)*32 +: 32], now_q + 32'(T_RRD_S));
          end
        end
        open_d[row_bank] = 1'b1;
        open_row_d[(row_bank)*ROW_BITS +: ROW_BITS] = row_addr;
        col_ok_d[(row_bank)*32 +: 32] = now_q + 32'(T_RCD);
        pre_ok_d[(row_bank)*32 +: 32] = now_q + 32'(T_RAS);
        faw_d[(0)*32 +: 32] = faw_q[(1)*32 +: 32];
        faw_d[(1)*32 +: 32] = faw_q[(2)*32 +: 32];
        faw_d[(2)*32 +: 32] = faw_q[(3)*32 +: 32];
        faw_d[(3)*32 +: 32] = now_q;
      end
      RowPre: begin
        open_d[row_bank] = 1'b0;
        act_ok_d[(row_bank)*32 +: 32] = later(act_ok_q[(row_bank)*32 +: 32], now_q + 32'(T_RP));
        ref_ok_d = later(ref_ok_q, now_q + 32'(T_RP));
      end
      RowPrea: begin
        for (int b = 0; b < NBANKS; b++) begin
          act_ok_d[(b)*32 +: 32] = later(act_ok_q[(b)*32 +: 32], now_q + 32'(T_RP));
        end
        open_d = '0;
        ref_ok_d = later(ref_ok_q, now_q + 32'(T_RP));
      end
      RowRef: begin
        for (int b = 0; b < NBANKS; b++) begin
          act_ok_d[(b)*32 +: 32] = later(act_ok_q[(b)*32 +: 32], now_q + 32'(T_RFC));
        end
        ref_ok_d = now_q + 32'(T_RFC);
      end
      default: ;
    endcase
    unique case (col_cmd)
      ColRd: begin
        for (int g = 0; g < NBG; g++) begin
          rd_ok_d[(g)*32 +: 32] = later(rd_ok_q[(g)*32 +: 32],
                             now_q + 32'((g == 32'(group_of(col_bank))) ? CCD_L : CCD_S));
          wr_ok_d[(g)*32 +: 32] = later(wr_ok_q[(g)*32 +: 32], now_q + 32'(T_RTW));
        end
        pre_ok_d[(col_bank)*32 +: 32] = later(pre_ok_q[(col_bank)*32 +: 32], now_q + 32'(T_RTP));
      end
      ColWr: begin
        for (int g = 0; g < NBG; g++) begin
          wr_ok_d[(g)*32 +: 32] = later(wr_ok_q[(g)*32 +: 32],
                             now_q + 32'((g == 32'(group_of(col_bank))) ? CCD_L : CCD_S));
          rd_ok_d[(g)*32 +: 32] = later(rd_ok_q[(g)*32 +: 32],
                             now_q + 32'((g == 32'(group_of(col_bank))) ? WR_TO_RD_L : WR_TO_RD_S));
        end
        pre_ok_d[(col_bank)*32 +: 32] = later(pre_ok_q[(col_bank)*32 +: 32], now_q + 32'(WR_TO_PRE));
      end
      default: ;
    endcase

    // Write draining with hysteresis: start at the high watermark, when no read can proceed, or when a
    // read waits for a write (answered from the queue does not count); stop at the low watermark once a
    // read can go and none waits for a write, or when no write can proceed. Entries are ordered by
    // acceptance, so the oldest one is never blocked and one of the two modes always has work.
    if (!write_mode_q) begin
      write_mode_d = wq_any_unblocked &&
                     ((wq_count >= WQ_W'(WQ_HI)) || !rq_any_unblocked || rq_any_wait_wr);
    end else begin
      write_mode_d = wq_any_unblocked &&
                     !(wq_count <= WQ_W'(WQ_LO) && rq_any_unblocked && !rq_any_wait_wr);
    end
    ref_pending_d = ref_pending_q;
    if (refi_cnt_q == REFI_W'(T_REFI - 1)) ref_pending_d = 1'b1;
    if (row_cmd == RowRef) ref_pending_d = 1'b0;
  end

  // ---------------- Next state: queues ----------------
  // Same-line lookups for the beats pushed in this cycle: the youngest queued write of the line that is
  // not being issued now (one being issued reaches the device before anything pushed now).
  logic              rd_src_found, wr_prev_found, wr_merge;
  logic [WQ_IW-1:0]  rd_src_idx, wr_prev_idx;
  always_comb begin
    rd_src_found = 1'b0;
    rd_src_idx = '0;
    wr_prev_found = 1'b0;
    wr_prev_idx = '0;
    for (int j = 0; j < WQ_DEPTH; j++) begin
      if (wq_valid_q[j] && wq_newest_q[j] && !wq_issue[j]) begin
        if (wq_line_q[(j)*LINE_W +: LINE_W] == rd_line_q) begin
          rd_src_found = 1'b1;
          rd_src_idx = WQ_IW'(j);
        end
        if (wq_line_q[(j)*LINE_W +: LINE_W] == wr_line_q) begin
          wr_prev_found = 1'b1;
          wr_prev_idx = WQ_IW'(j);
        end
      end
    end
    // A write joins the youngest queued write of its line unless a read is to see that one without
    // the new data: a queued read with it as source, or a read of the line pushed now (AR goes first).
    wr_merge = wr_push && wr_prev_found && !wq_src_of_read[wr_prev_idx] &&
               !(rd_push && rd_line_q == wr_line_q);
  end

  always_comb begin
    rq_valid_d = rq_valid_q & ~rq_leave;
    rq_id_d = rq_id_q;
    rq_line_d = rq_line_q;
    rq_last_d = rq_last_q;
    rq_older_d = rq_older_q;
    rq_src_valid_d = rq_src_valid_q;
    rq_src_d = rq_src_q;
    // A read whose source is written now reads the device afterwards.
    for (int i = 0; i < RQ_DEPTH; i++) begin
      if (wq_issue[rq_src_q[(i)*WQ_IW +: WQ_IW]]) rq_src_valid_d[i] = 1'b0;
    end
    if (rd_push) begin
      rq_valid_d[rq_free] = 1'b1;
      rq_id_d[(rq_free)*ID_W +: ID_W] = rd_id_q;
      rq_line_d[(rq_free)*LINE_W +: LINE_W] = rd_line_q;
      rq_last_d[rq_free] = (rd_left_q == '0);
      rq_src_valid_d[rq_free] = rd_src_found;
      rq_src_d[(rq_free)*WQ_IW +: WQ_IW] = rd_src_idx;
      // Every entry still queued is older than the new one; the new one is older than nothing.
      for (int j = 0; j < RQ_DEPTH; j++) begin
        rq_older_d[(j)*RQ_DEPTH + 32'(rq_free)] = rq_valid_d[j] && (j != 32'(rq_free));
        rq_older_d[(rq_free)*RQ_DEPTH + (j)] = 1'b0;
      end
    end
    wq_valid_d = wq_valid_q & ~wq_issue;
    wq_line_d = wq_line_q;
    wq_older_d = wq_older_q;
    wq_newest_d = wq_newest_q;
    wq_full_d = wq_full_q;
    wq_prev_valid_d = wq_prev_valid_q;
    wq_prev_d = wq_prev_q;
    for (int j = 0; j < WQ_DEPTH; j++) begin
      wq_rd_wait_d[j*RQ_DEPTH +: RQ_DEPTH] = wq_rd_wait_q[j*RQ_DEPTH +: RQ_DEPTH] & ~rq_leave;
      if (wq_issue[wq_prev_q[(j)*WQ_IW +: WQ_IW]]) wq_prev_valid_d[j] = 1'b0;
    end
    if (wr_merge) begin
      wq_full_d[wr_prev_idx] = &(wq_strb_q[wr_prev_idx] | w_strb_i);
    end else if (wr_push) begin
      wq_valid_d[wq_free] = 1'b1;
      wq_line_d[(wq_free)*LINE_W +: LINE_W] = wr_line_q;
      wq_newest_d[wq_free] = 1'b1;
      if (wr_prev_found) wq_newest_d[wr_prev_idx] = 1'b0;
      wq_full_d[wq_free] = &w_strb_i;
      wq_prev_valid_d[wq_free] = wr_prev_found;
      wq_prev_d[(wq_free)*WQ_IW +: WQ_IW] = wr_prev_idx;
      for (int j = 0; j < WQ_DEPTH; j++) begin
        wq_older_d[(j)*WQ_DEPTH + 32'(wq_free)] = wq_valid_d[j] && (j != 32'(wq_free));
        wq_older_d[(wq_free)*WQ_DEPTH + (j)] = 1'b0;
      end
      // The queued reads of its line (one pushed in this cycle too) are older than the new write.
      for (int i = 0; i < RQ_DEPTH; i++) begin
        wq_rd_wait_d[32'(wq_free)*RQ_DEPTH + i] = rq_valid_d[i] && rq_line_d[(i)*LINE_W +: LINE_W] == wr_line_q;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      now_q <= '0;
      rd_busy_q <= 1'b0;
      wr_busy_q <= 1'b0;
      rd_id_q <= '0;
      wr_id_q <= '0;
      rd_line_q <= '0;
      wr_line_q <= '0;
      rd_left_q <= '0;
      rd_wait_q <= 1'b0;
      wr_wait_q <= 1'b0;
      rq_valid_q <= '0;
      wq_valid_q <= '0;
      rq_src_valid_q <= '0;
      wq_prev_valid_q <= '0;
      wq_rd_wait_q <= '0;
      open_q <= '0;
      for (int b = 0; b < NBANKS; b++) begin
        act_ok_q[(b)*32 +: 32] <= '0;
        pre_ok_q[(b)*32 +: 32] <= '0;
        col_ok_q[(b)*32 +: 32] <= '0;
        open_row_q[(b)*ROW_BITS +: ROW_BITS] <= '0;
      end
      for (int g = 0; g < NBG; g++) begin
        rd_ok_q[(g)*32 +: 32] <= '0;
        wr_ok_q[(g)*32 +: 32] <= '0;
      end
      for (int k = 0; k < 4; k++) faw_q[(k)*32 +: 32] <= '0;
      ref_ok_q <= '0;
      write_mode_q <= 1'b0;
      ref_pending_q <= 1'b0;
      refi_cnt_q <= '0;
    end else begin
      now_q <= now_q + 1'b1;
      // Burst splitters: one beat per cycle, INCR bursts of 64-byte beats.
      // A read waits for the write burst still being queued; a write for the read burst still being
      // queued or accepted in this cycle.
      if (ar_accept) rd_wait_q <= wr_busy_q && !wr_burst_done;
      else if (wr_burst_done) rd_wait_q <= 1'b0;
      if (aw_accept) wr_wait_q <= ar_accept || (rd_busy_q && !rd_burst_done);
      else if (rd_burst_done) wr_wait_q <= 1'b0;
      if (ar_accept) begin
        rd_busy_q <= 1'b1;
        rd_id_q <= ar_id_i;
        rd_line_q <= ar_addr_i[ADDR_W-1:6];
        rd_left_q <= ar_len_i;
      end else if (rd_push) begin
        rd_line_q <= rd_line_q + 1'b1;
        rd_left_q <= rd_left_q - 1'b1;
        if (rd_left_q == '0) rd_busy_q <= 1'b0;
      end
      if (aw_accept) begin
        wr_busy_q <= 1'b1;
        wr_id_q <= aw_id_i;
        wr_line_q <= aw_addr_i[ADDR_W-1:6];
      end else if (wr_push) begin
        wr_line_q <= wr_line_q + 1'b1;
        if (w_last_i) wr_busy_q <= 1'b0;
      end
      rq_valid_q <= rq_valid_d;
      rq_id_q <= rq_id_d;
      rq_line_q <= rq_line_d;
      rq_last_q <= rq_last_d;
      rq_older_q <= rq_older_d;
      rq_src_valid_q <= rq_src_valid_d;
      rq_src_q <= rq_src_d;
      wq_newest_q <= wq_newest_d;
      wq_full_q <= wq_full_d;
      wq_prev_valid_q <= wq_prev_valid_d;
      wq_prev_q <= wq_prev_d;
      wq_rd_wait_q <= wq_rd_wait_d;
      wq_valid_q <= wq_valid_d;
      wq_line_q <= wq_line_d;
      wq_older_q <= wq_older_d;
      open_q <= open_d;
      open_row_q <= open_row_d;
      act_ok_q <= act_ok_d;
      pre_ok_q <= pre_ok_d;
      col_ok_q <= col_ok_d;
      rd_ok_q <= rd_ok_d;
      wr_ok_q <= wr_ok_d;
      faw_q <= faw_d;
      ref_ok_q <= ref_ok_d;
      write_mode_q <= write_mode_d;
      ref_pending_q <= ref_pending_d;
      refi_cnt_q <= (refi_cnt_q == REFI_W'(T_REFI - 1)) ? '0 : refi_cnt_q + 1'b1;
    end
  end

  // Write data storage without reset (a datapath RAM).
  // A merged beat replaces the strobed bytes of the entry it joins.
  always_ff @(posedge clk_i) begin
    if (wr_merge) begin
      for (int b = 0; b < STRB_W; b++) begin
        if (w_strb_i[b]) wq_data_q[wr_prev_idx][b*8 +: 8] <= w_data_i[b*8 +: 8];
      end
      wq_strb_q[wr_prev_idx] <= wq_strb_q[wr_prev_idx] | w_strb_i;
    end else if (wr_push) begin
      wq_data_q[wq_free] <= w_data_i;
      wq_strb_q[wq_free] <= w_strb_i;
    end
  end

  // ---------------- Read responses ----------------
  logic r_pop, rsp_alloc;
  assign r_pop     = r_valid_o && r_ready_i;
  assign r_valid_o = rsp_alloc_q != '0 && rsp_have_q[rsp_head_q];
  assign r_id_o    = rsp_id_q[rsp_head_q];
  assign r_last_o  = rsp_last_q[rsp_head_q];
  assign r_data_o  = rsp_data_q[rsp_head_q];
  assign r_resp_o  = 2'b00;
  assign rsp_alloc = col_cmd == ColRd || fwd_fire;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rsp_have_q <= '0;
      rsp_head_q <= '0;
      rsp_tail_q <= '0;
      rsp_alloc_q <= '0;
      rd_slot_head_q <= '0;
      rd_slot_tail_q <= '0;
      rd_inflight_q <= '0;
    end else begin
      if (rsp_alloc) rsp_tail_q <= rsp_tail_q + 1'b1;
      if (col_cmd == ColRd) rd_slot_tail_q <= rd_slot_tail_q + 1'b1;
      if (dfi_rddata_valid_i) rd_slot_head_q <= rd_slot_head_q + 1'b1;
      if (r_pop) rsp_head_q <= rsp_head_q + 1'b1;
      // Distinct slots: the head is popped only once it has data, the tail is free, RD data goes to
      // a slot allocated earlier and not yet filled.
      if (r_pop) rsp_have_q[rsp_head_q] <= 1'b0;
      if (fwd_fire) rsp_have_q[rsp_tail_q] <= 1'b1;
      if (dfi_rddata_valid_i) rsp_have_q[rd_slot_q[rd_slot_head_q]] <= 1'b1;
      rsp_alloc_q <= rsp_alloc_q + (RSP_PW+1)'(rsp_alloc) - (RSP_PW+1)'(r_pop);
      rd_inflight_q <= rd_inflight_q + (RSP_PW+1)'(col_cmd == ColRd) - (RSP_PW+1)'(dfi_rddata_valid_i);
    end
  end
  always_ff @(posedge clk_i) begin
    if (rsp_alloc) begin
      rsp_id_q[rsp_tail_q] <= rd_issue_id;
      rsp_last_q[rsp_tail_q] <= rd_issue_last;
    end
    if (col_cmd == ColRd) rd_slot_q[rd_slot_tail_q] <= rsp_tail_q;
    if (fwd_fire) rsp_data_q[rsp_tail_q] <= fwd_data;
    if (dfi_rddata_valid_i) rsp_data_q[rd_slot_q[rd_slot_head_q]] <= dfi_rddata_i;
  end

  // ---------------- Write responses: one per burst, once its last beat is queued (or issued) ----------------
  logic b_pop, b_push;
  assign b_push    = wr_push && w_last_i;
  assign b_pop     = b_valid_o && b_ready_i;
  assign b_valid_o = bq_count_q != '0 && (!B_AFTER_ISSUE || bq_left_q[32'(bq_head_q)*WQ_W +: WQ_W] == '0);
  always_comb begin
    bq_left_d = bq_left_q;
    // A merged beat counts for the burst of the entry it joins, whose B comes first.
    if (wr_push && !wr_merge) bq_left_d[32'(bq_tail_q)*WQ_W +: WQ_W] = bq_left_d[32'(bq_tail_q)*WQ_W +: WQ_W] + 1'b1;
    for (int i = 0; i < WQ_DEPTH; i++) begin
      if (wq_issue[i]) begin
        bq_left_d[32'(wq_burst_q[i])*WQ_W +: WQ_W] = bq_left_d[32'(wq_burst_q[i])*WQ_W +: WQ_W] - 1'b1;
      end
    end
  end
  assign b_id_o    = bq_id_q[bq_head_q];
  assign b_resp_o  = 2'b00;
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      bq_head_q <= '0;
      bq_tail_q <= '0;
      bq_count_q <= '0;
      bq_left_q <= '0;
    end else begin
      bq_left_q <= bq_left_d;
      if (b_push) bq_tail_q <= bq_tail_q + 1'b1;
      if (b_pop) bq_head_q <= bq_head_q + 1'b1;
      bq_count_q <= bq_count_q + (BQ_PW+1)'(b_push) - (BQ_PW+1)'(b_pop);
    end
  end
  always_ff @(posedge clk_i) begin
    if (b_push) bq_id_q[bq_tail_q] <= wr_id_q;
    if (wr_push && !wr_merge) wq_burst_q[wq_free] <= bq_tail_q;
  end

  // Protocol checks: read data only for reads in flight; queue bookkeeping stays consistent; banks are
  // opened only when closed and accessed only when open.
  `TPU_ASSERT(ReadDataOfAReadInFlight, !dfi_rddata_valid_i || rd_inflight_q != '0)
  `TPU_ASSERT(OneResponseSlotPerCycle, !(fwd_fire && col_cmd == ColRd))
  `TPU_ASSERT(NoMergeIntoAnIssuingWrite, !(wr_merge && wq_issue[wr_prev_idx]))
  `TPU_ASSERT(ForwardOnlyFromAFullSource, !(rq_fwd != '0 && (rq_fwd & ~rq_fwd_src) != '0))
  `TPU_ASSERT(ActivateOnlyAClosedBank, !(row_cmd == RowAct && open_q[row_bank]))
  `TPU_ASSERT(ColumnOnlyToAnOpenBank, !(col_cmd != ColNop && !open_q[col_bank]))
/* verilator tracing_on */
endmodule
