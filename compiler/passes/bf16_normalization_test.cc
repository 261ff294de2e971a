#include "compiler/passes/bf16_normalization.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(Bf16NormalizationTest, Bf16ArithmeticRunsInF32AndRoundsBack) {
  Bf16Normalization pass;
  const char* input = R"(HloModule bf16

ENTRY %main (a: bf16[4,8], b: bf16[4,8], x: f32[4,8]) -> (bf16[4,8], pred[4,8]) {
  %a = bf16[4,8]{1,0} parameter(0)
  %b = bf16[4,8]{1,0} parameter(1)
  %x = f32[4,8]{1,0} parameter(2)
  %s = bf16[4,8]{1,0} add(bf16[4,8]{1,0} %a, bf16[4,8]{1,0} %b)
  %t = bf16[4,8]{1,0} tanh(bf16[4,8]{1,0} %s)
  %y = f32[4,8]{1,0} convert(bf16[4,8]{1,0} %t)
  %lt = pred[4,8]{1,0} compare(bf16[4,8]{1,0} %t, bf16[4,8]{1,0} %a), direction=LT
  %z = f32[4,8]{1,0} add(f32[4,8]{1,0} %y, f32[4,8]{1,0} %x)
  ROOT %r = (bf16[4,8], pred[4,8]) tuple(bf16[4,8]{1,0} %t, pred[4,8]{1,0} %lt)
}
)";
  const char* checks = R"(
CHECK:      %[[A:convert.[0-9]+]] = f32[4,8] convert(bf16[4,8]{1,0} %a)
CHECK-NEXT: %[[B:convert.[0-9]+]] = f32[4,8] convert(bf16[4,8]{1,0} %b)
CHECK-NEXT: %[[S:s.[0-9]+]] = f32[4,8] add(f32[4,8] %[[A]], f32[4,8] %[[B]])
CHECK-NEXT: %[[SB:convert.[0-9]+]] = bf16[4,8] convert(f32[4,8] %[[S]])
CHECK-NEXT: %[[SF:convert.[0-9]+]] = f32[4,8] convert(bf16[4,8] %[[SB]])
CHECK-NEXT: %[[T:t.[0-9]+]] = f32[4,8] tanh(f32[4,8] %[[SF]])
CHECK-NEXT: %[[TB:convert.[0-9]+]] = bf16[4,8] convert(f32[4,8] %[[T]])
CHECK:      pred[4,8]{1,0} compare(f32[4,8] %{{convert.[0-9]+}}, f32[4,8] %{{convert.[0-9]+}}), direction=LT
CHECK:      ROOT %r = (bf16[4,8], pred[4,8]) tuple(bf16[4,8] %[[TB]],
)";
  ExpectRewrite(pass, input, checks);
}

TEST(Bf16NormalizationTest, F32ArithmeticAndBf16DataMovementAreLeftAlone) {
  Bf16Normalization pass;
  ExpectUnchanged(pass, R"(HloModule moves

ENTRY %main (a: bf16[4,8], x: f32[4,8]) -> (bf16[8,4], f32[4,8]) {
  %a = bf16[4,8]{1,0} parameter(0)
  %x = f32[4,8]{1,0} parameter(1)
  %t = bf16[8,4]{1,0} transpose(bf16[4,8]{1,0} %a), dimensions={1,0}
  %y = f32[4,8]{1,0} exponential(f32[4,8]{1,0} %x)
  ROOT %r = (bf16[8,4], f32[4,8]) tuple(bf16[8,4]{1,0} %t, f32[4,8]{1,0} %y)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
