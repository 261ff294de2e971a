`include "tpu_assert.svh"
// Vector unit: lane-wise binary ops (VADD VSUB VMUL VMAX VMIN VAND VOR VXOR VSHL VSHRL VSHRA VCMP, fp32 or s32 with INT;
// second operand from VMEM, broadcast from one line, or an immediate), VSEL, the unary VCVT, VEXP, VLOG,
// VRSQRT and VRCP, VSPLAT and the block transpose VTRANS. Three stages: read request -> lane arithmetic on the returned lines -> write.
// Streaming ops move one line per cycle. VSEL needs three source lines (mask = old destination, src1,
// src2) over two read ports, so it takes two cycles per line: phase 0 reads the mask and src2, phase 1
// reads src1. VTRANS reads the LANES rows of a block into a buffer, then writes its LANES columns.
// Lane arithmetic is tpu_fp_pkg's (docs/numerics.md). Busy from the cycle after cmd_valid_i until the
// last line is written; flush_i drops everything.
module tpu_vpu
#(
  parameter int unsigned VmemAw = $clog2(tpu_pkg::VMEM_LINES)
) (
  input  logic              clk_i,
  input  logic              rst_ni,
  input  logic              flush_i,

  input  logic              cmd_valid_i,
  input  logic [7:0]        cmd_opcode_i,
  input  logic [7:0]        cmd_flags_i,
  // The sequencer checked the VMEM ranges, so the bits above VmemAw are zero.
  // verilator lint_off UNUSEDSIGNAL
  input  logic [31:0]       cmd_dst_i,      // s[rd]
  input  logic [31:0]       cmd_src1_i,     // s[rs1]
  input  logic [31:0]       cmd_src2_i,     // s[rs2]
  // verilator lint_on UNUSEDSIGNAL
  input  logic [31:0]       cmd_count_i,    // s[rs3]
  input  logic [31:0]       cmd_imm_i,
  output logic              busy_o,
  output logic              line_o,         // pulse per line written

  output logic              a_rd_en_o,
  output logic [VmemAw-1:0] a_rd_addr_o,
  input  logic [tpu_pkg::LINE_W-1:0] a_rd_data_i,
  output logic              b_rd_en_o,
  output logic [VmemAw-1:0] b_rd_addr_o,
  input  logic [tpu_pkg::LINE_W-1:0] b_rd_data_i,
  output logic              wr_en_o,
  output logic [VmemAw-1:0] wr_addr_o,
  output logic [tpu_pkg::LINE_W-1:0] wr_data_o
);

  typedef enum logic [4:0] {
    VopAdd   = 5'd0,
    VopSub   = 5'd1,
    VopMul   = 5'd2,
    VopMax   = 5'd3,
    VopMin   = 5'd4,
    VopAnd   = 5'd5,
    VopOr    = 5'd6,
    VopXor   = 5'd7,
    VopCmp   = 5'd8,
    VopSel   = 5'd9,
    VopCvt   = 5'd10,
    VopTrans = 5'd11,
    VopSplat = 5'd12,
    VopExp   = 5'd13,
    VopLog   = 5'd14,
    VopRsqrt = 5'd15,
    VopRcp   = 5'd16,
    VopShl   = 5'd17,
    VopShrl  = 5'd18,
    VopShra  = 5'd19
  } vop_e;

  localparam int NumLanes = tpu_pkg::LANES;
  localparam int LaneAw   = (NumLanes > 1) ? $clog2(NumLanes) : 1;
  localparam logic [LaneAw-1:0] LastLane = LaneAw'(NumLanes - 1);

  // Instruction state (stage 0: read requests). left_q counts lines, or blocks for VTRANS.
  logic              active_q;
  vop_e              vop_q;
  logic              b_imm_q, b_bcast_q, int_q, to_s32_q;
  logic [2:0]        dir_q;
  logic [31:0]       left_q;
  logic [VmemAw-1:0] a_addr_q, b_addr_q, d_addr_q;
  logic [31:0]       imm_q;
  // VSEL: 0 = mask/src2 read, 1 = src1 read. VTRANS: 0 = row reads, 1 = column writes.
  logic              phase_q;
  logic [LaneAw-1:0] idx_q;   // VTRANS row or column within the block

  // Stage 1: read data arrives.
  logic              s1_valid_q;   // a line to write
  logic              s1_mask_q;    // VSEL mask and src2 arrive
  logic              s1_row_q;     // a VTRANS row arrives
  logic [LaneAw-1:0] s1_idx_q;
  logic [VmemAw-1:0] s1_addr_q;
  // VSEL operands held from phase 0; the VTRANS block buffer (row r in trans_q[r]).
  logic [tpu_pkg::LINE_W-1:0] mask_q, sel_b_q;
  logic [tpu_pkg::LINE_W-1:0] trans_q [NumLanes];
  // Stage 2: result to write.
  logic              s2_valid_q;
  logic [VmemAw-1:0] s2_addr_q;
  logic [tpu_pkg::LINE_W-1:0] s2_data_q;

  logic              step, advance, block_end;
  logic              is_sel, is_trans, streams, unary;
  logic [tpu_pkg::LINE_W-1:0] result;

  assign is_sel    = (vop_q == VopSel);
  assign is_trans  = (vop_q == VopTrans);
  assign streams   = !is_sel && !is_trans;
  assign unary     = (vop_q == VopCvt) || (vop_q == VopExp) || (vop_q == VopLog) || (vop_q == VopRsqrt) ||
                     (vop_q == VopRcp);
  assign step      = active_q && (left_q != 32'd0);
  assign block_end = phase_q && (idx_q == LastLane);
  // advance: this step finishes a line (or a VTRANS block), so left_q counts down.
  assign advance   = step && (streams || (is_sel && phase_q) || (is_trans && block_end));

  always_comb begin
    a_rd_en_o   = 1'b0;
    a_rd_addr_o = a_addr_q;
    b_rd_en_o   = 1'b0;
    b_rd_addr_o = b_addr_q;
    if (step) begin
      if (is_sel) begin
        a_rd_en_o   = 1'b1;
        a_rd_addr_o = phase_q ? a_addr_q : d_addr_q;
        b_rd_en_o   = !phase_q && !b_imm_q;
      end else if (is_trans) begin
        a_rd_en_o = !phase_q;
      end else begin
        a_rd_en_o = (vop_q != VopSplat);
        b_rd_en_o = !unary && (vop_q != VopSplat) && !b_imm_q;
      end
    end
  end

  // Stage 1 lane arithmetic, one block per lane; the floating-point operations are tpu_vpu_lane's (see
  // there why they are a module of their own).
  for (genvar l = 0; l < NumLanes; l++) begin : gen_lane
    logic [31:0] a, b, lane_result;
    logic [31:0] add_r, mul_r, max_r, min_r, cvt_r, exp_r, log_r, rsqrt_r, rcp_r;
    logic        cmp_r;
    assign a = a_rd_data_i[l*32 +: 32];
    assign b = b_imm_q ? imm_q : b_rd_data_i[l*32 +: 32];

    tpu_vpu_lane u_lane (
      .a_i        (a),
      .b_i        (b),
      .cmp_dir_i  (dir_q),
      .cmp_int_i  (int_q),
      .to_s32_i   (to_s32_q),
      .add_en_i   (vop_q == VopAdd),
      .sub_en_i   (vop_q == VopSub),
      .mul_en_i   (vop_q == VopMul),
      .max_en_i   (vop_q == VopMax),
      .min_en_i   (vop_q == VopMin),
      .cmp_en_i   (vop_q == VopCmp),
      .cvt_en_i   (vop_q == VopCvt),
      .exp_en_i   (vop_q == VopExp),
      .log_en_i   (vop_q == VopLog),
      .rsqrt_en_i (vop_q == VopRsqrt),
      .rcp_en_i   (vop_q == VopRcp),
      .add_o      (add_r),
      .mul_o      (mul_r),
      .max_o      (max_r),
      .min_o      (min_r),
      .cmp_o      (cmp_r),
      .cvt_o      (cvt_r),
      .exp_o      (exp_r),
      .log_o      (log_r),
      .rsqrt_o    (rsqrt_r),
      .rcp_o      (rcp_r)
    );

    always_comb begin
      unique case (vop_q)
        VopAdd:   lane_result = int_q ? (a + b) : add_r;
        VopSub:   lane_result = int_q ? (a - b) : add_r;
        VopMul:   lane_result = int_q ? (a * b) : mul_r;
        VopMax:   lane_result = int_q ? (($signed(a) >= $signed(b)) ? a : b) : max_r;
        VopMin:   lane_result = int_q ? (($signed(a) <= $signed(b)) ? a : b) : min_r;
        VopAnd:   lane_result = a & b;
        VopOr:    lane_result = a | b;
        VopXor:   lane_result = a ^ b;
        // Shift amounts of 32 or more shift everything out (the sign fills an arithmetic shift).
        VopShl:   lane_result = (|b[31:5]) ? 32'd0 : (a << b[4:0]);
        VopShrl:  lane_result = (|b[31:5]) ? 32'd0 : (a >> b[4:0]);
        VopShra:  lane_result = (|b[31:5]) ? {32{a[31]}} : 32'($signed(a) >>> b[4:0]);
        VopCmp:   lane_result = {31'd0, cmp_r};
        VopSel:   lane_result = (mask_q[l*32 +: 32] != 32'd0) ? a : sel_b_q[l*32 +: 32];
        VopCvt:   lane_result = cvt_r;
        VopTrans: lane_result = trans_q[l][s1_idx_q*32 +: 32];
        // Transcendentals: one combinational lane each (the library's operation sequences).
        VopExp:   lane_result = exp_r;
        VopLog:   lane_result = log_r;
        VopRsqrt: lane_result = rsqrt_r;
        VopRcp:   lane_result = rcp_r;
        default:  lane_result = imm_q;
      endcase
    end
    assign result[l*32 +: 32] = lane_result;
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni || flush_i) begin
      active_q   <= 1'b0;
      s1_valid_q <= 1'b0;
      s1_mask_q  <= 1'b0;
      s1_row_q   <= 1'b0;
      s2_valid_q <= 1'b0;
    end else begin
      if (cmd_valid_i && !busy_o) begin
        active_q <= 1'b1;
      end else if (active_q && (left_q == 32'd0 || (left_q == 32'd1 && advance))) begin
        active_q <= 1'b0;
      end
      s1_valid_q <= step && ((streams) || (is_sel && phase_q) || (is_trans && phase_q));
      s1_mask_q  <= step && is_sel && !phase_q;
      s1_row_q   <= step && is_trans && !phase_q;
      s2_valid_q <= s1_valid_q;
    end
  end

  always_ff @(posedge clk_i) begin
    if (cmd_valid_i && !busy_o) begin
      unique case (cmd_opcode_i)
        tpu_pkg::OP_VSUB:   vop_q <= VopSub;
        tpu_pkg::OP_VMUL:   vop_q <= VopMul;
        tpu_pkg::OP_VMAX:   vop_q <= VopMax;
        tpu_pkg::OP_VMIN:   vop_q <= VopMin;
        tpu_pkg::OP_VAND:   vop_q <= VopAnd;
        tpu_pkg::OP_VOR:    vop_q <= VopOr;
        tpu_pkg::OP_VXOR:   vop_q <= VopXor;
        tpu_pkg::OP_VSHL:   vop_q <= VopShl;
        tpu_pkg::OP_VSHRL:  vop_q <= VopShrl;
        tpu_pkg::OP_VSHRA:  vop_q <= VopShra;
        tpu_pkg::OP_VCMP:   vop_q <= VopCmp;
        tpu_pkg::OP_VSEL:   vop_q <= VopSel;
        tpu_pkg::OP_VCVT:   vop_q <= VopCvt;
        tpu_pkg::OP_VTRANS: vop_q <= VopTrans;
        tpu_pkg::OP_VSPLAT: vop_q <= VopSplat;
        tpu_pkg::OP_VEXP:   vop_q <= VopExp;
        tpu_pkg::OP_VLOG:   vop_q <= VopLog;
        tpu_pkg::OP_VRSQRT: vop_q <= VopRsqrt;
        tpu_pkg::OP_VRCP:   vop_q <= VopRcp;
        default:            vop_q <= VopAdd;
      endcase
      // Every binary op has SRC2_BCAST/SRC2_IMM/INT at VADD's positions; INT is ignored where undefined.
      // Only the binary ops (below VSPLAT's opcode, VCMP/VSEL and the shifts) have an immediate operand.
      b_imm_q   <= ((cmd_opcode_i < tpu_pkg::OP_VSPLAT) || (cmd_opcode_i == tpu_pkg::OP_VCMP) ||
                    (cmd_opcode_i == tpu_pkg::OP_VSEL) || (cmd_opcode_i == tpu_pkg::OP_VSHL) ||
                    (cmd_opcode_i == tpu_pkg::OP_VSHRL) || (cmd_opcode_i == tpu_pkg::OP_VSHRA)) &&
                   cmd_flags_i[tpu_pkg::FLAG_VADD_SRC2_IMM];
      b_bcast_q <= cmd_flags_i[tpu_pkg::FLAG_VADD_SRC2_BCAST];
      int_q     <= cmd_flags_i[tpu_pkg::FLAG_VADD_INT];
      to_s32_q  <= cmd_flags_i[tpu_pkg::FLAG_VCVT_F32_TO_S32];
      dir_q     <= cmd_flags_i[tpu_pkg::FLAG_VCMP_DIR_LSB +: 3];
      left_q    <= cmd_count_i;
      a_addr_q  <= cmd_src1_i[VmemAw-1:0];
      b_addr_q  <= cmd_src2_i[VmemAw-1:0];
      d_addr_q  <= cmd_dst_i[VmemAw-1:0];
      imm_q     <= cmd_imm_i;
      phase_q   <= 1'b0;
      idx_q     <= '0;
    end else if (step) begin
      if (is_trans) begin
        // Rows: advance the source; columns: advance the destination; a block ends after both.
        idx_q <= (idx_q == LastLane) ? '0 : idx_q + LaneAw'(1);
        if (idx_q == LastLane) phase_q <= !phase_q;
        if (!phase_q) a_addr_q <= a_addr_q + VmemAw'(1);
        else          d_addr_q <= d_addr_q + VmemAw'(1);
      end else if (is_sel && !phase_q) begin
        phase_q <= 1'b1;
      end else begin
        phase_q  <= 1'b0;
        a_addr_q <= a_addr_q + VmemAw'(1);
        if (!b_bcast_q) b_addr_q <= b_addr_q + VmemAw'(1);
        d_addr_q <= d_addr_q + VmemAw'(1);
      end
      if (advance) left_q <= left_q - 32'd1;
    end
    s1_addr_q <= d_addr_q;
    s1_idx_q  <= idx_q;
    s2_addr_q <= s1_addr_q;
    s2_data_q <= result;
    if (s1_mask_q) begin
      mask_q <= a_rd_data_i;
      for (int l = 0; l < NumLanes; l++) sel_b_q[l*32 +: 32] <= b_imm_q ? imm_q : b_rd_data_i[l*32 +: 32];
    end
    if (s1_row_q) trans_q[s1_idx_q] <= a_rd_data_i;
  end

  assign wr_en_o   = s2_valid_q;
  assign wr_addr_o = s2_addr_q;
  assign wr_data_o = s2_data_q;
  assign line_o    = s2_valid_q;
  assign busy_o    = active_q || s1_valid_q || s1_mask_q || s1_row_q || s2_valid_q;

  // The VPU has no ready: the sequencer issues only while it is idle (a command then would be lost).
  `TPU_ASSERT(CommandOnlyWhenIdle, !(cmd_valid_i && busy_o), clk_i, rst_ni && !flush_i)

endmodule
