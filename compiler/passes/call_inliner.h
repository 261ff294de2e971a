// Call inlining: replaces every `call(...) to_apply=%f` with a copy of %f's instructions, its parameters
// bound to the call's operands, so later passes see one flat computation. Nested calls are inlined too.
// Computations left without callers are removed by dead-code elimination.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

// Bounds the rounds of inlining (each round inlines one level of nesting); the verifier rejects
// recursion, so real modules never come close.
inline constexpr int kMaxInlineNesting = 64;

// Replaces `call` in `caller` by copies of the instructions of `callee`, its parameters bound to the
// call's operands. The copies keep the callee's names (made unique in `caller`), or with `fresh_names`
// are named after their opcode (`add.N`).
Status InlineComputation(hlo::HloComputation* caller, hlo::HloInstruction* call, const hlo::HloComputation& callee,
                         bool fresh_names = false);

class CallInliner : public HloPass {
 public:
  std::string_view name() const override { return "call-inliner"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
