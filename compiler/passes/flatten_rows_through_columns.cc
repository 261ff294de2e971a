#include "compiler/passes/flatten_rows_through_columns.h"

#include <memory>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;

// Returns the replacement of `reshape` or nullptr.
HloInstruction* FlattenThroughColumns(HloComputation* computation, HloInstruction* reshape) {
  const Shape& in = reshape->operand(0)->shape();
  const Shape& out = reshape->shape();
  if (!in.IsArray() || in.rank() != 2 || out.rank() != 1) return nullptr;
  const int64_t rows = in.dimensions[0], cols = in.dimensions[1];
  if (rows <= 1 || rows > 64 || cols <= 1 || cols % 128 == 0) return nullptr;
  const hlo::PrimitiveType type = in.element_type;
  auto add = [&](std::unique_ptr<HloInstruction> instruction) { return computation->AddInstruction(std::move(instruction)); };
  std::vector<HloInstruction*> columns;
  for (int64_t r = 0; r < rows; ++r) {
    auto row = HloInstruction::Create(HloOpcode::kSlice, Shape::Make(type, {1, cols}), {reshape->operand(0)});
    row->set_slice({r, 0}, {r + 1, cols}, {1, 1});
    columns.push_back(add(HloInstruction::CreateTranspose(Shape::Make(type, {cols, 1}), add(std::move(row)), {1, 0})));
  }
  auto stacked = HloInstruction::Create(HloOpcode::kConcatenate, Shape::Make(type, {rows * cols, 1}), columns);
  stacked->set_dimensions({0});
  return add(HloInstruction::CreateReshape(Shape::Make(type, {rows * cols}), add(std::move(stacked))));
}

}  // namespace

StatusOr<bool> FlattenRowsThroughColumns::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module, [](HloComputation* entry, HloInstruction* instruction) -> HloInstruction* {
    if (instruction->opcode() != HloOpcode::kReshape || instruction->operand(0)->opcode() == HloOpcode::kConstant) {
      return nullptr;
    }
    return FlattenThroughColumns(entry, instruction);
  });
}

}  // namespace tpu::compiler
