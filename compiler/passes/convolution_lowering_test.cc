#include "compiler/passes/convolution_lowering.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/pass_test_util.h"

namespace tpu::compiler {
namespace {

using testing::RunPassOnText;

TEST(ConvolutionLoweringTest, OneByOneIsOneDotOverTheRows) {
  const char* input = R"(HloModule conv1x1

ENTRY %main (x: f32[2,3,5,4], k: f32[1,1,4,6]) -> f32[2,3,5,6] {
  %x = f32[2,3,5,4]{3,2,1,0} parameter(0)
  %k = f32[1,1,4,6]{3,2,1,0} parameter(1)
  ROOT %c = f32[2,3,5,6]{3,2,1,0} convolution(f32[2,3,5,4]{3,2,1,0} %x, f32[1,1,4,6]{3,2,1,0} %k), window={size=1x1}, dim_labels=b01f_01io->b01f
}
)";
  const char* expected = R"(HloModule conv1x1

ENTRY %main (x: f32[2,3,5,4], k: f32[1,1,4,6]) -> f32[2,3,5,6] {
  %x = f32[2,3,5,4]{3,2,1,0} parameter(0)
  %k = f32[1,1,4,6]{3,2,1,0} parameter(1)
  %reshape.0 = f32[30,4]{1,0} reshape(f32[2,3,5,4]{3,2,1,0} %x)
  %reshape.1 = f32[4,6]{1,0} reshape(f32[1,1,4,6]{3,2,1,0} %k)
  %dot.2 = f32[30,6]{1,0} dot(f32[30,4]{1,0} %reshape.0, f32[4,6]{1,0} %reshape.1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %reshape.3 = f32[2,3,5,6]{3,2,1,0} reshape(f32[30,6]{1,0} %dot.2)
}

)";
  ConvolutionLowering pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(ConvolutionLoweringTest, DepthwiseIsMultiplyAddsOfShiftedWindows) {
  const char* input = R"(HloModule depthwise

ENTRY %main (x: f32[1,4,4,3], k: f32[1,2,1,3]) -> f32[1,4,2,3] {
  %x = f32[1,4,4,3]{3,2,1,0} parameter(0)
  %k = f32[1,2,1,3]{3,2,1,0} parameter(1)
  ROOT %c = f32[1,4,2,3]{3,2,1,0} convolution(f32[1,4,4,3]{3,2,1,0} %x, f32[1,2,1,3]{3,2,1,0} %k), window={size=1x2 stride=1x2 pad=0_0x0_1}, dim_labels=b01f_01io->b01f, feature_group_count=3
}
)";
  const char* expected = R"(HloModule depthwise

ENTRY %main (x: f32[1,4,4,3], k: f32[1,2,1,3]) -> f32[1,4,2,3] {
  %x = f32[1,4,4,3]{3,2,1,0} parameter(0)
  %k = f32[1,2,1,3]{3,2,1,0} parameter(1)
  %constant.0 = f32[] constant(0)
  %pad.1 = f32[1,4,5,3]{3,2,1,0} pad(f32[1,4,4,3]{3,2,1,0} %x, f32[] %constant.0), padding=0_0x0_0x0_1x0_0
  %slice.2 = f32[1,4,2,3]{3,2,1,0} slice(f32[1,4,5,3]{3,2,1,0} %pad.1), slice={[0:1], [0:4], [0:3:2], [0:3]}
  %slice.3 = f32[1,1,1,3]{3,2,1,0} slice(f32[1,2,1,3]{3,2,1,0} %k), slice={[0:1], [0:1], [0:1], [0:3]}
  %reshape.4 = f32[1,3]{1,0} reshape(f32[1,1,1,3]{3,2,1,0} %slice.3)
  %reshape.5 = f32[3]{0} reshape(f32[1,3]{1,0} %reshape.4)
  %broadcast.6 = f32[1,4,2,3]{3,2,1,0} broadcast(f32[3]{0} %reshape.5), dimensions={3}
  %multiply.7 = f32[1,4,2,3]{3,2,1,0} multiply(f32[1,4,2,3]{3,2,1,0} %slice.2, f32[1,4,2,3]{3,2,1,0} %broadcast.6)
  %slice.8 = f32[1,4,2,3]{3,2,1,0} slice(f32[1,4,5,3]{3,2,1,0} %pad.1), slice={[0:1], [0:4], [1:4:2], [0:3]}
  %slice.9 = f32[1,1,1,3]{3,2,1,0} slice(f32[1,2,1,3]{3,2,1,0} %k), slice={[0:1], [1:2], [0:1], [0:3]}
  %reshape.10 = f32[1,3]{1,0} reshape(f32[1,1,1,3]{3,2,1,0} %slice.9)
  %reshape.11 = f32[3]{0} reshape(f32[1,3]{1,0} %reshape.10)
  %broadcast.12 = f32[1,4,2,3]{3,2,1,0} broadcast(f32[3]{0} %reshape.11), dimensions={3}
  %multiply.13 = f32[1,4,2,3]{3,2,1,0} multiply(f32[1,4,2,3]{3,2,1,0} %slice.8, f32[1,4,2,3]{3,2,1,0} %broadcast.12)
  ROOT %add.14 = f32[1,4,2,3]{3,2,1,0} add(f32[1,4,2,3]{3,2,1,0} %multiply.7, f32[1,4,2,3]{3,2,1,0} %multiply.13)
}

)";
  ConvolutionLowering pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_TRUE(result.changed);
  EXPECT_EQ(result.printed, expected);
}

TEST(ConvolutionLoweringTest, LeavesModulesWithoutConvolutionsAlone) {
  const char* input = R"(HloModule none

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  ROOT %n = f32[4]{0} negate(f32[4]{0} %x)
}
)";
  ConvolutionLowering pass;
  testing::PassResult result = RunPassOnText(pass, input);
  EXPECT_FALSE(result.changed);
  EXPECT_EQ(result.printed, testing::Canonical(input));
}

TEST(ConvolutionLoweringTest, BatchGroupsAreUnimplemented) {
  const char* input = R"(HloModule batch_groups

ENTRY %main (x: f32[2,4,4,2], k: f32[1,1,2,2]) -> f32[1,4,4,2] {
  %x = f32[2,4,4,2]{3,2,1,0} parameter(0)
  %k = f32[1,1,2,2]{3,2,1,0} parameter(1)
  ROOT %c = f32[1,4,4,2]{3,2,1,0} convolution(f32[2,4,4,2]{3,2,1,0} %x, f32[1,1,2,2]{3,2,1,0} %k), window={size=1x1}, dim_labels=b01f_01io->b01f, batch_group_count=2
}
)";
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(input).value();
  ConvolutionLowering pass;
  StatusOr<bool> result = pass.Run(module.get());
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(result.status().message().find("batch_group_count"), std::string::npos);
}

// A random convolution: the lowered module must interpret to the convolution's values.
struct ConvCase {
  std::string labels;          // dim_labels
  std::vector<int64_t> input;  // input dims in the labels' order
  std::vector<int64_t> kernel;
  std::string window;
  int64_t groups = 1;
};

std::string Dims(const std::vector<int64_t>& dims) {
  std::string text = "f32[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

void CheckAgainstInterpreter(const ConvCase& c, uint32_t seed, int64_t lanes) {
  SCOPED_TRACE(c.labels + " window={" + c.window + "} groups=" + std::to_string(c.groups) + " seed=" +
               std::to_string(seed) + " lanes=" + std::to_string(lanes));
  const std::string text = "HloModule random_conv\n\nENTRY %main (x: " + Dims(c.input) + ", k: " + Dims(c.kernel) +
                           ") -> f32[1] {\n  %x = " + Dims(c.input) + " parameter(0)\n  %k = " + Dims(c.kernel) +
                           " parameter(1)\n  ROOT %c = f32[1] convolution(" + Dims(c.input) + " %x, " +
                           Dims(c.kernel) + " %k), window={" + c.window + "}, dim_labels=" + c.labels +
                           ", feature_group_count=" + std::to_string(c.groups) + "\n}\n";
  StatusOr<std::unique_ptr<hlo::HloModule>> parsed = hlo::ParseHloModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  hlo::HloModule& module = **parsed;
  hlo::HloInstruction* conv = module.entry_computation()->root_instruction();
  StatusOr<hlo::Shape> shape = hlo::InferShape(*conv);
  ASSERT_TRUE(shape.ok()) << shape.status();
  conv->set_shape(*shape);
  ASSERT_TRUE(hlo::VerifyHloModule(module).ok()) << hlo::VerifyHloModule(module);

  std::mt19937 rng(seed);
  std::vector<hlo::Literal> arguments;
  for (const hlo::HloInstruction* parameter : module.entry_computation()->parameter_instructions()) {
    arguments.push_back(hlo::Literal::Random(parameter->shape(), rng));
  }
  StatusOr<std::vector<hlo::Literal>> expected = hlo::Interpret(module, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status();

  ConvolutionLoweringOptions options;
  options.lanes = lanes;
  ConvolutionLowering pass(options);
  StatusOr<bool> changed = pass.Run(&module);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  ASSERT_TRUE(hlo::VerifyHloModule(module).ok()) << hlo::VerifyHloModule(module) << "\n" << module.ToString();
  for (const hlo::HloInstruction* instruction : module.entry_computation()->instructions()) {
    EXPECT_NE(instruction->opcode(), hlo::HloOpcode::kConvolution);
  }
  StatusOr<std::vector<hlo::Literal>> lowered = hlo::Interpret(module, arguments);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const hlo::Literal& want = (*expected)[0];
  const hlo::Literal& got = (*lowered)[0];
  ASSERT_EQ(want.shape(), got.shape());
  for (int64_t i = 0; i < want.element_count(); ++i) {
    // Sums of up to a few hundred products of values in [-1, 1): summation order moves a few ulps.
    EXPECT_NEAR(got.GetAsDouble(i), want.GetAsDouble(i), 1e-4 * (1.0 + std::fabs(want.GetAsDouble(i))))
        << "element " << i;
  }
}

TEST(ConvolutionLoweringTest, MatchesTheInterpreterOnRandomConvolutions) {
  const std::vector<ConvCase> cases = {
      {"b01f_01io->b01f", {2, 7, 9, 3}, {1, 1, 3, 5}, "size=1x1", 1},
      {"b01f_01io->b01f", {1, 9, 11, 3}, {3, 3, 3, 5}, "size=3x3 stride=2x2 pad=0_1x0_1", 1},
      {"b01f_01io->b01f", {2, 6, 7, 4}, {3, 2, 4, 3}, "size=3x2 pad=1_2x0_1", 1},
      {"b01f_01io->b01f", {1, 7, 7, 5}, {3, 3, 1, 5}, "size=3x3 pad=1_1x1_1", 5},
      {"b01f_01io->b01f", {2, 9, 7, 6}, {5, 5, 1, 6}, "size=5x5 stride=2x2 pad=2_2x2_2", 6},
      {"b01f_01io->b01f", {1, 9, 9, 4}, {3, 3, 1, 4}, "size=3x3 stride=2x2 pad=0_1x0_1", 4},
      {"b01f_01io->b01f", {1, 8, 8, 6}, {3, 3, 3, 4}, "size=3x3 pad=1_1x1_1", 2},
      {"b01f_01io->b01f", {1, 8, 7, 3}, {2, 2, 1, 6}, "size=2x2", 3},
      {"b01f_01io->b01f", {1, 9, 9, 2}, {3, 3, 2, 3}, "size=3x3 rhs_dilate=2x2 pad=1_0x2_1", 1},
      {"b01f_01io->b01f", {1, 5, 6, 2}, {3, 3, 2, 3}, "size=3x3 lhs_dilate=2x2 pad=2_2x1_1", 1},
      {"b01f_01io->b01f", {1, 8, 8, 2}, {3, 3, 2, 2}, "size=3x3 pad=-1_1x1_-1 rhs_reversal=1x0", 1},
      {"bf01_oi01->bf01", {2, 3, 6, 5}, {4, 3, 3, 2}, "size=3x2 stride=1x2 pad=1_1x0_0", 1},
      {"b0f_0io->b0f", {3, 10, 4}, {3, 4, 2}, "size=3 stride=2 pad=1_0", 1},
      {"f01b_i01o->01bf", {3, 6, 5, 2}, {3, 2, 2, 4}, "size=2x2 stride=1x1", 1},
      // More taps than output positions: one dot per position (kernel gradients, a 1x1 output), or one
      // dot of the positions' windows gathered when they have at most 32 columns together.
      {"f01b_i01o->01bf", {3, 8, 8, 5}, {3, 8, 8, 4}, "size=8x8 pad=1_1x1_1", 1},
      {"f01b_i01o->01bf", {2, 9, 9, 6}, {2, 4, 4, 5}, "size=4x4 rhs_dilate=2x2", 1},
      {"f01b_i01o->01bf", {3, 8, 8, 2}, {3, 8, 8, 4}, "size=8x8 pad=1_1x1_1", 1},
      {"f01b_i01o->01bf", {2, 9, 9, 3}, {2, 4, 4, 5}, "size=4x4 rhs_dilate=2x2", 1},
      {"f01b_i01o->01bf", {2, 6, 7, 1}, {2, 5, 6, 3}, "size=5x6 lhs_dilate=2x1 pad=1_0x-1_1", 1},
      {"b01f_01io->b01f", {2, 5, 5, 3}, {5, 5, 3, 4}, "size=5x5", 1},
      {"b0f_0io->b0f", {2, 9, 3}, {7, 3, 2}, "size=7 stride=2 pad=1_1", 1},
      {"bf01_oi01->bf01", {2, 3, 6, 6}, {4, 3, 5, 5}, "size=5x5 pad=0_1x1_0", 1},
      {"f01b_i01o->01bf", {3, 8, 8, 2}, {3, 7, 7, 4}, "size=7x7 pad=1_1x1_1 rhs_reversal=0x1", 1},
      // At most 32 window columns together: gathered into one matrix for one dot; more: per-tap dots.
      {"b01f_01io->b01f", {2, 7, 6, 1}, {3, 3, 1, 4}, "size=3x3 pad=1_1x1_1", 1},
      {"b01f_01io->b01f", {2, 7, 8, 5}, {3, 3, 5, 4}, "size=3x3 stride=2x1 pad=1_1x0_1", 1},
      {"b01f_01io->b01f", {1, 9, 9, 4}, {3, 3, 4, 3}, "size=3x3 rhs_dilate=2x2 pad=1_0x2_1", 1},
      {"b01f_01io->b01f", {2, 7, 6, 2}, {2, 3, 2, 3}, "size=2x3 stride=2x1 rhs_dilate=1x2 pad=0_1x1_1", 1},
      {"f01b_i01o->01bf", {3, 8, 8, 1}, {3, 8, 8, 4}, "size=8x8 pad=1_1x1_1", 1},
      {"f01b_i01o->01bf", {2, 7, 7, 3}, {2, 6, 6, 5}, "size=6x6 stride=2x2 pad=1_0x0_1", 1},
  };
  // Unknown lanes, then lanes that divide some cases' features (their windows are gathered whatever
  // their number, forward and by output position), then lanes that take every case's windows in 3 tiles.
  for (int64_t lanes : {0, 2, 3, 128}) {
    uint32_t seed = 1;
    for (const ConvCase& c : cases) CheckAgainstInterpreter(c, seed++, lanes);
  }
}

// What the pass made of a module with one convolution: op counts and, per dot, the lhs shape and
// contracting dimension.
struct LoweredOps {
  int dots = 0, transposes = 0, slices = 0, concatenates = 0, adds = 0;
  std::vector<std::vector<int64_t>> dot_lhs_shapes;
  std::vector<int64_t> dot_lhs_contracting;
};

LoweredOps LowerAndCount(const std::string& text, int64_t lanes = 0) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  ConvolutionLoweringOptions options;
  options.lanes = lanes;
  ConvolutionLowering pass(options);
  StatusOr<bool> changed = pass.Run(module.get());
  EXPECT_TRUE(changed.ok() && *changed) << changed.status();
  EXPECT_TRUE(hlo::VerifyHloModule(*module).ok()) << module->ToString();
  LoweredOps ops;
  for (const hlo::HloInstruction* instruction : module->entry_computation()->instructions()) {
    ops.transposes += instruction->opcode() == hlo::HloOpcode::kTranspose;
    ops.slices += instruction->opcode() == hlo::HloOpcode::kSlice;
    ops.concatenates += instruction->opcode() == hlo::HloOpcode::kConcatenate;
    ops.adds += instruction->opcode() == hlo::HloOpcode::kAdd;
    if (instruction->opcode() == hlo::HloOpcode::kDot) {
      ++ops.dots;
      ops.dot_lhs_shapes.push_back(instruction->operand(0)->shape().dimensions);
      ops.dot_lhs_contracting.push_back(instruction->dot_dimension_numbers().lhs_contracting_dimensions.at(0));
    }
  }
  return ops;
}

// The kernel gradient of a 3x3 SAME convolution over 6x6 images with 4 channels (JAX's form): one dot
// per output position over the operands as written (no transpose), instead of 36 per-tap dots
// (9 positions x 4 channels are more columns than one gathered matrix takes).
TEST(ConvolutionLoweringTest, KernelGradientIsOneDotPerOutputPosition) {
  const char* input = R"(HloModule kernel_gradient

ENTRY %main (x: f32[2,6,6,4], g: f32[2,6,6,4]) -> f32[3,3,4,4] {
  %x = f32[2,6,6,4]{3,2,1,0} parameter(0)
  %g = f32[2,6,6,4]{3,2,1,0} parameter(1)
  ROOT %c = f32[3,3,4,4]{3,2,1,0} convolution(f32[2,6,6,4]{3,2,1,0} %x, f32[2,6,6,4]{3,2,1,0} %g), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
}
)";
  LoweredOps ops = LowerAndCount(input);
  EXPECT_EQ(ops.dots, 9);
  EXPECT_EQ(ops.slices, 9);
  EXPECT_EQ(ops.transposes, 0);
  for (int i = 0; i < ops.dots; ++i) {
    EXPECT_EQ(ops.dot_lhs_shapes[i], (std::vector<int64_t>{72, 4}));  // [Ci*taps, N]: 2 images * 36 taps
    EXPECT_EQ(ops.dot_lhs_contracting[i], 0);
  }
}

// Grayscale images: the 9 windows of a 3x3 convolution (and of its kernel gradient) are 9 columns
// Features that fill whole lane tiles (here 4 lanes, 8 channels): the windows are gathered side by side
// with row copies only, so a 3x3 convolution is one dot over [N*H*W, 9*Ci] (no per-tap dots, no adds),
// and its kernel gradient one dot of the kernel operand (lhs, contracted over its rows) by the 9
// gathered windows, transposed back.
TEST(ConvolutionLoweringTest, LaneAlignedWindowsAreGatheredForOneDot) {
  const char* forward = R"(HloModule forward

ENTRY %main (x: f32[2,6,6,8], k: f32[3,3,8,4]) -> f32[2,4,4,4] {
  %x = f32[2,6,6,8]{3,2,1,0} parameter(0)
  %k = f32[3,3,8,4]{3,2,1,0} parameter(1)
  ROOT %c = f32[2,4,4,4]{3,2,1,0} convolution(f32[2,6,6,8]{3,2,1,0} %x, f32[3,3,8,4]{3,2,1,0} %k), window={size=3x3}, dim_labels=b01f_01io->b01f
}
)";
  const char* kernel_gradient = R"(HloModule kernel_gradient

ENTRY %main (x: f32[2,6,6,8], g: f32[2,4,4,4]) -> f32[3,3,8,4] {
  %x = f32[2,6,6,8]{3,2,1,0} parameter(0)
  %g = f32[2,4,4,4]{3,2,1,0} parameter(1)
  ROOT %c = f32[3,3,8,4]{3,2,1,0} convolution(f32[2,6,6,8]{3,2,1,0} %x, f32[2,4,4,4]{3,2,1,0} %g), window={size=4x4}, dim_labels=f01b_i01o->01bf
}
)";
  LoweredOps ops = LowerAndCount(forward, /*lanes=*/4);
  EXPECT_EQ(ops.dots, 1);
  EXPECT_EQ(ops.adds, 0);
  EXPECT_EQ(ops.concatenates, 1);
  EXPECT_EQ(ops.dot_lhs_shapes, (std::vector<std::vector<int64_t>>{{32, 72}}));  // [N*H*W, taps*Ci]
  EXPECT_EQ(ops.dot_lhs_contracting, std::vector<int64_t>{1});
  ops = LowerAndCount(kernel_gradient, /*lanes=*/4);
  EXPECT_EQ(ops.dots, 1);
  EXPECT_EQ(ops.concatenates, 1);
  EXPECT_EQ(ops.transposes, 1);  // of the [Co, positions*Ci] product only
  EXPECT_EQ(ops.dot_lhs_shapes, (std::vector<std::vector<int64_t>>{{32, 4}}));  // the gradient as [N*taps, Co]
  EXPECT_EQ(ops.dot_lhs_contracting, std::vector<int64_t>{0});
  // Lanes that do not divide the features: per-tap dots and per-position dots when the windows are
  // more than 3 lane tiles together (9 x 8 columns > 3 x 16 lanes) ...
  ops = LowerAndCount(forward, /*lanes=*/16);
  EXPECT_EQ(ops.dots, 9);
  EXPECT_EQ(ops.adds, 8);
  ops = LowerAndCount(kernel_gradient, /*lanes=*/16);
  EXPECT_EQ(ops.dots, 9);
  // ... and one dot of the gathered windows when they fit in 3 tiles (72 columns <= 3 x 32 lanes).
  ops = LowerAndCount(forward, /*lanes=*/32);
  EXPECT_EQ(ops.dots, 1);
  EXPECT_EQ(ops.adds, 0);
  ops = LowerAndCount(kernel_gradient, /*lanes=*/32);
  EXPECT_EQ(ops.dots, 1);
}

// together, gathered into one matrix for one dot.
TEST(ConvolutionLoweringTest, NarrowWindowsAreGatheredForOneDot) {
  const char* forward = R"(HloModule forward

ENTRY %main (x: f32[2,6,6,1], k: f32[3,3,1,4]) -> f32[2,6,6,4] {
  %x = f32[2,6,6,1]{3,2,1,0} parameter(0)
  %k = f32[3,3,1,4]{3,2,1,0} parameter(1)
  ROOT %c = f32[2,6,6,4]{3,2,1,0} convolution(f32[2,6,6,1]{3,2,1,0} %x, f32[3,3,1,4]{3,2,1,0} %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
}
)";
  const char* kernel_gradient = R"(HloModule kernel_gradient

ENTRY %main (x: f32[2,6,6,1], g: f32[2,6,6,4]) -> f32[3,3,1,4] {
  %x = f32[2,6,6,1]{3,2,1,0} parameter(0)
  %g = f32[2,6,6,4]{3,2,1,0} parameter(1)
  ROOT %c = f32[3,3,1,4]{3,2,1,0} convolution(f32[2,6,6,1]{3,2,1,0} %x, f32[2,6,6,4]{3,2,1,0} %g), window={size=6x6 pad=1_1x1_1}, dim_labels=f01b_i01o->01bf
}
)";
  LoweredOps ops = LowerAndCount(forward);
  EXPECT_EQ(ops.dots, 1);
  EXPECT_EQ(ops.slices, 9);
  EXPECT_EQ(ops.concatenates, 1);
  EXPECT_EQ(ops.transposes, 0);
  EXPECT_EQ(ops.dot_lhs_shapes, (std::vector<std::vector<int64_t>>{{72, 9}}));  // [N*H*W, taps]
  EXPECT_EQ(ops.dot_lhs_contracting, std::vector<int64_t>{1});
  ops = LowerAndCount(kernel_gradient);
  EXPECT_EQ(ops.dots, 1);
  EXPECT_EQ(ops.slices, 9);
  EXPECT_EQ(ops.concatenates, 1);
  EXPECT_EQ(ops.transposes, 0);
  EXPECT_EQ(ops.dot_lhs_shapes, (std::vector<std::vector<int64_t>>{{72, 9}}));  // [N*H*W, positions]
  EXPECT_EQ(ops.dot_lhs_contracting, std::vector<int64_t>{0});
}

TEST(ConvolutionLoweringTest, KeepsDepthwiseWindowsBehindAPadWhenAsked) {
  const char* input = R"(HloModule depthwise_kept

ENTRY %main (x: f32[2,7,6,5], k: f32[3,3,1,5]) -> f32[2,4,3,5] {
  %x = f32[2,7,6,5]{3,2,1,0} parameter(0)
  %k = f32[3,3,1,5]{3,2,1,0} parameter(1)
  ROOT %c = f32[2,4,3,5]{3,2,1,0} convolution(f32[2,7,6,5]{3,2,1,0} %x, f32[3,3,1,5]{3,2,1,0} %k), window={size=3x3 stride=2x2 pad=1_1x0_1}, dim_labels=b01f_01io->b01f, feature_group_count=5
}
)";
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(input).value();
  std::mt19937 rng(5);
  std::vector<hlo::Literal> arguments;
  for (const hlo::HloInstruction* parameter : module->entry_computation()->parameter_instructions()) {
    arguments.push_back(hlo::Literal::Random(parameter->shape(), rng));
  }
  const std::vector<hlo::Literal> expected = hlo::Interpret(*module, arguments).value();
  ConvolutionLowering pass(ConvolutionLoweringOptions{/*keep_depthwise_windows=*/true});
  ASSERT_TRUE(pass.Run(module.get()).value());
  ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
  const hlo::HloInstruction* root = module->entry_computation()->root_instruction();
  ASSERT_EQ(root->opcode(), hlo::HloOpcode::kConvolution);
  EXPECT_TRUE(IsUnpaddedDepthwiseConvolution(*root));
  EXPECT_EQ(root->operand(0)->opcode(), hlo::HloOpcode::kPad);
  EXPECT_EQ(hlo::Interpret(*module, arguments).value()[0], expected[0]);
  // A second run leaves the unpadded form alone.
  EXPECT_FALSE(pass.Run(module.get()).value());
}

}  // namespace
}  // namespace tpu::compiler
