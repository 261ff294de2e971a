#include "compiler/passes/algebraic_simplifier.h"

#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;

// Every element of a known constant equals `value` (through one broadcast of a constant, too).
bool IsConstantOf(const HloInstruction* instruction, double value) {
  if (instruction->opcode() == HloOpcode::kBroadcast) instruction = instruction->operand(0);
  if (instruction->opcode() != HloOpcode::kConstant || !instruction->has_literal()) return false;
  const hlo::Literal& literal = instruction->literal();
  if (!literal.shape().IsArray() || literal.element_count() == 0) return false;
  for (int64_t i = 0; i < literal.element_count(); ++i)
    if (literal.GetAsDouble(i) != value) return false;
  return true;
}

bool IsIdentityPermutation(const std::vector<int64_t>& permutation) {
  for (size_t i = 0; i < permutation.size(); ++i)
    if (permutation[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// The instruction `instruction` can be replaced with, or nullptr. May add a new instruction.
HloInstruction* Simplify(HloComputation* computation, HloInstruction* instruction) {
  const hlo::Shape& shape = instruction->shape();
  auto same_shape = [&](const HloInstruction* x) { return x->shape() == shape ? const_cast<HloInstruction*>(x) : nullptr; };
  switch (instruction->opcode()) {
    case HloOpcode::kAdd:
      if (IsConstantOf(instruction->operand(1), 0)) return same_shape(instruction->operand(0));
      if (IsConstantOf(instruction->operand(0), 0)) return same_shape(instruction->operand(1));
      return nullptr;
    case HloOpcode::kSubtract:
      if (IsConstantOf(instruction->operand(1), 0)) return same_shape(instruction->operand(0));
      return nullptr;
    case HloOpcode::kMultiply:
      if (IsConstantOf(instruction->operand(1), 1)) return same_shape(instruction->operand(0));
      if (IsConstantOf(instruction->operand(0), 1)) return same_shape(instruction->operand(1));
      return nullptr;
    case HloOpcode::kDivide:
      if (IsConstantOf(instruction->operand(1), 1)) return same_shape(instruction->operand(0));
      return nullptr;
    case HloOpcode::kNegate:
      if (instruction->operand(0)->opcode() == HloOpcode::kNegate) return same_shape(instruction->operand(0)->operand(0));
      return nullptr;
    case HloOpcode::kConvert:
    case HloOpcode::kCopy:
      return same_shape(instruction->operand(0));
    case HloOpcode::kReshape: {
      HloInstruction* operand = instruction->operand(0);
      if (operand->shape() == shape) return operand;
      if (operand->opcode() == HloOpcode::kReshape) {
        HloInstruction* source = operand->operand(0);
        if (source->shape() == shape) return source;
        return computation->AddInstruction(HloInstruction::CreateReshape(shape, source));
      }
      return nullptr;
    }
    case HloOpcode::kTranspose: {
      HloInstruction* operand = instruction->operand(0);
      if (IsIdentityPermutation(instruction->dimensions())) return same_shape(operand);
      if (operand->opcode() == HloOpcode::kTranspose) {
        // out[i] = mid[p2[i]] = in[p1[p2[i]]].
        const std::vector<int64_t>& inner = operand->dimensions();
        const std::vector<int64_t>& outer = instruction->dimensions();
        std::vector<int64_t> composed;
        for (int64_t p : outer) composed.push_back(inner.at(static_cast<size_t>(p)));
        HloInstruction* source = operand->operand(0);
        if (IsIdentityPermutation(composed)) return same_shape(source);
        return computation->AddInstruction(HloInstruction::CreateTranspose(shape, source, composed));
      }
      return nullptr;
    }
    case HloOpcode::kBroadcast: {
      HloInstruction* operand = instruction->operand(0);
      if (operand->shape().rank() == 0) return nullptr;  // kept for codegen's immediates
      if (IsIdentityPermutation(instruction->dimensions()) && operand->shape() == shape) return operand;
      return nullptr;
    }
    case HloOpcode::kSlice: {
      HloInstruction* operand = instruction->operand(0);
      if (operand->shape() != shape) return nullptr;
      for (int64_t s : instruction->slice_strides())
        if (s != 1) return nullptr;
      for (int64_t s : instruction->slice_starts())
        if (s != 0) return nullptr;
      return operand;
    }
    case HloOpcode::kConcatenate:
      return instruction->operand_count() == 1 ? same_shape(instruction->operand(0)) : nullptr;
    case HloOpcode::kReverse:
      return instruction->dimensions().empty() ? same_shape(instruction->operand(0)) : nullptr;
    case HloOpcode::kPad: {
      for (const hlo::PaddingDimension& d : instruction->padding_config().dimensions)
        if (d.edge_padding_low != 0 || d.edge_padding_high != 0 || d.interior_padding != 0) return nullptr;
      return same_shape(instruction->operand(0));
    }
    case HloOpcode::kSelect: {
      if (IsConstantOf(instruction->operand(0), 1)) return same_shape(instruction->operand(1));
      if (IsConstantOf(instruction->operand(0), 0)) return same_shape(instruction->operand(2));
      if (instruction->operand(1) == instruction->operand(2)) return same_shape(instruction->operand(1));
      return nullptr;
    }
    default:
      return nullptr;
  }
}

}  // namespace

StatusOr<bool> AlgebraicSimplifier::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    // Post order, so a chain collapses in one walk (reshape(reshape(reshape(x))) included).
    for (HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      HloInstruction* replacement = Simplify(computation, instruction);
      if (replacement == nullptr || replacement == instruction) continue;
      TPU_RETURN_IF_ERROR(instruction->ReplaceAllUsesWith(replacement));
      TPU_RETURN_IF_ERROR(RemoveIfDead(computation, instruction));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
