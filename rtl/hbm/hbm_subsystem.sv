// The chip's HBM: its line port (a core's tpu_arbiter's side) on HBM_CHANNELS HBM2 channel controllers, each
// behind its own DFI-like device interface (channel c at [c*W +: W] of every dfi_* port). Geometry from the
// configuration (tpu_pkg: HBM_CHANNELS, HBM_ROW_BITS, HBM_COL_BITS, HBM_BG_BITS, HBM_BA_BITS); timing is
// the controller's defaults (docs/hbm.md). The line -> channel/bank/row/column mapping is in docs/hbm.md.
module hbm_subsystem #(
  parameter int CHANNELS = tpu_pkg::HBM_CHANNELS,
  parameter int LINE_W   = tpu_pkg::LINE_W,
  parameter int ROW_BITS = tpu_pkg::HBM_ROW_BITS,
  parameter int COL_BITS = tpu_pkg::HBM_COL_BITS,
  parameter int BG_BITS  = tpu_pkg::HBM_BG_BITS,
  parameter int BA_BITS  = tpu_pkg::HBM_BA_BITS,
  localparam int DATA_W  = 512,
  localparam int STRB_W  = DATA_W / 8,
  localparam int NB_W    = BG_BITS + BA_BITS
) (
  input  logic                         clk_i,
  input  logic                         rst_ni,
  input  logic                         req_valid_i,
  output logic                         req_ready_o,
  input  logic                         req_write_i,
  input  logic [31:0]                  req_addr_i,
  input  logic [LINE_W-1:0]            req_wdata_i,
  output logic                         rsp_valid_o,
  output logic [LINE_W-1:0]            rsp_rdata_o,
  output logic [CHANNELS*3-1:0]        dfi_row_cmd_o,
  output logic [CHANNELS*NB_W-1:0]     dfi_row_bank_o,
  output logic [CHANNELS*ROW_BITS-1:0] dfi_row_addr_o,
  output logic [CHANNELS*2-1:0]        dfi_col_cmd_o,
  output logic [CHANNELS*NB_W-1:0]     dfi_col_bank_o,
  output logic [CHANNELS*COL_BITS-1:0] dfi_col_addr_o,
  /* verilator tracing_off */
  output logic [CHANNELS*DATA_W-1:0]   dfi_wrdata_o,
  output logic [CHANNELS*STRB_W-1:0]   dfi_wrmask_o,
  /* verilator tracing_on */
  input  logic [CHANNELS-1:0]          dfi_rddata_valid_i,
  /* verilator tracing_off */
  input  logic [CHANNELS*DATA_W-1:0]   dfi_rddata_i
  /* verilator tracing_on */
);
  localparam int ID_W  = 6;
  localparam int LEN_W = 4;
  localparam int ADDR_W = 32;
  // Queue entries per controller: two bursts of a wide line, at least 8. Small queues keep the
  // verilated controllers cheap per cycle (docs/hbm.md: 16/32 entries cost 28 times the chip's time).
  localparam int BEATS_PER_LINE = LINE_W > DATA_W ? LINE_W / DATA_W : 1;
  localparam int QUEUE = 2 * BEATS_PER_LINE > 8 ? 2 * BEATS_PER_LINE : 8;

  logic [CHANNELS-1:0]        ar_valid, ar_ready, r_valid, aw_valid, aw_ready, w_valid, w_ready, w_last;
  logic [CHANNELS-1:0]        b_valid;
  logic [ID_W-1:0]            ar_id, aw_id;
  logic [ADDR_W-1:0]          ar_addr, aw_addr;
  logic [LEN_W-1:0]           ar_len, aw_len;
  logic [CHANNELS*ID_W-1:0]   r_id, b_id;
  // Payload buses are left out of waveforms: the line port and the DFI data carry the same values.
  /* verilator tracing_off */
  logic [CHANNELS*DATA_W-1:0] r_data, w_data;
  logic [CHANNELS*STRB_W-1:0] w_strb;
  /* verilator tracing_on */

  hbm_line_adapter #(
    .CHANNELS (CHANNELS),
    .LINE_W   (LINE_W),
    .ID_W     (ID_W),
    .DATA_W   (DATA_W),
    .ADDR_W   (ADDR_W),
    .LEN_W    (LEN_W)
  ) u_adapter (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .req_valid_i (req_valid_i),
    .req_ready_o (req_ready_o),
    .req_write_i (req_write_i),
    .req_addr_i  (req_addr_i),
    .req_wdata_i (req_wdata_i),
    .rsp_valid_o (rsp_valid_o),
    .rsp_rdata_o (rsp_rdata_o),
    .ar_valid_o  (ar_valid),
    .ar_ready_i  (ar_ready),
    .ar_id_o     (ar_id),
    .ar_addr_o   (ar_addr),
    .ar_len_o    (ar_len),
    .r_valid_i   (r_valid),
    .r_id_i      (r_id),
    .r_data_i    (r_data),
    .aw_valid_o  (aw_valid),
    .aw_ready_i  (aw_ready),
    .aw_id_o     (aw_id),
    .aw_addr_o   (aw_addr),
    .aw_len_o    (aw_len),
    .w_valid_o   (w_valid),
    .w_ready_i   (w_ready),
    .w_data_o    (w_data),
    .w_strb_o    (w_strb),
    .w_last_o    (w_last),
    .b_valid_i   (b_valid),
    .b_id_i      (b_id)
  );

  for (genvar c = 0; c < CHANNELS; c++) begin : gen_ch
    // Unconnected on purpose: the adapter counts beats itself and the controller only answers OKAY.
    // verilator lint_off PINCONNECTEMPTY
    hbm_ctrl #(
      .ADDR_W   (ADDR_W),
      .ID_W     (ID_W),
      .LEN_W    (LEN_W),
      .DATA_W   (DATA_W),
      .COL_BITS (COL_BITS),
      .BG_BITS  (BG_BITS),
      .BA_BITS  (BA_BITS),
      .ROW_BITS (ROW_BITS),
      .COL_LSB  (0),
      .BG_LSB   (COL_BITS),
      .BA_LSB   (COL_BITS + BG_BITS),
      .PC_LSB   (COL_BITS + BG_BITS + BA_BITS),
      .ROW_LSB  (COL_BITS + BG_BITS + BA_BITS),
      // A write is answered once it is in the device, so the host's backdoor reads see every write the
      // chip has had answered.
      .B_AFTER_ISSUE (1'b1),
      .RQ_DEPTH (QUEUE),
      .WQ_DEPTH (QUEUE),
      .WQ_HI    (QUEUE * 3 / 4),
      .WQ_LO    (QUEUE / 4)
    ) u_ctrl (
      .clk_i              (clk_i),
      .rst_ni             (rst_ni),
      .ar_valid_i         (ar_valid[c]),
      .ar_ready_o         (ar_ready[c]),
      .ar_id_i            (ar_id),
      .ar_addr_i          (ar_addr),
      .ar_len_i           (ar_len),
      .r_valid_o          (r_valid[c]),
      .r_ready_i          (1'b1),
      .r_id_o             (r_id[c*ID_W +: ID_W]),
      .r_data_o           (r_data[c*DATA_W +: DATA_W]),
      .r_last_o           (),
      .r_resp_o           (),
      .aw_valid_i         (aw_valid[c]),
      .aw_ready_o         (aw_ready[c]),
      .aw_id_i            (aw_id),
      .aw_addr_i          (aw_addr),
      .aw_len_i           (aw_len),
      .w_valid_i          (w_valid[c]),
      .w_ready_o          (w_ready[c]),
      .w_data_i           (w_data[c*DATA_W +: DATA_W]),
      .w_strb_i           (w_strb[c*STRB_W +: STRB_W]),
      .w_last_i           (w_last[c]),
      .b_valid_o          (b_valid[c]),
      .b_ready_i          (1'b1),
      .b_id_o             (b_id[c*ID_W +: ID_W]),
      .b_resp_o           (),
      .dfi_row_cmd_o      (dfi_row_cmd_o[c*3 +: 3]),
      .dfi_row_bank_o     (dfi_row_bank_o[c*NB_W +: NB_W]),
      .dfi_row_addr_o     (dfi_row_addr_o[c*ROW_BITS +: ROW_BITS]),
      .dfi_col_cmd_o      (dfi_col_cmd_o[c*2 +: 2]),
      .dfi_col_bank_o     (dfi_col_bank_o[c*NB_W +: NB_W]),
      .dfi_col_addr_o     (dfi_col_addr_o[c*COL_BITS +: COL_BITS]),
      .dfi_wrdata_o       (dfi_wrdata_o[c*DATA_W +: DATA_W]),
      .dfi_wrmask_o       (dfi_wrmask_o[c*STRB_W +: STRB_W]),
      .dfi_rddata_valid_i (dfi_rddata_valid_i[c]),
      .dfi_rddata_i       (dfi_rddata_i[c*DATA_W +: DATA_W])
    );
    // verilator lint_on PINCONNECTEMPTY
  end

endmodule
