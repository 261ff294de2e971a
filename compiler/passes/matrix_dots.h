// Rewrites every dot into rank-2 dots [M,K] x [K,N], the form the MXU lowering takes:
//  - the lhs is transposed to [batch..., free..., contracting...] and reshaped to [B, M, K], the rhs to
//    [batch..., contracting..., free...] and [B, K, N] (transposes and reshapes that change nothing are
//    not added);
//  - without batch dimensions (B = 1) one dot [M,K] x [K,N];
//  - with them, one dot per batch index of the slices [b] of both, the results concatenated to [B, M, N];
//  - the result reshaped to the dot's shape [batch..., lhs free..., rhs free...].
// Attention's batched dots (query x key per head), dots of rank-3 activations with a weight matrix and
// dots that contract several dimensions take this form. The dots keep operand_precision.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class MatrixDots : public HloPass {
 public:
  std::string_view name() const override { return "matrix-dots"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
