// A reshape (or bitcast) between a column, every element in a row of its own ([N,1], [...,1]), and a
// row, one device row ([N] or [1,...,N]), moves elements between rows and lanes of the device layout
// (rows = product of the non-minor dimensions, the minor dimension on lanes). In the entry computation
// it becomes a transpose of [N,1] or [1,N] between two reshapes that keep the layout:
//   f32[8] reshape(f32[8,1] x)  ->  f32[8] reshape(f32[1,8] transpose(f32[8,1] reshape(x)))
// Reshapes of constants are left to constant folding.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class ReshapeThroughTranspose : public HloPass {
 public:
  std::string_view name() const override { return "reshape-through-transpose"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
