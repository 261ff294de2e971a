// Splits f32 dots of the entry computation into three MXU passes on bf16 values (the MXU multiplies
// bf16):
//   dot(a, b) = dot(a_hi, b_lo) + dot(a_lo, b_hi) + dot(a_hi, b_hi),  x_hi = bf16(x), x_lo = x - x_hi
// Every pass multiplies bf16 values exactly; only lo*lo (below 2^-16 relative) is left out, which keeps
// about 16 significant bits instead of bf16's 8. The small terms are added first. The passes are named
// after the dot (`dot.3.hi_lo`, `.lo_hi`, `.hi_hi`) so that the code listing and the padding report say
// where each comes from. A dot that is not split gets one pass: codegen rounds its operands to bf16.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

struct SplitDotsOptions {
  // false: every f32 dot; true: only the dots whose values reach a compare (a decision, a ReLU mask, the
  // bf16 rounding could flip) or an exp or log (which amplify the error).
  bool only_sensitive_dots = false;
};

class SplitDots : public HloPass {
 public:
  explicit SplitDots(SplitDotsOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "split-dots"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  SplitDotsOptions options_;
};

// reduce-precision to bf16 (exponent_bits=8, mantissa_bits=7), as the split dots round x to x_hi.
bool IsBf16Rounding(const hlo::HloInstruction& instruction);

}  // namespace tpu::compiler
