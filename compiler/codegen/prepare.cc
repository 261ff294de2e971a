#include "compiler/codegen/prepare.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "compiler/hlo/hlo_opcode.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/codegen_legalization.h"
#include "compiler/passes/convolution_lowering.h"
#include "compiler/passes/topk_rewrite.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// Replaces `call` by a copy of the body of its computation.
Status InlineCall(HloComputation* caller, HloInstruction* call) {
  // call: to_apply=; fusion: calls= (the only called computation).
  const HloComputation* callee = call->to_apply();
  if (callee == nullptr && call->opcode() == HloOpcode::kFusion && call->called_computations().size() == 1) {
    callee = call->called_computations()[0];
  }
  if (callee == nullptr || callee->root_instruction() == nullptr) {
    return InvalidArgument("call " + call->name() + " has no computation to inline");
  }
  std::map<const HloInstruction*, HloInstruction*> clones;
  for (const HloInstruction* instruction : callee->MakeInstructionPostOrder()) {
    if (instruction->opcode() == HloOpcode::kParameter) {
      const int64_t number = instruction->parameter_number();
      if (number < 0 || number >= call->operand_count()) {
        return InvalidArgument("call " + call->name() + " passes no operand for parameter " + instruction->name());
      }
      clones[instruction] = call->operand(number);
      continue;
    }
    std::vector<HloInstruction*> operands;
    for (const HloInstruction* operand : instruction->operands()) operands.push_back(clones.at(operand));
    std::unique_ptr<HloInstruction> clone = instruction->CloneWithNewOperands(instruction->shape(), operands);
    clone->set_name("");
    clones[instruction] = caller->AddInstruction(std::move(clone));
  }
  HloInstruction* result = clones.at(callee->root_instruction());
  if (call == caller->root_instruction()) caller->set_root_instruction(result);
  return caller->ReplaceInstruction(call, result);
}

// Values codegen handles better than as a stored constant: scalar f32 constants (immediates) and
// their broadcasts (splats), broadcasts of rows along the minor dimension, and instructions that produce
// no array.
bool KeepAsIs(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
      return true;
    case HloOpcode::kBroadcast: {
      const HloInstruction& source = *instruction.operand(0);
      if (source.opcode() == HloOpcode::kConstant && source.shape().rank() == 0 &&
          source.shape().element_type == hlo::PrimitiveType::F32) {
        return true;
      }
      // A row along the minor dimension (batch-norm scales, biases): elementwise users read the row
      // (SRC2_BCAST), so storing the broadcast would only cost HBM and load time.
      const int rank = instruction.shape().rank();
      return source.shape().rank() == 1 && rank >= 2 && instruction.dimensions() == std::vector<int64_t>{rank - 1};
    }
    default:
      return instruction.shape().IsTuple();
  }
}

// Evaluates an instruction whose operands are all constants.
StatusOr<hlo::Literal> Evaluate(const HloInstruction& instruction) {
  hlo::HloModule scratch("fold");
  auto computation = std::make_unique<HloComputation>("fold_" + instruction.name());
  std::vector<HloInstruction*> operands;
  for (const HloInstruction* operand : instruction.operands()) {
    operands.push_back(computation->AddInstruction(HloInstruction::CreateConstant(operand->literal())));
  }
  HloInstruction* root = computation->AddInstruction(instruction.CloneWithNewOperands(instruction.shape(), operands));
  computation->set_root_instruction(root);
  HloComputation* added = scratch.AddComputation(std::move(computation), /*is_entry=*/true);
  return hlo::InterpretComputation(*added, {});
}

bool IsMatrixTranspose(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kTranspose && instruction.shape().rank() == 2 &&
         instruction.dimensions() == std::vector<int64_t>{1, 0};
}

// Rank-2 dots read transposed operands directly: dot(x, transpose(y)) contracts the other dimension of
// y (and likewise for the lhs). A lhs that still contracts its dimension 0 is then transposed
// explicitly, since the MXU streams lhs rows: dot(x, y) = dot(transpose(x), y) with lhs dimension 1.
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

hlo::Shape ArrayShape(hlo::PrimitiveType type, std::vector<int64_t> dims) {
  return hlo::Shape::Make(type, std::move(dims));
}

// The identity of the reduction (0 for add, -inf for max), so that applying the init value twice
// changes nothing.
bool InitIsIdentity(const HloInstruction& reduce) {
  const HloInstruction& init = *reduce.operand(1);
  const hlo::PrimitiveType type = init.shape().element_type;
  const HloOpcode op = ReductionOpcode(reduce);
  if (op == HloOpcode::kUnknown || init.opcode() != HloOpcode::kConstant || !init.has_literal() ||
      init.shape().rank() != 0 || (type != hlo::PrimitiveType::F32 && type != hlo::PrimitiveType::S32)) {
    return false;
  }
  return ReductionInit{op, type == hlo::PrimitiveType::S32, init.literal().GetAsDouble(0)}.IsIdentity();
}

// Reductions over the minor dimension become reductions over dimension 0 of the transpose, which the
// VPU does: reduce(x[R,C], {1}) = reduce(transpose(x), {0}); reduce(x[R,C], {0,1}) reduces dimension 0
// first, then the [C] row the same way; reduce(x[C], {0}) goes through [1,C]. Only for a minor
// dimension of more than one element and an init value that is the identity. Returns the replacement
// or nullptr.
StatusOr<HloInstruction*> ReduceOverMinorThroughTranspose(HloComputation* computation, HloInstruction* reduce) {
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
  hlo::HloComputation* reducer = reduce->to_apply();
  auto add = [&](std::unique_ptr<HloInstruction> instruction) { return computation->AddInstruction(std::move(instruction)); };
  // row [C] -> scalar []
  auto reduce_row = [&](HloInstruction* row) {
    HloInstruction* matrix = add(HloInstruction::CreateReshape(ArrayShape(type, {1, C}), row));
    HloInstruction* column = add(HloInstruction::CreateTranspose(ArrayShape(type, {C, 1}), matrix, {1, 0}));
    HloInstruction* one = add(HloInstruction::CreateReduce(ArrayShape(type, {1}), column, init, {0}, reducer));
    return add(HloInstruction::CreateReshape(ArrayShape(type, {}), one));
  };
  if (rank == 1) return reduce_row(operand);
  const int64_t R = operand->shape().dimensions[0];
  if (dims.size() == 1) {
    HloInstruction* transposed = add(HloInstruction::CreateTranspose(ArrayShape(type, {C, R}), operand, {1, 0}));
    return add(HloInstruction::CreateReduce(ArrayShape(type, {R}), transposed, init, {0}, reducer));
  }
  HloInstruction* row = add(HloInstruction::CreateReduce(ArrayShape(type, {C}), operand, init, {0}, reducer));
  return reduce_row(row);
}

// Rows and columns of the device layout (compiler/codegen/program.h) of a shape.
std::pair<int64_t, int64_t> RowsAndColumns(const hlo::Shape& shape) {
  const int rank = shape.rank();
  int64_t rows = 1;
  for (int d = 0; d + 1 < rank; ++d) rows *= shape.dimensions[d];
  return {rows, rank == 0 ? 1 : shape.dimensions.back()};
}

// A reshape between a column (every element in a row of its own: [..., 1]) and a row (one device row,
// [N] or [1, ..., N]) moves elements between lines and lanes: it is a transpose of [N,1] or [1,N],
// between two reshapes that keep the device layout. Returns the replacement or nullptr.
StatusOr<HloInstruction*> ReshapeThroughTranspose(HloComputation* computation, HloInstruction* reshape) {
  const hlo::Shape& in = reshape->operand(0)->shape();
  const hlo::Shape& out = reshape->shape();
  if (!in.IsArray() || !out.IsArray()) return nullptr;
  const auto [in_rows, in_cols] = RowsAndColumns(in);
  const auto [out_rows, out_cols] = RowsAndColumns(out);
  const int64_t n = in_rows * in_cols;
  if (n <= 1 || !((in_cols == 1 && out_rows == 1) || (in_rows == 1 && out_cols == 1))) return nullptr;
  const hlo::PrimitiveType type = out.element_type;
  const std::vector<int64_t> from = in_cols == 1 ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{1, n};
  const std::vector<int64_t> to = {from[1], from[0]};
  HloInstruction* matrix =
      computation->AddInstruction(HloInstruction::CreateReshape(ArrayShape(type, from), reshape->operand(0)));
  HloInstruction* transposed =
      computation->AddInstruction(HloInstruction::CreateTranspose(ArrayShape(type, to), matrix, {1, 0}));
  hlo::Shape result = out;
  result.minor_to_major.clear();
  result.layout_tiling.clear();
  return computation->AddInstruction(HloInstruction::CreateReshape(result, transposed));
}

HloInstruction* RoundToBf16(HloComputation* computation, HloInstruction* value) {
  hlo::Shape shape = value->shape();
  HloInstruction* rounded =
      computation->AddInstruction(HloInstruction::Create(HloOpcode::kReducePrecision, shape, {value}));
  rounded->set_raw_attribute("exponent_bits", "8");
  rounded->set_raw_attribute("mantissa_bits", "7");
  return rounded;
}

// dot(a, b) = dot(a_hi, b_lo) + dot(a_lo, b_hi) + dot(a_hi, b_hi) with x_hi = bf16(x), x_lo = x - x_hi:
// every pass multiplies bf16 values exactly; only lo*lo (below 2^-16 relative) is left out. The
// small terms are added first. `parts` caches the split of each operand.
StatusOr<HloInstruction*> SplitDot(HloComputation* computation, HloInstruction* dot,
                                   std::map<HloInstruction*, std::pair<HloInstruction*, HloInstruction*>>* parts) {
  if (dot->shape().element_type != hlo::PrimitiveType::F32 || dot->operand_count() != 2) return nullptr;
  HloInstruction* split[2][2];
  for (int side = 0; side < 2; ++side) {
    HloInstruction* operand = dot->operand(side);
    if (operand->shape().element_type != hlo::PrimitiveType::F32) return nullptr;
    auto it = parts->find(operand);
    if (it == parts->end()) {
      HloInstruction* hi = RoundToBf16(computation, operand);
      HloInstruction* lo = computation->AddInstruction(
          HloInstruction::CreateBinary(operand->shape(), HloOpcode::kSubtract, operand, hi));
      it = parts->emplace(operand, std::make_pair(hi, lo)).first;
    }
    split[side][0] = it->second.first;
    split[side][1] = it->second.second;
  }
  auto pass = [&](HloInstruction* lhs, HloInstruction* rhs) {
    return computation->AddInstruction(dot->CloneWithNewOperands(dot->shape(), {lhs, rhs}));
  };
  HloInstruction* hi_lo = pass(split[0][0], split[1][1]);
  HloInstruction* lo_hi = pass(split[0][1], split[1][0]);
  HloInstruction* hi_hi = pass(split[0][0], split[1][0]);
  // Named after the dot so that the code listing and the padding report say where each pass comes from.
  hi_lo->set_name(dot->name() + ".hi_lo");
  lo_hi->set_name(dot->name() + ".lo_hi");
  hi_hi->set_name(dot->name() + ".hi_hi");
  HloInstruction* small = computation->AddInstruction(
      HloInstruction::CreateBinary(dot->shape(), HloOpcode::kAdd, hi_lo, lo_hi));
  return computation->AddInstruction(HloInstruction::CreateBinary(dot->shape(), HloOpcode::kAdd, small, hi_hi));
}

// A reshape that flattens a few rows, x[R,C] -> [R*C] (the top-k match matrix of a classifier), moves
// elements between lanes: each row becomes a column (slice + transpose), the columns are stacked
// (concatenate) and the [R*C,1] column becomes the row (ReshapeThroughTranspose below). Only for
// R <= 64, where the slices stay few. Returns the replacement or nullptr.
HloInstruction* FlattenRowsThroughColumns(HloComputation* computation, HloInstruction* reshape) {
  const hlo::Shape& in = reshape->operand(0)->shape();
  const hlo::Shape& out = reshape->shape();
  if (!in.IsArray() || in.rank() != 2 || out.rank() != 1) return nullptr;
  const int64_t rows = in.dimensions[0], cols = in.dimensions[1];
  // Rows of a multiple of 128 elements (every configuration's lane count divides it) keep their layout.
  if (rows <= 1 || rows > 64 || cols <= 1 || cols % 128 == 0) return nullptr;
  const hlo::PrimitiveType type = in.element_type;
  auto add = [&](std::unique_ptr<HloInstruction> instruction) { return computation->AddInstruction(std::move(instruction)); };
  std::vector<HloInstruction*> columns;
  for (int64_t r = 0; r < rows; ++r) {
    auto row = HloInstruction::Create(HloOpcode::kSlice, ArrayShape(type, {1, cols}), {reshape->operand(0)});
    row->set_slice({r, 0}, {r + 1, cols}, {1, 1});
    columns.push_back(add(HloInstruction::CreateTranspose(ArrayShape(type, {cols, 1}), add(std::move(row)), {1, 0})));
  }
  auto stacked = HloInstruction::Create(HloOpcode::kConcatenate, ArrayShape(type, {rows * cols, 1}), columns);
  stacked->set_dimensions({0});
  return add(HloInstruction::CreateReshape(ArrayShape(type, {rows * cols}), add(std::move(stacked))));
}

bool DependsOnlyOnConstants(const HloInstruction& instruction) {
  // Of the instructions that call computations, those whose computations are pure functions of their
  // arguments fold (a reduce of a shape's constant dimensions: Keras's mean divides by one); calls,
  // fusions and control flow stay for codegen.
  const HloOpcode opcode = instruction.opcode();
  const bool pure_computations = opcode == HloOpcode::kReduce || opcode == HloOpcode::kReduceWindow ||
                                 opcode == HloOpcode::kMap || opcode == HloOpcode::kSort;
  if (!instruction.called_computations().empty() && !pure_computations) return false;
  for (const HloInstruction* operand : instruction.operands()) {
    if (operand->opcode() != HloOpcode::kConstant || !operand->has_literal()) return false;
  }
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<hlo::HloModule>> PrepareForCodegen(const hlo::HloModule& module, PrepareStats* stats,
                                                            const PrepareOptions& options) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> copy, hlo::CloneModule(module));
  HloComputation* entry = copy->entry_computation();
  if (entry == nullptr) return InvalidArgument("module " + module.name() + " has no entry computation");
  if (options.lanes <= 0) {
    return InvalidArgument("PrepareOptions: lanes must be > 0, not " + std::to_string(options.lanes));
  }
  PrepareStats local;

  // Inline until no call is left (a callee may call again); bounded against recursive modules.
  for (int round = 0;; ++round) {
    std::vector<HloInstruction*> calls;
    for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
      // Fusions are inlined too: codegen lowers their instructions one by one.
      if (instruction->opcode() == HloOpcode::kCall || instruction->opcode() == HloOpcode::kFusion) {
        calls.push_back(instruction);
      }
    }
    if (calls.empty()) break;
    if (round >= 64) return InvalidArgument("module " + module.name() + ": calls nested deeper than 64 levels");
    for (HloInstruction* call : calls) {
      TPU_RETURN_IF_ERROR(InlineCall(entry, call));
      ++local.inlined_calls;
    }
  }

  // Top-k sorts become rounds of reductions, convolutions become dots and multiply-adds
  // (compiler/passes/topk_rewrite.h, convolution_lowering.h); their kernel taps fold into constants below.
  {
    TopKRewrite topk;
    TPU_ASSIGN_OR_RETURN(bool rewritten, topk.Run(copy.get()));
    if (rewritten) ++local.rewritten_topks;
    ConvolutionLowering convolutions(ConvolutionLoweringOptions{/*keep_depthwise_windows=*/true});
    TPU_ASSIGN_OR_RETURN(bool lowered, convolutions.Run(copy.get()));
    if (lowered) ++local.lowered_convolutions;
  }
  // Reductions and transposes codegen does not take as they are (compiler/passes/codegen_legalization.h).
  TPU_RETURN_IF_ERROR(CodegenLegalization(CodegenLegalizationOptions{options.lanes}).Run(copy.get()).status());

  for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
    if (instruction->opcode() != HloOpcode::kDot) continue;
    TPU_ASSIGN_OR_RETURN(bool changed, CanonicalizeDot(entry, instruction));
    if (changed) ++local.canonicalized_dots;
  }

  for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
    if (instruction->opcode() != HloOpcode::kReshape || instruction->operand(0)->opcode() == HloOpcode::kConstant) {
      continue;
    }
    HloInstruction* flattened = FlattenRowsThroughColumns(entry, instruction);
    if (flattened == nullptr) continue;
    TPU_RETURN_IF_ERROR(entry->ReplaceInstruction(instruction, flattened));
    ++local.rewritten_reshapes;
  }

  for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
    if (instruction->opcode() != HloOpcode::kReshape && instruction->opcode() != HloOpcode::kBitcast) continue;
    if (instruction->operand(0)->opcode() == HloOpcode::kConstant) continue;  // folded below
    TPU_ASSIGN_OR_RETURN(HloInstruction * replacement, ReshapeThroughTranspose(entry, instruction));
    if (replacement == nullptr) continue;
    TPU_RETURN_IF_ERROR(entry->ReplaceInstruction(instruction, replacement));
    ++local.rewritten_reshapes;
  }

  for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
    if (instruction->opcode() != HloOpcode::kReduce) continue;
    TPU_ASSIGN_OR_RETURN(HloInstruction * replacement, ReduceOverMinorThroughTranspose(entry, instruction));
    if (replacement == nullptr) continue;
    TPU_RETURN_IF_ERROR(entry->ReplaceInstruction(instruction, replacement));
    ++local.rewritten_reductions;
  }

  for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
    if (KeepAsIs(*instruction) || !DependsOnlyOnConstants(*instruction)) continue;
    StatusOr<hlo::Literal> value = Evaluate(*instruction);
    if (!value.ok()) continue;  // left to codegen, which reports what it cannot lower
    HloInstruction* constant = entry->AddInstruction(HloInstruction::CreateConstant(std::move(value).value()));
    if (instruction == entry->root_instruction()) entry->set_root_instruction(constant);
    TPU_RETURN_IF_ERROR(entry->ReplaceInstruction(instruction, constant));
    ++local.folded_constants;
  }
  if (options.dot_passes == 3 || options.dot_passes == 0) {
    // Instructions whose values reach a compare (a decision) or an exp or log (which amplify errors).
    std::set<const HloInstruction*> feeds_compare;
    const std::vector<HloInstruction*> order = entry->MakeInstructionPostOrder();
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const HloOpcode opcode = (*it)->opcode();
      const bool sensitive = opcode == HloOpcode::kCompare || opcode == HloOpcode::kExp || opcode == HloOpcode::kLog;
      if (!sensitive && feeds_compare.count(*it) == 0) continue;
      for (const HloInstruction* operand : (*it)->operands()) feeds_compare.insert(operand);
    }
    std::map<HloInstruction*, std::pair<HloInstruction*, HloInstruction*>> parts;
    for (HloInstruction* instruction : order) {
      if (instruction->opcode() != HloOpcode::kDot) continue;
      if (options.dot_passes == 0 && feeds_compare.count(instruction) == 0) continue;
      TPU_ASSIGN_OR_RETURN(HloInstruction * replacement, SplitDot(entry, instruction, &parts));
      if (replacement == nullptr) continue;
      TPU_RETURN_IF_ERROR(entry->ReplaceInstruction(instruction, replacement));
      ++local.split_dots;
    }
  } else if (options.dot_passes != 1) {
    return InvalidArgument("dot_passes must be 0, 1 or 3, not " + std::to_string(options.dot_passes));
  }
  entry->RemoveDeadInstructions();
  copy->RemoveUnusedComputations();
  if (stats != nullptr) *stats = local;
  return copy;
}

}  // namespace tpu::compiler
