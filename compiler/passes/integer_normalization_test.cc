#include "compiler/passes/integer_normalization.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(IntegerNormalizationTest, NarrowIntegerArithmeticRunsInS32AndWrapsBack) {
  IntegerNormalization pass;
  const char* input = R"(HloModule narrow

ENTRY %main (a: s8[4,8], b: s8[4,8], c: u16[4,8]) -> (s8[4,8], pred[4,8], u16[4,8]) {
  %a = s8[4,8]{1,0} parameter(0)
  %b = s8[4,8]{1,0} parameter(1)
  %c = u16[4,8]{1,0} parameter(2)
  %s = s8[4,8]{1,0} multiply(s8[4,8]{1,0} %a, s8[4,8]{1,0} %b)
  %lt = pred[4,8]{1,0} compare(s8[4,8]{1,0} %s, s8[4,8]{1,0} %a), direction=LT
  %one = u16[] constant(1)
  %ones = u16[4,8]{1,0} broadcast(u16[] %one), dimensions={}
  %h = u16[4,8]{1,0} shift-right-logical(u16[4,8]{1,0} %c, u16[4,8]{1,0} %ones)
  ROOT %r = (s8[4,8], pred[4,8], u16[4,8]) tuple(s8[4,8]{1,0} %s, pred[4,8]{1,0} %lt, u16[4,8]{1,0} %h)
}
)";
  const char* checks = R"(
CHECK:      %[[A:convert.[0-9]+]] = s32[4,8] convert(s8[4,8]{1,0} %a)
CHECK-NEXT: %[[B:convert.[0-9]+]] = s32[4,8] convert(s8[4,8]{1,0} %b)
CHECK-NEXT: %[[S:s.[0-9]+]] = s32[4,8] multiply(s32[4,8] %[[A]], s32[4,8] %[[B]])
CHECK-NEXT: %[[SB:convert.[0-9]+]] = s8[4,8] convert(s32[4,8] %[[S]])
CHECK:      pred[4,8]{1,0} compare(s32[4,8] %{{convert.[0-9]+}}, s32[4,8] %{{convert.[0-9]+}}), direction=LT
CHECK:      s32[4,8] shift-right-logical(s32[4,8] %{{convert.[0-9]+}}, s32[4,8] %{{convert.[0-9]+}})
CHECK:      ROOT %r = (s8[4,8], pred[4,8], u16[4,8]) tuple(s8[4,8] %[[SB]],
)";
  ExpectRewrite(pass, input, checks);
}

TEST(IntegerNormalizationTest, WideTypesAndALogicalShiftOfASignedNarrowTypeAreLeftAlone) {
  IntegerNormalization pass;
  ExpectUnchanged(pass, R"(HloModule wide

ENTRY %main (a: s32[8], b: s8[8]) -> (s32[8], s8[8]) {
  %a = s32[8]{0} parameter(0)
  %b = s8[8]{0} parameter(1)
  %s = s32[8]{0} add(s32[8]{0} %a, s32[8]{0} %a)
  %h = s8[8]{0} shift-right-logical(s8[8]{0} %b, s8[8]{0} %b)
  ROOT %r = (s32[8], s8[8]) tuple(s32[8]{0} %s, s8[8]{0} %h)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
