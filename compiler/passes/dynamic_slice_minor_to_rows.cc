#include "compiler/passes/dynamic_slice_minor_to_rows.h"

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/attributes.h"
#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::PrimitiveType;

std::string List(const std::vector<int64_t>& values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i) text += (i == 0 ? "" : ",") + std::to_string(values[i]);
  return text + "}";
}

int64_t Product(const std::vector<int64_t>& values) {
  int64_t product = 1;
  for (int64_t v : values) product *= v;
  return product;
}

class Rewriter {
 public:
  explicit Rewriter(hlo::HloComputation* computation) : b_(computation) {}

  HloInstruction* DynamicSlice(HloInstruction* operand, const std::vector<HloInstruction*>& starts,
                               const std::vector<int64_t>& sizes) {
    std::vector<HloInstruction*> operands = {operand};
    operands.insert(operands.end(), starts.begin(), starts.end());
    auto slice = HloInstruction::Create(HloOpcode::kDynamicSlice,
                                        HloBuilder::ShapeOf(operand->shape().element_type, sizes), operands);
    slice->set_raw_attribute("dynamic_slice_sizes", List(sizes));
    return b_.Add(std::move(slice));
  }
  HloInstruction* DynamicUpdateSlice(HloInstruction* operand, HloInstruction* update,
                                     const std::vector<HloInstruction*>& starts) {
    std::vector<HloInstruction*> operands = {operand, update};
    operands.insert(operands.end(), starts.begin(), starts.end());
    return b_.Add(HloInstruction::Create(HloOpcode::kDynamicUpdateSlice, operand->shape(), operands));
  }
  HloInstruction* S32(int32_t value) {
    return b_.Add(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(value)));
  }

  // The window [..., w] at (0, ..., j) of rows whose non-minor dimensions are whole.
  HloInstruction* SliceOfRows(HloInstruction* rows, HloInstruction* j, int64_t w) {
    std::vector<int64_t> dims = rows->shape().dimensions;
    const int64_t c = dims.back();
    dims.pop_back();
    const int64_t s = Product(dims);
    HloInstruction* columns = b_.Transpose(b_.Reshape(rows, {s, c}), {1, 0});
    HloInstruction* window = DynamicSlice(columns, {j, S32(0)}, {w, s});
    dims.push_back(w);
    // One element (xs[i] of a scan over a vector) is already where the result holds it.
    return b_.Reshape(w == 1 && s == 1 ? window : b_.Transpose(window, {1, 0}), dims);
  }

  // `rows` with the window `update` written at (0, ..., j); non-minor dimensions whole.
  HloInstruction* UpdateOfRows(HloInstruction* rows, HloInstruction* update, HloInstruction* j) {
    const std::vector<int64_t>& dims = rows->shape().dimensions;
    const int64_t c = dims.back();
    const int64_t w = update->shape().dimensions.back();
    const int64_t s = Product(dims) / c;
    const PrimitiveType type = rows->shape().element_type;
    HloInstruction* flat = b_.Reshape(rows, {s, c});
    if (w == 1 && j->shape().element_type == PrimitiveType::S32) {
      const hlo::Shape matrix = HloBuilder::ShapeOf(PrimitiveType::S32, {s, c});
      HloInstruction* at = b_.Add(HloInstruction::CreateTernary(j->shape(), HloOpcode::kClamp, S32(0), j,
                                                                S32(static_cast<int32_t>(c - 1))));
      HloInstruction* lanes = b_.Add(HloInstruction::CreateIota(matrix, 1));
      HloInstruction* mask = b_.Add(HloInstruction::CreateCompare(HloBuilder::ShapeOf(PrimitiveType::PRED, {s, c}), lanes,
                                                                  b_.Add(HloInstruction::CreateBroadcast(matrix, at, {})),
                                                                  hlo::ComparisonDirection::kEq));
      HloInstruction* values =
          s == 1 ? b_.Add(HloInstruction::CreateBroadcast(HloBuilder::ShapeOf(type, {s, c}), b_.Reshape(update, {}), {}))
                 : b_.Add(HloInstruction::CreateBroadcast(HloBuilder::ShapeOf(type, {s, c}), b_.Reshape(update, {s}), {0}));
      HloInstruction* selected =
          b_.Add(HloInstruction::CreateTernary(flat->shape(), HloOpcode::kSelect, mask, values, flat));
      return b_.Reshape(selected, dims);
    }
    HloInstruction* columns = b_.Transpose(flat, {1, 0});
    HloInstruction* window = b_.Transpose(b_.Reshape(update, {s, w}), {1, 0});
    HloInstruction* written = DynamicUpdateSlice(columns, window, {j, S32(0)});
    return b_.Reshape(b_.Transpose(written, {1, 0}), dims);
  }

  HloInstruction* Rewrite(HloInstruction* instruction) {
    const bool update = instruction->opcode() == HloOpcode::kDynamicUpdateSlice;
    if (!update && instruction->opcode() != HloOpcode::kDynamicSlice) return nullptr;
    HloInstruction* operand = instruction->operand(0);
    const std::vector<int64_t>& dims = operand->shape().dimensions;
    const int rank = static_cast<int>(dims.size());
    const int64_t first = update ? 2 : 1;
    if (rank == 0 || instruction->operand_count() != first + rank) return nullptr;
    const std::vector<int64_t> sizes =
        update ? instruction->operand(1)->shape().dimensions : instruction->shape().dimensions;
    if (sizes.back() == dims.back() || Product(sizes) == 0) return nullptr;
    std::vector<HloInstruction*> starts(instruction->operands().begin() + first, instruction->operands().end());
    HloInstruction* j = starts.back();

    bool partial_rows = false;
    for (int d = 0; d + 1 < rank; ++d) partial_rows = partial_rows || sizes[d] != dims[d];
    std::vector<HloInstruction*> row_starts = starts;
    row_starts.back() = S32(0);
    std::vector<int64_t> row_sizes = sizes;
    row_sizes.back() = dims.back();
    HloInstruction* rows = partial_rows ? DynamicSlice(operand, row_starts, row_sizes) : operand;
    if (!update) return SliceOfRows(rows, j, sizes.back());
    HloInstruction* written = UpdateOfRows(rows, instruction->operand(1), j);
    return partial_rows ? DynamicUpdateSlice(operand, written, row_starts) : written;
  }

 private:
  HloBuilder b_;
};

}  // namespace

StatusOr<bool> DynamicSliceMinorToRows::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module, [](hlo::HloComputation* computation, HloInstruction* instruction) {
    return Rewriter(computation).Rewrite(instruction);
  });
}

}  // namespace tpu::compiler
