#include "compiler/passes/pass.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "compiler/hlo/printer.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/relu_fusion.h"

namespace tpu::compiler {

std::vector<std::string> PassPipeline::pass_names() const {
  std::vector<std::string> names;
  for (const auto& pass : passes_) names.emplace_back(pass->name());
  return names;
}

Status PassPipeline::Dump(const std::string& file_name, const hlo::HloModule& module) const {
  std::error_code error;
  std::filesystem::create_directories(dump_dir_, error);
  if (error) return InvalidArgument("cannot create dump directory '" + dump_dir_ + "': " + error.message());
  std::string path = dump_dir_ + "/" + file_name;
  std::ofstream out(path, std::ios::trunc);
  if (!out) return InvalidArgument("cannot write '" + path + "'");
  out << hlo::PrintHloModule(module);
  return out ? OkStatus() : Internal("writing '" + path + "' failed");
}

StatusOr<bool> PassPipeline::Run(hlo::HloModule* module) {
  if (!dump_dir_.empty()) TPU_RETURN_IF_ERROR(Dump("00-input.hlo", *module));
  bool any_changed = false;
  for (size_t i = 0; i < passes_.size(); ++i) {
    HloPass& pass = *passes_[i];
    StatusOr<bool> changed = pass.Run(module);
    if (!changed.ok()) {
      return Status(changed.status().code(), std::string(pass.name()) + ": " + changed.status().message());
    }
    any_changed |= *changed;
    if (!dump_dir_.empty()) {
      char prefix[16];
      std::snprintf(prefix, sizeof(prefix), "%02d-", static_cast<int>(i + 1));
      TPU_RETURN_IF_ERROR(Dump(prefix + std::string(pass.name()) + ".hlo", *module));
    }
    if (after_pass_) TPU_RETURN_IF_ERROR(after_pass_(static_cast<int>(i), pass.name(), *changed, *module));
  }
  return any_changed;
}

Status RemoveIfDead(hlo::HloComputation* computation, hlo::HloInstruction* instruction) {
  std::vector<hlo::HloInstruction*> stack = {instruction};
  while (!stack.empty()) {
    hlo::HloInstruction* candidate = stack.back();
    stack.pop_back();
    if (candidate->user_count() != 0 || candidate->IsRoot() || candidate->opcode() == hlo::HloOpcode::kParameter ||
        candidate->HasSideEffect())
      continue;
    std::vector<hlo::HloInstruction*> operands = candidate->operands();
    std::sort(operands.begin(), operands.end());
    operands.erase(std::unique(operands.begin(), operands.end()), operands.end());
    TPU_RETURN_IF_ERROR(computation->RemoveInstruction(candidate));
    for (hlo::HloInstruction* operand : operands) stack.push_back(operand);
  }
  return OkStatus();
}

std::vector<hlo::HloComputation*> ProgramComputations(hlo::HloModule* module) {
  std::vector<hlo::HloComputation*> result;
  if (module->entry_computation() == nullptr) return result;
  result.push_back(module->entry_computation());
  for (size_t i = 0; i < result.size(); ++i) {
    for (const hlo::HloInstruction* instruction : result[i]->MakeInstructionPostOrder()) {
      const hlo::HloOpcode opcode = instruction->opcode();
      if (opcode != hlo::HloOpcode::kCall && opcode != hlo::HloOpcode::kWhile && opcode != hlo::HloOpcode::kConditional) {
        continue;
      }
      for (hlo::HloComputation* called : instruction->called_computations()) {
        if (called != nullptr && std::find(result.begin(), result.end(), called) == result.end()) {
          result.push_back(called);
        }
      }
    }
  }
  return result;
}

StatusOr<bool> ReplaceEachInProgram(hlo::HloModule* module,
                                    const std::function<hlo::HloInstruction*(hlo::HloComputation*, hlo::HloInstruction*)>& rewrite) {
  bool changed = false;
  for (hlo::HloComputation* computation : ProgramComputations(module)) {
    for (hlo::HloInstruction* instruction : computation->MakeInstructionPostOrder()) {
      hlo::HloInstruction* replacement = rewrite(computation, instruction);
      if (replacement == nullptr) continue;
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(instruction, replacement));
      changed = true;
    }
  }
  return changed;
}

std::string UniqueComputationName(const hlo::HloModule& module, const std::string& base) {
  if (module.GetComputationWithName(base) == nullptr) return base;
  for (int n = 1;; ++n) {
    std::string name = base + "." + std::to_string(n);
    if (module.GetComputationWithName(name) == nullptr) return name;
  }
}

void AddDefaultPasses(PassPipeline* pipeline) {
  pipeline->AddPass<ReluFusion>();
  pipeline->AddPass<DeadCodeElimination>();
}

}  // namespace tpu::compiler
