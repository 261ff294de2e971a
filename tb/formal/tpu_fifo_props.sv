// Formal properties of tpu_fifo (rtl/core/tpu_fifo.sv), checked by tb/formal/run_bmc.sh with
// yosys-smtbmc: bounded model checking from reset, then k-induction, which makes them hold in every
// reachable state.
//
// The FIFO is three entries deep: not a power of two, so the pointers wrap through next_ptr's compare
// rather than by overflowing, and small enough for the solver. Every input is free except for the
// caller's two rules that tpu_fifo asserts itself (no push into a full FIFO without a pop in the same
// cycle, no pop from an empty one); reset may come back at any time, flush_i at any time.
//
// Order is checked the usual way: the solver picks any one pushed element (tag_i high at its push);
// the wrapper remembers its data and how many elements were ahead of it, counts them down on every pop,
// and requires the element at the head exactly when none is left ahead of it. Since any element may be
// the tagged one, every element leaves in order and unchanged.
//
// Mutations (run_bmc.sh --mutate; each one must make a property fail):
//   MUTATE_FIFO_OVERFLOW  drops the rule against pushing into a full FIFO
//   MUTATE_FIFO_DROP      the FIFO sees an extra pop the reader never made (an element is lost)
//   MUTATE_FIFO_CORRUPT   one bit of the data flips on its way into the FIFO when it holds two elements
module tpu_fifo_props #(
  parameter int unsigned Width = 4
) (
  input logic             clk_i,
  input logic             rst_ni,
  input logic             flush_i,
  input logic             push_i,
  input logic [Width-1:0] push_data_i,
  input logic             pop_i,
  input logic             tag_i,       // the element pushed in this cycle is the tracked one
  input logic             glitch_i     // when a mutation injects its fault (free)
);

  // Fixed rather than a parameter: the induction probes below name each entry of the storage.
  localparam int unsigned Depth = 3;
  localparam int unsigned Aw    = 2;  // tpu_fifo's derived pointer width for Depth = 3

  logic [Width-1:0] head;
  logic             empty, full;
  logic [Aw:0]      count;

  // The signals the FIFO sees: the caller's, unless a mutation injects a fault between them.
  logic             dut_pop;
  logic [Width-1:0] dut_push_data;
`ifdef MUTATE_FIFO_DROP
  assign dut_pop = pop_i || (glitch_i && count == (Aw+1)'(2));
`else
  assign dut_pop = pop_i;
`endif
`ifdef MUTATE_FIFO_CORRUPT
  assign dut_push_data = push_data_i ^ Width'(glitch_i && count == (Aw+1)'(2));
`else
  assign dut_push_data = push_data_i;
`endif

  tpu_fifo #(
    .Width (Width),
    .Depth (Depth)
  ) u_fifo (
    .clk_i       (clk_i),
    .rst_ni      (rst_ni),
    .flush_i     (flush_i),
    .push_i      (push_i),
    .push_data_i (dut_push_data),
    .pop_i       (dut_pop),
    .head_o      (head),
    .empty_o     (empty),
    .full_o      (full),
    .count_o     (count)
  );

  // ---------------------------------------------------------------------------------------------
  // Environment: reset in the first cycle; the caller's rules while the FIFO is out of reset and
  // not being flushed (a push or pop in a reset or flush cycle has no effect on the FIFO's state).
  initial assume (!rst_ni);

  logic active;
  assign active = rst_ni && !flush_i;

  always_comb begin
    if (active) begin
`ifndef MUTATE_FIFO_OVERFLOW
      a_no_push_when_full: assume (!(push_i && full && !pop_i));
`endif
      a_no_pop_when_empty: assume (!(pop_i && empty));
    end
  end

  // The first cycle is the reset cycle: nothing is checked in it (the state before it is arbitrary).
  logic past_valid_q = 1'b0;
  always_ff @(posedge clk_i) past_valid_q <= 1'b1;

  // ---------------------------------------------------------------------------------------------
  // Reference: how many elements the FIFO holds, counted from the caller's pushes and pops.
  logic [Aw:0] model_count_q;
  always_ff @(posedge clk_i) begin
    if (!active) begin
      model_count_q <= '0;
    end else begin
      model_count_q <= model_count_q + (Aw+1)'(push_i) - (Aw+1)'(pop_i);
    end
  end

  // The tracked element: its data and the number of elements ahead of it.
  logic             tag_busy_q;
  logic [Width-1:0] tag_data_q;
  logic [Aw:0]      tag_ahead_q;
  logic             tag_leaves;  // popped in this cycle
  assign tag_leaves = active && tag_busy_q && pop_i && tag_ahead_q == '0;

  always_ff @(posedge clk_i) begin
    if (!active) begin
      tag_busy_q <= 1'b0;
    end else if (tag_busy_q) begin
      if (tag_leaves) tag_busy_q <= 1'b0;
      else if (pop_i) tag_ahead_q <= tag_ahead_q - 1'b1;
    end else if (push_i && tag_i) begin
      tag_busy_q  <= 1'b1;
      tag_data_q  <= push_data_i;
      tag_ahead_q <= model_count_q - (Aw+1)'(pop_i);
    end
  end

  // ---------------------------------------------------------------------------------------------
  // Properties.
  always_comb begin
    if (past_valid_q) begin
      // Occupancy: never above Depth (no overflow) and never wrapped below zero (no underflow), and
      // exactly the caller's pushes minus pops since the last reset or flush.
      p_count_in_range: assert (count <= (Aw+1)'(Depth));
      p_count_matches:  assert (count == model_count_q);
      // The flags follow the caller's count.
      p_empty_flag:     assert (empty == (model_count_q == '0));
      p_full_flag:      assert (full == (model_count_q == (Aw+1)'(Depth)));
      // The tracked element is still inside, and it is the head as soon as nothing is ahead of it
      // (first-word fall-through: the head is valid in the cycle it is first).
      if (tag_busy_q) begin
        p_tag_inside:   assert (tag_ahead_q < count);
        if (tag_ahead_q == '0) begin
          p_tag_at_head: assert (head == tag_data_q);
        end
      end
    end
  end

  // The head does not change while it is not popped (a push never disturbs it).
  always_ff @(posedge clk_i) begin
    if (past_valid_q && $past(active && !pop_i && !empty)) begin
      p_head_stable: assert (head == $past(head));
    end
  end

  // ---------------------------------------------------------------------------------------------
  // Induction probes: the FIFO's pointers and storage, joined to its internal registers when the
  // design is flattened (Yosys's hierconn; run_bmc.sh fails if one is left without a driver). With
  // these invariants every state the induction step may start from is one the FIFO can reach.
  (* hierconn *) logic [Aw-1:0]    \u_fifo.rptr_q ;
  (* hierconn *) logic [Aw-1:0]    \u_fifo.wptr_q ;
  (* hierconn *) logic [Width-1:0] \u_fifo.mem_q[0] ;
  (* hierconn *) logic [Width-1:0] \u_fifo.mem_q[1] ;
  (* hierconn *) logic [Width-1:0] \u_fifo.mem_q[2] ;

  logic [Width-1:0] entry [Depth];
  assign entry[0] = \u_fifo.mem_q[0] ;
  assign entry[1] = \u_fifo.mem_q[1] ;
  assign entry[2] = \u_fifo.mem_q[2] ;

  // (a + b) mod Depth for a < Depth, b <= Depth.
  function automatic logic [Aw-1:0] wrap(logic [Aw-1:0] a, logic [Aw:0] b);
    logic [Aw+1:0] sum;
    sum  = {2'b00, a} + {1'b0, b};
    wrap = (sum >= (Aw+2)'(Depth)) ? Aw'(sum - (Aw+2)'(Depth)) : Aw'(sum);
  endfunction

  always_comb begin
    if (past_valid_q) begin
      i_ptrs_in_range: assert (\u_fifo.rptr_q  < Aw'(Depth) && \u_fifo.wptr_q  < Aw'(Depth));
      i_ptrs_apart:    assert (\u_fifo.wptr_q  == wrap(\u_fifo.rptr_q , count));
      if (tag_busy_q) begin
        i_tag_stored:  assert (entry[wrap(\u_fifo.rptr_q , tag_ahead_q)] == tag_data_q);
      end
    end
  end

  // Reachability: the properties above are not vacuous (run_bmc.sh requires every cover).
  always_comb begin
    if (past_valid_q) begin
      c_full:            cover (full);
      c_push_pop_full:   cover (active && full && push_i && pop_i);
      c_tag_leaves_last: cover (tag_leaves && \u_fifo.rptr_q  == Aw'(Depth - 1));  // rptr wraps
      c_flush_full:      cover (flush_i && rst_ni && full);
    end
  end

endmodule
