#include "compiler/passes/pool_minor_through_transpose.h"

#include <vector>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

bool Trivial(const hlo::WindowDimension& w) { return w == hlo::WindowDimension{}; }

HloInstruction* Rewrite(hlo::HloComputation* computation, HloInstruction* pool) {
  const bool scatter = pool->opcode() == HloOpcode::kSelectAndScatter;
  if (!scatter && (pool->opcode() != HloOpcode::kReduceWindow || pool->operand_count() != 2)) return nullptr;
  if (scatter && pool->operand_count() != 3) return nullptr;
  if (!pool->has_window()) return nullptr;
  hlo::Window window = pool->window();
  HloInstruction* operand = pool->operand(0);
  const int rank = operand->shape().rank();
  if (rank == 0 || static_cast<int>(window.dimensions.size()) != rank || Trivial(window.dimensions.back())) {
    return nullptr;
  }
  HloBuilder b(computation);
  // The windows' shape: the reduce-window's result, select-and-scatter's source.
  HloInstruction* windows = scatter ? pool->operand(1) : nullptr;
  std::vector<int64_t> window_dims = scatter ? windows->shape().dimensions : pool->shape().dimensions;
  int64_t last = -1;
  for (int d = rank - 1; d >= 0 && last < 0; --d) {
    if (Trivial(window.dimensions[d])) last = d;
  }
  std::vector<int64_t> operand_dims = operand->shape().dimensions;
  if (last < 0) {
    // Every dimension has a window: a unit dimension without one goes last.
    operand_dims.push_back(1);
    window_dims.push_back(1);
    window.dimensions.push_back(hlo::WindowDimension{});
    last = rank;
    operand = b.Reshape(operand, operand_dims);
    if (scatter) windows = b.Reshape(windows, window_dims);
  }
  std::vector<int64_t> permutation;
  for (int64_t d = 0; d < static_cast<int64_t>(operand_dims.size()); ++d) {
    if (d != last) permutation.push_back(d);
  }
  permutation.push_back(last);
  hlo::Window moved;
  std::vector<int64_t> moved_windows;
  for (int64_t d : permutation) {
    moved.dimensions.push_back(window.dimensions[d]);
    moved_windows.push_back(window_dims[d]);
  }
  const hlo::PrimitiveType type = pool->shape().element_type;
  std::vector<HloInstruction*> operands = {b.Transpose(operand, permutation)};
  if (scatter) operands.push_back(b.Transpose(windows, permutation));
  operands.push_back(pool->operand(scatter ? 2 : 1));
  const hlo::Shape shape = HloBuilder::ShapeOf(type, scatter ? operands[0]->shape().dimensions : moved_windows);
  HloInstruction* pooled = b.Add(pool->CloneWithNewOperands(shape, operands));
  pooled->set_window(moved);
  return b.Reshape(b.Transpose(pooled, InversePermutation(permutation)), pool->shape().dimensions);
}

}  // namespace

StatusOr<bool> PoolMinorThroughTranspose::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module, [](hlo::HloComputation* computation, HloInstruction* instruction) {
    return Rewrite(computation, instruction);
  });
}

}  // namespace tpu::compiler
