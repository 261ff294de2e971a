#include "compiler/passes/expand_tuples.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(ExpandTuplesTest, AWhileRootAndAConditionalBodyRootBecomeTuplesOfTheirElements) {
  ExpandTuples pass;
  const char* input = R"(HloModule roots

%keep (p: (f32[4], s32[])) -> (f32[4], s32[]) {
  %p = (f32[4], s32[]) parameter(0)
  %x = f32[4]{0} get-tuple-element((f32[4], s32[]) %p), index=0
  %n = s32[] get-tuple-element((f32[4], s32[]) %p), index=1
  ROOT %t = (f32[4], s32[]) tuple(f32[4]{0} %x, s32[] %n)
}

%cond (p: (f32[4], s32[])) -> pred[] {
  %p = (f32[4], s32[]) parameter(0)
  %n = s32[] get-tuple-element((f32[4], s32[]) %p), index=1
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(s32[] %n, s32[] %limit), direction=LT
}

%body (p: (f32[4], s32[])) -> (f32[4], s32[]) {
  %p = (f32[4], s32[]) parameter(0)
  %n = s32[] get-tuple-element((f32[4], s32[]) %p), index=1
  %zero = s32[] constant(0)
  %even = pred[] compare(s32[] %n, s32[] %zero), direction=GE
  ROOT %c = (f32[4], s32[]) conditional(pred[] %even, (f32[4], s32[]) %p, (f32[4], s32[]) %p), true_computation=%keep, false_computation=%keep
}

ENTRY %main (x: f32[4]) -> (f32[4], s32[]) {
  %x = f32[4]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (f32[4], s32[]) tuple(f32[4]{0} %x, s32[] %zero)
  ROOT %w = (f32[4], s32[]) while((f32[4], s32[]) %init), condition=%cond, body=%body
}
)";
  const char* checks = R"(
CHECK:      %body
CHECK:      %c = (f32[4], s32[]) conditional(
CHECK-NEXT: %[[C0:get-tuple-element.[0-9]+]] = f32[4] get-tuple-element((f32[4], s32[]) %c), index=0
CHECK-NEXT: %[[C1:get-tuple-element.[0-9]+]] = s32[] get-tuple-element((f32[4], s32[]) %c), index=1
CHECK-NEXT: ROOT %{{tuple.[0-9]+}} = (f32[4], s32[]) tuple(f32[4] %[[C0]], s32[] %[[C1]])
CHECK:      ENTRY %main
CHECK:      %w = (f32[4], s32[]) while(
CHECK-NEXT: %[[W0:get-tuple-element.[0-9]+]] = f32[4] get-tuple-element((f32[4], s32[]) %w), index=0
CHECK-NEXT: %[[W1:get-tuple-element.[0-9]+]] = s32[] get-tuple-element((f32[4], s32[]) %w), index=1
CHECK-NEXT: ROOT %{{tuple.[0-9]+}} = (f32[4], s32[]) tuple(f32[4] %[[W0]], s32[] %[[W1]])
)";
  ExpectRewrite(pass, input, checks);
}

// A loop whose initial state is another loop's result, a branch given a parameter tuple, a body that
// returns its parameter.
TEST(ExpandTuplesTest, LoopStatesAndBranchInputsBecomeTupleInstructions) {
  ExpandTuples pass;
  const char* input = R"(HloModule operands

%first (p: (f32[4], s32[])) -> (f32[4], s32[]) {
  ROOT %p = (f32[4], s32[]) parameter(0)
}

%cond (p: (f32[4], s32[])) -> pred[] {
  %p = (f32[4], s32[]) parameter(0)
  %n = s32[] get-tuple-element((f32[4], s32[]) %p), index=1
  %limit = s32[] constant(3)
  ROOT %lt = pred[] compare(s32[] %n, s32[] %limit), direction=LT
}

%body (p: (f32[4], s32[])) -> (f32[4], s32[]) {
  %p = (f32[4], s32[]) parameter(0)
  %yes = pred[] constant(true)
  ROOT %c = (f32[4], s32[]) conditional(pred[] %yes, (f32[4], s32[]) %p, (f32[4], s32[]) %p), true_computation=%first, false_computation=%first
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
  const char* checks = R"(
CHECK:      %first
CHECK:      ROOT %{{tuple.[0-9]+}} = (f32[4], s32[]) tuple(
CHECK:      %body
CHECK:      %[[P:tuple.[0-9]+]] = (f32[4], s32[]) tuple(
CHECK:      conditional(pred[] %yes, (f32[4], s32[]) %[[P]], (f32[4], s32[]) %[[Q:tuple.[0-9]+]])
CHECK:      ENTRY %main
CHECK:      %w1 = (f32[4], s32[]) while((f32[4], s32[]) %init)
CHECK:      %[[S:tuple.[0-9]+]] = (f32[4], s32[]) tuple(
CHECK-NEXT: %w2 = (f32[4], s32[]) while((f32[4], s32[]) %[[S]])
)";
  ExpectRewrite(pass, input, checks);
}

TEST(ExpandTuplesTest, TupleAndArrayRootsAreLeftAsTheyAre) {
  ExpandTuples pass;
  ExpectUnchanged(pass, R"(HloModule plain

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  ROOT %t = (f32[4], f32[4]) tuple(f32[4]{0} %x, f32[4]{0} %y)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
