#include "compiler/codegen/prepare.h"

#include <string>

#include "compiler/passes/arg_reductions.h"
#include "compiler/passes/bf16_normalization.h"
#include "compiler/passes/f16_normalization.h"
#include "compiler/passes/f16_rounding_expansion.h"
#include "compiler/passes/integer_normalization.h"
#include "compiler/passes/remainder_expansion.h"
#include "compiler/passes/atan2_expansion.h"
#include "compiler/passes/elementwise_expansion.h"
#include "compiler/passes/integer_division_expansion.h"
#include "compiler/passes/canonicalize_dots.h"
#include "compiler/passes/codegen_legalization.h"
#include "compiler/passes/convolution_lowering.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/dynamic_slice_minor_to_rows.h"
#include "compiler/passes/expand_tuples.h"
#include "compiler/passes/flatten_rows_through_columns.h"
#include "compiler/passes/fold_parameter_independent.h"
#include "compiler/passes/inline_calls_and_fusions.h"
#include "compiler/passes/matrix_dots.h"
#include "compiler/passes/one_hot_gathers.h"
#include "compiler/passes/pool_minor_through_transpose.h"
#include "compiler/passes/reduce_minor_through_transpose.h"
#include "compiler/passes/reshape_through_transpose.h"
#include "compiler/passes/row_gathers.h"
#include "compiler/passes/rng_bit_generator_expansion.h"
#include "compiler/passes/split_dots.h"
#include "compiler/passes/elementwise_fusion.h"
#include "compiler/codegen/loop_fusion.h"
#include "compiler/passes/s64_range_check.h"
#include "compiler/passes/sort_expansion.h"
#include "compiler/passes/tuple_all_reduces.h"
#include "compiler/passes/split_variadic_reduces.h"
#include "compiler/passes/topk_rewrite.h"
#include "compiler/passes/unshare_computations.h"

namespace tpu::compiler {

Status AddPrepareForCodegenPasses(PassPipeline* pipeline, const PrepareOptions& options) {
  if (options.lanes <= 0) {
    return InvalidArgument("PrepareOptions: lanes must be > 0, not " + std::to_string(options.lanes));
  }
  if (options.dots.passes != 0 && options.dots.passes != 1 && options.dots.passes != 3 && options.dots.passes != 6) {
    return InvalidArgument("dot_passes must be 0, 1, 3 or 6, not " + std::to_string(options.dots.passes));
  }
  pipeline->AddPass<InlineCallsAndFusions>();
  // Conditions, bodies and branches are lowered in line: one computation each.
  pipeline->AddPass<UnshareComputations>();
  // Top-k sorts become reductions; other sorts a sorting network in a loop whose element types the
  // normalizations below handle.
  pipeline->AddPass<TopKRewrite>();
  pipeline->AddPass<SortExpansion>();
  // Before integer-normalization, which then widens the narrow arithmetic on u8 and u16 bits like any other.
  pipeline->AddPass<RngBitGeneratorExpansion>();
  pipeline->AddPass<Bf16Normalization>();
  pipeline->AddPass<F16Normalization>();
  pipeline->AddPass<IntegerNormalization>();
  pipeline->AddPass<RemainderExpansion>();
  pipeline->AddPass<Atan2Expansion>();
  // After integer-normalization: the narrow types' bit counts are written on their 32-bit words here.
  pipeline->AddPass<ElementwiseExpansion>();
  pipeline->AddPass<IntegerDivisionExpansion>();
  // Outputs, next loop states and branch results as tuples of values (compiler/codegen/control_flow.cc).
  pipeline->AddPass<ExpandTuples>();
  // Convolutions become dots and multiply-adds; their constant parts (kernel taps) are folded by
  // fold-parameter-independent below.
  ConvolutionLoweringOptions convolution_options;
  convolution_options.keep_depthwise_windows = true;
  convolution_options.lanes = options.lanes;
  pipeline->AddPass<ConvolutionLowering>(convolution_options);
  // Before legalization, which takes apart the transposes of rank 3 and more this adds.
  pipeline->AddPass<MatrixDots>();
  pipeline->AddPass<OneHotGathers>();
  // The other gathers and scatters as slab gathers; before legalization, which takes apart the transposes.
  pipeline->AddPass<RowGathers>();
  pipeline->AddPass<ArgReductions>();
  pipeline->AddPass<SplitVariadicReduces>();
  pipeline->AddPass<TupleAllReduces>(options.lanes);
  pipeline->AddPass<PoolMinorThroughTranspose>();
  // Before legalization and reshape-through-transpose, which lower the transposes and reshapes this adds.
  pipeline->AddPass<DynamicSliceMinorToRows>();
  pipeline->AddPass<CodegenLegalization>(CodegenLegalizationOptions{options.lanes});
  pipeline->AddPass<CanonicalizeDots>();
  // Before reshape-through-transpose, which turns the column this leaves into the row.
  pipeline->AddPass<FlattenRowsThroughColumns>();
  pipeline->AddPass<ReshapeThroughTranspose>();
  pipeline->AddPass<ReduceMinorThroughTranspose>();
  pipeline->AddPass<FoldParameterIndependent>();
  // After folding: what the interpreter computed exactly at compile time is not the device's business.
  pipeline->AddPass<S64RangeCheck>();
  // One pass per dot (dot_passes 1) needs no rewrite: codegen rounds the operands to bf16.
  if (options.dots.passes != 1) pipeline->AddPass<SplitDots>(options.dots);
  // Last: every f32 -> f16 convert, whichever pass wrote it (f16-normalization's roundings, ...), as VPU
  // arithmetic; constants were folded above.
  pipeline->AddPass<F16RoundingExpansion>();
  // Last but dce: chains of elementwise work as one VPU loop each, their values in VMEM (loop_fusion.h).
  if (options.fuse_elementwise) {
    ElementwiseFusionOptions fusion;
    fusion.fusible = IsLoopFusible;
    fusion.copy_in = LoopFusionReadsBroadcast;
    pipeline->AddPass<ElementwiseFusion>(std::move(fusion));
  }
  pipeline->AddPass<DeadCodeElimination>();
  return OkStatus();
}

StatusOr<std::unique_ptr<hlo::HloModule>> PrepareForCodegen(const hlo::HloModule& module,
                                                            const PrepareOptions& options) {
  if (module.entry_computation() == nullptr) {
    return InvalidArgument("module " + module.name() + " has no entry computation");
  }
  PassPipeline pipeline("prepare-for-codegen");
  TPU_RETURN_IF_ERROR(AddPrepareForCodegenPasses(&pipeline, options));
  if (options.after_pass) pipeline.set_after_pass_hook(options.after_pass);
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> copy, hlo::CloneModule(module));
  TPU_RETURN_IF_ERROR(pipeline.Run(copy.get()).status());
  return copy;
}

}  // namespace tpu::compiler
