// One lane of the vector unit's floating-point arithmetic (tpu_fp_pkg, docs/numerics.md): tpu_vpu has
// one per lane and selects among the results by opcode. Each operation has a process of its own that
// computes only while its enable is set: Verilator evaluates only the operation the VPU runs, and Yosys
// elaborates the lane once for every lane and core and lowers each function's decision tree on its own
// (inlined into one case over all lanes and opcodes, Yosys's proc_mux took more than two minutes per
// lane, quadratic in the size of the process). A result whose enable is clear is 0.
module tpu_vpu_lane (
  input  logic [31:0] a_i,
  input  logic [31:0] b_i,
  input  logic [2:0]  cmp_dir_i,   // cmp32's direction
  input  logic        cmp_int_i,   // cmp32 on s32
  input  logic        to_s32_i,    // convert: fp32 -> s32, else s32 -> fp32
  input  logic        add_en_i,    // add_o = a + b
  input  logic        sub_en_i,    // add_o = a - b
  input  logic        mul_en_i,
  input  logic        max_en_i,
  input  logic        min_en_i,
  input  logic        cmp_en_i,
  input  logic        cvt_en_i,
  input  logic        exp_en_i,    // the transcendentals are of a_i
  input  logic        log_en_i,
  input  logic        rsqrt_en_i,
  input  logic        rcp_en_i,
  output logic [31:0] add_o,
  output logic [31:0] mul_o,
  output logic [31:0] max_o,
  output logic [31:0] min_o,
  output logic        cmp_o,
  output logic [31:0] cvt_o,
  output logic [31:0] exp_o,
  output logic [31:0] log_o,
  output logic [31:0] rsqrt_o,
  output logic [31:0] rcp_o
);

  always_comb begin
    add_o = 32'd0;
    if (add_en_i || sub_en_i) add_o = tpu_fp_pkg::fp32_add(a_i, sub_en_i ? {~b_i[31], b_i[30:0]} : b_i);
  end
  always_comb begin
    mul_o = 32'd0;
    if (mul_en_i) mul_o = tpu_fp_pkg::fp32_mul(a_i, b_i);
  end
  always_comb begin
    max_o = 32'd0;
    if (max_en_i) max_o = tpu_fp_pkg::fp32_max(a_i, b_i);
  end
  always_comb begin
    min_o = 32'd0;
    if (min_en_i) min_o = tpu_fp_pkg::fp32_min(a_i, b_i);
  end
  always_comb begin
    cmp_o = 1'b0;
    if (cmp_en_i) cmp_o = tpu_fp_pkg::cmp32(a_i, b_i, cmp_dir_i, cmp_int_i);
  end
  always_comb begin
    cvt_o = 32'd0;
    if (cvt_en_i) cvt_o = to_s32_i ? tpu_fp_pkg::fp32_to_s32(a_i) : tpu_fp_pkg::s32_to_fp32(a_i);
  end
  always_comb begin
    exp_o = 32'd0;
    if (exp_en_i) exp_o = tpu_fp_pkg::fp32_exp(a_i);
  end
  always_comb begin
    log_o = 32'd0;
    if (log_en_i) log_o = tpu_fp_pkg::fp32_log(a_i);
  end
  always_comb begin
    rsqrt_o = 32'd0;
    if (rsqrt_en_i) rsqrt_o = tpu_fp_pkg::fp32_rsqrt(a_i);
  end
  always_comb begin
    rcp_o = 32'd0;
    if (rcp_en_i) rcp_o = tpu_fp_pkg::fp32_rcp(a_i);
  end

endmodule
