// Variadic reduces whose reducer combines each operand on its own -- tuple element k computed from
// parameters k and n+k only (XLA's multi-output fusion of a sum and a maximum, lax.reduce of a tuple
// with independent parts) -- become n single-operand reduces, each with element k's computation as its
// reducer (parameters k and n+k as 0 and 1), and a tuple of their results: the same values, combined in
// the same order. Argmax / argmin (arg-reductions, run before) and reducers whose parts look at each
// other's values are left as they are (codegen refuses variadic reduces by name).
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class SplitVariadicReduces : public HloPass {
 public:
  std::string_view name() const override { return "split-variadic-reduces"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
