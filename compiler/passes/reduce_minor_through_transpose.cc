#include "compiler/passes/reduce_minor_through_transpose.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "compiler/passes/codegen_legalization.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

bool InitIsIdentity(const HloInstruction& reduce) {
  const HloInstruction& init = *reduce.operand(1);
  const hlo::PrimitiveType type = init.shape().element_type;
  const HloOpcode op = ReductionOpcode(reduce);
  if (op == HloOpcode::kUnknown || init.opcode() != HloOpcode::kConstant || !init.has_literal() ||
      init.shape().rank() != 0 ||
      (type != hlo::PrimitiveType::F32 && type != hlo::PrimitiveType::S32 && type != hlo::PrimitiveType::S64)) {
    return false;
  }
  return ReductionInit{op, type != hlo::PrimitiveType::F32, init.literal().GetAsDouble(0)}.IsIdentity();
}

// Returns the replacement of `reduce` or nullptr.
HloInstruction* ReduceThroughTranspose(HloComputation* computation, HloInstruction* reduce) {
  if (reduce->operand_count() != 2 || reduce->shape().IsTuple() || !InitIsIdentity(*reduce)) return nullptr;
  HloInstruction* operand = reduce->operand(0);
  HloInstruction* init = reduce->operand(1);
  const hlo::PrimitiveType type = reduce->shape().element_type;
  const int rank = operand->shape().rank();
  std::vector<int64_t> dims = reduce->dimensions();
  std::sort(dims.begin(), dims.end());
  if (rank < 1 || rank > 2 || dims.empty() || dims.back() != rank - 1) return nullptr;
  const int64_t C = operand->shape().dimensions.back();
  if (C <= 1) return nullptr;
  HloComputation* reducer = reduce->to_apply();
  auto add = [&](std::unique_ptr<HloInstruction> instruction) { return computation->AddInstruction(std::move(instruction)); };
  // row [C] -> scalar []
  auto reduce_row = [&](HloInstruction* row) {
    HloInstruction* matrix = add(HloInstruction::CreateReshape(Shape::Make(type, {1, C}), row));
    HloInstruction* column = add(HloInstruction::CreateTranspose(Shape::Make(type, {C, 1}), matrix, {1, 0}));
    HloInstruction* one = add(HloInstruction::CreateReduce(Shape::Make(type, {1}), column, init, {0}, reducer));
    return add(HloInstruction::CreateReshape(Shape::Make(type, {}), one));
  };
  if (rank == 1) return reduce_row(operand);
  const int64_t R = operand->shape().dimensions[0];
  if (dims.size() == 1) {
    HloInstruction* transposed = add(HloInstruction::CreateTranspose(Shape::Make(type, {C, R}), operand, {1, 0}));
    return add(HloInstruction::CreateReduce(Shape::Make(type, {R}), transposed, init, {0}, reducer));
  }
  HloInstruction* row = add(HloInstruction::CreateReduce(Shape::Make(type, {C}), operand, init, {0}, reducer));
  return reduce_row(row);
}

}  // namespace

StatusOr<bool> ReduceMinorThroughTranspose::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module, [](HloComputation* entry, HloInstruction* instruction) -> HloInstruction* {
    return instruction->opcode() == HloOpcode::kReduce ? ReduceThroughTranspose(entry, instruction) : nullptr;
  });
}

}  // namespace tpu::compiler
