// HLO interpreter: the CPU golden reference. Runs the entry computation on host Literals in IEEE fp32
// (no bf16 rounding of f32 values). Outputs are flattened: a tuple root gives its elements in order
// (nested tuples flattened depth-first).
#pragma once

#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/literal.h"
#include "sw/base/status.h"

namespace tpu::hlo {

struct InterpreterOptions {
  // A while loop that runs more iterations than this is reported as FailedPrecondition, not run forever.
  int64_t max_while_iterations = int64_t{1} << 24;
};

// `arguments` has one Literal per entry parameter, of the parameter's shape (layout ignored).
// Unsupported opcodes give Unimplemented naming the opcode; constants whose values the dump elided give
// FailedPrecondition.
StatusOr<std::vector<Literal>> Interpret(const HloModule& module, const std::vector<Literal>& arguments,
                                         const InterpreterOptions& options = {});

// Runs one computation on arguments; the result is not flattened (a tuple root gives a tuple Literal).
StatusOr<Literal> InterpretComputation(const HloComputation& computation, const std::vector<Literal>& arguments,
                                       const InterpreterOptions& options = {});

}  // namespace tpu::hlo
