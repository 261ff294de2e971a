#include "compiler/passes/dynamic_slice_minor_to_rows.h"

#include <cstdint>
#include <map>
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
  Rewriter(hlo::HloComputation* computation, std::vector<HloInstruction*>* columns)
      : b_(computation), columns_(columns) {}

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
    if (columns != rows) columns_->push_back(columns);
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
    if (partial_rows) row_starts.back() = S32(0);
    std::vector<int64_t> row_sizes = sizes;
    row_sizes.back() = dims.back();
    HloInstruction* rows = partial_rows ? DynamicSlice(operand, row_starts, row_sizes) : operand;
    if (!update) return SliceOfRows(rows, j, sizes.back());
    HloInstruction* written = UpdateOfRows(rows, instruction->operand(1), j);
    return partial_rows ? DynamicUpdateSlice(operand, written, row_starts) : written;
  }

 private:
  HloBuilder b_;
  std::vector<HloInstruction*>* columns_;  // the transposes of sliced operands, for HoistOutOfLoop
};

// The element of the loop state that `instruction` reads through reshapes, when the body passes that
// element on unchanged (a scan's xs); -1 otherwise.
int64_t InvariantStateElement(HloInstruction* instruction, std::vector<HloInstruction*>* chain) {
  const hlo::HloComputation* body = instruction->parent();
  const HloInstruction* root = body->root_instruction();
  if (root->opcode() != HloOpcode::kTuple) return -1;
  HloInstruction* source = instruction->operand(0);
  while (source->opcode() == HloOpcode::kReshape) {
    chain->insert(chain->begin(), source);
    source = source->operand(0);
  }
  if (source->opcode() != HloOpcode::kGetTupleElement || source->operand(0)->opcode() != HloOpcode::kParameter) {
    return -1;
  }
  const int64_t k = source->tuple_index();
  return root->operand(k) == source ? k : -1;
}

// A transpose of a loop-invariant state element in the body of `loop` (xs of a scan, transposed to
// columns every step) computed once before the loop instead, from the initial value, and carried as one
// more state element that the body passes on. false when the loop's form does not allow it (an initial
// state that is not a tuple instruction, a user of the loop other than get-tuple-element).
StatusOr<bool> HoistOutOfLoop(HloInstruction* loop, HloInstruction* transpose) {
  hlo::HloComputation* body = transpose->parent();
  hlo::HloComputation* condition = loop->called_computation("condition");
  HloInstruction* init = loop->operand(0);
  if (init->opcode() != HloOpcode::kTuple || body->num_parameters() != 1 || condition->num_parameters() != 1) {
    return false;
  }
  for (const HloInstruction* user : loop->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
  }
  std::vector<HloInstruction*> chain = {transpose};
  const int64_t k = InvariantStateElement(transpose, &chain);
  if (k < 0) return false;
  // The same reshapes and transpose of the initial value, before the loop.
  hlo::HloComputation* outer = loop->parent();
  HloInstruction* value = init->operand(k);
  for (HloInstruction* step : chain) value = outer->AddInstruction(step->CloneWithNewOperands(step->shape(), {value}));
  std::vector<HloInstruction*> elements = init->operands();
  elements.push_back(value);
  HloInstruction* state = outer->AddInstruction(HloInstruction::CreateTuple(elements));
  const hlo::Shape shape = state->shape();
  TPU_RETURN_IF_ERROR(loop->ReplaceOperandWith(0, state));
  loop->set_shape(shape);
  TPU_RETURN_IF_ERROR(RemoveIfDead(outer, init));
  condition->parameter_instruction(0)->set_shape(shape);
  HloInstruction* parameter = body->parameter_instruction(0);
  parameter->set_shape(shape);
  HloInstruction* carried = body->AddInstruction(HloInstruction::CreateGetTupleElement(parameter, elements.size() - 1));
  TPU_RETURN_IF_ERROR(transpose->ReplaceAllUsesWith(carried));
  HloInstruction* root = body->root_instruction();
  std::vector<HloInstruction*> results = root->operands();
  results.push_back(carried);
  body->set_root_instruction(body->AddInstruction(HloInstruction::CreateTuple(results)));
  TPU_RETURN_IF_ERROR(RemoveIfDead(body, root));
  TPU_RETURN_IF_ERROR(RemoveIfDead(body, transpose));  // and the reshapes before it
  return true;
}

// [S..., C] seen as [S, C] and transposed to its columns [C, S] (no transpose for [1, 1]).
HloInstruction* ToColumns(HloBuilder& b, HloInstruction* x) {
  const int64_t c = x->shape().dimensions.empty() ? 1 : x->shape().dimensions.back();
  const int64_t s = Product(x->shape().dimensions) / c;
  HloInstruction* rows = b.Reshape(x, {s, c});
  return s == 1 && c == 1 ? rows : b.Transpose(rows, {1, 0});
}

// The loop's state element k when the loop only writes windows of part of its minor dimension into it
// (the stacked outputs ys of a scan over a vector: dynamic-update-slice(ys, y, i) every step): carried as
// its columns [C, S] instead, transposed once before the loop and back after it, so that each step
// writes whole rows at (j, 0) (a row update in the state buffer) instead of a select over the element.
// The body must read the element only as that update's operand and pass the update on; the condition
// must not read it; every user of the loop must be a get-tuple-element.
StatusOr<bool> CarryInColumns(HloInstruction* loop, int64_t k) {
  hlo::HloComputation* body = loop->called_computation("body");
  hlo::HloComputation* condition = loop->called_computation("condition");
  HloInstruction* init = loop->operand(0);
  HloInstruction* root = body->root_instruction();
  if (init->opcode() != HloOpcode::kTuple || root->opcode() != HloOpcode::kTuple || body->num_parameters() != 1 ||
      condition->num_parameters() != 1) {
    return false;
  }
  for (const HloInstruction* user : loop->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
  }
  for (const HloInstruction* user : condition->parameter_instruction(0)->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement || user->tuple_index() == k) return false;
  }
  HloInstruction* parameter = body->parameter_instruction(0);
  HloInstruction* element = nullptr;
  for (HloInstruction* user : parameter->users()) {
    if (user->opcode() != HloOpcode::kGetTupleElement) return false;
    if (user->tuple_index() != k) continue;
    if (element != nullptr) return false;
    element = user;
  }
  if (element == nullptr || element->users().size() != 1) return false;
  HloInstruction* update = element->users()[0];
  if (update->opcode() != HloOpcode::kDynamicUpdateSlice || update->operand(0) != element ||
      update->users().size() != 1 || update->users()[0] != root || root->operand(k) != update) {
    return false;
  }
  for (int64_t i = 0; i < root->operand_count(); ++i) {
    if (i != k && root->operand(i) == update) return false;
  }
  const std::vector<int64_t> dims = element->shape().dimensions;  // element is removed below
  const std::vector<int64_t>& sizes = update->operand(1)->shape().dimensions;
  const int rank = static_cast<int>(dims.size());
  if (rank == 0 || sizes.back() == dims.back() || Product(sizes) == 0) return false;
  for (int d = 0; d + 1 < rank; ++d) {
    if (sizes[d] != dims[d]) return false;
  }

  hlo::HloComputation* outer = loop->parent();
  HloBuilder before(outer), within(body);
  std::vector<HloInstruction*> elements = init->operands();
  elements[k] = ToColumns(before, elements[k]);
  HloInstruction* state = outer->AddInstruction(HloInstruction::CreateTuple(elements));
  const hlo::Shape shape = state->shape();
  const hlo::Shape columns = elements[k]->shape();
  TPU_RETURN_IF_ERROR(loop->ReplaceOperandWith(0, state));
  loop->set_shape(shape);
  TPU_RETURN_IF_ERROR(RemoveIfDead(outer, init));
  condition->parameter_instruction(0)->set_shape(shape);
  parameter->set_shape(shape);
  HloInstruction* carried = body->AddInstruction(HloInstruction::CreateGetTupleElement(parameter, k));
  HloInstruction* window = ToColumns(within, update->operand(1));
  HloInstruction* zero = body->AddInstruction(HloInstruction::CreateConstant(hlo::Literal::CreateR0<int32_t>(0)));
  HloInstruction* written = body->AddInstruction(HloInstruction::Create(
      HloOpcode::kDynamicUpdateSlice, columns, {carried, window, update->operand(1 + rank), zero}));
  TPU_RETURN_IF_ERROR(root->ReplaceOperandWith(k, written));
  root->set_shape(shape);
  TPU_RETURN_IF_ERROR(RemoveIfDead(body, update));
  std::vector<HloInstruction*> results(loop->users().begin(), loop->users().end());
  for (HloInstruction* result : results) {
    if (result->tuple_index() != k) continue;
    HloInstruction* column_result = outer->AddInstruction(HloInstruction::CreateGetTupleElement(loop, k));
    const int64_t s = columns.dimensions[1], c = columns.dimensions[0];
    HloInstruction* back = s == 1 && c == 1 ? column_result : before.Transpose(column_result, {1, 0});
    TPU_RETURN_IF_ERROR(result->ReplaceAllUsesWith(before.Reshape(back, dims)));
    TPU_RETURN_IF_ERROR(outer->RemoveInstruction(result));
  }
  return true;
}

// The while loops of the program's computations, each with a body and condition of its own.
std::vector<HloInstruction*> Loops(hlo::HloModule* module) {
  std::vector<HloInstruction*> loops;
  std::map<const hlo::HloComputation*, int> callers;
  for (hlo::HloComputation* computation : ProgramComputations(module)) {
    for (HloInstruction* instruction : computation->instructions()) {
      for (const hlo::HloComputation* called : instruction->called_computations()) ++callers[called];
      if (instruction->opcode() == HloOpcode::kWhile) loops.push_back(instruction);
    }
  }
  std::vector<HloInstruction*> own;
  for (HloInstruction* loop : loops) {
    if (callers[loop->called_computation("body")] == 1 && callers[loop->called_computation("condition")] == 1) {
      own.push_back(loop);
    }
  }
  return own;
}

}  // namespace

StatusOr<bool> DynamicSliceMinorToRows::Run(hlo::HloModule* module) {
  bool carried = false;
  for (HloInstruction* loop : Loops(module)) {
    const int64_t elements = static_cast<int64_t>(loop->shape().tuple_shapes.size());
    for (int64_t k = 0; k < elements; ++k) {
      TPU_ASSIGN_OR_RETURN(const bool changed, CarryInColumns(loop, k));
      carried = carried || changed;
    }
  }
  std::vector<HloInstruction*> columns;
  TPU_ASSIGN_OR_RETURN(const bool changed,
                       ReplaceEachInProgram(module, [&](hlo::HloComputation* computation, HloInstruction* instruction) {
                         return Rewriter(computation, &columns).Rewrite(instruction);
                       }));
  if (!changed) return carried;
  std::map<const hlo::HloComputation*, HloInstruction*> loop_of_body;
  for (HloInstruction* loop : Loops(module)) loop_of_body[loop->called_computation("body")] = loop;
  for (HloInstruction* transpose : columns) {
    auto loop = loop_of_body.find(transpose->parent());
    if (loop != loop_of_body.end()) TPU_RETURN_IF_ERROR(HoistOutOfLoop(loop->second, transpose).status());
  }
  return true;
}

}  // namespace tpu::compiler
