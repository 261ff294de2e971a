`include "tpu_assert.svh"

// Register slice for a valid/ready request channel: one entry, full throughput (a new request is taken
// in the cycle the held one leaves). Its output obeys the rule that a presented request stays presented,
// unchanged, until accepted, even when the master behind it withdraws (a unit aborted by soft reset):
// what the slice took is a committed request.
module tpu_req_slice #(
  parameter int unsigned Width = 32
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             in_valid_i,
  output logic             in_ready_o,
  input  logic [Width-1:0] in_data_i,
  output logic             out_valid_o,
  input  logic             out_ready_i,
  output logic [Width-1:0] out_data_o
);

  logic             valid_q;
  logic [Width-1:0] data_q;

  assign in_ready_o = !valid_q || out_ready_i;

  always_ff @(posedge clk_i) begin
    if (!rst_ni) begin
      valid_q <= 1'b0;
    end else if (in_ready_o) begin
      valid_q <= in_valid_i;
    end
  end

  always_ff @(posedge clk_i) begin
    if (in_valid_i && in_ready_o) data_q <= in_data_i;
  end

  assign out_valid_o = valid_q;
  assign out_data_o  = data_q;

  `TPU_ASSERT_STABLE(OutHeld, out_valid_o, out_ready_i, out_data_o)

endmodule
