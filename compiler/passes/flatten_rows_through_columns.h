// A reshape that flattens a few rows, x[R,C] -> [R*C] (the top-k match matrix of a classifier), moves
// elements between lanes, which the device layout (rows x minor dimension on lanes) cannot do in place.
// In the entry computation it becomes: each row a column (slice + transpose), the columns stacked
// (concatenate) into [R*C,1], reshaped to [R*C]; reshape-through-transpose (reshape_through_transpose.h,
// run after this pass) then turns that column into the row. Only for 1 < R <= 64, where the slices stay
// few, and C > 1 not a multiple of 128 (rows of whole lines keep their layout on every configuration).
// Reshapes of constants are left to constant folding.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class FlattenRowsThroughColumns : public HloPass {
 public:
  std::string_view name() const override { return "flatten-rows-through-columns"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
