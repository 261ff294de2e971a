#include "compiler/passes/flatten_rows_through_columns.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using testing::CountOpcode;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(FlattenRowsThroughColumnsTest, StacksEachRowAsAColumn) {
  FlattenRowsThroughColumns pass;
  const char* input = R"(HloModule flatten

ENTRY %main (x: f32[3,5]) -> f32[15] {
  %x = f32[3,5]{1,0} parameter(0)
  ROOT %flat = f32[15]{0} reshape(f32[3,5]{1,0} %x)
}
)";
  // Row r is sliced, transposed into a [5,1] column; the columns are stacked in row order.
  const char* checks = R"(
CHECK:      %[[R0:slice.[0-9]+]] = f32[1,5] slice(f32[3,5]{1,0} %x), slice={[0:1], [0:5]}
CHECK-NEXT: %[[C0:transpose.[0-9]+]] = f32[5,1] transpose(f32[1,5] %[[R0]]), dimensions={1,0}
CHECK:      %[[R1:slice.[0-9]+]] = f32[1,5] slice(f32[3,5]{1,0} %x), slice={[1:2], [0:5]}
CHECK-NEXT: %[[C1:transpose.[0-9]+]] = f32[5,1] transpose(f32[1,5] %[[R1]]), dimensions={1,0}
CHECK:      %[[R2:slice.[0-9]+]] = f32[1,5] slice(f32[3,5]{1,0} %x), slice={[2:3], [0:5]}
CHECK-NEXT: %[[C2:transpose.[0-9]+]] = f32[5,1] transpose(f32[1,5] %[[R2]]), dimensions={1,0}
CHECK-NEXT: %[[STACKED:concatenate.[0-9]+]] = f32[15,1] concatenate(f32[5,1] %[[C0]], f32[5,1] %[[C1]], f32[5,1] %[[C2]]), dimensions={0}
CHECK-NEXT: ROOT %reshape.{{[0-9]+}} = f32[15] reshape(f32[15,1] %[[STACKED]])
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kSlice), 3);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kTranspose), 3);
}

TEST(FlattenRowsThroughColumnsTest, LeavesWholeLinesManyRowsAndConstantsUnchanged) {
  FlattenRowsThroughColumns pass;
  // Rows of 128 elements are whole lines on every configuration.
  ExpectUnchanged(pass, R"(HloModule lines

ENTRY %main (x: f32[2,128]) -> f32[256] {
  %x = f32[2,128]{1,0} parameter(0)
  ROOT %flat = f32[256]{0} reshape(f32[2,128]{1,0} %x)
}
)");
  // More than 64 rows would take too many slices.
  ExpectUnchanged(pass, R"(HloModule many

ENTRY %main (x: f32[65,3]) -> f32[195] {
  %x = f32[65,3]{1,0} parameter(0)
  ROOT %flat = f32[195]{0} reshape(f32[65,3]{1,0} %x)
}
)");
  ExpectUnchanged(pass, R"(HloModule constant

ENTRY %main () -> f32[4] {
  %c = f32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })
  ROOT %flat = f32[4]{0} reshape(f32[2,2]{1,0} %c)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
