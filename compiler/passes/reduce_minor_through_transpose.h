// Reductions over the minor dimension become reductions over dimension 0 of a transpose, which the VPU
// does (it combines rows; the minor dimension is on lanes). In the entry computation:
//   reduce(x[R,C], {1})    ->  reduce(transpose(x)[C,R], {0})
//   reduce(x[R,C], {0,1})  ->  dimension 0 first, then the [C] row as below
//   reduce(x[C], {0})      ->  reshape(reduce(transpose(reshape(x)[1,C])[C,1], {0})[1])[]
// Only for ranks 1 and 2 (codegen-legalization brings the others into these forms), a minor dimension
// of more than one element, and an init value that is the reduction's identity (0 for add, -inf for
// max), so that applying it twice changes nothing.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class ReduceMinorThroughTranspose : public HloPass {
 public:
  std::string_view name() const override { return "reduce-minor-through-transpose"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
