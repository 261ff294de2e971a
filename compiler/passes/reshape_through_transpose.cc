#include "compiler/passes/reshape_through_transpose.h"

#include <utility>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

// Rows and columns of the device layout of a shape.
std::pair<int64_t, int64_t> RowsAndColumns(const Shape& shape) {
  const int rank = shape.rank();
  int64_t rows = 1;
  for (int d = 0; d + 1 < rank; ++d) rows *= shape.dimensions[d];
  return {rows, rank == 0 ? 1 : shape.dimensions.back()};
}

// Returns the replacement of `reshape` or nullptr.
HloInstruction* ReshapeWithTranspose(HloComputation* computation, HloInstruction* reshape) {
  const Shape& in = reshape->operand(0)->shape();
  const Shape& out = reshape->shape();
  if (!in.IsArray() || !out.IsArray()) return nullptr;
  const auto [in_rows, in_cols] = RowsAndColumns(in);
  const auto [out_rows, out_cols] = RowsAndColumns(out);
  const int64_t n = in_rows * in_cols;
  if (n <= 1 || !((in_cols == 1 && out_rows == 1) || (in_rows == 1 && out_cols == 1))) return nullptr;
  const hlo::PrimitiveType type = out.element_type;
  const std::vector<int64_t> from = in_cols == 1 ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{1, n};
  const std::vector<int64_t> to = {from[1], from[0]};
  HloInstruction* matrix =
      computation->AddInstruction(HloInstruction::CreateReshape(Shape::Make(type, from), reshape->operand(0)));
  HloInstruction* transposed =
      computation->AddInstruction(HloInstruction::CreateTranspose(Shape::Make(type, to), matrix, {1, 0}));
  Shape result = out;
  result.minor_to_major.clear();
  result.layout_tiling.clear();
  return computation->AddInstruction(HloInstruction::CreateReshape(result, transposed));
}

}  // namespace

StatusOr<bool> ReshapeThroughTranspose::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module, [](HloComputation* entry, HloInstruction* instruction) -> HloInstruction* {
    const bool reshape = instruction->opcode() == HloOpcode::kReshape || instruction->opcode() == HloOpcode::kBitcast;
    if (!reshape || instruction->operand(0)->opcode() == HloOpcode::kConstant) return nullptr;
    return ReshapeWithTranspose(entry, instruction);
  });
}

}  // namespace tpu::compiler
