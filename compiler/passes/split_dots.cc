#include "compiler/passes/split_dots.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// The parts of an operand x, shared by the dots that read it: hi = bf16(x) and rest = x - hi (the lo
// of three passes); for six passes mid = bf16(rest) and lo6 = rest - mid.
struct OperandParts {
  HloInstruction* hi = nullptr;
  HloInstruction* rest = nullptr;
  HloInstruction* mid = nullptr;
  HloInstruction* lo6 = nullptr;
};
using SplitOperands = std::map<HloInstruction*, OperandParts>;

// {hi, lo} for 3 passes, {hi, mid, lo} for 6.
std::vector<HloInstruction*> PartsOf(HloComputation* computation, HloInstruction* operand, int passes,
                                     SplitOperands* split) {
  auto subtract = [&](HloInstruction* a, HloInstruction* b) {
    return computation->AddInstruction(HloInstruction::CreateBinary(a->shape(), HloOpcode::kSubtract, a, b));
  };
  OperandParts& parts = (*split)[operand];
  if (parts.hi == nullptr) {
    parts.hi = AddBf16Rounding(computation, operand);
    parts.rest = subtract(operand, parts.hi);
  }
  if (passes != 6) return {parts.hi, parts.rest};
  if (parts.mid == nullptr) {
    parts.mid = AddBf16Rounding(computation, parts.rest);
    parts.lo6 = subtract(parts.rest, parts.mid);
  }
  return {parts.hi, parts.mid, parts.lo6};
}

// The replacement of a dot of two f32 operands by `passes` (3 or 6) MXU passes.
HloInstruction* SplitDot(HloComputation* computation, HloInstruction* dot, int passes, SplitOperands* parts) {
  const std::vector<HloInstruction*> a = PartsOf(computation, dot->operand(0), passes, parts);
  const std::vector<HloInstruction*> b = PartsOf(computation, dot->operand(1), passes, parts);
  // Products (lhs part, rhs part), smallest first; part 0 is hi, the last lo, mid between.
  static const char* const kNames3[] = {"hi", "lo"};
  static const char* const kNames6[] = {"hi", "mid", "lo"};
  const char* const* names = passes == 6 ? kNames6 : kNames3;
  const std::vector<std::pair<int, int>> products =
      passes == 6 ? std::vector<std::pair<int, int>>{{0, 2}, {2, 0}, {1, 1}, {0, 1}, {1, 0}, {0, 0}}
                  : std::vector<std::pair<int, int>>{{0, 1}, {1, 0}, {0, 0}};
  std::vector<HloInstruction*> terms;
  for (const auto& [i, j] : products) {
    HloInstruction* pass = computation->AddInstruction(dot->CloneWithNewOperands(dot->shape(), {a[i], b[j]}));
    pass->set_name(dot->name() + "." + names[i] + "_" + names[j]);
    pass->remove_raw_attribute("operand_precision");  // one bf16 pass each
    terms.push_back(pass);
  }
  HloInstruction* sum = terms[0];
  for (size_t t = 1; t < terms.size(); ++t) {
    sum = computation->AddInstruction(HloInstruction::CreateBinary(dot->shape(), HloOpcode::kAdd, sum, terms[t]));
  }
  return sum;
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

int PassesForPrecision(const HloInstruction& instruction) {
  const std::string* precision = instruction.raw_attribute("operand_precision");
  if (precision == nullptr) return 1;
  std::string text = *precision;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int passes = 1;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string value = text.substr(start, end - start);
    value.erase(std::remove_if(value.begin(), value.end(), [](char c) { return c == '{' || c == '}' || c == ' '; }),
                value.end());
    if (value == "highest") passes = std::max(passes, 6);
    if (value == "high") passes = std::max(passes, 3);
    start = end + 1;
  }
  return passes;
}

int MxuPasses(const HloInstruction& instruction, int forced_passes) {
  bool all_f32 = instruction.shape().element_type == hlo::PrimitiveType::F32;
  for (const HloInstruction* operand : instruction.operands()) {
    all_f32 = all_f32 && operand->shape().element_type == hlo::PrimitiveType::F32;
  }
  if (!all_f32) return 1;  // the MXU reads bf16 exactly; an f32 operand beside one is rounded once
  return forced_passes != 0 ? forced_passes : PassesForPrecision(instruction);
}

HloInstruction* AddBf16Rounding(HloComputation* computation, HloInstruction* value) {
  HloInstruction* rounded =
      computation->AddInstruction(HloInstruction::Create(HloOpcode::kReducePrecision, value->shape(), {value}));
  rounded->set_raw_attribute("exponent_bits", "8");
  rounded->set_raw_attribute("mantissa_bits", "7");
  return rounded;
}

bool IsBf16Rounding(const HloInstruction& instruction) {
  const std::string* exponent = instruction.raw_attribute("exponent_bits");
  const std::string* mantissa = instruction.raw_attribute("mantissa_bits");
  return instruction.opcode() == HloOpcode::kReducePrecision && exponent != nullptr && mantissa != nullptr &&
         *exponent == "8" && *mantissa == "7";
}

StatusOr<bool> SplitDots::Run(hlo::HloModule* module) {
  if (options_.passes != 0 && options_.passes != 1 && options_.passes != 3 && options_.passes != 6) {
    return InvalidArgument("split-dots: passes must be 0, 1, 3 or 6, not " + std::to_string(options_.passes));
  }
  bool changed = false;
  for (HloComputation* computation : ProgramComputations(module)) {
    const std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
    std::set<const HloInstruction*> sensitive;
    if (options_.only_sensitive_dots) sensitive = FeedSensitiveOps(order);
    SplitOperands parts;
    for (HloInstruction* instruction : order) {
      if (instruction->opcode() != HloOpcode::kDot || instruction->operand_count() != 2) continue;
      const int passes = MxuPasses(*instruction, options_.passes);
      if (passes == 1 || (options_.only_sensitive_dots && sensitive.count(instruction) == 0)) continue;
      HloInstruction* replacement = SplitDot(computation, instruction, passes, &parts);
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(instruction, replacement));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
