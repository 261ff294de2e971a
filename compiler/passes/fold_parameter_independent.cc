#include "compiler/passes/fold_parameter_independent.h"

#include <unordered_map>
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
  // Which device runs the program, and what its peers hold, are known only when it runs.
  if (opcode == HloOpcode::kReplicaId || opcode == HloOpcode::kPartitionId || hlo::HasSideEffect(opcode)) {
    return false;
  }
  const bool pure_computations = opcode == HloOpcode::kReduce || opcode == HloOpcode::kReduceWindow ||
                                 opcode == HloOpcode::kMap || opcode == HloOpcode::kSort;
  if (!instruction.called_computations().empty() && !pure_computations) return false;
  for (const HloInstruction* operand : instruction.operands()) {
    if (operand->opcode() != HloOpcode::kConstant || !operand->has_literal()) return false;
  }
  return true;
}

// An element of a tuple-valued instruction of constants that the device could not compute as it is: an
// rng-bit-generator of a constant key (its u64 state is not a device value), folded element by element.
bool IsElementOfFoldableTuple(const HloInstruction& instruction) {
  if (instruction.opcode() != HloOpcode::kGetTupleElement) return false;
  const HloInstruction& tuple = *instruction.operand(0);
  return tuple.opcode() == HloOpcode::kRngBitGenerator && DependsOnlyOnConstants(tuple);
}

}  // namespace

StatusOr<bool> FoldParameterIndependent::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : ProgramComputations(module)) {
    // The values of the tuples whose elements fold, each evaluated once.
    std::unordered_map<HloInstruction*, hlo::Literal> tuples;
    // Post order: a value folded earlier makes its users foldable in the same walk.
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      StatusOr<hlo::Literal> value = NotFound("not folded");
      if (IsElementOfFoldableTuple(*instruction)) {
        HloInstruction* tuple = instruction->operand(0);
        auto it = tuples.find(tuple);
        if (it == tuples.end()) {
          StatusOr<hlo::Literal> evaluated = EvaluateOnConstants(*tuple);
          if (!evaluated.ok()) continue;
          it = tuples.emplace(tuple, std::move(evaluated).value()).first;
        }
        value = it->second.tuple_elements().at(static_cast<size_t>(instruction->tuple_index()));
      } else {
        if (KeepAsIs(*instruction) || !DependsOnlyOnConstants(*instruction)) continue;
        value = EvaluateOnConstants(*instruction);
      }
      if (!value.ok()) continue;
      HloInstruction* constant = computation->AddInstruction(HloInstruction::CreateConstant(std::move(value).value()));
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(instruction, constant));
      changed = true;
    }
    // A folded generator (and its u64 state) goes once all its elements have.
    for (auto& [tuple, value] : tuples) {
      TPU_RETURN_IF_ERROR(RemoveIfDead(computation, tuple));
    }
  }
  return changed;
}

}  // namespace tpu::compiler
