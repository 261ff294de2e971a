#include "compiler/passes/split_variadic_reduces.h"

#include <gtest/gtest.h>

#include <random>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// lax.reduce((x, y), (0., -inf), lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])), (1,)).
const char* kSumAndMax = R"(HloModule sum_and_max

%region (a0: f32[], a1: f32[], b0: f32[], b1: f32[]) -> (f32[], f32[]) {
  %a0 = f32[] parameter(0)
  %b0 = f32[] parameter(2)
  %sum = f32[] add(f32[] %a0, f32[] %b0)
  %a1 = f32[] parameter(1)
  %b1 = f32[] parameter(3)
  %max = f32[] maximum(f32[] %a1, f32[] %b1)
  ROOT %t = (f32[], f32[]) tuple(f32[] %sum, f32[] %max)
}

ENTRY %main (x: f32[4,6], y: f32[4,6]) -> (f32[4], f32[4]) {
  %x = f32[4,6]{1,0} parameter(0)
  %y = f32[4,6]{1,0} parameter(1)
  %zero = f32[] constant(0)
  %low = f32[] constant(-inf)
  %r = (f32[4]{0}, f32[4]{0}) reduce(f32[4,6]{1,0} %x, f32[4,6]{1,0} %y, f32[] %zero, f32[] %low), dimensions={1}, to_apply=%region
  %s = f32[4]{0} get-tuple-element((f32[4]{0}, f32[4]{0}) %r), index=0
  %m = f32[4]{0} get-tuple-element((f32[4]{0}, f32[4]{0}) %r), index=1
  ROOT %out = (f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %s, f32[4]{0} %m)
}
)";

TEST(SplitVariadicReducesTest, IndependentPartsBecomeOneReduceEach) {
  SplitVariadicReduces pass;
  testing::PassResult result = ExpectRewrite(pass, kSumAndMax, R"(
CHECK:      %[[S:reduce.[0-9]+]] = f32[4]{0} reduce(f32[4,6]{1,0} %x, f32[] %zero), dimensions={1}, to_apply=%region_part0
CHECK-NEXT: %[[M:reduce.[0-9]+]] = f32[4]{0} reduce(f32[4,6]{1,0} %y, f32[] %low), dimensions={1}, to_apply=%region_part1
CHECK-NEXT: tuple(f32[4]{0} %[[S]], f32[4]{0} %[[M]])
CHECK:      %region_part0 (a: f32[], b: f32[]) -> f32[] {
CHECK:        ROOT {{.*}} = f32[] add(f32[] %a, f32[] %b)
CHECK:      %region_part1 (a: f32[], b: f32[]) -> f32[] {
CHECK:        ROOT {{.*}} = f32[] maximum(f32[] %a, f32[] %b)
)");
  ASSERT_NE(result.module, nullptr);
  // Same values, bit for bit (the sum adds in the same order).
  std::unique_ptr<hlo::HloModule> before = hlo::ParseHloModule(kSumAndMax).value();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<hlo::Literal> inputs;
  for (int p = 0; p < 2; ++p) {
    hlo::Literal x(before->entry_computation()->parameter_instruction(p)->shape());
    for (int64_t i = 0; i < x.element_count(); ++i) x.Set<float>(i, value(rng));
    inputs.push_back(std::move(x));
  }
  ASSERT_TRUE(hlo::VerifyHloModule(*result.module).ok()) << hlo::VerifyHloModule(*result.module);
  EXPECT_TRUE(hlo::Interpret(*result.module, inputs).value() == hlo::Interpret(*before, inputs).value());
}

// A part that reads the other operand (argmax's index follows the values) stays one reduce.
TEST(SplitVariadicReducesTest, PartsThatLookAtEachOtherAreLeft) {
  std::string text = kSumAndMax;
  text.replace(text.find("maximum(f32[] %a1, f32[] %b1)"), 29, "maximum(f32[] %a1, f32[] %b0)");
  SplitVariadicReduces pass;
  ExpectUnchanged(pass, text);
}

}  // namespace
}  // namespace tpu::compiler
