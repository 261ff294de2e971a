#include "compiler/passes/split_tuple_all_reduces.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// jax.lax.psum((w, b), 'i') under pmap on four devices, as XLA's combiner leaves it.
const char* kPsumOfTwo = R"(HloModule psum_of_two, replica_count=4

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (w: f32[3,5], b: f32[5]) -> (f32[3,5], f32[5]) {
  %w = f32[3,5]{1,0} parameter(0)
  %b = f32[5]{0} parameter(1)
  ROOT %r = (f32[3,5]{1,0}, f32[5]{0}) all-reduce(f32[3,5]{1,0} %w, f32[5]{0} %b), channel_id=1, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=%sum
}
)";

TEST(SplitTupleAllReducesTest, EachOperandGetsItsOwnAllReduce) {
  SplitTupleAllReduces pass;
  testing::PassResult result = ExpectRewrite(pass, kPsumOfTwo, R"(
CHECK:      %[[W:[a-z0-9.-]+]] = f32[3,5]{1,0} all-reduce(f32[3,5]{1,0} %w), channel_id=1, replica_groups={{[{][{]0,2[}],[{]1,3[}][}]}}, use_global_device_ids=true, to_apply=%sum
CHECK-NEXT: %[[B:[a-z0-9.-]+]] = f32[5]{0} all-reduce(f32[5]{0} %b), channel_id=1, replica_groups={{[{][{]0,2[}],[{]1,3[}][}]}}, use_global_device_ids=true, to_apply=%sum
CHECK-NEXT: ROOT {{.*}} tuple(f32[3,5]{1,0} %[[W]], f32[5]{0} %[[B]])
CHECK-NOT:  all-reduce(f32[3,5]{1,0} %w, f32[5]{0} %b)
)");
  ASSERT_NE(result.module, nullptr);
  // Every device gets the same values before and after.
  std::unique_ptr<hlo::HloModule> before = hlo::ParseHloModule(kPsumOfTwo).value();
  std::mt19937 rng(3);
  std::vector<std::vector<hlo::Literal>> lists(4);
  for (auto& list : lists) {
    for (const hlo::HloInstruction* parameter : before->entry_computation()->parameter_instructions()) {
      list.push_back(hlo::Literal::Random(parameter->shape(), rng));
    }
  }
  const auto want = hlo::InterpretReplicated(*before, lists).value();
  const auto got = hlo::InterpretReplicated(*result.module, lists).value();
  EXPECT_TRUE(got == want);
}

TEST(SplitTupleAllReducesTest, AnAllReduceOfOneArrayStays) {
  SplitTupleAllReduces pass;
  ExpectUnchanged(pass, R"(HloModule one, replica_count=2

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (w: f32[3,5]) -> f32[3,5] {
  %w = f32[3,5]{1,0} parameter(0)
  ROOT %r = f32[3,5]{1,0} all-reduce(f32[3,5]{1,0} %w), replica_groups={}, to_apply=%sum
}
)");
}

}  // namespace
}  // namespace tpu::compiler
