// First, as XLA's all-reduce combiner, the all-reduces of one computation that share their devices,
// reducer and element type and of which none depends on another (a data-parallel step's psum of each
// gradient) become one all-reduce of a tuple. Then an all-reduce of several arrays (that one, XLA's
// combined all-reduce, lax.psum of a pytree) becomes what the code generator lowers: the small arrays
// (at most 256 lines) whose rows fill whole lines of `lanes` are reshaped to [lines, lanes] -- the
// device layout unchanged, no code -- concatenated, all-reduced together and sliced back; every other
// array gets an all-reduce of its own. Same groups, channel and reducer; every element is combined over
// the same devices in the same order, so the values are the same. The small arrays pay the ring's steps
// and synchronizations once, for a copy of their lines in and out; a large array is bound by its
// bandwidth, and a copy would cost more than the steps it saves.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class TupleAllReduces : public HloPass {
 public:
  explicit TupleAllReduces(int lanes) : lanes_(lanes) {}
  std::string_view name() const override { return "tuple-all-reduces"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  int lanes_;
};

}  // namespace tpu::compiler
