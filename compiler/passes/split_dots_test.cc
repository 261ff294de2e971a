#include "compiler/passes/split_dots.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using testing::CountOpcode;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;

SplitDotsOptions Forced(int passes, bool only_sensitive_dots = false) {
  SplitDotsOptions options;
  options.passes = passes;
  options.only_sensitive_dots = only_sensitive_dots;
  return options;
}

TEST(SplitDotsTest, SplitsAnF32DotIntoThreeBf16Passes) {
  SplitDots pass(Forced(3));
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
  SplitDots pass(Forced(3));
  testing::PassResult result = ExpectRewrite(pass, kTwoDots, R"(
CHECK: %logits.hi_hi = f32[2,3]{1,0} dot(
CHECK: %plain.hi_hi = f32[2,3]{1,0} dot(
)");
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kDot), 6);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kReducePrecision), 3);  // x, w and v
}

TEST(SplitDotsTest, OnlySensitiveDotsSplitsTheDotsThatReachACompare) {
  SplitDots pass(Forced(3, /*only_sensitive_dots=*/true));
  testing::PassResult result = ExpectRewrite(pass, kTwoDots, R"(
CHECK:     %plain = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w)
CHECK:     %logits.hi_hi = f32[2,3]{1,0} dot(
CHECK:     %positive = pred[2,3]{1,0} compare(f32[2,3]{1,0} %add.{{[0-9]+}}, f32[2,3]{1,0} %zeros), direction=GT
)");
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kDot), 4);
}

TEST(SplitDotsTest, LeavesDotsOfOtherTypesUnchanged) {
  SplitDots pass(Forced(3));
  ExpectUnchanged(pass, R"(HloModule integer

ENTRY %main (x: s32[2,4], w: s32[4,3]) -> s32[2,3] {
  %x = s32[2,4]{1,0} parameter(0)
  %w = s32[4,3]{1,0} parameter(1)
  ROOT %d = s32[2,3]{1,0} dot(s32[2,4]{1,0} %x, s32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
}

// Without a forced count every dot takes the passes its operand_precision asks for, as on a TPU:
// DEFAULT (or none) one, HIGH three, HIGHEST six; the higher operand counts.
TEST(SplitDotsTest, FollowsEachDotsOperandPrecision) {
  SplitDots pass;
  const char* input = R"(HloModule precisions

ENTRY %main (x: f32[2,4], w: f32[4,3]) -> (f32[2,3], f32[2,3], f32[2,3], f32[2,3]) {
  %x = f32[2,4]{1,0} parameter(0)
  %w = f32[4,3]{1,0} parameter(1)
  %none = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %default = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={default,default}
  %high = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={default,high}
  %highest = f32[2,3]{1,0} dot(f32[2,4]{1,0} %x, f32[4,3]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={HIGHEST,high}
  ROOT %t = (f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}, f32[2,3]{1,0}) tuple(%none, %default, %high, %highest)
}
)";
  // x = hi + mid + lo for the six passes: mid = bf16(x - hi), lo = (x - hi) - mid, hi and x - hi shared
  // with the three passes; the products smallest first, each pass without the precision (one bf16 pass).
  const char* checks = R"(
CHECK:      %none = f32[2,3]{1,0} dot(
CHECK:      %default = f32[2,3]{1,0} dot(
CHECK:      %[[XHI:reduce-precision.[0-9]+]] = f32[2,4]{1,0} reduce-precision(f32[2,4]{1,0} %x)
CHECK:      %high.hi_lo = f32[2,3]{1,0} dot(
CHECK:      %[[XREST:subtract.[0-9]+]] = f32[2,4]{1,0} subtract(f32[2,4]{1,0} %x, f32[2,4]{1,0} %[[XHI]])
CHECK:      %high.hi_hi = f32[2,3]{1,0} dot(
CHECK:      %highest.hi_lo = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XHI]],
CHECK-NEXT: %[[XMID:reduce-precision.[0-9]+]] = f32[2,4]{1,0} reduce-precision(f32[2,4]{1,0} %[[XREST]])
CHECK-NEXT: %[[XLO:subtract.[0-9]+]] = f32[2,4]{1,0} subtract(f32[2,4]{1,0} %[[XREST]], f32[2,4]{1,0} %[[XMID]])
CHECK-NEXT: %highest.lo_hi = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XLO]],
CHECK:      %highest.mid_mid = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XMID]],
CHECK:      %highest.hi_mid = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XHI]],
CHECK:      %highest.mid_hi = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XMID]],
CHECK:      %highest.hi_hi = f32[2,3]{1,0} dot(f32[2,4]{1,0} %[[XHI]],
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kDot), 1 + 1 + 3 + 6);
  for (const hlo::HloInstruction* instruction : result.module->entry_computation()->instructions()) {
    // Each pass is one bf16 pass: it carries no precision of its own.
    if (instruction->name().find('.') != std::string::npos && instruction->opcode() == HloOpcode::kDot) {
      EXPECT_EQ(instruction->raw_attribute("operand_precision"), nullptr) << instruction->name();
    }
  }
  // A forced count overrides the precision: one pass leaves every dot as it is.
  SplitDots one_pass(Forced(1));
  ExpectUnchanged(one_pass, input);
}

TEST(SplitDotsTest, PassesForPrecisionReadsTheHigherOperand) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(R"(HloModule p

ENTRY %main (x: f32[2,2]) -> (f32[2,2], f32[2,2], f32[2,2]) {
  %x = f32[2,2]{1,0} parameter(0)
  %a = f32[2,2]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %b = f32[2,2]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={high,default}
  %c = f32[2,2]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={default,highest}
  ROOT %t = (f32[2,2]{1,0}, f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(%a, %b, %c)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  const hlo::HloComputation& entry = *(*module)->entry_computation();
  EXPECT_EQ(PassesForPrecision(*entry.GetInstructionWithName("a")), 1);
  EXPECT_EQ(PassesForPrecision(*entry.GetInstructionWithName("b")), 3);
  EXPECT_EQ(PassesForPrecision(*entry.GetInstructionWithName("c")), 6);
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
