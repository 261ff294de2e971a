#include "compiler/passes/split_tuple_all_reduces.h"

#include <vector>

namespace tpu::compiler {

StatusOr<bool> SplitTupleAllReduces::Run(hlo::HloModule* module) {
  bool changed = false;
  for (hlo::HloComputation* computation : ProgramComputations(module)) {
    for (hlo::HloInstruction* all_reduce : computation->MakeInstructionPostOrder()) {
      if (all_reduce->opcode() != hlo::HloOpcode::kAllReduce || !all_reduce->shape().IsTuple()) continue;
      std::vector<hlo::HloInstruction*> parts;
      for (hlo::HloInstruction* operand : all_reduce->operands()) {
        parts.push_back(computation->AddInstruction(all_reduce->CloneWithNewOperands(operand->shape(), {operand})));
      }
      hlo::HloInstruction* tuple = computation->AddInstruction(hlo::HloInstruction::CreateTuple(parts));
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(all_reduce, tuple));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
