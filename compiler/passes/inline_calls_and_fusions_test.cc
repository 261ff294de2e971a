#include "compiler/passes/inline_calls_and_fusions.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using testing::CountOpcode;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;

TEST(InlineCallsAndFusionsTest, InlinesNestedCallsAndFusionsWithFreshNames) {
  InlineCallsAndFusions pass;
  const char* input = R"(HloModule calls

%inner (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %twice = f32[4]{0} add(f32[4]{0} %a, f32[4]{0} %a)
}

%outer (b: f32[4]) -> f32[4] {
  %b = f32[4]{0} parameter(0)
  %c = f32[4]{0} call(f32[4]{0} %b), to_apply=%inner
  ROOT %m = f32[4]{0} multiply(f32[4]{0} %c, f32[4]{0} %b)
}

%fused (p: f32[4], q: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %q = f32[4]{0} parameter(1)
  ROOT %s = f32[4]{0} subtract(f32[4]{0} %p, f32[4]{0} %q)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %call = f32[4]{0} call(f32[4]{0} %x), to_apply=%outer
  ROOT %fusion = f32[4]{0} fusion(f32[4]{0} %call, f32[4]{0} %x), kind=kLoop, calls=%fused
}
)";
  // The bodies take the place of the call and the fusion, their parameters bound to the operands.
  const char* checks = R"(
CHECK:      ENTRY %main
CHECK-NEXT:   %x = f32[4]{0} parameter(0)
CHECK-NEXT:   %[[ADD:add.[0-9]+]] = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %x)
CHECK-NEXT:   %[[MUL:multiply.[0-9]+]] = f32[4]{0} multiply(f32[4]{0} %[[ADD]], f32[4]{0} %x)
CHECK-NEXT:   ROOT %subtract.{{[0-9]+}} = f32[4]{0} subtract(f32[4]{0} %[[MUL]], f32[4]{0} %x)
CHECK-NEXT: }
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  // The callees stay for dead-code elimination; the call inside %outer is inlined there too (a called
  // computation runs as code: ProgramComputations).
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kCall), 0);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kFusion), 0);
}

TEST(InlineCallsAndFusionsTest, LeavesAModuleWithoutCallsUnchanged) {
  InlineCallsAndFusions pass;
  ExpectUnchanged(pass, R"(HloModule flat

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %twice = f32[4]{0} add(f32[4]{0} %x, f32[4]{0} %x)
}
)");
}

TEST(InlineCallsAndFusionsTest, RejectsRecursion) {
  InlineCallsAndFusions pass;
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(R"(HloModule recursive

%self (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  ROOT %again = f32[4]{0} call(f32[4]{0} %a), to_apply=%self
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %call = f32[4]{0} call(f32[4]{0} %x), to_apply=%self
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<bool> changed = pass.Run(module->get());
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(changed.status().message().find("nested deeper than 64"), std::string::npos) << changed.status();
}

}  // namespace
}  // namespace tpu::compiler
