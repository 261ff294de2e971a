// fp32_to_bf16: combinational fp32 -> bf16 conversion (RNE, DAZ, canonical NaN), see
// tpu_fp_pkg::fp32_to_bf16.
module fp32_to_bf16 (
  input  logic [31:0] a_i,
  output logic [15:0] bf16_o
);
  assign bf16_o = tpu_fp_pkg::fp32_to_bf16(a_i);
endmodule
