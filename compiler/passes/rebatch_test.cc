#include "compiler/passes/rebatch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::RunPassOnText;

TEST(RebatchTest, PropagatesTheBatchThroughShapesAndCalls) {
  const char* input = R"(HloModule batched, entry_computation_layout={(f32[4,3]{1,0}, s32[4]{0})->(f32[4,2], pred[8])}

%relu (a: f32[4,3]) -> f32[4,3] {
  %a = f32[4,3]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %b = f32[4,3]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %m = f32[4,3]{1,0} maximum(f32[4,3]{1,0} %a, f32[4,3]{1,0} %b)
}

ENTRY %main (x: f32[4,3], labels: s32[4]) -> (f32[4,2], pred[8]) {
  %x = f32[4,3]{1,0} parameter(0)
  %r = f32[4,3]{1,0} call(f32[4,3]{1,0} %x), to_apply=%relu
  %w = f32[3,2]{1,0} constant({ { 1, 2 }, { 3, 4 }, { 5, 6 } })
  %d = f32[4,2]{1,0} dot(f32[4,3]{1,0} %r, f32[3,2]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %labels = s32[4]{0} parameter(1)
  %t = s32[2,4]{1,0} broadcast(s32[4]{0} %labels), dimensions={1}
  %i = s32[2,4]{1,0} iota(), iota_dimension=0
  %eq = pred[2,4]{1,0} compare(s32[2,4]{1,0} %t, s32[2,4]{1,0} %i), direction=EQ
  %flat = pred[8]{0} reshape(pred[2,4]{1,0} %eq)
  %first = f32[4,1]{1,0} slice(f32[4,2]{1,0} %d), slice={[0:4], [0:1]}
  ROOT %out = (f32[4,2]{1,0}, pred[8]{0}) tuple(f32[4,2]{1,0} %d, pred[8]{0} %flat)
}
)";
  const char* expected = R"(HloModule batched

%relu (a: f32[6,3]) -> f32[6,3] {
  %a = f32[6,3]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %b = f32[6,3]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %m = f32[6,3]{1,0} maximum(f32[6,3]{1,0} %a, f32[6,3]{1,0} %b)
}

ENTRY %main (x: f32[6,3], labels: s32[6]) -> (f32[6,2], pred[12]) {
  %x = f32[6,3]{1,0} parameter(0)
  %r = f32[6,3]{1,0} call(f32[6,3]{1,0} %x), to_apply=%relu
  %w = f32[3,2]{1,0} constant({ {1, 2}, {3, 4}, {5, 6} })
  %d = f32[6,2]{1,0} dot(f32[6,3]{1,0} %r, f32[3,2]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %labels = s32[6]{0} parameter(1)
  %t = s32[2,6]{1,0} broadcast(s32[6]{0} %labels), dimensions={1}
  %i = s32[2,6]{1,0} iota(), iota_dimension=0
  %eq = pred[2,6]{1,0} compare(s32[2,6]{1,0} %t, s32[2,6]{1,0} %i), direction=EQ
  %flat = pred[12]{0} reshape(pred[2,6]{1,0} %eq)
  %first = f32[6,1]{1,0} slice(f32[6,2]{1,0} %d), slice={[0:6], [0:1]}
  ROOT %out = (f32[6,2]{1,0}, pred[12]{0}) tuple(f32[6,2]{1,0} %d, pred[12]{0} %flat)
}

)";
  Rebatch pass(6);
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
  StatusOr<std::unique_ptr<hlo::HloModule>> reparsed = hlo::ParseHloModule(result.printed);
  ASSERT_TRUE(reparsed.ok());
  EXPECT_TRUE(hlo::VerifyHloModule(**reparsed).ok()) << hlo::VerifyHloModule(**reparsed);
}

TEST(RebatchTest, SameBatchIsNoChange) {
  const char* input = R"(HloModule same

ENTRY %main (x: f32[4,3]) -> f32[4,3] {
  %x = f32[4,3]{1,0} parameter(0)
  ROOT %n = f32[4,3]{1,0} negate(f32[4,3]{1,0} %x)
}
)";
  Rebatch pass(4);
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, testing::Canonical(input));
}

Status RunOn(const char* text, int64_t batch) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  Rebatch pass(batch);
  return pass.Run(module.get()).status();
}

TEST(RebatchTest, ConstantsThatCarryTheBatchAreAClearError) {
  const Status status = RunOn(R"(HloModule c

ENTRY %main (x: f32[4,3]) -> f32[4,3] {
  %x = f32[4,3]{1,0} parameter(0)
  %c = f32[4,3]{1,0} constant({...})
  ROOT %a = f32[4,3]{1,0} add(f32[4,3]{1,0} %x, f32[4,3]{1,0} %c)
}
)", 2);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cannot re-batch c "), std::string::npos) << status;
  EXPECT_NE(status.message().find("carries the batch"), std::string::npos) << status;
}

TEST(RebatchTest, DisagreeingParametersAndBadSizesAreErrors) {
  EXPECT_EQ(RunOn(R"(HloModule p

ENTRY %main (x: f32[4,3], y: f32[5]) -> f32[4,3] {
  %x = f32[4,3]{1,0} parameter(0)
  %y = f32[5]{0} parameter(1)
  ROOT %n = f32[4,3]{1,0} negate(f32[4,3]{1,0} %x)
}
)", 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RunOn(R"(HloModule z

ENTRY %main (x: f32[4,3]) -> f32[4,3] {
  %x = f32[4,3]{1,0} parameter(0)
  ROOT %n = f32[4,3]{1,0} negate(f32[4,3]{1,0} %x)
}
)", 0).code(), StatusCode::kInvalidArgument);
  const Status partial = RunOn(R"(HloModule s

ENTRY %main (x: f32[4,3]) -> f32[2,3] {
  %x = f32[4,3]{1,0} parameter(0)
  ROOT %s = f32[2,3]{1,0} slice(f32[4,3]{1,0} %x), slice={[1:3], [0:3]}
}
)", 8);
  EXPECT_FALSE(partial.ok());
}

TEST(RebatchTest, FillsElidedConstantsByTheirUse) {
  const char* text = R"(HloModule bn

ENTRY %main (x: f32[2,4,4,3]) -> f32[2,4,4,5] {
  %x = f32[2,4,4,3]{3,2,1,0} parameter(0)
  %k = f32[3,3,3,5]{3,2,1,0} constant({...})
  %c = f32[2,4,4,5]{3,2,1,0} convolution(f32[2,4,4,3]{3,2,1,0} %x, f32[3,3,3,5]{3,2,1,0} %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %var = f32[5]{0} constant({...})
  %r = f32[5]{0} rsqrt(f32[5]{0} %var)
  %gamma = f32[5]{0} constant({...})
  %s = f32[5]{0} multiply(f32[5]{0} %r, f32[5]{0} %gamma)
  %sb = f32[2,4,4,5]{3,2,1,0} broadcast(f32[5]{0} %s), dimensions={3}
  %mean = f32[5]{0} constant({...})
  %mb = f32[2,4,4,5]{3,2,1,0} broadcast(f32[5]{0} %mean), dimensions={3}
  %centered = f32[2,4,4,5]{3,2,1,0} subtract(f32[2,4,4,5]{3,2,1,0} %c, f32[2,4,4,5]{3,2,1,0} %mb)
  ROOT %y = f32[2,4,4,5]{3,2,1,0} multiply(f32[2,4,4,5]{3,2,1,0} %centered, f32[2,4,4,5]{3,2,1,0} %sb)
}
)";
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  StatusOr<int> filled = FillElidedConstants(module.get(), 7);
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_EQ(*filled, 4);
  const hlo::HloComputation& entry = *module->entry_computation();
  auto range = [&](const char* name, double* low, double* high) {
    const hlo::HloInstruction* constant = entry.GetInstructionWithName(name);
    ASSERT_TRUE(constant->has_literal()) << name;
    *low = 1e30;
    *high = -1e30;
    for (int64_t i = 0; i < constant->literal().element_count(); ++i) {
      *low = std::min(*low, constant->literal().GetAsDouble(i));
      *high = std::max(*high, constant->literal().GetAsDouble(i));
    }
  };
  double low, high;
  range("var", &low, &high);
  EXPECT_GE(low, 0.5);
  EXPECT_LE(high, 1.5);
  range("gamma", &low, &high);
  EXPECT_GE(low, 0.5);
  range("mean", &low, &high);
  EXPECT_GE(low, -0.1);
  EXPECT_LE(high, 0.1);
  range("k", &low, &high);  // fan-in 3*3*3 = 27: |w| <= sqrt(3/27) = 1/3
  EXPECT_GE(low, -1.0 / 3.0 - 1e-6);
  EXPECT_LE(high, 1.0 / 3.0 + 1e-6);
  EXPECT_LT(low, 0.0);
  // The module now interprets, and the same seed gives the same values.
  std::mt19937 rng(1);
  std::vector<hlo::Literal> arguments = {hlo::Literal::Random(entry.parameter_instruction(0)->shape(), rng)};
  EXPECT_TRUE(hlo::Interpret(*module, arguments).ok());
  std::unique_ptr<hlo::HloModule> again = hlo::ParseHloModule(text).value();
  ASSERT_TRUE(FillElidedConstants(again.get(), 7).ok());
  EXPECT_EQ(again->entry_computation()->GetInstructionWithName("k")->literal(),
            entry.GetInstructionWithName("k")->literal());
}

TEST(RebatchTest, SetEntryRootKeepsWhatTheNewRootNeeds) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(R"(HloModule root

ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %n = f32[4]{0} negate(f32[4]{0} %x)
  %e = f32[4]{0} exponential(f32[4]{0} %n)
  %zero = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %e, f32[] %zero), dimensions={0}, to_apply=%sum
}

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
)").value();
  ASSERT_TRUE(SetEntryRoot(module.get(), "n").ok());
  EXPECT_EQ(module->entry_computation()->root_instruction()->name(), "n");
  EXPECT_EQ(module->entry_computation()->instruction_count(), 2);
  EXPECT_EQ(module->computations().size(), 1u);
  const Status missing = SetEntryRoot(module.get(), "nothing");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("'nothing'"), std::string::npos);
}

#ifdef TPU_SHARED_HLO_DIR
// The EfficientNet forward pass re-batched to 2 verifies; at its batch of 250 it does not change.
TEST(RebatchTest, EfficientNetRebatchesToTwo) {
  std::ifstream in(std::string(TPU_SHARED_HLO_DIR) + "/efficientnet_forward.hlo");
  if (!in) GTEST_SKIP() << "no shared EfficientNet module";
  std::stringstream text;
  text << in.rdbuf();
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text.str()).value();
  Rebatch pass(2);
  StatusOr<bool> changed = pass.Run(module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
  EXPECT_EQ(module->entry_computation()->parameter_instruction(0)->shape().dimensions,
            (std::vector<int64_t>{2, 300, 300, 3}));
  EXPECT_EQ(module->entry_computation()->GetInstructionWithName("reshape.2050")->shape().dimensions,
            std::vector<int64_t>{10});
}
#endif

}  // namespace
}  // namespace tpu::compiler
