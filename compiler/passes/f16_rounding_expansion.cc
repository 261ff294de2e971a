#include "compiler/passes/f16_rounding_expansion.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {

using hlo::ComparisonDirection;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

HloInstruction* ExpandF16Rounding(hlo::HloComputation* computation, HloInstruction* x) {
  // One instruction a statement: the order of the module is the order written here.
  ElementwiseBuilder f(computation, x->shape().dimensions);
  auto u32 = [&](uint32_t value) { return f.Constant<uint32_t>(value); };
  auto binary = [&](HloOpcode op, HloInstruction* a, uint32_t b) { return f.Binary(op, a, u32(b)); };
  HloInstruction* bits = f.Bitcast(x, PrimitiveType::U32);
  HloInstruction* sign = binary(HloOpcode::kAnd, bits, 0x80000000u);
  HloInstruction* magnitude_bits = binary(HloOpcode::kAnd, bits, 0x7fffffffu);
  HloInstruction* magnitude = f.Bitcast(magnitude_bits, PrimitiveType::F32);
  // Normal range: round the 13 bits below f16's mantissa to nearest even.
  HloInstruction* odd = binary(HloOpcode::kShiftRightLogical, magnitude_bits, 13);
  odd = binary(HloOpcode::kAnd, odd, 1);
  HloInstruction* normal = binary(HloOpcode::kAdd, magnitude_bits, 0x0fffu);
  normal = f.Add(normal, odd);
  normal = binary(HloOpcode::kAnd, normal, 0xffffe000u);
  // Subnormal range: the f32 add rounds to the 2^-24 quantum of [0.5, 1).
  HloInstruction* half = f.Constant(0.5f);
  HloInstruction* subnormal = f.Add(magnitude, half);
  subnormal = f.Bitcast(f.Sub(subnormal, half), PrimitiveType::U32);
  HloInstruction* small = f.Compare(magnitude, f.Constant(std::ldexp(1.0f, -14)), ComparisonDirection::kLt);
  HloInstruction* rounded = f.Select(small, subnormal, normal);
  HloInstruction* overflow = f.Compare(magnitude, f.Constant(65520.0f), ComparisonDirection::kGe);
  rounded = f.Select(overflow, u32(0x7f800000u), rounded);
  HloInstruction* nan = f.Compare(magnitude, magnitude, ComparisonDirection::kNe);
  rounded = f.Select(nan, u32(0x7fc00000u), rounded);
  HloInstruction* word = f.Bitcast(f.Binary(HloOpcode::kOr, rounded, sign), PrimitiveType::F32);
  auto exact = HloInstruction::Create(HloOpcode::kCustomCall, f.Of(PrimitiveType::F16), {word});
  exact->set_custom_call_target(std::string(hlo::kExactF16Target));
  return f.builder().Add(std::move(exact));
}

StatusOr<bool> F16RoundingExpansion::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        if (instruction->opcode() != HloOpcode::kConvert || !instruction->shape().IsArray() ||
            instruction->shape().element_type != PrimitiveType::F16 ||
            instruction->operand(0)->shape().element_type != PrimitiveType::F32) {
          return nullptr;
        }
        return ExpandF16Rounding(computation, instruction->operand(0));
      });
}

}  // namespace tpu::compiler
