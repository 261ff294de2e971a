#include "compiler/passes/constant_folding.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "compiler/interpreter/interpreter.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsFoldableOpcode(HloOpcode opcode) {
  if (HasSideEffect(opcode)) return false;
  switch (opcode) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kRngBitGenerator:
    case HloOpcode::kAfterAll:
    case HloOpcode::kCustomCall:
    case HloOpcode::kReplicaId:
    case HloOpcode::kPartitionId:
    case HloOpcode::kCall:
    case HloOpcode::kWhile:
    case HloOpcode::kConditional:
    case HloOpcode::kFusion:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kOptimizationBarrier:
    case HloOpcode::kDomain:
    case HloOpcode::kCopyStart:
    case HloOpcode::kCopyDone:
    case HloOpcode::kUnknown:
      return false;
    default:
      return true;
  }
}

bool ShouldFold(const HloInstruction& instruction, int64_t max_elements) {
  if (!IsFoldableOpcode(instruction.opcode())) return false;
  if (!instruction.shape().IsArray() || !instruction.shape().IsStatic()) return false;
  if (instruction.shape().ElementCount() > max_elements) return false;
  if (instruction.opcode() == HloOpcode::kBroadcast && instruction.operand(0)->shape().rank() == 0) return false;
  for (const HloInstruction* operand : instruction.operands())
    if (operand->opcode() != HloOpcode::kConstant || !operand->has_literal() || !operand->shape().IsArray()) return false;
  return true;
}

}  // namespace

StatusOr<hlo::Literal> EvaluateOnConstants(const HloInstruction& instruction) {
  HloComputation scratch("constant_folding_scratch");
  std::vector<HloInstruction*> operands;
  for (const HloInstruction* operand : instruction.operands())
    operands.push_back(scratch.AddInstruction(HloInstruction::CreateConstant(operand->literal())));
  HloInstruction* copy = scratch.AddInstruction(instruction.CloneWithNewOperands(instruction.shape(), operands));
  scratch.set_root_instruction(copy);
  return hlo::InterpretComputation(scratch, {});
}

StatusOr<bool> ConstantFolding::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    // Post order: an operand folded earlier makes its users foldable in the same walk.
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (!ShouldFold(*instruction, max_elements_)) continue;
      StatusOr<hlo::Literal> value = EvaluateOnConstants(*instruction);
      // An instruction the interpreter cannot run is left for the device: folding is an optimization.
      if (!value.ok()) continue;
      std::string name = instruction->name();
      hlo::Shape shape = instruction->shape();
      HloInstruction* constant = computation->AddInstruction(HloInstruction::CreateConstant(std::move(value).value()));
      constant->set_shape(shape);  // keep the layout the text gave
      TPU_RETURN_IF_ERROR(instruction->ReplaceAllUsesWith(constant));
      TPU_RETURN_IF_ERROR(RemoveIfDead(computation, instruction));
      constant->set_name(name);
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
