#include "compiler/passes/codegen_legalization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <vector>

#include "compiler/hlo/hlo_opcode.h"
#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using Dims = std::vector<int64_t>;

int64_t Product(const Dims& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end; ++i) product *= dims[i];
  return product;
}

int64_t RoundUp(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// Adds instructions of one element type to a computation.
class Builder {
 public:
  Builder(HloComputation* computation, PrimitiveType type) : computation_(computation), type_(type) {}

  hlo::Shape Shape(const Dims& dims) const { return hlo::Shape::Make(type_, dims); }
  HloInstruction* Add(std::unique_ptr<HloInstruction> instruction) {
    return computation_->AddInstruction(std::move(instruction));
  }
  // Only ever between shapes with the same device layout (rows x minor dimension) or whole lines.
  HloInstruction* Reshape(HloInstruction* x, const Dims& dims) {
    if (x->shape().dimensions == dims) return x;
    return Add(HloInstruction::CreateReshape(Shape(dims), x));
  }
  HloInstruction* Transpose2(HloInstruction* x) {
    const Dims& dims = x->shape().dimensions;
    return Add(HloInstruction::CreateTranspose(Shape({dims[1], dims[0]}), x, {1, 0}));
  }
  // Leading dimension i of the result is leading dimension order[i] of x; the minor dimension stays
  // (codegen moves the rows with DMAs: one row permutation, no slices).
  HloInstruction* PermuteLeading(HloInstruction* x, const Dims& order) {
    Dims perm = order, dims;
    if (std::is_sorted(perm.begin(), perm.end())) return x;
    perm.push_back(x->shape().rank() - 1);
    for (int64_t d : perm) dims.push_back(x->shape().dimensions[d]);
    return Add(HloInstruction::CreateTranspose(Shape(dims), x, perm));
  }
  // [start:limit] of dimension `dim`, everything of the others.
  HloInstruction* Slice(HloInstruction* x, size_t dim, int64_t start, int64_t limit) {
    Dims dims = x->shape().dimensions;
    Dims starts(dims.size(), 0), limits = dims, strides(dims.size(), 1);
    starts[dim] = start;
    limits[dim] = limit;
    dims[dim] = limit - start;
    auto slice = HloInstruction::Create(HloOpcode::kSlice, Shape(dims), {x});
    slice->set_slice(starts, limits, strides);
    return Add(std::move(slice));
  }
  HloInstruction* Concatenate(const std::vector<HloInstruction*>& parts, size_t dim) {
    Dims dims = parts[0]->shape().dimensions;
    dims[dim] = 0;
    for (const HloInstruction* part : parts) dims[dim] += part->shape().dimensions[dim];
    auto concatenate = HloInstruction::Create(HloOpcode::kConcatenate, Shape(dims), parts);
    concatenate->set_dimensions({static_cast<int64_t>(dim)});
    return Add(std::move(concatenate));
  }
  // `high` rows of zeros after the last index of dimension `dim`.
  HloInstruction* PadWithZeros(HloInstruction* x, size_t dim, int64_t high) {
    Dims dims = x->shape().dimensions;
    hlo::PaddingConfig config;
    config.dimensions.resize(dims.size());
    config.dimensions[dim].edge_padding_high = high;
    dims[dim] += high;
    HloInstruction* zero = Add(HloInstruction::CreateConstant(hlo::Literal(Shape({}))));
    auto pad = HloInstruction::Create(HloOpcode::kPad, Shape(dims), {x, zero});
    pad->set_padding_config(config);
    return Add(std::move(pad));
  }
  HloInstruction* Reduce(HloInstruction* x, HloInstruction* init, const Dims& reduced, HloComputation* reducer) {
    Dims dims;
    const Dims& in = x->shape().dimensions;
    for (size_t d = 0; d < in.size(); ++d) {
      if (std::find(reduced.begin(), reduced.end(), static_cast<int64_t>(d)) == reduced.end()) dims.push_back(in[d]);
    }
    return Add(HloInstruction::CreateReduce(Shape(dims), x, init, reduced, reducer));
  }

 private:
  HloComputation* computation_;
  PrimitiveType type_;
};

// ---------------------------------------------------------------------------------------------------
// Transposes

// [B, M, N] -> [B, N, M]. With B > 1, M is padded with zero rows to M' (a multiple of lane_multiple),
// [B*M', N] is transposed as a whole to [N, B*M'], which is [N, B, M'] in whole lines; a row
// permutation makes it [B, N, M'] and a prefix slice [B, N, M].
HloInstruction* BatchedTranspose(Builder& b, HloInstruction* x, int64_t lane_multiple) {
  const Dims dims = x->shape().dimensions;
  const int64_t batch = dims[0], m = dims[1], n = dims[2];
  if (batch == 1) return b.Reshape(b.Transpose2(b.Reshape(x, {m, n})), {1, n, m});
  const int64_t padded = RoundUp(m, lane_multiple);
  if (padded != m) x = b.PadWithZeros(x, 1, padded - m);
  HloInstruction* transposed = b.Transpose2(b.Reshape(x, {batch * padded, n}));
  HloInstruction* swapped = b.PermuteLeading(b.Reshape(transposed, {n, batch, padded}), {1, 0});
  return padded == m ? swapped : b.Slice(swapped, 2, 0, m);
}

// A transpose with unit dimensions dropped and runs of dimensions that stay together merged; only
// dimensions that are minor on neither side are dropped or merged, so the reshapes keep the layout.
struct TransposePlan {
  Dims dims, perm;  // collapsed operand dimensions and permutation
  // The row permutations (orders of the leading dimensions) before and after the batched transpose.
  Dims before_order, after_order;
  bool batched = false;
  Dims others;  // collapsed dimensions that stay leading around the batched transpose, in output order
};

TransposePlan PlanTranspose(const Dims& in, const Dims& perm) {
  const int64_t n = static_cast<int64_t>(in.size());
  Dims renumber(in.size(), -1), kept;
  for (int64_t d = 0; d < n; ++d) {
    if (in[d] != 1 || d == n - 1 || d == perm[n - 1]) {
      renumber[d] = static_cast<int64_t>(kept.size());
      kept.push_back(d);
    }
  }
  Dims order;  // kept dimensions (renumbered) in output order
  for (int64_t d : perm) {
    if (renumber[d] >= 0) order.push_back(renumber[d]);
  }
  const int64_t m = static_cast<int64_t>(kept.size());
  std::vector<Dims> groups;  // in output order
  for (int64_t j = 0; j < m; ++j) {
    if (j > 0 && order[j] == order[j - 1] + 1 && order[j] != m - 1 && j != m - 1) {
      groups.back().push_back(order[j]);
    } else {
      groups.push_back({order[j]});
    }
  }
  Dims by_input(groups.size());  // group indices in input order
  std::iota(by_input.begin(), by_input.end(), 0);
  std::sort(by_input.begin(), by_input.end(), [&](int64_t a, int64_t b) { return groups[a][0] < groups[b][0]; });
  TransposePlan plan;
  plan.perm.resize(groups.size());
  for (size_t i = 0; i < by_input.size(); ++i) {
    int64_t size = 1;
    for (int64_t d : groups[by_input[i]]) size *= in[kept[d]];
    plan.dims.push_back(size);
    plan.perm[by_input[i]] = static_cast<int64_t>(i);
  }
  const int64_t r = static_cast<int64_t>(plan.dims.size());
  if (r <= 2 || plan.perm.back() == r - 1) return plan;
  // The future minor dimension k goes last among the leading ones, the others in output order.
  const int64_t k = plan.perm.back();
  for (int64_t i = 0; i + 1 < r; ++i) {
    if (plan.perm[i] != r - 1) plan.others.push_back(plan.perm[i]);
  }
  plan.before_order = plan.others;
  plan.before_order.push_back(k);
  plan.batched = true;
  // After the batched transpose the leading dimensions are others..., r-1 (the operand's minor).
  Dims current = plan.others;
  current.push_back(r - 1);
  Dims second;
  for (int64_t i = 0; i + 1 < r; ++i) {
    second.push_back(std::find(current.begin(), current.end(), plan.perm[i]) - current.begin());
  }
  plan.after_order = second;
  return plan;
}

// The transpose from supported pieces, or nullptr when it is supported as it is: a rank-2 transpose, or a
// row permutation (the minor dimension stays), which codegen moves with DMAs.
HloInstruction* LegalizeTranspose(HloComputation* computation, HloInstruction* transpose,
                                  const CodegenLegalizationOptions& options) {
  const hlo::Shape& in = transpose->operand(0)->shape();
  const Dims& perm = transpose->dimensions();
  if (!in.IsArray() || in.rank() < 3 || static_cast<int>(perm.size()) != in.rank()) return nullptr;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return nullptr;
  const TransposePlan plan = PlanTranspose(in.dimensions, perm);
  if (plan.dims.size() >= 3 && !plan.batched) return nullptr;
  Builder b(computation, in.element_type);
  const Dims& out = transpose->shape().dimensions;
  HloInstruction* x = b.Reshape(transpose->operand(0), plan.dims);
  const int64_t r = static_cast<int64_t>(plan.dims.size());
  Dims permuted;
  for (int64_t d : plan.perm) permuted.push_back(plan.dims[d]);
  if (r == 2 && plan.perm[0] == 1) {
    x = b.Transpose2(x);
  } else if (plan.batched) {
    const int64_t k = plan.perm.back(), cols = plan.dims[r - 1];
    Dims leading;
    int64_t batch = 1;
    for (int64_t d : plan.others) {
      leading.push_back(plan.dims[d]);
      batch *= plan.dims[d];
    }
    x = b.PermuteLeading(x, plan.before_order);
    x = BatchedTranspose(b, b.Reshape(x, {batch, plan.dims[k], cols}), options.lane_multiple);
    Dims second = leading;
    second.push_back(cols);
    second.push_back(plan.dims[k]);
    x = b.Reshape(b.PermuteLeading(b.Reshape(x, second), plan.after_order), permuted);
  }
  return b.Reshape(x, out);
}

// ---------------------------------------------------------------------------------------------------
// Reductions

bool Consecutive(const Dims& sorted) {
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i] != sorted[i - 1] + 1) return false;
  }
  return !sorted.empty();
}

// Reductions codegen (compiler/codegen/reduce.cc) and its preparation (prepare.cc) lower as they are:
// consecutive non-minor dimensions; every dimension when the minor one has one element (both with an
// init value that keeps padded lanes +0); the minor dimension of ranks 1 and 2 with the identity.
bool ReduceIsSupported(const Dims& dims, const Dims& in, const ReductionInit& init) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (Consecutive(dims) && init.KeepsPaddingZero()) {
    if (dims.back() <= rank - 2) return true;
    if (dims.front() == 0 && dims.back() == rank - 1 && in.back() == 1) return true;
  }
  if (!init.IsIdentity() || dims.back() != rank - 1 || in.back() <= 1) return false;
  return rank == 1 || (rank == 2 && (dims == Dims{1} || dims == Dims{0, 1}));
}

StatusOr<HloInstruction*> LegalizeReduce(HloComputation* computation, HloInstruction* reduce,
                                         const CodegenLegalizationOptions& options) {
  if (reduce->operand_count() != 2 || !reduce->shape().IsArray()) return nullptr;
  HloInstruction* operand = reduce->operand(0);
  HloInstruction* init_value = reduce->operand(1);
  const PrimitiveType type = operand->shape().element_type;
  if (type != PrimitiveType::F32 && type != PrimitiveType::S32) return nullptr;
  const HloOpcode op = ReductionOpcode(*reduce);
  if (op == HloOpcode::kUnknown || !init_value->shape().IsArray() || init_value->shape().rank() != 0 ||
      init_value->shape().element_type != type) {
    return nullptr;
  }
  const Dims& in = operand->shape().dimensions;
  const int64_t rank = static_cast<int64_t>(in.size());
  Dims dims = reduce->dimensions();
  std::sort(dims.begin(), dims.end());
  if (rank == 0 || dims.empty() || operand->shape().ElementCount() == 0) return nullptr;
  ReductionInit init{op, type == PrimitiveType::S32, std::nullopt};
  if (init_value->opcode() == HloOpcode::kConstant && init_value->has_literal()) {
    init.value = init_value->literal().GetAsDouble(0);
  }
  if (ReduceIsSupported(dims, in, init)) return nullptr;

  Builder b(computation, type);
  HloInstruction* identity = init_value;
  if (!init.IsIdentity()) {
    hlo::Literal literal(b.Shape({}));
    literal.SetFromDouble(0, init.IdentityValue());
    identity = b.Add(HloInstruction::CreateConstant(std::move(literal)));
  }
  HloComputation* reducer = reduce->to_apply();
  HloInstruction* x = operand;
  // Runs of consecutive non-minor dimensions, the last run first so that earlier indices stay.
  const bool minor = dims.back() == rank - 1;
  std::vector<Dims> runs;
  for (int64_t d : dims) {
    if (d == rank - 1) continue;
    if (runs.empty() || d != runs.back().back() + 1) runs.push_back({});
    runs.back().push_back(d);
  }
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) x = b.Reduce(x, identity, *run, reducer);
  if (minor) {
    const Dims kept(x->shape().dimensions.begin(), x->shape().dimensions.end() - 1);
    const int64_t cols = x->shape().dimensions.back();
    if (kept.empty() || (kept.size() == 1 && cols > 1)) {
      // [C] or [K, C]: codegen preparation goes through the transpose.
      x = b.Reduce(x, identity, {static_cast<int64_t>(kept.size())}, reducer);
    } else {
      // [Kp, Km, C] -> [C, Kp*Km'] -> reduce over dimension 0 -> [Kp, Km'] in whole lines -> [Kp, Km].
      const int64_t km = kept.back(), kp = Product(kept, 0, kept.size() - 1);
      const int64_t padded = kp == 1 ? km : RoundUp(km, options.lane_multiple);
      x = b.Reshape(x, {kp, km, cols});
      if (padded != km) x = b.PadWithZeros(x, 1, padded - km);
      x = b.Reduce(b.Transpose2(b.Reshape(x, {kp * padded, cols})), identity, {0}, reducer);
      x = b.Reshape(x, {kp, padded});
      if (padded != km) x = b.Slice(x, 1, 0, km);
      x = b.Reshape(x, kept);
    }
  }
  if (!init.IsIdentity()) {
    HloInstruction* other = init_value;
    if (x->shape().rank() > 0) other = b.Add(HloInstruction::CreateBroadcast(x->shape(), init_value, {}));
    x = b.Add(HloInstruction::CreateBinary(x->shape(), op, x, other));
  }
  return x;
}

}  // namespace

HloOpcode ReductionOpcode(const HloInstruction& reduce) {
  const HloComputation* reducer = reduce.to_apply();
  if (reducer == nullptr || reducer->num_parameters() != 2 || reducer->root_instruction() == nullptr) {
    return HloOpcode::kUnknown;
  }
  const HloInstruction& root = *reducer->root_instruction();
  const HloOpcode op = root.opcode();
  if (op != HloOpcode::kAdd && op != HloOpcode::kMaximum && op != HloOpcode::kMinimum) return HloOpcode::kUnknown;
  if (root.operand_count() != 2 || root.operand(0)->opcode() != HloOpcode::kParameter ||
      root.operand(1)->opcode() != HloOpcode::kParameter || root.operand(0) == root.operand(1)) {
    return HloOpcode::kUnknown;
  }
  return op;
}

double ReductionInit::IdentityValue() const {
  switch (op) {
    case HloOpcode::kAdd: return 0;
    case HloOpcode::kMaximum: return integer ? std::numeric_limits<int32_t>::min() : -HUGE_VAL;
    default: return integer ? std::numeric_limits<int32_t>::max() : HUGE_VAL;
  }
}

bool ReductionInit::IsIdentity() const { return value && *value == IdentityValue(); }

bool ReductionInit::KeepsPaddingZero() const {
  if (!value || std::isnan(*value)) return false;
  const double v = *value;
  switch (op) {
    case HloOpcode::kAdd: return v == 0;
    case HloOpcode::kMaximum: return integer ? v <= 0 : (v == 0 && !std::signbit(v)) || std::signbit(v);  // +0, -0, < 0
    default: return !std::signbit(v);
  }
}

// A broadcast that inserts dimensions before the minor one, which it keeps ([A,C] -> [A,B,C],
// dimensions={0,2}): the operand repeated in front ([B,A,C], its lines copied) and the rows put in order
// by a transpose that keeps the minor dimension (a row permutation).
HloInstruction* LegalizeInsertingBroadcast(HloComputation* computation, HloInstruction* broadcast) {
  const std::vector<int64_t>& mapped = broadcast->dimensions();
  const int rank = broadcast->shape().rank(), source_rank = broadcast->operand(0)->shape().rank();
  if (source_rank < 2 || !std::is_sorted(mapped.begin(), mapped.end()) || mapped.back() != rank - 1) return nullptr;
  Dims suffix(static_cast<size_t>(source_rank));
  std::iota(suffix.begin(), suffix.end(), rank - source_rank);
  if (mapped == suffix) return nullptr;  // only leading dimensions: codegen repeats the lines
  Dims order;  // the result's dimensions in the order of the repeated operand: new ones, then the operand's
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(mapped.begin(), mapped.end(), d) == mapped.end()) order.push_back(d);
  }
  order.insert(order.end(), mapped.begin(), mapped.end());
  const Dims& dims = broadcast->shape().dimensions;
  Dims repeated_dims;
  for (int64_t d : order) repeated_dims.push_back(dims[d]);
  Builder b(computation, broadcast->shape().element_type);
  HloInstruction* repeated = b.Add(HloInstruction::CreateBroadcast(b.Shape(repeated_dims), broadcast->operand(0), suffix));
  return b.Add(HloInstruction::CreateTranspose(b.Shape(dims), repeated, InversePermutation(order)));
}

// Broadcasts codegen does not take as they are: those that insert dimensions before the kept minor one
// (above), and keep-dims broadcasts whose operand's dimensions lead and new ones follow ([A,B] -> [A,B,C]:
// softmax's and layer norm's over the last axis; [A] -> [A,B,C]): the value as one column [A*B],
// broadcast to [A*B, C...] along dimension 0, read as the result.
HloInstruction* LegalizeBroadcast(HloComputation* computation, HloInstruction* broadcast) {
  const HloInstruction* source = broadcast->operand(0);
  const int rank = source->shape().rank();
  std::vector<int64_t> leading(static_cast<size_t>(rank));
  std::iota(leading.begin(), leading.end(), 0);
  if (rank >= 2 && broadcast->shape().rank() > rank && !broadcast->dimensions().empty() &&
      broadcast->dimensions().back() == broadcast->shape().rank() - 1) {
    return LegalizeInsertingBroadcast(computation, broadcast);
  }
  // Keep-dims: the operand's dimensions lead, new ones follow ([A,B] -> [A,B,C], [A] -> [A,B,C]).
  const int result_rank = broadcast->shape().rank();
  if (rank == 0 || broadcast->dimensions() != leading || (rank == 1 && result_rank == 2) || result_rank <= rank) {
    return nullptr;
  }
  Builder b(computation, broadcast->shape().element_type);
  const Dims& dims = broadcast->shape().dimensions;
  const int64_t rows = Product(dims, 0, static_cast<size_t>(rank));
  const int64_t columns = Product(dims, static_cast<size_t>(rank), dims.size());
  HloInstruction* column = b.Reshape(broadcast->operand(0), {rows});
  HloInstruction* spread = b.Add(HloInstruction::CreateBroadcast(b.Shape({rows, columns}), column, {0}));
  return b.Reshape(spread, dims);
}

// u32 values ordered as s32: with the sign bit flipped (x ^ 0x80000000) the u32 order of the words is
// their s32 order (the VPU orders integers as s32). `bits` is SignBits of the value's shape.
HloInstruction* SignBits(Builder& u32, const Dims& dims) {
  hlo::Literal sign(u32.Shape({}));
  sign.Set<uint32_t>(0, 0x80000000u);
  HloInstruction* bit = u32.Add(HloInstruction::CreateConstant(std::move(sign)));
  return dims.empty() ? bit : u32.Add(HloInstruction::CreateBroadcast(u32.Shape(dims), bit, {}));
}
HloInstruction* ToSignedOrder(Builder& u32, Builder& s32, HloInstruction* x, HloInstruction* bits) {
  const Dims& dims = x->shape().dimensions;
  HloInstruction* flipped = u32.Add(HloInstruction::CreateBinary(u32.Shape(dims), HloOpcode::kXor, x, bits));
  return s32.Add(HloInstruction::Create(HloOpcode::kBitcastConvert, s32.Shape(dims), {flipped}));
}
HloInstruction* FromSignedOrder(Builder& u32, HloInstruction* x, HloInstruction* bits) {
  const Dims& dims = x->shape().dimensions;
  HloInstruction* words = u32.Add(HloInstruction::Create(HloOpcode::kBitcastConvert, u32.Shape(dims), {x}));
  return u32.Add(HloInstruction::CreateBinary(u32.Shape(dims), HloOpcode::kXor, words, bits));
}

// reduce(x, init) over the dimensions of `like` with the s32 reducer `op`, legalized as codegen takes it.
StatusOr<HloInstruction*> LegalS32Reduce(HloComputation* computation, Builder& s32, const HloInstruction& like,
                                         HloInstruction* x, HloInstruction* init, HloOpcode op,
                                         const CodegenLegalizationOptions& options) {
  HloInstruction* reduced =
      s32.Add(HloInstruction::CreateReduce(s32.Shape(like.shape().dimensions), x, init, like.dimensions(),
                                           HloBuilder::ScalarReducer(computation->parent(), op, PrimitiveType::S32)));
  TPU_ASSIGN_OR_RETURN(HloInstruction * legal, LegalizeReduce(computation, reduced, options));
  if (legal == nullptr) return reduced;
  TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(reduced, legal));
  return legal;
}

// A max or min reduction of u32 values is the s32 one of their words with the sign bit flipped: values
// and init flipped and read as s32, reduced, read as u32 and flipped back.
StatusOr<HloInstruction*> LegalizeUnsignedReduce(HloComputation* computation, HloInstruction* reduce,
                                                 const CodegenLegalizationOptions& options) {
  if (reduce->operand_count() != 2 || reduce->shape().element_type != PrimitiveType::U32) return nullptr;
  const HloOpcode op = ReductionOpcode(*reduce);
  if (op != HloOpcode::kMaximum && op != HloOpcode::kMinimum) return nullptr;
  Builder u32(computation, PrimitiveType::U32), s32(computation, PrimitiveType::S32);
  HloInstruction* x = reduce->operand(0);
  TPU_ASSIGN_OR_RETURN(
      HloInstruction * reduced,
      LegalS32Reduce(computation, s32, *reduce, ToSignedOrder(u32, s32, x, SignBits(u32, x->shape().dimensions)),
                     ToSignedOrder(u32, s32, reduce->operand(1), SignBits(u32, {})), op, options));
  return FromSignedOrder(u32, reduced, SignBits(u32, reduce->shape().dimensions));
}

// A reduction of pred values with and (or) is the minimum (maximum) of their 0/1 words as s32: the
// values converted, reduced, and converted back.
StatusOr<HloInstruction*> LegalizeLogicalReduce(HloComputation* computation, HloInstruction* reduce,
                                                const CodegenLegalizationOptions& options) {
  const hlo::HloComputation* reducer = reduce->to_apply();
  if (reduce->operand_count() != 2 || reduce->shape().element_type != PrimitiveType::PRED || reducer == nullptr ||
      reducer->root_instruction() == nullptr || reducer->num_parameters() != 2) {
    return nullptr;
  }
  const HloOpcode logical = reducer->root_instruction()->opcode();
  if (logical != HloOpcode::kAnd && logical != HloOpcode::kOr) return nullptr;
  Builder b(computation, PrimitiveType::S32);
  auto words = [&](HloInstruction* x) {
    return b.Add(HloInstruction::CreateConvert(b.Shape(x->shape().dimensions), x));
  };
  TPU_ASSIGN_OR_RETURN(HloInstruction * reduced,
                       LegalS32Reduce(computation, b, *reduce, words(reduce->operand(0)), words(reduce->operand(1)),
                                      logical == HloOpcode::kAnd ? HloOpcode::kMinimum : HloOpcode::kMaximum, options));
  return b.Add(HloInstruction::CreateConvert(reduce->shape(), reduced));
}

// An ordered compare, maximum or minimum of u32 values, which the VPU would order as s32: on the words
// with the sign bit flipped (ToSignedOrder).
HloInstruction* LegalizeUnsignedOrder(HloComputation* computation, HloInstruction* instruction) {
  const HloOpcode op = instruction->opcode();
  if (instruction->operand_count() != 2 || instruction->operand(0)->shape().element_type != PrimitiveType::U32) {
    return nullptr;
  }
  if (op == HloOpcode::kCompare) {
    const hlo::ComparisonDirection direction = instruction->comparison_direction();
    if (direction == hlo::ComparisonDirection::kEq || direction == hlo::ComparisonDirection::kNe) return nullptr;
  } else if (op != HloOpcode::kMaximum && op != HloOpcode::kMinimum) {
    return nullptr;
  }
  const Dims& dims = instruction->operand(0)->shape().dimensions;
  Builder u32(computation, PrimitiveType::U32), s32(computation, PrimitiveType::S32);
  HloInstruction* bits = SignBits(u32, dims);
  HloInstruction* a = ToSignedOrder(u32, s32, instruction->operand(0), bits);
  HloInstruction* b = ToSignedOrder(u32, s32, instruction->operand(1), bits);
  if (op == HloOpcode::kCompare) {
    return s32.Add(HloInstruction::CreateCompare(instruction->shape(), a, b, instruction->comparison_direction()));
  }
  return FromSignedOrder(u32, s32.Add(HloInstruction::CreateBinary(s32.Shape(dims), op, a, b)), bits);
}

// is-finite(x) = (x - x == 0): infinities and NaN give NaN, every finite value (and, DAZ, a subnormal)
// gives 0.
HloInstruction* LegalizeIsFinite(HloComputation* computation, HloInstruction* is_finite) {
  HloInstruction* x = is_finite->operand(0);
  if (x->shape().element_type != PrimitiveType::F32) return nullptr;
  Builder b(computation, PrimitiveType::F32);
  const Dims& dims = x->shape().dimensions;
  HloInstruction* difference = b.Add(HloInstruction::CreateBinary(b.Shape(dims), HloOpcode::kSubtract, x, x));
  HloInstruction* zero = b.Add(HloInstruction::CreateConstant(hlo::Literal(b.Shape({}))));
  HloInstruction* zeros = b.Add(HloInstruction::CreateBroadcast(b.Shape(dims), zero, {}));
  return b.Add(HloInstruction::CreateCompare(is_finite->shape(), difference, zeros, hlo::ComparisonDirection::kEq));
}

StatusOr<bool> CodegenLegalization::Run(hlo::HloModule* module) {
  if (options_.lane_multiple <= 0) return InvalidArgument("codegen-legalization: lane_multiple must be positive");
  const std::vector<HloComputation*> program_list = ProgramComputations(module);
  const std::set<const HloComputation*> program(program_list.begin(), program_list.end());
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      HloInstruction* replacement = nullptr;
      if (instruction->opcode() == HloOpcode::kReduce) {
        TPU_ASSIGN_OR_RETURN(replacement, LegalizeLogicalReduce(computation, instruction, options_));
        if (replacement == nullptr) {
          TPU_ASSIGN_OR_RETURN(replacement, LegalizeUnsignedReduce(computation, instruction, options_));
        }
        if (replacement == nullptr) {
          TPU_ASSIGN_OR_RETURN(replacement, LegalizeReduce(computation, instruction, options_));
        }
      } else if (instruction->opcode() == HloOpcode::kTranspose) {
        replacement = LegalizeTranspose(computation, instruction, options_);
      } else if (instruction->opcode() == HloOpcode::kBroadcast) {
        replacement = LegalizeBroadcast(computation, instruction);
      } else if (instruction->opcode() == HloOpcode::kIsFinite) {
        replacement = LegalizeIsFinite(computation, instruction);
      } else if (program.count(computation) > 0) {
        // Not inside a reducer: its maximum of two u32 scalars is what the reduction does.
        replacement = LegalizeUnsignedOrder(computation, instruction);
      }
      if (replacement == nullptr) continue;
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(instruction, replacement));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
