#include "compiler/passes/arg_reductions.h"

#include <climits>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <vector>

#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Literal;
using hlo::PrimitiveType;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// kMaximum when `reducer` is argmax's comparator, kMinimum for argmin's, kUnknown otherwise: it is run on
// probes (a, i) vs (b, j) and must give what jnp.argmax / jnp.argmin keep (values of `type`, f32 or s32;
// the NaN probes only for f32).
HloOpcode Classify(const hlo::HloComputation& reducer, PrimitiveType type) {
  if (reducer.num_parameters() != 4) return HloOpcode::kUnknown;
  struct Probe {
    double a;
    int32_t i;
    double b;
    int32_t j;
  };
  const Probe probes[] = {{1, 0, 2, 1},    {2, 0, 1, 1},       {1, 0, 1, 1},         {1, 1, 1, 0},   {kNaN, 0, 1, 1},
                          {1, 0, kNaN, 1}, {kNaN, 1, kNaN, 0}, {-kInf, 0, -kInf, 3}, {kInf, 2, 5, 0}};
  const Probe integer_probes[] = {{1, 0, 2, 1}, {2, 0, 1, 1}, {1, 0, 1, 1}, {1, 1, 1, 0}, {-7, 2, 5, 0},
                                  {INT32_MIN, 0, INT32_MIN, 3}, {INT32_MAX, 3, INT32_MAX, 1}};
  const bool real = type == PrimitiveType::F32;
  for (HloOpcode op : {HloOpcode::kMaximum, HloOpcode::kMinimum}) {
    bool matches = true;
    for (const Probe& p : real ? std::vector<Probe>(std::begin(probes), std::end(probes))
                               : std::vector<Probe>(std::begin(integer_probes), std::end(integer_probes))) {
      const bool a_wins_value =
          std::isnan(p.a) || (!std::isnan(p.b) && (op == HloOpcode::kMaximum ? p.a > p.b : p.a < p.b));
      const bool tie = (p.a == p.b) || (std::isnan(p.a) && std::isnan(p.b));
      const bool a_wins = a_wins_value || (tie && p.i < p.j);
      std::vector<Literal> arguments;
      auto value_of = [&](double v) {
        return real ? Literal::CreateR0<float>(static_cast<float>(v)) : Literal::CreateR0<int32_t>(static_cast<int32_t>(v));
      };
      arguments.push_back(value_of(p.a));
      arguments.push_back(Literal::CreateR0<int32_t>(p.i));
      arguments.push_back(value_of(p.b));
      arguments.push_back(Literal::CreateR0<int32_t>(p.j));
      StatusOr<Literal> result = hlo::InterpretComputation(reducer, arguments);
      if (!result.ok() || result->tuple_elements().size() != 2) return HloOpcode::kUnknown;
      const std::vector<Literal>& parts = result->tuple_elements();
      const double value = parts[0].GetAsDouble(0);
      const double want = a_wins ? p.a : p.b;
      const bool same_value = (std::isnan(value) && std::isnan(want)) || value == want;
      if (!same_value || parts[1].GetAsDouble(0) != (a_wins ? p.i : p.j)) matches = false;
    }
    if (matches) return op;
  }
  return HloOpcode::kUnknown;
}

// Whether `index` holds each element's position along dimension `dim`.
bool IsPosition(const HloInstruction& index, int64_t dim) {
  if (index.opcode() == HloOpcode::kIota) return index.iota_dimension() == dim;
  if (index.opcode() == HloOpcode::kBroadcast && index.operand(0)->opcode() == HloOpcode::kIota) {
    const HloInstruction& iota = *index.operand(0);
    return index.dimensions().at(static_cast<size_t>(iota.iota_dimension())) == dim;
  }
  if (index.opcode() != HloOpcode::kConstant || !index.has_literal()) return false;
  const hlo::Shape& shape = index.shape();
  std::vector<int64_t> position(static_cast<size_t>(shape.rank()), 0);
  for (int64_t linear = 0; linear < shape.ElementCount(); ++linear) {
    if (index.literal().GetAsDouble(linear) != static_cast<double>(position[static_cast<size_t>(dim)])) return false;
    for (int d = shape.rank() - 1; d >= 0; --d) {
      if (++position[d] < shape.dimensions[d]) break;
      position[d] = 0;
    }
  }
  return true;
}

bool IsScalarConstant(const HloInstruction& value, double expected) {
  return value.opcode() == HloOpcode::kConstant && value.has_literal() && value.shape().rank() == 0 &&
         value.literal().GetAsDouble(0) == expected;
}

HloInstruction* Rewrite(hlo::HloModule* module, hlo::HloComputation* computation, HloInstruction* reduce) {
  if (reduce->operand_count() != 4 || reduce->dimensions().size() != 1 || reduce->to_apply() == nullptr) return nullptr;
  HloInstruction* x = reduce->operand(0);
  HloInstruction* index = reduce->operand(1);
  const int64_t dim = reduce->dimensions()[0];
  const PrimitiveType type = x->shape().element_type;
  const bool real = type == PrimitiveType::F32;
  if ((!real && type != PrimitiveType::S32) || index->shape().element_type != PrimitiveType::S32 ||
      !IsPosition(*index, dim)) {
    return nullptr;
  }
  const HloOpcode op = Classify(*reduce->to_apply(), type);
  const double lowest = real ? -kInf : static_cast<double>(INT32_MIN);
  const double highest = real ? kInf : static_cast<double>(INT32_MAX);
  if (op == HloOpcode::kUnknown || !IsScalarConstant(*reduce->operand(3), 0) ||
      !IsScalarConstant(*reduce->operand(2), op == HloOpcode::kMaximum ? lowest : highest)) {
    return nullptr;
  }
  HloBuilder b(computation);
  const hlo::Shape& in = x->shape();
  std::vector<int64_t> out_dims;
  for (int d = 0; d < in.rank(); ++d) {
    if (d != dim) out_dims.push_back(in.dimensions[d]);
  }
  std::vector<int64_t> kept;
  for (int d = 0; d < in.rank(); ++d) {
    if (d != dim) kept.push_back(d);
  }
  auto shape = [&](PrimitiveType type, const std::vector<int64_t>& dims) { return HloBuilder::ShapeOf(type, dims); };
  auto reduce_with = [&](HloInstruction* value, HloInstruction* init, HloOpcode reducer) {
    const PrimitiveType type = value->shape().element_type;
    return b.Add(HloInstruction::CreateReduce(shape(type, out_dims), value, init, {dim},
                                              HloBuilder::ScalarReducer(module, reducer, type)));
  };
  auto scalar = [&](PrimitiveType type, double v) {
    Literal literal(hlo::Shape::Make(type, {}));
    literal.SetFromDouble(0, v);
    return b.Add(HloInstruction::CreateConstant(std::move(literal)));
  };
  auto spread = [&](HloInstruction* row) {
    return b.Add(HloInstruction::CreateBroadcast(shape(row->shape().element_type, in.dimensions), row, kept));
  };
  auto pick = [&](HloInstruction* mask, HloInstruction* on_true, HloInstruction* on_false) {
    return b.Add(HloInstruction::CreateTernary(on_true->shape(), HloOpcode::kSelect, mask, on_true, on_false));
  };
  const hlo::Shape pred = shape(PrimitiveType::PRED, in.dimensions);
  HloInstruction* init = reduce->operand(2);
  HloInstruction* best = reduce_with(x, init, op);
  auto first_where = [&](HloInstruction* mask) {
    HloInstruction* none = b.Add(HloInstruction::CreateBroadcast(
        index->shape(), scalar(PrimitiveType::S32, std::numeric_limits<int32_t>::max()), {}));
    return reduce_with(pick(mask, index, none), scalar(PrimitiveType::S32, std::numeric_limits<int32_t>::max()),
                       HloOpcode::kMinimum);
  };
  auto at_best = [&] { return b.Add(HloInstruction::CreateCompare(pred, x, spread(best), hlo::ComparisonDirection::kEq)); };
  if (!real) return b.Add(HloInstruction::CreateTuple({best, first_where(at_best())}));
  HloInstruction* is_nan = b.Add(HloInstruction::CreateCompare(pred, x, x, hlo::ComparisonDirection::kNe));
  HloInstruction* any_nan = reduce_with(is_nan, scalar(PrimitiveType::PRED, 0), HloOpcode::kOr);
  HloInstruction* none = b.Add(HloInstruction::CreateBroadcast(
      index->shape(), scalar(PrimitiveType::S32, std::numeric_limits<int32_t>::max()), {}));
  HloInstruction* at_best_value = at_best();
  HloInstruction* first_best = reduce_with(
      pick(at_best_value, index, none), scalar(PrimitiveType::S32, std::numeric_limits<int32_t>::max()), HloOpcode::kMinimum);
  HloInstruction* first_nan = reduce_with(
      pick(is_nan, index, none), scalar(PrimitiveType::S32, std::numeric_limits<int32_t>::max()), HloOpcode::kMinimum);
  HloInstruction* nan_row =
      b.Add(HloInstruction::CreateBroadcast(shape(PrimitiveType::F32, out_dims), scalar(PrimitiveType::F32, kNaN), {}));
  return b.Add(HloInstruction::CreateTuple({pick(any_nan, nan_row, best), pick(any_nan, first_nan, first_best)}));
}

}  // namespace

StatusOr<bool> ArgReductions::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module,
                              [&](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
                                if (instruction->opcode() != HloOpcode::kReduce || !instruction->shape().IsTuple())
                                  return nullptr;
                                return Rewrite(module, computation, instruction);
                              });
}

}  // namespace tpu::compiler
