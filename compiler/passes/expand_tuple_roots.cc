#include "compiler/passes/expand_tuple_roots.h"

#include <memory>
#include <vector>

namespace tpu::compiler {

using hlo::HloInstruction;
using hlo::HloOpcode;

StatusOr<bool> ExpandTupleRoots::Run(hlo::HloModule* module) {
  bool changed = false;
  for (hlo::HloComputation* computation : ProgramComputations(module)) {
    HloInstruction* root = computation->root_instruction();
    if (root == nullptr || !root->shape().IsTuple() || root->opcode() == HloOpcode::kTuple) continue;
    if (root->opcode() != HloOpcode::kWhile && root->opcode() != HloOpcode::kConditional) continue;
    bool nested = false;
    for (const hlo::Shape& element : root->shape().tuple_shapes) nested = nested || element.IsTuple();
    if (nested) continue;
    std::vector<HloInstruction*> elements;
    for (size_t i = 0; i < root->shape().tuple_shapes.size(); ++i) {
      std::unique_ptr<HloInstruction> element =
          HloInstruction::Create(HloOpcode::kGetTupleElement, root->shape().tuple_shapes[i], {root});
      element->set_tuple_index(static_cast<int64_t>(i));
      elements.push_back(computation->AddInstruction(std::move(element)));
    }
    computation->set_root_instruction(
        computation->AddInstruction(HloInstruction::Create(HloOpcode::kTuple, root->shape(), elements)));
    changed = true;
  }
  return changed;
}

}  // namespace tpu::compiler
