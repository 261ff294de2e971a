#include "compiler/passes/row_gathers.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/attributes.h"
#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

bool Contains(const std::vector<int64_t>& values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

int64_t Product(const std::vector<int64_t>& values) {
  int64_t product = 1;
  for (int64_t v : values) product *= v;
  return product;
}

std::string List(const std::vector<int64_t>& values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i) text += (i == 0 ? "" : ",") + std::to_string(values[i]);
  return text + "}";
}

std::vector<int64_t> Run(int64_t first, int64_t count) {
  std::vector<int64_t> run;
  for (int64_t i = 0; i < count; ++i) run.push_back(first + i);
  return run;
}

// What the operand and the indices have in common for both opcodes: the indexed dimensions (in the
// order of the index vector), the batching pairs and the index vector's dimension.
struct Indexing {
  std::vector<int64_t> indexed;           // operand dimensions the index vector's positions pick
  std::vector<int64_t> batching;          // operand batching dimensions
  std::vector<int64_t> indices_batching;  // their partners among the indices' dimensions
  int64_t index_vector_dim = 0;
};

// The operand's dimensions in table order: indexed, batching, then the rest in operand order.
std::vector<int64_t> TableOrder(const Indexing& x, int rank) {
  std::vector<int64_t> order = x.indexed;
  order.insert(order.end(), x.batching.begin(), x.batching.end());
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(x.indexed, d) && !Contains(x.batching, d)) order.push_back(d);
  }
  return order;
}

// The table [V, rest...] from an operand in table order (`ordered`): V the product of the first
// `leading` extents; [V,1] when no dimension is left.
std::vector<int64_t> TableDims(const std::vector<int64_t>& ordered, size_t leading) {
  std::vector<int64_t> head(ordered.begin(), ordered.begin() + static_cast<int64_t>(leading));
  std::vector<int64_t> table = {Product(head)};
  table.insert(table.end(), ordered.begin() + static_cast<int64_t>(leading), ordered.end());
  if (table.size() == 1) table.push_back(1);
  return table;
}

// The slab index [N,1] of every index of `indices` (s32): see the header. `extents` are the operand's
// extents of the indexed then the batching dimensions.
HloInstruction* SlabIndex(HloBuilder& b, HloInstruction* indices, const Indexing& x,
                          const std::vector<int64_t>& extents, bool gather) {
  const hlo::Shape& is = indices->shape();
  std::vector<int64_t> batch, to_last;
  for (int64_t d = 0; d < is.rank(); ++d) {
    if (d != x.index_vector_dim) {
      batch.push_back(is.dimensions[d]);
      to_last.push_back(d);
    }
  }
  const int64_t n = Product(batch);
  const int64_t k = static_cast<int64_t>(x.indexed.size());
  HloInstruction* flat;
  if (x.index_vector_dim == is.rank()) {
    flat = b.Reshape(indices, {n, 1});
  } else {
    to_last.push_back(x.index_vector_dim);
    flat = b.Reshape(b.Transpose(indices, to_last), {n, k});
  }
  if (k == 1 && x.batching.empty()) return flat;

  const hlo::Shape column = HloBuilder::ShapeOf(PrimitiveType::S32, {n, 1});
  auto scalar = [&](int32_t value) {
    return b.Add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(value)));
  };
  auto splat = [&](int32_t value) { return b.Add(HloInstruction::CreateBroadcast(column, scalar(value), {})); };
  auto binary = [&](HloOpcode op, HloInstruction* l, HloInstruction* r) {
    return b.Add(HloInstruction::CreateBinary(l->shape(), op, l, r));
  };
  const hlo::Shape pred = HloBuilder::ShapeOf(PrimitiveType::PRED, {n, 1});
  std::vector<HloInstruction*> positions;
  HloInstruction* inside = nullptr;
  for (int64_t j = 0; j < k; ++j) {
    HloInstruction* position = b.Slice(flat, {0, j}, {n, j + 1}, {1, 1});
    const int32_t last = static_cast<int32_t>(extents[j] - 1);
    if (gather) {
      position = b.Add(HloInstruction::CreateTernary(column, HloOpcode::kClamp, scalar(0), position, scalar(last)));
    } else {
      HloInstruction* fits = binary(
          HloOpcode::kAnd,
          b.Add(HloInstruction::CreateCompare(pred, position, splat(0), hlo::ComparisonDirection::kGe)),
          b.Add(HloInstruction::CreateCompare(pred, position, splat(last), hlo::ComparisonDirection::kLe)));
      inside = inside == nullptr ? fits : binary(HloOpcode::kAnd, inside, fits);
    }
    positions.push_back(position);
  }
  for (int64_t partner : x.indices_batching) {
    // The index's own position along its partner, among the batch dimensions.
    const int64_t along = partner < x.index_vector_dim ? partner : partner - 1;
    HloInstruction* iota =
        b.Add(HloInstruction::CreateIota(HloBuilder::ShapeOf(PrimitiveType::S32, batch), along));
    positions.push_back(b.Reshape(iota, {n, 1}));
  }
  HloInstruction* linear = nullptr;
  int64_t stride = 1;
  for (int64_t j = static_cast<int64_t>(positions.size()) - 1; j >= 0; --j) {
    HloInstruction* term = stride == 1 ? positions[j] : binary(HloOpcode::kMultiply, positions[j], splat(static_cast<int32_t>(stride)));
    linear = linear == nullptr ? term : binary(HloOpcode::kAdd, term, linear);
    stride *= extents[j];
  }
  if (inside != nullptr) {
    linear = b.Add(HloInstruction::CreateTernary(column, HloOpcode::kSelect, inside, linear, splat(-1)));
  }
  return linear;
}

// A gather or scatter already in the slab form codegen lowers.
bool IsSlabGather(const hlo::GatherDimensionNumbers& d, const HloInstruction& gather) {
  const hlo::Shape& table = gather.operand(0)->shape();
  const hlo::Shape& indices = gather.operand(1)->shape();
  return table.rank() >= 2 && d.start_index_map == std::vector<int64_t>{0} &&
         d.collapsed_slice_dims == std::vector<int64_t>{0} && d.operand_batching_dims.empty() &&
         d.index_vector_dim == indices.rank() - 1 && indices.dimensions.back() == 1 &&
         d.offset_dims == Run(indices.rank() - 1, table.rank() - 1) &&
         std::equal(table.dimensions.begin() + 1, table.dimensions.end(), d.slice_sizes.begin() + 1);
}

bool IsSlabScatter(const hlo::ScatterDimensionNumbers& d, const HloInstruction& scatter) {
  const hlo::Shape& table = scatter.operand(0)->shape();
  const hlo::Shape& indices = scatter.operand(1)->shape();
  const hlo::Shape& updates = scatter.operand(2)->shape();
  return table.rank() >= 2 && d.scatter_dims_to_operand_dims == std::vector<int64_t>{0} &&
         d.inserted_window_dims == std::vector<int64_t>{0} && d.input_batching_dims.empty() &&
         d.index_vector_dim == indices.rank() - 1 && indices.dimensions.back() == 1 &&
         d.update_window_dims == Run(indices.rank() - 1, table.rank() - 1) &&
         std::equal(table.dimensions.begin() + 1, table.dimensions.end(), updates.dimensions.end() - (table.rank() - 1));
}

// `indices` as s32 with the same effect on a gather or scatter: narrow types convert exactly; u32, u64
// and s64 are first brought into the s32 range with an unsigned minimum (u32 indices of 2^31 and more
// would wrap to negative ones) or a clamp. A value at a bound of the s32 range is past every dimension
// the device holds (or, for INT32_MIN, before it), so a gather still clamps it to the same end and a
// scatter still skips it. nullptr for indices that are not integers.
HloInstruction* S32Indices(HloBuilder& b, HloInstruction* indices) {
  const PrimitiveType type = indices->shape().element_type;
  if (type == PrimitiveType::S32) return indices;
  if (!hlo::IsIntegralType(type)) return nullptr;
  // Bounds of the indices' shape: codegen's clamp takes scalar bounds of 32-bit types only.
  auto bound = [&](double value) {
    hlo::Literal literal(HloBuilder::ShapeOf(type, {}));
    literal.SetFromDouble(0, value);
    HloInstruction* scalar = b.Add(HloInstruction::CreateConstant(std::move(literal)));
    return b.Add(HloInstruction::CreateBroadcast(indices->shape(), scalar, {}));
  };
  const double largest = static_cast<double>(INT32_MAX), smallest = static_cast<double>(INT32_MIN);
  HloInstruction* in_range = indices;
  if (type == PrimitiveType::U32 || type == PrimitiveType::U64) {
    in_range = b.Add(HloInstruction::CreateBinary(indices->shape(), HloOpcode::kMinimum, indices, bound(largest)));
  } else if (type == PrimitiveType::S64) {
    in_range = b.Add(HloInstruction::CreateTernary(indices->shape(), HloOpcode::kClamp, bound(smallest), indices,
                                                   bound(largest)));
  }
  return b.Convert(in_range, PrimitiveType::S32);
}

// The operand as a table of slabs (indexed and batching dimensions first, merged into rows) and the
// indices as one s32 row index per slab.
struct SlabTable {
  std::vector<int64_t> order;  // the operand's dimensions in table order
  HloInstruction* ordered;     // the operand transposed to that order
  HloInstruction* table;       // [rows, rest...]
  HloInstruction* index;       // [N, 1] s32
};

SlabTable MakeSlabTable(HloBuilder& b, HloInstruction* operand, HloInstruction* indices, const Indexing& x, bool gather) {
  SlabTable t;
  t.order = TableOrder(x, operand->shape().rank());
  t.ordered = b.Transpose(operand, t.order);
  const size_t leading = x.indexed.size() + x.batching.size();
  const std::vector<int64_t>& dims = t.ordered->shape().dimensions;
  t.table = b.Reshape(t.ordered, TableDims(dims, leading));
  const std::vector<int64_t> extents(dims.begin(), dims.begin() + static_cast<int64_t>(leading));
  t.index = SlabIndex(b, indices, x, extents, gather);
  return t;
}

HloInstruction* RewriteGather(HloBuilder& b, HloInstruction* gather, HloInstruction* indices) {
  StatusOr<hlo::GatherDimensionNumbers> dn = hlo::GetGatherDimensionNumbers(*gather);
  if (!dn.ok() || IsSlabGather(*dn, *gather)) return nullptr;
  const hlo::GatherDimensionNumbers& d = *dn;
  HloInstruction* operand = gather->operand(0);
  const hlo::Shape& p = operand->shape();
  for (int64_t dim : d.start_index_map) {
    if (d.slice_sizes[dim] != 1) return nullptr;  // a dynamic slice of several positions
  }
  const Indexing x{d.start_index_map, d.operand_batching_dims, d.start_indices_batching_dims, d.index_vector_dim};
  // Dimensions neither indexed nor batching start at 0: the gather reads their first slice_sizes.
  std::vector<int64_t> limits = p.dimensions;
  for (int64_t dim = 0; dim < p.rank(); ++dim) {
    if (!Contains(x.indexed, dim) && !Contains(x.batching, dim)) limits[dim] = d.slice_sizes[dim];
  }
  HloInstruction* sliced = b.Slice(operand, std::vector<int64_t>(p.rank(), 0), limits, std::vector<int64_t>(p.rank(), 1));
  const SlabTable t = MakeSlabTable(b, sliced, indices, x, /*gather=*/true);
  HloInstruction* table = t.table;
  HloInstruction* index = t.index;
  const std::vector<int64_t>& table_dims = t.table->shape().dimensions;
  const int64_t n = index->shape().dimensions[0];

  std::vector<int64_t> slab_dims = {n};
  slab_dims.insert(slab_dims.end(), table_dims.begin() + 1, table_dims.end());
  auto slabs = HloInstruction::Create(HloOpcode::kGather, HloBuilder::ShapeOf(p.element_type, slab_dims), {table, index});
  std::vector<int64_t> slice_sizes = table_dims;
  slice_sizes[0] = 1;
  slabs->set_raw_attribute("offset_dims", List(Run(1, static_cast<int64_t>(table_dims.size()) - 1)));
  slabs->set_raw_attribute("collapsed_slice_dims", "{0}");
  slabs->set_raw_attribute("start_index_map", "{0}");
  slabs->set_raw_attribute("index_vector_dim", "1");
  slabs->set_raw_attribute("slice_sizes", List(slice_sizes));
  HloInstruction* rows = b.Add(std::move(slabs));

  // [batch..., kept window dimensions in operand order...], then the gather's order.
  const hlo::Shape& is = gather->operand(1)->shape();
  std::vector<int64_t> grouped;
  for (int64_t dim = 0; dim < is.rank(); ++dim) {
    if (dim != d.index_vector_dim) grouped.push_back(is.dimensions[dim]);
  }
  const int64_t batch_rank = static_cast<int64_t>(grouped.size());
  for (int64_t dim = 0; dim < p.rank(); ++dim) {
    if (!Contains(d.collapsed_slice_dims, dim) && !Contains(x.batching, dim)) grouped.push_back(d.slice_sizes[dim]);
  }
  HloInstruction* result = b.Reshape(rows, grouped);
  std::vector<int64_t> permutation;
  int64_t next_batch = 0;
  for (int64_t out = 0; out < gather->shape().rank(); ++out) {
    auto offset = std::find(d.offset_dims.begin(), d.offset_dims.end(), out);
    permutation.push_back(offset != d.offset_dims.end() ? batch_rank + (offset - d.offset_dims.begin()) : next_batch++);
  }
  return b.Transpose(result, permutation);
}

HloInstruction* RewriteScatter(HloBuilder& b, HloInstruction* scatter, HloInstruction* indices) {
  if (scatter->operand_count() != 3) return nullptr;
  StatusOr<hlo::ScatterDimensionNumbers> dn = hlo::GetScatterDimensionNumbers(*scatter);
  if (!dn.ok() || IsSlabScatter(*dn, *scatter)) return nullptr;
  const hlo::ScatterDimensionNumbers& d = *dn;
  HloInstruction* operand = scatter->operand(0);
  HloInstruction* updates = scatter->operand(2);
  const hlo::Shape& p = operand->shape();
  const hlo::Shape& us = updates->shape();
  const Indexing x{d.scatter_dims_to_operand_dims, d.input_batching_dims, d.scatter_indices_batching_dims,
                   d.index_vector_dim};
  // The window's extent along each operand dimension (1 where inserted or batching).
  std::vector<int64_t> window_dims;
  std::vector<int64_t> window(p.rank(), 1);
  for (int64_t dim = 0; dim < p.rank(); ++dim) {
    if (!Contains(d.inserted_window_dims, dim) && !Contains(x.batching, dim)) window_dims.push_back(dim);
  }
  for (size_t w = 0; w < window_dims.size(); ++w) window[window_dims[w]] = us.dimensions[d.update_window_dims[w]];
  for (int64_t dim = 0; dim < p.rank(); ++dim) {
    const bool picked = Contains(x.indexed, dim) || Contains(x.batching, dim);
    if (picked ? window[dim] != 1 : window[dim] != p.dimensions[dim]) return nullptr;
  }
  const SlabTable t = MakeSlabTable(b, operand, indices, x, /*gather=*/false);
  const std::vector<int64_t>& order = t.order;
  HloInstruction* ordered = t.ordered;
  HloInstruction* table = t.table;
  HloInstruction* index = t.index;
  const std::vector<int64_t>& table_dims = t.table->shape().dimensions;
  const int64_t n = index->shape().dimensions[0];

  // Updates: [scatter dims..., window dims...] -> [N, rest...] (the indexed windows are unit dimensions).
  std::vector<int64_t> update_order;
  for (int64_t dim = 0; dim < us.rank(); ++dim) {
    if (!Contains(d.update_window_dims, dim)) update_order.push_back(dim);
  }
  update_order.insert(update_order.end(), d.update_window_dims.begin(), d.update_window_dims.end());
  std::vector<int64_t> slab_dims = {n};
  slab_dims.insert(slab_dims.end(), table_dims.begin() + 1, table_dims.end());
  HloInstruction* slabs = b.Reshape(b.Transpose(updates, update_order), slab_dims);

  auto combined = HloInstruction::Create(HloOpcode::kScatter, table->shape(), {table, index, slabs});
  combined->set_raw_attribute("update_window_dims", List(Run(1, static_cast<int64_t>(table_dims.size()) - 1)));
  combined->set_raw_attribute("inserted_window_dims", "{0}");
  combined->set_raw_attribute("scatter_dims_to_operand_dims", "{0}");
  combined->set_raw_attribute("index_vector_dim", "1");
  combined->set_to_apply(scatter->to_apply());
  HloInstruction* result = b.Reshape(b.Add(std::move(combined)), ordered->shape().dimensions);
  return b.Transpose(result, InversePermutation(order));
}

}  // namespace

StatusOr<bool> RowGathers::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(
      module, [&](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
        const bool gather = instruction->opcode() == HloOpcode::kGather;
        if (!gather && instruction->opcode() != HloOpcode::kScatter) return nullptr;
        HloBuilder b(computation);
        HloInstruction* indices = S32Indices(b, instruction->operand(1));
        if (indices == nullptr) return nullptr;
        HloInstruction* rewritten =
            gather ? RewriteGather(b, instruction, indices) : RewriteScatter(b, instruction, indices);
        if (rewritten != nullptr || indices == instruction->operand(1)) return rewritten;
        // Already the slab form, or a form codegen refuses by its shape: only the indices change.
        std::vector<HloInstruction*> operands = instruction->operands();
        operands[1] = indices;
        return b.Add(instruction->CloneWithNewOperands(instruction->shape(), operands));
      });
}

}  // namespace tpu::compiler
