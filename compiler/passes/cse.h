// Common-subexpression elimination: of two instructions with the same opcode, operands, shape and
// attributes, the later one is replaced by the earlier. Metadata (op_name, source lines) is ignored.
// Never merged: parameters, instructions with side effects or that talk to other replicas (rng, infeed,
// outfeed, send/recv, custom-call, collectives), and constants whose values the dump elided.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class CommonSubexpressionElimination : public HloPass {
 public:
  std::string_view name() const override { return "cse"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
