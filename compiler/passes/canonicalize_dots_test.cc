#include "compiler/passes/canonicalize_dots.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using testing::CountOpcode;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(CanonicalizeDotsTest, DotReadsATransposedRhsDirectly) {
  CanonicalizeDots pass;
  const char* input = R"(HloModule rhs

ENTRY %main (x: f32[4,8], y: f32[16,8]) -> f32[4,16] {
  %x = f32[4,8]{1,0} parameter(0)
  %y = f32[16,8]{1,0} parameter(1)
  %yt = f32[8,16]{1,0} transpose(f32[16,8]{1,0} %y), dimensions={1,0}
  ROOT %d = f32[4,16]{1,0} dot(f32[4,8]{1,0} %x, f32[8,16]{1,0} %yt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  // The dot contracts dimension 1 of %y itself; the transpose is left without users.
  const char* checks = R"(
CHECK: ROOT %d = f32[4,16]{1,0} dot(f32[4,8]{1,0} %x, f32[16,8]{1,0} %y), lhs_contracting_dims={1}, rhs_contracting_dims={1}
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(result.module->entry_computation()->GetInstructionWithName("yt")->user_count(), 0);
}

TEST(CanonicalizeDotsTest, ALhsContractingDimensionZeroIsTransposedExplicitly) {
  CanonicalizeDots pass;
  const char* input = R"(HloModule lhs

ENTRY %main (x: f32[8,4], y: f32[8,16]) -> f32[4,16] {
  %x = f32[8,4]{1,0} parameter(0)
  %y = f32[8,16]{1,0} parameter(1)
  ROOT %d = f32[4,16]{1,0} dot(f32[8,4]{1,0} %x, f32[8,16]{1,0} %y), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
)";
  // The MXU streams lhs rows: the lhs becomes [4,8], contracting its dimension 1.
  const char* checks = R"(
CHECK:      %[[T:transpose.[0-9]+]] = f32[4,8] transpose(f32[8,4]{1,0} %x), dimensions={1,0}
CHECK-NEXT: ROOT %d = f32[4,16]{1,0} dot(f32[4,8] %[[T]], f32[8,16]{1,0} %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
)";
  ExpectRewrite(pass, input, checks);
}

TEST(CanonicalizeDotsTest, ATransposedLhsThatWouldContractDimensionZeroKeepsItsTranspose) {
  CanonicalizeDots pass;
  const char* input = R"(HloModule both

ENTRY %main (x: f32[4,8], y: f32[16,8]) -> f32[4,16] {
  %x = f32[4,8]{1,0} parameter(0)
  %y = f32[16,8]{1,0} parameter(1)
  %xt = f32[8,4]{1,0} transpose(f32[4,8]{1,0} %x), dimensions={1,0}
  %yt = f32[8,16]{1,0} transpose(f32[16,8]{1,0} %y), dimensions={1,0}
  ROOT %d = f32[4,16]{1,0} dot(f32[8,4]{1,0} %xt, f32[8,16]{1,0} %yt), lhs_contracting_dims={0}, rhs_contracting_dims={0}
}
)";
  // Reading %x directly would contract its dimension 1; the rhs is read directly.
  const char* checks = R"(
CHECK: ROOT %d = f32[4,16]{1,0} dot(f32[4,8]{1,0} %x, f32[16,8]{1,0} %y), lhs_contracting_dims={1}, rhs_contracting_dims={1}
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kTranspose), 2);  // both unused now
}

TEST(CanonicalizeDotsTest, LeavesCanonicalAndBatchedDotsUnchanged) {
  CanonicalizeDots pass;
  ExpectUnchanged(pass, R"(HloModule canonical

ENTRY %main (x: f32[4,8], y: f32[8,16]) -> f32[4,16] {
  %x = f32[4,8]{1,0} parameter(0)
  %y = f32[8,16]{1,0} parameter(1)
  ROOT %d = f32[4,16]{1,0} dot(f32[4,8]{1,0} %x, f32[8,16]{1,0} %y), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  ExpectUnchanged(pass, R"(HloModule batched

ENTRY %main (x: f32[2,8,4], y: f32[2,8,16]) -> f32[2,4,16] {
  %x = f32[2,8,4]{2,1,0} parameter(0)
  %y = f32[2,8,16]{2,1,0} parameter(1)
  ROOT %d = f32[2,4,16]{2,1,0} dot(f32[2,8,4]{2,1,0} %x, f32[2,8,16]{2,1,0} %y), lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
)");
}

}  // namespace
}  // namespace tpu::compiler
