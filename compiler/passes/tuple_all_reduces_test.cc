#include "compiler/passes/tuple_all_reduces.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// lax.psum of a dense layer's gradients and loss under pmap on four devices, as XLA's combiner leaves it
// (8 lanes: the weights' and the bias's rows fill whole lines, the [5] bias and the loss do not).
const char* kGradients = R"(HloModule gradients, replica_count=4

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (w: f32[3,16], b: f32[8], c: f32[5], loss: f32[]) -> (f32[3,16], f32[8], f32[5], f32[]) {
  %w = f32[3,16]{1,0} parameter(0)
  %b = f32[8]{0} parameter(1)
  %c = f32[5]{0} parameter(2)
  %loss = f32[] parameter(3)
  ROOT %r = (f32[3,16]{1,0}, f32[8]{0}, f32[5]{0}, f32[]) all-reduce(f32[3,16]{1,0} %w, f32[8]{0} %b, f32[5]{0} %c, f32[] %loss), channel_id=1, replica_groups={{0,2},{1,3}}, use_global_device_ids=true, to_apply=%sum
}
)";

TEST(TupleAllReducesTest, ArraysOfWholeLinesGoTogetherTheOthersAlone) {
  TupleAllReduces pass(8);
  testing::PassResult result = ExpectRewrite(pass, kGradients, R"(
CHECK:      %[[WL:[a-z0-9.-]+]] = f32[6,8]{1,0} reshape(f32[3,16]{1,0} %w)
CHECK:      %[[BL:[a-z0-9.-]+]] = f32[1,8]{1,0} reshape(f32[8]{0} %b)
CHECK:      %[[ALL:[a-z0-9.-]+]] = f32[7,8]{1,0} concatenate(f32[6,8]{1,0} %[[WL]], f32[1,8]{1,0} %[[BL]]), dimensions={0}
CHECK:      %[[SUM:[a-z0-9.-]+]] = f32[7,8]{1,0} all-reduce(f32[7,8]{1,0} %[[ALL]]), channel_id=1, replica_groups={{[{][{]0,2[}],[{]1,3[}][}]}}, use_global_device_ids=true, to_apply=%sum
CHECK:      slice(f32[7,8]{1,0} %[[SUM]]), slice={[0:6], [0:8]}
CHECK:      slice(f32[7,8]{1,0} %[[SUM]]), slice={[6:7], [0:8]}
CHECK:      f32[5]{0} all-reduce(f32[5]{0} %c)
CHECK:      f32[] all-reduce(f32[] %loss)
CHECK:      ROOT {{.*}} tuple(
CHECK-NOT:  all-reduce(f32[3,16]{1,0} %w
)");
  ASSERT_NE(result.module, nullptr);
  // Every device gets the same values before and after, bit for bit.
  std::unique_ptr<hlo::HloModule> before = hlo::ParseHloModule(kGradients).value();
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

// Three psums of one step under pmap, each an all-reduce of its own (JAX's lowering); the third sums
// what the first gave, so it must wait for it.
const char* kThreePsums = R"(HloModule psums, replica_count=2

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (w: f32[2,8], b: f32[8]) -> (f32[2,8], f32[8], f32[2,8]) {
  %w = f32[2,8]{1,0} parameter(0)
  %b = f32[8]{0} parameter(1)
  %gw = f32[2,8]{1,0} all-reduce(f32[2,8]{1,0} %w), replica_groups={}, to_apply=%sum
  %gb = f32[8]{0} all-reduce(f32[8]{0} %b), replica_groups={}, to_apply=%sum
  %twice = f32[2,8]{1,0} all-reduce(f32[2,8]{1,0} %gw), replica_groups={}, to_apply=%sum
  ROOT %t = (f32[2,8]{1,0}, f32[8]{0}, f32[2,8]{1,0}) tuple(f32[2,8]{1,0} %gw, f32[8]{0} %gb, f32[2,8]{1,0} %twice)
}
)";

TEST(TupleAllReducesTest, IndependentAllReducesBecomeOne) {
  TupleAllReduces pass(8);
  testing::PassResult result = ExpectRewrite(pass, kThreePsums, R"(
CHECK:      concatenate(f32[2,8]{1,0} %{{.*}}, f32[1,8]{1,0} %{{.*}}), dimensions={0}
CHECK:      %[[ONE:[a-z0-9.-]+]] = f32[3,8]{1,0} all-reduce(
CHECK:      %[[TWICE:[a-z0-9.-]+]] = f32[2,8]{1,0} all-reduce(
CHECK-NOT:  all-reduce(
)");
  ASSERT_NE(result.module, nullptr);
  std::unique_ptr<hlo::HloModule> before = hlo::ParseHloModule(kThreePsums).value();
  std::mt19937 rng(4);
  std::vector<std::vector<hlo::Literal>> lists(2);
  for (auto& list : lists) {
    for (const hlo::HloInstruction* parameter : before->entry_computation()->parameter_instructions()) {
      list.push_back(hlo::Literal::Random(parameter->shape(), rng));
    }
  }
  EXPECT_TRUE(hlo::InterpretReplicated(*result.module, lists).value() == hlo::InterpretReplicated(*before, lists).value());
}

TEST(TupleAllReducesTest, AnAllReduceOfOneArrayStays) {
  TupleAllReduces pass(8);
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
