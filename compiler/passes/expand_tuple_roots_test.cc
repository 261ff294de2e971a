#include "compiler/passes/expand_tuple_roots.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(ExpandTupleRootsTest, AWhileRootAndAConditionalBodyRootBecomeTuplesOfTheirElements) {
  ExpandTupleRoots pass;
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

TEST(ExpandTupleRootsTest, TupleAndArrayRootsAreLeftAsTheyAre) {
  ExpandTupleRoots pass;
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
