#include "compiler/hlo/printer.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/test_util.h"

namespace tpu::hlo {
namespace {

using testing::ReadSharedHlo;

TEST(PrinterTest, PrintParsePrintIsAFixedPointOnSharedFiles) {
  for (const char* name : testing::kSharedHloFiles) {
    std::string text = ReadSharedHlo(name);
    if (text.empty()) GTEST_SKIP() << "no ../shared/hlo";
    auto first = ParseHloModule(text);
    ASSERT_TRUE(first.ok()) << first.status();
    std::string printed = PrintHloModule(**first);
    auto second = ParseHloModule(printed);
    ASSERT_TRUE(second.ok()) << name << ": " << second.status();
    EXPECT_EQ(PrintHloModule(**second), printed) << name;
  }
}

TEST(PrinterTest, ReproducesXlaDumpsVerbatim) {
  // XLA's own printer wrote these; ours writes the same bytes (modulo a trailing blank line).
  for (const char* name : testing::kSharedHloFiles) {
    std::string text = ReadSharedHlo(name);
    if (text.empty()) GTEST_SKIP();
    auto module = ParseHloModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    std::string printed = PrintHloModule(**module);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    while (!printed.empty() && printed.back() == '\n') printed.pop_back();
    EXPECT_EQ(printed, text) << name;
  }
}

TEST(PrinterTest, ModuleBuiltInCodePrintsAndParses) {
  HloModule module("built");
  auto add = std::make_unique<HloComputation>("add");
  HloInstruction* a = add->AddInstruction(HloInstruction::CreateParameter(0, Shape::Make(PrimitiveType::F32, {}), "a"));
  HloInstruction* b = add->AddInstruction(HloInstruction::CreateParameter(1, Shape::Make(PrimitiveType::F32, {}), "b"));
  add->set_root_instruction(
      add->AddInstruction(HloInstruction::CreateBinary(Shape::Make(PrimitiveType::F32, {}), HloOpcode::kAdd, a, b)));
  HloComputation* adder = module.AddComputation(std::move(add));
  auto entry = std::make_unique<HloComputation>("main");
  Shape matrix = Shape::MakeWithDefaultLayout(PrimitiveType::F32, {2, 3});
  HloInstruction* x = entry->AddInstruction(HloInstruction::CreateParameter(0, matrix, "x"));
  HloInstruction* zero = entry->AddInstruction(HloInstruction::CreateConstant(Literal::CreateR0<float>(0.5f)));
  HloInstruction* sum = entry->AddInstruction(HloInstruction::CreateReduce(
      Shape::MakeWithDefaultLayout(PrimitiveType::F32, {2}), x, zero, {1}, adder));
  HloInstruction* tuple = entry->AddInstruction(HloInstruction::CreateTuple({sum, x}));
  entry->set_root_instruction(tuple);
  module.AddComputation(std::move(entry), /*is_entry=*/true);
  std::string text = PrintHloModule(module);
  EXPECT_NE(text.find("ENTRY %main (x: f32[2,3]) -> (f32[2], f32[2,3]) {"), std::string::npos) << text;
  EXPECT_NE(text.find("%reduce.1 = f32[2]{0} reduce(f32[2,3]{1,0} %x, f32[] %constant.0), dimensions={1}, to_apply=%add"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("constant(0.5)"), std::string::npos);
  auto parsed = ParseHloModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
  EXPECT_EQ(PrintHloModule(**parsed), text);
}

TEST(PrinterTest, PrintsEveryStructuredAttribute) {
  const char* text = R"(HloModule attrs, is_scheduled=true

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

ENTRY %e (x: f32[1,8,8,4], k: f32[3,3,2,6]) -> (f32[1,4,4,6], f32[1,4,4,4], f32[3,6], f32[1,10,8,4], f32[2,2,8]) {
  %x = f32[1,8,8,4]{3,2,1,0} parameter(0)
  %k = f32[3,3,2,6]{3,2,1,0} parameter(1)
  %conv = f32[1,4,4,6]{3,2,1,0} convolution(f32[1,8,8,4]{3,2,1,0} %x, f32[3,3,2,6]{3,2,1,0} %k), window={size=3x3 stride=2x2 pad=1_0x1_0 rhs_dilate=1x1}, dim_labels=b01f_01io->b01f, feature_group_count=2
  %init = f32[] constant(-inf)
  %pool = f32[1,4,4,4]{3,2,1,0} reduce-window(f32[1,8,8,4]{3,2,1,0} %x, f32[] %init), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%max
  %s = f32[3,6]{1,0} slice(f32[3,3,2,6]{3,2,1,0} %k), slice={[0:3], [1:2], [0:1], [0:6:1]}
  %r = f32[3,6]{1,0} reshape(f32[3,3,2,6]{3,2,1,0} %k)
  %p = f32[1,10,8,4]{3,2,1,0} pad(f32[1,8,8,4]{3,2,1,0} %x, f32[] %init), padding=0_0x1_1x0_0x0_0
  %d = f32[2,2,8]{2,1,0} dot(f32[2,2,3]{2,1,0} %l, f32[2,3,8]{2,1,0} %rr), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, precision_config={DEFAULT,DEFAULT}
  %l = f32[2,2,3]{2,1,0} constant({...})
  %rr = f32[2,3,8]{2,1,0} constant({...})
  ROOT %t = (f32[1,4,4,6]{3,2,1,0}, f32[1,4,4,4]{3,2,1,0}, f32[3,6]{1,0}, f32[1,10,8,4]{3,2,1,0}, f32[2,2,8]{2,1,0}) tuple(%conv, %pool, %s, %p, %d)
}
)";
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  std::string printed = PrintHloModule(**module);
  for (const char* fragment :
       {"HloModule attrs, is_scheduled=true", "window={size=3x3 stride=2x2 pad=1_0x1_0}",
        "dim_labels=b01f_01io->b01f, feature_group_count=2", "window={size=1x2x2x1 stride=1x2x2x1}, to_apply=%max",
        "slice={[0:3], [1:2], [0:1], [0:6]}", "padding=0_0x1_1x0_0x0_0",
        "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, "
        "precision_config={DEFAULT,DEFAULT}",
        "constant({...})", "constant(-inf)"})
    EXPECT_NE(printed.find(fragment), std::string::npos) << fragment << "\n" << printed;
  // Operands print before their users even though the text defined %l and %rr after %d.
  EXPECT_LT(printed.find("%l = "), printed.find("%d = "));
  auto again = ParseHloModule(printed);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(PrintHloModule(**again), printed);
}

}  // namespace
}  // namespace tpu::hlo
