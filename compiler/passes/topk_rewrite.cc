#include "compiler/passes/topk_rewrite.h"

#include "compiler/passes/hlo_builder.h"
#include "compiler/hlo/attributes.h"

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

// GT or LT of parameters 0 and 1 (with `total_order` when type=TOTALORDER); false otherwise.
bool ComparatorDirection(const HloInstruction& sort, bool* descending, bool* total_order) {
  const HloComputation* comparator = sort.to_apply();
  if (comparator == nullptr || comparator->root_instruction() == nullptr) return false;
  const HloInstruction& root = *comparator->root_instruction();
  if (root.opcode() != HloOpcode::kCompare) return false;
  const HloInstruction* a = root.operand(0);
  const HloInstruction* b = root.operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter) return false;
  if (a->parameter_number() != 0 || b->parameter_number() != 1) return false;
  *total_order = root.comparison_type() == "TOTALORDER";
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
  bool total_order = false;
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
  if (!ComparatorDirection(*sort, &match->descending, &match->total_order)) return false;
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

struct TopK {
  HloInstruction* values;   // [rows, k]
  HloInstruction* indices;  // [rows, k]
};

// k rounds of best value and first index over the rows of `values` [rows, cols] (f32) with `iota` their
// positions along dimension 1. With `total_order` the rounds run on the s32 keys of the words, so that
// NaN, infinities and signed zeros take their total-order places exactly.
TopK Rounds(hlo::HloModule* module, HloComputation* computation, HloInstruction* values, HloInstruction* iota,
            int64_t k, bool descending, bool total_order) {
  const int64_t rows = values->shape().dimensions[0], cols = values->shape().dimensions[1];
  const PrimitiveType type = total_order ? PrimitiveType::S32 : PrimitiveType::F32;
  ElementwiseBuilder full(computation, {rows, cols});
  if (total_order) values = full.TotalOrderKey(full.Bitcast(values, PrimitiveType::S32));
  const Shape full_type = Shape::MakeWithDefaultLayout(type, {rows, cols});
  const Shape full_s32 = Shape::MakeWithDefaultLayout(PrimitiveType::S32, {rows, cols});
  const Shape full_pred = Shape::MakeWithDefaultLayout(PrimitiveType::PRED, {rows, cols});
  const Shape row_type = Shape::MakeWithDefaultLayout(type, {rows});
  const Shape row_s32 = Shape::MakeWithDefaultLayout(PrimitiveType::S32, {rows});
  auto add = [&](std::unique_ptr<HloInstruction> instruction) {
    return computation->AddInstruction(std::move(instruction));
  };
  hlo::Literal worst_literal = hlo::Literal::CreateR0<float>(descending ? -std::numeric_limits<float>::infinity()
                                                                         : std::numeric_limits<float>::infinity());
  if (total_order) worst_literal = hlo::Literal::CreateR0<int32_t>(descending ? INT32_MIN : INT32_MAX);
  HloInstruction* worst_value = add(HloInstruction::CreateConstant(std::move(worst_literal)));
  HloInstruction* worst_full = add(HloInstruction::CreateBroadcast(full_type, worst_value, {}));
  HloInstruction* no_index = add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(int32_t(cols))));
  HloInstruction* no_index_full = add(HloInstruction::CreateBroadcast(full_s32, no_index, {}));
  HloComputation* best_of = HloBuilder::ScalarReducer(module, descending ? HloOpcode::kMaximum : HloOpcode::kMinimum, type);
  HloComputation* first_of = HloBuilder::ScalarReducer(module, HloOpcode::kMinimum, PrimitiveType::S32);
  // The reductions start from their identities (what code generators expect of an init value).
  HloInstruction* largest_index = add(
      HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(std::numeric_limits<int32_t>::max())));

  HloInstruction* remaining = values;   // the values not taken yet, taken ones set to `worst`
  HloInstruction* available = iota;     // the indices not taken yet, taken ones set to cols
  std::vector<HloInstruction*> best_values, best_indices;
  const Shape one_row_type = Shape::MakeWithDefaultLayout(type, {1, rows});
  const Shape one_row_s32 = Shape::MakeWithDefaultLayout(PrimitiveType::S32, {1, rows});
  for (int64_t round = 0; round < k; ++round) {
    HloInstruction* best = add(HloInstruction::CreateReduce(row_type, remaining, worst_value, {1}, best_of));
    HloInstruction* best_full = add(HloInstruction::CreateBroadcast(full_type, best, {0}));
    HloInstruction* is_best = add(HloInstruction::CreateCompare(full_pred, remaining, best_full, hlo::ComparisonDirection::kEq));
    HloInstruction* candidates =
        add(HloInstruction::CreateTernary(full_s32, HloOpcode::kSelect, is_best, available, no_index_full));
    HloInstruction* first = add(HloInstruction::CreateReduce(row_s32, candidates, largest_index, {1}, first_of));
    best_values.push_back(add(HloInstruction::CreateReshape(one_row_type, best)));
    best_indices.push_back(add(HloInstruction::CreateReshape(one_row_s32, first)));
    if (round + 1 == k) break;
    HloInstruction* first_full = add(HloInstruction::CreateBroadcast(full_s32, first, {0}));
    HloInstruction* keep = add(HloInstruction::CreateCompare(full_pred, iota, first_full, hlo::ComparisonDirection::kNe));
    remaining = add(HloInstruction::CreateTernary(full_type, HloOpcode::kSelect, keep, remaining, worst_full));
    available = add(HloInstruction::CreateTernary(full_s32, HloOpcode::kSelect, keep, available, no_index_full));
  }
  auto gather = [&](const std::vector<HloInstruction*>& parts, PrimitiveType part_type) {
    HloInstruction* stacked = parts[0];
    if (parts.size() > 1) {
      auto concatenate = HloInstruction::Create(HloOpcode::kConcatenate,
                                                Shape::MakeWithDefaultLayout(part_type, {k, rows}), parts);
      concatenate->set_dimensions({0});
      stacked = add(std::move(concatenate));
    }
    return add(HloInstruction::CreateTranspose(Shape::MakeWithDefaultLayout(part_type, {rows, k}), stacked, {1, 0}));
  };
  TopK top{gather(best_values, type), gather(best_indices, PrimitiveType::S32)};
  if (total_order) {
    ElementwiseBuilder result(computation, {rows, k});
    top.values = result.Bitcast(result.TotalOrderKey(top.values), PrimitiveType::F32);  // its own inverse
  }
  for (HloInstruction* leftover : {worst_full, no_index_full}) {
    if (leftover->user_count() == 0) (void)RemoveIfDead(computation, leftover);
  }
  return top;
}

Status Rewrite(hlo::HloModule* module, HloComputation* computation, const TopKMatch& m) {
  const TopK top = Rounds(module, computation, m.sort->operand(0), m.sort->operand(1), m.k, m.descending, m.total_order);
  for (HloInstruction* slice : m.value_slices) TPU_RETURN_IF_ERROR(slice->ReplaceAllUsesWith(top.values));
  for (HloInstruction* slice : m.index_slices) TPU_RETURN_IF_ERROR(slice->ReplaceAllUsesWith(top.indices));
  std::vector<HloInstruction*> dead(m.value_slices);
  dead.insert(dead.end(), m.index_slices.begin(), m.index_slices.end());
  for (HloInstruction* slice : dead) TPU_RETURN_IF_ERROR(RemoveIfDead(computation, slice));
  return OkStatus();
}

// XLA's topk op (JAX's lax.top_k): f32 values as k rounds over their total-order keys (leading dimensions
// merged into rows); other element types as a stable sort of (values, positions) along the last dimension
// in the total order, sliced to k (sort-expansion lowers it).
HloInstruction* ExpandTopKOp(hlo::HloModule* module, HloComputation* computation, HloInstruction* topk) {
  StatusOr<hlo::TopKAttributes> attributes = hlo::GetTopKAttributes(*topk);
  if (!attributes.ok()) return nullptr;
  HloBuilder b(computation);
  HloInstruction* operand = topk->operand(0);
  const Shape& shape = operand->shape();
  const int64_t cols = shape.dimensions.back(), k = attributes->k;
  const int64_t rows = cols == 0 ? 0 : shape.ElementCount() / cols;
  const Shape& values_shape = topk->shape().tuple_shapes[0];
  const Shape& indices_shape = topk->shape().tuple_shapes[1];
  if (k == 0 || rows == 0) return nullptr;
  if (shape.element_type == PrimitiveType::F32) {
    HloInstruction* values = b.Reshape(operand, {rows, cols});
    HloInstruction* iota = b.Add(HloInstruction::CreateIota(HloBuilder::ShapeOf(PrimitiveType::S32, {rows, cols}), 1));
    const TopK top = Rounds(module, computation, values, iota, k, attributes->largest, /*total_order=*/true);
    return b.Add(HloInstruction::CreateTuple(
        {b.Reshape(top.values, values_shape.dimensions), b.Reshape(top.indices, indices_shape.dimensions)}));
  }
  // The comparator: compare(p0, p1), GT (largest) or LT, in the total order.
  auto comparator = std::make_unique<HloComputation>(UniqueComputationName(*module, "topk_comparator"));
  const Shape scalar = Shape::Make(shape.element_type, {}), index = Shape::Make(PrimitiveType::S32, {});
  HloInstruction* p0 = comparator->AddInstruction(HloInstruction::CreateParameter(0, scalar, "a"));
  HloInstruction* p1 = comparator->AddInstruction(HloInstruction::CreateParameter(1, scalar, "b"));
  comparator->AddInstruction(HloInstruction::CreateParameter(2, index, "i"));
  comparator->AddInstruction(HloInstruction::CreateParameter(3, index, "j"));
  HloInstruction* compare = comparator->AddInstruction(HloInstruction::CreateCompare(
      Shape::Make(PrimitiveType::PRED, {}), p0, p1,
      attributes->largest ? hlo::ComparisonDirection::kGt : hlo::ComparisonDirection::kLt));
  if (hlo::IsFloatingPointType(shape.element_type)) compare->set_comparison_type("TOTALORDER");
  comparator->set_root_instruction(compare);
  HloComputation* less = module->AddEmbeddedComputation(std::move(comparator));
  HloInstruction* iota = b.Add(HloInstruction::CreateIota(
      HloBuilder::ShapeOf(PrimitiveType::S32, shape.dimensions), shape.rank() - 1));
  auto sort = HloInstruction::Create(HloOpcode::kSort, Shape::MakeTuple({shape, iota->shape()}), {operand, iota});
  sort->set_dimensions({shape.rank() - 1});
  sort->set_is_stable(true);
  sort->set_to_apply(less);
  HloInstruction* sorted = b.Add(std::move(sort));
  std::vector<int64_t> starts(shape.rank(), 0), limits = shape.dimensions, strides(shape.rank(), 1);
  limits.back() = k;
  std::vector<HloInstruction*> results;
  for (int64_t i = 0; i < 2; ++i) {
    results.push_back(b.Slice(b.Add(HloInstruction::CreateGetTupleElement(sorted, i)), starts, limits, strides));
  }
  return b.Add(HloInstruction::CreateTuple(results));
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
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (instruction->opcode() != HloOpcode::kTopK) continue;
      if (HloInstruction* replacement = ExpandTopKOp(module, computation, instruction)) {
        TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(instruction, replacement));
        changed = true;
      }
    }
  }
  if (changed) module->RemoveUnusedComputations();
  return changed;
}

}  // namespace tpu::compiler
