// Top-k without a sort, as XLA decomposes TopK: rewrites
//
//   %sort = (f32[R,C], s32[R,C]) sort(f32[R,C] %values, s32[R,C] %iota), dimensions={1}, to_apply=GT
//   slice(get-tuple-element(%sort), index=0), slice={[0:R], [0:k]}   (and the same for index=1)
//
// where %iota is an iota (or a broadcast of one) along dimension 1, the comparator compares its
// parameters 0 and 1 with GT (descending; LT gives ascending) and every use of the sort is such a prefix
// slice, into k rounds of
//
//   m_i = reduce-max(v) over dimension 1           (reduce-min for LT)
//   j_i = reduce-min(select(v == m_i and not taken, iota, C)) over dimension 1   (the first such index)
//                                                  (init values: -inf / +inf and INT32_MAX, the identities)
//   v   = select(iota == j_i, -inf, v)             (+inf for LT), taken |= iota == j_i
//
// and the results concatenated along dimension 0 as [k, R] and transposed to [R, k]. Ties keep the
// lower index first, as the stable sort does. With type=TOTALORDER the rounds run on the s32 keys
// s < 0 ? s ^ 0x7fffffff : s of the words (NaN, infinities and signed zeros in their total-order places,
// exactly); a plain GT/LT gives what max and == make of a NaN. Other sorts stay as they are
// (sort-expansion lowers them).
//
// XLA's `topk(x), k=K, largest=B` (JAX's lax.top_k) is XLA's TopK: the same rounds in the total order on
// f32 values (leading dimensions merged into rows), and for other element types a stable sort of
// (values, positions) along the last dimension in the total order sliced to K.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class TopKRewrite : public HloPass {
 public:
  std::string_view name() const override { return "topk-rewrite"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
