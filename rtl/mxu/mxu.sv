`include "tpu_assert.svh"
// Matrix unit (MXU): executes MXU_LW and MXU_MM (docs/isa.md) on a weight-stationary N x N systolic
// array (mxu_array) with VMEM as its memory. A weight load runs beside a matrix multiply, and
// consecutive multiplies stream with no bubble; the results are those of executing the commands one
// after the other, as docs/isa.md defines them.
//
// Engines. The load engine (MXU_LW src [TRANSPOSE]) reads lines src..src+N-1 on port W (one per
// cycle), rounds every lane to bf16 and writes them as rows (or, transposed, as columns) of the back
// bank. The stream engine (MXU_MM src, dst, count [ACC] [SWAP]) exchanges front and back when the
// command is accepted (also when count is 0), then reads LHS lines src.. on port A, one per cycle,
// rounds them to bf16 and streams them through the array with the front bank. Every row carries its
// bank, destination line and ACC flag down a pipeline beside the array, so rows of several commands
// and of both banks can be in flight at once. For ACC the old destination line is read on port B one
// cycle before the row's result leaves the array, and fp32_add(old, result) is written; the result of
// line i goes to dst+i on the write port.
//
// Issue rules (lw_ready_o, mm_ready_o):
//   MXU_LW is accepted while no other load runs, also while multiplies stream.
//   MXU_MM is accepted when no load runs or its last line arrives (a SWAP must see the loaded
//   weights; the swap and the last weight write take effect at the same edge) and the previous
//   multiply is reading its last LHS line or has read them all: the next command's first row then
//   enters right after the previous command's last row.
// Ordering inside the unit (what keeps the results those of sequential execution):
//   - a load writes the back bank only when no row of that bank is in flight (after a SWAP the rows
//     of the earlier multiply still use it); its reads wait for that;
//   - a read of a weight or LHS line waits while an accepted multiply still has to write that line;
//   - the old-destination read of an ACC row that coincides with the write of the same line by the
//     row before takes the written data (forwarding), as VMEM returns old data in that case.
//
// Timing (cycle 0 = the cycle the command is accepted; busy_o is high from cycle 1):
//   MXU_LW alone:      reads in cycles 1..N, the last line enters the back bank in cycle N+1;
//                      busy for N+1 cycles. Behind a SWAP it starts once the earlier rows of the
//                      back bank left the array (at most 2*N + 1 cycles after the SWAP's last read).
//   MXU_MM, count C:   LHS line i is read in cycle 1+i, enters the array in cycle 2+i and its result
//                      is written in cycle 2+i+2*N. Pipeline depth from the read of a line to the
//                      write of its result: 2*N + 1 cycles (1 VMEM read + 2*N in the array: the sum
//                      of column n is complete N+1+n cycles after the row entered, and the de-skew
//                      holds every column until the last one, column N-1, is; see mxu_array.sv).
//                      Fill 2*N + 1 cycles, then one row per cycle, drain 2*N + 1 cycles after the
//                      last read: alone busy for C + 2*N + 1 cycles. Back to back, every further
//                      command adds C cycles (MAC utilization of a chain of commands with R rows in
//                      all: R / (R + 2*N + 1)).
//                      C = 0 reads and writes nothing; only its SWAP takes effect.
//
// Both weight banks reset to +0. flush_i aborts every command in the same cycle: no read, write or
// weight update happens after it (weights written before it stay, a SWAP done at issue stays). Address
// ranges are checked by the sequencer before issue; operand bits above the VMEM address width are
// ignored.
// The package is named at each use instead of imported in the header: Yosys 0.23 rejects header imports.
module mxu #(
  parameter int unsigned N       = tpu_pkg::LANES,
  parameter int unsigned VMEM_AW = $clog2(tpu_pkg::VMEM_LINES)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,          // synchronous, active low
  input  logic                 flush_i,         // soft reset: abort every command, go idle
  input  logic                 cmd_valid_i,     // a command is issued this cycle (only when ready)
  input  logic [7:0]           cmd_opcode_i,    // tpu_pkg::OP_MXU_LW or tpu_pkg::OP_MXU_MM
  input  logic [7:0]           cmd_flags_i,
  input  logic [31:0]          cmd_src_i,       // s[rs1]: weight lines (LW) or first LHS line (MM)
  input  logic [31:0]          cmd_dst_i,       // s[rs2]: first destination line (MM)
  input  logic [31:0]          cmd_count_i,     // s[rs3]: LHS lines (MM)
  output logic                 lw_ready_o,      // an MXU_LW may be issued this cycle
  output logic                 mm_ready_o,      // an MXU_MM may be issued this cycle
  output logic                 busy_o,          // 1 from the cycle after an accept until all work is done
  output logic                 w_rd_en_o,       // VMEM read port W (weights); data arrives the next cycle
  output logic [VMEM_AW-1:0]   w_rd_addr_o,
  input  logic [N*32-1:0]      w_rd_data_i,
  output logic                 a_rd_en_o,       // VMEM read port A (LHS rows), 1-cycle latency
  output logic [VMEM_AW-1:0]   a_rd_addr_o,
  input  logic [N*32-1:0]      a_rd_data_i,
  output logic                 b_rd_en_o,       // VMEM read port B (old destination line for ACC), 1-cycle latency
  output logic [VMEM_AW-1:0]   b_rd_addr_o,
  input  logic [N*32-1:0]      b_rd_data_i,
  output logic                 wr_en_o,         // VMEM write port
  output logic [VMEM_AW-1:0]   wr_addr_o,
  output logic [N*32-1:0]      wr_data_o,
  output logic                 row_accepted_o   // perf counter: an LHS row entered the array this cycle
);
  localparam int unsigned IdxW    = $clog2(N);
  localparam int unsigned CntW    = VMEM_AW + 1;  // line counts up to VMEM_LINES inclusive
  localparam int unsigned Latency = 2 * N;        // array stages of a row

  logic               cmd_lw, cmd_mm, start_load, start_matmul, swap;
  logic               front_q, front_d;           // bank the multiplies use; the other is back

  // Load engine.
  logic               lw_active_q, lw_active_d;
  logic [IdxW:0]      lw_left_q, lw_left_d;       // port-W reads still to issue
  logic [VMEM_AW-1:0] lw_addr_q, lw_addr_d;
  logic               lw_pend_q;                  // a weight line arrives this cycle
  logic [IdxW-1:0]    lw_idx_q, lw_idx_d;         // index of the line arriving next
  logic               lw_transpose_q, lw_transpose_d;
  logic               lw_go, lw_hazard, back_busy, lw_finishing;

  // Stream engine.
  logic [CntW-1:0]    mm_left_q, mm_left_d;       // LHS rows still to read
  logic [VMEM_AW-1:0] mm_src_q, mm_src_d;         // next LHS line
  logic [VMEM_AW-1:0] mm_dst_q, mm_dst_d;         // destination of the next row read
  logic               mm_acc_q, mm_acc_d;
  logic               row_go, row_hazard;

  // Rows in flight: the row read last cycle (pend) and the array stages (pipe[s]: s+1 cycles in).
  logic               pend_valid_q, pend_acc_q, pend_bank_q;
  logic [VMEM_AW-1:0] pend_dst_q;
  logic [Latency-1:0] pipe_valid_q, pipe_acc_q;
  logic [Latency*VMEM_AW-1:0] pipe_dst_q;

  logic [N*16-1:0]    w_rd_bf16, a_rd_bf16;
  logic               array_out_valid_next, array_out_valid, array_busy;
  logic [1:0]         array_bank_busy;
  logic [N*32-1:0]    array_out_row, old_row;
  logic               fwd_valid_q;
  logic [N*32-1:0]    fwd_row_q;

  // ---------------------------------------------------------------------------------------------
  // Issue
  // ---------------------------------------------------------------------------------------------
  assign row_go     = (mm_left_q != '0) && !row_hazard;
  assign lw_finishing = lw_pend_q && (lw_idx_q == IdxW'(N - 1));  // the last weight line arrives
  assign lw_ready_o   = !lw_active_q;
  assign mm_ready_o   = (!lw_active_q || lw_finishing) && ((mm_left_q == '0) || ((mm_left_q == CntW'(1)) && row_go));

  assign cmd_lw       = cmd_valid_i && !flush_i && (cmd_opcode_i == tpu_pkg::OP_MXU_LW);
  assign cmd_mm       = cmd_valid_i && !flush_i && (cmd_opcode_i == tpu_pkg::OP_MXU_MM);
  assign start_load   = cmd_lw && lw_ready_o;
  assign start_matmul = cmd_mm && mm_ready_o && (cmd_count_i != '0);
  assign swap         = cmd_mm && mm_ready_o && cmd_flags_i[tpu_pkg::FLAG_MXU_MM_SWAP];
  assign front_d      = swap ? !front_q : front_q;

  // ---------------------------------------------------------------------------------------------
  // Hazards: a line that an accepted multiply has yet to write is not read. Pending writes are the
  // rows in flight and, for loads, the rows the stream engine has yet to read (a multiply being
  // fed was accepted before any running load: multiplies wait for loads).
  // ---------------------------------------------------------------------------------------------
  always_comb begin
    row_hazard = pend_valid_q && (pend_dst_q == mm_src_q);
    lw_hazard  = (pend_valid_q && (pend_dst_q == lw_addr_q)) ||
                 ((mm_left_q != '0) && ({1'b0, lw_addr_q} >= {1'b0, mm_dst_q}) &&
                  ({1'b0, lw_addr_q} < CntW'({1'b0, mm_dst_q} + mm_left_q)));
    for (int unsigned s = 0; s < Latency; s++) begin
      if (pipe_valid_q[s]) begin
        row_hazard = row_hazard || (pipe_dst_q[s*VMEM_AW +: VMEM_AW] == mm_src_q);
        lw_hazard  = lw_hazard  || (pipe_dst_q[s*VMEM_AW +: VMEM_AW] == lw_addr_q);
      end
    end
  end

  // ---------------------------------------------------------------------------------------------
  // Load engine: port W -> back bank
  // ---------------------------------------------------------------------------------------------
  assign back_busy   = array_bank_busy[!front_q] || (pend_valid_q && (pend_bank_q == !front_q));
  assign lw_go       = lw_active_q && (lw_left_q != '0) && !lw_hazard && !back_busy;
  assign w_rd_en_o   = lw_go;
  assign w_rd_addr_o = lw_addr_q;

  always_comb begin
    lw_active_d    = lw_active_q;
    lw_left_d      = lw_left_q;
    lw_addr_d      = lw_addr_q;
    lw_idx_d       = lw_idx_q;
    lw_transpose_d = lw_transpose_q;
    if (lw_go) begin
      lw_left_d = lw_left_q - 1'b1;
      lw_addr_d = lw_addr_q + 1'b1;
    end
    if (lw_pend_q) begin
      lw_idx_d = lw_idx_q + 1'b1;
      if (lw_idx_q == IdxW'(N - 1)) lw_active_d = 1'b0;
    end
    if (start_load) begin
      lw_active_d    = 1'b1;
      lw_left_d      = (IdxW+1)'(N);
      lw_addr_d      = cmd_src_i[VMEM_AW-1:0];
      lw_idx_d       = '0;
      lw_transpose_d = cmd_flags_i[tpu_pkg::FLAG_MXU_LW_TRANSPOSE];
    end
  end

  // ---------------------------------------------------------------------------------------------
  // Stream engine: port A -> array -> port B (ACC) -> write port
  // ---------------------------------------------------------------------------------------------
  assign a_rd_en_o      = row_go;
  assign a_rd_addr_o    = mm_src_q;
  assign row_accepted_o = pend_valid_q;

  always_comb begin
    mm_left_d = mm_left_q;
    mm_src_d  = mm_src_q;
    mm_dst_d  = mm_dst_q;
    mm_acc_d  = mm_acc_q;
    if (row_go) begin
      mm_left_d = mm_left_q - 1'b1;
      mm_src_d  = mm_src_q + 1'b1;
      mm_dst_d  = mm_dst_q + 1'b1;
    end
    if (start_matmul) begin
      mm_left_d = cmd_count_i[CntW-1:0];
      mm_src_d  = cmd_src_i[VMEM_AW-1:0];
      mm_dst_d  = cmd_dst_i[VMEM_AW-1:0];
      mm_acc_d  = cmd_flags_i[tpu_pkg::FLAG_MXU_MM_ACC];
    end
  end

  // Inputs enter the array as bf16.
  always_comb begin
    for (int unsigned j = 0; j < N; j++) begin
      w_rd_bf16[16*j +: 16] = tpu_fp_pkg::fp32_to_bf16(w_rd_data_i[32*j +: 32]);
      a_rd_bf16[16*j +: 16] = tpu_fp_pkg::fp32_to_bf16(a_rd_data_i[32*j +: 32]);
    end
  end

  mxu_array #(
    .N(N)
  ) u_array (
    .clk_i,
    .rst_ni,
    .flush_i,
    .w_load_i        (lw_pend_q),
    .w_bank_i        (!front_q),
    .w_transpose_i   (lw_transpose_q),
    .w_idx_i         (lw_idx_q),
    .w_row_i         (w_rd_bf16),
    .in_valid_i      (pend_valid_q),
    .in_bank_i       (pend_bank_q),
    .in_row_i        (a_rd_bf16),
    .out_valid_next_o(array_out_valid_next),
    .out_valid_o     (array_out_valid),
    .out_row_o       (array_out_row),
    .busy_o          (array_busy),
    .bank_busy_o     (array_bank_busy)
  );

  // Port B: the old destination line of an ACC row, one cycle before its result leaves the array.
  assign b_rd_en_o   = pipe_valid_q[Latency-2] && pipe_acc_q[Latency-2];
  assign b_rd_addr_o = pipe_dst_q[(Latency-2)*VMEM_AW +: VMEM_AW];

  // Write port: the result, or old + result with ACC (the old value is the left operand).
  assign wr_en_o   = pipe_valid_q[Latency-1];
  assign wr_addr_o = pipe_dst_q[(Latency-1)*VMEM_AW +: VMEM_AW];
  assign old_row   = fwd_valid_q ? fwd_row_q : b_rd_data_i;
  always_comb begin
    if (pipe_acc_q[Latency-1] && wr_en_o) begin
      for (int unsigned j = 0; j < N; j++) begin
        wr_data_o[32*j +: 32] = tpu_fp_pkg::fp32_add(old_row[32*j +: 32], array_out_row[32*j +: 32]);
      end
    end else begin
      wr_data_o = array_out_row;
    end
  end

  assign busy_o = lw_active_q || (mm_left_q != '0) || pend_valid_q || array_busy;

  // ---------------------------------------------------------------------------------------------
  // Flops
  // ---------------------------------------------------------------------------------------------
  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      front_q <= 1'b0;
    end else begin
      front_q <= front_d;  // a SWAP done at issue stays through a flush
    end
    if (!rst_ni || flush_i) begin
      lw_active_q  <= 1'b0;
      lw_pend_q    <= 1'b0;
      mm_left_q    <= '0;
      pend_valid_q <= 1'b0;
      pipe_valid_q <= '0;
      fwd_valid_q  <= 1'b0;
    end else begin
      lw_active_q  <= lw_active_d;
      lw_pend_q    <= lw_go;
      mm_left_q    <= mm_left_d;
      pend_valid_q <= row_go;
      pipe_valid_q <= {pipe_valid_q[Latency-2:0], pend_valid_q};
      fwd_valid_q  <= b_rd_en_o && wr_en_o && (b_rd_addr_o == wr_addr_o);
    end
  end

  // Addresses, counters and row tags are only meaningful while their valid bits are set.
  always_ff @(posedge clk_i) begin
    lw_left_q      <= lw_left_d;
    lw_addr_q      <= lw_addr_d;
    lw_idx_q       <= lw_idx_d;
    lw_transpose_q <= lw_transpose_d;
    mm_src_q       <= mm_src_d;
    mm_dst_q       <= mm_dst_d;
    mm_acc_q       <= mm_acc_d;
    pend_dst_q     <= mm_dst_q;
    pend_acc_q     <= mm_acc_q;
    pend_bank_q    <= front_q;
    pipe_acc_q     <= {pipe_acc_q[Latency-2:0], pend_acc_q};
    pipe_dst_q     <= {pipe_dst_q[(Latency-1)*VMEM_AW-1:0], pend_dst_q};
    if (b_rd_en_o && wr_en_o && (b_rd_addr_o == wr_addr_o)) fwd_row_q <= wr_data_o;
  end

  // Upper operand bits beyond the VMEM address/count range are zero (the sequencer checks ranges);
  // flag bits other than TRANSPOSE, ACC and SWAP have no meaning for the MXU; the array's valid
  // bits equal pipe_valid_q.
  logic unused_bits;
  assign unused_bits = ^{cmd_src_i[31:VMEM_AW], cmd_dst_i[31:VMEM_AW], cmd_count_i[31:CntW],
                         cmd_flags_i[7:2], array_out_valid_next, array_out_valid};

`ifndef SYNTHESIS
  initial begin
    assert (CntW <= 32) else $fatal(1, "mxu: VMEM_AW too large");
  end
`endif

  // Commands only when ready and only MXU opcodes; counts within VMEM; the row tags beside the array and
  // the array itself agree on which rows are in flight.
  `TPU_ASSERT(LoadOnlyWhenReady, !cmd_lw || lw_ready_o)
  `TPU_ASSERT(MultiplyOnlyWhenReady, !cmd_mm || mm_ready_o)
  `TPU_ASSERT(OnlyMxuOpcodes,
              !cmd_valid_i || cmd_opcode_i == tpu_pkg::OP_MXU_LW || cmd_opcode_i == tpu_pkg::OP_MXU_MM)
  `TPU_ASSERT(CountWithinVmem, !cmd_mm || (cmd_count_i >> CntW) == '0)
  `TPU_ASSERT(RowTagsFollowTheArray, array_out_valid == pipe_valid_q[Latency-1])

endmodule
