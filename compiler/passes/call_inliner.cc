#include "compiler/passes/call_inliner.h"

#include <memory>
#include <unordered_map>
#include <vector>

namespace tpu::compiler {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

Status InlineComputation(HloComputation* caller, HloInstruction* call, const HloComputation& callee, bool fresh_names) {
  if (callee.root_instruction() == nullptr) return InvalidArgument("call %" + call->name() + " has no callee to inline");
  if (callee.num_parameters() != call->operand_count())
    return InvalidArgument("call %" + call->name() + " passes " + std::to_string(call->operand_count()) +
                           " operands to %" + callee.name() + ", which takes " +
                           std::to_string(callee.num_parameters()));
  std::unordered_map<const HloInstruction*, HloInstruction*> copies;
  for (int64_t i = 0; i < callee.num_parameters(); ++i) copies[callee.parameter_instruction(i)] = call->operand(i);
  for (const HloInstruction* instruction : callee.MakeInstructionPostOrder()) {
    if (instruction->opcode() == HloOpcode::kParameter) continue;
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* operand : instruction->operands()) operands.push_back(copies.at(operand));
    std::unique_ptr<HloInstruction> copy = instruction->CloneWithNewOperands(instruction->shape(), operands);
    if (fresh_names) copy->set_name("");
    copies[instruction] = caller->AddInstruction(std::move(copy));
  }
  return caller->ReplaceInstruction(call, copies.at(callee.root_instruction()));
}

StatusOr<bool> CallInliner::Run(hlo::HloModule* module) {
  bool changed = false;
  for (int round = 0; round < kMaxInlineNesting; ++round) {
    bool inlined = false;
    for (HloComputation* computation : module->computations()) {
      std::vector<HloInstruction*> calls;
      for (HloInstruction* instruction : computation->instructions())
        if (instruction->opcode() == HloOpcode::kCall && instruction->to_apply() != computation) calls.push_back(instruction);
      for (HloInstruction* call : calls) {
        if (call->to_apply() == nullptr) return InvalidArgument("call %" + call->name() + " has no callee to inline");
        TPU_RETURN_IF_ERROR(InlineComputation(computation, call, *call->to_apply()));
      }
      inlined |= !calls.empty();
    }
    if (!inlined) return changed;
    changed = true;
  }
  return FailedPrecondition("calls nested deeper than " + std::to_string(kMaxInlineNesting) + " levels (recursion?)");
}

}  // namespace tpu::compiler
