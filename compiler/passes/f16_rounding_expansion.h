// f32 -> f16 converts as device arithmetic (the VPU has no f16 rounding): round to nearest even at f16
// precision, with f16 subnormals (multiples of 2^-24), overflow to inf (|x| >= 65520), NaN stays NaN (the
// canonical quiet NaN of its sign, as the interpreter's half conversion gives) and signed zeros kept. On
// the magnitude a = |x| (its bits w, as u32):
//   normal f16 range:     (w + 0x0FFF + ((w >> 13) & 1)) & ~0x1FFF   RNE on the low 13 bits of the word; a
//                                                                    carry moves to the next binade
//   below 2^-14:          (a + 0.5) - 0.5                            the f32 add rounds to a multiple of
//                                                                    2^-24, ties to even (an f32 subnormal
//                                                                    is a zero to the VPU, DAZ: it rounds
//                                                                    to zero anyway)
//   a >= 65520: inf; a NaN: 0x7FC00000; then the sign bit of x put back.
// The rounded f32 words become f16 through a custom-call to "tpusim.ExactF16" (hlo_ir.h): the words are
// the f16 values, which the device keeps as they are.
//   %h = f16[8] convert(f32[8] %x)  ->  %h = f16[8] custom-call(f32[8] <rounded %x>), custom_call_target="tpusim.ExactF16"
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class F16RoundingExpansion : public HloPass {
 public:
  std::string_view name() const override { return "f16-rounding-expansion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

// The f16-rounding-expansion of `x` (f32) into `computation`: the f16[...] custom-call that ends it.
hlo::HloInstruction* ExpandF16Rounding(hlo::HloComputation* computation, hlo::HloInstruction* x);

}  // namespace tpu::compiler
