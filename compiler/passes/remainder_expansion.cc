#include "compiler/passes/remainder_expansion.h"

#include <cmath>
#include <cstdint>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

// Elementwise f32 operations of one shape, with scalar constants broadcast to it.
class F32Ops {
 public:
  F32Ops(hlo::HloComputation* computation, const hlo::Shape& shape) : b_(computation), shape_(shape) {}

  HloInstruction* Constant(float value) {
    HloInstruction* scalar = b_.Add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<float>(value)));
    return b_.Add(HloInstruction::CreateBroadcast(shape_, scalar, {}));
  }
  HloInstruction* Unary(HloOpcode op, HloInstruction* a) { return b_.Add(HloInstruction::CreateUnary(shape_, op, a)); }
  HloInstruction* Add(HloInstruction* a, HloInstruction* b) { return b_.Binary(HloOpcode::kAdd, a, b); }
  HloInstruction* Sub(HloInstruction* a, HloInstruction* b) { return b_.Binary(HloOpcode::kSubtract, a, b); }
  HloInstruction* Mul(HloInstruction* a, HloInstruction* b) { return b_.Binary(HloOpcode::kMultiply, a, b); }
  HloInstruction* Div(HloInstruction* a, HloInstruction* b) { return b_.Binary(HloOpcode::kDivide, a, b); }
  HloInstruction* Compare(HloInstruction* a, HloInstruction* b, hlo::ComparisonDirection direction) {
    return b_.Add(HloInstruction::CreateCompare(hlo::Shape::Make(PrimitiveType::PRED, shape_.dimensions), a, b, direction));
  }
  HloInstruction* Select(HloInstruction* predicate, HloInstruction* on_true, HloInstruction* on_false) {
    return b_.Add(HloInstruction::CreateTernary(shape_, HloOpcode::kSelect, predicate, on_true, on_false));
  }
  // a = hi + lo with hi holding the upper 12 bits of the significand (Veltkamp: 2^12 + 1 = 4097).
  std::pair<HloInstruction*, HloInstruction*> Split(HloInstruction* a) {
    HloInstruction* c = Mul(Constant(4097.0f), a);
    HloInstruction* hi = Sub(c, Sub(c, a));
    return {hi, Sub(a, hi)};
  }
  HloBuilder& builder() { return b_; }

 private:
  HloBuilder b_;
  hlo::Shape shape_;
};

HloInstruction* ExpandRemainder(hlo::HloComputation* computation, HloInstruction* remainder) {
  using hlo::ComparisonDirection;
  const hlo::Shape shape = hlo::Shape::Make(PrimitiveType::F32, remainder->shape().dimensions);
  F32Ops f(computation, shape);
  HloInstruction* x = remainder->operand(0);
  HloInstruction* y = remainder->operand(1);
  HloInstruction* ax = f.Unary(HloOpcode::kAbs, x);
  HloInstruction* ay = f.Unary(HloOpcode::kAbs, y);
  HloInstruction* q = f.Unary(HloOpcode::kFloor, f.Div(ax, ay));
  // Dekker: q * ay = p + e exactly.
  HloInstruction* p = f.Mul(q, ay);
  auto [q_hi, q_lo] = f.Split(q);
  auto [y_hi, y_lo] = f.Split(ay);
  HloInstruction* e = f.Add(f.Add(f.Add(f.Sub(f.Mul(q_hi, y_hi), p), f.Mul(q_hi, y_lo)), f.Mul(q_lo, y_hi)),
                            f.Mul(q_lo, y_lo));
  HloInstruction* r = f.Sub(f.Sub(ax, p), e);
  HloInstruction* zero = f.Constant(0.0f);
  r = f.Select(f.Compare(r, zero, ComparisonDirection::kLt), f.Add(r, ay), r);
  r = f.Select(f.Compare(r, ay, ComparisonDirection::kGe), f.Sub(r, ay), r);
  // The dividend's sign bit on r (r >= 0): -0 stays -0 (a negate would give +0 on the device, whose
  // negate keeps padded lanes +0); and fmod(x, +-inf) = x for a finite x.
  const hlo::Shape words = hlo::Shape::Make(PrimitiveType::S32, shape.dimensions);
  HloBuilder& b = f.builder();
  auto bitcast = [&](HloInstruction* value, const hlo::Shape& to) {
    return b.Add(HloInstruction::Create(HloOpcode::kBitcastConvert, to, {value}));
  };
  HloInstruction* sign_mask = b.Add(HloInstruction::CreateBroadcast(
      words, b.Add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(INT32_MIN))), {}));
  HloInstruction* sign = b.Binary(HloOpcode::kAnd, bitcast(x, words), sign_mask);
  HloInstruction* signed_r = bitcast(b.Binary(HloOpcode::kOr, bitcast(r, words), sign), shape);
  HloInstruction* infinity = f.Constant(INFINITY);
  HloInstruction* keep_x = f.builder().Add(HloInstruction::Create(
      HloOpcode::kAnd, hlo::Shape::Make(PrimitiveType::PRED, shape.dimensions),
      {f.Compare(ay, infinity, ComparisonDirection::kEq), f.Compare(ax, infinity, ComparisonDirection::kLt)}));
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
