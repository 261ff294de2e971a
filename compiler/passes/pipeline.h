// The default optimization pipeline the compiler runs between parsing/verifying and codegen:
//
//   call-inliner -> constant-folding -> algebraic-simplifier -> cse -> dce
//   -> relu-fusion -> elementwise-fusion -> dce
//
// Inlining first so every later pass sees one flat computation; folding before simplification so x*1
// with a folded 1 is caught; CSE after both so rewritten duplicates merge; DCE removes what they leave
// (and computations nothing calls any more); fusion last, on the cleaned graph, ReLU fusion before the
// general elementwise fusion so the MAX-with-zero form codegen recognizes survives.
#pragma once

#include <cstdint>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/passes/pass.h"
#include "sw/base/status.h"

namespace tpu::compiler {

struct PipelineOptions {
  bool inline_calls = true;
  bool fold_constants = true;
  int64_t max_folded_elements = 4096;  // larger constant results are not materialized
  bool simplify = true;
  bool cse = true;
  bool relu_fusion = true;
  // General kLoop fusion of elementwise chains. Codegen that lowers only ReLU fusions turns this off.
  bool fuse_elementwise = true;
  // Runs the verifier after every pass (the failing pass is named); off, the result is verified once.
  bool verify_each_pass = false;
};

// Runs the default pipeline; `after_pass` (may be empty) sees the module after each pass, e.g. to dump
// it. The module is verified first (its errors are returned as they are, prefixed), at the end, and
// after each pass with verify_each_pass. Returns whether anything changed.
StatusOr<bool> RunDefaultPipeline(hlo::HloModule* module, const PipelineOptions& options,
                                  PassPipeline::AfterPassHook after_pass = nullptr);

// Adds the passes RunDefaultPipeline runs, in its order, to `pipeline`.
void AddPipelinePasses(PassPipeline* pipeline, const PipelineOptions& options);

}  // namespace tpu::compiler
