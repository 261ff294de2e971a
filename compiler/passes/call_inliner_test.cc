#include "compiler/passes/call_inliner.h"

#include <gtest/gtest.h>

#include "compiler/passes/dce.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::RunPassOnText;

TEST(CallInlinerTest, InlinesNestedCallsAndDceDropsTheCallees) {
  const char* input = R"(HloModule calls

%inner (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  ROOT %n = f32[2]{0} negate(f32[2]{0} %a)
}

%outer (x: f32[2], y: f32[2]) -> f32[2] {
  %x = f32[2]{0} parameter(0)
  %y = f32[2]{0} parameter(1)
  %s = f32[2]{0} add(f32[2]{0} %x, f32[2]{0} %y)
  ROOT %c = f32[2]{0} call(f32[2]{0} %s), to_apply=%inner
}

ENTRY %main (p: f32[2], q: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %q = f32[2]{0} parameter(1)
  %call = f32[2]{0} call(f32[2]{0} %p, f32[2]{0} %q), to_apply=%outer
  ROOT %m = f32[2]{0} multiply(f32[2]{0} %call, f32[2]{0} %p)
}
)";
  const char* expected = R"(HloModule calls

ENTRY %main (p: f32[2], q: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  %q = f32[2]{0} parameter(1)
  %s = f32[2]{0} add(f32[2]{0} %p, f32[2]{0} %q)
  %n = f32[2]{0} negate(f32[2]{0} %s)
  ROOT %m = f32[2]{0} multiply(f32[2]{0} %n, f32[2]{0} %p)
}

)";
  CallInliner inliner;
  auto module = hlo::ParseHloModule(input);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<bool> changed = inliner.Run(module->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  // The callees are still there until dead-code elimination removes the computations nothing calls.
  EXPECT_EQ((*module)->computations().size(), 3u);
  DeadCodeElimination dce;
  ASSERT_TRUE(dce.Run(module->get()).ok());
  EXPECT_EQ(hlo::PrintHloModule(**module), expected);
}

TEST(CallInlinerTest, ARootCallAndNameClashesKeepNamesUnique) {
  const char* input = R"(HloModule root_call

%f (a: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %x = f32[] exponential(f32[] %a)
  ROOT %y = f32[] add(f32[] %x, f32[] %a)
}

ENTRY %main (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %r = f32[] call(f32[] %x), to_apply=%f
}
)";
  const char* expected = R"(HloModule root_call

%f (a: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %x = f32[] exponential(f32[] %a)
  ROOT %y = f32[] add(f32[] %x, f32[] %a)
}

ENTRY %main (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %x.0 = f32[] exponential(f32[] %x)
  ROOT %y = f32[] add(f32[] %x.0, f32[] %x)
}

)";
  CallInliner pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(CallInlinerTest, LeavesModulesWithoutCallsAndReducersAlone) {
  const char* input = R"(HloModule no_calls

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %x, f32[] %zero), dimensions={0}, to_apply=%sum
}
)";
  CallInliner pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}

}  // namespace
}  // namespace tpu::compiler
