#include "compiler/passes/reshape_through_transpose.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(ReshapeThroughTransposeTest, AColumnBecomesARowThroughATranspose) {
  ReshapeThroughTranspose pass;
  const char* input = R"(HloModule column_to_row

ENTRY %main (x: f32[2,4,1]) -> f32[8] {
  %x = f32[2,4,1]{2,1,0} parameter(0)
  ROOT %row = f32[8]{0} reshape(f32[2,4,1]{2,1,0} %x)
}
)";
  const char* checks = R"(
CHECK:      %[[COLUMN:reshape.[0-9]+]] = f32[8,1] reshape(f32[2,4,1]{2,1,0} %x)
CHECK-NEXT: %[[T:transpose.[0-9]+]] = f32[1,8] transpose(f32[8,1] %[[COLUMN]]), dimensions={1,0}
CHECK-NEXT: ROOT %reshape.{{[0-9]+}} = f32[8] reshape(f32[1,8] %[[T]])
)";
  ExpectRewrite(pass, input, checks);
}

TEST(ReshapeThroughTransposeTest, ARowBecomesAColumnThroughATranspose) {
  ReshapeThroughTranspose pass;
  const char* input = R"(HloModule row_to_column

ENTRY %main (x: f32[8]) -> f32[8,1] {
  %x = f32[8]{0} parameter(0)
  ROOT %column = f32[8,1]{1,0} bitcast(f32[8]{0} %x)
}
)";
  const char* checks = R"(
CHECK:      %[[ROW:reshape.[0-9]+]] = f32[1,8] reshape(f32[8]{0} %x)
CHECK-NEXT: %[[T:transpose.[0-9]+]] = f32[8,1] transpose(f32[1,8] %[[ROW]]), dimensions={1,0}
CHECK-NEXT: ROOT %reshape.{{[0-9]+}} = f32[8,1] reshape(f32[8,1] %[[T]])
CHECK-NOT:  bitcast
)";
  ExpectRewrite(pass, input, checks);
}

TEST(ReshapeThroughTransposeTest, LeavesLayoutPreservingReshapesAndConstantsUnchanged) {
  ReshapeThroughTranspose pass;
  // Merging rows keeps the device layout.
  ExpectUnchanged(pass, R"(HloModule rows

ENTRY %main (x: f32[2,3,8]) -> f32[6,8] {
  %x = f32[2,3,8]{2,1,0} parameter(0)
  ROOT %merged = f32[6,8]{1,0} reshape(f32[2,3,8]{2,1,0} %x)
}
)");
  ExpectUnchanged(pass, R"(HloModule constant

ENTRY %main () -> f32[2] {
  %c = f32[2,1]{1,0} constant({ { 1 }, { 2 } })
  ROOT %row = f32[2]{0} reshape(f32[2,1]{1,0} %c)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
