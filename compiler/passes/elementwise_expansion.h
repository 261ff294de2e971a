// Elementwise opcodes the device has no instruction for, written as operations it lowers (f32 arithmetic,
// compares, selects, bit operations on s32/u32 words, VEXP/VLOG/VRCP):
//   sine, cosine, tan (f32): k = round(x * 2/pi) (adding and subtracting 1.5 * 2^23), r = x - k * pi/2 with
//     pi/2 in five parts (Cody-Waite): the first four have 8 significant bits, so k * part is exact for
//     |k| < 2^16 (the VPU has no FMA), the fifth is the rounded rest; sin(r) = r + r^3 * S(r^2) and
//     cos(r) = 1 - r^2/2 + r^4 * C(r^2) (degree-3 S and C fitted to [-pi/4, pi/4], relative error below
//     4e-9), chosen and signed by the quadrant k mod 4 (the low bits of the rounded word); tan = sin / cos
//     of the same reduction (-cos / sin in odd quadrants). Accurate for |x| <= kMaxTrigArgument
//     (102943, where |k| < 2^16); NaN beyond, for the infinities and NaN. sin(+-0) = +-0, tan(+-0) = +-0.
//   erf (f32): XLA's f32 form (Eigen's rational interpolant): x * P(x^2) / Q(x^2), P of degree 4 and Q
//     of degree 6 in x^2, and +-1 (x's sign) where |x| >= 3.8325069 (erfinv(1 - 2^-23)).
//   cbrt (f32): y = exp(log(|x|) / 3), one Newton step y + (|x| / y^2 - y) / 3, x's sign bit; +-0, +-inf
//     and NaN as they are.
//   count-leading-zeros, popcnt (s32, u32, and s8/s16/u8/u16 on their 32-bit words masked to the width):
//     a five-step binary search of shifts and selects; the SWAR bit count (shifts, ands, adds). Exact.
// bf16 and f16 sine, cosine, tan, erf and cbrt arrive as f32 (bf16- and f16-normalization).
// docs/numerics.md gives the errors measured against the C library.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

// The largest |x| whose sine, cosine and tan are computed (|round(x * 2/pi)| < 2^16); NaN beyond.
inline constexpr float kMaxTrigArgument = 102943.0f;

class ElementwiseExpansion : public HloPass {
 public:
  std::string_view name() const override { return "elementwise-expansion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
