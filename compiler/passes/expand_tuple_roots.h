// Makes each program computation's tuple-shaped root that is not a tuple instruction (a while or a
// conditional, whose elements the code generator keeps in buffers of their own) a tuple of its
// get-tuple-elements:
//   ROOT %w = (f32[4], s32[]) while(...)  ->  %w = ... while(...)
//                                            %gte.0 = f32[4] get-tuple-element(%w), index=0
//                                            %gte.1 = s32[] get-tuple-element(%w), index=1
//                                            ROOT %tuple = (f32[4], s32[]) tuple(%gte.0, %gte.1)
// The entry's outputs, a loop body's next state and a branch's results are then tuples of values. Nested
// tuples are left as they are.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class ExpandTupleRoots : public HloPass {
 public:
  std::string_view name() const override { return "expand-tuple-roots"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
