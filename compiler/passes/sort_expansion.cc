#include "compiler/passes/sort_expansion.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::ComparisonDirection;
using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using hlo::Shape;
constexpr PrimitiveType S32 = PrimitiveType::S32;
constexpr PrimitiveType PRED = PrimitiveType::PRED;

// The loop state: (stage, k, j: s32[]; position, operands...: [rows, cols]).
enum Element { kStage, kBlock, kDistance, kPosition, kFirstOperand };

// What the sort is laid out as: tables of `rows` = padded * groups rows of `cols` elements.
struct Table {
  int64_t size = 0;    // positions along the sorted dimension
  int64_t padded = 0;  // size rounded up to a power of two
  int64_t groups = 1;  // A: the other non-minor dimensions (1 when the minor dimension is sorted)
  int64_t cols = 1;    // C
  int64_t rows() const { return padded * groups; }
  std::vector<int64_t> dims() const { return {rows(), cols}; }
};

bool ComparatorIsElementwise(const HloComputation& comparator) {
  for (const HloInstruction* instruction : comparator.instructions()) {
    const HloOpcode op = instruction->opcode();
    if (!instruction->shape().IsArray() || instruction->shape().rank() != 0) return false;
    if (op == HloOpcode::kParameter || op == HloOpcode::kConstant || op == HloOpcode::kSelect ||
        op == HloOpcode::kClamp || op == HloOpcode::kBitcast || hlo::IsElementwiseUnary(op) ||
        hlo::IsElementwiseBinary(op)) {
      continue;
    }
    return false;
  }
  return true;
}

// The comparator applied element by element, as often as the stage needs it: parameter 2i is operand
// i's element of `lhs`, 2i + 1 its element of `rhs`. What depends on one side only (jnp's NaN and zero
// canonicalization, the total-order keys) is built once for both applications.
class ElementwiseComparator {
 public:
  ElementwiseComparator(ElementwiseBuilder& f, const HloComputation& comparator) : f_(f), comparator_(comparator) {}

  HloInstruction* Apply(const std::vector<HloInstruction*>& lhs, const std::vector<HloInstruction*>& rhs) {
    std::map<const HloInstruction*, HloInstruction*> value;
    for (const HloInstruction* instruction : comparator_.MakeInstructionPostOrder()) {
      std::vector<HloInstruction*> operands;
      for (const HloInstruction* operand : instruction->operands()) operands.push_back(value.at(operand));
      if (instruction->opcode() == HloOpcode::kParameter) {
        const int64_t p = instruction->parameter_number();
        value[instruction] = (p % 2 == 0 ? lhs : rhs).at(p / 2);
        continue;
      }
      HloInstruction*& built = built_[{instruction, operands}];
      if (built == nullptr) built = Build(*instruction, operands);
      value[instruction] = built;
    }
    return value.at(comparator_.root_instruction());
  }

 private:
  HloInstruction* Build(const HloInstruction& instruction, const std::vector<HloInstruction*>& operands) {
    const hlo::Shape shape = f_.Of(instruction.shape().element_type);
    if (instruction.opcode() == HloOpcode::kConstant) {
      HloInstruction* scalar = f_.builder().Add(HloInstruction::CreateConstant(instruction.literal()));
      return f_.builder().Add(HloInstruction::CreateBroadcast(shape, scalar, {}));
    }
    if (instruction.opcode() == HloOpcode::kCompare && instruction.comparison_type() == "TOTALORDER" &&
        hlo::IsFloatingPointType(operands[0]->shape().element_type)) {
      return f_.Compare(TotalOrderKey(operands[0]), TotalOrderKey(operands[1]), instruction.comparison_direction());
    }
    std::unique_ptr<HloInstruction> clone = instruction.opcode() == HloOpcode::kBitcast
                                                ? HloInstruction::Create(HloOpcode::kBitcastConvert, shape, operands)
                                                : instruction.CloneWithNewOperands(shape, operands);
    clone->set_name("");
    return f_.builder().Add(std::move(clone));
  }

  // The s32 key of a float whose s32 order is the float's total order.
  HloInstruction* TotalOrderKey(HloInstruction* value) {
    HloInstruction*& key = keys_[value];
    if (key != nullptr) return key;
    HloInstruction* wide = value->shape().element_type == PrimitiveType::F32
                               ? value
                               : f_.builder().Convert(value, PrimitiveType::F32);
    key = f_.TotalOrderKey(f_.Bitcast(wide, S32));
    return key;
  }

  ElementwiseBuilder& f_;
  const HloComputation& comparator_;
  std::map<std::pair<const HloInstruction*, std::vector<HloInstruction*>>, HloInstruction*> built_;
  std::map<HloInstruction*, HloInstruction*> keys_;
};

HloInstruction* Scalar(HloComputation* c, int32_t value) {
  return c->AddInstruction(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(value)));
}

// The position along the sorted dimension of every row of the table, as [rows, width].
HloInstruction* PositionOfRows(HloBuilder& b, const Table& t, int64_t width) {
  if (t.groups == 1) return b.Add(HloInstruction::CreateIota(HloBuilder::ShapeOf(S32, {t.rows(), width}), 0));
  HloInstruction* iota = b.Add(HloInstruction::CreateIota(HloBuilder::ShapeOf(S32, {t.padded, t.groups, width}), 0));
  return b.Reshape(iota, {t.rows(), width});
}

hlo::Shape StateShape(const Table& t, const std::vector<PrimitiveType>& types) {
  const Shape scalar = Shape::Make(S32, {});
  std::vector<Shape> elements = {scalar, scalar, scalar, Shape::Make(S32, t.dims())};
  for (PrimitiveType type : types) elements.push_back(Shape::Make(type, t.dims()));
  return Shape::MakeTuple(elements);
}

// stage < stages.
HloComputation* Condition(hlo::HloModule* module, const Shape& state_shape, int32_t stages) {
  auto computation = std::make_unique<HloComputation>(UniqueComputationName(*module, "bitonic_sort_condition"));
  HloComputation* c = computation.get();
  HloInstruction* state = c->AddInstruction(HloInstruction::CreateParameter(0, state_shape, "state"));
  HloInstruction* stage = c->AddInstruction(HloInstruction::CreateGetTupleElement(state, kStage));
  c->set_root_instruction(c->AddInstruction(
      HloInstruction::CreateCompare(Shape::Make(PRED, {}), stage, Scalar(c, stages), ComparisonDirection::kLt)));
  return module->AddEmbeddedComputation(std::move(computation));
}

// One stage (k, j) of the network.
HloComputation* Body(hlo::HloModule* module, const Shape& state_shape, const Table& t, const HloInstruction& sort) {
  auto computation = std::make_unique<HloComputation>(UniqueComputationName(*module, "bitonic_sort_stage"));
  HloComputation* c = computation.get();
  HloInstruction* state = c->AddInstruction(HloInstruction::CreateParameter(0, state_shape, "state"));
  std::vector<HloInstruction*> element;
  for (int64_t e = 0; e < static_cast<int64_t>(state_shape.tuple_shapes.size()); ++e) {
    element.push_back(c->AddInstruction(HloInstruction::CreateGetTupleElement(state, e)));
  }
  HloBuilder b(c);
  ElementwiseBuilder f(c, t.dims());
  ElementwiseBuilder column(c, {t.rows(), 1});
  HloInstruction* k = element[kBlock];
  HloInstruction* j = element[kDistance];

  // Partner rows: ((row / A) ^ j) * A + row % A.
  HloInstruction* partner =
      column.Binary(HloOpcode::kXor, PositionOfRows(b, t, 1),
                    b.Add(HloInstruction::CreateBroadcast(column.Of(S32), j, {})));
  if (t.groups > 1) {
    HloInstruction* group = b.Reshape(
        b.Add(HloInstruction::CreateIota(HloBuilder::ShapeOf(S32, {t.padded, t.groups, 1}), 1)), {t.rows(), 1});
    partner = column.Add(column.Mul(partner, column.Constant<int32_t>(static_cast<int32_t>(t.groups))), group);
  }
  std::vector<HloInstruction*> self(element.begin() + kPosition, element.end()), other;
  for (HloInstruction* table : self) {
    auto gather = HloInstruction::Create(HloOpcode::kGather, table->shape(), {table, partner});
    gather->set_raw_attribute("offset_dims", "{1}");
    gather->set_raw_attribute("collapsed_slice_dims", "{0}");
    gather->set_raw_attribute("start_index_map", "{0}");
    gather->set_raw_attribute("index_vector_dim", "1");
    gather->set_raw_attribute("slice_sizes", "{1," + std::to_string(t.cols) + "}");
    other.push_back(b.Add(std::move(gather)));
  }

  // other < self in the stable order: the comparator, then the original position; padding last.
  const std::vector<HloInstruction*> self_values(self.begin() + 1, self.end()), other_values(other.begin() + 1, other.end());
  ElementwiseComparator comparator(f, *sort.to_apply());
  HloInstruction* other_first = comparator.Apply(other_values, self_values);
  HloInstruction* self_first = comparator.Apply(self_values, other_values);
  HloInstruction* earlier = f.Compare(other[0], self[0], ComparisonDirection::kLt);
  HloInstruction* less = f.Binary(HloOpcode::kOr, other_first,
                                  f.Binary(HloOpcode::kAnd, f.Unary(HloOpcode::kNot, self_first), earlier));
  if (t.padded > t.size) {
    HloInstruction* size = f.Constant<int32_t>(static_cast<int32_t>(t.size));
    HloInstruction* both_real = f.Binary(HloOpcode::kAnd, f.Compare(other[0], size, ComparisonDirection::kLt),
                                         f.Compare(self[0], size, ComparisonDirection::kLt));
    less = f.Select(both_real, less, earlier);
  }

  // The lower of a pair (i & j == 0) keeps the lesser in an ascending block (i & k == 0): an element
  // takes its partner's value when `less` differs from "keeps the greater".
  HloInstruction* position = PositionOfRows(b, t, t.cols);
  HloInstruction* zero = f.Constant<int32_t>(0);
  auto bit_clear = [&](HloInstruction* bit) {
    HloInstruction* wide = b.Add(HloInstruction::CreateBroadcast(f.Of(S32), bit, {}));
    return f.Compare(f.Binary(HloOpcode::kAnd, position, wide), zero, ComparisonDirection::kEq);
  };
  HloInstruction* keeps_greater = f.Binary(HloOpcode::kXor, bit_clear(j), bit_clear(k));
  HloInstruction* take = f.Binary(HloOpcode::kXor, less, keeps_greater);

  // Next stage: j halves; after j = 1 the block doubles and j starts at half of it.
  const Shape scalar = Shape::Make(S32, {});
  HloInstruction* one = Scalar(c, 1);
  HloInstruction* half = b.Add(HloInstruction::CreateBinary(scalar, HloOpcode::kShiftRightLogical, j, one));
  HloInstruction* block_done =
      b.Add(HloInstruction::CreateCompare(Shape::Make(PRED, {}), half, Scalar(c, 0), ComparisonDirection::kEq));
  HloInstruction* doubled = b.Add(HloInstruction::CreateBinary(scalar, HloOpcode::kShiftLeft, k, one));
  std::vector<HloInstruction*> next = {
      b.Add(HloInstruction::CreateBinary(scalar, HloOpcode::kAdd, element[kStage], one)),
      b.Add(HloInstruction::CreateTernary(scalar, HloOpcode::kSelect, block_done, doubled, k)),
      b.Add(HloInstruction::CreateTernary(scalar, HloOpcode::kSelect, block_done, k, half))};
  for (size_t e = 0; e < self.size(); ++e) next.push_back(f.Select(take, other[e], self[e]));
  c->set_root_instruction(c->AddInstruction(HloInstruction::CreateTuple(next)));
  return module->AddEmbeddedComputation(std::move(computation));
}

// The dimensions of a rank-`rank` array with `dimension` first and the others in their order.
std::vector<int64_t> DimensionFirst(int64_t rank, int64_t dimension) {
  std::vector<int64_t> permutation = {dimension};
  for (int64_t d = 0; d < rank; ++d) {
    if (d != dimension) permutation.push_back(d);
  }
  return permutation;
}

// The operand laid out as its table: the sorted dimension first (through a transpose), padded to a
// power of two, the other non-minor dimensions merged into it.
HloInstruction* ToTable(HloBuilder& b, HloInstruction* x, int64_t dimension, const Table& t) {
  const int64_t rank = x->shape().rank();
  HloInstruction* front = dimension == rank - 1 ? b.Transpose(b.Reshape(x, {t.cols, t.size}), {1, 0})
                                                : b.Transpose(x, DimensionFirst(rank, dimension));
  hlo::PaddingConfig padding;
  padding.dimensions.resize(front->shape().rank());
  padding.dimensions[0].edge_padding_high = t.padded - t.size;
  return b.Reshape(b.Pad(front, padding), t.dims());
}

// The inverse of ToTable.
HloInstruction* FromTable(HloBuilder& b, HloInstruction* table, const Shape& shape, int64_t dimension, const Table& t) {
  const std::vector<int64_t>& dims = shape.dimensions;
  const int64_t rank = static_cast<int64_t>(dims.size());
  HloInstruction* rows = b.Slice(table, {0, 0}, {t.size * t.groups, t.cols}, {1, 1});
  if (dimension == rank - 1) return b.Reshape(b.Transpose(rows, {1, 0}), dims);
  const std::vector<int64_t> permutation = DimensionFirst(rank, dimension);
  std::vector<int64_t> front;
  for (int64_t d : permutation) front.push_back(dims[d]);
  return b.Transpose(b.Reshape(rows, front), InversePermutation(permutation));
}

HloInstruction* Expand(hlo::HloModule* module, HloComputation* computation, HloInstruction* sort) {
  if (sort->to_apply() == nullptr || !ComparatorIsElementwise(*sort->to_apply()) || sort->dimensions().size() != 1) {
    return nullptr;
  }
  HloBuilder b(computation);
  std::vector<HloInstruction*> operands = sort->operands();
  const Shape& shape = operands[0]->shape();
  const int64_t dimension = sort->dimensions(0);
  const int64_t rank = shape.rank();
  Table t;
  t.size = shape.dimensions[dimension];
  if (t.size <= 1 || t.size > INT32_MAX / 2) {
    return t.size <= 1 ? (operands.size() == 1 ? operands[0] : b.Add(HloInstruction::CreateTuple(operands))) : nullptr;
  }
  t.padded = 1;
  while (t.padded < t.size) t.padded *= 2;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == dimension) continue;
    if (dimension == rank - 1) {
      t.cols *= shape.dimensions[d];
    } else if (d == rank - 1) {
      t.cols = shape.dimensions[d];
    } else {
      t.groups *= shape.dimensions[d];
    }
  }
  if (t.rows() > INT32_MAX) return nullptr;

  std::vector<PrimitiveType> types;
  std::vector<HloInstruction*> init = {Scalar(computation, 0), Scalar(computation, 2), Scalar(computation, 1),
                                       PositionOfRows(b, t, t.cols)};
  for (HloInstruction* operand : operands) {
    types.push_back(operand->shape().element_type);
    init.push_back(ToTable(b, operand, dimension, t));
  }
  int32_t log2 = 0;
  while ((int64_t{1} << log2) < t.padded) ++log2;
  const Shape state_shape = StateShape(t, types);
  HloInstruction* loop = b.Add(HloInstruction::Create(HloOpcode::kWhile, state_shape, {b.Add(HloInstruction::CreateTuple(init))}));
  loop->AddCalledComputation("condition", Condition(module, state_shape, log2 * (log2 + 1) / 2));
  loop->AddCalledComputation("body", Body(module, state_shape, t, *sort));
  std::vector<HloInstruction*> results;
  for (size_t i = 0; i < operands.size(); ++i) {
    HloInstruction* table = b.Add(HloInstruction::CreateGetTupleElement(loop, kFirstOperand + i));
    results.push_back(FromTable(b, table, operands[i]->shape(), dimension, t));
  }
  return results.size() == 1 ? results[0] : b.Add(HloInstruction::CreateTuple(results));
}

}  // namespace

StatusOr<bool> SortExpansion::Run(hlo::HloModule* module) {
  TPU_ASSIGN_OR_RETURN(bool changed, ReplaceEachInProgram(module, [module](HloComputation* computation,
                                                                           HloInstruction* instruction) -> HloInstruction* {
    if (instruction->opcode() != HloOpcode::kSort) return nullptr;
    return Expand(module, computation, instruction);
  }));
  if (changed) module->RemoveUnusedComputations();
  return changed;
}

}  // namespace tpu::compiler
