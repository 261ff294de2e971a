`include "tpu_assert.svh"

// Scalar sequencer: fetches one 64-bit instruction per cycle from IMEM, executes scalar instructions
// itself and hands DMA/ICI/MXU/VPU instructions to their unit with the operand values read at issue.
//
// Fetch: the IMEM read address is the next pc (pc_d), so the word for pc_q is available every cycle and
// taken branches cost no bubble. SLD takes two cycles: the first reads VMEM (a stall on no unit), the
// second writes the register and issues. A VPU instruction issues when its unit is not busy; the DMA unit,
// the link engine (RDMA) and the MXU say themselves when they take an instruction (each overlaps
// instructions and keeps their order). Units raise busy the cycle after cmd_valid, so a following SYNC
// always sees it.
//
// Errors are detected at issue. The offending instruction writes nothing; units already running finish
// their earlier instructions (drain) so memory holds exactly the effect of every issued instruction,
// then the core stops with ERROR. The watchdog keeps counting while draining; when it expires the units
// are flushed and the core stops at once.
//
// Semaphores live in the CSR block; SEMWAIT stalls (on no unit, counted in FEED_STALL too) until its
// semaphore is non-zero and takes one, SEMPOST adds one; another core's RDMA with POST adds one too. The watchdog counts a SEMWAIT's wait like any
// other stall, so a program waiting on a feed the host never fills stops with WATCHDOG.
module tpu_sequencer
#(
  parameter int unsigned ImemAw = $clog2(tpu_pkg::IMEM_WORDS),
  parameter int unsigned VmemAw = $clog2(tpu_pkg::VMEM_LINES)
) (
  input  logic              clk_i,
  input  logic              rst_ni,

  // Control from the CSR block.
  input  logic              start_i,          // doorbell pulse; ignored while busy
  input  logic [31:0]       start_pc_i,
  input  logic              abort_i,          // soft reset: stop, flush units, clear status
  input  logic [31:0]       watchdog_limit_i, // 0 disables
  input  logic [2:0]        num_chips_i,      // chips on the board: RDMA reaches num_chips_i * NUM_CORES cores

  // Status to the CSR block.
  output logic              busy_o,
  output logic              halted_o,
  output logic              error_o,
  output logic [7:0]        error_code_o,
  output logic [31:0]       error_pc_o,
  output logic              done_o,           // pulse: HALT completed
  output logic              fail_o,           // pulse: stopped with an error

  // Instruction memory fetch port (1-cycle read latency).
  output logic [ImemAw-1:0] imem_addr_o,
  input  logic [63:0]       imem_rdata_i,

  // VMEM read port of SLD (1-cycle read latency): lane 0 of the line.
  output logic              vmem_rd_en_o,
  output logic [VmemAw-1:0] vmem_rd_addr_o,
  input  logic [31:0]       vmem_rd_data_i,

  // Command bus shared by the units, one valid per unit.
  output logic              dma_cmd_valid_o,
  output logic              ici_cmd_valid_o,
  output logic              mxu_cmd_valid_o,
  output logic              vpu_cmd_valid_o,
  output logic [7:0]        cmd_opcode_o,
  output logic [7:0]        cmd_flags_o,
  output logic [31:0]       cmd_rd_o,         // s[rd]
  output logic [31:0]       cmd_rs1_o,        // s[rs1]
  output logic [31:0]       cmd_rs2_o,        // s[rs2]
  output logic [31:0]       cmd_rs3_o,        // s[rs3]
  output logic [31:0]       cmd_imm_o,
  input  logic              dma_busy_i,
  input  logic              dma_ready_i,    // the DMA unit accepts an instruction this cycle
  input  logic              ici_busy_i,
  input  logic              ici_ready_i,    // the link engine accepts an RDMA this cycle
  input  logic              mxu_busy_i,
  input  logic              mxu_lw_ready_i,   // the MXU accepts an MXU_LW / MXU_MM this cycle (it may
  input  logic              mxu_mm_ready_i,   // take one while busy with earlier commands)
  input  logic              vpu_busy_i,
  output logic              flush_o,          // abort every unit

  // Events for the performance counters.
  input  logic              mxu_row_i,
  input  logic              dma_line_i,
  input  logic              ici_line_i,       // an RDMA line acknowledged (counted in DMA_LINES)
  input  logic              vpu_line_i,
  output logic [63:0]       perf_cycles_o,
  output logic [63:0]       perf_mxu_busy_o,
  output logic [31:0]       perf_instret_o,
  output logic [31:0]       perf_dma_lines_o,
  output logic [31:0]       perf_vpu_busy_o,
  output logic [31:0]       perf_stall_o,
  output logic [31:0]       perf_feed_stall_o, // cycles SEMWAIT waited

  // Semaphores (tpu_csr): which are non-zero; a take or post of semaphore sem_idx_o.
  input  logic [tpu_pkg::SEMS-1:0] sem_nonzero_i,
  output logic              sem_take_o,
  output logic              sem_post_o,
  output logic [$clog2(tpu_pkg::SEMS)-1:0] sem_idx_o,

  // Issue trace (profilers, sw/driver/execution_profile.h): per cycle of a run, whether the instruction
  // at trace_pc_o issues, else which units it waits for; and the unit events of the counters. Units are
  // bit 0 DMA (or the link engine), 1 MXU, 2 VPU.
  output logic              trace_run_o,      // the cycle counts in CYCLES
  output logic              trace_issue_o,
  output logic [31:0]       trace_pc_o,
  output logic [2:0]        trace_wait_o,
  output logic [2:0]        trace_unit_o,     // the unit the issuing instruction goes to
  output logic [2:0]        trace_work_o      // {vpu_line_i, mxu_row_i, dma_line_i | ici_line_i}
);

  typedef enum logic [1:0] {
    StIdle  = 2'd0,
    StRun   = 2'd1,
    StDrain = 2'd2
  } state_e;

  state_e      state_q, state_d;
  logic [31:0] pc_q, pc_d;
  logic        halted_q, halted_d;
  logic        error_q, error_d;
  logic [7:0]  error_code_q, error_code_d;
  logic [31:0] error_pc_q, error_pc_d;
  logic [31:0] wd_count_q, wd_count_d;
  // Scalar register file, register i in bits [32*i +: 32] (a flat vector: Yosys 0.23 cannot copy
  // unpacked arrays whole). Public so benches can read the registers through the backdoor.
  logic [32*tpu_pkg::SREGS-1:0] sregs_q /*verilator public_flat_rd*/;
  logic [32*tpu_pkg::SREGS-1:0] sregs_d;

  logic [63:0] cycles_q, mxu_busy_q;
  logic [31:0] instret_q, dma_lines_q, vpu_busy_q, stall_q, feed_stall_q;

  // ---------------------------------------------------------------------------------------------
  // Decode
  // ---------------------------------------------------------------------------------------------
  logic [63:0] insn;
  logic [7:0]  op;
  logic [3:0]  rd, rs1, rs2, rs3;
  logic [7:0]  flags;
  logic [31:0] imm;
  logic [31:0] rd_val, rs1_val, rs2_val, rs3_val;

  assign insn    = imem_rdata_i;
  assign op      = insn[tpu_pkg::INSN_OPCODE_MSB:tpu_pkg::INSN_OPCODE_LSB];
  assign rd      = insn[tpu_pkg::INSN_RD_MSB:tpu_pkg::INSN_RD_LSB];
  assign rs1     = insn[tpu_pkg::INSN_RS1_MSB:tpu_pkg::INSN_RS1_LSB];
  assign rs2     = insn[tpu_pkg::INSN_RS2_MSB:tpu_pkg::INSN_RS2_LSB];
  assign rs3     = insn[tpu_pkg::INSN_RS3_MSB:tpu_pkg::INSN_RS3_LSB];
  assign flags   = insn[tpu_pkg::INSN_FLAGS_MSB:tpu_pkg::INSN_FLAGS_LSB];
  assign imm     = insn[tpu_pkg::INSN_IMM_MSB:tpu_pkg::INSN_IMM_LSB];
  assign rd_val  = sregs_q[32*rd +: 32];
  assign rs1_val = sregs_q[32*rs1 +: 32];
  assign rs2_val = sregs_q[32*rs2 +: 32];
  assign rs3_val = sregs_q[32*rs3 +: 32];

  // A VMEM range [base, base + count) is legal when empty or entirely below VMEM_LINES.
  function automatic logic vmem_range_bad(logic [31:0] base, logic [31:0] count);
    vmem_range_bad = ((count != 32'd0) && (({1'b0, base} + {1'b0, count}) > 33'(tpu_pkg::VMEM_LINES)));
  endfunction

  // VTRANS: count blocks of LANES lines, in 64 bits so a huge count cannot wrap.
  function automatic logic vmem_blocks_bad(logic [31:0] base, logic [31:0] count);
    vmem_blocks_bad = ((count != 32'd0) &&
                       (({32'd0, base} + ({32'd0, count} * 64'(tpu_pkg::LANES))) > 64'(tpu_pkg::VMEM_LINES)));
  endfunction

  // HBM lines base + i*stride for i < count, computed in 64 bits; the largest is the last one.
  function automatic logic hbm_range_bad(logic [31:0] base, logic [31:0] count, logic [31:0] stride);
    logic [63:0] last;
    last = {32'd0, base} + ({32'd0, count - 32'd1} * {32'd0, stride});
    hbm_range_bad = ((count != 32'd0) && (last >= 64'(tpu_pkg::HBM_LINES)));
  endfunction

  // SYNC: the units named in flags ({ICI, VPU, MXU, DMA}); none named means all.
  logic [3:0] sync_named, sync_mask, units_busy;
  logic       units_idle;
  assign sync_named = {flags[tpu_pkg::FLAG_SYNC_ICI], flags[tpu_pkg::FLAG_SYNC_VPU], flags[tpu_pkg::FLAG_SYNC_MXU],
                       flags[tpu_pkg::FLAG_SYNC_DMA]};
  assign sync_mask  = (sync_named == 4'b0000) ? 4'b1111 : sync_named;
  assign units_busy = {ici_busy_i, vpu_busy_i, mxu_busy_i, dma_busy_i};
  assign units_idle = (units_busy == 4'b0000);

  // ---------------------------------------------------------------------------------------------
  // Execute
  // ---------------------------------------------------------------------------------------------
  logic        issue;       // the instruction at pc_q completes its issue this cycle
  logic        stall;       // waiting on a busy unit, SYNC or HALT
  logic        raise;       // the instruction at pc_q is illegal
  logic [7:0]  raise_code;
  logic        reg_we;
  logic [31:0] reg_wdata;
  logic [31:0] pc_target;
  logic        take_branch;
  logic        halt_now;
  logic        wd_expired;
  logic        sld_pending_q, sld_read;  // SLD: the line was read last cycle / is read this cycle
  logic        feed_stall;  // SEMWAIT waits for its semaphore
  logic        sem_legal;   // imm names a semaphore
  assign sem_legal = (imm < 32'(tpu_pkg::SEMS));
  assign sem_idx_o = imm[$clog2(tpu_pkg::SEMS)-1:0];
  logic [32:0] sld_addr;
  assign sld_addr = {1'b0, rs1_val} + {1'b0, imm};

  always_comb begin
    issue           = 1'b0;
    stall           = 1'b0;
    raise           = 1'b0;
    raise_code      = tpu_pkg::ERR_NONE;
    reg_we          = 1'b0;
    reg_wdata       = 32'd0;
    take_branch     = 1'b0;
    pc_target       = imm;
    halt_now        = 1'b0;
    dma_cmd_valid_o = 1'b0;
    ici_cmd_valid_o = 1'b0;
    mxu_cmd_valid_o = 1'b0;
    vpu_cmd_valid_o = 1'b0;
    sld_read        = 1'b0;
    feed_stall      = 1'b0;
    sem_take_o      = 1'b0;
    sem_post_o      = 1'b0;

    if (state_q == StRun) begin
      if (pc_q >= 32'(tpu_pkg::IMEM_WORDS)) begin
        raise      = 1'b1;
        raise_code = tpu_pkg::ERR_BAD_PC;
      end else begin
        unique case (op)
          tpu_pkg::OP_NOP: issue = 1'b1;
          tpu_pkg::OP_HALT: begin
            if (units_idle) begin
              issue    = 1'b1;
              halt_now = 1'b1;
            end else begin
              stall = 1'b1;
            end
          end
          tpu_pkg::OP_LI: begin
            issue = 1'b1; reg_we = 1'b1; reg_wdata = imm;
          end
          tpu_pkg::OP_ADDI: begin
            issue = 1'b1; reg_we = 1'b1; reg_wdata = rs1_val + imm;
          end
          tpu_pkg::OP_ADD: begin
            issue = 1'b1; reg_we = 1'b1; reg_wdata = rs1_val + rs2_val;
          end
          tpu_pkg::OP_SUB: begin
            issue = 1'b1; reg_we = 1'b1; reg_wdata = rs1_val - rs2_val;
          end
          tpu_pkg::OP_MUL: begin
            issue = 1'b1; reg_we = 1'b1; reg_wdata = rs1_val * rs2_val;
          end
          tpu_pkg::OP_BNE: begin
            issue = 1'b1; take_branch = (rs1_val != rs2_val);
          end
          tpu_pkg::OP_BEQ: begin
            issue = 1'b1; take_branch = (rs1_val == rs2_val);
          end
          tpu_pkg::OP_BLT: begin
            issue = 1'b1; take_branch = ($signed(rs1_val) < $signed(rs2_val));
          end
          tpu_pkg::OP_JMP: begin
            issue = 1'b1; take_branch = 1'b1;
          end
          tpu_pkg::OP_SLD: begin
            if (sld_addr >= 33'(tpu_pkg::VMEM_LINES)) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_VMEM_ADDR;
            end else if (sld_pending_q) begin
              issue = 1'b1; reg_we = 1'b1; reg_wdata = vmem_rd_data_i;
            end else begin
              stall = 1'b1; sld_read = 1'b1;
            end
          end
          tpu_pkg::OP_SEMWAIT: begin
            if (!sem_legal) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_ILLEGAL_INSTR;
            end else if (sem_nonzero_i[sem_idx_o]) begin
              issue = 1'b1; sem_take_o = 1'b1;
            end else begin
              stall = 1'b1; feed_stall = 1'b1;
            end
          end
          tpu_pkg::OP_SEMPOST: begin
            if (!sem_legal) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_ILLEGAL_INSTR;
            end else begin
              issue = 1'b1; sem_post_o = 1'b1;
            end
          end
          tpu_pkg::OP_SYNC: begin
            if ((sync_mask & units_busy) == 4'b0000) issue = 1'b1;
            else stall = 1'b1;
          end
          tpu_pkg::OP_DMA_LD, tpu_pkg::OP_DMA_ST: begin
            if (hbm_range_bad(rs1_val, rs3_val, imm)) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_HBM_ADDR;
            end else if (vmem_range_bad(rs2_val, rs3_val)) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_VMEM_ADDR;
            end else if (!dma_ready_i) begin
              stall = 1'b1;
            end else begin
              issue = 1'b1; dma_cmd_valid_o = 1'b1;
            end
          end
          tpu_pkg::OP_RDMA: begin
            // Lines of this core's VMEM into another board core's HBM (contiguous on both sides); with
            // POST, semaphore imm of that core is posted once they are written.
            if (rd_val >= 32'(num_chips_i) * 32'(tpu_pkg::NUM_CORES)) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_CORE;
            end else if (flags[tpu_pkg::FLAG_RDMA_POST] && !sem_legal) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_ILLEGAL_INSTR;
            end else if (hbm_range_bad(rs1_val, rs3_val, 32'd1)) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_HBM_ADDR;
            end else if (vmem_range_bad(rs2_val, rs3_val)) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_VMEM_ADDR;
            end else if (!ici_ready_i) begin
              stall = 1'b1;
            end else begin
              issue = 1'b1; ici_cmd_valid_o = 1'b1;
            end
          end
          tpu_pkg::OP_MXU_LW: begin
            if (vmem_range_bad(rs1_val, 32'(tpu_pkg::LANES))) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_VMEM_ADDR;
            end else if (!mxu_lw_ready_i) begin
              stall = 1'b1;
            end else begin
              issue = 1'b1; mxu_cmd_valid_o = 1'b1;
            end
          end
          tpu_pkg::OP_MXU_MM: begin
            if (vmem_range_bad(rs1_val, rs3_val) || vmem_range_bad(rs2_val, rs3_val)) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_VMEM_ADDR;
            end else if (!mxu_mm_ready_i) begin
              stall = 1'b1;
            end else begin
              issue = 1'b1; mxu_cmd_valid_o = 1'b1;
            end
          end
          tpu_pkg::OP_VADD, tpu_pkg::OP_VMAX, tpu_pkg::OP_VSUB, tpu_pkg::OP_VMUL, tpu_pkg::OP_VMIN,
          tpu_pkg::OP_VAND, tpu_pkg::OP_VOR, tpu_pkg::OP_VXOR, tpu_pkg::OP_VCMP, tpu_pkg::OP_VSEL,
          tpu_pkg::OP_VSHL, tpu_pkg::OP_VSHRL, tpu_pkg::OP_VSHRA: begin
            // The broadcast operand is one line, read only when there is work to do.
            if (vmem_range_bad(rd_val, rs3_val) || vmem_range_bad(rs1_val, rs3_val) ||
                (!flags[tpu_pkg::FLAG_VADD_SRC2_IMM] &&
                 vmem_range_bad(rs2_val, flags[tpu_pkg::FLAG_VADD_SRC2_BCAST] ?
                                         ((rs3_val != 32'd0) ? 32'd1 : 32'd0) : rs3_val))) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_VMEM_ADDR;
            end else if (vpu_busy_i) begin
              stall = 1'b1;
            end else begin
              issue = 1'b1; vpu_cmd_valid_o = 1'b1;
            end
          end
          tpu_pkg::OP_VCVT, tpu_pkg::OP_VTRANS, tpu_pkg::OP_VEXP, tpu_pkg::OP_VLOG, tpu_pkg::OP_VRSQRT,
          tpu_pkg::OP_VRCP: begin
            if ((op != tpu_pkg::OP_VTRANS) ? (vmem_range_bad(rd_val, rs3_val) || vmem_range_bad(rs1_val, rs3_val))
                                           : (vmem_blocks_bad(rd_val, rs3_val) || vmem_blocks_bad(rs1_val, rs3_val))) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_VMEM_ADDR;
            end else if (vpu_busy_i) begin
              stall = 1'b1;
            end else begin
              issue = 1'b1; vpu_cmd_valid_o = 1'b1;
            end
          end
          tpu_pkg::OP_VSPLAT: begin
            if (vmem_range_bad(rd_val, rs3_val)) begin
              raise = 1'b1; raise_code = tpu_pkg::ERR_BAD_VMEM_ADDR;
            end else if (vpu_busy_i) begin
              stall = 1'b1;
            end else begin
              issue = 1'b1; vpu_cmd_valid_o = 1'b1;
            end
          end
          default: begin
            raise = 1'b1; raise_code = tpu_pkg::ERR_ILLEGAL_INSTR;
          end
        endcase
      end
    end
  end

  assign cmd_opcode_o = op;
  assign cmd_flags_o  = flags;
  assign cmd_rd_o     = rd_val;
  assign cmd_rs1_o    = rs1_val;
  assign cmd_rs2_o    = rs2_val;
  assign cmd_rs3_o    = rs3_val;
  assign cmd_imm_o    = imm;

  // Watchdog: cycles in a row without an issued instruction while running or draining.
  assign wd_count_d = (state_q == StIdle || issue) ? 32'd0 : wd_count_q + 32'd1;
  assign wd_expired = (state_q != StIdle) && !issue && (watchdog_limit_i != 32'd0) &&
                      (wd_count_d >= watchdog_limit_i);

  // ---------------------------------------------------------------------------------------------
  // Next state
  // ---------------------------------------------------------------------------------------------
  always_comb begin
    state_d      = state_q;
    pc_d         = pc_q;
    halted_d     = halted_q;
    error_d      = error_q;
    error_code_d = error_code_q;
    error_pc_d   = error_pc_q;
    sregs_d      = sregs_q;
    flush_o      = 1'b0;
    done_o       = 1'b0;
    fail_o       = 1'b0;

    unique case (state_q)
      StIdle: begin
        if (start_i) begin
          state_d      = StRun;
          pc_d         = start_pc_i;
          halted_d     = 1'b0;
          error_d      = 1'b0;
          error_code_d = tpu_pkg::ERR_NONE;
          error_pc_d   = 32'd0;
          sregs_d = '0;
        end
      end
      StRun: begin
        if (raise) begin
          error_code_d = raise_code;
          error_pc_d   = pc_q;
          state_d      = StDrain;
        end else if (wd_expired) begin
          error_code_d = tpu_pkg::ERR_WATCHDOG;
          error_pc_d   = pc_q;
          error_d      = 1'b1;
          flush_o      = 1'b1;
          fail_o       = 1'b1;
          state_d      = StIdle;
        end else if (issue) begin
          pc_d = take_branch ? pc_target : pc_q + 32'd1;
          if (reg_we && rd != 4'd0) sregs_d[32*rd +: 32] = reg_wdata;
          if (halt_now) begin
            pc_d     = pc_q;
            halted_d = 1'b1;
            done_o   = 1'b1;
            state_d  = StIdle;
          end
        end
      end
      StDrain: begin
        if (units_idle || wd_expired) begin
          flush_o = wd_expired && !units_idle;
          error_d = 1'b1;
          fail_o  = 1'b1;
          state_d = StIdle;
        end
      end
      default: state_d = StIdle;
    endcase

    if (abort_i) begin
      state_d      = StIdle;
      halted_d     = 1'b0;
      error_d      = 1'b0;
      error_code_d = tpu_pkg::ERR_NONE;
      error_pc_d   = 32'd0;
      flush_o      = 1'b1;
      done_o       = 1'b0;
      fail_o       = 1'b0;
    end
  end

  assign imem_addr_o = pc_d[ImemAw-1:0];

  assign vmem_rd_en_o   = sld_read;
  assign vmem_rd_addr_o = sld_addr[VmemAw-1:0];

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      state_q      <= StIdle;
      pc_q         <= 32'd0;
      halted_q     <= 1'b0;
      error_q      <= 1'b0;
      error_code_q <= tpu_pkg::ERR_NONE;
      error_pc_q   <= 32'd0;
      wd_count_q   <= 32'd0;
      sld_pending_q <= 1'b0;
    end else begin
      state_q      <= state_d;
      pc_q         <= pc_d;
      halted_q     <= halted_d;
      error_q      <= error_d;
      error_code_q <= error_code_d;
      error_pc_q   <= error_pc_d;
      wd_count_q   <= wd_count_d;
      // Cleared by the issue, an error, the watchdog or an abort (all leave StRun or issue).
      sld_pending_q <= sld_read && state_d == StRun;
    end
  end

  // The register file needs no reset: the doorbell clears it before every run.
  always_ff @(posedge clk_i) begin
    sregs_q <= sregs_d;
  end

  // ---------------------------------------------------------------------------------------------
  // Performance counters: cleared by the doorbell, count while busy.
  // ---------------------------------------------------------------------------------------------
  logic counting;
  assign counting = (state_q != StIdle);

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      cycles_q    <= 64'd0;
      mxu_busy_q  <= 64'd0;
      instret_q   <= 32'd0;
      dma_lines_q <= 32'd0;
      vpu_busy_q  <= 32'd0;
      stall_q     <= 32'd0;
      feed_stall_q <= 32'd0;
    end else if (state_q == StIdle && start_i && !abort_i) begin
      cycles_q    <= 64'd0;
      mxu_busy_q  <= 64'd0;
      instret_q   <= 32'd0;
      dma_lines_q <= 32'd0;
      vpu_busy_q  <= 32'd0;
      stall_q     <= 32'd0;
      feed_stall_q <= 32'd0;
    end else if (counting) begin
      cycles_q    <= cycles_q + 64'd1;
      mxu_busy_q  <= mxu_busy_q + 64'(mxu_row_i);
      instret_q   <= instret_q + 32'(issue);
      dma_lines_q <= dma_lines_q + 32'(dma_line_i) + 32'(ici_line_i);
      vpu_busy_q  <= vpu_busy_q + 32'(vpu_line_i);
      stall_q     <= stall_q + 32'(stall);
      feed_stall_q <= feed_stall_q + 32'(feed_stall);
    end
  end

  // The units a stalled instruction waits for: its own unit, or for SYNC/HALT those still busy. The trace
  // has three unit bits: the link engine shows as DMA.
  function automatic logic [2:0] TraceUnits(logic [3:0] units);
    TraceUnits = {units[2], units[1], units[0] | units[3]};
  endfunction
  always_comb begin
    trace_wait_o = 3'b000;
    if (stall) begin
      unique case (op)
        tpu_pkg::OP_SYNC:                        trace_wait_o = TraceUnits(sync_mask & units_busy);
        tpu_pkg::OP_HALT:                        trace_wait_o = TraceUnits(units_busy);
        tpu_pkg::OP_DMA_LD, tpu_pkg::OP_DMA_ST,
        tpu_pkg::OP_RDMA:                        trace_wait_o = 3'b001;
        tpu_pkg::OP_MXU_LW, tpu_pkg::OP_MXU_MM:  trace_wait_o = 3'b010;
        tpu_pkg::OP_SLD:                         trace_wait_o = 3'b000;  // its VMEM read
        tpu_pkg::OP_SEMWAIT:                     trace_wait_o = 3'b000;  // the host
        default:                                 trace_wait_o = 3'b100;  // the vector instructions
      endcase
    end
  end
  assign trace_run_o   = counting;
  assign trace_issue_o = issue;
  assign trace_pc_o    = pc_q;
  assign trace_unit_o  = {vpu_cmd_valid_o, mxu_cmd_valid_o, dma_cmd_valid_o | ici_cmd_valid_o};
  assign trace_work_o  = {vpu_line_i, mxu_row_i, dma_line_i | ici_line_i};

  assign busy_o           = (state_q != StIdle);
  assign halted_o         = halted_q;
  assign error_o          = error_q;
  assign error_code_o     = error_code_q;
  assign error_pc_o       = error_pc_q;
  assign perf_cycles_o    = cycles_q;
  assign perf_mxu_busy_o  = mxu_busy_q;
  assign perf_instret_o   = instret_q;
  assign perf_dma_lines_o = dma_lines_q;
  assign perf_vpu_busy_o  = vpu_busy_q;
  assign perf_stall_o     = stall_q;
  assign perf_feed_stall_o = feed_stall_q;

  `TPU_ASSERT(StateLegal, state_q == StIdle || state_q == StRun || state_q == StDrain)
  // Units issue only while running.
  `TPU_ASSERT(CommandsOnlyWhileRunning,
              state_q == StRun || !(dma_cmd_valid_o || ici_cmd_valid_o || mxu_cmd_valid_o || vpu_cmd_valid_o))

  // At most one unit receives a command per cycle; a semaphore is taken only while it is non-zero.
  `TPU_ASSERT(OneCommandPerCycle, $onehot0({dma_cmd_valid_o, ici_cmd_valid_o, mxu_cmd_valid_o, vpu_cmd_valid_o}))
  `TPU_ASSERT(TakeOnlyANonZeroSemaphore, !sem_take_o || sem_nonzero_i[sem_idx_o])

endmodule
