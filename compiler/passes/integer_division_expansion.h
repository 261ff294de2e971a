// s32 and u32 `divide` and `remainder` as operations the device has (the VPU has no integer divide):
// binary long division in a counted loop of 32 steps over the magnitudes as u32 words, exact, with XLA's
// rules: the quotient truncated toward zero and the remainder of the dividend's sign; x / 0 = -1 (all ones
// for u32) and x % 0 = x; MIN / -1 = MIN and MIN % -1 = 0 (they fall out of the wrapping arithmetic).
//   (i, q, r, shift) = (0, 0, 0, 31); while i < 32:
//     r = (r << 1) | ((n >> shift) & 1);  taken = r >= d (unsigned);  r -= taken ? d : 0
//     q = (q << 1) | taken;  shift -= 1;  i += 1
// with n = |x| and d = |y| (s32, as u32 words: |MIN| = 2^31) or x and y (u32). The narrow integer types
// arrive as s32 (integer-normalization).
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class IntegerDivisionExpansion : public HloPass {
 public:
  std::string_view name() const override { return "integer-division-expansion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
