// An all-reduce of several operands (XLA's combined all-reduce, lax.psum of a pytree: a tuple result)
// becomes one all-reduce per operand, with the same groups, channel and reducer, and a tuple of their
// results: each element is combined over the same devices in the same order, so the values are the same.
// The code generator lowers all-reduces of one array.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class SplitTupleAllReduces : public HloPass {
 public:
  std::string_view name() const override { return "split-tuple-all-reduces"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
