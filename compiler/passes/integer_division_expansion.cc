#include "compiler/passes/integer_division_expansion.h"

#include <cstdint>
#include <memory>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::ComparisonDirection;
using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;
constexpr PrimitiveType U32 = PrimitiveType::U32;
constexpr PrimitiveType S32 = PrimitiveType::S32;

// The loop state: (i: s32[], q, r, n, d, shift: u32[dims]).
enum Element { kI, kQ, kR, kN, kD, kShift, kElements };

hlo::Shape StateShape(const std::vector<int64_t>& dims) {
  const hlo::Shape words = hlo::Shape::Make(U32, dims);
  return hlo::Shape::MakeTuple({hlo::Shape::Make(S32, {}), words, words, words, words, words});
}

// i < 32.
HloComputation* Condition(hlo::HloModule* module, const std::vector<int64_t>& dims) {
  auto computation = std::make_unique<HloComputation>(UniqueComputationName(*module, "long_division_condition"));
  HloComputation* c = computation.get();
  HloInstruction* state = c->AddInstruction(HloInstruction::CreateParameter(0, StateShape(dims), "state"));
  HloInstruction* i = c->AddInstruction(HloInstruction::CreateGetTupleElement(state, kI));
  HloInstruction* limit = c->AddInstruction(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(32)));
  c->set_root_instruction(c->AddInstruction(
      HloInstruction::CreateCompare(hlo::Shape::Make(PrimitiveType::PRED, {}), i, limit, ComparisonDirection::kLt)));
  return module->AddEmbeddedComputation(std::move(computation));
}

// One step of the long division.
HloComputation* Body(hlo::HloModule* module, const std::vector<int64_t>& dims) {
  auto computation = std::make_unique<HloComputation>(UniqueComputationName(*module, "long_division_step"));
  HloComputation* c = computation.get();
  HloInstruction* state = c->AddInstruction(HloInstruction::CreateParameter(0, StateShape(dims), "state"));
  HloInstruction* element[kElements];
  for (int e = 0; e < kElements; ++e) element[e] = c->AddInstruction(HloInstruction::CreateGetTupleElement(state, e));
  ElementwiseBuilder f(c, dims);
  HloInstruction* one = f.Constant<uint32_t>(1);
  HloInstruction* bit = f.Binary(HloOpcode::kAnd, f.Binary(HloOpcode::kShiftRightLogical, element[kN], element[kShift]), one);
  HloInstruction* r = f.Binary(HloOpcode::kOr, f.Binary(HloOpcode::kShiftLeft, element[kR], one), bit);
  HloInstruction* taken = f.Compare(r, element[kD], ComparisonDirection::kGe);
  r = f.Select(taken, f.Sub(r, element[kD]), r);
  HloInstruction* q = f.Binary(HloOpcode::kOr, f.Binary(HloOpcode::kShiftLeft, element[kQ], one),
                               f.builder().Convert(taken, U32));
  HloInstruction* shift = f.Sub(element[kShift], one);
  HloInstruction* i = c->AddInstruction(HloInstruction::CreateBinary(
      hlo::Shape::Make(S32, {}), HloOpcode::kAdd, element[kI],
      c->AddInstruction(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(1)))));
  c->set_root_instruction(c->AddInstruction(HloInstruction::CreateTuple({i, q, r, element[kN], element[kD], shift})));
  return module->AddEmbeddedComputation(std::move(computation));
}

HloInstruction* Expand(hlo::HloModule* module, HloComputation* computation, HloInstruction* division) {
  const std::vector<int64_t>& dims = division->shape().dimensions;
  const PrimitiveType type = division->shape().element_type;
  ElementwiseBuilder f(computation, dims);
  HloInstruction* x = division->operand(0);
  HloInstruction* y = division->operand(1);
  // Magnitudes as u32 words.
  HloInstruction* n = type == U32 ? x : f.Bitcast(f.Unary(HloOpcode::kAbs, x), U32);
  HloInstruction* d = type == U32 ? y : f.Bitcast(f.Unary(HloOpcode::kAbs, y), U32);
  HloInstruction* zero_words = f.Constant<uint32_t>(0);
  HloInstruction* init = f.builder().Add(HloInstruction::CreateTuple(
      {f.builder().Add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(0))), zero_words, zero_words, n, d,
       f.Constant<uint32_t>(31)}));
  HloInstruction* loop = f.builder().Add(HloInstruction::Create(HloOpcode::kWhile, StateShape(dims), {init}));
  loop->AddCalledComputation("condition", Condition(module, dims));
  loop->AddCalledComputation("body", Body(module, dims));
  const bool quotient = division->opcode() == HloOpcode::kDivide;
  HloInstruction* magnitude = f.builder().Add(HloInstruction::CreateGetTupleElement(loop, quotient ? kQ : kR));
  HloInstruction* result = magnitude;
  if (type == S32) {
    // The quotient is negative when the signs differ, the remainder when the dividend is negative.
    HloInstruction* zero = f.Constant<int32_t>(0);
    HloInstruction* value = f.Bitcast(magnitude, S32);
    HloInstruction* x_negative = f.Compare(x, zero, ComparisonDirection::kLt);
    HloInstruction* negative =
        quotient ? f.Compare(x_negative, f.Compare(y, zero, ComparisonDirection::kLt), ComparisonDirection::kNe)
                 : x_negative;
    result = f.Select(negative, f.Sub(zero, value), value);
  }
  // Division by zero: -1 (all ones) and x.
  HloInstruction* by_zero = f.Compare(y, type == U32 ? f.Constant<uint32_t>(0) : f.Constant<int32_t>(0),
                                      ComparisonDirection::kEq);
  HloInstruction* if_zero = quotient ? (type == U32 ? f.Constant<uint32_t>(UINT32_MAX) : f.Constant<int32_t>(-1)) : x;
  return f.Select(by_zero, if_zero, result);
}

}  // namespace

StatusOr<bool> IntegerDivisionExpansion::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module, [module](HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
    const HloOpcode opcode = instruction->opcode();
    const PrimitiveType type = instruction->shape().element_type;
    if ((opcode != HloOpcode::kDivide && opcode != HloOpcode::kRemainder) || !instruction->shape().IsArray() ||
        (type != S32 && type != U32)) {
      return nullptr;
    }
    return Expand(module, computation, instruction);
  });
}

}  // namespace tpu::compiler
