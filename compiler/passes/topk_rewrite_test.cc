#include "compiler/passes/topk_rewrite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::RunPassOnText;

std::string TopKModule(int rows, int cols, int k, const char* direction, bool total_order = false) {
  const std::string r = std::to_string(rows), c = std::to_string(cols), kk = std::to_string(k);
  return "HloModule topk\n\n%cmp (p0: f32[], p1: f32[], p2: s32[], p3: s32[]) -> pred[] {\n"
         "  %p2 = s32[] parameter(2)\n  %p3 = s32[] parameter(3)\n  %p0 = f32[] parameter(0)\n"
         "  %p1 = f32[] parameter(1)\n  ROOT %gt = pred[] compare(f32[] %p0, f32[] %p1), direction=" +
         std::string(direction) + (total_order ? ", type=TOTALORDER" : "") + "\n}\n\n"
         "ENTRY %main (x: f32[" + r + "," + c + "]) -> (f32[" + r + "," + kk + "], s32[" + r + "," + kk + "]) {\n"
         "  %x = f32[" + r + "," + c + "]{1,0} parameter(0)\n"
         "  %iota = s32[" + c + "]{0} iota(), iota_dimension=0\n"
         "  %b = s32[" + r + "," + c + "]{1,0} broadcast(s32[" + c + "]{0} %iota), dimensions={1}\n"
         "  %sort = (f32[" + r + "," + c + "]{1,0}, s32[" + r + "," + c + "]{1,0}) sort(f32[" + r + "," + c +
         "]{1,0} %x, s32[" + r + "," + c + "]{1,0} %b), dimensions={1}, is_stable=true, to_apply=%cmp\n"
         "  %v = f32[" + r + "," + c + "]{1,0} get-tuple-element((f32[" + r + "," + c + "]{1,0}, s32[" + r + "," + c +
         "]{1,0}) %sort), index=0\n"
         "  %vs = f32[" + r + "," + kk + "]{1,0} slice(f32[" + r + "," + c + "]{1,0} %v), slice={[0:" + r + "], [0:" +
         kk + "]}\n"
         "  %i = s32[" + r + "," + c + "]{1,0} get-tuple-element((f32[" + r + "," + c + "]{1,0}, s32[" + r + "," + c +
         "]{1,0}) %sort), index=1\n"
         "  %is = s32[" + r + "," + kk + "]{1,0} slice(s32[" + r + "," + c + "]{1,0} %i), slice={[0:" + r + "], [0:" +
         kk + "]}\n"
         "  ROOT %t = (f32[" + r + "," + kk + "]{1,0}, s32[" + r + "," + kk + "]{1,0}) tuple(f32[" + r + "," + kk +
         "]{1,0} %vs, s32[" + r + "," + kk + "]{1,0} %is)\n}\n";
}

TEST(TopKRewriteTest, RewritesSortAndSlicesIntoRoundsOfMaxAndFirstIndex) {
  const char* expected = R"(HloModule topk

ENTRY %main (x: f32[3,4]) -> (f32[3,2], s32[3,2]) {
  %x = f32[3,4]{1,0} parameter(0)
  %iota = s32[4]{0} iota(), iota_dimension=0
  %b = s32[3,4]{1,0} broadcast(s32[4]{0} %iota), dimensions={1}
  %constant.0 = f32[] constant(-inf)
  %reduce.5 = f32[3]{0} reduce(f32[3,4]{1,0} %x, f32[] %constant.0), dimensions={1}, to_apply=%reducer_maximum_f32
  %reshape.10 = f32[1,3]{1,0} reshape(f32[3]{0} %reduce.5)
  %broadcast.6 = f32[3,4]{1,0} broadcast(f32[3]{0} %reduce.5), dimensions={0}
  %compare.7 = pred[3,4]{1,0} compare(f32[3,4]{1,0} %x, f32[3,4]{1,0} %broadcast.6), direction=EQ
  %constant.2 = s32[] constant(4)
  %broadcast.3 = s32[3,4]{1,0} broadcast(s32[] %constant.2), dimensions={}
  %select.8 = s32[3,4]{1,0} select(pred[3,4]{1,0} %compare.7, s32[3,4]{1,0} %b, s32[3,4]{1,0} %broadcast.3)
  %constant.4 = s32[] constant(2147483647)
  %reduce.9 = s32[3]{0} reduce(s32[3,4]{1,0} %select.8, s32[] %constant.4), dimensions={1}, to_apply=%reducer_minimum_s32
  %broadcast.12 = s32[3,4]{1,0} broadcast(s32[3]{0} %reduce.9), dimensions={0}
  %compare.13 = pred[3,4]{1,0} compare(s32[3,4]{1,0} %b, s32[3,4]{1,0} %broadcast.12), direction=NE
  %broadcast.1 = f32[3,4]{1,0} broadcast(f32[] %constant.0), dimensions={}
  %select.14 = f32[3,4]{1,0} select(pred[3,4]{1,0} %compare.13, f32[3,4]{1,0} %x, f32[3,4]{1,0} %broadcast.1)
  %reduce.16 = f32[3]{0} reduce(f32[3,4]{1,0} %select.14, f32[] %constant.0), dimensions={1}, to_apply=%reducer_maximum_f32
  %reshape.21 = f32[1,3]{1,0} reshape(f32[3]{0} %reduce.16)
  %concatenate.23 = f32[2,3]{1,0} concatenate(f32[1,3]{1,0} %reshape.10, f32[1,3]{1,0} %reshape.21), dimensions={0}
  %transpose.24 = f32[3,2]{1,0} transpose(f32[2,3]{1,0} %concatenate.23), dimensions={1,0}
  %reshape.11 = s32[1,3]{1,0} reshape(s32[3]{0} %reduce.9)
  %broadcast.17 = f32[3,4]{1,0} broadcast(f32[3]{0} %reduce.16), dimensions={0}
  %compare.18 = pred[3,4]{1,0} compare(f32[3,4]{1,0} %select.14, f32[3,4]{1,0} %broadcast.17), direction=EQ
  %select.15 = s32[3,4]{1,0} select(pred[3,4]{1,0} %compare.13, s32[3,4]{1,0} %b, s32[3,4]{1,0} %broadcast.3)
  %select.19 = s32[3,4]{1,0} select(pred[3,4]{1,0} %compare.18, s32[3,4]{1,0} %select.15, s32[3,4]{1,0} %broadcast.3)
  %reduce.20 = s32[3]{0} reduce(s32[3,4]{1,0} %select.19, s32[] %constant.4), dimensions={1}, to_apply=%reducer_minimum_s32
  %reshape.22 = s32[1,3]{1,0} reshape(s32[3]{0} %reduce.20)
  %concatenate.25 = s32[2,3]{1,0} concatenate(s32[1,3]{1,0} %reshape.11, s32[1,3]{1,0} %reshape.22), dimensions={0}
  %transpose.26 = s32[3,2]{1,0} transpose(s32[2,3]{1,0} %concatenate.25), dimensions={1,0}
  ROOT %t = (f32[3,2]{1,0}, s32[3,2]{1,0}) tuple(f32[3,2]{1,0} %transpose.24, s32[3,2]{1,0} %transpose.26)
}

%reducer_maximum_f32 (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %maximum.0 = f32[] maximum(f32[] %a, f32[] %b)
}

%reducer_minimum_s32 (a: s32[], b: s32[]) -> s32[] {
  %a = s32[] parameter(0)
  %b = s32[] parameter(1)
  ROOT %minimum.0 = s32[] minimum(s32[] %a, s32[] %b)
}

)";
  TopKRewrite pass;
  testing::PassResult result = RunPassOnText(pass, TopKModule(3, 4, 2, "GT"));
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(TopKRewriteTest, TotalOrderRoundsRunOnIntegerKeys) {
  const char* checks = R"(
CHECK:      s32[3,4] bitcast-convert(f32[3,4]{1,0} %x)
CHECK:      s32[3,4] xor(
CHECK:      s32[3]{0} reduce({{.*}}), dimensions={1}, to_apply=%reducer_maximum_s32
CHECK:      ROOT %t = (f32[3,2]{1,0}, s32[3,2]{1,0}) tuple(f32[3,2] %{{[a-z.0-9-]+}}, s32[3,2]{1,0} %{{[a-z.0-9-]+}})
CHECK-NOT:  sort(
)";
  TopKRewrite pass;
  testing::ExpectRewrite(pass, TopKModule(3, 4, 2, "GT", /*total_order=*/true), checks);
}

TEST(TopKRewriteTest, MatchesTheSortOnRandomValuesWithTies) {
  for (const bool total_order : {false, true})
  for (const char* direction : {"GT", "LT"}) {
    for (auto [rows, cols, k] : {std::tuple{5, 13, 5}, std::tuple{3, 1000, 5}, std::tuple{7, 9, 1}, std::tuple{2, 6, 6}}) {
      SCOPED_TRACE(std::string(direction) + " " + std::to_string(rows) + "x" + std::to_string(cols) + " k=" +
                   std::to_string(k) + (total_order ? " total order" : ""));
      std::unique_ptr<hlo::HloModule> module =
          hlo::ParseHloModule(TopKModule(rows, cols, k, direction, total_order)).value();
      ASSERT_TRUE(hlo::VerifyHloModule(*module).ok());
      // Few distinct values, so that ties (and the stable order among them) matter; in the total order
      // NaN of both signs and signed zeros too.
      hlo::Literal x(module->entry_computation()->parameter_instruction(0)->shape());
      std::mt19937 rng(static_cast<uint32_t>(rows * 100 + cols));
      const double specials[] = {NAN, -NAN, -0.0, 0.0};
      for (int64_t i = 0; i < x.element_count(); ++i) {
        const int pick = static_cast<int>(rng() % 11);
        x.SetFromDouble(i, total_order && pick >= 7 ? specials[pick - 7] : static_cast<double>(pick) - 3.0);
      }
      std::vector<hlo::Literal> expected = hlo::Interpret(*module, {x}).value();
      TopKRewrite pass;
      ASSERT_TRUE(pass.Run(module.get()).value());
      ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
      for (const hlo::HloInstruction* instruction : module->entry_computation()->instructions()) {
        EXPECT_NE(instruction->opcode(), hlo::HloOpcode::kSort);
      }
      std::vector<hlo::Literal> got = hlo::Interpret(*module, {x}).value();
      ASSERT_EQ(got.size(), 2u);
      EXPECT_EQ(std::memcmp(got[0].untyped_data(), expected[0].untyped_data(), got[0].size_bytes()), 0)
          << got[0].ToString() << " vs " << expected[0].ToString();
      EXPECT_EQ(got[1], expected[1]);
    }
  }
}

// XLA's topk op: interpreted the same before and after the rewrite, NaN (both signs), infinities, signed
// zeros and ties included; f32 becomes rounds, s32 a sort.
TEST(TopKRewriteTest, TopKOpIsExactInTheTotalOrder) {
  for (const char* type : {"f32", "s32"}) {
    for (const char* largest : {"true", "false"}) {
      SCOPED_TRACE(std::string(type) + " largest=" + largest);
      const std::string t = type;
      const std::string text = "HloModule topk\n\nENTRY %main (x: " + t + "[2,3,9]) -> (" + t + "[2,3,4], s32[2,3,4]) {\n"
                               "  %x = " + t + "[2,3,9]{2,1,0} parameter(0)\n  ROOT %t = (" + t + "[2,3,4]{2,1,0}, "
                               "s32[2,3,4]{2,1,0}) topk(" + t + "[2,3,9]{2,1,0} %x), k=4, largest=" + largest + "\n}\n";
      std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
      ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
      hlo::Literal x(module->entry_computation()->parameter_instruction(0)->shape());
      const double specials[] = {NAN, -NAN, -0.0, 0.0, INFINITY, -INFINITY, 1.0, 1.0, -2.0};
      std::mt19937 rng(5);
      for (int64_t i = 0; i < x.element_count(); ++i) {
        x.SetFromDouble(i, t == "f32" ? specials[rng() % 9] : static_cast<double>(rng() % 5) - 2.0);
      }
      StatusOr<std::vector<hlo::Literal>> interpreted = hlo::Interpret(*module, {x});
      ASSERT_TRUE(interpreted.ok()) << interpreted.status();
      std::vector<hlo::Literal> expected = std::move(interpreted).value();
      TopKRewrite pass;
      ASSERT_TRUE(pass.Run(module.get()).value());
      ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
      EXPECT_EQ(testing::CountOpcode(*module, hlo::HloOpcode::kTopK), 0);
      EXPECT_EQ(testing::CountOpcode(*module, hlo::HloOpcode::kSort), t == "f32" ? 0 : 1);
      std::vector<hlo::Literal> got = hlo::Interpret(*module, {x}).value();
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].size_bytes(), expected[i].size_bytes());
        EXPECT_EQ(std::memcmp(got[i].untyped_data(), expected[i].untyped_data(), got[i].size_bytes()), 0)
            << got[i].ToString() << " vs " << expected[i].ToString();
      }
    }
  }
}

TEST(TopKRewriteTest, LeavesOtherSortsAlone) {
  // The whole sorted array is used, not a prefix.
  const char* input = R"(HloModule full

%cmp (p0: f32[], p1: f32[]) -> pred[] {
  %p0 = f32[] parameter(0)
  %p1 = f32[] parameter(1)
  ROOT %gt = pred[] compare(f32[] %p0, f32[] %p1), direction=GT
}

ENTRY %main (x: f32[2,4]) -> f32[2,4] {
  %x = f32[2,4]{1,0} parameter(0)
  ROOT %sort = f32[2,4]{1,0} sort(f32[2,4]{1,0} %x), dimensions={1}, to_apply=%cmp
}
)";
  TopKRewrite pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, testing::Canonical(input));
}

}  // namespace
}  // namespace tpu::compiler
