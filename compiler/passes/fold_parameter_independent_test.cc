#include "compiler/passes/fold_parameter_independent.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using testing::CountOpcode;
using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// jax.random.key(0, impl='rbg') under jit: the key is constant, so the generator's bits and new state
// fold, element by element (the u64 state itself never reaches the device).
TEST(FoldParameterIndependentTest, FoldsAnRngBitGeneratorOfAConstantKey) {
  FoldParameterIndependent pass;
  const char* input = R"(HloModule rbg

ENTRY %main (x: u32[5]) -> (u32[4], u32[5]) {
  %x = u32[5]{0} parameter(0)
  %k = u32[4]{0} constant({1, 2, 3, 4})
  %w = u32[2,2]{1,0} reshape(u32[4]{0} %k)
  %s = u64[2]{0} bitcast-convert(u32[2,2]{1,0} %w)
  %r = (u64[2]{0}, u32[5]{0}) rng-bit-generator(u64[2]{0} %s), algorithm=rng_default
  %next = u64[2]{0} get-tuple-element((u64[2]{0}, u32[5]{0}) %r), index=0
  %nw = u32[2,2]{1,0} bitcast-convert(u64[2]{0} %next)
  %nk = u32[4]{0} reshape(u32[2,2]{1,0} %nw)
  %b = u32[5]{0} get-tuple-element((u64[2]{0}, u32[5]{0}) %r), index=1
  %y = u32[5]{0} xor(u32[5]{0} %b, u32[5]{0} %x)
  ROOT %t = (u32[4]{0}, u32[5]{0}) tuple(u32[4]{0} %nk, u32[5]{0} %y)
}
)";
  // The counter 0x400000003 advanced by two blocks of four words.
  const char* checks = R"(
CHECK-NOT:  rng-bit-generator
CHECK:      %[[BITS:constant.[0-9]+]] = u32[5]{0} constant({{.*}})
CHECK:      %y = u32[5]{0} xor(u32[5]{0} %[[BITS]], u32[5]{0} %x)
CHECK:      %[[KEY:constant.[0-9]+]] = u32[4]{0} constant({1, 2, 5, 4})
CHECK:      ROOT %t = (u32[4]{0}, u32[5]{0}) tuple(u32[4]{0} %[[KEY]], u32[5]{0} %y)
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  auto original = hlo::ParseHloModule(input);
  ASSERT_TRUE(original.ok());
  std::vector<hlo::Literal> arguments = {hlo::Literal::CreateR1<uint32_t>({0, 1, 2, 3, 0xffffffffu})};
  auto expected = hlo::Interpret(**original, arguments);
  auto got = hlo::Interpret(*result.module, arguments);
  ASSERT_TRUE(expected.ok() && got.ok());
  ASSERT_EQ(got->size(), 2u);
  EXPECT_EQ((*got)[0], (*expected)[0]);
  EXPECT_EQ((*got)[1], (*expected)[1]);
}

TEST(FoldParameterIndependentTest, FoldsChainsOfValuesThatNeedNoParameter) {
  FoldParameterIndependent pass;
  const char* input = R"(HloModule mask

ENTRY %main (x: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3]{1,0} parameter(0)
  %iota = s32[2,3]{1,0} iota(), iota_dimension=1
  %one = s32[] constant(1)
  %ones = s32[2,3]{1,0} broadcast(s32[] %one), dimensions={}
  %mask = pred[2,3]{1,0} compare(s32[2,3]{1,0} %iota, s32[2,3]{1,0} %ones), direction=GE
  %zero = f32[] constant(0)
  %zeros = f32[2,3]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %masked = f32[2,3]{1,0} select(pred[2,3]{1,0} %mask, f32[2,3]{1,0} %x, f32[2,3]{1,0} %zeros)
}
)";
  // The iota, the s32 broadcast and the compare fold in one walk into the mask; the f32 splat of a scalar
  // stays for codegen.
  const char* checks = R"(
CHECK-NOT:  iota
CHECK:      %zeros = f32[2,3]{1,0} broadcast(f32[] %zero), dimensions={}
CHECK-NEXT: %[[MASK:constant.[0-9]+]] = pred[2,3]{1,0} constant({ {false, true, true}, {false, true, true} })
CHECK-NEXT: ROOT %masked = f32[2,3]{1,0} select(pred[2,3]{1,0} %[[MASK]], f32[2,3]{1,0} %x, f32[2,3]{1,0} %zeros)
CHECK-NOT:  compare
)";
  testing::PassResult result = ExpectRewrite(pass, input, checks);
  ASSERT_NE(result.module, nullptr);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kCompare), 0);
  EXPECT_EQ(CountOpcode(*result.module, HloOpcode::kBroadcast), 1);
}

TEST(FoldParameterIndependentTest, FoldsAReduceOfConstants) {
  FoldParameterIndependent pass;
  const char* input = R"(HloModule mean

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[3]) -> f32[3] {
  %x = f32[3]{0} parameter(0)
  %dims = f32[2]{0} constant({2, 3})
  %zero = f32[] constant(0)
  %count = f32[] reduce(f32[2]{0} %dims, f32[] %zero), dimensions={0}, to_apply=%add
  %counts = f32[3]{0} broadcast(f32[] %count), dimensions={}
  ROOT %mean = f32[3]{0} divide(f32[3]{0} %x, f32[3]{0} %counts)
}
)";
  // The reduce folds into a scalar f32 constant, whose broadcast is then a splat codegen keeps.
  const char* checks = R"(
CHECK:      %[[COUNT:constant.[0-9]+]] = f32[] constant(5)
CHECK-NEXT: %counts = f32[3]{0} broadcast(f32[] %[[COUNT]]), dimensions={}
CHECK-NOT:  reduce(
)";
  ExpectRewrite(pass, input, checks);
}

TEST(FoldParameterIndependentTest, KeepsSplatsRowBroadcastsAndParameterDependentValues) {
  FoldParameterIndependent pass;
  ExpectUnchanged(pass, R"(HloModule kept

ENTRY %main (x: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3]{1,0} parameter(0)
  %bias = f32[3]{0} constant({1, 2, 3})
  %biases = f32[2,3]{1,0} broadcast(f32[3]{0} %bias), dimensions={1}
  %two = f32[] constant(2)
  %twos = f32[2,3]{1,0} broadcast(f32[] %two), dimensions={}
  %scaled = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %x, f32[2,3]{1,0} %twos)
  ROOT %shifted = f32[2,3]{1,0} add(f32[2,3]{1,0} %scaled, f32[2,3]{1,0} %biases)
}
)");
}

}  // namespace
}  // namespace tpu::compiler
