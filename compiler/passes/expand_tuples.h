// Gives the code generator a tuple instruction wherever it needs the elements of a tuple-shaped value
// one by one: a program computation's root, a while's initial state and the tuple passed to a
// conditional's branch. A while, a conditional or a parameter there becomes a tuple of its
// get-tuple-elements:
//   ROOT %w = (f32[4], s32[]) while(...)  ->  %w = ... while(...)
//                                            %gte.0 = f32[4] get-tuple-element(%w), index=0
//                                            %gte.1 = s32[] get-tuple-element(%w), index=1
//                                            ROOT %tuple = (f32[4], s32[]) tuple(%gte.0, %gte.1)
//   %w2 = while(%w1)                      ->  %w2 = while(tuple(get-tuple-element(%w1), ...))
// The code generator keeps each element in a buffer of its own (compiler/codegen/control_flow.cc).
// Nested tuples are left as they are.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class ExpandTuples : public HloPass {
 public:
  std::string_view name() const override { return "expand-tuples"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
