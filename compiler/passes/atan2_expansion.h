// f32 `atan2(y, x)` as operations the device has, within a few ulp of the C library:
//   a = min(|y|, |x|) / max(|y|, |x|)                  (in [0, 1]; 0 when both are 0, 1 when both infinite)
//   a > tan(pi/8): t = (a - 1) / (a + 1), base pi/4   (else t = a, base 0)
//   atan(a) = base + t + t * t^2 * P(t^2)             (P: degree 4, fitted to atan on [0, tan(pi/8)] with a
//                                                     relative error of 2e-9, far below an f32 ulp)
//   |y| > |x|: pi/2 - atan(a); x negative (its sign bit, -0 too): pi - that; then y's sign bit on the result
// which gives XLA's special cases: atan2(+-0, +0) = +-0, atan2(+-0, -0) = +-pi, atan2(+-inf, +inf) = +-pi/4,
// atan2(+-inf, -inf) = +-3pi/4, and NaN from NaN. bf16 atan2 arrives as f32 (bf16-normalization).
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class Atan2Expansion : public HloPass {
 public:
  std::string_view name() const override { return "atan2-expansion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
