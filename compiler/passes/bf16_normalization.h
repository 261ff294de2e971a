// bf16 arithmetic as XLA's float normalization does it: an elementwise operation on bf16 values
// becomes the same operation on their f32 values, rounded back to bf16 (round to nearest even):
//   %s = bf16[8] add(bf16[8] %a, bf16[8] %b)
//     ->  %s = bf16[8] convert(f32[8] add(f32[8] convert(%a), f32[8] convert(%b)))
// A compare of bf16 values compares their f32 values. bf16 -> f32 converts are exact (the device keeps a
// bf16 in the f32 word of its value); the f32 -> bf16 convert rounds. Data movement, select, converts
// and dots take bf16 as it is and are left alone, as are reductions.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

// The elementwise operations (and compare) that bf16-normalization and f16-normalization run on f32 values.
bool IsNormalizedArithmetic(hlo::HloOpcode opcode);

class Bf16Normalization : public HloPass {
 public:
  std::string_view name() const override { return "bf16-normalization"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
