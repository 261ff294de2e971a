#include "compiler/passes/one_hot_gathers.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// The label's logit of each row (optax's cross-entropy with integer labels).
TEST(OneHotGathersTest, TakeAlongTheLastAxisIsAMaskedMaxReduce) {
  OneHotGathers pass;
  const char* input = R"(HloModule take

ENTRY %main (logits: f32[4,8,50], labels: s32[4,8,1,1]) -> f32[4,8,1] {
  %logits = f32[4,8,50]{2,1,0} parameter(0)
  %labels = s32[4,8,1,1]{3,2,1,0} parameter(1)
  ROOT %g = f32[4,8,1]{2,1,0} gather(f32[4,8,50]{2,1,0} %logits, s32[4,8,1,1]{3,2,1,0} %labels), offset_dims={}, collapsed_slice_dims={2}, start_index_map={2}, operand_batching_dims={0,1}, start_indices_batching_dims={0,1}, index_vector_dim=3, slice_sizes={1,1,1}
}
)";
  const char* checks = R"(
CHECK:      %[[I:reshape.[0-9]+]] = s32[4,8]{1,0} reshape(s32[4,8,1,1]{3,2,1,0} %labels)
CHECK:      %[[C:clamp.[0-9]+]] = s32[4,8]{1,0} clamp(s32[] %{{constant.[0-9]+}}, s32[4,8]{1,0} %[[I]], s32[] %{{constant.[0-9]+}})
CHECK:      %[[IOTA:iota.[0-9]+]] = s32[4,8,50]{2,1,0} iota(), iota_dimension=2
CHECK-NEXT: %[[AT:broadcast.[0-9]+]] = s32[4,8,50]{2,1,0} broadcast(s32[4,8]{1,0} %[[C]]), dimensions={0,1}
CHECK-NEXT: %[[M:compare.[0-9]+]] = pred[4,8,50]{2,1,0} compare(s32[4,8,50]{2,1,0} %[[IOTA]], s32[4,8,50]{2,1,0} %[[AT]]), direction=EQ
CHECK:      select(pred[4,8,50]{2,1,0} %[[M]], f32[4,8,50]{2,1,0} %logits,
CHECK:      f32[4,8]{1,0} reduce({{.*}}), dimensions={2}, to_apply=%reducer_maximum_f32
CHECK:      ROOT {{.*}} = f32[4,8,1]{2,1,0} reshape(
)";
  ExpectRewrite(pass, input, checks);
}

// Its gradient: the update added where the label is, nothing elsewhere (an index out of range matches no
// position, as a scatter skips it).
TEST(OneHotGathersTest, ScatterAddAtOneIndexPerRowIsAMaskedAdd) {
  OneHotGathers pass;
  const char* input = R"(HloModule scatter

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (zeros: f32[4,8,50], labels: s32[4,8,1,1], g: f32[4,8,1]) -> f32[4,8,50] {
  %zeros = f32[4,8,50]{2,1,0} parameter(0)
  %labels = s32[4,8,1,1]{3,2,1,0} parameter(1)
  %g = f32[4,8,1]{2,1,0} parameter(2)
  ROOT %s = f32[4,8,50]{2,1,0} scatter(f32[4,8,50]{2,1,0} %zeros, s32[4,8,1,1]{3,2,1,0} %labels, f32[4,8,1]{2,1,0} %g), update_window_dims={}, inserted_window_dims={2}, scatter_dims_to_operand_dims={2}, input_batching_dims={0,1}, scatter_indices_batching_dims={0,1}, index_vector_dim=3, to_apply=%add
}
)";
  const char* checks = R"(
CHECK:      compare(
CHECK-NOT:  clamp
CHECK:      %[[U:reshape.[0-9]+]] = f32[4,8]{1,0} reshape(f32[4,8,1]{2,1,0} %g)
CHECK-NEXT: %[[B:broadcast.[0-9]+]] = f32[4,8,50]{2,1,0} broadcast(f32[4,8]{1,0} %[[U]]), dimensions={0,1}
CHECK-NEXT: %[[A:add.[0-9]+]] = f32[4,8,50]{2,1,0} add(f32[4,8,50]{2,1,0} %zeros, f32[4,8,50]{2,1,0} %[[B]])
CHECK-NEXT: ROOT {{.*}} = f32[4,8,50]{2,1,0} select(pred[4,8,50]{2,1,0} %{{compare.[0-9]+}}, f32[4,8,50]{2,1,0} %[[A]], f32[4,8,50]{2,1,0} %zeros)
)";
  ExpectRewrite(pass, input, checks);
}

TEST(OneHotGathersTest, RowGathersAreLeftToCodegen) {
  OneHotGathers pass;
  ExpectUnchanged(pass, R"(HloModule rows

ENTRY %main (table: f32[50,16], ids: s32[4,8,1]) -> f32[4,8,16] {
  %table = f32[50,16]{1,0} parameter(0)
  %ids = s32[4,8,1]{2,1,0} parameter(1)
  ROOT %g = f32[4,8,16]{2,1,0} gather(f32[50,16]{1,0} %table, s32[4,8,1]{2,1,0} %ids), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,16}
}
)");
}

}  // namespace
}  // namespace tpu::compiler
