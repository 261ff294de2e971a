// The device holds s64 values as s32 words (compiler/codegen/README.md, "Element types"), which is exact
// only while every s64 value stays in the s32 range. Values that enter the device are checked there
// (parameters, infeed: refused when outside); this pass checks what the program computes. It bounds every
// integer value of the program computations by an interval:
//  - s64 parameters: the s32 range (the transfer refuses the rest); other integers: their type's range;
//    constants and iota: their values; data movement (broadcast, reshape, slice, gather, select, ...) keeps
//    its operands' bounds; add, subtract, multiply, negate, abs, maximum, minimum, clamp, and with a
//    non-negative operand, shifts right, sums (reduce add: times the elements reduced) by interval
//    arithmetic; converts clip to the target type;
//  - a while loop's state starts from its initial values; an element whose body result is not inside
//    the bounds assumed for it is widened to its type's range and the body bounded again;
//  - anything else (a convert from a float, an infeed) may be anything its type holds.
// The first s64 instruction that may produce a value outside the s32 range stops compilation
// (Unimplemented, naming it, its bounds and where it was defined): the device would wrap it at 32 bits.
// The module is not changed.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class S64RangeCheck : public HloPass {
 public:
  std::string_view name() const override { return "s64-range-check"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
