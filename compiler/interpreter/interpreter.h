// HLO interpreter: the CPU golden reference. Runs the entry computation on host Literals in IEEE fp32
// (no bf16 rounding of f32 values). Outputs are flattened: a tuple root gives its elements in order
// (nested tuples flattened depth-first).
#pragma once

#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/literal.h"
#include "sw/base/status.h"

namespace tpu::hlo {

// `arguments` has one Literal per entry parameter, of the parameter's shape (layout ignored).
// Unsupported opcodes give Unimplemented naming the opcode; constants whose values the dump elided give
// FailedPrecondition.
StatusOr<std::vector<Literal>> Interpret(const HloModule& module, const std::vector<Literal>& arguments);

// Runs one computation on arguments; the result is not flattened (a tuple root gives a tuple Literal).
StatusOr<Literal> InterpretComputation(const HloComputation& computation, const std::vector<Literal>& arguments);

}  // namespace tpu::hlo
