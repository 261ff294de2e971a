#include "compiler/passes/topk_rewrite.h"

#include "compiler/passes/hlo_builder.h"

#include <limits>
#include <memory>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;

// An iota along `dimension` of its shape, directly or as a broadcast of a rank-1 iota.
bool IsIotaAlong(const HloInstruction& value, int64_t dimension) {
  if (value.opcode() == HloOpcode::kIota) return value.iota_dimension() == dimension;
  if (value.opcode() != HloOpcode::kBroadcast || value.operand(0)->opcode() != HloOpcode::kIota) return false;
  const HloInstruction& iota = *value.operand(0);
  return iota.shape().rank() == 1 && value.dimensions().size() == 1 && value.dimensions(0) == dimension;
}

// GT or LT of parameters 0 and 1; nullopt otherwise.
bool ComparatorDirection(const HloInstruction& sort, bool* descending) {
  const HloComputation* comparator = sort.to_apply();
  if (comparator == nullptr || comparator->root_instruction() == nullptr) return false;
  const HloInstruction& root = *comparator->root_instruction();
  if (root.opcode() != HloOpcode::kCompare) return false;
  const HloInstruction* a = root.operand(0);
  const HloInstruction* b = root.operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter) return false;
  if (a->parameter_number() != 0 || b->parameter_number() != 1) return false;
  if (root.comparison_direction() == hlo::ComparisonDirection::kGt) {
    *descending = true;
    return true;
  }
  if (root.comparison_direction() == hlo::ComparisonDirection::kLt) {
    *descending = false;
    return true;
  }
  return false;
}

struct TopKMatch {
  HloInstruction* sort;
  int64_t k = -1;
  bool descending = true;
  std::vector<HloInstruction*> value_slices, index_slices;
};

bool Match(HloInstruction* sort, TopKMatch* match) {
  if (sort->operand_count() != 2 || sort->dimensions().size() != 1) return false;
  const Shape& values = sort->operand(0)->shape();
  const Shape& indices = sort->operand(1)->shape();
  if (values.rank() != 2 || sort->dimensions(0) != 1 || values.element_type != PrimitiveType::F32 ||
      indices.element_type != PrimitiveType::S32 || !IsIotaAlong(*sort->operand(1), 1)) {
    return false;
  }
  if (!ComparatorDirection(*sort, &match->descending)) return false;
  match->sort = sort;
  for (HloInstruction* gte : sort->users()) {
    if (gte->opcode() != HloOpcode::kGetTupleElement || gte->user_count() == 0) return false;
    for (HloInstruction* slice : gte->users()) {
      if (slice->opcode() != HloOpcode::kSlice) return false;
      const auto& starts = slice->slice_starts();
      const auto& limits = slice->slice_limits();
      const auto& strides = slice->slice_strides();
      if (starts[0] != 0 || limits[0] != values.dimensions[0] || strides[0] != 1 || starts[1] != 0 ||
          strides[1] != 1) {
        return false;
      }
      if (match->k >= 0 && match->k != limits[1]) return false;
      match->k = limits[1];
      (gte->tuple_index() == 0 ? match->value_slices : match->index_slices).push_back(slice);
    }
  }
  return match->k > 0;
}

Status Rewrite(hlo::HloModule* module, HloComputation* computation, const TopKMatch& m) {
  HloInstruction* values = m.sort->operand(0);
  HloInstruction* iota = m.sort->operand(1);
  const int64_t rows = values->shape().dimensions[0], cols = values->shape().dimensions[1];
  const Shape full_f32 = Shape::MakeWithDefaultLayout(PrimitiveType::F32, {rows, cols});
  const Shape full_s32 = Shape::MakeWithDefaultLayout(PrimitiveType::S32, {rows, cols});
  const Shape full_pred = Shape::MakeWithDefaultLayout(PrimitiveType::PRED, {rows, cols});
  const Shape row_f32 = Shape::MakeWithDefaultLayout(PrimitiveType::F32, {rows});
  const Shape row_s32 = Shape::MakeWithDefaultLayout(PrimitiveType::S32, {rows});
  auto add = [&](std::unique_ptr<HloInstruction> instruction) {
    return computation->AddInstruction(std::move(instruction));
  };
  const float worst = m.descending ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  HloInstruction* worst_value = add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<float>(worst)));
  HloInstruction* worst_full = add(HloInstruction::CreateBroadcast(full_f32, worst_value, {}));
  HloInstruction* no_index = add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(int32_t(cols))));
  HloInstruction* no_index_full = add(HloInstruction::CreateBroadcast(full_s32, no_index, {}));
  HloComputation* best_of = HloBuilder::ScalarReducer(module, m.descending ? HloOpcode::kMaximum : HloOpcode::kMinimum, PrimitiveType::F32);
  HloComputation* first_of = HloBuilder::ScalarReducer(module, HloOpcode::kMinimum, PrimitiveType::S32);
  // The reductions start from their identities (what code generators expect of an init value).
  HloInstruction* largest_index = add(
      HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(std::numeric_limits<int32_t>::max())));

  HloInstruction* remaining = values;   // the values not taken yet, taken ones set to `worst`
  HloInstruction* available = iota;     // the indices not taken yet, taken ones set to cols
  std::vector<HloInstruction*> best_values, best_indices;
  const Shape one_row_f32 = Shape::MakeWithDefaultLayout(PrimitiveType::F32, {1, rows});
  const Shape one_row_s32 = Shape::MakeWithDefaultLayout(PrimitiveType::S32, {1, rows});
  for (int64_t round = 0; round < m.k; ++round) {
    HloInstruction* best = add(HloInstruction::CreateReduce(row_f32, remaining, worst_value, {1}, best_of));
    HloInstruction* best_full = add(HloInstruction::CreateBroadcast(full_f32, best, {0}));
    HloInstruction* is_best = add(HloInstruction::CreateCompare(full_pred, remaining, best_full, hlo::ComparisonDirection::kEq));
    HloInstruction* candidates =
        add(HloInstruction::CreateTernary(full_s32, HloOpcode::kSelect, is_best, available, no_index_full));
    HloInstruction* first = add(HloInstruction::CreateReduce(row_s32, candidates, largest_index, {1}, first_of));
    best_values.push_back(add(HloInstruction::CreateReshape(one_row_f32, best)));
    best_indices.push_back(add(HloInstruction::CreateReshape(one_row_s32, first)));
    if (round + 1 == m.k) break;
    HloInstruction* first_full = add(HloInstruction::CreateBroadcast(full_s32, first, {0}));
    HloInstruction* keep = add(HloInstruction::CreateCompare(full_pred, iota, first_full, hlo::ComparisonDirection::kNe));
    remaining = add(HloInstruction::CreateTernary(full_f32, HloOpcode::kSelect, keep, remaining, worst_full));
    available = add(HloInstruction::CreateTernary(full_s32, HloOpcode::kSelect, keep, available, no_index_full));
  }
  auto gather = [&](const std::vector<HloInstruction*>& parts, PrimitiveType type) {
    HloInstruction* stacked = parts[0];
    if (parts.size() > 1) {
      auto concatenate = HloInstruction::Create(HloOpcode::kConcatenate,
                                                Shape::MakeWithDefaultLayout(type, {m.k, rows}), parts);
      concatenate->set_dimensions({0});
      stacked = add(std::move(concatenate));
    }
    return add(HloInstruction::CreateTranspose(Shape::MakeWithDefaultLayout(type, {rows, m.k}), stacked, {1, 0}));
  };
  if (!m.value_slices.empty()) {
    HloInstruction* top_values = gather(best_values, PrimitiveType::F32);
    for (HloInstruction* slice : m.value_slices) TPU_RETURN_IF_ERROR(slice->ReplaceAllUsesWith(top_values));
  }
  if (!m.index_slices.empty()) {
    HloInstruction* top_indices = gather(best_indices, PrimitiveType::S32);
    for (HloInstruction* slice : m.index_slices) TPU_RETURN_IF_ERROR(slice->ReplaceAllUsesWith(top_indices));
  }
  std::vector<HloInstruction*> dead(m.value_slices);
  dead.insert(dead.end(), m.index_slices.begin(), m.index_slices.end());
  for (HloInstruction* slice : dead) TPU_RETURN_IF_ERROR(RemoveIfDead(computation, slice));
  for (HloInstruction* leftover : {worst_full, no_index_full}) {
    if (leftover->user_count() == 0) TPU_RETURN_IF_ERROR(RemoveIfDead(computation, leftover));
  }
  return OkStatus();
}

}  // namespace

StatusOr<bool> TopKRewrite::Run(hlo::HloModule* module) {
  bool changed = false;
  const std::vector<HloComputation*> computations = module->computations();
  for (HloComputation* computation : computations) {
    std::vector<TopKMatch> matches;
    for (HloInstruction* instruction : computation->instructions()) {
      TopKMatch match;
      if (instruction->opcode() == HloOpcode::kSort && Match(instruction, &match)) matches.push_back(match);
    }
    for (const TopKMatch& match : matches) {
      TPU_RETURN_IF_ERROR(Rewrite(module, computation, match));
      changed = true;
    }
  }
  if (changed) module->RemoveUnusedComputations();
  return changed;
}

}  // namespace tpu::compiler
