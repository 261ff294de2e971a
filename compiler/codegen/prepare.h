// Rewrites a copy of a module into the form the code generator lowers, without touching the caller's
// module (the IR passes own the real simplifications; this is what codegen cannot do without):
//  - call and fusion instructions are inlined into the entry computation (nested ones too);
//  - sort + slice top-k patterns become rounds of max/min reductions (compiler/passes/topk_rewrite.h)
//    and convolutions become dots per kernel tap and VPU multiply-adds
//    (compiler/passes/convolution_lowering.h): both run here because codegen cannot lower their
//    originals, while the interpreter and other consumers of the default pipeline keep them;
//  - rank-2 dots read transposed operands directly (the contracting dimension flips) and a lhs that
//    contracts its dimension 0 is transposed explicitly;
//  - reductions over the minor dimension go through a transpose (see ReduceOverMinorThroughTranspose);
//  - reshapes between a column ([N,1]) and a row ([N]) layout go through a transpose;
//  - f32 dots are split into three bf16 passes where it matters (PrepareOptions::dot_passes);
//  - every value that does not depend on a parameter (iota, broadcasts and compares of constants, ...) is
//    evaluated at compile time with the interpreter and becomes a constant, so that the device reads it
//    from a kConstant region. Scalar f32 constants and their broadcasts stay as they are: codegen folds
//    them into instruction immediates or splats.
#pragma once

#include <memory>

#include "compiler/hlo/hlo_ir.h"
#include "sw/base/status.h"

namespace tpu::compiler {

struct PrepareOptions {
  // MXU passes per f32 dot: 1 rounds both operands to bf16 (the MXU's own precision); 3 splits each
  // operand into bf16 high and low parts and sums hi*hi + hi*lo + lo*hi (about 16 significant bits);
  // 0 uses 3 passes for the dots whose values reach a compare, where the bf16 rounding could flip a
  // decision (a ReLU mask), or an exp or log, which amplify it, and 1 pass elsewhere.
  int dot_passes = 0;
  // Lanes of the target configuration (CompileOptions::lanes). Rows that legalization moves onto lanes
  // through a transpose are padded to a multiple of it (compiler/passes/codegen_legalization.h). 128
  // suits every configuration (each lane count divides it) but pads 16x the rows needed on 8 lanes.
  int lanes = 128;
};

struct PrepareStats {
  int inlined_calls = 0;
  int folded_constants = 0;
  int canonicalized_dots = 0;
  int rewritten_reductions = 0;
  int rewritten_reshapes = 0;
  int split_dots = 0;
  int rewritten_topks = 0;       // modules whose top-k sorts were rewritten (compiler/passes/topk_rewrite.h)
  int lowered_convolutions = 0;  // modules whose convolutions were lowered (compiler/passes/convolution_lowering.h)
};

StatusOr<std::unique_ptr<hlo::HloModule>> PrepareForCodegen(const hlo::HloModule& module,
                                                            PrepareStats* stats = nullptr,
                                                            const PrepareOptions& options = {});

}  // namespace tpu::compiler
