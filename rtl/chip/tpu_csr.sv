// CSR block: decodes the host's MMIO accesses (docs/csr.md), holds the writable registers and
// IRQ_STATUS, forwards the IMEM window to the core and collects status from the core and the host DMA.
// Every access gets a response pulse the next cycle; reads return data with it.
// It also holds the semaphores: SEMS saturating counters that the host posts, takes and clears through
// SEM_POST/SEM_TAKE/SEM_CLEAR, the core through SEMPOST/SEMWAIT and other cores through RDMA's POST; a
// core post of a host semaphore (below HOST_SEMS) raises IRQ_STATUS.SEM_POST. A take of a zero counter
// does nothing, a post to a full one neither.
module tpu_csr
#(
  parameter int unsigned ImemAw = $clog2(tpu_pkg::IMEM_WORDS),
  parameter int unsigned CoreId = 0   // this core's index on its chip (CFG_CORE_ID)
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic [7:0]        chip_id_i,  // the chip's index on the board (CFG_CHIP_ID), a strap
  input  logic [2:0]        num_chips_i, // chips on the board (CFG_NUM_CHIPS), a strap

  input  logic              mmio_valid_i,
  input  logic              mmio_write_i,
  input  logic [19:0]       mmio_addr_i,
  input  logic [31:0]       mmio_wdata_i,
  output logic              mmio_rvalid_o,
  output logic [31:0]       mmio_rdata_o,
  output logic              irq_o,

  // Core control and status.
  output logic              doorbell_o,
  output logic [31:0]       start_pc_o,
  output logic              soft_reset_o,
  output logic [31:0]       watchdog_limit_o,
  input  logic              core_busy_i,
  input  logic              core_halted_i,
  input  logic              core_error_i,
  input  logic [7:0]        core_error_code_i,
  input  logic [31:0]       core_error_pc_i,
  input  logic              core_done_i,
  input  logic              core_fail_i,
  input  logic [63:0]       perf_cycles_i,
  input  logic [63:0]       perf_mxu_busy_i,
  input  logic [31:0]       perf_instret_i,
  input  logic [31:0]       perf_dma_lines_i,
  input  logic [31:0]       perf_vpu_busy_i,
  input  logic [31:0]       perf_stall_i,
  input  logic [31:0]       perf_feed_stall_i,

  // Semaphores: which are non-zero, the core's take or post of semaphore sem_idx_i, and a post from
  // another core's RDMA.
  output logic [tpu_pkg::SEMS-1:0] sem_nonzero_o,
  input  logic              sem_take_i,
  input  logic              sem_post_i,
  input  logic [$clog2(tpu_pkg::SEMS)-1:0] sem_idx_i,
  input  logic              sem_remote_post_i,
  input  logic [$clog2(tpu_pkg::SEMS)-1:0] sem_remote_idx_i,

  // IMEM window.
  output logic              imem_req_o,
  output logic              imem_write_o,
  output logic              imem_hi_o,
  output logic [ImemAw-1:0] imem_addr_o,
  output logic [31:0]       imem_wdata_o,
  input  logic [31:0]       imem_rdata_i,

  // Host DMA engine.
  output logic              hdma_start_o,
  output logic              hdma_to_host_o,
  output logic [63:0]       hdma_host_addr_o,
  output logic [31:0]       hdma_hbm_line_o,
  output logic [31:0]       hdma_lines_o,
  input  logic              hdma_busy_i,
  input  logic              hdma_error_i,
  input  logic [7:0]        hdma_code_i,
  input  logic              hdma_done_i,
  input  logic              hdma_fail_i
);

  localparam logic [31:0] WatchdogReset = 32'd1000000;
  localparam int unsigned IrqBits = 5;
  // Written out: Yosys 0.23 reads a typed parameter's '1 as 1 (5'h01), not as every bit set.
  localparam logic [IrqBits-1:0] IrqEnableReset = {IrqBits{1'b1}};
  localparam int unsigned SemBits = tpu_pkg::SEM_BITS;

  logic [31:0] start_pc_q, watchdog_q;
  logic [31:0] hdma_host_lo_q, hdma_host_hi_q, hdma_hbm_line_q, hdma_lines_q;
  logic [IrqBits-1:0] irq_status_q, irq_status_d, irq_enable_q;
  logic [SemBits-1:0] sem_q [tpu_pkg::SEMS];
  logic [SemBits-1:0] sem_d [tpu_pkg::SEMS];
  logic        rvalid_q, imem_read_q;
  logic [31:0] rdata_q, csr_rdata;

  logic wr, rd, in_imem;
  logic [19:0] imem_offset;
  assign wr          = mmio_valid_i && mmio_write_i;
  assign rd          = mmio_valid_i && !mmio_write_i;
  assign imem_offset = mmio_addr_i - tpu_pkg::IMEM_WINDOW[19:0];
  assign in_imem     = (32'(mmio_addr_i) >= tpu_pkg::IMEM_WINDOW) &&
                       (32'(imem_offset) < 32'(tpu_pkg::IMEM_WORDS) * 32'd8);

  assign imem_req_o   = mmio_valid_i && in_imem;
  assign imem_write_o = mmio_write_i;
  assign imem_hi_o    = imem_offset[2];
  assign imem_addr_o  = imem_offset[ImemAw+2:3];
  assign imem_wdata_o = mmio_wdata_i;

  // Strobes.
  assign doorbell_o     = wr && (mmio_addr_i == tpu_pkg::CSR_DOORBELL) && mmio_wdata_i[0];
  assign soft_reset_o   = wr && (mmio_addr_i == tpu_pkg::CSR_SOFT_RESET) && mmio_wdata_i[0];
  assign hdma_start_o   = wr && (mmio_addr_i == tpu_pkg::CSR_HDMA_CTRL) && mmio_wdata_i[tpu_pkg::HDMA_CTRL_START_LSB];
  assign hdma_to_host_o = mmio_wdata_i[tpu_pkg::HDMA_CTRL_TO_HOST_LSB];

  // Semaphores: the host's, the core's and a remote core's takes and posts of one cycle all count.
  logic host_sem_post, host_sem_take, host_sem_clear;
  assign host_sem_post  = wr && (mmio_addr_i == tpu_pkg::CSR_SEM_POST);
  assign host_sem_take  = wr && (mmio_addr_i == tpu_pkg::CSR_SEM_TAKE);
  assign host_sem_clear = wr && (mmio_addr_i == tpu_pkg::CSR_SEM_CLEAR) && mmio_wdata_i[0];

  // A counter after this cycle's posts (saturating) and takes (never below zero).
  function automatic logic [SemBits-1:0] sem_next(logic [SemBits-1:0] q, logic up_a, logic up_b, logic up_c,
                                                  logic down_a, logic down_b);
    logic [SemBits+1:0] n;
    n = {2'b00, q} + {{(SemBits+1){1'b0}}, up_a} + {{(SemBits+1){1'b0}}, up_b} + {{(SemBits+1){1'b0}}, up_c};
    if (down_a && n != '0) n = n - 1'b1;
    if (down_b && n != '0) n = n - 1'b1;
    sem_next = (n[SemBits+1:SemBits] != 2'b00) ? {SemBits{1'b1}} : n[SemBits-1:0];
  endfunction

  always_comb begin
    for (int unsigned i = 0; i < tpu_pkg::SEMS; i++) begin
      sem_d[i] = sem_next(sem_q[i],
                          host_sem_post && (mmio_wdata_i == 32'(i)),
                          sem_post_i && (32'(sem_idx_i) == 32'(i)),
                          sem_remote_post_i && (32'(sem_remote_idx_i) == 32'(i)),
                          host_sem_take && (mmio_wdata_i == 32'(i)),
                          sem_take_i && (32'(sem_idx_i) == 32'(i)));
      if (host_sem_clear || soft_reset_o) sem_d[i] = '0;
      sem_nonzero_o[i] = (sem_q[i] != '0);
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      for (int unsigned i = 0; i < tpu_pkg::SEMS; i++) sem_q[i] <= '0;
    end else begin
      for (int unsigned i = 0; i < tpu_pkg::SEMS; i++) sem_q[i] <= sem_d[i];
    end
  end

  // SEM_COUNTS holds semaphores 0..3, SEM_COUNTS_HI 4..7.
  logic [31:0] sem_counts, sem_counts_hi;
  always_comb begin
    sem_counts    = 32'd0;
    sem_counts_hi = 32'd0;
    for (int unsigned i = 0; i < 4; i++) begin
      sem_counts[i*SemBits +: SemBits]    = sem_q[i];
      sem_counts_hi[i*SemBits +: SemBits] = sem_q[i + 4];
    end
  end

  // IRQ_STATUS: events set bits, writing ones clears them (an event in the same cycle wins).
  logic [IrqBits-1:0] irq_events;
  always_comb begin
    irq_events = '0;
    irq_events[tpu_pkg::IRQ_STATUS_CORE_DONE_LSB]  = core_done_i;
    irq_events[tpu_pkg::IRQ_STATUS_CORE_ERROR_LSB] = core_fail_i;
    irq_events[tpu_pkg::IRQ_STATUS_HDMA_DONE_LSB]  = hdma_done_i;
    irq_events[tpu_pkg::IRQ_STATUS_HDMA_ERROR_LSB] = hdma_fail_i;
    irq_events[tpu_pkg::IRQ_STATUS_SEM_POST_LSB]   = sem_post_i && (32'(sem_idx_i) < 32'(tpu_pkg::HOST_SEMS));
    irq_status_d = irq_status_q;
    if (wr && mmio_addr_i == tpu_pkg::CSR_IRQ_STATUS) irq_status_d = irq_status_d & ~mmio_wdata_i[IrqBits-1:0];
    irq_status_d = irq_status_d | irq_events;
    if (soft_reset_o) irq_status_d = '0;
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      start_pc_q      <= 32'd0;
      watchdog_q      <= WatchdogReset;
      hdma_host_lo_q  <= 32'd0;
      hdma_host_hi_q  <= 32'd0;
      hdma_hbm_line_q <= 32'd0;
      hdma_lines_q    <= 32'd0;
      irq_status_q    <= '0;
      irq_enable_q    <= IrqEnableReset;
    end else begin
      irq_status_q <= irq_status_d;
      if (wr) begin
        unique case (mmio_addr_i)
          tpu_pkg::CSR_START_PC:       start_pc_q      <= mmio_wdata_i;
          tpu_pkg::CSR_IRQ_ENABLE:     irq_enable_q    <= mmio_wdata_i[IrqBits-1:0];
          tpu_pkg::CSR_WATCHDOG_LIMIT: watchdog_q      <= mmio_wdata_i;
          tpu_pkg::CSR_HDMA_HOST_LO:   hdma_host_lo_q  <= mmio_wdata_i;
          tpu_pkg::CSR_HDMA_HOST_HI:   hdma_host_hi_q  <= mmio_wdata_i;
          tpu_pkg::CSR_HDMA_HBM_LINE:  hdma_hbm_line_q <= mmio_wdata_i;
          tpu_pkg::CSR_HDMA_LINES:     hdma_lines_q    <= mmio_wdata_i;
          default: ;
        endcase
      end
    end
  end

  always_comb begin
    csr_rdata = 32'd0;
    unique case (mmio_addr_i)
      tpu_pkg::CSR_ID:             csr_rdata = tpu_pkg::ID_MAGIC;
      tpu_pkg::CSR_VERSION:        csr_rdata = tpu_pkg::VERSION_VALUE;
      tpu_pkg::CSR_CFG_LANES:      csr_rdata = 32'(tpu_pkg::LANES);
      tpu_pkg::CSR_CFG_VMEM_LINES: csr_rdata = 32'(tpu_pkg::VMEM_LINES);
      tpu_pkg::CSR_CFG_IMEM_WORDS: csr_rdata = 32'(tpu_pkg::IMEM_WORDS);
      tpu_pkg::CSR_CFG_HBM_LINES:  csr_rdata = 32'(tpu_pkg::HBM_LINES);
      tpu_pkg::CSR_CFG_NUM_CORES:  csr_rdata = 32'(tpu_pkg::NUM_CORES);
      tpu_pkg::CSR_CFG_SREGS:      csr_rdata = 32'(tpu_pkg::SREGS);
      tpu_pkg::CSR_CFG_HBM_CHANNELS: csr_rdata = 32'(tpu_pkg::HBM_CHANNELS);
      tpu_pkg::CSR_CFG_CORE_ID:    csr_rdata = 32'(CoreId);
      tpu_pkg::CSR_CFG_CHIP_ID:    csr_rdata = 32'(chip_id_i);
      tpu_pkg::CSR_CFG_NUM_CHIPS:  csr_rdata = 32'(num_chips_i);
      tpu_pkg::CSR_START_PC:       csr_rdata = start_pc_q;
      tpu_pkg::CSR_STATUS: begin
        csr_rdata[tpu_pkg::STATUS_BUSY_LSB]      = core_busy_i;
        csr_rdata[tpu_pkg::STATUS_HALTED_LSB]    = core_halted_i;
        csr_rdata[tpu_pkg::STATUS_ERROR_LSB]     = core_error_i;
        csr_rdata[tpu_pkg::STATUS_HDMA_BUSY_LSB] = hdma_busy_i;
      end
      tpu_pkg::CSR_ERROR_CODE:     csr_rdata = 32'(core_error_code_i);
      tpu_pkg::CSR_ERROR_PC:       csr_rdata = core_error_pc_i;
      tpu_pkg::CSR_IRQ_STATUS:     csr_rdata = 32'(irq_status_q);
      tpu_pkg::CSR_IRQ_ENABLE:     csr_rdata = 32'(irq_enable_q);
      tpu_pkg::CSR_WATCHDOG_LIMIT: csr_rdata = watchdog_q;
      tpu_pkg::CSR_CYCLES_LO:      csr_rdata = perf_cycles_i[31:0];
      tpu_pkg::CSR_CYCLES_HI:      csr_rdata = perf_cycles_i[63:32];
      tpu_pkg::CSR_MXU_BUSY_LO:    csr_rdata = perf_mxu_busy_i[31:0];
      tpu_pkg::CSR_MXU_BUSY_HI:    csr_rdata = perf_mxu_busy_i[63:32];
      tpu_pkg::CSR_INSTRET:        csr_rdata = perf_instret_i;
      tpu_pkg::CSR_DMA_LINES:      csr_rdata = perf_dma_lines_i;
      tpu_pkg::CSR_VPU_BUSY:       csr_rdata = perf_vpu_busy_i;
      tpu_pkg::CSR_STALL_CYCLES:   csr_rdata = perf_stall_i;
      tpu_pkg::CSR_FEED_STALL:     csr_rdata = perf_feed_stall_i;
      tpu_pkg::CSR_SEM_COUNTS:     csr_rdata = sem_counts;
      tpu_pkg::CSR_SEM_COUNTS_HI:  csr_rdata = sem_counts_hi;
      tpu_pkg::CSR_HDMA_HOST_LO:   csr_rdata = hdma_host_lo_q;
      tpu_pkg::CSR_HDMA_HOST_HI:   csr_rdata = hdma_host_hi_q;
      tpu_pkg::CSR_HDMA_HBM_LINE:  csr_rdata = hdma_hbm_line_q;
      tpu_pkg::CSR_HDMA_LINES:     csr_rdata = hdma_lines_q;
      tpu_pkg::CSR_HDMA_STATUS: begin
        csr_rdata[tpu_pkg::HDMA_STATUS_BUSY_LSB]  = hdma_busy_i;
        csr_rdata[tpu_pkg::HDMA_STATUS_ERROR_LSB] = hdma_error_i;
        csr_rdata[tpu_pkg::HDMA_STATUS_CODE_LSB +: tpu_pkg::HDMA_STATUS_CODE_WIDTH] = hdma_code_i;
      end
      default: csr_rdata = 32'd0;
    endcase
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      rvalid_q    <= 1'b0;
      imem_read_q <= 1'b0;
      rdata_q     <= 32'd0;
    end else begin
      rvalid_q    <= mmio_valid_i;
      imem_read_q <= rd && in_imem;
      if (rd) rdata_q <= csr_rdata;
    end
  end

  assign mmio_rvalid_o    = rvalid_q;
  assign mmio_rdata_o     = imem_read_q ? imem_rdata_i : rdata_q;
  assign irq_o            = |(irq_status_q & irq_enable_q);
  assign start_pc_o       = start_pc_q;
  assign watchdog_limit_o = watchdog_q;
  assign hdma_host_addr_o = {hdma_host_hi_q, hdma_host_lo_q};
  assign hdma_hbm_line_o  = hdma_hbm_line_q;
  assign hdma_lines_o     = hdma_lines_q;

endmodule
