// HLO verifier: structure (operand counts, parameters, called computations), static shapes, element
// types the TPU can hold, and shape inference: each instruction's shape must equal the inferred one.
//
// Errors, in the words of the TensorFlow/Cloud TPU messages users search for:
// - a dynamic dimension (`f32[?,10]`, `f32[<=8]`): ValueError("shape f32[?,10] must have a fixed size for
//   dimension 0 that is known at graph construction time.")
// - an entry parameter or infeed of an element type the TPU cannot take in: TypeError("DataType f64 is not
//   a supported TPU infeed type."). Rejected: f64 always; with VerifierOptions::strict_infeed_types only
//   f32, s32, bf16 and pred pass (the Cloud TPU guide's list). By default s64/u64/s8/u8/s16/u16/u32/f16
//   pass, because real PyTorch/XLA dumps feed s64 labels and XLA's TPU backend emulates them.
// - f64 anywhere else: InvalidArgument.
// - an element type XLA knows but this TPU does not (c64, c128, f8e4m3fn, s4, ...): Unimplemented("element
//   type c64 of parameter p is not supported by this TPU"), checked before anything else.
// - an instruction that depends on itself (directly or through others): InvalidArgument naming the cycle.
// - an opcode this compiler has no kernel for, or a custom-call target that is not a known identity:
//   NotFound("No registered '<op>' OpKernel for XLA_TPU_JIT devices compatible with node <name>").
#pragma once

#include <string>
#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "sw/base/status.h"

namespace tpu::hlo {

struct VerifierOptions {
  bool strict_infeed_types = false;
};

Status VerifyHloModule(const HloModule& module, const VerifierOptions& options = {});

// The Cloud TPU guide's infeed rule for the values that really cross the infeed (the compiler's infeed
// instructions, the runtime's TransferToInfeed): f32, s32, bf16 and pred only, else TypeError("DataType
// u8 is not a supported TPU infeed type.").
Status CheckTpuInfeedTypes(const Shape& shape);

// Shape inference used by the verifier, available to passes that build instructions. The instruction's
// own shape is not consulted except where the text carries information the operands do not (reshape,
// broadcast, iota, constant, parameter, convert target type, custom-call, ...).
StatusOr<Shape> InferShape(const HloInstruction& instruction);

// An operand cycle of `computation`: instructions x0, x1, ..., xk where each uses the next and xk uses x0
// (one instruction for one that uses itself); empty when the operands form a DAG. Passes, cloning and
// codegen all assume a DAG, so the parser and the verifier reject a cycle before anything else runs.
std::vector<const HloInstruction*> FindOperandCycle(const HloComputation& computation);
// "instruction %b uses itself as an operand", "instructions %a and %b form a cycle: %a uses %b, %b uses %a".
std::string DescribeOperandCycle(const std::vector<const HloInstruction*>& cycle);

}  // namespace tpu::hlo
