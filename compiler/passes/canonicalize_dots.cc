#include "compiler/passes/canonicalize_dots.h"

#include <utility>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsMatrixTranspose(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kTranspose && instruction.shape().rank() == 2 &&
         instruction.dimensions() == std::vector<int64_t>{1, 0};
}

// Returns whether the dot changed.
StatusOr<bool> CanonicalizeDot(HloComputation* computation, HloInstruction* dot) {
  if (dot->operand_count() != 2 || dot->operand(0)->shape().rank() != 2 || dot->operand(1)->shape().rank() != 2) {
    return false;
  }
  hlo::DotDimensionNumbers dnums = dot->dot_dimension_numbers();
  if (!dnums.lhs_batch_dimensions.empty() || dnums.lhs_contracting_dimensions.size() != 1 ||
      dnums.rhs_contracting_dimensions.size() != 1) {
    return false;
  }
  bool changed = false;
  for (int side = 0; side < 2; ++side) {
    HloInstruction* operand = dot->operand(side);
    if (!IsMatrixTranspose(*operand)) continue;
    std::vector<int64_t>& contracting = side == 0 ? dnums.lhs_contracting_dimensions : dnums.rhs_contracting_dimensions;
    contracting[0] = 1 - contracting[0];
    TPU_RETURN_IF_ERROR(dot->ReplaceOperandWith(side, operand->operand(0)));
    changed = true;
  }
  if (dnums.lhs_contracting_dimensions[0] == 0) {
    const HloInstruction* lhs = dot->operand(0);
    hlo::Shape shape = lhs->shape();
    std::swap(shape.dimensions[0], shape.dimensions[1]);
    shape.minor_to_major.clear();
    shape.layout_tiling.clear();
    HloInstruction* transposed =
        computation->AddInstruction(HloInstruction::CreateTranspose(shape, dot->operand(0), {1, 0}));
    TPU_RETURN_IF_ERROR(dot->ReplaceOperandWith(0, transposed));
    dnums.lhs_contracting_dimensions[0] = 1;
    changed = true;
  }
  dot->set_dot_dimension_numbers(dnums);
  return changed;
}

}  // namespace

StatusOr<bool> CanonicalizeDots::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : ProgramComputations(module)) {
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (instruction->opcode() != HloOpcode::kDot) continue;
      TPU_ASSIGN_OR_RETURN(bool dot_changed, CanonicalizeDot(computation, instruction));
      changed |= dot_changed;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
