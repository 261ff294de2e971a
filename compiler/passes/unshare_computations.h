// Gives every condition, body and branch of the program's while loops and conditionals a computation of
// its own. The code generator lowers them in line, once each; a computation two of them call (after
// inline-calls-and-fusions, two calls of one function whose body loops, as jax.random's threefry called
// twice) is copied for the second, under a fresh name, and the copies' own loops get copies in turn.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class UnshareComputations : public HloPass {
 public:
  std::string_view name() const override { return "unshare-computations"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
