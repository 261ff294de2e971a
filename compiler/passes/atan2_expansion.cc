#include "compiler/passes/atan2_expansion.h"

#include <cmath>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::ComparisonDirection;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

// atan(t) / t - 1 = t^2 * P(t^2) on [0, tan(pi/8)]: least squares in the relative error of atan.
constexpr float kAtanCoefficients[] = {-0.33333319425582886f, 0.19998697936534882f, -0.1424805074930191f,
                                       0.10628621280193329f, -0.06169379502534866f};

HloInstruction* ExpandAtan2(hlo::HloComputation* computation, HloInstruction* atan2) {
  ElementwiseBuilder f(computation, atan2->shape().dimensions);
  HloInstruction* y = atan2->operand(0);
  HloInstruction* x = atan2->operand(1);
  HloInstruction* ay = f.Unary(HloOpcode::kAbs, y);
  HloInstruction* ax = f.Unary(HloOpcode::kAbs, x);
  HloInstruction* low = f.Binary(HloOpcode::kMinimum, ay, ax);
  HloInstruction* high = f.Binary(HloOpcode::kMaximum, ay, ax);
  HloInstruction* zero = f.Constant(0.0f);
  HloInstruction* one = f.Constant(1.0f);
  // 0/0 and inf/inf would be NaN: both zero gives 0, both infinite 1 (then pi/4 below).
  HloInstruction* infinity = f.Constant(INFINITY);
  HloInstruction* a = f.Select(f.Compare(high, zero, ComparisonDirection::kEq), zero, f.Div(low, high));
  a = f.Select(f.Compare(low, infinity, ComparisonDirection::kEq), one, a);
  // Reduction to [0, tan(pi/8)]: atan(a) = pi/4 + atan((a - 1) / (a + 1)).
  HloInstruction* reduce = f.Compare(a, f.Constant(static_cast<float>(std::tan(M_PI / 8))), ComparisonDirection::kGt);
  HloInstruction* t = f.Select(reduce, f.Div(f.Sub(a, one), f.Add(a, one)), a);
  HloInstruction* base = f.Select(reduce, f.Constant(static_cast<float>(M_PI / 4)), zero);
  HloInstruction* z = f.Mul(t, t);
  HloInstruction* p = f.Polynomial(z, kAtanCoefficients);
  HloInstruction* angle = f.Add(base, f.Add(t, f.Mul(f.Mul(t, z), p)));
  // The octant and quadrant, then y's sign.
  angle = f.Select(f.Compare(ay, ax, ComparisonDirection::kGt), f.Sub(f.Constant(static_cast<float>(M_PI / 2)), angle),
                   angle);
  HloInstruction* x_negative = f.Compare(f.SignBit(x), f.Constant<int32_t>(0), ComparisonDirection::kNe);
  angle = f.Select(x_negative, f.Sub(f.Constant(static_cast<float>(M_PI)), angle), angle);
  HloInstruction* result = f.WithSignBit(angle, f.SignBit(y));
  // NaN in, NaN out (the min/max above may have dropped it).
  HloInstruction* nan = f.Binary(HloOpcode::kOr, f.Compare(x, x, ComparisonDirection::kNe),
                                 f.Compare(y, y, ComparisonDirection::kNe));
  return f.Select(nan, f.Add(x, y), result);
}

}  // namespace

StatusOr<bool> Atan2Expansion::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        if (instruction->opcode() != HloOpcode::kAtan2 || !instruction->shape().IsArray() ||
            instruction->shape().element_type != PrimitiveType::F32) {
          return nullptr;
        }
        return ExpandAtan2(computation, instruction);
      });
}

}  // namespace tpu::compiler
