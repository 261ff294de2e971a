#include "compiler/passes/pipeline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/test_util.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/padding_report.h"
#include "compiler/passes/pass_test_util.h"
#include "compiler/passes/relu_fusion.h"

namespace tpu::compiler {
namespace {

using hlo::HloOpcode;
using hlo::Literal;
using testing::CountOpcode;

const char* kSmall = R"(HloModule small

%layer (x: f32[2,8], w: f32[8,8]) -> f32[2,8] {
  %x = f32[2,8]{1,0} parameter(0)
  %w = f32[8,8]{1,0} parameter(1)
  %d = f32[2,8]{1,0} dot(f32[2,8]{1,0} %x, f32[8,8]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %zero = f32[] constant(0)
  %zeros = f32[2,8]{1,0} broadcast(f32[] %zero), dimensions={}
  ROOT %relu = f32[2,8]{1,0} maximum(f32[2,8]{1,0} %d, f32[2,8]{1,0} %zeros)
}

ENTRY %main (x: f32[2,8], w: f32[8,8]) -> (f32[2,8], f32[2,8]) {
  %x = f32[2,8]{1,0} parameter(0)
  %w = f32[8,8]{1,0} parameter(1)
  %h = f32[2,8]{1,0} call(f32[2,8]{1,0} %x, f32[8,8]{1,0} %w), to_apply=%layer
  %h2 = f32[2,8]{1,0} call(f32[2,8]{1,0} %x, f32[8,8]{1,0} %w), to_apply=%layer
  %one = f32[] constant(1)
  %ones = f32[2,8]{1,0} broadcast(f32[] %one), dimensions={}
  %scaled = f32[2,8]{1,0} multiply(f32[2,8]{1,0} %h2, f32[2,8]{1,0} %ones)
  %e = f32[2,8]{1,0} exponential(f32[2,8]{1,0} %scaled)
  %n = f32[2,8]{1,0} negate(f32[2,8]{1,0} %e)
  ROOT %t = (f32[2,8]{1,0}, f32[2,8]{1,0}) tuple(f32[2,8]{1,0} %h, f32[2,8]{1,0} %n)
}
)";

TEST(DefaultPipelineTest, InlinesSimplifiesMergesAndFuses) {
  auto module = hlo::ParseHloModule(kSmall);
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<std::string> passes;
  StatusOr<bool> changed = RunDefaultPipeline(module->get(), PipelineOptions{},
                                              [&](int, std::string_view name, bool, const hlo::HloModule&) {
                                                passes.emplace_back(name);
                                                return OkStatus();
                                              });
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(passes, (std::vector<std::string>{"call-inliner", "constant-folding", "algebraic-simplifier", "cse", "dce",
                                              "relu-fusion", "elementwise-fusion", "dce"}));
  // Both calls inline to the same dot and ReLU, which CSE merges (keeping the copy it meets first).
  const char* expected = R"(HloModule small

ENTRY %main (x: f32[2,8], w: f32[8,8]) -> (f32[2,8], f32[2,8]) {
  %x = f32[2,8]{1,0} parameter(0)
  %w = f32[8,8]{1,0} parameter(1)
  %d.0 = f32[2,8]{1,0} dot(f32[2,8]{1,0} %x, f32[8,8]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %relu.relu.3 = f32[2,8]{1,0} fusion(f32[2,8]{1,0} %d.0), kind=kLoop, calls=%fused_relu.relu.3
  %fusion.n = f32[2,8]{1,0} fusion(f32[2,8]{1,0} %relu.relu.3), kind=kLoop, calls=%fused_computation.n
  ROOT %t = (f32[2,8]{1,0}, f32[2,8]{1,0}) tuple(f32[2,8]{1,0} %relu.relu.3, f32[2,8]{1,0} %fusion.n)
}

%fused_relu.relu.3 (param_0: f32[2,8]) -> f32[2,8] {
  %param_0 = f32[2,8]{1,0} parameter(0)
  %constant = f32[] constant(0)
  %broadcast = f32[2,8]{1,0} broadcast(f32[] %constant), dimensions={}
  ROOT %maximum = f32[2,8]{1,0} maximum(f32[2,8]{1,0} %param_0, f32[2,8]{1,0} %broadcast)
}

%fused_computation.n (param_0: f32[2,8]) -> f32[2,8] {
  %param_0 = f32[2,8]{1,0} parameter(0)
  %e = f32[2,8]{1,0} exponential(f32[2,8]{1,0} %param_0)
  ROOT %n = f32[2,8]{1,0} negate(f32[2,8]{1,0} %e)
}

)";
  EXPECT_EQ(hlo::PrintHloModule(**module), expected);
  // A second run finds nothing left to do.
  EXPECT_FALSE(*RunDefaultPipeline(module->get(), PipelineOptions{}));
}

TEST(DefaultPipelineTest, OptionsTurnPassesOffAndVerifyEachPassNamesTheCulprit) {
  auto module = hlo::ParseHloModule(kSmall);
  ASSERT_TRUE(module.ok());
  PipelineOptions options;
  options.fuse_elementwise = false;
  options.verify_each_pass = true;
  ASSERT_TRUE(RunDefaultPipeline(module->get(), options).ok());
  for (const hlo::HloInstruction* instruction : (*module)->entry_computation()->instructions())
    if (instruction->opcode() == HloOpcode::kFusion) EXPECT_TRUE(IsReluFusion(*instruction)) << instruction->name();
  // A hook error stops the pipeline with that error.
  auto again = hlo::ParseHloModule(kSmall);
  ASSERT_TRUE(again.ok());
  StatusOr<bool> stopped = RunDefaultPipeline(again->get(), PipelineOptions{},
                                              [](int index, std::string_view, bool, const hlo::HloModule&) {
                                                return index == 1 ? Internal("stop here") : OkStatus();
                                              });
  EXPECT_EQ(stopped.status().code(), StatusCode::kInternal);
}

TEST(DefaultPipelineTest, RejectsAModuleThatDoesNotVerify) {
  auto module = hlo::ParseHloModule("HloModule bad\n\nENTRY %main {\n  %x = f32[2]{0} parameter(0)\n"
                                    "  ROOT %y = f32[3]{0} negate(f32[2]{0} %x)\n}\n");
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<bool> result = RunDefaultPipeline(module->get(), PipelineOptions{});
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("before the pipeline"), std::string::npos) << result.status();
}

// Every shared module goes through the pipeline and still verifies; the training steps interpret to the
// same bits as before.
std::vector<Literal> Arguments(const hlo::HloModule& module, const std::string& name) {
  std::mt19937 rng(1234);
  std::vector<Literal> arguments;
  for (const hlo::HloInstruction* parameter : module.entry_computation()->parameter_instructions())
    arguments.push_back(Literal::Random(parameter->shape(), rng));
  if (name == "maml_flax_train_step.hlo") arguments[0] = Literal::CreateR0<int32_t>(3);
  if (name == "pytorch_xla_mnist_mlp_train_step.hlo") {
    arguments[0] = Literal::CreateR0<float>(-0.05f);
    std::vector<int64_t> labels;
    for (int i = 0; i < 32; ++i) labels.push_back(static_cast<int64_t>(rng() % 10));
    arguments[8] = Literal::CreateR1<int64_t>(labels);
  }
  return arguments;
}

TEST(DefaultPipelineTest, SharedModulesVerifyAndKeepTheirOutputs) {
  for (const char* name : hlo::testing::kSharedHloFiles) {
    std::string text = hlo::testing::ReadSharedHlo(name);
    if (text.empty()) GTEST_SKIP() << "no ../shared/hlo";
    SCOPED_TRACE(name);
    auto module = hlo::ParseHloModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    ASSERT_TRUE(hlo::VerifyHloModule(**module).ok());
    // EfficientNet's activations (250x150x150x32 floats) are far too big for the host interpreter.
    bool interpret = std::string(name) != "efficientnet_forward.hlo";
    std::vector<Literal> arguments;
    std::vector<Literal> before;
    if (interpret) {
      arguments = Arguments(**module, name);
      auto outputs = hlo::Interpret(**module, arguments);
      ASSERT_TRUE(outputs.ok()) << outputs.status();
      before = std::move(outputs).value();
    }
    int64_t instructions_before = 0;
    for (const hlo::HloComputation* c : (*module)->computations()) instructions_before += c->instruction_count();
    PipelineOptions options;
    options.verify_each_pass = true;
    StatusOr<bool> changed = RunDefaultPipeline(module->get(), options);
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(*changed);
    EXPECT_EQ(CountOpcode(**module, HloOpcode::kCall), 0);
    EXPECT_GT(CountOpcode(**module, HloOpcode::kFusion), 0);
    // The printed result reads back as the same module.
    auto reparsed = hlo::ParseHloModule(hlo::PrintHloModule(**module));
    ASSERT_TRUE(reparsed.ok()) << reparsed.status();
    EXPECT_TRUE(hlo::VerifyHloModule(**reparsed).ok());
    if (!interpret) continue;
    auto outputs = hlo::Interpret(**module, arguments);
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    ASSERT_EQ(outputs->size(), before.size());
    for (size_t i = 0; i < before.size(); ++i) {
      const Literal& want = before[i];
      const Literal& got = (*outputs)[i];
      ASSERT_EQ(got.shape(), want.shape()) << "output " << i;
      if (got == want) continue;
      // Only x + 0 -> x may differ, in the sign of a zero: equal as numbers.
      ASSERT_TRUE(hlo::IsFloatingPointType(want.shape().element_type)) << "output " << i << " differs";
      for (int64_t e = 0; e < want.element_count(); ++e)
        ASSERT_EQ(got.GetAsDouble(e), want.GetAsDouble(e)) << "output " << i << " element " << e;
    }
  }
}

// Parsing, verifying and the whole pipeline on the PyTorch/XLA MNIST step stay far below a second.
TEST(DefaultPipelineTest, MnistStepCompilesQuickly) {
  std::string text = hlo::testing::ReadSharedHlo("pytorch_xla_mnist_mlp_train_step.hlo");
  if (text.empty()) GTEST_SKIP() << "no ../shared/hlo";
  auto start = std::chrono::steady_clock::now();
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok());
  ASSERT_TRUE(hlo::VerifyHloModule(**module).ok());
  ASSERT_TRUE(RunDefaultPipeline(module->get(), PipelineOptions{}).ok());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("parse + verify + pipeline on the MNIST step: %.2f ms\n", seconds * 1e3);
  EXPECT_LT(seconds, 1.0);
}

}  // namespace
}  // namespace tpu::compiler
