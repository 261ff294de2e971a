#include "compiler/passes/integer_division_expansion.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(IntegerDivisionExpansionTest, S32DivideBecomesALongDivisionLoop) {
  IntegerDivisionExpansion pass;
  const char* input = R"(HloModule div

ENTRY %main (x: s32[4,8], y: s32[4,8]) -> s32[4,8] {
  %x = s32[4,8]{1,0} parameter(0)
  %y = s32[4,8]{1,0} parameter(1)
  ROOT %q = s32[4,8]{1,0} divide(s32[4,8]{1,0} %x, s32[4,8]{1,0} %y)
}
)";
  const char* checks = R"(
CHECK:      u32[4,8] bitcast-convert(s32[4,8] %{{[a-z.0-9]+}})
CHECK:      while({{.*}}), condition=%long_division_condition, body=%long_division_step
CHECK:      ROOT %{{[a-z.0-9]+}} = s32[4,8] select(
CHECK:      %long_division_condition
CHECK:      ROOT %{{[a-z.0-9]+}} = pred[] compare(s32[] %{{[a-z.0-9.-]+}}, s32[] %{{[a-z.0-9.]+}}), direction=LT
CHECK:      %long_division_step
CHECK:      u32[4,8] shift-right-logical(
CHECK:      pred[4,8] compare(u32[4,8] %{{[a-z.0-9]+}}, u32[4,8] %{{[a-z.0-9.-]+}}), direction=GE
CHECK-NOT:  divide
)";
  ExpectRewrite(pass, input, checks);
}

TEST(IntegerDivisionExpansionTest, FloatDivisionIsLeftAlone) {
  IntegerDivisionExpansion pass;
  ExpectUnchanged(pass, R"(HloModule div

ENTRY %main (x: f32[8], y: f32[8]) -> f32[8] {
  %x = f32[8]{0} parameter(0)
  %y = f32[8]{0} parameter(1)
  ROOT %q = f32[8]{0} divide(f32[8]{0} %x, f32[8]{0} %y)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
