#include "compiler/passes/s64_range_check.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
using Wide = __int128;

constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax64 = std::numeric_limits<int64_t>::max();

struct Interval {
  int64_t lo = kMin64, hi = kMax64;
  bool Contains(const Interval& other) const { return lo <= other.lo && other.hi <= hi; }
  Interval Union(const Interval& other) const { return {std::min(lo, other.lo), std::max(hi, other.hi)}; }
  std::string ToString() const { return "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]"; }
};

Interval Saturated(Wide lo, Wide hi) {
  auto clip = [](Wide v) { return static_cast<int64_t>(std::clamp<Wide>(v, kMin64, kMax64)); };
  return {clip(lo), clip(hi)};
}

// Bounds of an array (`range`) or of each element of a tuple.
struct Bounds {
  Interval range;
  std::vector<Bounds> elements;
};

Interval TypeRange(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::PRED: return {0, 1};
    case PrimitiveType::S8: return {INT8_MIN, INT8_MAX};
    case PrimitiveType::S16: return {INT16_MIN, INT16_MAX};
    case PrimitiveType::S32: return {INT32_MIN, INT32_MAX};
    case PrimitiveType::U8: return {0, UINT8_MAX};
    case PrimitiveType::U16: return {0, UINT16_MAX};
    case PrimitiveType::U32: return {0, UINT32_MAX};
    case PrimitiveType::U64: return {0, kMax64};
    default: return {};
  }
}

Bounds TypeBounds(const hlo::Shape& shape) {
  Bounds bounds;
  if (shape.IsTuple()) {
    for (const hlo::Shape& element : shape.tuple_shapes) bounds.elements.push_back(TypeBounds(element));
  } else {
    bounds.range = TypeRange(shape.element_type);
  }
  return bounds;
}

bool Contains(const Bounds& outer, const Bounds& inner) {
  if (outer.elements.size() != inner.elements.size()) return false;
  if (outer.elements.empty()) return outer.range.Contains(inner.range);
  for (size_t i = 0; i < outer.elements.size(); ++i) {
    if (!Contains(outer.elements[i], inner.elements[i])) return false;
  }
  return true;
}

Bounds Union(const Bounds& a, const Bounds& b) {
  Bounds bounds{a.range.Union(b.range), {}};
  for (size_t i = 0; i < a.elements.size() && i < b.elements.size(); ++i) {
    bounds.elements.push_back(Union(a.elements[i], b.elements[i]));
  }
  return bounds;
}

// The scalar computation's root is `op`(parameter 0, parameter 1).
bool IsReducer(const HloComputation* computation, HloOpcode op) {
  if (computation == nullptr || computation->root_instruction() == nullptr) return false;
  const HloInstruction& root = *computation->root_instruction();
  return root.opcode() == op && root.operand_count() == 2 && root.operand(0)->opcode() == HloOpcode::kParameter &&
         root.operand(1)->opcode() == HloOpcode::kParameter;
}

class RangeAnalysis {
 public:
  // Bounds `computation`'s instructions given its parameters' bounds; the bounds of its root.
  StatusOr<Bounds> Run(const HloComputation& computation, const std::vector<Bounds>& parameters) {
    std::map<const HloInstruction*, Bounds> bounds;
    for (const HloInstruction* instruction : computation.MakeInstructionPostOrder()) {
      std::vector<const Bounds*> operands;
      for (const HloInstruction* operand : instruction->operands()) operands.push_back(&bounds.at(operand));
      Bounds result;
      if (instruction->opcode() == HloOpcode::kParameter) {
        result = parameters.at(instruction->parameter_number());
      } else {
        TPU_ASSIGN_OR_RETURN(result, Of(*instruction, operands));
      }
      if (instruction->shape().IsArray() && instruction->shape().element_type == PrimitiveType::S64 &&
          !TypeRange(PrimitiveType::S32).Contains(result.range)) {
        constexpr const char* kWhy =
            ", outside the s32 range in which the device holds s64 values (it would wrap them at 32 bits)";
        return Unimplemented("s64 " + std::string(hlo::HloOpcodeString(instruction->opcode())) + " " +
                             instruction->name() + " may produce values in " + result.range.ToString() + kWhy +
                             "; compute it in s32 or f32" + hlo::DefinedAt(*instruction));
      }
      bounds[instruction] = std::move(result);
    }
    return bounds.at(computation.root_instruction());
  }

 private:
  StatusOr<Bounds> Of(const HloInstruction& instruction, const std::vector<const Bounds*>& operands) {
    const hlo::Shape& shape = instruction.shape();
    const PrimitiveType type = shape.IsArray() ? shape.element_type : PrimitiveType::TUPLE;
    auto array = [&](Interval range) {
      // A value never leaves its type: clip to it (a wider bound only means "any value of the type").
      const Interval type_range = TypeRange(type);
      if (range.lo < type_range.lo || range.hi > type_range.hi) {
        if (type != PrimitiveType::S64) range = type_range;
      }
      return Bounds{range, {}};
    };
    auto operand = [&](int64_t i) { return operands.at(i)->range; };
    switch (instruction.opcode()) {
      case HloOpcode::kConstant: {
        if (!shape.IsArray() || !instruction.has_literal() || instruction.literal().element_count() == 0 ||
            !hlo::IsIntegralType(type)) {
          return TypeBounds(shape);
        }
        const hlo::Literal& literal = instruction.literal();
        Interval range{kMax64, kMin64};
        for (int64_t i = 0; i < literal.element_count(); ++i) {
          const int64_t v = type == PrimitiveType::S64 ? literal.Get<int64_t>(i)
                                                       : static_cast<int64_t>(literal.GetAsDouble(i));
          range = {std::min(range.lo, v), std::max(range.hi, v)};
        }
        return Bounds{range, {}};
      }
      case HloOpcode::kIota:
        return array({0, std::max<int64_t>(shape.dimensions.at(instruction.iota_dimension()) - 1, 0)});
      case HloOpcode::kConvert: {
        const PrimitiveType from = instruction.operand(0)->shape().element_type;
        if (from == PrimitiveType::PRED) return array({0, 1});
        if (!hlo::IsIntegralType(from)) return array(TypeRange(type));
        return array(operand(0));
      }
      case HloOpcode::kBroadcast: case HloOpcode::kReshape: case HloOpcode::kTranspose: case HloOpcode::kSlice:
      case HloOpcode::kCopy: case HloOpcode::kReverse: case HloOpcode::kBitcast: case HloOpcode::kDynamicSlice:
      case HloOpcode::kGather:
        return array(operand(0));
      case HloOpcode::kPad: case HloOpcode::kDynamicUpdateSlice:
        return array(operand(0).Union(operand(1)));
      case HloOpcode::kSelect:
        return Union(*operands.at(1), *operands.at(2));
      case HloOpcode::kConcatenate: {
        Interval range = operand(0);
        for (const Bounds* b : operands) range = range.Union(b->range);
        return array(range);
      }
      case HloOpcode::kTuple: {
        Bounds bounds;
        for (const Bounds* b : operands) bounds.elements.push_back(*b);
        return bounds;
      }
      case HloOpcode::kGetTupleElement:
        return operands.at(0)->elements.at(instruction.tuple_index());
      case HloOpcode::kAdd:
        return array(Saturated(Wide(operand(0).lo) + operand(1).lo, Wide(operand(0).hi) + operand(1).hi));
      case HloOpcode::kSubtract:
        return array(Saturated(Wide(operand(0).lo) - operand(1).hi, Wide(operand(0).hi) - operand(1).lo));
      case HloOpcode::kMultiply: {
        const Interval a = operand(0), b = operand(1);
        const Wide p[] = {Wide(a.lo) * b.lo, Wide(a.lo) * b.hi, Wide(a.hi) * b.lo, Wide(a.hi) * b.hi};
        return array(Saturated(*std::min_element(p, p + 4), *std::max_element(p, p + 4)));
      }
      case HloOpcode::kNegate:
        return array(Saturated(-Wide(operand(0).hi), -Wide(operand(0).lo)));
      case HloOpcode::kAbs: {
        const Interval a = operand(0);
        const Wide top = std::max(-Wide(a.lo), Wide(a.hi));
        return array(Saturated(a.lo >= 0 ? a.lo : (a.hi <= 0 ? -Wide(a.hi) : 0), top));
      }
      case HloOpcode::kMaximum:
        return array({std::max(operand(0).lo, operand(1).lo), std::max(operand(0).hi, operand(1).hi)});
      case HloOpcode::kMinimum:
        return array({std::min(operand(0).lo, operand(1).lo), std::min(operand(0).hi, operand(1).hi)});
      case HloOpcode::kClamp: {
        const Interval low = operand(0), x = operand(1), high = operand(2);
        const Interval raised{std::max(low.lo, x.lo), std::max(low.hi, x.hi)};
        return array({std::min(raised.lo, high.lo), std::min(raised.hi, high.hi)});
      }
      case HloOpcode::kAnd:
        if (operand(0).lo >= 0 || operand(1).lo >= 0) {
          const int64_t a = operand(0).lo >= 0 ? operand(0).hi : kMax64, b = operand(1).lo >= 0 ? operand(1).hi : kMax64;
          return array({0, std::min(a, b)});
        }
        return array(TypeRange(type));
      case HloOpcode::kShiftRightArithmetic: case HloOpcode::kShiftRightLogical:
        if (operand(0).lo >= 0) return array({0, operand(0).hi});
        return array(TypeRange(type));
      case HloOpcode::kDivide: case HloOpcode::kRemainder: {
        if (!hlo::IsIntegralType(type)) return TypeBounds(shape);
        const Interval a = operand(0);
        const int64_t top = static_cast<int64_t>(std::min<Wide>(std::max(-Wide(a.lo), Wide(a.hi)), kMax64));
        return array({a.lo >= 0 ? 0 : -top, a.hi <= 0 ? 0 : top});
      }
      case HloOpcode::kReduce:
        return Reduce(instruction, operands);
      case HloOpcode::kSort: {
        if (operands.size() == 1) return *operands[0];
        Bounds bounds;
        for (const Bounds* b : operands) bounds.elements.push_back(*b);
        return bounds;
      }
      case HloOpcode::kWhile:
        return While(instruction, *operands.at(0));
      case HloOpcode::kConditional: {
        std::vector<HloComputation*> branches = instruction.called_computations();
        Bounds result;
        for (size_t k = 0; k < branches.size(); ++k) {
          TPU_ASSIGN_OR_RETURN(Bounds branch, Run(*branches[k], {*operands.at(k + 1)}));
          result = k == 0 ? branch : Union(result, branch);
        }
        return result;
      }
      default:
        return TypeBounds(shape);
    }
  }

  StatusOr<Bounds> Reduce(const HloInstruction& reduce, const std::vector<const Bounds*>& operands) {
    if (reduce.operand_count() != 2 || !reduce.shape().IsArray()) return TypeBounds(reduce.shape());
    const Interval x = operands[0]->range, init = operands[1]->range;
    const int64_t result_elements = std::max<int64_t>(reduce.shape().ElementCount(), 1);
    const Wide count = reduce.operand(0)->shape().ElementCount() / result_elements;
    const Interval type_range = TypeRange(reduce.shape().element_type);
    if (IsReducer(reduce.to_apply(), HloOpcode::kAdd)) {
      const Interval sum = Saturated(Wide(init.lo) + count * x.lo, Wide(init.hi) + count * x.hi);
      return Bounds{reduce.shape().element_type == PrimitiveType::S64 || type_range.Contains(sum) ? sum : type_range, {}};
    }
    if (IsReducer(reduce.to_apply(), HloOpcode::kMaximum) || IsReducer(reduce.to_apply(), HloOpcode::kMinimum)) {
      return Bounds{x.Union(init), {}};
    }
    return TypeBounds(reduce.shape());
  }

  // The state starts as the initial value; an element the body takes outside its bounds is widened to its
  // type's range (at most once), then the body is bounded again.
  StatusOr<Bounds> While(const HloInstruction& loop, const Bounds& init) {
    const HloComputation* body = loop.called_computation("body");
    const HloComputation* condition = loop.called_computation("condition");
    Bounds state = init;
    for (int round = 0; round < 3; ++round) {
      TPU_ASSIGN_OR_RETURN(Bounds next, Run(*body, {state}));
      if (Contains(state, next)) break;
      state = Widened(state, next, loop.shape());
    }
    TPU_RETURN_IF_ERROR(Run(*condition, {state}).status());
    return state;
  }

  static Bounds Widened(const Bounds& state, const Bounds& next, const hlo::Shape& shape) {
    if (!shape.IsTuple()) return Contains(state, next) ? state : TypeBounds(shape);
    Bounds widened;
    for (size_t i = 0; i < state.elements.size(); ++i) {
      widened.elements.push_back(Widened(state.elements[i], next.elements.at(i), shape.tuple_shapes[i]));
    }
    return widened;
  }
};

}  // namespace

StatusOr<bool> S64RangeCheck::Run(hlo::HloModule* module) {
  const HloComputation* entry = module->entry_computation();
  std::vector<Bounds> parameters;
  std::function<Bounds(const hlo::Shape&)> entered = [&](const hlo::Shape& shape) {
    if (!shape.IsTuple()) {
      return Bounds{shape.element_type == PrimitiveType::S64 ? TypeRange(PrimitiveType::S32) : TypeRange(shape.element_type), {}};
    }
    Bounds bounds;
    for (const hlo::Shape& element : shape.tuple_shapes) bounds.elements.push_back(entered(element));
    return bounds;
  };
  for (const HloInstruction* parameter : entry->parameter_instructions()) parameters.push_back(entered(parameter->shape()));
  RangeAnalysis analysis;
  TPU_RETURN_IF_ERROR(analysis.Run(*entry, parameters).status());
  return false;
}

}  // namespace tpu::compiler
