// f32 `remainder` (C's fmod: the sign of the dividend, |r| < |y|) as operations the device has, exact
// where the quotient |x / y| is below 2^24:
//   q = floor(|x| / |y|)                        (the division may be one off: corrected below)
//   p + e = q * |y| exactly                      (Dekker's product with Veltkamp's split: p the rounded
//                                                 product, e its error, both exact in f32)
//   r = (|x| - p) - e                            (|x| - p is exact by Sterbenz's lemma: p is within a
//                                                 factor 2 of |x|; r, the true remainder, is representable)
//   r += |y| where r < 0; r -= |y| where r >= |y|
//   result = r with the sign of x; x where y is infinite and x finite; NaN from NaN, x infinite or y = 0
// Beyond 2^24 the quotient's rounding can be off by more than one and so can r by multiples of |y|.
// Subnormal intermediate values are flushed by the VPU (DAZ), as everywhere (docs/numerics.md).
// bf16 remainders arrive as f32 (bf16-normalization); integer remainders are left to the code generator.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class RemainderExpansion : public HloPass {
 public:
  std::string_view name() const override { return "remainder-expansion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
