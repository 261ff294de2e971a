// Formal properties of tpu_csr (rtl/chip/tpu_csr.sv), checked by tb/formal/run_bmc.sh: bounded model
// checking from reset, then k-induction with probes of the registers the outputs do not show.
//
// The register map comes from tpu_pkg, which specgen generates from rtl/spec/csr.def (run_bmc.sh runs
// it the way the CMake configure step does). Every input is free: the host may access any address in
// any cycle, the core and the other cores post and take semaphores in any combination, and reset may
// come back at any time. The wrapper keeps its own model of the block's state, written from the map in
// docs/csr.md, and checks every read, the response pulse and the outputs against it:
//   - rw registers (START_PC, IRQ_ENABLE, WATCHDOG_LIMIT, HDMA_HOST_LO/HI, HDMA_HBM_LINE, HDMA_LINES)
//     read back what was last written to their own offset, and hold their reset value before that;
//   - ro registers read their constant or their input, and writes to them change nothing;
//   - wo registers (DOORBELL, SOFT_RESET, HDMA_CTRL, SEM_*) and offsets outside the map read 0;
//   - IRQ_STATUS (w1c): an event sets its bit, writing 1 clears it, an event in the same cycle wins,
//     SOFT_RESET clears it; irq_o is |(IRQ_STATUS & IRQ_ENABLE);
//   - the semaphores: host, core and remote posts and takes of one cycle all count, the result held to
//     0..255; SEM_CLEAR and SOFT_RESET zero them; sem_nonzero_o and SEM_COUNTS(_HI) show them;
//   - the IMEM window forwards the access and a read returns the IMEM's word.
//
// Mutations (run_bmc.sh --mutate; each one must make a property fail):
//   MUTATE_CSR_NO_RESET  the block misses the reset cycle
//   MUTATE_CSR_WDATA     bit 3 of the write data flips on its way into the block
//   MUTATE_CSR_EVENT     HDMA_DONE is lost when the host clears IRQ_STATUS in the same cycle
//   MUTATE_CSR_SEM       a remote post is lost when the core takes the same semaphore
module tpu_csr_props #(
  parameter int unsigned CoreId = 1  // not 0, so that CFG_CORE_ID shows the parameter
) (
  input logic        clk_i,
  input logic        rst_ni,
  input logic [7:0]  chip_id_i,
  input logic [2:0]  num_chips_i,
  input logic        mmio_valid_i,
  input logic        mmio_write_i,
  input logic [19:0] mmio_addr_i,
  input logic [31:0] mmio_wdata_i,
  input logic        core_busy_i,
  input logic        core_halted_i,
  input logic        core_error_i,
  input logic [7:0]  core_error_code_i,
  input logic [31:0] core_error_pc_i,
  input logic        core_done_i,
  input logic        core_fail_i,
  input logic [63:0] perf_cycles_i,
  input logic [63:0] perf_mxu_busy_i,
  input logic [31:0] perf_instret_i,
  input logic [31:0] perf_dma_lines_i,
  input logic [31:0] perf_vpu_busy_i,
  input logic [31:0] perf_stall_i,
  input logic [31:0] perf_feed_stall_i,
  input logic        sem_take_i,
  input logic        sem_post_i,
  input logic [2:0]  sem_idx_i,
  input logic        sem_remote_post_i,
  input logic [2:0]  sem_remote_idx_i,
  input logic [31:0] imem_rdata_i,
  input logic        hdma_busy_i,
  input logic        hdma_error_i,
  input logic [7:0]  hdma_code_i,
  input logic        hdma_done_i,
  input logic        hdma_fail_i,
  input logic        glitch_i           // when a mutation injects its fault (free)
);

  localparam int unsigned ImemAw  = $clog2(tpu_pkg::IMEM_WORDS);
  localparam int unsigned Sems    = tpu_pkg::SEMS;
  localparam int unsigned SemBits = tpu_pkg::SEM_BITS;
  localparam int unsigned IrqBits = 5;  // IRQ_STATUS bits 0..4 (csr.def)

  // Reset values: IRQ_ENABLE and WATCHDOG_LIMIT as docs/csr.md gives them; every other register
  // starts at 0 (csr.def has no reset values).
  localparam logic [IrqBits-1:0] IrqEnableReset = 5'h1f;
  localparam logic [31:0]        WatchdogReset  = 32'd1000000;

  // ---------------------------------------------------------------------------------------------
  // The block, with the faults a mutation injects on its inputs.
  logic        dut_rst_n, dut_hdma_done, dut_remote_post;
  logic [31:0] dut_wdata;
`ifdef MUTATE_CSR_NO_RESET
  assign dut_rst_n = rst_ni || glitch_i;
`else
  assign dut_rst_n = rst_ni;
`endif
`ifdef MUTATE_CSR_WDATA
  assign dut_wdata = mmio_wdata_i ^ {28'd0, glitch_i && mmio_write_i, 3'd0};
`else
  assign dut_wdata = mmio_wdata_i;
`endif
`ifdef MUTATE_CSR_EVENT
  assign dut_hdma_done = hdma_done_i && !(glitch_i && mmio_valid_i && mmio_write_i &&
                                          mmio_addr_i == tpu_pkg::CSR_IRQ_STATUS);
`else
  assign dut_hdma_done = hdma_done_i;
`endif
`ifdef MUTATE_CSR_SEM
  assign dut_remote_post = sem_remote_post_i && !(glitch_i && sem_take_i && sem_idx_i == sem_remote_idx_i);
`else
  assign dut_remote_post = sem_remote_post_i;
`endif

  logic              mmio_rvalid, irq, doorbell, soft_reset, hdma_start, hdma_to_host;
  logic [31:0]       mmio_rdata, start_pc, watchdog_limit, hdma_hbm_line, hdma_lines;
  logic [63:0]       hdma_host_addr;
  logic [Sems-1:0]   sem_nonzero;
  logic              imem_req, imem_write, imem_hi;
  logic [ImemAw-1:0] imem_addr;
  logic [31:0]       imem_wdata;

  tpu_csr #(
    .ImemAw (ImemAw),
    .CoreId (CoreId)
  ) u_csr (
    .clk_i             (clk_i),
    .rst_ni            (dut_rst_n),
    .chip_id_i         (chip_id_i),
    .num_chips_i       (num_chips_i),
    .mmio_valid_i      (mmio_valid_i),
    .mmio_write_i      (mmio_write_i),
    .mmio_addr_i       (mmio_addr_i),
    .mmio_wdata_i      (dut_wdata),
    .mmio_rvalid_o     (mmio_rvalid),
    .mmio_rdata_o      (mmio_rdata),
    .irq_o             (irq),
    .doorbell_o        (doorbell),
    .start_pc_o        (start_pc),
    .soft_reset_o      (soft_reset),
    .watchdog_limit_o  (watchdog_limit),
    .core_busy_i       (core_busy_i),
    .core_halted_i     (core_halted_i),
    .core_error_i      (core_error_i),
    .core_error_code_i (core_error_code_i),
    .core_error_pc_i   (core_error_pc_i),
    .core_done_i       (core_done_i),
    .core_fail_i       (core_fail_i),
    .perf_cycles_i     (perf_cycles_i),
    .perf_mxu_busy_i   (perf_mxu_busy_i),
    .perf_instret_i    (perf_instret_i),
    .perf_dma_lines_i  (perf_dma_lines_i),
    .perf_vpu_busy_i   (perf_vpu_busy_i),
    .perf_stall_i      (perf_stall_i),
    .perf_feed_stall_i (perf_feed_stall_i),
    .sem_nonzero_o     (sem_nonzero),
    .sem_take_i        (sem_take_i),
    .sem_post_i        (sem_post_i),
    .sem_idx_i         (sem_idx_i),
    .sem_remote_post_i (dut_remote_post),
    .sem_remote_idx_i  (sem_remote_idx_i),
    .imem_req_o        (imem_req),
    .imem_write_o      (imem_write),
    .imem_hi_o         (imem_hi),
    .imem_addr_o       (imem_addr),
    .imem_wdata_o      (imem_wdata),
    .imem_rdata_i      (imem_rdata_i),
    .hdma_start_o      (hdma_start),
    .hdma_to_host_o    (hdma_to_host),
    .hdma_host_addr_o  (hdma_host_addr),
    .hdma_hbm_line_o   (hdma_hbm_line),
    .hdma_lines_o      (hdma_lines),
    .hdma_busy_i       (hdma_busy_i),
    .hdma_error_i      (hdma_error_i),
    .hdma_code_i       (hdma_code_i),
    .hdma_done_i       (dut_hdma_done),
    .hdma_fail_i       (hdma_fail_i)
  );

  initial assume (!rst_ni);

  // The first cycle is the reset cycle: nothing is checked in it.
  logic past_valid_q = 1'b0;
  always_ff @(posedge clk_i) past_valid_q <= 1'b1;

  // ---------------------------------------------------------------------------------------------
  // The host's access, decoded from the map.
  logic wr, rd, in_imem;
  logic [19:0] imem_offset;
  assign wr          = mmio_valid_i && mmio_write_i;
  assign rd          = mmio_valid_i && !mmio_write_i;
  assign imem_offset = mmio_addr_i - tpu_pkg::IMEM_WINDOW[19:0];
  assign in_imem     = 32'(mmio_addr_i) >= tpu_pkg::IMEM_WINDOW &&
                       32'(mmio_addr_i) < tpu_pkg::IMEM_WINDOW + 32'(tpu_pkg::IMEM_WORDS) * 32'd8;

  function automatic logic writes(logic [19:0] offset);
    writes = wr && mmio_addr_i == offset;
  endfunction

  logic host_soft_reset;
  assign host_soft_reset = writes(tpu_pkg::CSR_SOFT_RESET) && mmio_wdata_i[0];

  // ---------------------------------------------------------------------------------------------
  // Model of the rw registers.
  logic [31:0]        start_pc_q, watchdog_q, host_lo_q, host_hi_q, hbm_line_q, lines_q;
  logic [IrqBits-1:0] irq_enable_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      start_pc_q   <= '0;
      watchdog_q   <= WatchdogReset;
      host_lo_q    <= '0;
      host_hi_q    <= '0;
      hbm_line_q   <= '0;
      lines_q      <= '0;
      irq_enable_q <= IrqEnableReset;
    end else begin
      if (writes(tpu_pkg::CSR_START_PC))       start_pc_q   <= mmio_wdata_i;
      if (writes(tpu_pkg::CSR_WATCHDOG_LIMIT)) watchdog_q   <= mmio_wdata_i;
      if (writes(tpu_pkg::CSR_HDMA_HOST_LO))   host_lo_q    <= mmio_wdata_i;
      if (writes(tpu_pkg::CSR_HDMA_HOST_HI))   host_hi_q    <= mmio_wdata_i;
      if (writes(tpu_pkg::CSR_HDMA_HBM_LINE))  hbm_line_q   <= mmio_wdata_i;
      if (writes(tpu_pkg::CSR_HDMA_LINES))     lines_q      <= mmio_wdata_i;
      if (writes(tpu_pkg::CSR_IRQ_ENABLE))     irq_enable_q <= mmio_wdata_i[IrqBits-1:0];
    end
  end

  // Model of IRQ_STATUS.
  logic [IrqBits-1:0] irq_events, irq_status_q;
  always_comb begin
    irq_events = '0;
    irq_events[tpu_pkg::IRQ_STATUS_CORE_DONE_LSB]  = core_done_i;
    irq_events[tpu_pkg::IRQ_STATUS_CORE_ERROR_LSB] = core_fail_i;
    irq_events[tpu_pkg::IRQ_STATUS_HDMA_DONE_LSB]  = hdma_done_i;
    irq_events[tpu_pkg::IRQ_STATUS_HDMA_ERROR_LSB] = hdma_fail_i;
    // Only the core's post of one of the host's semaphores interrupts the host.
    irq_events[tpu_pkg::IRQ_STATUS_SEM_POST_LSB]   = sem_post_i && 32'(sem_idx_i) < tpu_pkg::HOST_SEMS;
  end
  always_ff @(posedge clk_i) begin
    if (!rst_ni || host_soft_reset) begin
      irq_status_q <= '0;
    end else begin
      irq_status_q <= (irq_status_q & ~(writes(tpu_pkg::CSR_IRQ_STATUS) ? mmio_wdata_i[IrqBits-1:0] : '0))
                      | irq_events;
    end
  end

  // Model of the semaphores: all of one cycle's posts and takes count; the result is held to
  // 0 .. 2^SemBits - 1.
  function automatic logic [SemBits-1:0] sem_after(logic [SemBits-1:0] count, logic [1:0] posts,
                                                   logic [1:0] takes);
    logic [SemBits+1:0] up;
    up = {2'b00, count} + {{SemBits{1'b0}}, posts};
    if (up < {{SemBits{1'b0}}, takes})                   sem_after = '0;
    else if (up - {{SemBits{1'b0}}, takes} > (SemBits+2)'({SemBits{1'b1}})) sem_after = '1;
    else                                                 sem_after = SemBits'(up - {{SemBits{1'b0}}, takes});
  endfunction

  logic [SemBits-1:0] sem_q [Sems];
  logic [Sems-1:0]    sem_nonzero_expect;
  logic               sem_zero_all;
  assign sem_zero_all = host_soft_reset || (writes(tpu_pkg::CSR_SEM_CLEAR) && mmio_wdata_i[0]);

  for (genvar i = 0; i < Sems; i++) begin : gen_sem
    logic [1:0] posts, takes;
    assign posts = 2'(writes(tpu_pkg::CSR_SEM_POST) && mmio_wdata_i == 32'(i))
                 + 2'(sem_post_i && 32'(sem_idx_i) == 32'(i))
                 + 2'(sem_remote_post_i && 32'(sem_remote_idx_i) == 32'(i));
    assign takes = 2'(writes(tpu_pkg::CSR_SEM_TAKE) && mmio_wdata_i == 32'(i))
                 + 2'(sem_take_i && 32'(sem_idx_i) == 32'(i));
    always_ff @(posedge clk_i) begin
      if (!rst_ni || sem_zero_all) sem_q[i] <= '0;
      else                         sem_q[i] <= sem_after(sem_q[i], posts, takes);
    end
    assign sem_nonzero_expect[i] = sem_q[i] != '0;
  end

  logic [31:0] sem_counts, sem_counts_hi;
  assign sem_counts    = {sem_q[3], sem_q[2], sem_q[1], sem_q[0]};
  assign sem_counts_hi = {sem_q[7], sem_q[6], sem_q[5], sem_q[4]};

  // ---------------------------------------------------------------------------------------------
  // What a read of the current address must return (docs/csr.md), sampled in the cycle of the read.
  logic [31:0] expect_rdata;
  always_comb begin
    expect_rdata = '0;  // wo registers and offsets outside the map
    case (mmio_addr_i)
      tpu_pkg::CSR_ID:               expect_rdata = tpu_pkg::ID_MAGIC;
      tpu_pkg::CSR_VERSION:          expect_rdata = tpu_pkg::VERSION_VALUE;
      tpu_pkg::CSR_CFG_LANES:        expect_rdata = 32'(tpu_pkg::LANES);
      tpu_pkg::CSR_CFG_VMEM_LINES:   expect_rdata = 32'(tpu_pkg::VMEM_LINES);
      tpu_pkg::CSR_CFG_IMEM_WORDS:   expect_rdata = 32'(tpu_pkg::IMEM_WORDS);
      tpu_pkg::CSR_CFG_HBM_LINES:    expect_rdata = 32'(tpu_pkg::HBM_LINES);
      tpu_pkg::CSR_CFG_NUM_CORES:    expect_rdata = 32'(tpu_pkg::NUM_CORES);
      tpu_pkg::CSR_CFG_SREGS:        expect_rdata = 32'(tpu_pkg::SREGS);
      tpu_pkg::CSR_CFG_HBM_CHANNELS: expect_rdata = 32'(tpu_pkg::HBM_CHANNELS);
      tpu_pkg::CSR_CFG_CORE_ID:      expect_rdata = 32'(CoreId);
      tpu_pkg::CSR_CFG_CHIP_ID:      expect_rdata = {24'd0, chip_id_i};
      tpu_pkg::CSR_CFG_NUM_CHIPS:    expect_rdata = {29'd0, num_chips_i};
      tpu_pkg::CSR_START_PC:         expect_rdata = start_pc_q;
      tpu_pkg::CSR_STATUS:           expect_rdata = {28'd0, hdma_busy_i, core_error_i, core_halted_i, core_busy_i};
      tpu_pkg::CSR_ERROR_CODE:       expect_rdata = {24'd0, core_error_code_i};
      tpu_pkg::CSR_ERROR_PC:         expect_rdata = core_error_pc_i;
      tpu_pkg::CSR_IRQ_STATUS:       expect_rdata = {27'd0, irq_status_q};
      tpu_pkg::CSR_IRQ_ENABLE:       expect_rdata = {27'd0, irq_enable_q};
      tpu_pkg::CSR_WATCHDOG_LIMIT:   expect_rdata = watchdog_q;
      tpu_pkg::CSR_CYCLES_LO:        expect_rdata = perf_cycles_i[31:0];
      tpu_pkg::CSR_CYCLES_HI:        expect_rdata = perf_cycles_i[63:32];
      tpu_pkg::CSR_MXU_BUSY_LO:      expect_rdata = perf_mxu_busy_i[31:0];
      tpu_pkg::CSR_MXU_BUSY_HI:      expect_rdata = perf_mxu_busy_i[63:32];
      tpu_pkg::CSR_INSTRET:          expect_rdata = perf_instret_i;
      tpu_pkg::CSR_DMA_LINES:        expect_rdata = perf_dma_lines_i;
      tpu_pkg::CSR_VPU_BUSY:         expect_rdata = perf_vpu_busy_i;
      tpu_pkg::CSR_STALL_CYCLES:     expect_rdata = perf_stall_i;
      tpu_pkg::CSR_FEED_STALL:       expect_rdata = perf_feed_stall_i;
      tpu_pkg::CSR_HDMA_HOST_LO:     expect_rdata = host_lo_q;
      tpu_pkg::CSR_HDMA_HOST_HI:     expect_rdata = host_hi_q;
      tpu_pkg::CSR_HDMA_HBM_LINE:    expect_rdata = hbm_line_q;
      tpu_pkg::CSR_HDMA_LINES:       expect_rdata = lines_q;
      tpu_pkg::CSR_HDMA_STATUS:      expect_rdata = {16'd0, hdma_code_i, 6'd0, hdma_error_i, hdma_busy_i};
      tpu_pkg::CSR_SEM_COUNTS:       expect_rdata = sem_counts;
      tpu_pkg::CSR_SEM_COUNTS_HI:    expect_rdata = sem_counts_hi;
      default: ;
    endcase
  end

  // The access of the previous cycle, whose response is due now.
  logic        access_q, read_q, read_imem_q;
  logic [31:0] read_expect_q;
  always_ff @(posedge clk_i) begin
    access_q      <= rst_ni && mmio_valid_i;
    read_q        <= rst_ni && rd;
    read_imem_q   <= in_imem;
    read_expect_q <= expect_rdata;
  end

  // ---------------------------------------------------------------------------------------------
  // Properties.
  always_comb begin
    if (past_valid_q) begin
      // One response pulse, in the cycle after each access (reads and writes alike).
      p_response:       assert (mmio_rvalid == access_q);
      // A read returns the register's value of the read's cycle, or the IMEM's word (which the IMEM
      // delivers in the response's cycle).
      if (read_q) begin
        p_read_data:    assert (mmio_rdata == (read_imem_q ? imem_rdata_i : read_expect_q));
      end
      // The registers the core and the host DMA engine use.
      p_start_pc:       assert (start_pc == start_pc_q);
      p_watchdog_limit: assert (watchdog_limit == watchdog_q);
      p_hdma_regs:      assert (hdma_host_addr == {host_hi_q, host_lo_q} && hdma_hbm_line == hbm_line_q &&
                                hdma_lines == lines_q);
      // The interrupt line.
      p_irq:            assert (irq == |(irq_status_q & irq_enable_q));
      // Which semaphores the core may take.
      p_sem_nonzero:    assert (sem_nonzero == sem_nonzero_expect);
      // The IMEM window: an access inside reaches the IMEM as word (offset / 8), half offset[2];
      // an access outside does not.
      p_imem_req:       assert (imem_req == (mmio_valid_i && in_imem));
      if (imem_req) begin
        p_imem_access:  assert (imem_addr == imem_offset[ImemAw+2:3] && imem_hi == imem_offset[2] &&
                                imem_write == mmio_write_i && imem_wdata == mmio_wdata_i);
      end
    end
  end

  // ---------------------------------------------------------------------------------------------
  // Induction probes: the block's registers that no output shows in every cycle, joined to its
  // internal registers when the design is flattened (hierconn; run_bmc.sh fails if one is left
  // without a driver). The model must equal them; with that, the induction step starts only from
  // states the block can reach.
  (* hierconn *) logic [IrqBits-1:0] \u_csr.irq_enable_q ;
  (* hierconn *) logic [IrqBits-1:0] \u_csr.irq_status_q ;
  (* hierconn *) logic [SemBits-1:0] \u_csr.sem_q[0] ;
  (* hierconn *) logic [SemBits-1:0] \u_csr.sem_q[1] ;
  (* hierconn *) logic [SemBits-1:0] \u_csr.sem_q[2] ;
  (* hierconn *) logic [SemBits-1:0] \u_csr.sem_q[3] ;
  (* hierconn *) logic [SemBits-1:0] \u_csr.sem_q[4] ;
  (* hierconn *) logic [SemBits-1:0] \u_csr.sem_q[5] ;
  (* hierconn *) logic [SemBits-1:0] \u_csr.sem_q[6] ;
  (* hierconn *) logic [SemBits-1:0] \u_csr.sem_q[7] ;

  always_comb begin
    if (past_valid_q) begin
      i_irq_enable: assert (\u_csr.irq_enable_q  == irq_enable_q);
      i_irq_status: assert (\u_csr.irq_status_q  == irq_status_q);
      i_sems:       assert (sem_counts == {\u_csr.sem_q[3] , \u_csr.sem_q[2] , \u_csr.sem_q[1] , \u_csr.sem_q[0] } &&
                            sem_counts_hi == {\u_csr.sem_q[7] , \u_csr.sem_q[6] , \u_csr.sem_q[5] , \u_csr.sem_q[4] });
    end
  end

  // Reachability: a write read back, an event and a clear of IRQ_STATUS in one cycle, a saturated
  // and a floored semaphore, the interrupt line, an IMEM read.
  always_ff @(posedge clk_i) begin
    if (past_valid_q) begin
      c_rw_readback:   cover (read_q && $past(mmio_addr_i == tpu_pkg::CSR_START_PC) &&
                              $past(start_pc_q) != '0 && mmio_rdata == $past(start_pc_q));
      c_event_wins:    cover ($past(rst_ni && writes(tpu_pkg::CSR_IRQ_STATUS) && hdma_done_i &&
                                    mmio_wdata_i[tpu_pkg::IRQ_STATUS_HDMA_DONE_LSB]) &&
                              irq_status_q[tpu_pkg::IRQ_STATUS_HDMA_DONE_LSB]);
      c_sem_floor:     cover ($past(rst_ni && sem_take_i && !sem_post_i && sem_q[sem_idx_i] == '0 &&
                                    !sem_zero_all) && sem_q[$past(sem_idx_i)] == '0);
      c_sem_two_posts: cover (sem_q[5] == 8'd2 && $past(sem_q[5] == '0));
      c_irq:           cover (irq && $past(!irq));
      c_imem_read:     cover (read_q && read_imem_q);
    end
  end

endmodule
