// Formal properties of tpu_req_slice (rtl/core/tpu_req_slice.sv), checked by tb/formal/run_bmc.sh:
// bounded model checking from reset, then k-induction (the slice's whole state, its valid bit and its
// data, is visible at its outputs, so no internal probe is needed).
//
// The producer side is free: the slice must keep a taken request even when the producer withdraws or
// changes its own (a master aborted by soft reset), so nothing is assumed about in_valid_i or in_data_i.
// The consumer's out_ready_i is free too; reset may come back at any time.
//
// Mutations (run_bmc.sh --mutate; each one must make a property fail):
//   MUTATE_SLICE_LOSE  the slice sees out_ready high in a cycle the consumer did not take the request
//   MUTATE_SLICE_DUP   the slice sees out_ready low in a cycle the consumer took the request
module tpu_req_slice_props #(
  parameter int unsigned Width = 4
) (
  input logic             clk_i,
  input logic             rst_ni,
  input logic             in_valid_i,
  input logic [Width-1:0] in_data_i,
  input logic             out_ready_i,
  input logic             glitch_i     // when a mutation injects its fault (free)
);

  logic             in_ready, out_valid;
  logic [Width-1:0] out_data;

  // The consumer's ready as the slice sees it: the same, unless a mutation corrupts it.
  logic dut_out_ready;
`ifdef MUTATE_SLICE_LOSE
  assign dut_out_ready = out_ready_i || glitch_i;
`elsif MUTATE_SLICE_DUP
  assign dut_out_ready = out_ready_i && !glitch_i;
`else
  assign dut_out_ready = out_ready_i;
`endif

  tpu_req_slice #(
    .Width (Width)
  ) u_slice (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .in_valid_i  (in_valid_i),
    .in_ready_o  (in_ready),
    .in_data_i   (in_data_i),
    .out_valid_o (out_valid),
    .out_ready_i (dut_out_ready),
    .out_data_o  (out_data)
  );

  initial assume (!rst_ni);

  // The first cycle is the reset cycle: nothing is checked in it.
  logic past_valid_q = 1'b0;
  always_ff @(posedge clk_i) past_valid_q <= 1'b1;

  // Transfers as the two sides see them.
  logic in_fire, out_fire;
  assign in_fire  = in_valid_i && in_ready;
  assign out_fire = out_valid && out_ready_i;

  // Requests taken from the producer and not yet taken by the consumer, since the last reset.
  logic [1:0] held_q;
  always_ff @(posedge clk_i) begin
    if (!rst_ni) held_q <= '0;
    else         held_q <= held_q + 2'(in_fire) - 2'(out_fire);
  end

  always_comb begin
    if (past_valid_q) begin
      // No loss, no duplication: at most one request inside, and the slice presents one exactly when
      // it holds one (a request taken twice, or a request presented that nobody gave, breaks this).
      p_at_most_one:    assert (held_q <= 2'd1);
      p_valid_iff_held: assert (out_valid == (held_q == 2'd1));
      // Full throughput: an empty slice takes a request, and so does a full one whose request leaves.
      p_ready_when_free: assert (!(!out_valid || out_ready_i) || in_ready);
    end
  end

  always_ff @(posedge clk_i) begin
    if (past_valid_q) begin
      // Reset empties it.
      if ($past(!rst_ni)) begin
        p_reset_empties: assert (!out_valid);
      end
      // A request presented and not taken is presented again, unchanged (the rule its consumers
      // rely on; tpu_req_slice states it with TPU_ASSERT_STABLE, compiled out here, see README).
      if ($past(rst_ni && out_valid && !out_ready_i)) begin
        p_out_held: assert (out_valid && out_data == $past(out_data));
      end
      // A request taken is the one presented next, with the producer's data.
      if ($past(rst_ni && in_fire)) begin
        p_in_to_out: assert (out_valid && out_data == $past(in_data_i));
      end
    end
  end

  // Reachability: back-to-back transfers, a stall, and a producer that withdraws while the slice
  // holds its request.
  always_comb begin
    if (past_valid_q) begin
      c_back_to_back: cover (rst_ni && in_fire && out_fire);
      c_stall:        cover (rst_ni && out_valid && !out_ready_i && in_valid_i && !in_ready);
    end
  end
  always_ff @(posedge clk_i) begin
    if (past_valid_q) begin
      c_withdrawn: cover ($past(rst_ni && in_fire) && rst_ni && out_valid && !in_valid_i);
    end
  end

endmodule
