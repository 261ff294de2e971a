// Inlines every call and fusion of the entry computation (nested ones too) for codegen preparation:
// codegen lowers instructions one by one and only those of the entry computation. Unlike CallInliner
// (call_inliner.h) fusions go too and the copies get fresh names (`multiply.N`), which the code
// listing shows. Computations left without callers are removed by dead-code elimination.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class InlineCallsAndFusions : public HloPass {
 public:
  std::string_view name() const override { return "inline-calls-and-fusions"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
