#include "compiler/passes/matrix_dots.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(MatrixDotsTest, ABatchedDotIsOneMatrixDotPerBatchIndex) {
  MatrixDots pass;
  const char* input = R"(HloModule attention

ENTRY %main (q: f32[2,3,4], k: f32[2,5,4]) -> f32[2,3,5] {
  %q = f32[2,3,4]{2,1,0} parameter(0)
  %k = f32[2,5,4]{2,1,0} parameter(1)
  ROOT %s = f32[2,3,5]{2,1,0} dot(f32[2,3,4]{2,1,0} %q, f32[2,5,4]{2,1,0} %k), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}, operand_precision={HIGH,HIGH}
}
)";
  // The keys move their contracting dimension before the free one: [2,5,4] -> [2,4,5].
  const char* checks = R"(
CHECK:      %[[KT:transpose.[0-9]+]] = f32[2,4,5]{2,1,0} transpose(f32[2,5,4]{2,1,0} %k), dimensions={0,2,1}
CHECK:      %[[Q0:slice.[0-9]+]] = f32[1,3,4]{2,1,0} slice(f32[2,3,4]{2,1,0} %q), slice={[0:1], [0:3], [0:4]}
CHECK-NEXT: %[[Q0M:reshape.[0-9]+]] = f32[3,4]{1,0} reshape(f32[1,3,4]{2,1,0} %[[Q0]])
CHECK-NEXT: %[[K0:slice.[0-9]+]] = f32[1,4,5]{2,1,0} slice(f32[2,4,5]{2,1,0} %[[KT]]), slice={[0:1], [0:4], [0:5]}
CHECK-NEXT: %[[K0M:reshape.[0-9]+]] = f32[4,5]{1,0} reshape(f32[1,4,5]{2,1,0} %[[K0]])
CHECK-NEXT: %[[D0:dot.[0-9]+]] = f32[3,5]{1,0} dot(f32[3,4]{1,0} %[[Q0M]], f32[4,5]{1,0} %[[K0M]]), lhs_contracting_dims={1}, rhs_contracting_dims={0}, operand_precision={HIGH,HIGH}
CHECK:      dot(
CHECK:      f32[2,3,5]{2,1,0} concatenate({{.*}}), dimensions={0}
CHECK-NOT:  lhs_batch_dims
)";
  ExpectRewrite(pass, input, checks);
}

TEST(MatrixDotsTest, RankThreeActivationsTimesAWeightAreOneDot) {
  MatrixDots pass;
  const char* input = R"(HloModule dense

ENTRY %main (x: f32[2,3,4], w: f32[4,6]) -> f32[2,3,6] {
  %x = f32[2,3,4]{2,1,0} parameter(0)
  %w = f32[4,6]{1,0} parameter(1)
  ROOT %y = f32[2,3,6]{2,1,0} dot(f32[2,3,4]{2,1,0} %x, f32[4,6]{1,0} %w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
)";
  const char* checks = R"(
CHECK:      %[[X:reshape.[0-9]+]] = f32[6,4]{1,0} reshape(f32[1,6,4]{2,1,0}
CHECK:      %[[D:dot.[0-9]+]] = f32[6,6]{1,0} dot(f32[6,4]{1,0} %[[X]], f32[4,6]{1,0}
CHECK:      f32[2,3,6]{2,1,0} reshape(
CHECK-NOT:  slice
)";
  ExpectRewrite(pass, input, checks);
}

TEST(MatrixDotsTest, MatrixDotsAreLeftAsTheyAre) {
  MatrixDots pass;
  ExpectUnchanged(pass, R"(HloModule plain

ENTRY %main (x: f32[3,4], w: f32[6,4]) -> f32[3,6] {
  %x = f32[3,4]{1,0} parameter(0)
  %w = f32[6,4]{1,0} parameter(1)
  ROOT %y = f32[3,6]{1,0} dot(f32[3,4]{1,0} %x, f32[6,4]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
)");
}

}  // namespace
}  // namespace tpu::compiler
