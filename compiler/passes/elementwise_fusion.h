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
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class ElementwiseFusion : public HloPass {
 public:
  std::string_view name() const override { return "elementwise-fusion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

// Elementwise instructions ElementwiseFusion puts into fusions.
bool IsFusibleElementwise(const hlo::HloInstruction& instruction);

}  // namespace tpu::compiler
