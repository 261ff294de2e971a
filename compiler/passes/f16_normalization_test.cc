#include "compiler/passes/f16_normalization.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(F16NormalizationTest, F16ArithmeticRunsInF32AndRoundsBack) {
  F16Normalization pass;
  const char* input = R"(HloModule f16

ENTRY %main (a: f16[4,8], b: f16[4,8]) -> (f16[4,8], pred[4,8]) {
  %a = f16[4,8]{1,0} parameter(0)
  %b = f16[4,8]{1,0} parameter(1)
  %s = f16[4,8]{1,0} divide(f16[4,8]{1,0} %a, f16[4,8]{1,0} %b)
  %m = f16[4,8]{1,0} maximum(f16[4,8]{1,0} %s, f16[4,8]{1,0} %a)
  %lt = pred[4,8]{1,0} compare(f16[4,8]{1,0} %m, f16[4,8]{1,0} %b), direction=LT
  %sel = f16[4,8]{1,0} select(pred[4,8]{1,0} %lt, f16[4,8]{1,0} %m, f16[4,8]{1,0} %a)
  ROOT %r = (f16[4,8], pred[4,8]) tuple(f16[4,8]{1,0} %sel, pred[4,8]{1,0} %lt)
}
)";
  const char* checks = R"(
CHECK:      %[[A:convert.[0-9]+]] = f32[4,8] convert(f16[4,8]{1,0} %a)
CHECK-NEXT: %[[B:convert.[0-9]+]] = f32[4,8] convert(f16[4,8]{1,0} %b)
CHECK-NEXT: %[[S:s.[0-9]+]] = f32[4,8] divide(f32[4,8] %[[A]], f32[4,8] %[[B]])
CHECK-NEXT: %[[SH:convert.[0-9]+]] = f16[4,8] convert(f32[4,8] %[[S]])
CHECK-NEXT: %[[SF:convert.[0-9]+]] = f32[4,8] convert(f16[4,8] %[[SH]])
CHECK:      %[[M:m.[0-9]+]] = f32[4,8] maximum(f32[4,8] %[[SF]], f32[4,8] %{{convert.[0-9]+}})
CHECK-NEXT: %[[MH:convert.[0-9]+]] = f16[4,8] convert(f32[4,8] %[[M]])
CHECK:      %[[LT:lt.[0-9]+]] = pred[4,8]{1,0} compare(f32[4,8] %{{convert.[0-9]+}}, f32[4,8] %{{convert.[0-9]+}}), direction=LT
CHECK:      %sel = f16[4,8]{1,0} select(pred[4,8]{1,0} %[[LT]], f16[4,8] %[[MH]], f16[4,8]{1,0} %a)
)";
  ExpectRewrite(pass, input, checks);
}

TEST(F16NormalizationTest, ConvertsOtherThanToF32GoThroughF32) {
  F16Normalization pass;
  const char* input = R"(HloModule converts

ENTRY %main (a: f16[8], i: s32[8], b: bf16[8]) -> (s32[8], bf16[8], f16[8], f16[8], f32[8]) {
  %a = f16[8]{0} parameter(0)
  %i = s32[8]{0} parameter(1)
  %b = bf16[8]{0} parameter(2)
  %to_int = s32[8]{0} convert(f16[8]{0} %a)
  %to_bf16 = bf16[8]{0} convert(f16[8]{0} %a)
  %from_int = f16[8]{0} convert(s32[8]{0} %i)
  %from_bf16 = f16[8]{0} convert(bf16[8]{0} %b)
  %to_f32 = f32[8]{0} convert(f16[8]{0} %a)
  ROOT %r = (s32[8], bf16[8], f16[8], f16[8], f32[8]) tuple(%to_int, %to_bf16, %from_int, %from_bf16, %to_f32)
}
)";
  const char* checks = R"(
CHECK:      %to_f32 = f32[8]{0} convert(f16[8]{0} %a)
CHECK-NEXT: %[[A1:convert.[0-9]+]] = f32[8] convert(f16[8]{0} %a)
CHECK-NEXT: %{{convert.[0-9]+}} = s32[8] convert(f32[8] %[[A1]])
CHECK-NEXT: %[[A2:convert.[0-9]+]] = f32[8] convert(f16[8]{0} %a)
CHECK-NEXT: %{{convert.[0-9]+}} = bf16[8] convert(f32[8] %[[A2]])
CHECK-NEXT: %[[I:convert.[0-9]+]] = f32[8] convert(s32[8]{0} %i)
CHECK-NEXT: %{{convert.[0-9]+}} = f16[8] convert(f32[8] %[[I]])
CHECK-NEXT: %[[B:convert.[0-9]+]] = f32[8] convert(bf16[8]{0} %b)
CHECK-NEXT: %{{convert.[0-9]+}} = f16[8] convert(f32[8] %[[B]])
)";
  ExpectRewrite(pass, input, checks);
}

TEST(F16NormalizationTest, DotsRunOnF32WithSixPassesAndReductionsRoundOnce) {
  F16Normalization pass;
  const char* input = R"(HloModule products

%add_f16 (x: f16[], y: f16[]) -> f16[] {
  %x = f16[] parameter(0)
  %y = f16[] parameter(1)
  ROOT %s = f16[] add(f16[] %x, f16[] %y)
}

ENTRY %main (a: f16[4,8], b: f16[8,2]) -> (f16[4,2], f32[4,2], f16[4]) {
  %a = f16[4,8]{1,0} parameter(0)
  %b = f16[8,2]{1,0} parameter(1)
  %d = f16[4,2]{1,0} dot(f16[4,8]{1,0} %a, f16[8,2]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %w = f32[4,2]{1,0} dot(f16[4,8]{1,0} %a, f16[8,2]{1,0} %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f16[] constant(0)
  %sum = f16[4]{0} reduce(f16[4,8]{1,0} %a, f16[] %zero), dimensions={1}, to_apply=%add_f16
  ROOT %r = (f16[4,2], f32[4,2], f16[4]) tuple(%d, %w, %sum)
}
)";
  const char* checks = R"(
CHECK:      %[[D:d.[0-9]+]] = f32[4,2] dot(f32[4,8] %{{convert.[0-9]+}}, f32[8,2] %{{convert.[0-9]+}}), {{.*}}operand_precision={highest,highest}
CHECK-NEXT: %[[DH:convert.[0-9]+]] = f16[4,2] convert(f32[4,2] %[[D]])
CHECK:      %{{w.[0-9]+}} = f32[4,2]{1,0} dot(f32[4,8] %{{convert.[0-9]+}}, {{.*}}operand_precision={highest,highest}
CHECK:      %[[SUM:[a-z.0-9]+]] = f32[4] reduce(f32[4,8] %{{convert.[0-9]+}}, f32[] %{{convert.[0-9]+}}), dimensions={1}, to_apply=%reducer_add_f32
CHECK-NEXT: %{{convert.[0-9]+}} = f16[4] convert(f32[4] %[[SUM]])
CHECK-NOT:  f16[4,2]{1,0} dot
)";
  ExpectRewrite(pass, input, checks);
}

TEST(F16NormalizationTest, F32AndBf16AndF16DataMovementAreLeftAlone) {
  F16Normalization pass;
  ExpectUnchanged(pass, R"(HloModule moves

ENTRY %main (a: f16[4,8], x: f32[4,8], b: bf16[4,8]) -> (f16[8,4], f32[4,8], bf16[4,8]) {
  %a = f16[4,8]{1,0} parameter(0)
  %x = f32[4,8]{1,0} parameter(1)
  %b = bf16[4,8]{1,0} parameter(2)
  %t = f16[8,4]{1,0} transpose(f16[4,8]{1,0} %a), dimensions={1,0}
  %y = f32[4,8]{1,0} exponential(f32[4,8]{1,0} %x)
  %c = bf16[4,8]{1,0} add(bf16[4,8]{1,0} %b, bf16[4,8]{1,0} %b)
  ROOT %r = (f16[8,4], f32[4,8], bf16[4,8]) tuple(f16[8,4]{1,0} %t, f32[4,8]{1,0} %y, bf16[4,8]{1,0} %c)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
