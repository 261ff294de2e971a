#include "compiler/passes/elementwise_fusion.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::RunPassOnText;

const char* kChain = R"(HloModule chain

ENTRY %main (x: f32[2,4], y: f32[2,4], w: f32[4,4]) -> (f32[2,4], f32[2,4]) {
  %x = f32[2,4]{1,0} parameter(0)
  %y = f32[2,4]{1,0} parameter(1)
  %w = f32[4,4]{1,0} parameter(2)
  %half = f32[] constant(0.5)
  %halves = f32[2,4]{1,0} broadcast(f32[] %half), dimensions={}
  %m = f32[2,4]{1,0} multiply(f32[2,4]{1,0} %x, f32[2,4]{1,0} %halves)
  %e = f32[2,4]{1,0} exponential(f32[2,4]{1,0} %m)
  %s = f32[2,4]{1,0} subtract(f32[2,4]{1,0} %e, f32[2,4]{1,0} %y)
  %d = f32[2,4]{1,0} dot(f32[2,4]{1,0} %s, f32[4,4]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %a = f32[2,4]{1,0} add(f32[2,4]{1,0} %d, f32[2,4]{1,0} %halves)
  %t = f32[2,4]{1,0} tanh(f32[2,4]{1,0} %a)
  ROOT %out = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(f32[2,4]{1,0} %t, f32[2,4]{1,0} %e)
}
)";

TEST(ElementwiseFusionTest, FusesChainsAroundADotIntoLoopFusions) {
  // %e has a user outside its chain (the tuple), so it ends a fusion rather than being computed twice.
  const char* expected = R"(HloModule chain

ENTRY %main (x: f32[2,4], y: f32[2,4], w: f32[4,4]) -> (f32[2,4], f32[2,4]) {
  %x = f32[2,4]{1,0} parameter(0)
  %y = f32[2,4]{1,0} parameter(1)
  %w = f32[4,4]{1,0} parameter(2)
  %fusion.e = f32[2,4]{1,0} fusion(f32[2,4]{1,0} %x), kind=kLoop, calls=%fused_computation.e
  %s = f32[2,4]{1,0} subtract(f32[2,4]{1,0} %fusion.e, f32[2,4]{1,0} %y)
  %d = f32[2,4]{1,0} dot(f32[2,4]{1,0} %s, f32[4,4]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %fusion.t = f32[2,4]{1,0} fusion(f32[2,4]{1,0} %d), kind=kLoop, calls=%fused_computation.t
  ROOT %out = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(f32[2,4]{1,0} %fusion.t, f32[2,4]{1,0} %fusion.e)
}

%fused_computation.t (param_0: f32[2,4]) -> f32[2,4] {
  %param_0 = f32[2,4]{1,0} parameter(0)
  %half = f32[] constant(0.5)
  %halves = f32[2,4]{1,0} broadcast(f32[] %half), dimensions={}
  %a = f32[2,4]{1,0} add(f32[2,4]{1,0} %param_0, f32[2,4]{1,0} %halves)
  ROOT %t = f32[2,4]{1,0} tanh(f32[2,4]{1,0} %a)
}

%fused_computation.e (param_0: f32[2,4]) -> f32[2,4] {
  %param_0 = f32[2,4]{1,0} parameter(0)
  %half = f32[] constant(0.5)
  %halves = f32[2,4]{1,0} broadcast(f32[] %half), dimensions={}
  %m = f32[2,4]{1,0} multiply(f32[2,4]{1,0} %param_0, f32[2,4]{1,0} %halves)
  ROOT %e = f32[2,4]{1,0} exponential(f32[2,4]{1,0} %m)
}

)";
  ElementwiseFusion pass;
  testing::PassResult result = RunPassOnText(pass, kChain);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(ElementwiseFusionTest, FusedModuleVerifiesAndInterpretsToTheSameBits) {
  auto module = hlo::ParseHloModule(kChain);
  ASSERT_TRUE(module.ok()) << module.status();
  std::mt19937 rng(5);
  std::vector<hlo::Literal> arguments;
  for (const hlo::HloInstruction* parameter : (*module)->entry_computation()->parameter_instructions())
    arguments.push_back(hlo::Literal::Random(parameter->shape(), rng));
  auto before = hlo::Interpret(**module, arguments);
  ASSERT_TRUE(before.ok()) << before.status();
  ElementwiseFusion pass;
  ASSERT_TRUE(*pass.Run(module->get()));
  Status verified = hlo::VerifyHloModule(**module);
  ASSERT_TRUE(verified.ok()) << verified;
  auto after = hlo::Interpret(**module, arguments);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(before->size(), after->size());
  for (size_t i = 0; i < before->size(); ++i) EXPECT_EQ((*before)[i], (*after)[i]) << i;
}

TEST(ElementwiseFusionTest, FusesInsideLoopBodiesWithUniqueComputationNames) {
  // The body and the entry both have an %e: the two fused computations need different names.
  const char* input = R"(HloModule loop_fusion

%cond (s: f32[4]) -> pred[] {
  %s = f32[4]{0} parameter(0)
  ROOT %f = pred[] constant(false)
}

%body (s: f32[4]) -> f32[4] {
  %s = f32[4]{0} parameter(0)
  %n = f32[4]{0} negate(f32[4]{0} %s)
  ROOT %e = f32[4]{0} exponential(f32[4]{0} %n)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %w = f32[4]{0} while(f32[4]{0} %x), condition=%cond, body=%body
  %n = f32[4]{0} negate(f32[4]{0} %w)
  ROOT %e = f32[4]{0} exponential(f32[4]{0} %n)
}
)";
  ElementwiseFusion pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_NE(result.printed.find("%fused_computation.e ("), std::string::npos) << result.printed;
  EXPECT_NE(result.printed.find("%fused_computation.e.1 ("), std::string::npos) << result.printed;
  EXPECT_NE(result.printed.find("ROOT %fusion.e = f32[4]{0} fusion(f32[4]{0} %s), kind=kLoop"), std::string::npos)
      << result.printed;
  // The condition's constant is not elementwise work: it stays.
  EXPECT_NE(result.printed.find("ROOT %f = pred[] constant(false)"), std::string::npos);
}

TEST(ElementwiseFusionTest, LeavesSingleOpsDifferentShapesAndReductionsAlone) {
  const char* input = R"(HloModule nothing_to_fuse

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %n = f32[] negate(f32[] %b)
  ROOT %s = f32[] subtract(f32[] %a, f32[] %n)
}

ENTRY %main (x: f32[2,4], v: f32[4]) -> (f32[2,4], f32[]) {
  %x = f32[2,4]{1,0} parameter(0)
  %v = f32[4]{0} parameter(1)
  %nv = f32[4]{0} negate(f32[4]{0} %v)
  %bv = f32[2,4]{1,0} broadcast(f32[4]{0} %nv), dimensions={1}
  %a = f32[2,4]{1,0} add(f32[2,4]{1,0} %x, f32[2,4]{1,0} %bv)
  %zero = f32[] constant(0)
  %r = f32[] reduce(f32[2,4]{1,0} %a, f32[] %zero), dimensions={0,1}, to_apply=%sum
  ROOT %t = (f32[2,4]{1,0}, f32[]) tuple(f32[2,4]{1,0} %a, f32[] %r)
}
)";
  ElementwiseFusion pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}

// With copy_in for every broadcast (codegen preparation copies the ones it reads in place), a broadcast of
// a computed row goes into the fusion and the row itself becomes the fusion's operand; the broadcast,
// used by nothing else, goes.
TEST(ElementwiseFusionTest, CopiesInTheBroadcastsItIsToldToWithTheirSourceAsParameter) {
  const char* input = R"(HloModule bias

ENTRY %main (x: f32[2,4], v: f32[4]) -> f32[2,4] {
  %x = f32[2,4]{1,0} parameter(0)
  %v = f32[4]{0} parameter(1)
  %nv = f32[4]{0} negate(f32[4]{0} %v)
  %bv = f32[2,4]{1,0} broadcast(f32[4]{0} %nv), dimensions={1}
  %a = f32[2,4]{1,0} add(f32[2,4]{1,0} %x, f32[2,4]{1,0} %bv)
  ROOT %e = f32[2,4]{1,0} exponential(f32[2,4]{1,0} %a)
}
)";
  const char* expected = R"(HloModule bias

ENTRY %main (x: f32[2,4], v: f32[4]) -> f32[2,4] {
  %x = f32[2,4]{1,0} parameter(0)
  %v = f32[4]{0} parameter(1)
  %nv = f32[4]{0} negate(f32[4]{0} %v)
  ROOT %fusion.e = f32[2,4]{1,0} fusion(f32[2,4]{1,0} %x, f32[4]{0} %nv), kind=kLoop, calls=%fused_computation.e
}

%fused_computation.e (param_0: f32[2,4], param_1: f32[4]) -> f32[2,4] {
  %param_0 = f32[2,4]{1,0} parameter(0)
  %param_1 = f32[4]{0} parameter(1)
  %bv = f32[2,4]{1,0} broadcast(f32[4]{0} %param_1), dimensions={1}
  %a = f32[2,4]{1,0} add(f32[2,4]{1,0} %param_0, f32[2,4]{1,0} %bv)
  ROOT %e = f32[2,4]{1,0} exponential(f32[2,4]{1,0} %a)
}

)";
  ElementwiseFusionOptions options;
  options.copy_in = [](const hlo::HloInstruction&, const hlo::HloInstruction&) { return true; };
  ElementwiseFusion pass(options);
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

}  // namespace
}  // namespace tpu::compiler
