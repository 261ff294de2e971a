#include "compiler/passes/cse.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::RunPassOnText;

TEST(CseTest, MergesEqualInstructionsIgnoringMetadata) {
  const char* input = R"(HloModule cse

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %c1 = f32[] constant(2)
  %c2 = f32[] constant(2)
  %b1 = f32[4]{0} broadcast(f32[] %c1), dimensions={}
  %b2 = f32[4]{0} broadcast(f32[] %c2), dimensions={}
  %m1 = f32[4]{0} multiply(f32[4]{0} %x, f32[4]{0} %b1), metadata={op_type="aten__mul" op_name="first"}
  %m2 = f32[4]{0} multiply(f32[4]{0} %x, f32[4]{0} %b2), metadata={op_type="aten__mul" op_name="second"}
  %a1 = f32[4]{0} add(f32[4]{0} %m1, f32[4]{0} %y)
  %a2 = f32[4]{0} add(f32[4]{0} %m2, f32[4]{0} %y)
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %a1, f32[4]{0} %a2)
}
)";
  const char* expected = R"(HloModule cse

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %c1 = f32[] constant(2)
  %b1 = f32[4]{0} broadcast(f32[] %c1), dimensions={}
  %m1 = f32[4]{0} multiply(f32[4]{0} %x, f32[4]{0} %b1), metadata={op_type="aten__mul" op_name="first"}
  %a1 = f32[4]{0} add(f32[4]{0} %m1, f32[4]{0} %y)
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %a1, f32[4]{0} %a1)
}

)";
  CommonSubexpressionElimination pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(CseTest, KeepsDifferentAttributesLayoutsSideEffectsAndElidedConstants) {
  const char* input = R"(HloModule distinct

ENTRY %main (x: f32[2,2]) -> (f32[2,2], f32[2,2], f32[2,2], f32[2,2], f32[2], f32[2], f32[2,2], f32[2,2]) {
  %x = f32[2,2]{1,0} parameter(0)
  %t1 = f32[2,2]{1,0} transpose(f32[2,2]{1,0} %x), dimensions={1,0}
  %t2 = f32[2,2]{1,0} transpose(f32[2,2]{1,0} %x), dimensions={0,1}
  %c1 = f32[2,2]{1,0} copy(f32[2,2]{1,0} %x)
  %c2 = f32[2,2]{0,1} copy(f32[2,2]{1,0} %x)
  %e1 = f32[2]{0} constant({...})
  %e2 = f32[2]{0} constant({...})
  %r1 = f32[2,2]{1,0} custom-call(f32[2,2]{1,0} %x), custom_call_target="AwsNeuronTransferWithStaticRing"
  %r2 = f32[2,2]{1,0} custom-call(f32[2,2]{1,0} %x), custom_call_target="AwsNeuronTransferWithStaticRing"
  ROOT %t = (f32[2,2]{1,0}, f32[2,2]{1,0}, f32[2,2]{1,0}, f32[2,2]{0,1}, f32[2]{0}, f32[2]{0}, f32[2,2]{1,0}, f32[2,2]{1,0}) tuple(f32[2,2]{1,0} %t1, f32[2,2]{1,0} %t2, f32[2,2]{1,0} %c1, f32[2,2]{0,1} %c2, f32[2]{0} %e1, f32[2]{0} %e2, f32[2,2]{1,0} %r1, f32[2,2]{1,0} %r2)
}
)";
  CommonSubexpressionElimination pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}

}  // namespace
}  // namespace tpu::compiler
