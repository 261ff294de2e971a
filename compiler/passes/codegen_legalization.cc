#include "compiler/passes/codegen_legalization.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "compiler/hlo/hlo_opcode.h"

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

// [P, X, Y, Q, C] -> [P, Y, X, Q, C]: the rows of blocks X and Y trade places, C stays on lanes.
struct BlockSwap {
  int64_t p, x, y, q;
};

// Row slices the swap is copied in (none when a block has one element: then it is a reshape).
int64_t Pieces(const BlockSwap& swap) { return swap.x == 1 || swap.y == 1 ? 0 : std::min(swap.x, swap.y); }

int64_t Pieces(const std::vector<BlockSwap>& swaps) {
  int64_t pieces = 0;
  for (const BlockSwap& swap : swaps) pieces += Pieces(swap);
  return pieces;
}

Dims PrimeFactors(int64_t n) {
  Dims factors;
  for (int64_t f = 2; f * f <= n; ++f) {
    for (; n % f == 0; n /= f) factors.push_back(f);
  }
  if (n > 1) factors.push_back(n);
  return factors;
}

// Appends `swap`, or swaps of one prime factor of X or of Y at a time (whichever side needs fewer
// slices in all) when that saves a third of the slices: swapping a 130-row block with a 130-row block
// takes 2 + 5 + 13 slices, not 130 (the slices of the inner swaps have more loop levels each).
void AppendBlockSwap(const BlockSwap& swap, std::vector<BlockSwap>* swaps) {
  const Dims x_factors = PrimeFactors(swap.x), y_factors = PrimeFactors(swap.y);
  int64_t x_pieces = 0, y_pieces = 0;
  for (int64_t f : x_factors) x_pieces += Pieces(BlockSwap{1, f, swap.y, 1});
  for (int64_t f : y_factors) y_pieces += Pieces(BlockSwap{1, swap.x, f, 1});
  if (3 * std::min(x_pieces, y_pieces) >= 2 * Pieces(swap)) {
    swaps->push_back(swap);
    return;
  }
  if (x_pieces <= y_pieces) {
    // [P, f1..fr, Y, Q]: Y moves forward past fr, then f(r-1), ...
    int64_t before = swap.p * swap.x, after = swap.q;
    for (auto f = x_factors.rbegin(); f != x_factors.rend(); ++f) {
      before /= *f;
      swaps->push_back({before, *f, swap.y, after});
      after *= *f;
    }
    return;
  }
  // [P, X, g1..gs, Q]: g1 moves forward past X, then g2, ...
  int64_t before = swap.p, after = swap.q * swap.y;
  for (int64_t g : y_factors) {
    after /= g;
    swaps->push_back({before, swap.x, g, after});
    before *= g;
  }
}

// Block swaps that reorder leading dimensions of sizes `sizes` so that position i holds dimension
// order[i]: each brings the next wanted dimension forward past the block before it.
std::vector<BlockSwap> PlanRowPermutation(const Dims& sizes, const Dims& order) {
  Dims current(sizes.size());
  std::iota(current.begin(), current.end(), 0);
  std::vector<BlockSwap> swaps;
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t j = static_cast<size_t>(std::find(current.begin(), current.end(), order[i]) - current.begin());
    if (j == i) continue;
    Dims current_sizes;
    for (int64_t d : current) current_sizes.push_back(sizes[d]);
    AppendBlockSwap({Product(current_sizes, 0, i), Product(current_sizes, i, j), current_sizes[j],
                     Product(current_sizes, j + 1, current_sizes.size())},
                    &swaps);
    std::rotate(current.begin() + i, current.begin() + j, current.begin() + j + 1);
  }
  return swaps;
}

// Slices along the smaller block, each reshaped into its place in the other order and concatenated.
// Blocks P and Q are left out of the shapes when they have one element.
HloInstruction* SwapBlocks(Builder& b, HloInstruction* x, const BlockSwap& swap, int64_t cols) {
  auto shape = [&](int64_t first, int64_t second) {
    Dims dims;
    if (swap.p > 1) dims.push_back(swap.p);
    dims.push_back(first);
    dims.push_back(second);
    if (swap.q > 1) dims.push_back(swap.q);
    dims.push_back(cols);
    return dims;
  };
  const size_t x_dim = swap.p > 1 ? 1 : 0, y_dim = x_dim + 1;
  x = b.Reshape(x, shape(swap.x, swap.y));
  if (Pieces(swap) == 0) return b.Reshape(x, shape(swap.y, swap.x));
  std::vector<HloInstruction*> parts;
  if (swap.x <= swap.y) {
    for (int64_t i = 0; i < swap.x; ++i) parts.push_back(b.Reshape(b.Slice(x, x_dim, i, i + 1), shape(swap.y, 1)));
    return b.Concatenate(parts, y_dim);
  }
  for (int64_t i = 0; i < swap.y; ++i) parts.push_back(b.Reshape(b.Slice(x, y_dim, i, i + 1), shape(1, swap.x)));
  return b.Concatenate(parts, x_dim);
}

HloInstruction* PermuteRows(Builder& b, HloInstruction* x, const std::vector<BlockSwap>& swaps, const Dims& result) {
  const int64_t cols = x->shape().dimensions.back();
  for (const BlockSwap& swap : swaps) x = SwapBlocks(b, x, swap, cols);
  return b.Reshape(x, result);
}

// The swap [N, B] -> [B, N] of the batched transpose [B, M, N] -> [B, N, M] below.
std::vector<BlockSwap> BatchedTransposeSwaps(int64_t batch, int64_t n) {
  std::vector<BlockSwap> swaps;
  if (batch > 1) AppendBlockSwap({1, n, batch, 1}, &swaps);
  return swaps;
}

// [B, M, N] -> [B, N, M]. With B > 1, M is padded with zero rows to M' (a multiple of lane_multiple),
// [B*M', N] is transposed as a whole to [N, B*M'], which is [N, B, M'] in whole lines; a block swap
// makes it [B, N, M'] and a prefix slice [B, N, M].
HloInstruction* BatchedTranspose(Builder& b, HloInstruction* x, int64_t lane_multiple) {
  const Dims dims = x->shape().dimensions;
  const int64_t batch = dims[0], m = dims[1], n = dims[2];
  if (batch == 1) return b.Reshape(b.Transpose2(b.Reshape(x, {m, n})), {1, n, m});
  const int64_t padded = RoundUp(m, lane_multiple);
  if (padded != m) x = b.PadWithZeros(x, 1, padded - m);
  HloInstruction* transposed = b.Transpose2(b.Reshape(x, {batch * padded, n}));
  HloInstruction* swapped =
      PermuteRows(b, b.Reshape(transposed, {n, batch, padded}), BatchedTransposeSwaps(batch, n), {batch, n, padded});
  return padded == m ? swapped : b.Slice(swapped, 2, 0, m);
}

// A transpose with unit dimensions dropped and runs of dimensions that stay together merged; only
// dimensions that are minor on neither side are dropped or merged, so the reshapes keep the layout.
struct TransposePlan {
  Dims dims, perm;  // collapsed operand dimensions and permutation
  // Either the only row permutation (the minor dimension stays), or the one before the batched transpose.
  std::vector<BlockSwap> before, after;
  bool batched = false;
  Dims others;  // collapsed dimensions that stay leading around the batched transpose, in output order
  int64_t pieces = 0;
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
  if (r <= 2) return plan;
  const Dims leading(plan.dims.begin(), plan.dims.end() - 1);
  if (plan.perm.back() == r - 1) {
    plan.before = PlanRowPermutation(leading, Dims(plan.perm.begin(), plan.perm.end() - 1));
    plan.pieces = Pieces(plan.before);
    return plan;
  }
  // The future minor dimension k goes last among the leading ones, the others in output order.
  const int64_t k = plan.perm.back();
  for (int64_t i = 0; i + 1 < r; ++i) {
    if (plan.perm[i] != r - 1) plan.others.push_back(plan.perm[i]);
  }
  Dims first = plan.others;
  first.push_back(k);
  plan.before = PlanRowPermutation(leading, first);
  plan.batched = true;
  // After the batched transpose the leading dimensions are others..., r-1 (the operand's minor).
  Dims current = plan.others, current_sizes;
  current.push_back(r - 1);
  for (int64_t d : current) current_sizes.push_back(plan.dims[d]);
  Dims second;
  for (int64_t i = 0; i + 1 < r; ++i) {
    second.push_back(std::find(current.begin(), current.end(), plan.perm[i]) - current.begin());
  }
  plan.after = PlanRowPermutation(current_sizes, second);
  int64_t batch = 1;
  for (int64_t d : plan.others) batch *= plan.dims[d];
  plan.pieces = Pieces(plan.before) + Pieces(BatchedTransposeSwaps(batch, plan.dims[r - 1])) + Pieces(plan.after);
  return plan;
}

// The transpose from supported pieces, or nullptr when it is supported as it is or needs too many pieces.
HloInstruction* LegalizeTranspose(HloComputation* computation, HloInstruction* transpose,
                                  const CodegenLegalizationOptions& options) {
  const hlo::Shape& in = transpose->operand(0)->shape();
  const Dims& perm = transpose->dimensions();
  if (!in.IsArray() || in.rank() < 3 || static_cast<int>(perm.size()) != in.rank()) return nullptr;
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return nullptr;
  const TransposePlan plan = PlanTranspose(in.dimensions, perm);
  if (plan.pieces > options.max_pieces) return nullptr;
  Builder b(computation, in.element_type);
  const Dims& out = transpose->shape().dimensions;
  HloInstruction* x = b.Reshape(transpose->operand(0), plan.dims);
  const int64_t r = static_cast<int64_t>(plan.dims.size());
  Dims permuted;
  for (int64_t d : plan.perm) permuted.push_back(plan.dims[d]);
  if (r == 2 && plan.perm[0] == 1) {
    x = b.Transpose2(x);
  } else if (r >= 3 && !plan.batched) {
    x = PermuteRows(b, x, plan.before, permuted);
  } else if (plan.batched) {
    const int64_t k = plan.perm.back(), cols = plan.dims[r - 1];
    Dims leading;
    int64_t batch = 1;
    for (int64_t d : plan.others) {
      leading.push_back(plan.dims[d]);
      batch *= plan.dims[d];
    }
    Dims first = leading;
    first.push_back(plan.dims[k]);
    first.push_back(cols);
    x = PermuteRows(b, x, plan.before, first);
    x = BatchedTranspose(b, b.Reshape(x, {batch, plan.dims[k], cols}), options.lane_multiple);
    Dims second = leading;
    second.push_back(cols);
    second.push_back(plan.dims[k]);
    x = PermuteRows(b, b.Reshape(x, second), plan.after, permuted);
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

StatusOr<bool> CodegenLegalization::Run(hlo::HloModule* module) {
  if (options_.lane_multiple <= 0) return InvalidArgument("codegen-legalization: lane_multiple must be positive");
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      HloInstruction* replacement = nullptr;
      if (instruction->opcode() == HloOpcode::kReduce) {
        TPU_ASSIGN_OR_RETURN(replacement, LegalizeReduce(computation, instruction, options_));
      } else if (instruction->opcode() == HloOpcode::kTranspose) {
        replacement = LegalizeTranspose(computation, instruction, options_);
      }
      if (replacement == nullptr) continue;
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(instruction, replacement));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
