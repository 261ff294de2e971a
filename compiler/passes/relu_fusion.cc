#include "compiler/passes/relu_fusion.h"

#include <memory>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsScalarF32Zero(const HloInstruction& instruction) {
  if (instruction.opcode() != HloOpcode::kConstant || !instruction.has_literal()) return false;
  const hlo::Literal& literal = instruction.literal();
  return literal.shape().element_type == hlo::PrimitiveType::F32 && literal.shape().rank() == 0 &&
         literal.Get<float>(0) == 0.0f;
}

bool IsBroadcastOfZero(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kBroadcast && instruction.operand_count() == 1 &&
         IsScalarF32Zero(*instruction.operand(0));
}

}  // namespace

const HloInstruction* MatchRelu(const HloInstruction& instruction) {
  if (instruction.opcode() != HloOpcode::kMaximum || instruction.operand_count() != 2) return nullptr;
  if (instruction.shape().element_type != hlo::PrimitiveType::F32) return nullptr;
  if (IsBroadcastOfZero(*instruction.operand(1))) return instruction.operand(0);
  if (IsBroadcastOfZero(*instruction.operand(0))) return instruction.operand(1);
  return nullptr;
}

bool IsReluFusion(const HloInstruction& instruction) {
  if (instruction.opcode() != HloOpcode::kFusion || instruction.operand_count() != 1) return false;
  std::vector<hlo::HloComputation*> called = instruction.called_computations();
  if (called.size() != 1 || called[0]->root_instruction() == nullptr) return false;
  const HloInstruction* root = called[0]->root_instruction();
  const HloInstruction* x = MatchRelu(*root);
  return x != nullptr && x->opcode() == HloOpcode::kParameter && x->parameter_number() == 0;
}

StatusOr<bool> ReluFusion::Run(hlo::HloModule* module) {
  // Collect first: the rewrite adds instructions to the lists being walked.
  std::vector<std::pair<hlo::HloComputation*, HloInstruction*>> matches;
  for (hlo::HloComputation* computation : ProgramComputations(module)) {
    for (HloInstruction* instruction : computation->instructions()) {
      if (MatchRelu(*instruction) != nullptr) matches.push_back({computation, instruction});
    }
  }
  for (auto [entry, maximum] : matches) {
    HloInstruction* x = const_cast<HloInstruction*>(MatchRelu(*maximum));
    const HloInstruction* zero_broadcast = maximum->operand(0) == x ? maximum->operand(1) : maximum->operand(0);
    const hlo::Shape& shape = maximum->shape();

    auto fused = std::make_unique<hlo::HloComputation>(UniqueComputationName(*module, "fused_relu." + maximum->name()));
    HloInstruction* param = fused->AddInstruction(HloInstruction::CreateParameter(0, x->shape(), "param_0"));
    HloInstruction* constant =
        fused->AddInstruction(HloInstruction::CreateConstant(zero_broadcast->operand(0)->literal(), "constant"));
    HloInstruction* broadcast =
        fused->AddInstruction(HloInstruction::CreateBroadcast(shape, constant, zero_broadcast->dimensions()));
    broadcast->set_name("broadcast");
    HloInstruction* fused_max =
        fused->AddInstruction(HloInstruction::CreateBinary(shape, HloOpcode::kMaximum, param, broadcast));
    fused_max->set_name("maximum");
    fused->set_root_instruction(fused_max);
    hlo::HloComputation* fused_computation = module->AddEmbeddedComputation(std::move(fused));

    auto fusion = HloInstruction::Create(HloOpcode::kFusion, shape, {x}, "relu." + maximum->name());
    fusion->set_raw_attribute("kind", "kLoop");
    fusion->AddCalledComputation("calls", fused_computation);
    HloInstruction* added = entry->AddInstruction(std::move(fusion));
    TPU_RETURN_IF_ERROR(entry->ReplaceInstruction(maximum, added));
  }
  return !matches.empty();
}

}  // namespace tpu::compiler
