// Rewrites a copy of a module into the form the code generator lowers, without touching the caller's
// module (the IR passes own the real simplifications; this is what codegen cannot do without):
//  - call instructions are inlined into the entry computation (nested calls too);
//  - rank-2 dots read transposed operands directly (the contracting dimension flips) and a lhs that
//    contracts its dimension 0 is transposed explicitly;
//  - reductions over the minor dimension go through a transpose (see ReduceOverMinorThroughTranspose);
//  - reshapes between a column ([N,1]) and a row ([N]) layout go through a transpose;
//  - every value that does not depend on a parameter (iota, broadcasts and compares of constants, ...) is
//    evaluated at compile time with the interpreter and becomes a constant, so that the device reads it
//    from a kConstant region. Scalar f32 constants and their broadcasts stay as they are: codegen folds
//    them into instruction immediates or splats.
#pragma once

#include <memory>

#include "compiler/hlo/hlo_ir.h"
#include "sw/base/status.h"

namespace tpu::compiler {

struct PrepareStats {
  int inlined_calls = 0;
  int folded_constants = 0;
  int canonicalized_dots = 0;
  int rewritten_reductions = 0;
  int rewritten_reshapes = 0;
};

StatusOr<std::unique_ptr<hlo::HloModule>> PrepareForCodegen(const hlo::HloModule& module,
                                                            PrepareStats* stats = nullptr);

}  // namespace tpu::compiler
