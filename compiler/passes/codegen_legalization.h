// Rewrites reductions and transposes that the code generator does not lower into equivalent forms it
// does (compiler/codegen: reductions over consecutive non-minor dimensions, the minor dimension of
// ranks 1 and 2 through a transpose, rank-2 transposes and row permutations (transposes that keep the
// minor dimension), slices, pads and concatenates of rows, and
// reshapes that keep the device layout: rows = product of the non-minor dimensions, the minor dimension
// on lanes). Supported forms are left as they are.
//
// Reductions (add, maximum, minimum of f32 or s32):
//  - an init value that is not the identity (and would not keep padded lanes +0), or that is computed
//    at run time, becomes the identity, and the result is combined with the init value afterwards:
//    op(reduce(x, identity), init);
//  - non-consecutive reduced dimensions become one reduce per run of consecutive dimensions, the last
//    run first (reductions associate; add rounds in another order, within the reduction tolerance of
//    docs/numerics.md);
//  - the minor dimension of a rank >= 3 operand [K..., Km, C] is reduced on the transpose: Km padded
//    with zero rows to a multiple of `lane_multiple`, [Kp*Km', C] transposed to [C, Kp*Km'], reduced over
//    dimension 0, reshaped to [Kp, Km'] (whole lines) and sliced to [Kp, Km];
//  - vector -> scalar reductions with any init value: the identity reduce (which codegen preparation
//    takes through a [C,1] column) and the combine.
// Transposes of rank >= 3: dimensions of size 1 and runs that stay together are folded away by reshapes
// that keep the device layout; what is left is
//  - a rank-2 transpose;
//  - a row permutation (the minor dimension stays): left as it is, codegen moves the rows with DMAs
//    (compiler/codegen/reverse.cc);
//  - otherwise a row permutation that puts the future minor dimension last, a batched transpose
//    [B,M,N] -> [B,N,M] and a row permutation into the output order. The batched transpose pads M to
//    `lane_multiple`, transposes [B*M',N] -> [N,B*M'] as one rank-2 transpose, reads that as [N,B,M']
//    (whole lines), permutes the rows to [B,N,M'] and slices M' back to M.
// Broadcasts whose operand's dimensions lead and new ones follow ([A,B] -> [A,B,C], dimensions={0,1}:
// softmax over the last axis of a rank-3 value; [A] -> [A,B,C]) go through the column [A*B] broadcast to
// [A*B, C...]: reshape, broadcast along dimension 0, reshape. Broadcasts that insert dimensions before the kept minor one
// ([A,C] -> [A,B,C]) repeat the operand in front and put the rows in order with a row permutation.
// is-finite of f32 values becomes x - x == 0 (NaN for infinities and NaN); and/or reductions of pred
// values become min/max reductions of their s32 words; ordered compares, maximum and minimum of u32
// values (and max/min reductions of them) work on the words with the sign bit flipped, read as s32 (a
// reduce-window with a window on the minor dimension is pool-minor-through-transpose's, run before).
// All rewrites are exact except the order in which add reductions sum.
#pragma once

#include <cstdint>
#include <optional>

#include "compiler/passes/pass.h"

namespace tpu::compiler {

struct CodegenLegalizationOptions {
  // Rows moved onto lanes by a transpose are padded to a multiple of this, so that they split into
  // whole lines: the target's lane count (codegen preparation sets it), or 128, which every
  // configuration's lane count divides.
  int64_t lane_multiple = 128;
};

// kAdd, kMaximum or kMinimum when `reduce` applies that op to the two parameters of its computation;
// kUnknown otherwise.
hlo::HloOpcode ReductionOpcode(const hlo::HloInstruction& reduce);

// The init value of an add, maximum or minimum reduction of f32 or s32 values, as codegen sees it.
struct ReductionInit {
  hlo::HloOpcode op;
  bool integer;                 // s32 values
  std::optional<double> value;  // nullopt: computed at run time

  double IdentityValue() const;  // 0, the lowest value (max) or the highest (min)
  bool IsIdentity() const;
  // op(+0, init) == +0: a reduction that applies the init value to padded lanes keeps them +0.
  bool KeepsPaddingZero() const;
};

class CodegenLegalization : public HloPass {
 public:
  explicit CodegenLegalization(CodegenLegalizationOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "codegen-legalization"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  CodegenLegalizationOptions options_;
};

}  // namespace tpu::compiler
