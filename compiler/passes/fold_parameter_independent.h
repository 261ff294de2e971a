// Evaluates every value of the entry computation that does not depend on a parameter (iota, broadcasts
// and compares of constants, kernel taps of lowered convolutions, a reduce over a shape's constant
// dimensions, ...) with the interpreter and replaces it by a constant, which the device reads from a
// constant region instead of computing it. Unlike constant-folding (constant_folding.h) there is no size
// limit: codegen cannot compute these values on the device. Kept as they are, because codegen handles
// them better: scalar f32 constants and their broadcasts (immediates and splats), broadcasts of a row
// along the minor dimension (elementwise users read the row), tuples, calls, fusions and control flow.
// The elements of an rng-bit-generator of a constant state (a jitted `jax.random.key(0, impl='rbg')`)
// fold one by one: its u64 state is no device value, the folded bits and state words are.
// Values the interpreter cannot evaluate are left for codegen to report.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class FoldParameterIndependent : public HloPass {
 public:
  std::string_view name() const override { return "fold-parameter-independent"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
