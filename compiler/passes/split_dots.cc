#include "compiler/passes/split_dots.h"

#include <map>
#include <set>
#include <utility>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

HloInstruction* RoundToBf16(HloComputation* computation, HloInstruction* value) {
  HloInstruction* rounded =
      computation->AddInstruction(HloInstruction::Create(HloOpcode::kReducePrecision, value->shape(), {value}));
  rounded->set_raw_attribute("exponent_bits", "8");
  rounded->set_raw_attribute("mantissa_bits", "7");
  return rounded;
}

// The (hi, lo) parts of each operand already split, shared by the dots that read it.
using SplitOperands = std::map<HloInstruction*, std::pair<HloInstruction*, HloInstruction*>>;

// Returns the replacement of `dot` or nullptr.
HloInstruction* SplitDot(HloComputation* computation, HloInstruction* dot, SplitOperands* parts) {
  if (dot->shape().element_type != hlo::PrimitiveType::F32 || dot->operand_count() != 2) return nullptr;
  HloInstruction* split[2][2];
  for (int side = 0; side < 2; ++side) {
    HloInstruction* operand = dot->operand(side);
    if (operand->shape().element_type != hlo::PrimitiveType::F32) return nullptr;
    auto it = parts->find(operand);
    if (it == parts->end()) {
      HloInstruction* hi = RoundToBf16(computation, operand);
      HloInstruction* lo = computation->AddInstruction(
          HloInstruction::CreateBinary(operand->shape(), HloOpcode::kSubtract, operand, hi));
      it = parts->emplace(operand, std::make_pair(hi, lo)).first;
    }
    split[side][0] = it->second.first;
    split[side][1] = it->second.second;
  }
  auto pass = [&](HloInstruction* lhs, HloInstruction* rhs) {
    return computation->AddInstruction(dot->CloneWithNewOperands(dot->shape(), {lhs, rhs}));
  };
  HloInstruction* hi_lo = pass(split[0][0], split[1][1]);
  HloInstruction* lo_hi = pass(split[0][1], split[1][0]);
  HloInstruction* hi_hi = pass(split[0][0], split[1][0]);
  hi_lo->set_name(dot->name() + ".hi_lo");
  lo_hi->set_name(dot->name() + ".lo_hi");
  hi_hi->set_name(dot->name() + ".hi_hi");
  HloInstruction* small =
      computation->AddInstruction(HloInstruction::CreateBinary(dot->shape(), HloOpcode::kAdd, hi_lo, lo_hi));
  return computation->AddInstruction(HloInstruction::CreateBinary(dot->shape(), HloOpcode::kAdd, small, hi_hi));
}

// The instructions whose values reach a compare, an exp or a log.
std::set<const HloInstruction*> FeedSensitiveOps(const std::vector<HloInstruction*>& post_order) {
  std::set<const HloInstruction*> feeding;
  for (auto it = post_order.rbegin(); it != post_order.rend(); ++it) {
    const HloOpcode opcode = (*it)->opcode();
    const bool sensitive = opcode == HloOpcode::kCompare || opcode == HloOpcode::kExp || opcode == HloOpcode::kLog;
    if (!sensitive && feeding.count(*it) == 0) continue;
    for (const HloInstruction* operand : (*it)->operands()) feeding.insert(operand);
  }
  return feeding;
}

}  // namespace

bool IsBf16Rounding(const HloInstruction& instruction) {
  const std::string* exponent = instruction.raw_attribute("exponent_bits");
  const std::string* mantissa = instruction.raw_attribute("mantissa_bits");
  return instruction.opcode() == HloOpcode::kReducePrecision && exponent != nullptr && mantissa != nullptr &&
         *exponent == "8" && *mantissa == "7";
}

StatusOr<bool> SplitDots::Run(hlo::HloModule* module) {
  HloComputation* entry = module->entry_computation();
  if (entry == nullptr) return false;
  const std::vector<HloInstruction*> order = entry->MakeInstructionPostOrder();
  std::set<const HloInstruction*> sensitive;
  if (options_.only_sensitive_dots) sensitive = FeedSensitiveOps(order);
  SplitOperands parts;
  bool changed = false;
  for (HloInstruction* instruction : order) {
    if (instruction->opcode() != HloOpcode::kDot) continue;
    if (options_.only_sensitive_dots && sensitive.count(instruction) == 0) continue;
    HloInstruction* replacement = SplitDot(entry, instruction, &parts);
    if (replacement == nullptr) continue;
    TPU_RETURN_IF_ERROR(entry->ReplaceInstruction(instruction, replacement));
    changed = true;
  }
  return changed;
}

}  // namespace tpu::compiler
