// reduce-window and select-and-scatter whose window touches the minor dimension (1-D pooling of [N,W]
// over W, pooling of NCHW images) become a transpose that puts a dimension without a window last, the
// same pooling over the transposed operand, and the transpose back: codegen pools only over the
// dimensions before the minor one (compiler/codegen/pool.cc, the minor dimension lies on the lanes).
// The permutation keeps the other dimensions in their order, so the windowed dimensions keep theirs and
// every output takes its taps in the same order (the interpreter's row-major window order): exact. The
// dimension moved last is the last one whose window is trivial (size and stride 1, no padding or
// dilation); when every dimension has a window (1-D pooling of [W]) a unit dimension is appended by a
// reshape and takes that place. select-and-scatter transposes its operand and source alike (the
// contributions an element receives come from windows that differ only in windowed dimensions, in the same
// order). Single-operand reduce-window only.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class PoolMinorThroughTranspose : public HloPass {
 public:
  std::string_view name() const override { return "pool-minor-through-transpose"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
