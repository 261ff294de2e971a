// Constant folding: an instruction whose operands are all constants (or that needs none, like iota) is
// evaluated with the HLO interpreter and replaced by a constant, when the result is small. Folding uses
// the interpreter's own arithmetic, so folded values are bit-identical to running the instruction.
//
// Not folded: broadcasts of a scalar (codegen turns them into immediates or splats, and a folded array
// would only cost memory), results above `max_elements`, side effects and collectives (rng, infeed,
// custom-call, all-reduce, ...), control flow and fusions, tuples, and constants whose values the dump
// elided (`constant({...})`).
#pragma once

#include <cstdint>

#include "compiler/passes/pass.h"

namespace tpu::compiler {

// Runs `instruction`, whose operands are all constants with values, through the interpreter.
StatusOr<hlo::Literal> EvaluateOnConstants(const hlo::HloInstruction& instruction);

class ConstantFolding : public HloPass {
 public:
  explicit ConstantFolding(int64_t max_elements = 4096) : max_elements_(max_elements) {}
  std::string_view name() const override { return "constant-folding"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  int64_t max_elements_;
};

}  // namespace tpu::compiler
