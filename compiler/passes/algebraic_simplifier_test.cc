#include "compiler/passes/algebraic_simplifier.h"

#include <gtest/gtest.h>

#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::Canonical;
using testing::RunPassOnText;

TEST(AlgebraicSimplifierTest, RemovesIdentityArithmetic) {
  const char* input = R"(HloModule identities

ENTRY %main (x: f32[2,3], n: s32[2,3]) -> (f32[2,3], s32[2,3]) {
  %x = f32[2,3]{1,0} parameter(0)
  %n = s32[2,3]{1,0} parameter(1)
  %zero = f32[] constant(0)
  %zeros = f32[2,3]{1,0} broadcast(f32[] %zero), dimensions={}
  %one = f32[] constant(1)
  %ones = f32[2,3]{1,0} broadcast(f32[] %one), dimensions={}
  %a = f32[2,3]{1,0} add(f32[2,3]{1,0} %zeros, f32[2,3]{1,0} %x)
  %m = f32[2,3]{1,0} multiply(f32[2,3]{1,0} %a, f32[2,3]{1,0} %ones)
  %s = f32[2,3]{1,0} subtract(f32[2,3]{1,0} %m, f32[2,3]{1,0} %zeros)
  %d = f32[2,3]{1,0} divide(f32[2,3]{1,0} %s, f32[2,3]{1,0} %ones)
  %nn = f32[2,3]{1,0} negate(f32[2,3]{1,0} %d)
  %nnn = f32[2,3]{1,0} negate(f32[2,3]{1,0} %nn)
  %c = f32[2,3]{1,0} convert(f32[2,3]{1,0} %nnn)
  %ione = s32[2,3]{1,0} constant({ {1, 1, 1}, {1, 1, 1} })
  %im = s32[2,3]{1,0} multiply(s32[2,3]{1,0} %n, s32[2,3]{1,0} %ione)
  ROOT %t = (f32[2,3]{1,0}, s32[2,3]{1,0}) tuple(f32[2,3]{1,0} %c, s32[2,3]{1,0} %im)
}
)";
  const char* expected = R"(HloModule identities

ENTRY %main (x: f32[2,3], n: s32[2,3]) -> (f32[2,3], s32[2,3]) {
  %x = f32[2,3]{1,0} parameter(0)
  %n = s32[2,3]{1,0} parameter(1)
  ROOT %t = (f32[2,3]{1,0}, s32[2,3]{1,0}) tuple(f32[2,3]{1,0} %x, s32[2,3]{1,0} %n)
}

)";
  AlgebraicSimplifier pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(AlgebraicSimplifierTest, CollapsesReshapeAndTransposeChains) {
  const char* input = R"(HloModule layout_ops

ENTRY %main (x: f32[2,3,4]) -> (f32[6,4], f32[4,2,3], f32[2,3,4], f32[2,3,4], f32[2,3,4]) {
  %x = f32[2,3,4]{2,1,0} parameter(0)
  %r1 = f32[24]{0} reshape(f32[2,3,4]{2,1,0} %x)
  %r2 = f32[6,4]{1,0} reshape(f32[24]{0} %r1)
  %t1 = f32[3,4,2]{2,1,0} transpose(f32[2,3,4]{2,1,0} %x), dimensions={1,2,0}
  %t2 = f32[4,2,3]{2,1,0} transpose(f32[3,4,2]{2,1,0} %t1), dimensions={1,2,0}
  %t3 = f32[2,3,4]{2,1,0} transpose(f32[4,2,3]{2,1,0} %t2), dimensions={1,2,0}
  %same = f32[2,3,4]{2,1,0} reshape(f32[2,3,4]{2,1,0} %x)
  %b = f32[2,3,4]{2,1,0} broadcast(f32[2,3,4]{2,1,0} %x), dimensions={0,1,2}
  ROOT %t = (f32[6,4]{1,0}, f32[4,2,3]{2,1,0}, f32[2,3,4]{2,1,0}, f32[2,3,4]{2,1,0}, f32[2,3,4]{2,1,0}) tuple(f32[6,4]{1,0} %r2, f32[4,2,3]{2,1,0} %t2, f32[2,3,4]{2,1,0} %t3, f32[2,3,4]{2,1,0} %same, f32[2,3,4]{2,1,0} %b)
}
)";
  const char* expected = R"(HloModule layout_ops

ENTRY %main (x: f32[2,3,4]) -> (f32[6,4], f32[4,2,3], f32[2,3,4], f32[2,3,4], f32[2,3,4]) {
  %x = f32[2,3,4]{2,1,0} parameter(0)
  %reshape.0 = f32[6,4]{1,0} reshape(f32[2,3,4]{2,1,0} %x)
  %transpose.1 = f32[4,2,3]{2,1,0} transpose(f32[2,3,4]{2,1,0} %x), dimensions={2,0,1}
  ROOT %t = (f32[6,4]{1,0}, f32[4,2,3]{2,1,0}, f32[2,3,4]{2,1,0}, f32[2,3,4]{2,1,0}, f32[2,3,4]{2,1,0}) tuple(f32[6,4]{1,0} %reshape.0, f32[4,2,3]{2,1,0} %transpose.1, f32[2,3,4]{2,1,0} %x, f32[2,3,4]{2,1,0} %x, f32[2,3,4]{2,1,0} %x)
}

)";
  AlgebraicSimplifier pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(AlgebraicSimplifierTest, RemovesNoOpDataMovementAndConstantSelects) {
  const char* input = R"(HloModule no_ops

ENTRY %main (x: f32[4], y: f32[4], p: pred[4]) -> (f32[4], f32[4], f32[4], f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %p = pred[4]{0} parameter(2)
  %cat = f32[4]{0} concatenate(f32[4]{0} %x), dimensions={0}
  %rev = f32[4]{0} reverse(f32[4]{0} %cat), dimensions={}
  %zero = f32[] constant(0)
  %pad = f32[4]{0} pad(f32[4]{0} %rev, f32[] %zero), padding=0_0
  %true = pred[] constant(true)
  %all_true = pred[4]{0} broadcast(pred[] %true), dimensions={}
  %pick_x = f32[4]{0} select(pred[4]{0} %all_true, f32[4]{0} %pad, f32[4]{0} %y)
  %false = pred[] constant(false)
  %all_false = pred[4]{0} broadcast(pred[] %false), dimensions={}
  %pick_y = f32[4]{0} select(pred[4]{0} %all_false, f32[4]{0} %x, f32[4]{0} %y)
  %same = f32[4]{0} select(pred[4]{0} %p, f32[4]{0} %y, f32[4]{0} %y)
  %real = f32[4]{0} select(pred[4]{0} %p, f32[4]{0} %x, f32[4]{0} %y)
  %flip = f32[4]{0} reverse(f32[4]{0} %x), dimensions={0}
  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %pick_x, f32[4]{0} %pick_y, f32[4]{0} %same, f32[4]{0} %real, f32[4]{0} %flip)
}
)";
  const char* expected = R"(HloModule no_ops

ENTRY %main (x: f32[4], y: f32[4], p: pred[4]) -> (f32[4], f32[4], f32[4], f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %p = pred[4]{0} parameter(2)
  %real = f32[4]{0} select(pred[4]{0} %p, f32[4]{0} %x, f32[4]{0} %y)
  %flip = f32[4]{0} reverse(f32[4]{0} %x), dimensions={0}
  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(f32[4]{0} %x, f32[4]{0} %y, f32[4]{0} %y, f32[4]{0} %real, f32[4]{0} %flip)
}

)";
  AlgebraicSimplifier pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(AlgebraicSimplifierTest, LeavesRealWorkAndScalarBroadcastsAlone) {
  const char* input = R"(HloModule real_work

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4], f32[2,2], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  %two = f32[] constant(2)
  %twos = f32[4]{0} broadcast(f32[] %two), dimensions={}
  %m = f32[4]{0} multiply(f32[4]{0} %x, f32[4]{0} %twos)
  %zero = f32[] constant(0)
  %zeros = f32[4]{0} broadcast(f32[] %zero), dimensions={}
  %zx = f32[4]{0} subtract(f32[4]{0} %zeros, f32[4]{0} %y)
  %r = f32[2,2]{1,0} reshape(f32[4]{0} %x)
  %n = f32[4]{0} negate(f32[4]{0} %y)
  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[2,2]{1,0}, f32[4]{0}) tuple(f32[4]{0} %m, f32[4]{0} %zx, f32[2,2]{1,0} %r, f32[4]{0} %n)
}
)";
  AlgebraicSimplifier pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, Canonical(input));
}

}  // namespace
}  // namespace tpu::compiler
