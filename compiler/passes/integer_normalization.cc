#include "compiler/passes/integer_normalization.h"

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

bool IsNarrowInteger(PrimitiveType type) {
  return type == PrimitiveType::S8 || type == PrimitiveType::S16 || type == PrimitiveType::U8 ||
         type == PrimitiveType::U16;
}

bool IsArithmetic(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kNegate:
    case HloOpcode::kAbs:
    case HloOpcode::kSign:
    case HloOpcode::kClamp:
    case HloOpcode::kCompare:
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
    case HloOpcode::kNot:
    case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic:
      return true;
    case HloOpcode::kShiftRightLogical: {
      const PrimitiveType type = instruction.shape().element_type;
      return type == PrimitiveType::U8 || type == PrimitiveType::U16;
    }
    default:
      return false;
  }
}

}  // namespace

StatusOr<bool> IntegerNormalization::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        if (!IsArithmetic(*instruction) || !instruction->shape().IsArray()) return nullptr;
        return HloBuilder(computation).InWiderType(instruction, [](PrimitiveType type) {
          return IsNarrowInteger(type) ? PrimitiveType::S32 : type;
        });
      });
}

}  // namespace tpu::compiler
