#include "compiler/passes/remainder_expansion.h"

#include <cmath>
#include <cstdint>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

// a = hi + lo with hi holding the upper 12 bits of the significand (Veltkamp: 2^12 + 1 = 4097).
std::pair<HloInstruction*, HloInstruction*> Split(ElementwiseBuilder& f, HloInstruction* a) {
  HloInstruction* c = f.Mul(f.Constant(4097.0f), a);
  HloInstruction* hi = f.Sub(c, f.Sub(c, a));
  return {hi, f.Sub(a, hi)};
}

HloInstruction* ExpandRemainder(hlo::HloComputation* computation, HloInstruction* remainder) {
  using hlo::ComparisonDirection;
  ElementwiseBuilder f(computation, remainder->shape().dimensions);
  HloInstruction* x = remainder->operand(0);
  HloInstruction* y = remainder->operand(1);
  HloInstruction* ax = f.Unary(HloOpcode::kAbs, x);
  HloInstruction* ay = f.Unary(HloOpcode::kAbs, y);
  HloInstruction* q = f.Unary(HloOpcode::kFloor, f.Div(ax, ay));
  // Dekker: q * ay = p + e exactly.
  HloInstruction* p = f.Mul(q, ay);
  auto [q_hi, q_lo] = Split(f, q);
  auto [y_hi, y_lo] = Split(f, ay);
  HloInstruction* e = f.Add(f.Add(f.Add(f.Sub(f.Mul(q_hi, y_hi), p), f.Mul(q_hi, y_lo)), f.Mul(q_lo, y_hi)),
                            f.Mul(q_lo, y_lo));
  HloInstruction* r = f.Sub(f.Sub(ax, p), e);
  r = f.Select(f.Compare(r, f.Constant(0.0f), ComparisonDirection::kLt), f.Add(r, ay), r);
  r = f.Select(f.Compare(r, ay, ComparisonDirection::kGe), f.Sub(r, ay), r);
  // The dividend's sign bit on r (r >= 0): -0 stays -0; and fmod(x, +-inf) = x for a finite x.
  HloInstruction* signed_r = f.WithSignBit(r, f.SignBit(x));
  HloInstruction* infinity = f.Constant(INFINITY);
  HloInstruction* keep_x = f.Binary(HloOpcode::kAnd, f.Compare(ay, infinity, ComparisonDirection::kEq),
                                    f.Compare(ax, infinity, ComparisonDirection::kLt));
  return f.Select(keep_x, x, signed_r);
}

}  // namespace

StatusOr<bool> RemainderExpansion::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        if (instruction->opcode() != HloOpcode::kRemainder || !instruction->shape().IsArray() ||
            instruction->shape().element_type != PrimitiveType::F32) {
          return nullptr;
        }
        return ExpandRemainder(computation, instruction);
      });
}

}  // namespace tpu::compiler
