#include "compiler/passes/dce.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::RunPassOnText;

TEST(DeadCodeEliminationTest, RemovesUnusedInstructionsAndComputations) {
  const char* input = R"(HloModule dead

%unused_add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[2], y: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  %y = f32[2]{0} parameter(1)
  %dead = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %y)
  %dead2 = f32[2]{0} maximum(f32[2]{0} %dead, f32[2]{0} %x)
  ROOT %live = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %x)
}
)";
  const char* expected = R"(HloModule dead

ENTRY %main (x: f32[2], y: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  %y = f32[2]{0} parameter(1)
  ROOT %live = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %x)
}

)";
  DeadCodeElimination pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(DeadCodeEliminationTest, LeavesALiveModuleUnchanged) {
  const char* input = R"(HloModule live

ENTRY %main (x: f32[2], y: f32[2]) -> (f32[2], f32[2]) {
  %x = f32[2]{0} parameter(0)
  %y = f32[2]{0} parameter(1)
  %a = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %y)
  ROOT %t = (f32[2]{0}, f32[2]{0}) tuple(f32[2]{0} %a, f32[2]{0} %y)
}
)";
  DeadCodeElimination pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}


TEST(DeadCodeEliminationTest, RemovesComputationsOnlyDeadCodeCalled) {
  // %outer is called only by a dead call, and %inner only by %outer: both go. %sum is still a reducer.
  const char* input = R"(HloModule dead_callees

%inner (a: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %n = f32[] negate(f32[] %a)
}

%outer (b: f32[]) -> f32[] {
  %b = f32[] parameter(0)
  ROOT %c = f32[] call(f32[] %b), to_apply=%inner
}

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[4]) -> f32[] {
  %p = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  %unused = f32[] call(f32[] %zero), to_apply=%outer
  ROOT %r = f32[] reduce(f32[4]{0} %p, f32[] %zero), dimensions={0}, to_apply=%sum
}
)";
  const char* expected = R"(HloModule dead_callees

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

ENTRY %main (p: f32[4]) -> f32[] {
  %p = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %p, f32[] %zero), dimensions={0}, to_apply=%sum
}

)";
  DeadCodeElimination pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(DeadCodeEliminationTest, KeepsSideEffectsWhoseValueNobodyUses) {
  const char* input = R"(HloModule effects

%sum (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}

%reduce_everywhere (v: f32[4]) -> f32[4] {
  %v = f32[4]{0} parameter(0)
  ROOT %r = f32[4]{0} all-reduce(f32[4]{0} %v), replica_groups={}, to_apply=%sum
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %n = f32[4]{0} negate(f32[4]{0} %p)
  %ar = f32[4]{0} all-reduce(f32[4]{0} %n), replica_groups={}, to_apply=%sum
  %called = f32[4]{0} call(f32[4]{0} %p), to_apply=%reduce_everywhere
  ROOT %c = f32[4]{0} copy(f32[4]{0} %p)
}
)";
  DeadCodeElimination pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}

}  // namespace
}  // namespace tpu::compiler
