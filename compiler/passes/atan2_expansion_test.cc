#include "compiler/passes/atan2_expansion.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;

TEST(Atan2ExpansionTest, Atan2BecomesAReducedPolynomialAndQuadrantSelects) {
  Atan2Expansion pass;
  const char* input = R"(HloModule a

ENTRY %main (y: f32[4,8], x: f32[4,8]) -> f32[4,8] {
  %y = f32[4,8]{1,0} parameter(0)
  %x = f32[4,8]{1,0} parameter(1)
  ROOT %r = f32[4,8]{1,0} atan2(f32[4,8]{1,0} %y, f32[4,8]{1,0} %x)
}
)";
  const char* checks = R"(
CHECK:      %[[AY:[a-z.0-9]+]] = f32[4,8] abs(f32[4,8]{1,0} %y)
CHECK-NEXT: %[[AX:[a-z.0-9]+]] = f32[4,8] abs(f32[4,8]{1,0} %x)
CHECK-NEXT: f32[4,8] minimum(f32[4,8] %[[AY]], f32[4,8] %[[AX]])
CHECK-NEXT: f32[4,8] maximum(f32[4,8] %[[AY]], f32[4,8] %[[AX]])
CHECK:      f32[] constant(0.41421357)
CHECK:      f32[] constant(-0.061693795)
CHECK:      s32[4,8] or(
CHECK:      ROOT %{{[a-z.0-9]+}} = f32[4,8] select(
CHECK-NOT:  atan2
)";
  ExpectRewrite(pass, input, checks);
}

}  // namespace
}  // namespace tpu::compiler
