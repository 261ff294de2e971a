// dynamic-slice and dynamic-update-slice whose window covers part of the minor dimension (xs[i] of a
// rank-1 xs in a lax.scan, the stacked per-step scalars ys, x[i] and a.at[i] in fori_loop bodies, and
// their gradients) become forms codegen lowers: it moves whole rows at run-time starts
// (compiler/codegen/dynamic_slice.cc) but cannot shift lanes by a run-time amount.
//
// The rewrite, on an operand [d0, ..., C] with window [w0, ..., wc] (wc < C) at starts (i0, ..., j):
//   - when a non-minor dimension has a partial window, the rows [w0, ..., C] at (i0, ..., 0) are taken
//     first (a row dynamic-slice), the minor window is taken from them (below), and an update writes the
//     rows back with a row dynamic-update-slice at the same starts (both clamp them alike);
//   - on rows X = [S..., C] whose non-minor dimensions are whole, seen as [S, C] (a free reshape):
//       dynamic-slice: X transposed to [C, S], a row dynamic-slice of wc rows at (j, 0), transposed back;
//       dynamic-update-slice of one element per row (wc = 1): select(iota == clamp(j, 0, C-1),
//         broadcast of the update along the minor dimension, X): elementwise, no lane moves;
//       dynamic-update-slice of a wider window: X and the update transposed, a row dynamic-update-slice
//         at (j, 0), transposed back.
// Every start clamps to [0, dimension - size] as XLA defines it (in the row forms by the device, which
// clamps each dimension on its own; the select's clamp explicitly), and values only move or are selected:
// exact for every element type. The select form needs an s32 start (JAX's); others take the transposes.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class DynamicSliceMinorToRows : public HloPass {
 public:
  std::string_view name() const override { return "dynamic-slice-minor-to-rows"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
