// Rewrites a copy of a module into the form the code generator lowers, without touching the caller's
// module (the IR passes own the real simplifications; this is what codegen cannot do without). A
// pipeline of passes (compiler/passes), in this order:
//   inline-calls-and-fusions        calls and fusions inlined into the entry computation
//   unshare-computations            a condition, body or branch two loops or conditionals call is copied
//   bf16-normalization              bf16 arithmetic in f32, rounded back to bf16 (as XLA)
//   expand-tuples                   tuple-shaped roots, loop states and branch inputs into tuple instructions
//   topk-rewrite                    sort + slice top-k patterns into rounds of max/min reductions
//   convolution-lowering            convolutions into dots per kernel tap and VPU multiply-adds
//                                   (depthwise ones kept for depthwise.cc)
//   matrix-dots                     batched dots, dots of rank 3 and more or of several contracting
//                                   dimensions into rank-2 dots (one per batch index)
//   one-hot-gathers                 gathers and scatters of one element along a dimension (take_along_axis)
//                                   into selections against an iota and a max-reduce
//   arg-reductions                  argmax/argmin (variadic reduce of values and positions) into max/min
//                                   and first-index reductions
//   codegen-legalization            reductions and transposes into the forms codegen takes
//   canonicalize-dots               rank-2 dots read transposed operands directly; a lhs contracting its
//                                   dimension 0 is transposed explicitly
//   flatten-rows-through-columns    [R,C] -> [R*C] reshapes through stacked columns
//   reshape-through-transpose       reshapes between a column ([N,1]) and a row ([N]) through a transpose
//   reduce-minor-through-transpose  reductions over the minor dimension through a transpose
//   fold-parameter-independent      every value that does not depend on a parameter becomes a constant
//                                   the device reads from a kConstant region (not scalar f32 constants
//                                   and their broadcasts: codegen folds them into immediates or splats)
//   split-dots                      f32 dots into the bf16 MXU passes their precision asks for (or
//                                   dot_passes)
//   elementwise-fusion              chains of f32 elementwise work into loop fusions that run as one VPU
//                                   loop (loop_fusion.h; PrepareOptions::fuse_elementwise)
//   dce                             what the rewrites left unused
// Top-k and convolutions are rewritten here, not in the default pipeline, because codegen cannot lower
// their originals while the interpreter and other consumers of the default pipeline keep them.
#pragma once

#include <memory>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/split_dots.h"
#include "sw/base/status.h"

namespace tpu::compiler {

struct PrepareOptions {
  // MXU passes per f32 dot (compiler/passes/split_dots.h): each dot's operand_precision (DEFAULT one
  // pass, HIGH three, HIGHEST six), or a count forced on every dot, optionally only on those whose values
  // reach a compare, an exp or a log.
  SplitDotsOptions dots;
  // Lanes of the target configuration (CompileOptions::lanes). Rows that legalization moves onto lanes
  // through a transpose are padded to a multiple of it (compiler/passes/codegen_legalization.h). 128
  // suits every configuration (each lane count divides it) but pads 16x the rows needed on 8 lanes.
  int lanes = 128;
  // Loop fusions of elementwise chains (loop_fusion.h); off: every instruction its own loop.
  bool fuse_elementwise = true;
  // Called after each pass with the module as it is then (may be empty), e.g. to dump it.
  PassPipeline::AfterPassHook after_pass;
};

// Adds the preparation passes to `pipeline`, in the order PrepareForCodegen runs them.
Status AddPrepareForCodegenPasses(PassPipeline* pipeline, const PrepareOptions& options);

StatusOr<std::unique_ptr<hlo::HloModule>> PrepareForCodegen(const hlo::HloModule& module,
                                                            const PrepareOptions& options = {});

}  // namespace tpu::compiler
