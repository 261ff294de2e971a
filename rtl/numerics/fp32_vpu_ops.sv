// fp32_vpu_ops: the vector unit's lane operations of tpu_fp_pkg side by side (combinational), for the
// numerics bench: fp32_mul, fp32_min, cmp32 (direction dir_i, s32 when int_i), fp32_to_s32, s32_to_fp32 and the
// transcendentals fp32_exp, fp32_log, fp32_rsqrt, fp32_rcp.
module fp32_vpu_ops (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  input  logic [2:0]  dir_i,
  input  logic        int_i,
  output logic [31:0] mul_o,
  output logic [31:0] min_o,
  output logic        cmp_o,
  output logic [31:0] to_s32_o,   // of a_i
  output logic [31:0] to_f32_o,   // of a_i
  output logic [31:0] exp_o,      // of a_i
  output logic [31:0] log_o,
  output logic [31:0] rsqrt_o,
  output logic [31:0] rcp_o
);
  assign mul_o    = tpu_fp_pkg::fp32_mul(a_i, b_i);
  assign min_o    = tpu_fp_pkg::fp32_min(a_i, b_i);
  assign cmp_o    = tpu_fp_pkg::cmp32(a_i, b_i, dir_i, int_i);
  assign to_s32_o = tpu_fp_pkg::fp32_to_s32(a_i);
  assign to_f32_o = tpu_fp_pkg::s32_to_fp32(a_i);
  assign exp_o    = tpu_fp_pkg::fp32_exp(a_i);
  assign log_o    = tpu_fp_pkg::fp32_log(a_i);
  assign rsqrt_o  = tpu_fp_pkg::fp32_rsqrt(a_i);
  assign rcp_o    = tpu_fp_pkg::fp32_rcp(a_i);
endmodule
