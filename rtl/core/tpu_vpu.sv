// Vector unit: VADD, VMAX (second operand from VMEM, broadcast from one line, or an immediate) and
// VSPLAT. Three stages, one line per cycle: read request -> lane arithmetic on the returned lines ->
// write. Lane arithmetic is tpu_fp_pkg's fp32_add / fp32_max (docs/numerics.md).
// Busy from the cycle after cmd_valid_i until the last line is written; flush_i drops everything.
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

  typedef enum logic [1:0] {
    VopAdd   = 2'd0,
    VopMax   = 2'd1,
    VopSplat = 2'd2
  } vop_e;

  localparam int NumLanes = tpu_pkg::LANES;

  // Instruction state (stage 0: read requests).
  logic              active_q;
  vop_e              vop_q;
  logic              b_imm_q, b_bcast_q;
  logic [31:0]       left_q;
  logic [VmemAw-1:0] a_addr_q, b_addr_q, d_addr_q;
  logic [31:0]       imm_q;

  // Stage 1: read data arrives.
  logic              s1_valid_q;
  logic [VmemAw-1:0] s1_addr_q;
  // Stage 2: result to write.
  logic              s2_valid_q;
  logic [VmemAw-1:0] s2_addr_q;
  logic [tpu_pkg::LINE_W-1:0] s2_data_q;

  logic              step;
  logic              reads;
  logic [tpu_pkg::LINE_W-1:0] result;

  assign step  = active_q && (left_q != 32'd0);
  assign reads = (vop_q != VopSplat);

  assign a_rd_en_o   = step && reads;
  assign a_rd_addr_o = a_addr_q;
  assign b_rd_en_o   = step && reads && !b_imm_q;
  assign b_rd_addr_o = b_addr_q;

  always_comb begin
    for (int l = 0; l < NumLanes; l++) begin
      logic [31:0] a, b;
      a = a_rd_data_i[l*32 +: 32];
      b = b_imm_q ? imm_q : b_rd_data_i[l*32 +: 32];
      unique case (vop_q)
        VopAdd:  result[l*32 +: 32] = tpu_fp_pkg::fp32_add(a, b);
        VopMax:  result[l*32 +: 32] = tpu_fp_pkg::fp32_max(a, b);
        default: result[l*32 +: 32] = imm_q;
      endcase
    end
  end

  always_ff @(posedge clk_i) begin
    if (!rst_ni || flush_i) begin
      active_q   <= 1'b0;
      s1_valid_q <= 1'b0;
      s2_valid_q <= 1'b0;
    end else begin
      if (cmd_valid_i && !busy_o) begin
        active_q <= 1'b1;
      end else if (active_q && (left_q == 32'd0 || left_q == 32'd1)) begin
        active_q <= 1'b0;
      end
      s1_valid_q <= step;
      s2_valid_q <= s1_valid_q;
    end
  end

  always_ff @(posedge clk_i) begin
    if (cmd_valid_i && !busy_o) begin
      unique case (cmd_opcode_i)
        tpu_pkg::OP_VMAX:   vop_q <= VopMax;
        tpu_pkg::OP_VSPLAT: vop_q <= VopSplat;
        default:   vop_q <= VopAdd;
      endcase
      b_imm_q   <= (cmd_opcode_i != tpu_pkg::OP_VSPLAT) && cmd_flags_i[tpu_pkg::FLAG_VADD_SRC2_IMM];
      b_bcast_q <= cmd_flags_i[tpu_pkg::FLAG_VADD_SRC2_BCAST];
      left_q    <= cmd_count_i;
      a_addr_q  <= cmd_src1_i[VmemAw-1:0];
      b_addr_q  <= cmd_src2_i[VmemAw-1:0];
      d_addr_q  <= cmd_dst_i[VmemAw-1:0];
      imm_q     <= cmd_imm_i;
    end else if (step) begin
      left_q   <= left_q - 32'd1;
      a_addr_q <= a_addr_q + VmemAw'(1);
      if (!b_bcast_q) b_addr_q <= b_addr_q + VmemAw'(1);
      d_addr_q <= d_addr_q + VmemAw'(1);
    end
    s1_addr_q <= d_addr_q;
    s2_addr_q <= s1_addr_q;
    s2_data_q <= result;
  end

  assign wr_en_o   = s2_valid_q;
  assign wr_addr_o = s2_addr_q;
  assign wr_data_o = s2_data_q;
  assign line_o    = s2_valid_q;
  assign busy_o    = active_q || s1_valid_q || s2_valid_q;

endmodule
