// Splits f32 dots of the entry computation into MXU passes on bf16 values (the MXU multiplies bf16), as
// XLA on a TPU reads a dot's precision_config (`operand_precision={high,high}` in HLO text; the higher
// operand counts, and a convolution's passes to the dots it is lowered to):
//   DEFAULT (or none): one pass. Not rewritten: codegen rounds the operands to bf16.
//   HIGH (bf16_3x): dot(a, b) = dot(a_hi, b_lo) + dot(a_lo, b_hi) + dot(a_hi, b_hi), x_hi = bf16(x),
//     x_lo = x - x_hi. Only lo*lo (below 2^-16 relative) is left out: about 16 significant bits.
//   HIGHEST (bf16_6x): x = x_hi + x_mid + x_lo with x_mid = bf16(x - x_hi), x_lo = x - x_hi - x_mid;
//     hi*lo + lo*hi + mid*mid + hi*mid + mid*hi + hi*hi, the terms below 2^-24 relative left out: about
//     f32's 24 bits.
// Every pass multiplies bf16 values exactly; the small terms are added first. The passes are named after
// the dot (`dot.3.hi_lo`, `.lo_hi`, `.hi_hi`, ...) so that the code listing and the padding report say
// where each comes from.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

struct SplitDotsOptions {
  // 0: each dot's own precision (above); 1, 3 or 6: that many passes for every f32 dot, whatever it asks.
  int passes = 0;
  // Only the dots whose values reach a compare (a decision, a ReLU mask, the bf16 rounding could flip) or
  // an exp or log (which amplify the error) keep more than one pass: what the compiler falls back to when
  // the program does not fit the IMEM.
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

// MXU passes a dot or convolution asks for with its operand_precision: 1 (DEFAULT, none), 3 (HIGH) or
// 6 (HIGHEST).
int PassesForPrecision(const hlo::HloInstruction& instruction);

// The MXU passes split-dots gives a dot or convolution, with `forced_passes` as SplitDotsOptions::passes:
// 1 when it is not split (DEFAULT precision, one pass forced, or a result or operand that is not f32).
int MxuPasses(const hlo::HloInstruction& instruction, int forced_passes);

// reduce-precision to bf16 (exponent_bits=8, mantissa_bits=7), as the split dots round x to x_hi.
bool IsBf16Rounding(const hlo::HloInstruction& instruction);
// Adds that rounding of `value` to `computation`.
hlo::HloInstruction* AddBf16Rounding(hlo::HloComputation* computation, hlo::HloInstruction* value);

}  // namespace tpu::compiler
