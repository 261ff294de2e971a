#include "compiler/passes/dce.h"

namespace tpu::compiler {

StatusOr<bool> DeadCodeElimination::Run(hlo::HloModule* module) {
  int64_t removed = 0;
  for (hlo::HloComputation* computation : module->computations()) {
    if (computation->root_instruction() == nullptr) continue;
    removed += computation->RemoveDeadInstructions();
  }
  removed += module->RemoveUnusedComputations();
  return removed > 0;
}

}  // namespace tpu::compiler
