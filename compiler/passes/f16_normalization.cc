#include "compiler/passes/f16_normalization.h"

#include "compiler/passes/bf16_normalization.h"
#include "compiler/passes/codegen_legalization.h"
#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

PrimitiveType Wider(PrimitiveType type) { return type == PrimitiveType::F16 ? PrimitiveType::F32 : type; }

bool ReadsOrWritesF16(const HloInstruction& instruction) {
  if (instruction.shape().element_type == PrimitiveType::F16) return true;
  for (const HloInstruction* operand : instruction.operands()) {
    if (operand->shape().IsArray() && operand->shape().element_type == PrimitiveType::F16) return true;
  }
  return false;
}

// A convert between f16 and a type other than f32: through f32.
HloInstruction* ConvertThroughF32(HloBuilder& b, HloInstruction* convert) {
  const PrimitiveType from = convert->operand(0)->shape().element_type, to = convert->shape().element_type;
  if (from == to || from == PrimitiveType::F32 || to == PrimitiveType::F32) return nullptr;
  if (from != PrimitiveType::F16 && to != PrimitiveType::F16) return nullptr;
  return b.Convert(b.Convert(convert->operand(0), PrimitiveType::F32), to);
}

// The dot or convolution on f32 operands with six MXU passes; an f16 result rounded from the f32 one.
HloInstruction* ProductInF32(HloBuilder& b, HloInstruction* instruction) {
  HloInstruction* replacement = b.InWiderType(instruction, Wider);
  HloInstruction* wide =
      instruction->shape().element_type == PrimitiveType::F16 ? replacement->operand(0) : replacement;
  wide->set_raw_attribute("operand_precision", "{highest,highest}");
  return replacement;
}

// An add, maximum or minimum reduction of f16 values as the same reduction of their f32 values, rounded
// once. nullptr for other reducers and variadic reductions (codegen refuses them by their element type).
HloInstruction* ReduceInF32(hlo::HloComputation* computation, HloInstruction* reduce) {
  const HloOpcode op = ReductionOpcode(*reduce);
  if (op == HloOpcode::kUnknown || reduce->operand_count() != 2 || !reduce->shape().IsArray()) return nullptr;
  HloBuilder b(computation);
  HloInstruction* wide = b.Add(HloInstruction::CreateReduce(
      hlo::Shape::Make(PrimitiveType::F32, reduce->shape().dimensions),
      b.Convert(reduce->operand(0), PrimitiveType::F32), b.Convert(reduce->operand(1), PrimitiveType::F32),
      reduce->dimensions(), HloBuilder::ScalarReducer(computation->parent(), op, PrimitiveType::F32)));
  return b.Convert(wide, reduce->shape().element_type);
}

}  // namespace

StatusOr<bool> F16Normalization::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        if (!instruction->shape().IsArray() || !ReadsOrWritesF16(*instruction)) return nullptr;
        HloBuilder b(computation);
        switch (instruction->opcode()) {
          case HloOpcode::kConvert:
            return ConvertThroughF32(b, instruction);
          case HloOpcode::kDot:
          case HloOpcode::kConvolution:
            return ProductInF32(b, instruction);
          case HloOpcode::kReduce:
            return instruction->shape().element_type == PrimitiveType::F16 ? ReduceInF32(computation, instruction)
                                                                            : nullptr;
          default:
            if (!IsNormalizedArithmetic(instruction->opcode())) return nullptr;
            return b.InWiderType(instruction, Wider);
        }
      });
}

}  // namespace tpu::compiler
