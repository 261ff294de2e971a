#include "compiler/passes/relu_fusion.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::RunPassOnText;

TEST(ReluFusionTest, FusesMaximumWithABroadcastZero) {
  const char* input = R"(HloModule relu

ENTRY %main (x: f32[4,8]) -> f32[4,8] {
  %x = f32[4,8]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %b = f32[4,8]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %max = f32[4,8]{1,0} maximum(f32[4,8]{1,0} %x, f32[4,8]{1,0} %b)
}
)";
  const char* expected = R"(HloModule relu

ENTRY %main (x: f32[4,8]) -> f32[4,8] {
  %x = f32[4,8]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %b = f32[4,8]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %relu.max = f32[4,8]{1,0} fusion(f32[4,8]{1,0} %x), kind=kLoop, calls=%fused_relu.max
}

%fused_relu.max (param_0: f32[4,8]) -> f32[4,8] {
  %param_0 = f32[4,8]{1,0} parameter(0)
  %constant = f32[] constant(0)
  %broadcast = f32[4,8]{1,0} broadcast(f32[] %constant), dimensions={}
  ROOT %maximum = f32[4,8]{1,0} maximum(f32[4,8]{1,0} %param_0, f32[4,8]{1,0} %broadcast)
}

)";
  ReluFusion pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(ReluFusionTest, FusesTheBroadcastOnEitherSideAndKeepsOtherUsers) {
  const char* input = R"(HloModule relu_left

ENTRY %main (x: f32[3]) -> (f32[3], f32[3]) {
  %x = f32[3]{0} parameter(0)
  %zero = f32[] constant(0)
  %b = f32[3]{0} broadcast(f32[] %zero), dimensions={}
  %max = f32[3]{0} maximum(f32[3]{0} %b, f32[3]{0} %x)
  %sum = f32[3]{0} add(f32[3]{0} %x, f32[3]{0} %b)
  ROOT %t = (f32[3]{0}, f32[3]{0}) tuple(f32[3]{0} %max, f32[3]{0} %sum)
}
)";
  ReluFusion pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_NE(result.printed.find("%relu.max = f32[3]{0} fusion(f32[3]{0} %x), kind=kLoop, calls=%fused_relu.max"),
            std::string::npos)
      << result.printed;
  // The add still reads the broadcast.
  EXPECT_NE(result.printed.find("%sum = f32[3]{0} add(f32[3]{0} %x, f32[3]{0} %b)"), std::string::npos);
  EXPECT_NE(result.printed.find("tuple(f32[3]{0} %relu.max, f32[3]{0} %sum)"), std::string::npos);
}

TEST(ReluFusionTest, LeavesOtherMaximumsAlone) {
  const char* input = R"(HloModule not_relu

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4], s32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %one = f32[] constant(1)
  %b = f32[4]{0} broadcast(f32[] %one), dimensions={}
  %max_one = f32[4]{0} maximum(f32[4]{0} %x, f32[4]{0} %b)
  %max_xy = f32[4]{0} maximum(f32[4]{0} %x, f32[4]{0} %y)
  %izero = s32[] constant(0)
  %ib = s32[4]{0} broadcast(s32[] %izero), dimensions={}
  %iy = s32[4]{0} convert(f32[4]{0} %y)
  %imax = s32[4]{0} maximum(s32[4]{0} %iy, s32[4]{0} %ib)
  ROOT %t = (f32[4]{0}, f32[4]{0}, s32[4]{0}) tuple(f32[4]{0} %max_one, f32[4]{0} %max_xy, s32[4]{0} %imax)
}
)";
  ReluFusion pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}

}  // namespace
}  // namespace tpu::compiler
