#include "compiler/passes/one_pass_dot_rounding.h"

#include <vector>

#include "compiler/passes/split_dots.h"

namespace tpu::compiler {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

StatusOr<bool> OnePassDotRounding::Run(hlo::HloModule* module) {
  hlo::HloComputation* entry = module->entry_computation();
  if (entry == nullptr) return false;
  bool changed = false;
  for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
    if (instruction->opcode() != HloOpcode::kDot && instruction->opcode() != HloOpcode::kConvolution) continue;
    const int passes = dot_passes_ != 0 ? dot_passes_ : PassesForPrecision(*instruction);
    // split-dots splits only dots of f32 operands and an f32 result; every other one is one pass.
    bool all_f32 = instruction->shape().element_type == PrimitiveType::F32;
    for (const HloInstruction* operand : instruction->operands()) {
      all_f32 = all_f32 && operand->shape().element_type == PrimitiveType::F32;
    }
    if (passes > 1 && all_f32) continue;
    for (int64_t i = 0; i < instruction->operand_count(); ++i) {
      HloInstruction* operand = instruction->operand(i);
      if (operand->shape().element_type != PrimitiveType::F32) continue;  // bf16 is exact on the MXU
      HloInstruction* rounded =
          entry->AddInstruction(HloInstruction::Create(HloOpcode::kReducePrecision, operand->shape(), {operand}));
      rounded->set_raw_attribute("exponent_bits", "8");
      rounded->set_raw_attribute("mantissa_bits", "7");
      TPU_RETURN_IF_ERROR(instruction->ReplaceOperandWith(i, rounded));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
