#include "compiler/passes/unshare_computations.h"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tpu::compiler {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

StatusOr<bool> UnshareComputations::Run(hlo::HloModule* module) {
  if (module->entry_computation() == nullptr) return false;
  std::set<const HloComputation*> used;
  std::vector<HloComputation*> pending = {module->entry_computation()};
  int copies = 0;
  while (!pending.empty()) {
    HloComputation* computation = pending.back();
    pending.pop_back();
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (instruction->opcode() != HloOpcode::kWhile && instruction->opcode() != HloOpcode::kConditional) continue;
      const size_t called = instruction->called_computation_attributes().size();
      for (size_t i = 0; i < called; ++i) {
        HloComputation* callee = instruction->called_computation_attributes()[i].computation;
        if (callee == nullptr) continue;
        if (used.count(callee) > 0) {
          std::string name;
          do {
            name = callee->name() + ".copy" + std::to_string(++copies);
          } while (module->GetComputationWithName(name) != nullptr);
          HloComputation* copy = module->AddEmbeddedComputation(std::make_unique<HloComputation>(name));
          TPU_RETURN_IF_ERROR(hlo::CopyInstructions(*callee, copy, [](HloComputation* c) { return c; }));
          instruction->set_called_computation(i, copy);
          callee = copy;
        }
        used.insert(callee);
        pending.push_back(callee);
      }
    }
  }
  return copies > 0;
}

}  // namespace tpu::compiler
