#include "compiler/passes/split_dots.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using testing::CountOpcode;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(SplitDotsTest, SplitsAnF32DotIntoThreeBf16Passes) {
  SplitDots pass;
  const char* input = R"(HloModule dense

ENTRY %main (x: f32[2,4], w: f32[4,3]) -> f32[2,3] {
  %x = f32[2,4]{1,0} parameter(0)
  %w = f32[4,3]{1,0} parameter(1)
  ROOT %d = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  // x_hi = bf16(x), x_lo = x - x_hi (the same for w); hi*lo + lo*hi first, then hi*hi.
  const char* checks = R"(
CHECK:      %[[XHI:reduce-precision.[0-9]+]] = f32[2,4]{1,0} reduce-precision(f32[2,4]{1,0} %x), exponent_bits=8, mantissa_bits=7
CHECK-NEXT: %[[XLO:subtract.[0-9]+]] = f32[2,4]{1,0} subtract(f32[2,4]{1,0} %x, f32[2,4]{1,0} %[[XHI]])
CHECK-NEXT: %[[WHI:reduce-precision.[0-9]+]] = f32[4,3]{1,0} reduce-precision(f32[4,3]{1,0} %w), exponent_bits=8, mantissa_bits=7
CHECK-NEXT: %[[WLO:subtract.[0-9]+]] = f32[4,3]{1,0} subtract(f32[4,3]{1,0} %w, f32[4,3]{1,0} %[[WHI]])
CHECK-NEXT: %d.hi_lo = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XHI]], f32[4,3]{1,0} %[[WLO]]), lhs_contracting_dims={1}, rhs_contracting_dims={0}
CHECK-NEXT: %d.lo_hi = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XLO]], f32[4,3]{1,0} %[[WHI]]), lhs_contracting_dims={1}, rhs_contracting_dims={0}
CHECK-NEXT: %d.hi_hi = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XHI]], f32[4,3]{1,0} %[[WHI]]), lhs_contracting_dims={1}, rhs_contracting_dims={0}
CHECK-NEXT: %[[SMALL:add.[0-9]+]] = f32[2,3]{1,0} add(f32[2,3]{1,0} %d.hi_lo, f32[2,3]{1,0} %d.lo_hi)
CHECK-NEXT: ROOT %add.{{[0-9]+}} = f32[2,3]{1,0} add(f32[2,3]{1,0} %[[SMALL]], f32[2,3]{1,0} %d.hi_hi)
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kDot), 3);
}

const char* kTwoDots = R"(HloModule two_dots

ENTRY %main (x: f32[2,4], w: f32[4,3], v: f32[4,3]) -> (f32[2,3], pred[2,3]) {
  %x = f32[2,4]{1,0} parameter(0)
  %w = f32[4,3]{1,0} parameter(1)
  %v = f32[4,3]{1,0} parameter(2)
  %plain = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %logits = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %zeros = f32[2,3]{1,0} broadcast(f32[] %zero), dimensions={}
  %positive = pred[2,3]{1,0} compare(f32[2,3]{1,0} %logits, f32[2,3]{1,0} %zeros), direction=GT
  ROOT %t = (f32[2,3]{1,0}, pred[2,3]{1,0}) tuple(f32[2,3]{1,0} %plain, pred[2,3]{1,0} %positive)
}
)";

TEST(SplitDotsTest, SplitsEveryDotAndSplitsASharedOperandOnce) {
  SplitDots pass;
  testing::PassResult result = ExpectRewrite(pass, kTwoDots, R"(
CHECK: %logits.hi_hi = f32[2,3]{1,0} dot(
CHECK: %plain.hi_hi = f32[2,3]{1,0} dot(
)");
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kDot), 6);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kReducePrecision), 3);  // x, w and v
}

TEST(SplitDotsTest, OnlySensitiveDotsSplitsTheDotsThatReachACompare) {
  SplitDots pass(SplitDotsOptions{/*only_sensitive_dots=*/true});
  testing::PassResult result = ExpectRewrite(pass, kTwoDots, R"(
CHECK:     %plain = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w)
CHECK:     %logits.hi_hi = f32[2,3]{1,0} dot(
CHECK:     %positive = pred[2,3]{1,0} compare(f32[2,3]{1,0} %add.{{[0-9]+}}, f32[2,3]{1,0} %zeros), direction=GT
)");
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kDot), 4);
}

TEST(SplitDotsTest, LeavesDotsOfOtherTypesUnchanged) {
  SplitDots pass;
  ExpectUnchanged(pass, R"(HloModule integer

ENTRY %main (x: s32[2,4], w: s32[4,3]) -> s32[2,3] {
  %x = s32[2,4]{1,0} parameter(0)
  %w = s32[4,3]{1,0} parameter(1)
  ROOT %d = s32[2,3]{1,0} dot(s32[2,4]{1,0} %x, s32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
}

TEST(SplitDotsTest, IsBf16RoundingRecognizesTheRoundingItInserts) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(R"(HloModule rounding

ENTRY %main (x: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %bf16 = f32[4]{0} reduce-precision(f32[4]{0} %x), exponent_bits=8, mantissa_bits=7
  %fp16 = f32[4]{0} reduce-precision(f32[4]{0} %x), exponent_bits=5, mantissa_bits=10
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %bf16, f32[4]{0} %fp16)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  const hlo::HloComputation& entry = *(*module)->entry_computation();
  EXPECT_TRUE(IsBf16Rounding(*entry.GetInstructionWithName("bf16")));
  EXPECT_FALSE(IsBf16Rounding(*entry.GetInstructionWithName("fp16")));
  EXPECT_FALSE(IsBf16Rounding(*entry.GetInstructionWithName("x")));
}

}  // namespace
}  // namespace tpu::compiler
