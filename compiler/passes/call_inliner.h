// Call inlining: replaces every `call(...) to_apply=%f` with a copy of %f's instructions, its parameters
// bound to the call's operands, so later passes see one flat computation. Nested calls are inlined too.
// Computations left without callers are removed by dead-code elimination.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class CallInliner : public HloPass {
 public:
  std::string_view name() const override { return "call-inliner"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
