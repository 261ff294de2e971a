`include "tpu_assert.svh"
// Synchronous FIFO with a registered storage array and combinational head (first-word fall-through).
// flush_i empties it. Pushing while full or popping while empty is a caller bug (asserted).
module tpu_fifo #(
  parameter int unsigned Width = 32,
  parameter int unsigned Depth = 4,
  parameter int unsigned Aw    = (Depth > 1) ? $clog2(Depth) : 1
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             flush_i,
  input  logic             push_i,
  input  logic [Width-1:0] push_data_i,
  input  logic             pop_i,
  output logic [Width-1:0] head_o,
  output logic             empty_o,
  output logic             full_o,
  output logic [Aw:0]      count_o
);

  logic [Width-1:0] mem_q [Depth];
  logic [Aw-1:0]    rptr_q, wptr_q;
  logic [Aw:0]      count_q;

  function automatic logic [Aw-1:0] next_ptr(logic [Aw-1:0] ptr);
    next_ptr = ((ptr == Aw'(Depth - 1)) ? '0 : ptr + Aw'(1));
  endfunction

  always_ff @(posedge clk_i) begin
    if (!rst_ni || flush_i) begin
      rptr_q  <= '0;
      wptr_q  <= '0;
      count_q <= '0;
    end else begin
      if (push_i) wptr_q <= next_ptr(wptr_q);
      if (pop_i)  rptr_q <= next_ptr(rptr_q);
      count_q <= count_q + (Aw+1)'(push_i) - (Aw+1)'(pop_i);
    end
  end

  always_ff @(posedge clk_i) begin
    if (push_i) mem_q[wptr_q] <= push_data_i;
  end

  assign head_o  = mem_q[rptr_q];
  assign empty_o = (count_q == '0);
  assign full_o  = (count_q == (Aw+1)'(Depth));
  assign count_o = count_q;

  // The users look at full_o and empty_o first (a flush empties the FIFO whatever is pushed or popped).
  `TPU_ASSERT(NoPushIntoFull, !(push_i && full_o && !pop_i), clk_i, rst_ni && !flush_i)
  `TPU_ASSERT(NoPopFromEmpty, !(pop_i && empty_o), clk_i, rst_ni && !flush_i)
  `TPU_ASSERT(CountInRange, count_q <= (Aw+1)'(Depth))

endmodule
