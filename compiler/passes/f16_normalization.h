// f16 (IEEE half) arithmetic as XLA on the CPU computes it: an elementwise operation or compare of f16
// values runs on their f32 values and an f16 result is rounded back (the operations of bf16-normalization):
//   %s = f16[8] add(f16[8] %a, f16[8] %b)
//     ->  %s = f16[8] convert(f32[8] add(f32[8] convert(%a), f32[8] convert(%b)))
// For + - * / and sqrt one f32 operation and one rounding give the correctly rounded f16 result (f32 has
// more than 2 * 11 + 2 significant bits). Besides:
//   - converts between f16 and any type but f32 go through f32 (f16 -> f32 is exact, and every s32, u32
//     or bf16 value that does not overflow f16 is exact in f32, so the one rounding is the convert's own);
//   - dots and convolutions with f16 operands or result run on f32 operands with operand_precision
//     HIGHEST (six bf16 MXU passes, split-dots: the products of f16 values, 11 significant bits, are exact)
//     and an f16 result is rounded from the f32 sum;
//   - add, maximum and minimum reductions of f16 values reduce their f32 values (with the f32 reducer)
//     and round the result once: the sum is not rounded to f16 after every step.
// The f32 -> f16 converts this writes are the arithmetic of f16-rounding-expansion.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class F16Normalization : public HloPass {
 public:
  std::string_view name() const override { return "f16-normalization"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
