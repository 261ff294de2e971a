// Arithmetic on the narrow integer types as 32-bit integer arithmetic: the device keeps an s8, s16, u8 or
// u16 in a 32-bit word (sign- or zero-extended, compiler/codegen/program.h), so an elementwise operation on
// them becomes the same operation on s32 values, converted back to the narrow type (the convert wraps,
// as two's-complement arithmetic of that width does):
//   %s = s8[8] add(s8[8] %a, s8[8] %b)
//     ->  %s = s8[8] convert(s32[8] add(s32[8] convert(%a), s32[8] convert(%b)))
// A compare of narrow values compares their s32 values. Converts, data movement and select take the
// narrow types as they are. A logical right shift of a signed narrow type is left alone (it shifts the
// narrow width's bits, not the word's): the code generator refuses it.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class IntegerNormalization : public HloPass {
 public:
  std::string_view name() const override { return "integer-normalization"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
