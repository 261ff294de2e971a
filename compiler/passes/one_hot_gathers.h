// Gathers and scatters that pick one element along one dimension c of an operand P -- at a position per
// row (take_along_axis with batching dimensions: the probability of each integer label in a cross-entropy,
// and its gradient) or at one position for all (a dynamic slice along c, as jnp indexing writes it) --
// become elementwise selections on P's shape, exact:
//   gather:  reduce-max over c of select(iota_c == clamp(index), P, -inf)     (the one element)
//   scatter: select(iota_c == index, P + update, P)                           (combiner add; an index
//                                                                              out of range matches nothing)
// The index is broadcast from its row to P's shape. Forms recognized: collapsed_slice_dims =
// start_index_map = {c} (inserted_window_dims = scatter_dims_to_operand_dims = {c}) with either every other
// dimension a batching dimension paired in order with the indices' (one index per row, [..., 1, 1]
// indices), or a single index ([1], index_vector_dim=0) and every other dimension whole. f32 and s32.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class OneHotGathers : public HloPass {
 public:
  std::string_view name() const override { return "one-hot-gathers"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
