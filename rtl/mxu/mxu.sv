// Matrix unit (MXU): executes MXU_LW and MXU_MM (docs/isa.md) on a weight-stationary N x N systolic
// array (mxu_array) with VMEM as its memory.
//
// MXU_LW src [TRANSPOSE]: reads lines src..src+N-1 on port A (one per cycle), rounds every lane to
// bf16 and writes them as rows (or, transposed, as columns) of the back weight buffer.
// MXU_MM src, dst, count [ACC] [SWAP]: with SWAP exchanges front and back when the command is
// accepted (also when count is 0); then reads LHS lines src.. on port A, one per cycle, rounds them to
// bf16 and streams them through the array; for ACC it reads the old destination line on port B one
// cycle before the result leaves the array and writes fp32_add(old, result); the result of line i
// goes to dst+i on the write port.
//
// Timing (cycle 0 = the cycle cmd_valid_i is high; busy_o is high from cycle 1):
//   MXU_LW:           reads in cycles 1..N, the last line enters the back buffer in cycle N+1;
//                     busy for N+1 cycles.
//   MXU_MM, count C:  LHS line i is read in cycle 1+i, enters the array in cycle 2+i and its result
//                     is written in cycle 2+i+2*N. Pipeline latency from the read of a line to the
//                     write of its result: 2*N + 1 cycles (1 VMEM read + 2*N in the array: the sum
//                     of column n is complete N+1+n cycles after the row entered, and the de-skew
//                     holds every column until the last one, column N-1, is; see mxu_array.sv).
//                     Busy for C + 2*N + 1 cycles: one row per cycle plus a fill/drain overhead of
//                     2*N + 1 cycles (MAC utilization C / (C + 2*N + 1)).
//                     C = 0 is never busy and changes nothing but the SWAP.
// The first version runs one command at a time; the two buffers let a later version overlap LW with MM.
//
// Both weight buffers reset to +0. flush_i aborts the current command in the same cycle: no read,
// write or weight update happens after it (weights written before it stay, a SWAP done at issue
// stays). Address ranges are checked by the sequencer before issue; operand bits above the VMEM
// address width are ignored.
// The package is named at each use instead of imported in the header: Yosys 0.23 rejects header imports.
module mxu #(
  parameter int unsigned N       = tpu_pkg::LANES,
  parameter int unsigned VMEM_AW = $clog2(tpu_pkg::VMEM_LINES)
) (
  input  logic                 clk_i,
  input  logic                 rst_ni,          // synchronous, active low
  input  logic                 flush_i,         // soft reset: abort the current command, go idle
  input  logic                 cmd_valid_i,     // a command is issued this cycle (only when !busy_o)
  input  logic [7:0]           cmd_opcode_i,    // tpu_pkg::OP_MXU_LW or tpu_pkg::OP_MXU_MM
  input  logic [7:0]           cmd_flags_i,
  input  logic [31:0]          cmd_src_i,       // s[rs1]: weight lines (LW) or first LHS line (MM)
  input  logic [31:0]          cmd_dst_i,       // s[rs2]: first destination line (MM)
  input  logic [31:0]          cmd_count_i,     // s[rs3]: LHS lines (MM)
  output logic                 busy_o,          // 1 from the cycle after cmd_valid_i until the last write is done
  output logic                 a_rd_en_o,       // VMEM read port A (weights, LHS); data arrives the next cycle
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
  localparam int unsigned IdxW = $clog2(N);
  localparam int unsigned CntW = VMEM_AW + 1;  // line counts up to VMEM_LINES inclusive

  typedef enum logic [1:0] {
    StIdle,
    StLoad,
    StMatmul
  } state_e;

  state_e             state_q, state_d;
  logic [VMEM_AW-1:0] rd_addr_q, rd_addr_d;    // next port-A line
  logic [CntW-1:0]    rd_left_q, rd_left_d;    // port-A reads still to issue
  logic               a_pending_q;             // a port-A read was issued last cycle
  logic [IdxW-1:0]    w_idx_q, w_idx_d;        // weight line arriving next
  logic               transpose_q, transpose_d;
  logic               acc_q, acc_d;
  logic [VMEM_AW-1:0] old_addr_q, old_addr_d;  // next destination line to read for ACC
  logic [VMEM_AW-1:0] wr_addr_q, wr_addr_d;    // next destination line to write
  logic [CntW-1:0]    wr_left_q, wr_left_d;    // result lines still to write

  logic               cmd_accept, start_load, start_matmul, swap;
  logic               weight_arrives, row_arrives;
  logic [N*16-1:0]    a_rd_bf16;
  logic               array_out_valid_next, array_out_valid, array_busy;
  logic [N*32-1:0]    array_out_row;

  assign cmd_accept   = cmd_valid_i && (state_q == StIdle) && !flush_i;
  assign start_load   = cmd_accept && (cmd_opcode_i == tpu_pkg::OP_MXU_LW);
  assign start_matmul = cmd_accept && (cmd_opcode_i == tpu_pkg::OP_MXU_MM) && (cmd_count_i != '0);
  assign swap         = cmd_accept && (cmd_opcode_i == tpu_pkg::OP_MXU_MM) && cmd_flags_i[tpu_pkg::FLAG_MXU_MM_SWAP];

  // Port A: one line per cycle while reads remain.
  assign a_rd_en_o   = (state_q != StIdle) && (rd_left_q != '0);
  assign a_rd_addr_o = rd_addr_q;

  // Data of last cycle's read is on a_rd_data_i now: a weight line (LW) or an LHS row (MM).
  assign weight_arrives = a_pending_q && (state_q == StLoad);
  assign row_arrives    = a_pending_q && (state_q == StMatmul);
  assign row_accepted_o = row_arrives;

  // Inputs enter the array as bf16, for weights and LHS rows alike (one set of converters).
  always_comb begin
    for (int unsigned j = 0; j < N; j++) begin
      a_rd_bf16[16*j +: 16] = tpu_fp_pkg::fp32_to_bf16(a_rd_data_i[32*j +: 32]);
    end
  end

  mxu_array #(
    .N(N)
  ) u_array (
    .clk_i,
    .rst_ni,
    .flush_i,
    .w_load_i        (weight_arrives),
    .w_transpose_i   (transpose_q),
    .w_idx_i         (w_idx_q),
    .w_row_i         (a_rd_bf16),
    .swap_i          (swap),
    .in_valid_i      (row_arrives),
    .in_row_i        (a_rd_bf16),
    .out_valid_next_o(array_out_valid_next),
    .out_valid_o     (array_out_valid),
    .out_row_o       (array_out_row),
    .busy_o          (array_busy)
  );

  // Port B: the old destination line is read one cycle before its result leaves the array.
  assign b_rd_en_o   = acc_q && array_out_valid_next && (state_q == StMatmul);
  assign b_rd_addr_o = old_addr_q;

  // Write port: the result, or old + result with ACC (the old value is the left operand).
  assign wr_en_o   = array_out_valid && (state_q == StMatmul);
  assign wr_addr_o = wr_addr_q;
  always_comb begin
    if (acc_q && wr_en_o) begin
      for (int unsigned j = 0; j < N; j++) begin
        wr_data_o[32*j +: 32] = tpu_fp_pkg::fp32_add(b_rd_data_i[32*j +: 32], array_out_row[32*j +: 32]);
      end
    end else begin
      wr_data_o = array_out_row;
    end
  end

  assign busy_o = (state_q != StIdle);

  always_comb begin
    state_d     = state_q;
    rd_addr_d   = rd_addr_q;
    rd_left_d   = rd_left_q;
    w_idx_d     = w_idx_q;
    transpose_d = transpose_q;
    acc_d       = acc_q;
    old_addr_d  = old_addr_q;
    wr_addr_d   = wr_addr_q;
    wr_left_d   = wr_left_q;

    if (a_rd_en_o) begin
      rd_addr_d = rd_addr_q + 1'b1;
      rd_left_d = rd_left_q - 1'b1;
    end
    if (weight_arrives) begin
      w_idx_d = w_idx_q + 1'b1;
      if (w_idx_q == IdxW'(N - 1)) begin
        state_d = StIdle;
      end
    end
    if (b_rd_en_o) begin
      old_addr_d = old_addr_q + 1'b1;
    end
    if (wr_en_o) begin
      wr_addr_d = wr_addr_q + 1'b1;
      wr_left_d = wr_left_q - 1'b1;
      if (wr_left_q == CntW'(1)) begin
        state_d = StIdle;
      end
    end

    if (start_load) begin
      state_d     = StLoad;
      rd_addr_d   = cmd_src_i[VMEM_AW-1:0];
      rd_left_d   = CntW'(N);
      w_idx_d     = '0;
      transpose_d = cmd_flags_i[tpu_pkg::FLAG_MXU_LW_TRANSPOSE];
    end
    if (start_matmul) begin
      state_d    = StMatmul;
      rd_addr_d  = cmd_src_i[VMEM_AW-1:0];
      rd_left_d  = cmd_count_i[CntW-1:0];
      acc_d      = cmd_flags_i[tpu_pkg::FLAG_MXU_MM_ACC];
      old_addr_d = cmd_dst_i[VMEM_AW-1:0];
      wr_addr_d  = cmd_dst_i[VMEM_AW-1:0];
      wr_left_d  = cmd_count_i[CntW-1:0];
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni || flush_i) begin
      state_q     <= StIdle;
      rd_left_q   <= '0;
      a_pending_q <= 1'b0;
      acc_q       <= 1'b0;
    end else begin
      state_q     <= state_d;
      rd_left_q   <= rd_left_d;
      a_pending_q <= a_rd_en_o;
      acc_q       <= acc_d;
    end
  end

  // Addresses and counters are only meaningful while a command runs; no reset needed.
  always_ff @(posedge clk_i) begin
    rd_addr_q   <= rd_addr_d;
    w_idx_q     <= w_idx_d;
    transpose_q <= transpose_d;
    old_addr_q  <= old_addr_d;
    wr_addr_q   <= wr_addr_d;
    wr_left_q   <= wr_left_d;
  end

  // Upper operand bits beyond the VMEM address/count range are zero (the sequencer checks ranges);
  // flag bits other than TRANSPOSE, ACC and SWAP have no meaning for the MXU.
  logic unused_cmd_bits;
  assign unused_cmd_bits = ^{cmd_src_i[31:VMEM_AW], cmd_dst_i[31:VMEM_AW], cmd_count_i[31:CntW],
                             cmd_flags_i[7:2], array_busy};

`ifndef SYNTHESIS
  initial begin
    assert (CntW <= 32) else $fatal(1, "mxu: VMEM_AW too large");
  end
  assert property (@(posedge clk_i) disable iff (!rst_ni) cmd_valid_i |-> !busy_o)
    else $error("mxu: command issued while busy");
  assert property (@(posedge clk_i) disable iff (!rst_ni)
                   cmd_valid_i |-> (cmd_opcode_i == tpu_pkg::OP_MXU_LW || cmd_opcode_i == tpu_pkg::OP_MXU_MM))
    else $error("mxu: opcode 0x%02x is not an MXU instruction", cmd_opcode_i);
  assert property (@(posedge clk_i) disable iff (!rst_ni)
                   cmd_valid_i && cmd_opcode_i == tpu_pkg::OP_MXU_MM |-> (cmd_count_i >> CntW) == '0)
    else $error("mxu: count %0d beyond VMEM", cmd_count_i);
  // Between commands nothing may remain in the array.
  assert property (@(posedge clk_i) disable iff (!rst_ni) (state_q == StIdle) |-> !array_busy)
    else $error("mxu: rows in flight while idle");
`endif

endmodule
