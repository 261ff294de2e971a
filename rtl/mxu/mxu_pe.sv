// One processing element of the MXU as a standalone module, for synthesis figures (make synth):
// the per-cell state and logic of mxu_array (which computes its N x N cells as loops over state
// arrays for simulation speed, with the same tpu_fp_pkg functions): the weights of both banks, the
// activation passed to the right, and the partial sum passed down,
// psum_o = fp32_add(psum_i, bf16_mul(act_i, w[bank_i])).
module mxu_pe (
  input  logic        clk_i,
  input  logic        rst_ni,     // synchronous, active low: both weights to +0
  input  logic        w_load_i,   // write w_i into bank w_bank_i
  input  logic        w_bank_i,
  input  logic [15:0] w_i,        // bf16
  input  logic        valid_i,    // a row passes this cell this cycle
  input  logic        bank_i,     // the bank of that row
  input  logic [15:0] act_i,      // bf16 activation from the left
  input  logic [31:0] psum_i,     // fp32 partial sum from above
  output logic [15:0] act_o,      // to the right, one cycle later
  output logic [31:0] psum_o      // down, one cycle later
);
  logic [15:0] w0_q, w1_q, act_q;
  logic [31:0] psum_q;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      w0_q <= '0;
      w1_q <= '0;
    end else if (w_load_i) begin
      if (w_bank_i) w1_q <= w_i;
      else          w0_q <= w_i;
    end
    if (valid_i) begin
      act_q  <= act_i;
      psum_q <= tpu_fp_pkg::fp32_add(psum_i, tpu_fp_pkg::bf16_mul(act_i, bank_i ? w1_q : w0_q));
    end
  end

  assign act_o  = act_q;
  assign psum_o = psum_q;

endmodule
