#include "compiler/passes/bf16_normalization.h"

#include <memory>
#include <vector>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

bool IsNormalizedArithmetic(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kRemainder:
    case HloOpcode::kAtan2:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kPower:
    case HloOpcode::kNegate:
    case HloOpcode::kAbs:
    case HloOpcode::kSign:
    case HloOpcode::kExp:
    case HloOpcode::kLog:
    case HloOpcode::kTanh:
    case HloOpcode::kSin:
    case HloOpcode::kCos:
    case HloOpcode::kTan:
    case HloOpcode::kErf:
    case HloOpcode::kCbrt:
    case HloOpcode::kLogistic:
    case HloOpcode::kSqrt:
    case HloOpcode::kRsqrt:
    case HloOpcode::kFloor:
    case HloOpcode::kCeil:
    case HloOpcode::kRoundNearestEven:
    case HloOpcode::kRoundNearestAfz:
    case HloOpcode::kClamp:
    case HloOpcode::kCompare:
      return true;
    default:
      return false;
  }
}

StatusOr<bool> Bf16Normalization::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        if (!IsNormalizedArithmetic(instruction->opcode()) || !instruction->shape().IsArray()) return nullptr;
        return HloBuilder(computation).InWiderType(instruction, [](PrimitiveType type) {
          return type == PrimitiveType::BF16 ? PrimitiveType::F32 : type;
        });
      });
}

}  // namespace tpu::compiler
