// `sort` of any operands along any dimension with any comparator, as a bitonic sorting network that runs
// in a counted device loop, one stage of the network per iteration:
//  - the operands are laid out as tables [N*A, C] whose rows are the positions along the sorted dimension
//    (N = the dimension's size rounded up to a power of two, A the other non-minor dimensions, C the
//    minor one; a sort along the minor dimension is transposed first, so that its positions are rows);
//  - a stage (k, j) pairs position i with i ^ j: each operand's partner rows are gathered (row gather at
//    indices the loop computes), the comparator is applied element by element to (partner, self), and
//    every element keeps its own value or takes its partner's: the lower of a pair keeps the lesser when
//    the pair's block (i & k) sorts ascending, the greater otherwise;
//  - ties are broken by the original position, carried as one more operand, so the network gives exactly
//    the order of a stable sort (the interpreter's, whatever is_stable says); the padding positions past
//    the dimension's size are greater than every real position and end up in the part sliced off;
//  - `compare` with type=TOTALORDER on floats (jnp.sort's comparator) compares the s32 keys
//    s < 0 ? s ^ 0x7fffffff : s of the words s, which orders -NaN < -inf < ... < -0 < +0 < ... < NaN.
// Cost: log2(N) * (log2(N) + 1) / 2 stages, each gathering every operand's rows once; the code is one
// loop, whatever N is. The comparator must be made of elementwise operations (Unimplemented otherwise).
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class SortExpansion : public HloPass {
 public:
  std::string_view name() const override { return "sort-expansion"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
