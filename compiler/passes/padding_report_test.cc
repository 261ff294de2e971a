#include "compiler/passes/padding_report.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/printer.h"
#include "compiler/hlo/test_util.h"

namespace tpu::compiler {
namespace {

const char* kModule = R"(HloModule padded

ENTRY %main (x: f32[32,784], w: f32[784,120], img: f32[10,16,16,3], k: f32[3,3,3,64], dw: f32[3,3,1,64]) -> (f32[32,120], f32[10,14,14,64], f32[10,14,14,64]) {
  %x = f32[32,784]{1,0} parameter(0)
  %w = f32[784,120]{1,0} parameter(1)
  %dense = f32[32,120]{1,0} dot(f32[32,784]{1,0} %x, f32[784,120]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %img = f32[10,16,16,3]{3,2,1,0} parameter(2)
  %k = f32[3,3,3,64]{3,2,1,0} parameter(3)
  %conv = f32[10,14,14,64]{3,2,1,0} convolution(f32[10,16,16,3]{3,2,1,0} %img, f32[3,3,3,64]{3,2,1,0} %k), window={size=3x3}, dim_labels=b01f_01io->b01f
  %dw = f32[3,3,1,64]{3,2,1,0} parameter(4)
  %depthwise = f32[10,14,14,64]{3,2,1,0} convolution(f32[10,14,14,64]{3,2,1,0} %conv, f32[3,3,1,64]{3,2,1,0} %dw), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=64
  ROOT %t = (f32[32,120]{1,0}, f32[10,14,14,64]{3,2,1,0}, f32[10,14,14,64]{3,2,1,0}) tuple(f32[32,120]{1,0} %dense, f32[10,14,14,64]{3,2,1,0} %conv, f32[10,14,14,64]{3,2,1,0} %depthwise)
}
)";

TEST(PaddingReportTest, DotAndConvolutionsPaddedToTheTile) {
  auto module = hlo::ParseHloModule(kModule);
  ASSERT_TRUE(module.ok()) << module.status();
  std::string before = hlo::PrintHloModule(**module);
  PaddingReport pass({/*batch_multiple=*/8, /*feature_multiple=*/128});
  StatusOr<bool> changed = pass.Run(module->get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);
  EXPECT_EQ(hlo::PrintHloModule(**module), before);
  const char* expected =
      "padding report: batch to a multiple of 8, features to a multiple of 128 (MXU)\n"
      "%dense (dot)\n"
      "  lhs    f32[32,784]              -> f32[32,896]              12.50% padding\n"
      "  rhs    f32[784,120]             -> f32[896,128]             17.97% padding\n"
      "  output f32[32,120]              -> f32[32,128]              6.25% padding\n"
      "  MACs   3010560                  -> 3670016                  17.97% wasted\n"
      "%conv (convolution)\n"
      "  input  f32[10,16,16,3]          -> f32[16,16,16,128]        98.54% padding\n"
      "  kernel f32[3,3,3,64]            -> f32[3,3,128,128]         98.83% padding\n"
      "  output f32[10,14,14,64]         -> f32[16,14,14,128]        68.75% padding\n"
      "  MACs   3386880                  -> 462422016                99.27% wasted\n"
      "%depthwise (convolution)\n"
      "  input  f32[10,14,14,64]         -> f32[16,14,14,8192]       99.51% padding\n"
      "  kernel f32[3,3,1,64]            -> f32[3,3,128,8192]        99.99% padding\n"
      "  output f32[10,14,14,64]         -> f32[16,14,14,8192]       99.51% padding\n"
      "  MACs   1128960                  -> 29595009024              100.00% wasted\n";
  EXPECT_EQ(pass.text().substr(0, std::string(expected).size()), expected) << pass.text();
  EXPECT_NE(pass.text().find("total: 1 dot(s), 2 convolution(s);"), std::string::npos) << pass.text();
  ASSERT_EQ(pass.entries().size(), 3u);
  // Waste falls to zero when the sizes already fit the tile.
  PaddingReport exact({/*batch_multiple=*/2, /*feature_multiple=*/8});
  ASSERT_TRUE(exact.Run(module->get()).ok());
  EXPECT_EQ(exact.entries()[0].tensors[0].padded, exact.entries()[0].tensors[0].logical);
  EXPECT_EQ(exact.entries()[0].mac_waste_percent(), 0.0);
}

TEST(PaddingReportTest, BadOptionsAreAnError) {
  auto module = hlo::ParseHloModule(kModule);
  ASSERT_TRUE(module.ok());
  PaddingReport pass({8, 0});
  EXPECT_EQ(pass.Run(module->get()).status().code(), StatusCode::kInvalidArgument);
}

TEST(PaddingReportTest, SharedMnistStepReportsEveryDot) {
  std::string text = hlo::testing::ReadSharedHlo("pytorch_xla_mnist_mlp_train_step.hlo");
  if (text.empty()) GTEST_SKIP() << "no ../shared/hlo";
  auto module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<PaddingEntry> entries = ComputePaddingReport(**module, {});
  EXPECT_EQ(entries.size(), 8u);  // forward and backward of three layers
  for (const PaddingEntry& entry : entries) {
    EXPECT_GE(entry.padded_macs, entry.logical_macs) << entry.instruction;
    for (const PaddedTensor& tensor : entry.tensors) {
      EXPECT_GE(tensor.padded.ElementCount(), tensor.logical.ElementCount());
      for (int d = 0; d < tensor.padded.rank(); ++d) EXPECT_GE(tensor.padded.dimensions[d], tensor.logical.dimensions[d]);
    }
  }
}

}  // namespace
}  // namespace tpu::compiler
