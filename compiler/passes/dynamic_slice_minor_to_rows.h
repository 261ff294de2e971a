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
// In loops (a scan over vectors, its reverse scan for the gradient) the transposes leave the steps:
//   - a state element the body passes on unchanged and transposes to slice it (xs) is transposed once
//     before the loop and carried as one more state element;
//   - a state element the body only writes windows of part of its minor dimension into and passes on
//     (the stacked ys), which the condition does not read, is carried as its columns [C, S]: transposed
//     before the loop, a row dynamic-update-slice at (j, 0) per step, transposed back after it.
//   Both need an initial state that is a tuple instruction and only get-tuple-elements as the loop's users.
// Every start clamps to [0, dimension - size] as XLA defines it (in the row forms by the device, which
// clamps each dimension on its own; the select's clamp explicitly), and values only move or are selected:
// exact for every element type. The select form needs an s32 start (JAX's); others take the transposes.
// Cost on tiny, a scan of 100 steps over f32[100] (compiler/codegen/README.md): 101 531 cycles.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

class DynamicSliceMinorToRows : public HloPass {
 public:
  std::string_view name() const override { return "dynamic-slice-minor-to-rows"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
};

}  // namespace tpu::compiler
