// Algebraic simplification: local rewrites that remove work without changing any value.
//   add(x, 0), add(0, x), subtract(x, 0)          -> x      (0: a zero constant or broadcast of one)
//   multiply(x, 1), multiply(1, x), divide(x, 1)  -> x
//   negate(negate(x))                             -> x
//   convert(x) to x's own element type, copy(x)   -> x
//   reshape(x) to x's own dimensions              -> x
//   reshape(reshape(x))                           -> reshape(x)
//   transpose(transpose(x))                       -> transpose(x) with the composed permutation, or x
//   transpose(x) with the identity permutation    -> x
//   broadcast(x) to x's own shape, dimensions {0..n-1} -> x
//   slice(x) covering all of x with stride 1      -> x
//   concatenate(x), reverse(x) dimensions={}, pad(x, v) with no padding -> x
//   select(true, a, b) -> a, select(false, a, b) -> b, select(p, a, a) -> a (constant predicates)
// A broadcast of a scalar constant is left as it is: codegen lowers it to an immediate operand.
// x + 0 -> x is exact except that -0 + 0 is +0; the rewritten module keeps the -0 (XLA does the same).
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class AlgebraicSimplifier : public HloPass {
 public:
  std::string_view name() const override { return "algebraic-simplifier"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
