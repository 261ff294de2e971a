#include "compiler/codegen/prepare.h"

#include <map>
#include <vector>

#include "compiler/hlo/hlo_opcode.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/interpreter/interpreter.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// Replaces `call` by a copy of the body of its computation.
Status InlineCall(HloComputation* caller, HloInstruction* call) {
  const HloComputation* callee = call->to_apply();
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
// their broadcasts (splats), and instructions that produce no array.
bool KeepAsIs(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
      return true;
    case HloOpcode::kBroadcast: {
      const HloInstruction& source = *instruction.operand(0);
      return source.opcode() == HloOpcode::kConstant && source.shape().rank() == 0 &&
             source.shape().element_type == hlo::PrimitiveType::F32;
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

bool DependsOnlyOnConstants(const HloInstruction& instruction) {
  if (!instruction.called_computations().empty()) return false;
  for (const HloInstruction* operand : instruction.operands()) {
    if (operand->opcode() != HloOpcode::kConstant || !operand->has_literal()) return false;
  }
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<hlo::HloModule>> PrepareForCodegen(const hlo::HloModule& module, PrepareStats* stats) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> copy, hlo::ParseHloModule(hlo::PrintHloModule(module)));
  HloComputation* entry = copy->entry_computation();
  if (entry == nullptr) return InvalidArgument("module " + module.name() + " has no entry computation");
  PrepareStats local;

  // Inline until no call is left (a callee may call again); bounded against recursive modules.
  for (int round = 0;; ++round) {
    std::vector<HloInstruction*> calls;
    for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
      if (instruction->opcode() == HloOpcode::kCall) calls.push_back(instruction);
    }
    if (calls.empty()) break;
    if (round >= 64) return InvalidArgument("module " + module.name() + ": calls nested deeper than 64 levels");
    for (HloInstruction* call : calls) {
      TPU_RETURN_IF_ERROR(InlineCall(entry, call));
      ++local.inlined_calls;
    }
  }

  for (HloInstruction* instruction : entry->MakeInstructionPostOrder()) {
    if (instruction->opcode() != HloOpcode::kDot) continue;
    TPU_ASSIGN_OR_RETURN(bool changed, CanonicalizeDot(entry, instruction));
    if (changed) ++local.canonicalized_dots;
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
  entry->RemoveDeadInstructions();
  copy->RemoveUnusedComputations();
  if (stats != nullptr) *stats = local;
  return copy;
}

}  // namespace tpu::compiler
