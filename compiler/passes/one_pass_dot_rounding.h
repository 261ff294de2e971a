// For a reference evaluation of what the device computes: the f32 operands of every dot and convolution
// the MXU runs in one bf16 pass (DEFAULT precision, or one pass forced) are rounded to bf16
// (`reduce-precision`, exponent_bits=8, mantissa_bits=7), as the MXU rounds them. The interpreter then
// computes what a TPU computes at that precision, up to the order of the f32 additions, where XLA on a
// CPU (and the module as written) multiplies in f32. Dots that split-dots splits (HIGH, HIGHEST, or 3 or 6
// passes forced; compiler/passes/split_dots.h) keep f32 operands: their passes carry 16 or 24 bits.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class OnePassDotRounding : public HloPass {
 public:
  // dot_passes: as CompileOptions::dot_passes (0: each dot's operand_precision).
  explicit OnePassDotRounding(int dot_passes = 0) : dot_passes_(dot_passes) {}
  std::string_view name() const override { return "one-pass-dot-rounding"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  int dot_passes_;
};

}  // namespace tpu::compiler
