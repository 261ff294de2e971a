// Re-specializing a module for a run, as a framework re-traces a function for new inputs:
//  - Rebatch: another batch size (the leading dimension of the entry parameters);
//  - FillElidedConstants: seeded values for constants whose values the dump elided (`constant({...})`);
//  - SetEntryRoot: makes an intermediate instruction the entry root, to compare it instead of the outputs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "compiler/passes/pass.h"

namespace tpu::compiler {

// Changes the leading dimension of every entry parameter of rank >= 1 from the module's batch B (they
// must all agree) to `batch`, and propagates it through the shapes of every computation the entry
// calls. Shapes that operands determine are re-inferred (hlo::InferShape); where the text carries the
// size, a dimension carries the batch when:
//  - reshape: the first output dimension equal to B, else the first one that is a multiple of B (so
//    pred[5,250] -> pred[1250] becomes pred[5N]); the element count must scale by N/B;
//  - broadcast: operand dimensions map as written; other output dimensions equal to B become N;
//  - iota: dimensions equal to B;
//  - slice: a dimension whose operand size changed must be sliced whole ([0:B]) and stays whole.
// A constant with a dimension equal to B gives InvalidArgument (its values cannot be re-batched), as
// does any other instruction whose shape would need a guess. The entry_computation_layout attribute is
// dropped (it names the old shapes). A computation called from several places with different new
// shapes is not supported (InvalidArgument).
class Rebatch : public HloPass {
 public:
  explicit Rebatch(int64_t batch) : batch_(batch) {}
  std::string_view name() const override { return "rebatch"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  int64_t batch_;
};

// Gives every constant without values (`constant({...})`, elided by the dump) seeded values (mt19937 of
// `seed`, constants in computation and instruction order), chosen by how the constant is used so that a
// network stays numerically sane (reshapes, broadcasts, copies and converts are looked through):
//  - read by rsqrt, sqrt, log or a divisor (batch-norm variances): uniform in [0.5, 1.5];
//  - a convolution kernel or a dot's rhs: uniform in [-a, a], a = sqrt(3 / fan_in), which keeps the
//    variance of the activations (fan_in = kernel elements per output feature / contracted size);
//  - a multiplier of something else (batch-norm scale): uniform in [0.5, 1.5];
//  - anything else (batch-norm mean and offset, biases): uniform in [-0.1, 0.1].
// Integer constants get integers in [0, 4) and pred constants false. Returns how many were filled.
StatusOr<int> FillElidedConstants(hlo::HloModule* module, uint64_t seed);

// Makes the entry instruction `name` the root (its value becomes the only output) and removes what no
// longer contributes. NotFound naming the entry computation when there is no such entry instruction.
Status SetEntryRoot(hlo::HloModule* module, std::string_view name);

}  // namespace tpu::compiler
