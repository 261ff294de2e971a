#include "compiler/passes/arg_reductions.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// jnp.argmax(x, axis=-1) as JAX writes it.
const char* kArgmax = R"(HloModule argmax

%comparator (a: f32[], i: s32[], b: f32[], j: s32[]) -> (f32[], s32[]) {
  %a = f32[] parameter(0)
  %b = f32[] parameter(2)
  %gt = pred[] compare(f32[] %a, f32[] %b), direction=GT
  %nan = pred[] compare(f32[] %a, f32[] %a), direction=NE
  %wins = pred[] or(pred[] %gt, pred[] %nan)
  %value = f32[] select(pred[] %wins, f32[] %a, f32[] %b)
  %eq = pred[] compare(f32[] %a, f32[] %b), direction=EQ
  %i = s32[] parameter(1)
  %j = s32[] parameter(3)
  %lower = pred[] compare(s32[] %i, s32[] %j), direction=LT
  %tie = pred[] and(pred[] %eq, pred[] %lower)
  %keep = pred[] or(pred[] %wins, pred[] %tie)
  %index = s32[] select(pred[] %keep, s32[] %i, s32[] %j)
  ROOT %t = (f32[], s32[]) tuple(f32[] %value, s32[] %index)
}

ENTRY %main (x: f32[4,10]) -> s32[4] {
  %x = f32[4,10]{1,0} parameter(0)
  %iota = s32[10]{0} iota(), iota_dimension=0
  %positions = s32[4,10]{1,0} broadcast(s32[10]{0} %iota), dimensions={1}
  %low = f32[] constant(-inf)
  %zero = s32[] constant(0)
  %r = (f32[4]{0}, s32[4]{0}) reduce(f32[4,10]{1,0} %x, s32[4,10]{1,0} %positions, f32[] %low, s32[] %zero), dimensions={1}, to_apply=%comparator
  ROOT %index = s32[4]{0} get-tuple-element((f32[4]{0}, s32[4]{0}) %r), index=1
}
)";

TEST(ArgReductionsTest, ArgmaxBecomesAMaxAndFirstIndexReductions) {
  ArgReductions pass;
  const char* checks = R"(
CHECK:      %[[NAN:compare.[0-9]+]] = pred[4,10]{1,0} compare(f32[4,10]{1,0} %x, f32[4,10]{1,0} %x), direction=NE
CHECK:      %[[ANY:reduce.[0-9]+]] = pred[4]{0} reduce(pred[4,10]{1,0} %[[NAN]], {{.*}}to_apply=%reducer_or_pred
CHECK:      %[[M:reduce.[0-9]+]] = f32[4]{0} reduce(f32[4,10]{1,0} %x, f32[] %low), dimensions={1}, to_apply=%reducer_maximum_f32
CHECK:      %[[FIRST_NAN:reduce.[0-9]+]] = s32[4]{0} reduce({{.*}}to_apply=%reducer_minimum_s32
CHECK:      compare(f32[4,10]{1,0} %x, f32[4,10]{1,0} %{{broadcast.[0-9]+}}), direction=EQ
CHECK:      %[[FIRST:reduce.[0-9]+]] = s32[4]{0} reduce({{.*}}to_apply=%reducer_minimum_s32
CHECK-NEXT: select(pred[4]{0} %[[ANY]], s32[4]{0} %[[FIRST_NAN]], s32[4]{0} %[[FIRST]])
)";
  ExpectRewrite(pass, kArgmax, checks);
}

// A comparator that keeps the larger value but the higher index on ties is not argmax: left as it is.
TEST(ArgReductionsTest, OtherComparatorsAreLeftAsTheyAre) {
  std::string text = kArgmax;
  text.replace(text.find("direction=LT"), 12, "direction=GT");
  ArgReductions pass;
  ExpectUnchanged(pass, text);
}

// jnp.argmin of integers: the comparator has no NaN part and the init is INT_MAX.
TEST(ArgReductionsTest, IntegerArgminBecomesAMinAndFirstIndexReduction) {
  const char* input = R"(HloModule argmin_s32

%comparator (a: s32[], i: s32[], b: s32[], j: s32[]) -> (s32[], s32[]) {
  %a = s32[] parameter(0)
  %b = s32[] parameter(2)
  %lt = pred[] compare(s32[] %a, s32[] %b), direction=LT
  %value = s32[] select(pred[] %lt, s32[] %a, s32[] %b)
  %eq = pred[] compare(s32[] %a, s32[] %b), direction=EQ
  %i = s32[] parameter(1)
  %j = s32[] parameter(3)
  %first = pred[] compare(s32[] %i, s32[] %j), direction=LT
  %tie = pred[] and(pred[] %eq, pred[] %first)
  %keep = pred[] or(pred[] %lt, pred[] %tie)
  %index = s32[] select(pred[] %keep, s32[] %i, s32[] %j)
  ROOT %t = (s32[], s32[]) tuple(s32[] %value, s32[] %index)
}

ENTRY %main (x: s32[4,6]) -> s32[4] {
  %x = s32[4,6]{1,0} parameter(0)
  %iota = s32[6]{0} iota(), iota_dimension=0
  %positions = s32[4,6]{1,0} broadcast(s32[6]{0} %iota), dimensions={1}
  %high = s32[] constant(2147483647)
  %zero = s32[] constant(0)
  %r = (s32[4]{0}, s32[4]{0}) reduce(s32[4,6]{1,0} %x, s32[4,6]{1,0} %positions, s32[] %high, s32[] %zero), dimensions={1}, to_apply=%comparator
  ROOT %index = s32[4]{0} get-tuple-element((s32[4]{0}, s32[4]{0}) %r), index=1
}
)";
  ArgReductions pass;
  const char* checks = R"(
CHECK-NOT:  direction=NE
CHECK:      %[[M:reduce.[0-9]+]] = s32[4]{0} reduce(s32[4,6]{1,0} %x, s32[] %high), dimensions={1}, to_apply=%reducer_minimum_s32
CHECK:      compare(s32[4,6]{1,0} %x, s32[4,6]{1,0} %{{broadcast.[0-9]+}}), direction=EQ
CHECK:      %[[FIRST:reduce.[0-9]+]] = s32[4]{0} reduce({{.*}}to_apply=%reducer_minimum_s32
CHECK:      tuple(s32[4]{0} %[[M]], s32[4]{0} %[[FIRST]])
)";
  ExpectRewrite(pass, input, checks);
  // The f32 comparator's NaN handling is what tells a float argmin; an integer argmin with an f32-style
  // init (the wrong extreme) is not one.
  std::string wrong_init = input;
  wrong_init.replace(wrong_init.find("constant(2147483647)"), 20, "constant(0)");
  ExpectUnchanged(pass, wrong_init);
}

}  // namespace
}  // namespace tpu::compiler
