// Loop fusions the code generator lowers as one VPU loop: codegen preparation runs elementwise-fusion
// (compiler/passes/elementwise_fusion.h) with these predicates, and CodeGenerator::EmitLoopFusion
// (loop_fusion.cc) streams the fusion's tensor operands through VMEM chunk by chunk, computes every
// fused instruction on the chunk and stores only the root: the values in between never go to HBM.
//
// Members: f32 arithmetic the VPU computes line by line -- add, subtract, multiply, maximum, minimum,
// negate, divide (by a tensor or a scalar constant) and the sequences of MathSequence (exp, log, rsqrt,
// sqrt, abs, sign, tanh, logistic, expm1, log1p, floor, ceil, rounding, power) -- whose operands are
// tensors of the member's shape or broadcasts the VPU reads in place: of a scalar constant (an
// immediate), of a scalar value (a splat row) or of a row along the minor dimension (a row in VMEM).
// Each member runs the instructions its own lowering (elementwise.cc) would run, on the same values,
// so a fused result is bit for bit the unfused one.
#pragma once

#include "compiler/hlo/hlo_ir.h"

namespace tpu::compiler {

// Whether `instruction` may be a member of a loop fusion.
bool IsLoopFusible(const hlo::HloInstruction& instruction);
// Whether broadcast `operand` of member `user` is read inside the fusion (immediate, splat or row).
bool LoopFusionReadsBroadcast(const hlo::HloInstruction& user, const hlo::HloInstruction& operand);
// Whether `fusion` is a kLoop fusion whose computation holds only such members, their broadcasts,
// scalar constants and parameters.
bool IsLoweredLoopFusion(const hlo::HloInstruction& fusion);

}  // namespace tpu::compiler
