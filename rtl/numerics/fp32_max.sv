// fp32_max: combinational fp32 maximum (DAZ, canonical NaN, max(-0, +0) = +0), see tpu_fp_pkg::fp32_max.
module fp32_max (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] max_o
);
  assign max_o = tpu_fp_pkg::fp32_max(a_i, b_i);
endmodule
