// One core of the chip (docs/architecture.md): its CSR block, the core, its host DMA engine and the
// arbiter that shares the core's HBM port among the core's DMA unit, the host DMA engine and the lines
// other cores' RDMA write here. The chip top instantiates one per core; each has its own registers,
// doorbell, interrupt and HBM.
module tpu_tile
#(
  parameter int unsigned CoreId = 0   // index of this core on its chip
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic [7:0]        chip_id_i,
  input  logic [2:0]        num_chips_i,  // chips on the board (CFG_NUM_CHIPS)

  // This core's registers and IMEM window (offsets within the core's MMIO window).
  input  logic              mmio_valid_i,
  input  logic              mmio_write_i,
  input  logic [19:0]       mmio_addr_i,
  input  logic [31:0]       mmio_wdata_i,
  output logic              mmio_rvalid_o,
  output logic [31:0]       mmio_rdata_o,
  output logic              irq_o,

  // This core's HBM.
  output logic              hbm_req_valid_o,
  input  logic              hbm_req_ready_i,
  output logic              hbm_req_write_o,
  output logic [31:0]       hbm_req_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] hbm_req_wdata_o,
  input  logic              hbm_rsp_valid_i,
  input  logic [tpu_pkg::LINE_W-1:0] hbm_rsp_rdata_i,

  // The host DMA engine's requests to host memory, before the chip's host port arbiter (which holds them
  // stable in its register slice); responses in order.
  output logic              host_req_valid_o,
  input  logic              host_req_ready_i,
  output logic              host_req_write_o,
  output logic [63:0]       host_req_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] host_req_wdata_o,
  input  logic              host_rsp_valid_i,
  input  logic [tpu_pkg::LINE_W-1:0] host_rsp_rdata_i,
  input  logic              host_rsp_error_i,

  // The core network (tpu_chip routes it): this core's RDMA lines out, each acknowledged once written...
  output logic              net_out_valid_o,
  input  logic              net_out_ready_i,
  output logic [3:0]        net_out_core_o,
  output logic [31:0]       net_out_line_o,
  output logic [tpu_pkg::LINE_W-1:0] net_out_data_o,
  output logic              net_out_post_o,
  output logic [$clog2(tpu_pkg::SEMS)-1:0] net_out_sem_o,
  input  logic              net_out_ack_i,
  // ... and other cores' lines in, written into this core's HBM and acknowledged in order; a line with
  // POST then posts its semaphore here.
  input  logic              net_in_valid_i,
  output logic              net_in_ready_o,
  input  logic [31:0]       net_in_line_i,
  input  logic [tpu_pkg::LINE_W-1:0] net_in_data_i,
  input  logic              net_in_post_i,
  input  logic [$clog2(tpu_pkg::SEMS)-1:0] net_in_sem_i,
  output logic              net_in_ack_o,

  // Issue trace of the core, for profilers (tpu_sequencer: trace_*).
  output logic              trace_run_o,
  output logic              trace_issue_o,
  output logic [31:0]       trace_pc_o,
  output logic [2:0]        trace_wait_o,
  output logic [2:0]        trace_unit_o,
  output logic [2:0]        trace_work_o
);

  localparam int unsigned ImemAw = $clog2(tpu_pkg::IMEM_WORDS);

  // CSR <-> core.
  logic              doorbell, soft_reset;
  logic [31:0]       start_pc, watchdog_limit;
  logic              core_busy, core_halted, core_error, core_done, core_fail;
  logic [7:0]        core_error_code;
  logic [31:0]       core_error_pc;
  logic [63:0]       perf_cycles, perf_mxu_busy;
  logic [31:0]       perf_instret, perf_dma_lines, perf_vpu_busy, perf_stall, perf_feed_stall;
  localparam int unsigned SemW = $clog2(tpu_pkg::SEMS);
  logic [tpu_pkg::SEMS-1:0] sem_nonzero;
  logic              sem_take, sem_post;
  logic [SemW-1:0]   sem_idx;
  // RDMA lines written here: the POST flag and semaphore of each, until its HBM write is answered.
  logic              in_post, in_remote_post;
  logic [SemW-1:0]   in_sem;
  logic              imem_req, imem_write, imem_hi;
  logic [ImemAw-1:0] imem_addr;
  logic [31:0]       imem_wdata, imem_rdata;

  // CSR <-> host DMA.
  logic              hdma_start, hdma_to_host, hdma_busy, hdma_error, hdma_done, hdma_fail;
  logic [63:0]       hdma_host_addr;
  logic [31:0]       hdma_hbm_line, hdma_lines;
  logic [7:0]        hdma_code;

  // Arbiter masters: 0 core DMA, 1 host DMA, 2 other cores' RDMA lines.
  logic [2:0]             m_req_valid, m_req_ready, m_req_write, m_rsp_valid;
  logic [95:0]            m_req_addr;     // master m at [m*32 +: 32]
  logic [3*tpu_pkg::LINE_W-1:0] m_req_wdata;  // master m at [m*LINE_W +: LINE_W]
  logic [tpu_pkg::LINE_W-1:0]      m_rsp_rdata;

  tpu_csr #(
    .ImemAw (ImemAw),
    .CoreId (CoreId)
  ) u_csr (
    .clk_i             (clk_i),
    .rst_ni            (rst_ni),
    .chip_id_i         (chip_id_i),
    .num_chips_i       (num_chips_i),
    .mmio_valid_i      (mmio_valid_i),
    .mmio_write_i      (mmio_write_i),
    .mmio_addr_i       (mmio_addr_i),
    .mmio_wdata_i      (mmio_wdata_i),
    .mmio_rvalid_o     (mmio_rvalid_o),
    .mmio_rdata_o      (mmio_rdata_o),
    .irq_o             (irq_o),
    .doorbell_o        (doorbell),
    .start_pc_o        (start_pc),
    .soft_reset_o      (soft_reset),
    .watchdog_limit_o  (watchdog_limit),
    .core_busy_i       (core_busy),
    .core_halted_i     (core_halted),
    .core_error_i      (core_error),
    .core_error_code_i (core_error_code),
    .core_error_pc_i   (core_error_pc),
    .core_done_i       (core_done),
    .core_fail_i       (core_fail),
    .perf_cycles_i     (perf_cycles),
    .perf_mxu_busy_i   (perf_mxu_busy),
    .perf_instret_i    (perf_instret),
    .perf_dma_lines_i  (perf_dma_lines),
    .perf_vpu_busy_i   (perf_vpu_busy),
    .perf_stall_i      (perf_stall),
    .perf_feed_stall_i (perf_feed_stall),
    .sem_nonzero_o     (sem_nonzero),
    .sem_take_i        (sem_take),
    .sem_post_i        (sem_post),
    .sem_idx_i         (sem_idx),
    .sem_remote_post_i (in_remote_post),
    .sem_remote_idx_i  (in_sem),
    .imem_req_o        (imem_req),
    .imem_write_o      (imem_write),
    .imem_hi_o         (imem_hi),
    .imem_addr_o       (imem_addr),
    .imem_wdata_o      (imem_wdata),
    .imem_rdata_i      (imem_rdata),
    .hdma_start_o      (hdma_start),
    .hdma_to_host_o    (hdma_to_host),
    .hdma_host_addr_o  (hdma_host_addr),
    .hdma_hbm_line_o   (hdma_hbm_line),
    .hdma_lines_o      (hdma_lines),
    .hdma_busy_i       (hdma_busy),
    .hdma_error_i      (hdma_error),
    .hdma_code_i       (hdma_code),
    .hdma_done_i       (hdma_done),
    .hdma_fail_i       (hdma_fail)
  );

  tpu_core #(
    .ImemAw (ImemAw)
  ) u_core (
    .clk_i            (clk_i),
    .rst_ni           (rst_ni),
    .start_i          (doorbell),
    .start_pc_i       (start_pc),
    .abort_i          (soft_reset),
    .watchdog_limit_i (watchdog_limit),
    .num_chips_i      (num_chips_i),
    .busy_o           (core_busy),
    .halted_o         (core_halted),
    .error_o          (core_error),
    .error_code_o     (core_error_code),
    .error_pc_o       (core_error_pc),
    .done_o           (core_done),
    .fail_o           (core_fail),
    .perf_cycles_o    (perf_cycles),
    .perf_mxu_busy_o  (perf_mxu_busy),
    .perf_instret_o   (perf_instret),
    .perf_dma_lines_o (perf_dma_lines),
    .perf_vpu_busy_o  (perf_vpu_busy),
    .perf_stall_o     (perf_stall),
    .perf_feed_stall_o (perf_feed_stall),
    .sem_nonzero_i    (sem_nonzero),
    .sem_take_o       (sem_take),
    .sem_post_o       (sem_post),
    .sem_idx_o        (sem_idx),
    .trace_run_o      (trace_run_o),
    .trace_issue_o    (trace_issue_o),
    .trace_pc_o       (trace_pc_o),
    .trace_wait_o     (trace_wait_o),
    .trace_unit_o     (trace_unit_o),
    .trace_work_o     (trace_work_o),
    .imem_req_i       (imem_req),
    .imem_write_i     (imem_write),
    .imem_hi_i        (imem_hi),
    .imem_addr_i      (imem_addr),
    .imem_wdata_i     (imem_wdata),
    .imem_rdata_o     (imem_rdata),
    .hbm_req_valid_o  (m_req_valid[0]),
    .hbm_req_ready_i  (m_req_ready[0]),
    .hbm_req_write_o  (m_req_write[0]),
    .hbm_req_addr_o   (m_req_addr[0 +: 32]),
    .hbm_req_wdata_o  (m_req_wdata[0 +: tpu_pkg::LINE_W]),
    .hbm_rsp_valid_i  (m_rsp_valid[0]),
    .hbm_rsp_rdata_i  (m_rsp_rdata),
    .net_req_valid_o  (net_out_valid_o),
    .net_req_ready_i  (net_out_ready_i),
    .net_req_core_o   (net_out_core_o),
    .net_req_line_o   (net_out_line_o),
    .net_req_data_o   (net_out_data_o),
    .net_req_post_o   (net_out_post_o),
    .net_req_sem_o    (net_out_sem_o),
    .net_rsp_valid_i  (net_out_ack_i)
  );

  tpu_host_dma u_host_dma (
    .clk_i            (clk_i),
    .rst_ni           (rst_ni),
    .start_i          (hdma_start),
    .to_host_i        (hdma_to_host),
    .host_addr_i      (hdma_host_addr),
    .hbm_line_i       (hdma_hbm_line),
    .lines_i          (hdma_lines),
    .abort_i          (soft_reset),
    .busy_o           (hdma_busy),
    .error_o          (hdma_error),
    .code_o           (hdma_code),
    .done_o           (hdma_done),
    .fail_o           (hdma_fail),
    .host_req_valid_o (host_req_valid_o),
    .host_req_ready_i (host_req_ready_i),
    .host_req_write_o (host_req_write_o),
    .host_req_addr_o  (host_req_addr_o),
    .host_req_wdata_o (host_req_wdata_o),
    .host_rsp_valid_i (host_rsp_valid_i),
    .host_rsp_rdata_i (host_rsp_rdata_i),
    .host_rsp_error_i (host_rsp_error_i),
    .hbm_req_valid_o  (m_req_valid[1]),
    .hbm_req_ready_i  (m_req_ready[1]),
    .hbm_req_write_o  (m_req_write[1]),
    .hbm_req_addr_o   (m_req_addr[32 +: 32]),
    .hbm_req_wdata_o  (m_req_wdata[tpu_pkg::LINE_W +: tpu_pkg::LINE_W]),
    .hbm_rsp_valid_i  (m_rsp_valid[1]),
    .hbm_rsp_rdata_i  (m_rsp_rdata)
  );

  // Other cores' RDMA lines: HBM writes of master 2; their answers are the acknowledgements.
  assign m_req_valid[2]                                  = net_in_valid_i;
  assign net_in_ready_o                                  = m_req_ready[2];
  assign m_req_write[2]                                  = 1'b1;
  assign m_req_addr[64 +: 32]                            = net_in_line_i;
  assign m_req_wdata[2*tpu_pkg::LINE_W +: tpu_pkg::LINE_W] = net_in_data_i;
  assign net_in_ack_o                                    = m_rsp_valid[2];

  tpu_fifo #(
    .Width (1 + SemW),
    .Depth (128)  // the arbiter's outstanding requests at most
  ) u_post_fifo (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (1'b0),
    .push_i      (m_req_valid[2] && m_req_ready[2]),
    .push_data_i ({net_in_post_i, net_in_sem_i}),
    .pop_i       (m_rsp_valid[2]),
    .head_o      ({in_post, in_sem}),
    // Unconnected on purpose: the arbiter bounds the writes in flight
    // verilator lint_off PINCONNECTEMPTY
    .empty_o     (),
    .full_o      (),
    .count_o     ()
    // verilator lint_on PINCONNECTEMPTY
  );
  assign in_remote_post = m_rsp_valid[2] && in_post;

  tpu_arbiter #(
    .Masters (3),
    .AddrW   (32)
  ) u_hbm_arbiter (
    .clk_i         (clk_i),
    .rst_ni        (rst_ni),
    .m_req_valid_i (m_req_valid),
    .m_req_ready_o (m_req_ready),
    .m_req_write_i (m_req_write),
    .m_req_addr_i  (m_req_addr),
    .m_req_wdata_i (m_req_wdata),
    .m_rsp_valid_o (m_rsp_valid),
    .m_rsp_data_o  (m_rsp_rdata),
    .req_valid_o   (hbm_req_valid_o),
    .req_ready_i   (hbm_req_ready_i),
    .req_write_o   (hbm_req_write_o),
    .req_addr_o    (hbm_req_addr_o),
    .req_wdata_o   (hbm_req_wdata_o),
    .rsp_valid_i   (hbm_rsp_valid_i),
    .rsp_data_i    (hbm_rsp_rdata_i)
  );

endmodule
