// ReLU fusion: rewrites `maximum(x, broadcast(constant 0))` (either operand order, f32, scalar zero
// constant) into a loop fusion
//
//   %fused_relu (param_0: f32[...]) -> f32[...] {
//     %param_0 = parameter(0)  %constant = f32[] constant(0)
//     %broadcast = broadcast(%constant), dimensions={}
//     ROOT %maximum = maximum(%param_0, %broadcast)
//   }
//   %relu = fusion(%x), kind=kLoop, calls=%fused_relu
//
// so that the broadcast never exists as a tensor: codegen emits one VMAX with a zero immediate per
// chunk. The old broadcast and constant are left for dead-code elimination.
#pragma once

#include "compiler/hlo/hlo_ir.h"
#include "compiler/passes/pass.h"

namespace tpu::compiler {

class ReluFusion : public HloPass {
 public:
  std::string_view name() const override { return "relu-fusion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

// If `instruction` is maximum(x, broadcast(scalar f32 constant 0)) in either order, returns x.
const hlo::HloInstruction* MatchRelu(const hlo::HloInstruction& instruction);
// True for a fusion made by ReluFusion (a kLoop fusion whose computation is max(param_0, bcast(0))).
bool IsReluFusion(const hlo::HloInstruction& instruction);

}  // namespace tpu::compiler
