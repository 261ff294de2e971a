// argmax and argmin as jnp.argmax / jnp.argmin write them -- a reduce of (values, their index along the
// reduced dimensions) with a comparator that keeps the larger (smaller) value, NaN first, and the lower
// index on ties -- become single-operand reductions the code generator lowers:
//   m       = max (min) of the values
//   nan     = or of (x != x)
//   index   = nan ? min of (x != x ? i : INT_MAX) : min of (x == m ? i : INT_MAX)
//   value   = nan ? NaN : m
// The comparator is recognized by what it computes (it is evaluated on probe pairs: larger, smaller,
// equal values, NaN on either side), not by its instructions. The indices must be the position along the
// reduced dimension (an iota, or a constant equal to one) and the init values (-inf or +inf, 0). f32 values,
// s32 indices; exact. s32 values (jnp.argmax of integers: init INT_MIN or INT_MAX, no NaN) take the same
// rewrite without the NaN part.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class ArgReductions : public HloPass {
 public:
  std::string_view name() const override { return "arg-reductions"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
