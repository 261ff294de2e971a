// One tpusim core: sequencer, IMEM, VMEM and the DMA, link (RDMA), MXU and vector units (wiring only).
// VMEM ports: read 0 DMA, 1 MXU A, 2 MXU B, 3 VPU A, 4 VPU B, 5 MXU W, 6 sequencer (SLD), 7 link engine;
// write 0 DMA, 1 MXU, 2 VPU.
module tpu_core
#(
  parameter int unsigned ImemAw = $clog2(tpu_pkg::IMEM_WORDS),
  parameter int unsigned VmemAw = $clog2(tpu_pkg::VMEM_LINES)
) (
  input  logic              clk_i,
  input  logic              rst_ni,

  // Control and status (CSR block).
  input  logic              start_i,
  input  logic [31:0]       start_pc_i,
  input  logic              abort_i,
  input  logic [31:0]       watchdog_limit_i,
  input  logic [2:0]        num_chips_i,      // chips on the board (RDMA's BAD_CORE check)
  output logic              busy_o,
  output logic              halted_o,
  output logic              error_o,
  output logic [7:0]        error_code_o,
  output logic [31:0]       error_pc_o,
  output logic              done_o,
  output logic              fail_o,
  output logic [63:0]       perf_cycles_o,
  output logic [63:0]       perf_mxu_busy_o,
  output logic [31:0]       perf_instret_o,
  output logic [31:0]       perf_dma_lines_o,
  output logic [31:0]       perf_vpu_busy_o,
  output logic [31:0]       perf_stall_o,
  output logic [31:0]       perf_feed_stall_o,
  // Semaphores (tpu_csr).
  input  logic [tpu_pkg::SEMS-1:0] sem_nonzero_i,
  output logic              sem_take_o,
  output logic              sem_post_o,
  output logic [$clog2(tpu_pkg::SEMS)-1:0] sem_idx_o,
  // Issue trace (tpu_sequencer).
  output logic              trace_run_o,
  output logic              trace_issue_o,
  output logic [31:0]       trace_pc_o,
  output logic [2:0]        trace_wait_o,
  output logic [2:0]        trace_unit_o,
  output logic [2:0]        trace_work_o,

  // Host access to IMEM (MMIO window); writes are dropped while the core is busy.
  input  logic              imem_req_i,
  input  logic              imem_write_i,
  input  logic              imem_hi_i,
  input  logic [ImemAw-1:0] imem_addr_i,
  input  logic [31:0]       imem_wdata_i,
  output logic [31:0]       imem_rdata_o,

  // HBM master port of the DMA unit.
  output logic              hbm_req_valid_o,
  input  logic              hbm_req_ready_i,
  output logic              hbm_req_write_o,
  output logic [31:0]       hbm_req_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] hbm_req_wdata_o,
  input  logic              hbm_rsp_valid_i,
  input  logic [tpu_pkg::LINE_W-1:0] hbm_rsp_rdata_i,

  // RDMA lines to other cores (tpu_rdma: net_req_*), acknowledged once written.
  output logic              net_req_valid_o,
  input  logic              net_req_ready_i,
  output logic [3:0]        net_req_core_o,
  output logic [31:0]       net_req_line_o,
  output logic [tpu_pkg::LINE_W-1:0] net_req_data_o,
  output logic              net_req_post_o,
  output logic [$clog2(tpu_pkg::SEMS)-1:0] net_req_sem_o,
  input  logic              net_rsp_valid_i
);

  localparam int unsigned NumRd = 8;
  localparam int unsigned NumWr = 3;

  // Sequencer <-> units.
  logic              dma_cmd_valid, ici_cmd_valid, mxu_cmd_valid, vpu_cmd_valid;
  logic [7:0]        cmd_opcode, cmd_flags;
  logic [31:0]       cmd_rd, cmd_rs1, cmd_rs2, cmd_rs3, cmd_imm;
  logic              dma_busy, dma_ready, ici_busy, ici_ready, mxu_busy, vpu_busy, mxu_lw_ready, mxu_mm_ready;
  logic              loads_pending;
  logic              flush;
  logic              mxu_row, dma_line, ici_line, vpu_line;

  logic [ImemAw-1:0] fetch_addr;
  logic [63:0]       fetch_rdata;

  // VMEM ports.
  logic [NumRd-1:0]             vm_rd_en;
  logic [NumRd*VmemAw-1:0]          vm_rd_addr;
  // The sequencer's port (6) reads lane 0 only: SLD loads one word.
  /* verilator lint_off UNUSEDSIGNAL */
  logic [NumRd*tpu_pkg::LINE_W-1:0] vm_rd_data;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [NumWr-1:0]             vm_wr_en;
  logic [NumWr*VmemAw-1:0]          vm_wr_addr;
  logic [NumWr*tpu_pkg::LINE_W-1:0] vm_wr_data;

  tpu_sequencer #(
    .ImemAw (ImemAw),
    .VmemAw (VmemAw)
  ) u_sequencer (
    .clk_i            (clk_i),
    .rst_ni           (rst_ni),
    .start_i          (start_i),
    .start_pc_i       (start_pc_i),
    .abort_i          (abort_i),
    .watchdog_limit_i (watchdog_limit_i),
    .num_chips_i      (num_chips_i),
    .busy_o           (busy_o),
    .halted_o         (halted_o),
    .error_o          (error_o),
    .error_code_o     (error_code_o),
    .error_pc_o       (error_pc_o),
    .done_o           (done_o),
    .fail_o           (fail_o),
    .imem_addr_o      (fetch_addr),
    .imem_rdata_i     (fetch_rdata),
    .vmem_rd_en_o     (vm_rd_en[6]),
    .vmem_rd_addr_o   (vm_rd_addr[6*VmemAw +: VmemAw]),
    .vmem_rd_data_i   (vm_rd_data[6*tpu_pkg::LINE_W +: 32]),
    .dma_cmd_valid_o  (dma_cmd_valid),
    .ici_cmd_valid_o  (ici_cmd_valid),
    .mxu_cmd_valid_o  (mxu_cmd_valid),
    .vpu_cmd_valid_o  (vpu_cmd_valid),
    .cmd_opcode_o     (cmd_opcode),
    .cmd_flags_o      (cmd_flags),
    .cmd_rd_o         (cmd_rd),
    .cmd_rs1_o        (cmd_rs1),
    .cmd_rs2_o        (cmd_rs2),
    .cmd_rs3_o        (cmd_rs3),
    .cmd_imm_o        (cmd_imm),
    .dma_busy_i       (dma_busy),
    .dma_ready_i      (dma_ready),
    .ici_busy_i       (ici_busy),
    .ici_ready_i      (ici_ready),
    .mxu_busy_i       (mxu_busy),
    .mxu_lw_ready_i   (mxu_lw_ready),
    .mxu_mm_ready_i   (mxu_mm_ready),
    .vpu_busy_i       (vpu_busy),
    .flush_o          (flush),
    .mxu_row_i        (mxu_row),
    .dma_line_i       (dma_line),
    .ici_line_i       (ici_line),
    .vpu_line_i       (vpu_line),
    .perf_cycles_o    (perf_cycles_o),
    .perf_mxu_busy_o  (perf_mxu_busy_o),
    .perf_instret_o   (perf_instret_o),
    .perf_dma_lines_o (perf_dma_lines_o),
    .perf_vpu_busy_o  (perf_vpu_busy_o),
    .perf_stall_o     (perf_stall_o),
    .perf_feed_stall_o (perf_feed_stall_o),
    .sem_nonzero_i    (sem_nonzero_i),
    .sem_take_o       (sem_take_o),
    .sem_post_o       (sem_post_o),
    .sem_idx_o        (sem_idx_o),
    .trace_run_o      (trace_run_o),
    .trace_issue_o    (trace_issue_o),
    .trace_pc_o       (trace_pc_o),
    .trace_wait_o     (trace_wait_o),
    .trace_unit_o     (trace_unit_o),
    .trace_work_o     (trace_work_o)
  );

  tpu_imem #(
    .Words (tpu_pkg::IMEM_WORDS),
    .Aw    (ImemAw)
  ) u_imem (
    .clk_i         (clk_i),
    .fetch_addr_i  (fetch_addr),
    .fetch_rdata_o (fetch_rdata),
    .host_req_i    (imem_req_i && !(imem_write_i && busy_o)),
    .host_write_i  (imem_write_i),
    .host_hi_i     (imem_hi_i),
    .host_addr_i   (imem_addr_i),
    .host_wdata_i  (imem_wdata_i),
    .host_rdata_o  (imem_rdata_o)
  );

  tpu_vmem #(
    .Lines (tpu_pkg::VMEM_LINES),
    .W     (tpu_pkg::LINE_W),
    .NumRd (NumRd),
    .NumWr (NumWr),
    .Aw    (VmemAw)
  ) u_vmem (
    .clk_i     (clk_i),
    .rd_en_i   (vm_rd_en),
    .rd_addr_i (vm_rd_addr),
    .rd_data_o (vm_rd_data),
    .wr_en_i   (vm_wr_en),
    .wr_addr_i (vm_wr_addr),
    .wr_data_i (vm_wr_data)
  );

  tpu_dma #(
    .VmemAw (VmemAw)
  ) u_dma (
    .clk_i           (clk_i),
    .rst_ni          (rst_ni),
    .flush_i         (flush),
    .cmd_valid_i     (dma_cmd_valid),
    .cmd_opcode_i    (cmd_opcode),
    .cmd_hbm_i       (cmd_rs1),
    .cmd_vmem_i      (cmd_rs2),
    .cmd_count_i     (cmd_rs3),
    .cmd_stride_i    (cmd_imm),
    .cmd_ready_o     (dma_ready),
    .busy_o          (dma_busy),
    .loads_pending_o (loads_pending),
    .line_done_o     (dma_line),
    .hbm_req_valid_o (hbm_req_valid_o),
    .hbm_req_ready_i (hbm_req_ready_i),
    .hbm_req_write_o (hbm_req_write_o),
    .hbm_req_addr_o  (hbm_req_addr_o),
    .hbm_req_wdata_o (hbm_req_wdata_o),
    .hbm_rsp_valid_i (hbm_rsp_valid_i),
    .hbm_rsp_rdata_i (hbm_rsp_rdata_i),
    .vmem_rd_en_o    (vm_rd_en[0]),
    .vmem_rd_addr_o  (vm_rd_addr[0*VmemAw +: VmemAw]),
    .vmem_rd_data_i  (vm_rd_data[0*tpu_pkg::LINE_W +: tpu_pkg::LINE_W]),
    .vmem_wr_en_o    (vm_wr_en[0]),
    .vmem_wr_addr_o  (vm_wr_addr[0*VmemAw +: VmemAw]),
    .vmem_wr_data_o  (vm_wr_data[0*tpu_pkg::LINE_W +: tpu_pkg::LINE_W])
  );

  tpu_rdma #(
    .VmemAw (VmemAw)
  ) u_rdma (
    .clk_i           (clk_i),
    .rst_ni          (rst_ni),
    .flush_i         (flush),
    .cmd_valid_i     (ici_cmd_valid),
    .cmd_core_i      (cmd_rd[3:0]),
    .cmd_line_i      (cmd_rs1),
    .cmd_vmem_i      (cmd_rs2),
    .cmd_count_i     (cmd_rs3),
    .cmd_post_i      (cmd_flags[tpu_pkg::FLAG_RDMA_POST]),
    .cmd_sem_i       (cmd_imm[$clog2(tpu_pkg::SEMS)-1:0]),
    .loads_pending_i (loads_pending),
    .cmd_ready_o     (ici_ready),
    .busy_o          (ici_busy),
    .line_done_o     (ici_line),
    .net_req_valid_o (net_req_valid_o),
    .net_req_ready_i (net_req_ready_i),
    .net_req_core_o  (net_req_core_o),
    .net_req_line_o  (net_req_line_o),
    .net_req_data_o  (net_req_data_o),
    .net_req_post_o  (net_req_post_o),
    .net_req_sem_o   (net_req_sem_o),
    .net_rsp_valid_i (net_rsp_valid_i),
    .vmem_rd_en_o    (vm_rd_en[7]),
    .vmem_rd_addr_o  (vm_rd_addr[7*VmemAw +: VmemAw]),
    .vmem_rd_data_i  (vm_rd_data[7*tpu_pkg::LINE_W +: tpu_pkg::LINE_W])
  );

  mxu #(
    .N       (tpu_pkg::LANES),
    .VMEM_AW (VmemAw)
  ) u_mxu (
    .clk_i          (clk_i),
    .rst_ni         (rst_ni),
    .flush_i        (flush),
    .cmd_valid_i    (mxu_cmd_valid),
    .cmd_opcode_i   (cmd_opcode),
    .cmd_flags_i    (cmd_flags),
    .cmd_src_i      (cmd_rs1),
    .cmd_dst_i      (cmd_rs2),
    .cmd_count_i    (cmd_rs3),
    .lw_ready_o     (mxu_lw_ready),
    .mm_ready_o     (mxu_mm_ready),
    .busy_o         (mxu_busy),
    .w_rd_en_o      (vm_rd_en[5]),
    .w_rd_addr_o    (vm_rd_addr[5*VmemAw +: VmemAw]),
    .w_rd_data_i    (vm_rd_data[5*tpu_pkg::LINE_W +: tpu_pkg::LINE_W]),
    .a_rd_en_o      (vm_rd_en[1]),
    .a_rd_addr_o    (vm_rd_addr[1*VmemAw +: VmemAw]),
    .a_rd_data_i    (vm_rd_data[1*tpu_pkg::LINE_W +: tpu_pkg::LINE_W]),
    .b_rd_en_o      (vm_rd_en[2]),
    .b_rd_addr_o    (vm_rd_addr[2*VmemAw +: VmemAw]),
    .b_rd_data_i    (vm_rd_data[2*tpu_pkg::LINE_W +: tpu_pkg::LINE_W]),
    .wr_en_o        (vm_wr_en[1]),
    .wr_addr_o      (vm_wr_addr[1*VmemAw +: VmemAw]),
    .wr_data_o      (vm_wr_data[1*tpu_pkg::LINE_W +: tpu_pkg::LINE_W]),
    .row_accepted_o (mxu_row)
  );

  tpu_vpu #(
    .VmemAw (VmemAw)
  ) u_vpu (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (flush),
    .cmd_valid_i (vpu_cmd_valid),
    .cmd_opcode_i(cmd_opcode),
    .cmd_flags_i (cmd_flags),
    .cmd_dst_i   (cmd_rd),
    .cmd_src1_i  (cmd_rs1),
    .cmd_src2_i  (cmd_rs2),
    .cmd_count_i (cmd_rs3),
    .cmd_imm_i   (cmd_imm),
    .busy_o      (vpu_busy),
    .line_o      (vpu_line),
    .a_rd_en_o   (vm_rd_en[3]),
    .a_rd_addr_o (vm_rd_addr[3*VmemAw +: VmemAw]),
    .a_rd_data_i (vm_rd_data[3*tpu_pkg::LINE_W +: tpu_pkg::LINE_W]),
    .b_rd_en_o   (vm_rd_en[4]),
    .b_rd_addr_o (vm_rd_addr[4*VmemAw +: VmemAw]),
    .b_rd_data_i (vm_rd_data[4*tpu_pkg::LINE_W +: tpu_pkg::LINE_W]),
    .wr_en_o     (vm_wr_en[2]),
    .wr_addr_o   (vm_wr_addr[2*VmemAw +: VmemAw]),
    .wr_data_o   (vm_wr_data[2*tpu_pkg::LINE_W +: tpu_pkg::LINE_W])
  );

endmodule
