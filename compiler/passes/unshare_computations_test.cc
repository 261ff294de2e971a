#include "compiler/passes/unshare_computations.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// Two loops share a condition and a body, the body holds a conditional whose branches are one
// computation: the second loop gets copies of both, each conditional its own branches.
TEST(UnshareComputationsTest, LoopsAndBranchesThatShareAComputationGetCopies) {
  UnshareComputations pass;
  const char* input = R"(HloModule shared

%negate (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(f32[4]{0} %x)
}

%cond (p: (f32[4], s32[])) -> pred[] {
  %p = (f32[4], s32[]) parameter(0)
  %i = s32[] get-tuple-element((f32[4], s32[]) %p), index=1
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(s32[] %i, s32[] %limit), direction=LT
}

%body (p: (f32[4], s32[])) -> (f32[4], s32[]) {
  %p = (f32[4], s32[]) parameter(0)
  %x = f32[4]{0} get-tuple-element((f32[4], s32[]) %p), index=0
  %i = s32[] get-tuple-element((f32[4], s32[]) %p), index=1
  %zero = s32[] constant(0)
  %first = pred[] compare(s32[] %i, s32[] %zero), direction=EQ
  %y = f32[4]{0} conditional(pred[] %first, f32[4]{0} %x, f32[4]{0} %x), true_computation=%negate, false_computation=%negate
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i, s32[] %one)
  ROOT %t = (f32[4], s32[]) tuple(f32[4]{0} %y, s32[] %next)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (f32[4], s32[]) tuple(f32[4]{0} %x, s32[] %zero)
  %w1 = (f32[4], s32[]) while((f32[4], s32[]) %init), condition=%cond, body=%body
  %w2 = (f32[4], s32[]) while((f32[4], s32[]) %w1), condition=%cond, body=%body
  ROOT %r = f32[4]{0} get-tuple-element((f32[4], s32[]) %w2), index=0
}
)";
  // The second loop's copies, then the first body's conditional and the copy's, each with branches of
  // their own (the first one keeps the original).
  const char* checks = R"(
CHECK:      %body (p: (f32[4], s32[])) -> (f32[4], s32[])
CHECK:      conditional(pred[] %first, f32[4]{0} %x, f32[4]{0} %x), true_computation=%[[A:negate.copy[0-9]+]], false_computation=%[[B:negate.copy[0-9]+]]
CHECK:      %w1 = (f32[4], s32[]) while((f32[4], s32[]) %init), condition=%cond, body=%body
CHECK-NEXT: %w2 = (f32[4], s32[]) while((f32[4], s32[]) %w1), condition=%[[C:cond.copy[0-9]+]], body=%[[D:body.copy[0-9]+]]
CHECK:      %[[C]] (p: (f32[4], s32[])) -> pred[]
CHECK:      %[[D]] (p: (f32[4], s32[])) -> (f32[4], s32[])
CHECK:      conditional(pred[] %first, f32[4]{0} %x, f32[4]{0} %x), true_computation=%negate, false_computation=%[[E:negate.copy[0-9]+]]
CHECK:      %[[E]] (x: f32[4]) -> f32[4]
CHECK:      %[[A]] (x: f32[4]) -> f32[4]
CHECK:      %[[B]] (x: f32[4]) -> f32[4]
)";
  ExpectRewrite(pass, input, checks);
}

TEST(UnshareComputationsTest, ReducersSharedByReductionsStayShared) {
  UnshareComputations pass;
  ExpectUnchanged(pass, R"(HloModule reducers

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[], f32[]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %zero = f32[] constant(0)
  %sx = f32[] reduce(f32[4]{0} %x, f32[] %zero), dimensions={0}, to_apply=%add
  %sy = f32[] reduce(f32[4]{0} %y, f32[] %zero), dimensions={0}, to_apply=%add
  ROOT %t = (f32[], f32[]) tuple(f32[] %sx, f32[] %sy)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
