// Assertion macros of the RTL (the way lowRISC's prim_assert does it): immediate assertions sampled at
// each rising clock edge out of reset, compiled only where SYNTHESIS is not defined (Yosys defines it;
// every verilated test builds with --assert, which turns them on). A failing one reports, through
// $error, the time, the block (%m ends in the assertion's name) and what failed; the harness turns that
// into a test failure.
`ifndef TPU_ASSERT_SVH
`define TPU_ASSERT_SVH

`ifdef SYNTHESIS

`define TPU_ASSERT(__name, __cond, __clk = clk_i, __rst_n = rst_ni)
`define TPU_ASSERT_STABLE(__name, __valid, __ready, __data, __clk = clk_i, __rst_n = rst_ni)

`else

// __cond holds at every rising edge of __clk while __rst_n is high.
`define TPU_ASSERT(__name, __cond, __clk = clk_i, __rst_n = rst_ni) \
  always_ff @(posedge __clk) begin : __name \
    if (__rst_n) begin \
      assert (__cond) else $error("[%0t] %m: %s does not hold", $time, `"__cond`"); \
    end \
  end

// A valid/ready channel: a request presented and not taken (__valid && !__ready) is presented again in
// the next cycle with the same __data. __rst_n low (a reset, or a flush that may withdraw it) forgets it.
`define TPU_ASSERT_STABLE(__name, __valid, __ready, __data, __clk = clk_i, __rst_n = rst_ni) \
  logic __name``_held_q; \
  logic [$bits(__data)-1:0] __name``_data_q; \
  always_ff @(posedge __clk) begin : __name \
    if (!(__rst_n)) begin \
      __name``_held_q <= 1'b0; \
    end else begin \
      if (__name``_held_q) begin \
        assert ((__valid) && ((__data) == __name``_data_q)) \
          else $error("[%0t] %m: %s withdrawn or changed before %s", $time, `"__valid`", `"__ready`"); \
      end \
      __name``_held_q <= (__valid) && !(__ready); \
      __name``_data_q <= (__data); \
    end \
  end

`endif

`endif  // TPU_ASSERT_SVH
