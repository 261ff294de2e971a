#include "compiler/passes/inline_calls_and_fusions.h"

#include <vector>

#include "compiler/passes/call_inliner.h"

namespace tpu::compiler {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

StatusOr<bool> InlineCallsAndFusions::Run(hlo::HloModule* module) {
  // Each round inlines one level of nesting: a callee may call again.
  for (int round = 0;; ++round) {
    std::vector<std::pair<HloComputation*, HloInstruction*>> calls;
    for (HloComputation* computation : ProgramComputations(module)) {
      for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
        if (instruction->opcode() == HloOpcode::kCall || instruction->opcode() == HloOpcode::kFusion) {
          calls.push_back({computation, instruction});
        }
      }
    }
    if (calls.empty()) return round > 0;
    if (round >= kMaxInlineNesting) {
      return InvalidArgument("module " + module->name() + ": calls nested deeper than " +
                             std::to_string(kMaxInlineNesting) + " levels");
    }
    for (auto [caller, call] : calls) {
      // call: to_apply=; fusion: calls= (its only called computation).
      const HloComputation* callee = call->to_apply();
      if (callee == nullptr && call->opcode() == HloOpcode::kFusion && call->called_computations().size() == 1) {
        callee = call->called_computations()[0];
      }
      if (callee == nullptr) return InvalidArgument("call " + call->name() + " has no computation to inline");
      TPU_RETURN_IF_ERROR(InlineComputation(caller, call, *callee, /*fresh_names=*/true));
    }
  }
}

}  // namespace tpu::compiler
