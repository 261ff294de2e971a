// bf16_mul: combinational bf16 x bf16 -> fp32 product (exact, DAZ/FTZ), see tpu_fp_pkg::bf16_mul.
module bf16_mul (
  input  logic [15:0] a_i,
  input  logic [15:0] b_i,
  output logic [31:0] p_o
);
  assign p_o = tpu_fp_pkg::bf16_mul(a_i, b_i);
endmodule
