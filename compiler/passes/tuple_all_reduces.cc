#include "compiler/passes/tuple_all_reduces.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;

// Arrays of at most this many lines go together: a ring's steps cost about as much as copying this many
// lines in and out (the combined value is a copy); a larger array is bound by its bandwidth, not by the
// steps, and goes alone.
constexpr int64_t kMaxCombinedLines = 256;

// Whether `shape`'s rows fill whole lines -- then [elements / lanes, lanes] has its device layout -- and
// it is small enough to go with others.
bool CombinesInLines(const hlo::Shape& shape, int lanes) {
  return shape.rank() >= 1 && shape.dimensions.back() % lanes == 0 && shape.ElementCount() > 0 &&
         shape.ElementCount() / lanes <= kMaxCombinedLines;
}

std::string RawOr(const HloInstruction& instruction, const char* name) {
  const std::string* raw = instruction.raw_attribute(name);
  return raw == nullptr ? "-" : *raw;
}

// What all-reduces must share to become one: the devices (groups, channel, id mode), the reducer's
// operation, the element type.
std::string CombineKey(const HloInstruction& all_reduce) {
  const hlo::HloComputation* reducer = all_reduce.to_apply();
  const HloInstruction* root = reducer == nullptr ? nullptr : reducer->root_instruction();
  if (root == nullptr || reducer->num_parameters() != 2 || root->operand_count() != 2 ||
      root->operand(0)->opcode() != hlo::HloOpcode::kParameter ||
      root->operand(1)->opcode() != hlo::HloOpcode::kParameter) {
    return "";
  }
  return RawOr(all_reduce, "replica_groups") + "|" + (all_reduce.raw_attribute("channel_id") ? "c" : "-") + "|" +
         RawOr(all_reduce, "use_global_device_ids") + "|" + hlo::HloOpcodeString(root->opcode()) + "|" +
         hlo::PrimitiveTypeName(all_reduce.shape().element_type);
}

// Whether `from` reaches any of `targets` through its operands.
bool Reaches(const HloInstruction* from, const std::set<const HloInstruction*>& targets,
             std::set<const HloInstruction*>* seen) {
  for (const HloInstruction* operand : from->operands()) {
    if (targets.count(operand) != 0) return true;
    if (!seen->insert(operand).second) continue;
    if (Reaches(operand, targets, seen)) return true;
  }
  return false;
}

// XLA's all-reduce combiner: the all-reduces of one array of a computation that share a CombineKey and
// of which none depends on another become one all-reduce of a tuple (its get-tuple-elements in their
// places). Returns whether it changed anything.
StatusOr<bool> CombineIndependentAllReduces(hlo::HloComputation* computation) {
  std::map<std::string, std::vector<HloInstruction*>> groups;
  for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
    if (instruction->opcode() != hlo::HloOpcode::kAllReduce || instruction->operand_count() != 1 ||
        !instruction->shape().IsArray()) {
      continue;
    }
    const std::string key = CombineKey(*instruction);
    if (!key.empty()) groups[key].push_back(instruction);
  }
  bool changed = false;
  for (auto& [key, members] : groups) {
    // In post order: a member may only join when it reaches none of those already taken.
    std::vector<HloInstruction*> taken;
    std::set<const HloInstruction*> taken_set;
    for (HloInstruction* member : members) {
      std::set<const HloInstruction*> seen;
      if (!taken.empty() && Reaches(member, taken_set, &seen)) continue;
      taken.push_back(member);
      taken_set.insert(member);
    }
    if (taken.size() < 2) continue;
    std::vector<HloInstruction*> operands;
    std::vector<hlo::Shape> shapes;
    for (HloInstruction* member : taken) {
      operands.push_back(member->operand(0));
      shapes.push_back(member->shape());
    }
    HloInstruction* combined = computation->AddInstruction(
        taken.front()->CloneWithNewOperands(hlo::Shape::MakeTuple(shapes), operands));
    for (size_t i = 0; i < taken.size(); ++i) {
      HloInstruction* element = computation->AddInstruction(
          HloInstruction::CreateGetTupleElement(combined, static_cast<int64_t>(i)));
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(taken[i], element));
    }
    changed = true;
  }
  return changed;
}

}  // namespace

StatusOr<bool> TupleAllReduces::Run(hlo::HloModule* module) {
  bool changed = false;
  for (hlo::HloComputation* computation : ProgramComputations(module)) {
    TPU_ASSIGN_OR_RETURN(bool combined, CombineIndependentAllReduces(computation));
    changed = changed || combined;
    for (HloInstruction* all_reduce : computation->MakeInstructionPostOrder()) {
      if (all_reduce->opcode() != hlo::HloOpcode::kAllReduce || !all_reduce->shape().IsTuple()) continue;
      HloBuilder b(computation);
      auto reduce = [&](HloInstruction* operand) {
        return b.Add(all_reduce->CloneWithNewOperands(operand->shape(), {operand}));
      };
      std::vector<HloInstruction*> results(static_cast<size_t>(all_reduce->operand_count()), nullptr);
      // The arrays that go together, by element type: their operand indices.
      std::map<hlo::PrimitiveType, std::vector<size_t>> together;
      for (size_t i = 0; i < results.size(); ++i) {
        const hlo::Shape& shape = all_reduce->operand(static_cast<int64_t>(i))->shape();
        if (CombinesInLines(shape, lanes_)) together[shape.element_type].push_back(i);
      }
      for (auto& [type, indices] : together) {
        if (indices.size() < 2) continue;
        std::vector<HloInstruction*> lines;
        for (size_t i : indices) {
          HloInstruction* operand = all_reduce->operand(static_cast<int64_t>(i));
          lines.push_back(b.Reshape(operand, {operand->shape().ElementCount() / lanes_, lanes_}));
        }
        HloInstruction* combined = reduce(b.Concatenate(lines, 0));
        int64_t row = 0;
        for (size_t k = 0; k < indices.size(); ++k) {
          const int64_t rows = lines[k]->shape().dimensions[0];
          HloInstruction* part = b.Slice(combined, {row, 0}, {row + rows, lanes_}, {1, 1});
          const hlo::Shape& shape = all_reduce->operand(static_cast<int64_t>(indices[k]))->shape();
          results[indices[k]] = b.Reshape(part, shape.dimensions);
          row += rows;
        }
      }
      for (size_t i = 0; i < results.size(); ++i) {
        if (results[i] == nullptr) results[i] = reduce(all_reduce->operand(static_cast<int64_t>(i)));
      }
      HloInstruction* tuple = b.Add(HloInstruction::CreateTuple(results));
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(all_reduce, tuple));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
