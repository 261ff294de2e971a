#include "compiler/passes/elementwise_fusion.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsScalarConstant(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kConstant && instruction.has_literal() && instruction.shape().rank() == 0;
}

// Builds the fusion for `members` (`root` is the one whose value leaves) and removes the members, and
// the broadcasts that were copied in and have no other user (and their scalar constants); adds every
// instruction it removes to `removed`.
Status Fuse(hlo::HloModule* module, HloComputation* computation, HloInstruction* root,
            const std::vector<HloInstruction*>& members_in_post_order, const ElementwiseFusionOptions& options,
            std::unordered_set<const HloInstruction*>* removed) {
  std::unordered_set<const HloInstruction*> members(members_in_post_order.begin(), members_in_post_order.end());
  auto fused = std::make_unique<HloComputation>(UniqueComputationName(*module, "fused_computation." + root->name()));
  std::unordered_map<const HloInstruction*, HloInstruction*> inside;
  std::vector<HloInstruction*> outside_operands;
  std::vector<HloInstruction*> copied_in;
  std::function<HloInstruction*(HloInstruction*)> map_operand;
  auto parameter_for = [&](HloInstruction* operand) -> HloInstruction* {
    auto it = inside.find(operand);
    if (it != inside.end()) return it->second;
    int64_t number = static_cast<int64_t>(outside_operands.size());
    HloInstruction* parameter = fused->AddInstruction(
        HloInstruction::CreateParameter(number, operand->shape(), "param_" + std::to_string(number)));
    outside_operands.push_back(operand);
    inside[operand] = parameter;
    return parameter;
  };
  auto member_operand = [&](const HloInstruction* member, HloInstruction* operand) -> HloInstruction* {
    if (members.count(operand)) return inside.at(operand);
    auto it = inside.find(operand);
    if (it != inside.end()) return it->second;
    if (operand->opcode() == HloOpcode::kBroadcast && options.copy_in(*member, *operand)) {
      // Copied in: the broadcast (and a scalar constant it reads) stays visible to codegen inside the fusion.
      HloInstruction* source = operand->operand(0);
      HloInstruction* source_inside =
          IsScalarConstant(*source) ? fused->AddInstruction(source->CloneWithNewOperands(source->shape(), {}))
                                    : parameter_for(source);
      HloInstruction* broadcast = fused->AddInstruction(operand->CloneWithNewOperands(operand->shape(), {source_inside}));
      inside[operand] = broadcast;
      copied_in.push_back(operand);
      return broadcast;
    }
    return parameter_for(operand);
  };
  HloInstruction* fused_root = nullptr;
  for (HloInstruction* member : members_in_post_order) {
    std::vector<HloInstruction*> operands;
    for (HloInstruction* operand : member->operands()) operands.push_back(member_operand(member, operand));
    HloInstruction* copy = fused->AddInstruction(member->CloneWithNewOperands(member->shape(), operands));
    inside[member] = copy;
    if (member == root) fused_root = copy;
  }
  fused->set_root_instruction(fused_root);
  HloComputation* fused_computation = module->AddEmbeddedComputation(std::move(fused));
  auto fusion = HloInstruction::Create(HloOpcode::kFusion, root->shape(), outside_operands, "fusion." + root->name());
  fusion->set_raw_attribute("kind", "kLoop");
  fusion->AddCalledComputation("calls", fused_computation);
  HloInstruction* added = computation->AddInstruction(std::move(fusion));
  TPU_RETURN_IF_ERROR(root->ReplaceAllUsesWith(added));
  // Members are now used only by each other: remove users before operands.
  for (auto it = members_in_post_order.rbegin(); it != members_in_post_order.rend(); ++it) {
    removed->insert(*it);
    TPU_RETURN_IF_ERROR(computation->RemoveInstruction(*it));
  }
  for (HloInstruction* broadcast : copied_in) {
    if (broadcast->user_count() != 0 || broadcast->IsRoot()) continue;
    HloInstruction* source = broadcast->operand(0);
    removed->insert(broadcast);
    TPU_RETURN_IF_ERROR(computation->RemoveInstruction(broadcast));
    if (IsScalarConstant(*source) && source->user_count() == 0 && !source->IsRoot()) {
      removed->insert(source);
      TPU_RETURN_IF_ERROR(computation->RemoveInstruction(source));
    }
  }
  return OkStatus();
}

}  // namespace

bool IsScalarConstantBroadcast(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kBroadcast && IsScalarConstant(*instruction.operand(0));
}

bool IsFusibleElementwise(const HloInstruction& instruction) {
  HloOpcode opcode = instruction.opcode();
  if (!instruction.shape().IsArray()) return false;
  if (hlo::IsElementwiseUnary(opcode) || hlo::IsElementwiseBinary(opcode)) {
    // Bitcast-convert reinterprets bits; keeping it out keeps fusions to plain arithmetic.
    return opcode != HloOpcode::kBitcastConvert;
  }
  if (opcode == HloOpcode::kSelect || opcode == HloOpcode::kClamp) {
    // Scalar predicates or bounds are broadcasts in disguise: only the plain elementwise forms.
    for (const HloInstruction* operand : instruction.operands())
      if (operand->shape().dimensions != instruction.shape().dimensions) return false;
    return true;
  }
  return false;
}

StatusOr<bool> ElementwiseFusion::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : ProgramComputations(module)) {
    std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
    std::unordered_set<const HloInstruction*> removed;
    // Consumers first: each unfused elementwise instruction roots a group and pulls producers in.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      HloInstruction* root = *it;
      if (removed.count(root) || !options_.fusible(*root)) continue;
      std::unordered_set<const HloInstruction*> group = {root};
      std::vector<HloInstruction*> group_list = {root};
      // To a fixed point: a producer shared by two members qualifies once both are in.
      for (bool grew = true; grew;) {
        grew = false;
        for (size_t m = 0; m < group_list.size(); ++m) {
          for (HloInstruction* operand : group_list[m]->operands()) {
            if (group.count(operand) || !options_.fusible(*operand)) continue;
            if (operand->IsRoot()) continue;  // its value must exist outside
            if (operand->shape().dimensions != root->shape().dimensions) continue;
            bool only_group_users = std::all_of(operand->users().begin(), operand->users().end(),
                                                [&](const HloInstruction* user) { return group.count(user) > 0; });
            if (!only_group_users) continue;
            group.insert(operand);
            group_list.push_back(operand);
            grew = true;
          }
        }
      }
      if (group.size() < 2) continue;
      // Members in the computation's post order, so operands are copied before their users.
      std::vector<HloInstruction*> members;
      for (HloInstruction* instruction : order)
        if (group.count(instruction)) members.push_back(instruction);
      TPU_RETURN_IF_ERROR(Fuse(module, computation, root, members, options_, &removed));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
