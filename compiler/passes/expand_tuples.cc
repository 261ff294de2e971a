#include "compiler/passes/expand_tuples.h"

#include <memory>
#include <vector>

namespace tpu::compiler {

using hlo::HloInstruction;
using hlo::HloOpcode;

namespace {

// A flat tuple-shaped value the code generator cannot take apart where it is used.
bool NeedsExpanding(const HloInstruction& value) {
  if (!value.shape().IsTuple() || value.opcode() == HloOpcode::kTuple) return false;
  if (value.opcode() != HloOpcode::kWhile && value.opcode() != HloOpcode::kConditional &&
      value.opcode() != HloOpcode::kParameter) {
    return false;
  }
  for (const hlo::Shape& element : value.shape().tuple_shapes) {
    if (element.IsTuple()) return false;
  }
  return true;
}

// tuple(get-tuple-element(value, 0), ...), added to `computation`.
HloInstruction* TupleOfElements(hlo::HloComputation* computation, HloInstruction* value) {
  std::vector<HloInstruction*> elements;
  for (size_t i = 0; i < value->shape().tuple_shapes.size(); ++i) {
    elements.push_back(computation->AddInstruction(HloInstruction::CreateGetTupleElement(value, static_cast<int64_t>(i))));
  }
  return computation->AddInstruction(HloInstruction::Create(HloOpcode::kTuple, value->shape(), elements));
}

}  // namespace

StatusOr<bool> ExpandTuples::Run(hlo::HloModule* module) {
  bool changed = false;
  for (hlo::HloComputation* computation : ProgramComputations(module)) {
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      // The initial state of a loop (operand 0), the values passed to branches (operands 1...).
      const HloOpcode opcode = instruction->opcode();
      if (opcode != HloOpcode::kWhile && opcode != HloOpcode::kConditional) continue;
      for (int64_t i = opcode == HloOpcode::kWhile ? 0 : 1; i < instruction->operand_count(); ++i) {
        HloInstruction* operand = instruction->operand(i);
        if (!NeedsExpanding(*operand)) continue;
        TPU_RETURN_IF_ERROR(instruction->ReplaceOperandWith(i, TupleOfElements(computation, operand)));
        changed = true;
      }
    }
    HloInstruction* root = computation->root_instruction();
    if (root == nullptr || !NeedsExpanding(*root)) continue;
    computation->set_root_instruction(TupleOfElements(computation, root));
    changed = true;
  }
  return changed;
}

}  // namespace tpu::compiler
