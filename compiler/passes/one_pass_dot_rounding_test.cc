#include "compiler/passes/one_pass_dot_rounding.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using testing::CountOpcode;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;

const char* kDots = R"(HloModule dots

ENTRY %main (x: f32[2,4], w: f32[4,3], b: bf16[4,3]) -> (f32[2,3], f32[2,3], f32[2,3]) {
  %x = f32[2,4]{1,0} parameter(0)
  %w = f32[4,3]{1,0} parameter(1)
  %b = bf16[4,3]{1,0} parameter(2)
  %default = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %high = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={high,high}
  %mixed = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, bf16[4,3]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={high,high}
  ROOT %t = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(%default, %high, %mixed)
}
)";

// A DEFAULT dot reads its f32 operands rounded to bf16; a HIGH one keeps them (split-dots splits it);
// a mixed f32 x bf16 dot is one pass whatever it asks, so its f32 operand is rounded and the bf16 one
// left as it is.
TEST(OnePassDotRoundingTest, RoundsTheOperandsOfOnePassDots) {
  OnePassDotRounding pass;
  testing::PassResult result = ExpectRewrite(pass, kDots, R"(
CHECK:     %[[X:reduce-precision.[0-9]+]] = f32[2,4]{1,0} reduce-precision(f32[2,4]{1,0} %x), exponent_bits=8, mantissa_bits=7
CHECK:     %[[W:reduce-precision.[0-9]+]] = f32[4,3]{1,0} reduce-precision(f32[4,3]{1,0} %w), exponent_bits=8, mantissa_bits=7
CHECK:     %default = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[X]], f32[4,3]{1,0} %[[W]])
CHECK:     %high = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w)
CHECK:     %mixed = f32[2,3]{1,0} dot(f32[2,4]{1,0} %reduce-precision.{{[0-9]+}}, bf16[4,3]{1,0} %b)
)");
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kReducePrecision), 3);
}

// A forced count overrides the precision: with 3 passes only the mixed dot is rounded, with 1 all.
TEST(OnePassDotRoundingTest, AForcedCountOverridesThePrecision) {
  OnePassDotRounding three(3);
  testing::PassResult result = ExpectRewrite(three, kDots, "CHECK: %mixed");
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kReducePrecision), 1);
  OnePassDotRounding one(1);
  result = ExpectRewrite(one, kDots, "CHECK: %high");
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kReducePrecision), 5);
}

TEST(OnePassDotRoundingTest, LeavesModulesWithoutOnePassDotsAlone) {
  OnePassDotRounding pass;
  ExpectUnchanged(pass, R"(HloModule high

ENTRY %main (x: f32[2,4], w: f32[4,3]) -> f32[2,3] {
  %x = f32[2,4]{1,0} parameter(0)
  %w = f32[4,3]{1,0} parameter(1)
  ROOT %d = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={highest,highest}
}
)");
}

}  // namespace
}  // namespace tpu::compiler
