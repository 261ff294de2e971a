#include "compiler/passes/pipeline.h"

#include <string>
#include <utility>

#include "compiler/hlo/verifier.h"
#include "compiler/passes/algebraic_simplifier.h"
#include "compiler/passes/call_inliner.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/cse.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/passes/relu_fusion.h"

namespace tpu::compiler {

void AddPipelinePasses(PassPipeline* pipeline, const PipelineOptions& options) {
  if (options.inline_calls) pipeline->AddPass<CallInliner>();
  if (options.fold_constants) pipeline->AddPass<ConstantFolding>(options.max_folded_elements);
  if (options.simplify) pipeline->AddPass<AlgebraicSimplifier>();
  if (options.cse) pipeline->AddPass<CommonSubexpressionElimination>();
  pipeline->AddPass<DeadCodeElimination>();
  if (options.relu_fusion) pipeline->AddPass<ReluFusion>();
  if (options.fuse_elementwise) pipeline->AddPass<ElementwiseFusion>();
  if (options.relu_fusion || options.fuse_elementwise) pipeline->AddPass<DeadCodeElimination>();
}

StatusOr<bool> RunDefaultPipeline(hlo::HloModule* module, const PipelineOptions& options,
                                  PassPipeline::AfterPassHook after_pass) {
  if (module == nullptr) return InvalidArgument("RunDefaultPipeline: no module");
  // Passes assume well-formed IR: bad input gets the verifier's error, not a pass's confusion.
  Status input = hlo::VerifyHloModule(*module);
  if (!input.ok()) return Status(input.code(), "the module does not verify before the pipeline: " + input.message());
  PassPipeline pipeline("default");
  AddPipelinePasses(&pipeline, options);
  pipeline.set_after_pass_hook([&](int index, std::string_view pass_name, bool changed,
                                   const hlo::HloModule& after) -> Status {
    if (options.verify_each_pass) {
      Status status = hlo::VerifyHloModule(after);
      if (!status.ok())
        return Status(status.code(), "the module does not verify after " + std::string(pass_name) + ": " +
                                         status.message());
    }
    return after_pass ? after_pass(index, pass_name, changed, after) : OkStatus();
  });
  TPU_ASSIGN_OR_RETURN(bool changed, pipeline.Run(module));
  if (!options.verify_each_pass) {
    Status status = hlo::VerifyHloModule(*module);
    if (!status.ok())
      return Status(status.code(), "the module does not verify after the pipeline: " + status.message());
  }
  return changed;
}

}  // namespace tpu::compiler
