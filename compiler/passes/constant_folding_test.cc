#include "compiler/passes/constant_folding.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::RunPassOnText;

TEST(ConstantFoldingTest, FoldsIotaConvertsAndArithmeticOnConstants) {
  const char* input = R"(HloModule fold

ENTRY %main (x: f32[4]) -> (f32[4], s32[2,3]) {
  %x = f32[4]{0} parameter(0)
  %iota = s32[4]{0} iota(), iota_dimension=0
  %as_float = f32[4]{0} convert(s32[4]{0} %iota)
  %two = f32[4]{0} constant({2, 2, 2, 2})
  %scaled = f32[4]{0} multiply(f32[4]{0} %as_float, f32[4]{0} %two)
  %y = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %scaled)
  %row = s32[3]{0} constant({1, 2, 3})
  %rows = s32[2,3]{1,0} broadcast(s32[3]{0} %row), dimensions={1}
  ROOT %t = (f32[4]{0}, s32[2,3]{1,0}) tuple(f32[4]{0} %y, s32[2,3]{1,0} %rows)
}
)";
  const char* expected = R"(HloModule fold

ENTRY %main (x: f32[4]) -> (f32[4], s32[2,3]) {
  %x = f32[4]{0} parameter(0)
  %scaled = f32[4]{0} constant({0, 2, 4, 6})
  %y = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %scaled)
  %rows = s32[2,3]{1,0} constant({ {1, 2, 3}, {1, 2, 3} })
  ROOT %t = (f32[4]{0}, s32[2,3]{1,0}) tuple(f32[4]{0} %y, s32[2,3]{1,0} %rows)
}

)";
  ConstantFolding pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(ConstantFoldingTest, KeepsScalarBroadcastsLargeResultsElidedConstantsAndParameters) {
  const char* input = R"(HloModule keep

ENTRY %main (x: f32[4]) -> (f32[4], s32[64,64], f32[2], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %one = f32[] constant(1)
  %ones = f32[4]{0} broadcast(f32[] %one), dimensions={}
  %big = s32[64,64]{1,0} iota(), iota_dimension=1
  %elided = f32[2]{0} constant({...})
  %neg = f32[2]{0} negate(f32[2]{0} %elided)
  %sum = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %ones)
  ROOT %t = (f32[4]{0}, s32[64,64]{1,0}, f32[2]{0}, f32[4]{0}) tuple(f32[4]{0} %ones, s32[64,64]{1,0} %big, f32[2]{0} %neg, f32[4]{0} %sum)
}
)";
  ConstantFolding pass(/*max_elements=*/1024);
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}

}  // namespace
}  // namespace tpu::compiler
