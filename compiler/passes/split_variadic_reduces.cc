#include "compiler/passes/split_variadic_reduces.h"

#include <map>
#include <memory>
#include <vector>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

// Copies `value` and what it depends on into `into`, whose parameters `copies` holds already. False when
// it reaches another parameter (the part depends on another operand).
bool CopyPart(const HloInstruction* value, hlo::HloComputation* into,
              std::map<const HloInstruction*, HloInstruction*>* copies) {
  if (copies->count(value) != 0) return true;
  if (value->opcode() == HloOpcode::kParameter || !value->called_computations().empty()) return false;
  std::vector<HloInstruction*> operands;
  for (const HloInstruction* operand : value->operands()) {
    if (!CopyPart(operand, into, copies)) return false;
    operands.push_back(copies->at(operand));
  }
  (*copies)[value] = into->AddInstruction(value->CloneWithNewOperands(value->shape(), operands));
  return true;
}

HloInstruction* Rewrite(hlo::HloModule* module, hlo::HloComputation* computation, HloInstruction* reduce) {
  const int64_t n = reduce->operand_count() / 2;
  const hlo::HloComputation* reducer = reduce->to_apply();
  if (n < 2 || reducer == nullptr || reducer->num_parameters() != 2 * n) return nullptr;
  const HloInstruction* root = reducer->root_instruction();
  if (root == nullptr || root->opcode() != HloOpcode::kTuple || root->operand_count() != n) return nullptr;
  std::vector<std::unique_ptr<hlo::HloComputation>> parts;
  for (int64_t k = 0; k < n; ++k) {
    auto part = std::make_unique<hlo::HloComputation>(reducer->name() + "_part" + std::to_string(k));
    std::map<const HloInstruction*, HloInstruction*> copies;
    for (int64_t p : {k, n + k}) {
      const HloInstruction* parameter = reducer->parameter_instruction(p);
      copies[parameter] = part->AddInstruction(
          HloInstruction::CreateParameter(p == k ? 0 : 1, parameter->shape(), p == k ? "a" : "b"));
    }
    if (!CopyPart(root->operand(k), part.get(), &copies)) return nullptr;
    part->set_root_instruction(copies.at(root->operand(k)));
    parts.push_back(std::move(part));
  }
  HloBuilder b(computation);
  std::vector<HloInstruction*> results;
  for (int64_t k = 0; k < n; ++k) {
    parts[k]->set_name(UniqueComputationName(*module, parts[k]->name()));
    hlo::HloComputation* part = module->AddEmbeddedComputation(std::move(parts[k]));
    results.push_back(b.Add(HloInstruction::CreateReduce(reduce->shape().tuple_shapes.at(k), reduce->operand(k),
                                                         reduce->operand(n + k), reduce->dimensions(), part)));
  }
  return b.Add(HloInstruction::CreateTuple(results));
}

}  // namespace

StatusOr<bool> SplitVariadicReduces::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module, [&](hlo::HloComputation* computation, HloInstruction* instruction) {
    if (instruction->opcode() != HloOpcode::kReduce || !instruction->shape().IsTuple()) return (HloInstruction*)nullptr;
    return Rewrite(module, computation, instruction);
  });
}

}  // namespace tpu::compiler
