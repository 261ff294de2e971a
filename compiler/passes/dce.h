// Dead-code elimination: removes instructions whose value no root depends on (parameters stay, as
// they define the computation's signature) and computations nothing calls any more.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class DeadCodeElimination : public HloPass {
 public:
  std::string_view name() const override { return "dce"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
