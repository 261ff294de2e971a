// Puts the rank-2 dots of the entry computation into the form the MXU streams: a dot reads a
// `transpose` operand's operand directly (the contracting dimension flips), and a lhs that still
// contracts its dimension 0 gets an explicit transpose, since the MXU streams lhs rows:
//   dot(x, transpose(y)), rhs_contracting_dims={0}  ->  dot(x, y), rhs_contracting_dims={1}
//   dot(x, y), lhs_contracting_dims={0}             ->  dot(transpose(x), y), lhs_contracting_dims={1}
// Transposes left without users stay for dead-code elimination. Batched dots are left as they are.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class CanonicalizeDots : public HloPass {
 public:
  std::string_view name() const override { return "canonicalize-dots"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
