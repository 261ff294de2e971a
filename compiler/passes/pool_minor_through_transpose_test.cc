#include "compiler/passes/pool_minor_through_transpose.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

const char* kComputations = R"(HloModule pool

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] add(f32[] %a, f32[] %b)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = f32[] maximum(f32[] %a, f32[] %b)
}

%ge (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %r = pred[] compare(f32[] %a, f32[] %b), direction=GE
}
)";

std::string ReduceWindow(const std::string& in, const std::string& out, const std::string& window,
                         const std::string& reducer) {
  return std::string(kComputations) + "\nENTRY %main (x: " + in + ") -> " + out + " {\n  %x = " + in +
         " parameter(0)\n  %init = f32[] constant(0)\n  ROOT %r = " + out + " reduce-window(" + in +
         " %x, f32[] %init), window={" + window + "}, to_apply=%" + reducer + "\n}\n";
}

std::string SelectAndScatter(const std::string& in, const std::string& windows, const std::string& window) {
  return std::string(kComputations) + "\nENTRY %main (x: " + in + ", s: " + windows + ") -> " + in + " {\n  %x = " +
         in + " parameter(0)\n  %s = " + windows + " parameter(1)\n  %init = f32[] constant(0)\n  ROOT %r = " + in +
         " select-and-scatter(" + in + " %x, " + windows + " %s, f32[] %init), window={" + window +
         "}, select=%ge, scatter=%add\n}\n";
}

struct Case {
  const char* name;
  std::string text;
};

std::vector<Case> Cases() {
  return {
      {"avg pool 1-D of [N,W] over W", ReduceWindow("f32[3,17]", "f32[3,9]", "size=1x3 stride=1x2 pad=0_0x1_1", "add")},
      {"max pool of [W]", ReduceWindow("f32[20]", "f32[10]", "size=2 stride=2", "max")},
      {"avg pool NCHW 3x3", ReduceWindow("f32[2,3,7,6]", "f32[2,3,4,3]", "size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1", "add")},
      {"every dimension windowed", ReduceWindow("f32[6,5]", "f32[5,2]", "size=2x3 stride=1x2", "add")},
      {"max pool gradient of [N,W]", SelectAndScatter("f32[3,17]", "f32[3,9]", "size=1x3 stride=1x2 pad=0_0x1_1")},
      {"max pool gradient NCHW", SelectAndScatter("f32[2,3,7,6]", "f32[2,3,3,3]", "size=1x1x3x2 stride=1x1x2x2")},
  };
}

// Same values, bit for bit, as before the rewrite: the taps keep their order (values with many
// fractional bits, so that another order of the sums would show).
TEST(PoolMinorThroughTransposeTest, EveryCaseInterpretsAsBefore) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(c.text).value();
    ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> value(-1.0f, 1.0f);
    std::vector<hlo::Literal> inputs;
    for (int64_t p = 0; p < module->entry_computation()->num_parameters(); ++p) {
      hlo::Literal x(module->entry_computation()->parameter_instruction(p)->shape());
      // Ties in the operand of select-and-scatter: which one is selected matters.
      for (int64_t i = 0; i < x.element_count(); ++i) x.Set<float>(i, p == 0 && c.text.find("select") != std::string::npos ? static_cast<float>(rng() % 4) : value(rng));
      inputs.push_back(std::move(x));
    }
    std::vector<hlo::Literal> expected = hlo::Interpret(*module, inputs).value();
    PoolMinorThroughTranspose pass;
    ASSERT_TRUE(pass.Run(module.get()).value());
    ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
    for (const hlo::HloInstruction* instruction : module->entry_computation()->instructions()) {
      if (instruction->has_window()) {
        EXPECT_EQ(instruction->window().dimensions.back(), hlo::WindowDimension{}) << instruction->ToString();
      }
    }
    std::vector<hlo::Literal> got = hlo::Interpret(*module, inputs).value();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], expected[0]);
  }
}

TEST(PoolMinorThroughTransposeTest, OneDimensionalPoolingMovesTheBatchLast) {
  PoolMinorThroughTranspose pass;
  ExpectRewrite(pass, Cases()[0].text, R"(
CHECK:      %[[T:transpose.[0-9]+]] = f32[17,3]{1,0} transpose(f32[3,17] %x), dimensions={1,0}
CHECK-NEXT: %[[P:r.[0-9]+]] = f32[9,3]{1,0} reduce-window(f32[17,3]{1,0} %[[T]], f32[] %init), window={size=3x1 stride=2x1 pad=1_1x0_0}, to_apply=%add
CHECK-NEXT: ROOT {{.*}} = f32[3,9]{1,0} transpose(f32[9,3]{1,0} %[[P]]), dimensions={1,0}
)");
}

// NCHW: the channels go last (the last dimension without a window), H and W keep their order.
TEST(PoolMinorThroughTransposeTest, NchwPoolsAsNhwc) {
  PoolMinorThroughTranspose pass;
  ExpectRewrite(pass, Cases()[5].text, R"(
CHECK:      %[[X:transpose.[0-9]+]] = f32[2,7,6,3]{3,2,1,0} transpose(f32[2,3,7,6] %x), dimensions={0,2,3,1}
CHECK-NEXT: %[[S:transpose.[0-9]+]] = f32[2,3,3,3]{3,2,1,0} transpose(f32[2,3,3,3] %s), dimensions={0,2,3,1}
CHECK-NEXT: %[[P:r.[0-9]+]] = f32[2,7,6,3]{3,2,1,0} select-and-scatter(f32[2,7,6,3]{3,2,1,0} %[[X]], f32[2,3,3,3]{3,2,1,0} %[[S]], f32[] %init), window={size=1x3x2x1 stride=1x2x2x1}, select=%ge, scatter=%add
CHECK-NEXT: ROOT {{.*}} = f32[2,3,7,6]{3,2,1,0} transpose(f32[2,7,6,3]{3,2,1,0} %[[P]]), dimensions={0,3,1,2}
)");
}

TEST(PoolMinorThroughTransposeTest, OneDimensionalVectorGetsAUnitMinorDimension) {
  PoolMinorThroughTranspose pass;
  ExpectRewrite(pass, Cases()[1].text, R"(
CHECK:      %[[C:reshape.[0-9]+]] = f32[20,1]{1,0} reshape(f32[20] %x)
CHECK-NEXT: %[[P:r.[0-9]+]] = f32[10,1]{1,0} reduce-window(f32[20,1]{1,0} %[[C]], f32[] %init), window={size=2x1 stride=2x1}, to_apply=%max
CHECK-NEXT: ROOT {{.*}} = f32[10]{0} reshape(f32[10,1]{1,0} %[[P]])
)");
}

TEST(PoolMinorThroughTransposeTest, NhwcPoolingIsLeft) {
  PoolMinorThroughTranspose pass;
  ExpectUnchanged(pass, ReduceWindow("f32[2,7,6,3]", "f32[2,3,3,3]", "size=1x3x2x1 stride=1x2x2x1", "max"));
}

}  // namespace
}  // namespace tpu::compiler
