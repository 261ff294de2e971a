#include "compiler/passes/cse.h"

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/hlo/printer.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool MayMerge(const HloInstruction& instruction) {
  if (instruction.HasSideEffect()) return false;  // also a while or call that runs an infeed, say
  switch (instruction.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kAfterAll:
    case HloOpcode::kCustomCall:
    case HloOpcode::kUnknown:
      return false;
    case HloOpcode::kConstant:
      return instruction.has_literal();
    default:
      return true;
  }
}

// The instruction's text without its name and metadata: equal keys mean equal values, because operands
// are named by the (already merged) instructions that compute them.
std::string Key(const HloInstruction& instruction) {
  std::string line = hlo::PrintHloInstruction(instruction);
  size_t equals = line.find(" = ");
  if (equals != std::string::npos) line.erase(0, equals + 3);
  if (const std::string* metadata = instruction.raw_attribute("metadata")) {
    std::string attribute = ", metadata=" + *metadata;
    size_t at = line.find(attribute);
    if (at != std::string::npos) line.erase(at, attribute.size());
  }
  // The layout is part of the printed shape on purpose: values in different layouts are not merged.
  return line;
}

}  // namespace

StatusOr<bool> CommonSubexpressionElimination::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    std::unordered_map<std::string, HloInstruction*> seen;
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (!MayMerge(*instruction)) continue;
      auto [it, inserted] = seen.emplace(Key(*instruction), instruction);
      if (inserted) continue;
      TPU_RETURN_IF_ERROR(instruction->ReplaceAllUsesWith(it->second));
      TPU_RETURN_IF_ERROR(RemoveIfDead(computation, instruction));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
