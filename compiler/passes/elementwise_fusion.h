// Elementwise (loop) fusion: a chain of elementwise instructions of one shape becomes a single
//
//   %fusion.<root> = f32[...] fusion(%a, %b, ...), kind=kLoop, calls=%fused_computation.<root>
//
// whose computation holds the chain with one parameter per outside operand, so the values in between
// never travel to memory. Fusible: elementwise unary/binary ops (compare and convert included), select
// and clamp, plus broadcasts of scalar constants, which are copied into every fusion that uses them (the
// fused computation keeps `broadcast(constant)`, the form codegen turns into an immediate). A producer
// joins a consumer's fusion only when all its users are in that fusion, so nothing is computed twice;
// a fusion needs at least two elementwise instructions. Fusions already present (e.g. ReLU fusions) are
// left alone and never grow. Runs on the entry computation and on computations run by call, while and
// conditional, not on reducers or comparators.
//
// A user of the pass may choose the members and the broadcasts copied in (ElementwiseFusionOptions):
// codegen preparation fuses what compiler/codegen/loop_fusion.h lowers, and copies in the broadcasts of
// scalars and rows that it reads as immediates and VMEM rows (the broadcast's source becomes the
// fusion's operand).
#pragma once

#include <functional>

#include "compiler/passes/pass.h"

namespace tpu::compiler {

// Elementwise instructions ElementwiseFusion puts into fusions by default.
bool IsFusibleElementwise(const hlo::HloInstruction& instruction);
// A broadcast of a scalar constant: copied into fusions by default.
bool IsScalarConstantBroadcast(const hlo::HloInstruction& instruction);

struct ElementwiseFusionOptions {
  // Whether an instruction may be a member of a fusion.
  std::function<bool(const hlo::HloInstruction&)> fusible = IsFusibleElementwise;
  // Whether broadcast `operand` of member `user` is copied into the fusion (with its operand: a scalar
  // constant is copied too, anything else becomes a parameter) instead of being an operand of the fusion.
  std::function<bool(const hlo::HloInstruction& user, const hlo::HloInstruction& operand)> copy_in =
      [](const hlo::HloInstruction&, const hlo::HloInstruction& operand) { return IsScalarConstantBroadcast(operand); };
};

class ElementwiseFusion : public HloPass {
 public:
  ElementwiseFusion() = default;
  explicit ElementwiseFusion(ElementwiseFusionOptions options) : options_(std::move(options)) {}
  std::string_view name() const override { return "elementwise-fusion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  ElementwiseFusionOptions options_;
};

}  // namespace tpu::compiler
