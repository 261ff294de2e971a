#include "compiler/passes/fold_parameter_independent.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using testing::CountOpcode;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(FoldParameterIndependentTest, FoldsChainsOfValuesThatNeedNoParameter) {
  FoldParameterIndependent pass;
  const char* input = R"(HloModule mask

ENTRY %main (x: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3]{1,0} parameter(0)
  %iota = s32[2,3]{1,0} iota(), iota_dimension=1
  %one = s32[] constant(1)
  %ones = s32[2,3]{1,0} broadcast(s32[] %one), dimensions={}
  %mask = pred[2,3]{1,0} compare(s32[2,3]{1,0} %iota, s32[2,3]{1,0} %ones), direction=GE
  %zero = f32[] constant(0)
  %zeros = f32[2,3]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %masked = f32[2,3]{1,0} select(pred[2,3]{1,0} %mask, f32[2,3]{1,0} %x, f32[2,3]{1,0} %zeros)
}
)";
  // The iota, the s32 broadcast and the compare fold in one walk into the mask; the f32 splat of a scalar
  // stays for codegen.
  const char* checks = R"(
CHECK-NOT:  iota
CHECK:      %zeros = f32[2,3]{1,0} broadcast(f32[] %zero), dimensions={}
CHECK-NEXT: %[[MASK:constant.[0-9]+]] = pred[2,3]{1,0} constant({ {false, true, true}, {false, true, true} })
CHECK-NEXT: ROOT %masked = f32[2,3]{1,0} select(pred[2,3]{1,0} %[[MASK]], f32[2,3]{1,0} %x, f32[2,3]{1,0} %zeros)
CHECK-NOT:  compare
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kCompare), 0);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kBroadcast), 1);
}

TEST(FoldParameterIndependentTest, FoldsAReduceOfConstants) {
  FoldParameterIndependent pass;
  const char* input = R"(HloModule mean

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[3]) -> f32[3] {
  %x = f32[3]{0} parameter(0)
  %dims = f32[2]{0} constant({2, 3})
  %zero = f32[] constant(0)
  %count = f32[] reduce(f32[2]{0} %dims, f32[] %zero), dimensions={0}, to_apply=%add
  %counts = f32[3]{0} broadcast(f32[] %count), dimensions={}
  ROOT %mean = f32[3]{0} divide(f32[3]{0} %x, f32[3]{0} %counts)
}
)";
  // The reduce folds into a scalar f32 constant, whose broadcast is then a splat codegen keeps.
  const char* checks = R"(
CHECK:      %[[COUNT:constant.[0-9]+]] = f32[] constant(5)
CHECK-NEXT: %counts = f32[3]{0} broadcast(f32[] %[[COUNT]]), dimensions={}
CHECK-NOT:  reduce(
)";
  ExpectRewrite(pass, input, checks);
}

TEST(FoldParameterIndependentTest, KeepsSplatsRowBroadcastsAndParameterDependentValues) {
  FoldParameterIndependent pass;
  ExpectUnchanged(pass, R"(HloModule kept

ENTRY %main (x: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3]{1,0} parameter(0)
  %bias = f32[3]{0} constant({1, 2, 3})
  %biases = f32[2,3]{1,0} broadcast(f32[3]{0} %bias), dimensions={1}
  %two = f32[] constant(2)
  %twos = f32[2,3]{1,0} broadcast(f32[] %two), dimensions={}
  %scaled = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %x, f32[2,3]{1,0} %twos)
  ROOT %shifted = f32[2,3]{1,0} add(f32[2,3]{1,0} %scaled, f32[2,3]{1,0} %biases)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
