// Gathers and scatters as jnp indexing writes them, into the slab form codegen lowers
// (compiler/codegen/gather_scatter.cc: a table [V,R...], s32 indices [N,1], whole slabs at dimension 0).
//
// Forms taken: every indexed dimension (start_index_map / scatter_dims_to_operand_dims) picks one position
// (slice or window size 1), batching dimensions (take_along_axis) pair with the indices' dimensions, and
// every other dimension is read from 0 (a gather's slice of any size) or written whole (a scatter's window
// covers it). That is x[idx] on any rank, x[:, idx] and jnp.take along any axis, x[i, j] with an index
// vector of several positions, x.at[...].set/add/mul/min/max on those, take_along_axis on any axis, and
// their gradients. The rewrite:
//   operand: sliced to the gather's sizes, transposed to [indexed..., batching..., rest...] and reshaped to
//            the table [V, rest...] (V the product of the indexed and batching extents; [V,1] when no
//            dimension is left);
//   indices: the index vector moved last and flattened to [N,k]; with one indexed dimension and no
//            batching one the column is the slab index itself (codegen clamps a gather's index and skips
//            a scatter's outside [0,V-1], as XLA does); otherwise each position is clamped into its
//            dimension (gather) and the positions, with an iota for each batching dimension, are combined
//            into the linear slab index, which for a scatter is -1 (skipped) when any position is outside
//            its dimension, as XLA skips a window that does not fit;
//   result:  the slab gather's [N, rest...] reshaped and transposed into the gather's shape; a scatter's
//            updates transposed to [scatter dims..., window dims...] and reshaped to [N, rest...], the
//            slab scatter's table reshaped and transposed back. The combiner is kept (update order too).
// Indices of other integer types (u32 from jnp.searchsorted, s8, s16, u8, u16, s64) become s32 first, with
// the same effect: narrow ones convert exactly; u32 and u64 take an unsigned minimum with 2^31-1 and s64 a
// clamp to the s32 range before the convert, so an index of 2^31 or more still clamps to the last position
// (gather) or stays outside (scatter) instead of wrapping to a negative one. Gathers and scatters already
// in the slab form get only that convert. The forms of one-hot-gathers (run before, s32 indices) are left
// as they are; so are slices of more than one position along an indexed dimension and scatter windows that
// cover part of a dimension: codegen refuses them with their form.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class RowGathers : public HloPass {
 public:
  std::string_view name() const override { return "row-gathers"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
