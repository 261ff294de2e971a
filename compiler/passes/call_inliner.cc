#include "compiler/passes/call_inliner.h"

#include <unordered_map>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// Bounds the rounds of inlining (each round inlines one level of nesting); the verifier rejects
// recursion, so real modules never come close.
constexpr int kMaxNesting = 64;

Status InlineCall(HloComputation* caller, HloInstruction* call) {
  const HloComputation* callee = call->to_apply();
  if (callee == nullptr || callee->root_instruction() == nullptr)
    return InvalidArgument("call %" + call->name() + " has no callee to inline");
  if (callee->num_parameters() != call->operand_count())
    return InvalidArgument("call %" + call->name() + " passes " + std::to_string(call->operand_count()) +
                           " operands to %" + callee->name() + ", which takes " +
                           std::to_string(callee->num_parameters()));
  std::unordered_map<const HloInstruction*, HloInstruction*> copies;
  for (int64_t i = 0; i < callee->num_parameters(); ++i) copies[callee->parameter_instruction(i)] = call->operand(i);
  for (const HloInstruction* instruction : callee->MakeInstructionPostOrder()) {
    if (instruction->opcode() == HloOpcode::kParameter) continue;
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* operand : instruction->operands()) operands.push_back(copies.at(operand));
    copies[instruction] = caller->AddInstruction(instruction->CloneWithNewOperands(instruction->shape(), operands));
  }
  return caller->ReplaceInstruction(call, copies.at(callee->root_instruction()));
}

}  // namespace

StatusOr<bool> CallInliner::Run(hlo::HloModule* module) {
  bool changed = false;
  for (int round = 0; round < kMaxNesting; ++round) {
    bool inlined = false;
    for (HloComputation* computation : module->computations()) {
      std::vector<HloInstruction*> calls;
      for (HloInstruction* instruction : computation->instructions())
        if (instruction->opcode() == HloOpcode::kCall && instruction->to_apply() != computation) calls.push_back(instruction);
      for (HloInstruction* call : calls) TPU_RETURN_IF_ERROR(InlineCall(computation, call));
      inlined |= !calls.empty();
    }
    if (!inlined) return changed;
    changed = true;
  }
  return FailedPrecondition("calls nested deeper than " + std::to_string(kMaxNesting) + " levels (recursion?)");
}

}  // namespace tpu::compiler
