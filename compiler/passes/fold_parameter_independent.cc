#include "compiler/passes/fold_parameter_independent.h"

#include <utility>
#include <vector>

#include "compiler/passes/constant_folding.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

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
      // (SRC2_BCAST), so storing the broadcast would only cost HBM and load time. Only rows of 32-bit
      // words and narrower: a 64-bit row (threefry's u64 counters) folds with its users down to the
      // values the device takes.
      const hlo::PrimitiveType type = instruction.shape().element_type;
      const bool device_word = type == hlo::PrimitiveType::F32 || type == hlo::PrimitiveType::BF16 ||
                               type == hlo::PrimitiveType::S32 || type == hlo::PrimitiveType::U32 ||
                               type == hlo::PrimitiveType::PRED;
      const int rank = instruction.shape().rank();
      return device_word && source.shape().rank() == 1 && rank >= 2 &&
             instruction.dimensions() == std::vector<int64_t>{rank - 1};
    }
    default:
      return instruction.shape().IsTuple();
  }
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

StatusOr<bool> FoldParameterIndependent::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : ProgramComputations(module)) {
    // Post order: a value folded earlier makes its users foldable in the same walk.
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      if (KeepAsIs(*instruction) || !DependsOnlyOnConstants(*instruction)) continue;
      StatusOr<hlo::Literal> value = EvaluateOnConstants(*instruction);
      if (!value.ok()) continue;
      HloInstruction* constant = computation->AddInstruction(HloInstruction::CreateConstant(std::move(value).value()));
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(instruction, constant));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
