#include "compiler/passes/remainder_expansion.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(RemainderExpansionTest, F32RemainderBecomesAnExactProductAndCorrections) {
  RemainderExpansion pass;
  const char* input = R"(HloModule rem

ENTRY %main (x: f32[4,8], y: f32[4,8]) -> f32[4,8] {
  %x = f32[4,8]{1,0} parameter(0)
  %y = f32[4,8]{1,0} parameter(1)
  ROOT %r = f32[4,8]{1,0} remainder(f32[4,8]{1,0} %x, f32[4,8]{1,0} %y)
}
)";
  const char* checks = R"(
CHECK:      %[[AX:[a-z.0-9]+]] = f32[4,8] abs(f32[4,8]{1,0} %x)
CHECK-NEXT: %[[AY:[a-z.0-9]+]] = f32[4,8] abs(f32[4,8]{1,0} %y)
CHECK-NEXT: %[[Q:[a-z.0-9]+]] = f32[4,8] divide(f32[4,8] %[[AX]], f32[4,8] %[[AY]])
CHECK-NEXT: %[[FQ:[a-z.0-9]+]] = f32[4,8] floor(f32[4,8] %[[Q]])
CHECK-NEXT: %[[P:[a-z.0-9]+]] = f32[4,8] multiply(f32[4,8] %[[FQ]], f32[4,8] %[[AY]])
CHECK:      f32[] constant(4097)
CHECK:      s32[4,8] bitcast-convert(f32[4,8]{1,0} %x)
CHECK:      s32[4,8] or(
CHECK:      ROOT %{{[a-z.0-9]+}} = f32[4,8] select(
CHECK-NOT:  remainder
)";
  ExpectRewrite(pass, input, checks);
}

TEST(RemainderExpansionTest, IntegerRemaindersAreLeftAlone) {
  RemainderExpansion pass;
  ExpectUnchanged(pass, R"(HloModule rem

ENTRY %main (x: s32[8], y: s32[8]) -> s32[8] {
  %x = s32[8]{0} parameter(0)
  %y = s32[8]{0} parameter(1)
  ROOT %r = s32[8]{0} remainder(s32[8]{0} %x, s32[8]{0} %y)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
