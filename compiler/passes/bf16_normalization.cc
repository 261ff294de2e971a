#include "compiler/passes/bf16_normalization.h"

#include <memory>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

bool IsArithmetic(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kDivide:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kPower:
    case HloOpcode::kNegate:
    case HloOpcode::kAbs:
    case HloOpcode::kSign:
    case HloOpcode::kExp:
    case HloOpcode::kLog:
    case HloOpcode::kTanh:
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

hlo::Shape WithType(const hlo::Shape& shape, PrimitiveType type) { return hlo::Shape::Make(type, shape.dimensions); }

}  // namespace

StatusOr<bool> Bf16Normalization::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        if (!IsArithmetic(instruction->opcode()) || !instruction->shape().IsArray()) return nullptr;
        bool any_bf16 = instruction->shape().element_type == PrimitiveType::BF16;
        for (const HloInstruction* operand : instruction->operands()) {
          any_bf16 = any_bf16 || operand->shape().element_type == PrimitiveType::BF16;
        }
        if (!any_bf16) return nullptr;
        std::vector<HloInstruction*> operands;
        for (HloInstruction* operand : instruction->operands()) {
          if (operand->shape().element_type != PrimitiveType::BF16) {
            operands.push_back(operand);
            continue;
          }
          operands.push_back(computation->AddInstruction(
              HloInstruction::CreateConvert(WithType(operand->shape(), PrimitiveType::F32), operand)));
        }
        const bool bf16_result = instruction->shape().element_type == PrimitiveType::BF16;
        const hlo::Shape shape =
            bf16_result ? WithType(instruction->shape(), PrimitiveType::F32) : instruction->shape();
        HloInstruction* f32 = computation->AddInstruction(instruction->CloneWithNewOperands(shape, operands));
        if (!bf16_result) return f32;
        return computation->AddInstruction(
            HloInstruction::CreateConvert(WithType(instruction->shape(), PrimitiveType::BF16), f32));
      });
}

}  // namespace tpu::compiler
