#include "compiler/passes/elementwise_expansion.h"

#include <cmath>
#include <cstdint>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::ComparisonDirection;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

// pi/2 = sum of the parts to 2^-63. The first four have at most 8 significant bits: k * part is exact
// for |k| < 2^16, and each subtraction cancels what the previous ones left (Cody-Waite).
constexpr float kHalfPiParts[] = {0x1.92p+0f, 0x1.fap-12f, 0x1.54p-20f, 0x1.1p-30f, 0x1.68c234p-39f};
constexpr float kTwoOverPi = 0x1.45f306p-1f;
// Adding it rounds a value below 2^22 in magnitude to an integer (RNE), which the low bits of its word hold.
constexpr float kRoundingShifter = 0x1.8p+23f;
// sin(r) = r + r^3 * S(r^2), cos(r) = 1 - r^2 / 2 + r^4 * C(r^2) on [-pi/4, pi/4] (slightly beyond, for
// the rounding of k): weighted least squares in the relative error, lowest degree first.
constexpr float kSinCoefficients[] = {-0.1666666716337204f, 0.008333329111337662f, -0.00019839296874124557f,
                                      2.717971028687316e-06f};
constexpr float kCosCoefficients[] = {0.0416666679084301f, -0.0013888883404433727f, 2.4799443053780124e-05f,
                                      -2.7204333719055285e-07f};
// erf(x) = x * P(x^2) / Q(x^2) for |x| < kErfSaturation (XLA's f32 erf; lowest degree first).
constexpr float kErfNumerator[] = {1.128379143519084f, 0.18520832239976145f, 0.050955695062380861f,
                                   0.0034082910107109506f, 0.00022905065861350646f};
constexpr float kErfDenominator[] = {1.0f, 0.49746925110067538f, 0.11098505178285362f, 0.014070470171167667f,
                                     0.0010179625278914885f, 0.000023547966471313185f, -1.1791602954361697e-7f};
constexpr float kErfSaturation = 3.832506856900711f;

HloInstruction* FlipSign(ElementwiseBuilder& f, HloInstruction* value, HloInstruction* sign) {
  return f.Bitcast(f.Binary(HloOpcode::kXor, f.Bitcast(value, PrimitiveType::S32), sign), PrimitiveType::F32);
}

HloInstruction* Nan(ElementwiseBuilder& f) { return f.Constant(NAN); }

// sine, cosine or tan of an f32 value.
HloInstruction* ExpandTrig(hlo::HloComputation* computation, HloInstruction* instruction) {
  ElementwiseBuilder f(computation, instruction->shape().dimensions);
  HloInstruction* x = instruction->operand(0);
  HloInstruction* shifted = f.Add(f.Mul(x, f.Constant(kTwoOverPi)), f.Constant(kRoundingShifter));
  HloInstruction* k = f.Sub(shifted, f.Constant(kRoundingShifter));
  HloInstruction* quadrant = f.Binary(HloOpcode::kAnd, f.Bitcast(shifted, PrimitiveType::S32), f.Constant<int32_t>(3));
  HloInstruction* r = x;
  for (float part : kHalfPiParts) r = f.Sub(r, f.Mul(k, f.Constant(part)));
  HloInstruction* z = f.Mul(r, r);
  HloInstruction* sin = f.Add(r, f.Mul(f.Mul(r, z), f.Polynomial(z, kSinCoefficients)));
  HloInstruction* cos = f.Add(f.Sub(f.Constant(1.0f), f.Mul(z, f.Constant(0.5f))),
                              f.Mul(f.Mul(z, z), f.Polynomial(z, kCosCoefficients)));
  HloInstruction* odd = f.Compare(f.Binary(HloOpcode::kAnd, quadrant, f.Constant<int32_t>(1)), f.Constant<int32_t>(0),
                                  ComparisonDirection::kNe);
  // The sign bit a quadrant puts on a value: bit 1 of `q` moved to bit 31.
  auto sign_of = [&](HloInstruction* q) {
    return f.Binary(HloOpcode::kShiftLeft, f.Binary(HloOpcode::kAnd, q, f.Constant<int32_t>(2)), f.Constant<int32_t>(30));
  };
  HloInstruction* result;
  switch (instruction->opcode()) {
    case HloOpcode::kSin:  // quadrants: sin, cos, -sin, -cos
      result = FlipSign(f, f.Select(odd, cos, sin), sign_of(quadrant));
      break;
    case HloOpcode::kCos:  // cos, -sin, -cos, sin
      result = FlipSign(f, f.Select(odd, sin, cos), sign_of(f.Add(quadrant, f.Constant<int32_t>(1))));
      break;
    default:  // tan: sin / cos, -cos / sin
      result = f.Div(f.Select(odd, FlipSign(f, cos, f.Constant<int32_t>(INT32_MIN)), sin), f.Select(odd, sin, cos));
      break;
  }
  if (instruction->opcode() != HloOpcode::kCos) {
    // The polynomial turns -0 into +0; sin and tan keep the zero's sign.
    result = f.Select(f.Compare(x, f.Constant(0.0f), ComparisonDirection::kEq), x, result);
  }
  HloInstruction* out_of_range =
      f.Compare(f.Unary(HloOpcode::kAbs, x), f.Constant(kMaxTrigArgument), ComparisonDirection::kGt);
  return f.Select(out_of_range, Nan(f), result);
}

HloInstruction* ExpandErf(hlo::HloComputation* computation, HloInstruction* erf) {
  ElementwiseBuilder f(computation, erf->shape().dimensions);
  HloInstruction* x = erf->operand(0);
  HloInstruction* clamped =
      f.Binary(HloOpcode::kMinimum, f.Binary(HloOpcode::kMaximum, x, f.Constant(-kErfSaturation)),
               f.Constant(kErfSaturation));
  HloInstruction* z = f.Mul(clamped, clamped);
  HloInstruction* ratio =
      f.Div(f.Mul(clamped, f.Polynomial(z, kErfNumerator)), f.Polynomial(z, kErfDenominator));
  HloInstruction* saturated =
      f.Compare(f.Unary(HloOpcode::kAbs, x), f.Constant(kErfSaturation), ComparisonDirection::kGe);
  HloInstruction* one = f.WithSignBit(f.Constant(1.0f), f.SignBit(x));
  // max/min may drop a NaN: NaN in, NaN out.
  HloInstruction* nan = f.Compare(x, x, ComparisonDirection::kNe);
  return f.Select(nan, x, f.Select(saturated, one, ratio));
}

HloInstruction* ExpandCbrt(hlo::HloComputation* computation, HloInstruction* cbrt) {
  ElementwiseBuilder f(computation, cbrt->shape().dimensions);
  HloInstruction* x = cbrt->operand(0);
  HloInstruction* a = f.Unary(HloOpcode::kAbs, x);
  HloInstruction* third = f.Constant(1.0f / 3.0f);
  HloInstruction* y = f.Unary(HloOpcode::kExp, f.Mul(f.Unary(HloOpcode::kLog, a), third));
  // Newton on y^3 = a: the exp/log estimate is within a few 1e-6 relative, one step leaves rounding.
  y = f.Add(y, f.Mul(f.Sub(f.Div(a, f.Mul(y, y)), y), third));
  HloInstruction* result = f.WithSignBit(y, f.SignBit(x));
  // 0 and inf are their own roots (log and the Newton step would give NaN); NaN stays NaN through y.
  HloInstruction* fixed = f.Binary(HloOpcode::kOr, f.Compare(a, f.Constant(0.0f), ComparisonDirection::kEq),
                                   f.Compare(a, f.Constant(INFINITY), ComparisonDirection::kEq));
  return f.Select(fixed, x, result);
}

// A constant of the 32-bit integer type `type` (s32 or u32) with the word `bits`.
HloInstruction* Word(ElementwiseBuilder& f, PrimitiveType type, uint32_t bits) {
  return type == PrimitiveType::U32 ? f.Constant<uint32_t>(bits) : f.Constant<int32_t>(static_cast<int32_t>(bits));
}

HloInstruction* CountLeadingZeros32(ElementwiseBuilder& f, HloInstruction* v, PrimitiveType type) {
  HloInstruction* zero = Word(f, type, 0);
  HloInstruction* n = zero;
  for (uint32_t step : {16u, 8u, 4u, 2u, 1u}) {
    HloInstruction* top_clear =
        f.Compare(f.Binary(HloOpcode::kShiftRightLogical, v, Word(f, type, 32 - step)), zero, ComparisonDirection::kEq);
    n = f.Select(top_clear, f.Add(n, Word(f, type, step)), n);
    v = f.Select(top_clear, f.Binary(HloOpcode::kShiftLeft, v, Word(f, type, step)), v);
  }
  // Only 0 leaves a zero word after the steps (31 counted so far).
  return f.Select(f.Compare(v, zero, ComparisonDirection::kEq), f.Add(n, Word(f, type, 1)), n);
}

HloInstruction* PopulationCount32(ElementwiseBuilder& f, HloInstruction* v, PrimitiveType type) {
  auto srl = [&](HloInstruction* a, uint32_t s) { return f.Binary(HloOpcode::kShiftRightLogical, a, Word(f, type, s)); };
  auto mask = [&](HloInstruction* a, uint32_t m) { return f.Binary(HloOpcode::kAnd, a, Word(f, type, m)); };
  v = f.Sub(v, mask(srl(v, 1), 0x55555555u));                   // 2-bit counts
  v = f.Add(mask(v, 0x33333333u), mask(srl(v, 2), 0x33333333u));  // 4-bit counts
  v = mask(f.Add(v, srl(v, 4)), 0x0F0F0F0Fu);                     // byte counts
  v = f.Add(v, srl(v, 8));
  v = f.Add(v, srl(v, 16));
  return mask(v, 0x3Fu);
}

int BitWidth(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::S8:
    case PrimitiveType::U8:
      return 8;
    case PrimitiveType::S16:
    case PrimitiveType::U16:
      return 16;
    case PrimitiveType::S32:
    case PrimitiveType::U32:
      return 32;
    default:
      return 0;
  }
}

HloInstruction* ExpandBitCount(hlo::HloComputation* computation, HloInstruction* instruction) {
  const PrimitiveType type = instruction->shape().element_type;
  const int width = BitWidth(type);
  ElementwiseBuilder f(computation, instruction->shape().dimensions);
  HloInstruction* v = instruction->operand(0);
  PrimitiveType word = type;
  if (width < 32) {
    // The narrow value's bits in a u32 word: the device holds s8/s16 sign-extended, so mask them.
    word = PrimitiveType::U32;
    v = f.Binary(HloOpcode::kAnd, f.builder().Convert(v, word), Word(f, word, (1u << width) - 1));
  }
  HloInstruction* count = instruction->opcode() == HloOpcode::kPopulationCount
                              ? PopulationCount32(f, v, word)
                              : f.Sub(CountLeadingZeros32(f, v, word), Word(f, word, 32 - width));
  return width < 32 ? f.builder().Convert(count, type) : count;
}

HloInstruction* Expand(hlo::HloComputation* computation, HloInstruction* instruction) {
  if (!instruction->shape().IsArray()) return nullptr;
  const PrimitiveType type = instruction->shape().element_type;
  switch (instruction->opcode()) {
    case HloOpcode::kSin:
    case HloOpcode::kCos:
    case HloOpcode::kTan:
      return type == PrimitiveType::F32 ? ExpandTrig(computation, instruction) : nullptr;
    case HloOpcode::kErf:
      return type == PrimitiveType::F32 ? ExpandErf(computation, instruction) : nullptr;
    case HloOpcode::kCbrt:
      return type == PrimitiveType::F32 ? ExpandCbrt(computation, instruction) : nullptr;
    case HloOpcode::kClz:
    case HloOpcode::kPopulationCount:
      return BitWidth(type) > 0 ? ExpandBitCount(computation, instruction) : nullptr;
    default:
      return nullptr;
  }
}

}  // namespace

StatusOr<bool> ElementwiseExpansion::Run(hlo::HloModule* module) { return ReplaceEachInProgram(module, Expand); }

}  // namespace tpu::compiler
