// fp32_add: combinational fp32 sum (RNE, DAZ/FTZ, canonical NaN), see tpu_fp_pkg::fp32_add.
module fp32_add (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  output logic [31:0] sum_o
);
  assign sum_o = tpu_fp_pkg::fp32_add(a_i, b_i);
endmodule
