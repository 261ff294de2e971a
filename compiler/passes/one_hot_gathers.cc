#include "compiler/passes/one_hot_gathers.h"

#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "compiler/hlo/attributes.h"
#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

// How the index reaches each row of P: the indices reshaped to P's shape without c (one per row), or
// one index for every row.
struct Selection {
  int64_t c = 0;
  HloInstruction* index = nullptr;  // s32: [P without c] or []
};

std::vector<int64_t> AllBut(int rank, int64_t c) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != c) dims.push_back(d);
  }
  return dims;
}

// The dimensions of P but c.
std::vector<int64_t> RowDims(const hlo::Shape& p, int64_t c) {
  std::vector<int64_t> rows;
  for (int64_t d : AllBut(p.rank(), c)) rows.push_back(p.dimensions[d]);
  return rows;
}

// The selection of a gather or scatter in one of the recognized forms (see the header), or nullopt.
std::optional<Selection> Match(HloBuilder& b, HloInstruction* instruction) {
  const bool gather = instruction->opcode() == HloOpcode::kGather;
  const hlo::Shape& p = instruction->operand(0)->shape();
  HloInstruction* indices = instruction->operand(1);
  const hlo::Shape& is = indices->shape();
  if (is.element_type != PrimitiveType::S32 ||
      (p.element_type != PrimitiveType::F32 && p.element_type != PrimitiveType::S32)) {
    return std::nullopt;
  }
  std::vector<int64_t> single, batching, index_batching;
  int64_t index_vector_dim = 0;
  if (gather) {
    StatusOr<hlo::GatherDimensionNumbers> d = hlo::GetGatherDimensionNumbers(*instruction);
    if (!d.ok() || d->collapsed_slice_dims != d->start_index_map || d->collapsed_slice_dims.size() != 1) {
      return std::nullopt;
    }
    single = d->collapsed_slice_dims;
    batching = d->operand_batching_dims;
    index_batching = d->start_indices_batching_dims;
    index_vector_dim = d->index_vector_dim;
    std::vector<int64_t> whole = p.dimensions;
    whole[single[0]] = 1;
    if (d->slice_sizes != (batching.empty() ? whole : std::vector<int64_t>(p.rank(), 1))) return std::nullopt;
  } else {
    StatusOr<hlo::ScatterDimensionNumbers> d = hlo::GetScatterDimensionNumbers(*instruction);
    if (!d.ok() || instruction->operand_count() != 3 || d->inserted_window_dims != d->scatter_dims_to_operand_dims ||
        d->inserted_window_dims.size() != 1) {
      return std::nullopt;
    }
    single = d->inserted_window_dims;
    batching = d->input_batching_dims;
    index_batching = d->scatter_indices_batching_dims;
    index_vector_dim = d->index_vector_dim;
  }
  Selection s;
  s.c = single[0];
  const std::vector<int64_t> others = AllBut(p.rank(), s.c);
  if (batching.empty()) {
    // One index for every row: indices [1] with the index vector as dimension 0.
    if (is.dimensions != std::vector<int64_t>{1} || index_vector_dim != 0) return std::nullopt;
    s.index = b.Reshape(indices, {});
    return s;
  }
  // One index per row: every other dimension batching, paired in order with the indices' leading ones,
  // then one taken position and the index vector: [rows..., 1, 1].
  std::vector<int64_t> leading(others.size());
  std::iota(leading.begin(), leading.end(), 0);
  if (batching != others || index_batching != leading || is.rank() != static_cast<int>(others.size()) + 2 ||
      index_vector_dim != is.rank() - 1 || is.dimensions[is.rank() - 1] != 1 || is.dimensions[is.rank() - 2] != 1) {
    return std::nullopt;
  }
  s.index = b.Reshape(indices, RowDims(p, s.c));
  return s;
}

// A scatter's combiner adds its two parameters.
bool Adds(const HloInstruction& scatter) {
  const hlo::HloComputation* combiner = scatter.to_apply();
  const HloInstruction* root = combiner == nullptr ? nullptr : combiner->root_instruction();
  return root != nullptr && root->opcode() == HloOpcode::kAdd && root->operand(0)->opcode() == HloOpcode::kParameter &&
         root->operand(1)->opcode() == HloOpcode::kParameter;
}

HloInstruction* Rewrite(hlo::HloModule* module, hlo::HloComputation* computation, HloInstruction* instruction) {
  if (instruction->opcode() == HloOpcode::kScatter && (!Adds(*instruction) || instruction->operand_count() != 3)) {
    return nullptr;
  }
  HloBuilder b(computation);
  const std::optional<Selection> s = Match(b, instruction);
  if (!s) return nullptr;
  HloInstruction* operand = instruction->operand(0);
  const hlo::Shape& p = operand->shape();
  const PrimitiveType type = p.element_type;
  const int rank = p.rank();
  const hlo::Shape s32 = HloBuilder::ShapeOf(PrimitiveType::S32, p.dimensions);
  const hlo::Shape pred = HloBuilder::ShapeOf(PrimitiveType::PRED, p.dimensions);
  const std::vector<int64_t> spread = s->index->shape().rank() == 0 ? std::vector<int64_t>{} : AllBut(rank, s->c);
  const bool gather = instruction->opcode() == HloOpcode::kGather;
  HloInstruction* index = s->index;
  if (gather) {
    // A gather's start is clamped into the operand.
    HloInstruction* low = b.Zero(PrimitiveType::S32);
    HloInstruction* high = b.Add(
        HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(static_cast<int32_t>(p.dimensions[s->c] - 1))));
    index = b.Add(HloInstruction::CreateTernary(index->shape(), HloOpcode::kClamp, low, index, high));
  }
  HloInstruction* iota = b.Add(HloInstruction::CreateIota(s32, s->c));
  HloInstruction* at = b.Add(HloInstruction::CreateBroadcast(s32, index, spread));
  HloInstruction* mask = b.Add(HloInstruction::CreateCompare(pred, iota, at, hlo::ComparisonDirection::kEq));
  if (gather) {
    hlo::Literal lowest(hlo::Shape::Make(type, {}));
    lowest.SetFromDouble(0, type == PrimitiveType::F32 ? -std::numeric_limits<double>::infinity()
                                                       : static_cast<double>(std::numeric_limits<int32_t>::min()));
    HloInstruction* init = b.Add(HloInstruction::CreateConstant(std::move(lowest)));
    HloInstruction* fill = b.Add(HloInstruction::CreateBroadcast(p, init, {}));
    HloInstruction* picked = b.Add(HloInstruction::CreateTernary(p, HloOpcode::kSelect, mask, operand, fill));
    HloInstruction* one =
        b.Add(HloInstruction::CreateReduce(HloBuilder::ShapeOf(type, RowDims(p, s->c)), picked, init, {s->c},
                                           HloBuilder::ScalarReducer(module, HloOpcode::kMaximum, type)));
    return b.Reshape(one, instruction->shape().dimensions);
  }
  // Scatter: one update per row of P.
  HloInstruction* updates = instruction->operand(2);
  if (updates->shape().ElementCount() * p.dimensions[s->c] != p.ElementCount()) return nullptr;
  HloInstruction* rows = b.Reshape(updates, RowDims(p, s->c));
  HloInstruction* added =
      b.Binary(HloOpcode::kAdd, operand, b.Add(HloInstruction::CreateBroadcast(p, rows, AllBut(rank, s->c))));
  return b.Add(HloInstruction::CreateTernary(p, HloOpcode::kSelect, mask, added, operand));
}

}  // namespace

StatusOr<bool> OneHotGathers::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [&](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        if (instruction->opcode() != HloOpcode::kGather && instruction->opcode() != HloOpcode::kScatter) return nullptr;
        return Rewrite(module, computation, instruction);
      });
}

}  // namespace tpu::compiler
