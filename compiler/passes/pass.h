// The one pass interface of the compiler (in the spirit of XLA's HloPassInterface) and a pipeline that
// runs passes in order and can dump the module after each of them.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "sw/base/status.h"

namespace tpu::compiler {

class HloPass {
 public:
  virtual ~HloPass() = default;
  // Short lower-case name used in dumps and logs, e.g. "dce".
  virtual std::string_view name() const = 0;
  // Transforms the module in place; returns whether anything changed.
  virtual StatusOr<bool> Run(hlo::HloModule* module) = 0;
};

class PassPipeline {
 public:
  // Called after each pass with its position (0-based), its name, whether it changed the module, and
  // the module as it is after the pass.
  using AfterPassHook = std::function<Status(int index, std::string_view pass_name, bool changed,
                                             const hlo::HloModule& module)>;

  explicit PassPipeline(std::string name) : name_(std::move(name)) {}

  template <typename Pass, typename... Args>
  Pass& AddPass(Args&&... args) {
    auto pass = std::make_unique<Pass>(std::forward<Args>(args)...);
    Pass& ref = *pass;
    passes_.push_back(std::move(pass));
    return ref;
  }

  void set_after_pass_hook(AfterPassHook hook) { after_pass_ = std::move(hook); }
  // Writes the module after pass i into `dir` as NN-passname.hlo (NN = i + 1, two digits), plus
  // 00-input.hlo before the first pass. The directory is created if needed.
  void DumpTo(std::string dir) { dump_dir_ = std::move(dir); }

  const std::string& name() const { return name_; }
  std::vector<std::string> pass_names() const;

  // Runs every pass once, in order; returns whether any changed the module. A failing pass stops the
  // pipeline with its error, prefixed by the pass name.
  StatusOr<bool> Run(hlo::HloModule* module);

 private:
  Status Dump(const std::string& file_name, const hlo::HloModule& module) const;

  std::string name_;
  std::vector<std::unique_ptr<HloPass>> passes_;
  AfterPassHook after_pass_;
  std::string dump_dir_;
};

// Removes `instruction` if it has no users and is not the root, a parameter or side-effecting, then the
// operands that leaves unused, transitively. For passes that replace instructions and clean up after themselves.
Status RemoveIfDead(hlo::HloComputation* computation, hlo::HloInstruction* instruction);

// The computations that run as device code: the entry, then the computations of its calls, the
// conditions and bodies of its while loops and the branches of its conditionals, transitively (each once). Not the computations that only define
// an operation (to_apply of a reduce, select/scatter, sort comparators).
std::vector<hlo::HloComputation*> ProgramComputations(hlo::HloModule* module);

// Calls `rewrite` on every instruction of the module's program computations (ProgramComputations), in
// post order; an instruction it returns replaces the one it was given (nullptr: left as it is). Returns
// whether any was replaced. The loop of the passes that rewrite one instruction at a time.
StatusOr<bool> ReplaceEachInProgram(hlo::HloModule* module,
                                  const std::function<hlo::HloInstruction*(hlo::HloComputation*, hlo::HloInstruction*)>& rewrite);

// `base`, or `base.N` with the smallest N that no computation of the module is named yet.
std::string UniqueComputationName(const hlo::HloModule& module, const std::string& base);

// The default pipeline the compiler runs before codegen.
void AddDefaultPasses(PassPipeline* pipeline);

}  // namespace tpu::compiler
