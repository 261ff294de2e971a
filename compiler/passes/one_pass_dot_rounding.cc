#include "compiler/passes/one_pass_dot_rounding.h"

#include <vector>

#include "compiler/passes/split_dots.h"

namespace tpu::compiler {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

StatusOr<bool> OnePassDotRounding::Run(hlo::HloModule* module) {
  bool changed = false;
  for (hlo::HloComputation* computation : ProgramComputations(module)) {
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (instruction->opcode() != HloOpcode::kDot && instruction->opcode() != HloOpcode::kConvolution) continue;
      if (MxuPasses(*instruction, dot_passes_) > 1) continue;  // split-dots splits it: f32 operands
      for (int64_t i = 0; i < instruction->operand_count(); ++i) {
        HloInstruction* operand = instruction->operand(i);
        if (operand->shape().element_type != PrimitiveType::F32) continue;  // bf16 is exact on the MXU
        TPU_RETURN_IF_ERROR(instruction->ReplaceOperandWith(i, AddBf16Rounding(computation, operand)));
        changed = true;
      }
    }
  }
  return changed;
}

}  // namespace tpu::compiler
