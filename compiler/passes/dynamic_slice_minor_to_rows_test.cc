#include "compiler/passes/dynamic_slice_minor_to_rows.h"

#include <gtest/gtest.h>

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

using testing::ExpectRewrite;
using testing::ExpectUnchanged;

// dynamic-slice(x, starts...) of `sizes`, or dynamic-update-slice(x, u, starts...) when `update` is given.
std::string Module(const std::string& type, const std::vector<int64_t>& dims, const std::vector<int64_t>& sizes,
                   bool update, const std::string& start_type = "s32") {
  auto shape = [&](const std::vector<int64_t>& d) {
    std::string text = type + "[";
    for (size_t i = 0; i < d.size(); ++i) text += (i == 0 ? "" : ",") + std::to_string(d[i]);
    return text + "]";
  };
  const std::string x = shape(dims), w = shape(sizes);
  std::string header = "x: " + x, body = "  %x = " + x + " parameter(0)\n", operands = x + " %x";
  int parameter = 1;
  if (update) {
    header += ", u: " + w;
    body += "  %u = " + w + " parameter(1)\n";
    operands += ", " + w + " %u";
    ++parameter;
  }
  for (size_t d = 0; d < dims.size(); ++d, ++parameter) {
    const std::string name = "i" + std::to_string(d);
    header += ", " + name + ": " + start_type + "[]";
    body += "  %" + name + " = " + start_type + "[] parameter(" + std::to_string(parameter) + ")\n";
    operands += ", " + start_type + "[] %" + name;
  }
  std::string list = "{";
  for (size_t i = 0; i < sizes.size(); ++i) list += (i == 0 ? "" : ",") + std::to_string(sizes[i]);
  list += "}";
  const std::string result = update ? x : w;
  return "HloModule windows\n\nENTRY %main (" + header + ") -> " + result + " {\n" + body + "  ROOT %r = " + result +
         (update ? " dynamic-update-slice(" + operands + ")" : " dynamic-slice(" + operands + "), dynamic_slice_sizes=" + list) +
         "\n}\n";
}

struct Case {
  const char* name;
  std::string text;
};

std::vector<Case> Cases() {
  return {
      {"xs[i] of a scan over f32[7]", Module("f32", {7}, {1}, false)},
      {"three elements of f32[7]", Module("f32", {7}, {3}, false)},
      {"ys.at[i] of a scan over f32[7]", Module("f32", {7}, {1}, true)},
      {"three elements into f32[7]", Module("f32", {7}, {3}, true)},
      {"window on both dimensions of f32[5,7]", Module("f32", {5, 7}, {2, 3}, false)},
      {"window on the minor dimension of f32[5,7]", Module("f32", {5, 7}, {5, 3}, false)},
      {"one column of f32[5,7] into two rows", Module("f32", {5, 7}, {2, 1}, true)},
      {"three columns of every row of f32[5,7]", Module("f32", {5, 7}, {5, 3}, true)},
      {"window on three dimensions of f32[3,4,6]", Module("f32", {3, 4, 6}, {1, 2, 2}, false)},
      {"one column of f32[3,4,6] into two blocks", Module("f32", {3, 4, 6}, {2, 4, 1}, true)},
      {"window on three dimensions into f32[3,4,6]", Module("f32", {3, 4, 6}, {1, 2, 3}, true)},
      {"s32 values", Module("s32", {9}, {1}, true)},
      {"pred values", Module("pred", {4, 9}, {2, 4}, false)},
      {"s64 starts", Module("f32", {4, 9}, {2, 1}, true, "s64")},
      {"u32 starts", Module("f32", {9}, {2}, false, "u32")},
  };
}

bool PartialMinorWindow(const hlo::HloInstruction& instruction) {
  const bool update = instruction.opcode() == hlo::HloOpcode::kDynamicUpdateSlice;
  if (!update && instruction.opcode() != hlo::HloOpcode::kDynamicSlice) return false;
  const hlo::Shape& operand = instruction.operand(0)->shape();
  const hlo::Shape& window = update ? instruction.operand(1)->shape() : instruction.shape();
  return window.dimensions.back() != operand.dimensions.back();
}

// Same values, bit for bit, for starts inside, at the edges and outside (XLA clamps them into the
// operand), and no window of part of the minor dimension left.
TEST(DynamicSliceMinorToRowsTest, EveryCaseInterpretsAsBefore) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(c.text).value();
    ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
    std::unique_ptr<hlo::HloModule> rewritten = hlo::CloneModule(*module).value();
    DynamicSliceMinorToRows pass;
    ASSERT_TRUE(pass.Run(rewritten.get()).value());
    ASSERT_TRUE(hlo::VerifyHloModule(*rewritten).ok()) << hlo::VerifyHloModule(*rewritten);
    EXPECT_FALSE(pass.Run(rewritten.get()).value());
    for (const hlo::HloInstruction* instruction : rewritten->entry_computation()->instructions()) {
      EXPECT_FALSE(PartialMinorWindow(*instruction)) << instruction->ToString();
    }
    const hlo::HloComputation& entry = *module->entry_computation();
    const int64_t first_start = entry.root_instruction()->opcode() == hlo::HloOpcode::kDynamicUpdateSlice ? 2 : 1;
    const std::vector<int64_t>& dims = entry.parameter_instruction(0)->shape().dimensions;
    const bool unsigned_starts = c.text.find("u32[]") != std::string::npos;
    std::mt19937 rng(5);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<hlo::Literal> inputs;
      for (int64_t p = 0; p < entry.num_parameters(); ++p) {
        hlo::Literal value(entry.parameter_instruction(p)->shape());
        if (p < first_start) {
          for (int64_t i = 0; i < value.element_count(); ++i) value.SetFromDouble(i, static_cast<double>(rng() % 1000));
        } else {
          // From 2 below 0 to 2 past the dimension; a u32 start wraps to a huge one.
          const int64_t extent = dims[p - first_start];
          const int64_t start = static_cast<int64_t>(rng() % (extent + 5)) - 2;
          value.SetFromDouble(0, unsigned_starts && start < 0 ? 4294967296.0 + start : static_cast<double>(start));
        }
        inputs.push_back(std::move(value));
      }
      std::vector<hlo::Literal> expected = hlo::Interpret(*module, inputs).value();
      std::vector<hlo::Literal> got = hlo::Interpret(*rewritten, inputs).value();
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got[0], expected[0]) << "trial " << trial;
    }
  }
}

TEST(DynamicSliceMinorToRowsTest, ScanElementIsARowOfTheColumn) {
  DynamicSliceMinorToRows pass;
  ExpectRewrite(pass, Cases()[0].text, R"(
CHECK:      %[[R:reshape.[0-9]+]] = f32[1,7]{1,0} reshape(f32[7] %x)
CHECK-NEXT: %[[T:transpose.[0-9]+]] = f32[7,1]{1,0} transpose(f32[1,7]{1,0} %[[R]]), dimensions={1,0}
CHECK-NEXT: %[[Z:constant.[0-9]+]] = s32[] constant(0)
CHECK-NEXT: %[[S:dynamic-slice.[0-9]+]] = f32[1,1]{1,0} dynamic-slice(f32[7,1]{1,0} %[[T]], s32[] %i0, s32[] %[[Z]]), dynamic_slice_sizes={1,1}
CHECK-NEXT: ROOT {{.*}} = f32[1]{0} reshape(f32[1,1]{1,0} %[[S]])
)");
}

// One element per step: a select against the lane iota at the clamped start, no transposes.
TEST(DynamicSliceMinorToRowsTest, ScanOutputElementIsASelect) {
  DynamicSliceMinorToRows pass;
  ExpectRewrite(pass, Cases()[2].text, R"(
CHECK-NOT:  transpose
CHECK:      %[[C:clamp.[0-9]+]] = s32[] clamp(s32[] %{{constant.[0-9]+}}, s32[] %i0, s32[] %{{constant.[0-9]+}})
CHECK:      %[[L:iota.[0-9]+]] = s32[1,7]{1,0} iota(), iota_dimension=1
CHECK-NEXT: %[[A:broadcast.[0-9]+]] = s32[1,7]{1,0} broadcast(s32[] %[[C]]), dimensions={}
CHECK-NEXT: %[[M:compare.[0-9]+]] = pred[1,7]{1,0} compare(s32[1,7]{1,0} %[[L]], s32[1,7]{1,0} %[[A]]), direction=EQ
CHECK:      select(pred[1,7]{1,0} %[[M]],
CHECK-NOT:  dynamic
)");
}

// Rows first (the partial window of dimension 0), then the column within them, written back at the same starts.
TEST(DynamicSliceMinorToRowsTest, PartialRowsAreTakenAndWrittenWhole) {
  DynamicSliceMinorToRows pass;
  ExpectRewrite(pass, Cases()[6].text, R"(
CHECK:      %[[R:dynamic-slice.[0-9]+]] = f32[2,7]{1,0} dynamic-slice(f32[5,7] %x, s32[] %i0, s32[] %[[Z:constant.[0-9]+]]), dynamic_slice_sizes={2,7}
CHECK:      %[[S:select.[0-9]+]] = f32[2,7]{1,0} select(pred[2,7]{1,0} %{{compare.[0-9]+}}, f32[2,7]{1,0} %{{broadcast.[0-9]+}}, f32[2,7]{1,0} %[[R]])
CHECK-NEXT: ROOT {{.*}} = f32[5,7] dynamic-update-slice(f32[5,7] %x, f32[2,7]{1,0} %[[S]], s32[] %i0, s32[] %[[Z]])
)");
}

TEST(DynamicSliceMinorToRowsTest, WindowsOfWholeRowsAreLeft) {
  DynamicSliceMinorToRows pass;
  ExpectUnchanged(pass, Module("f32", {5, 7}, {2, 7}, false));
  ExpectUnchanged(pass, Module("f32", {5, 7}, {2, 7}, true));
  ExpectUnchanged(pass, Module("f32", {7}, {7}, true));
}

// A lax.scan over a vector after expand-tuples: xs passes through the loop unchanged.
const char* kScan = R"(HloModule scan

%body (s: (s32[], f32[], f32[7], f32[7])) -> (s32[], f32[], f32[7], f32[7]) {
  %s = (s32[], f32[], f32[7], f32[7]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %c = f32[] get-tuple-element(%s), index=1
  %ys = f32[7] get-tuple-element(%s), index=2
  %xs = f32[7] get-tuple-element(%s), index=3
  %x = f32[1] dynamic-slice(%xs, %i), dynamic_slice_sizes={1}
  %xr = f32[] reshape(%x)
  %sum = f32[] add(%c, %xr)
  %y = f32[] multiply(%c, %xr)
  %yr = f32[1] reshape(%y)
  %ys2 = f32[7] dynamic-update-slice(%ys, %yr, %i)
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[], f32[7], f32[7]) tuple(%next, %sum, %ys2, %xs)
}

%cond (s: (s32[], f32[], f32[7], f32[7])) -> pred[] {
  %s = (s32[], f32[], f32[7], f32[7]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(7)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

ENTRY %main (xs: f32[7]) -> f32[7] {
  %xs = f32[7] parameter(0)
  %zero = s32[] constant(0)
  %c0 = f32[] constant(1)
  %ys0 = f32[7] broadcast(%c0), dimensions={}
  %init = (s32[], f32[], f32[7], f32[7]) tuple(%zero, %c0, %ys0, %xs)
  %w = (s32[], f32[], f32[7], f32[7]) while(%init), condition=%cond, body=%body
  ROOT %r = f32[7] get-tuple-element(%w), index=2
}
)";

// xs[i] reads the column form of xs, transposed once before the loop and carried in the loop state; the
// stacked outputs ys are carried as a column too, written a row per step and transposed back after the
// loop; no transpose or select in the body; same values.
TEST(DynamicSliceMinorToRowsTest, ScanCarriesItsVectorsAsColumns) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kScan).value();
  ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << hlo::VerifyHloModule(*module);
  std::unique_ptr<hlo::HloModule> rewritten = hlo::CloneModule(*module).value();
  DynamicSliceMinorToRows pass;
  StatusOr<bool> changed = pass.Run(rewritten.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed);
  ASSERT_TRUE(hlo::VerifyHloModule(*rewritten).ok()) << hlo::VerifyHloModule(*rewritten);
  const std::string state = "(s32[], f32[], f32[7,1]{1,0}, f32[7], f32[7,1]{1,0})";
  EXPECT_EQ(testing::CheckLines(hlo::PrintHloModule(*rewritten), R"(
CHECK:      %body
CHECK-NOT:  transpose
CHECK-NOT:  select
CHECK:      %[[X:get-tuple-element.[0-9]+]] = f32[7,1]{1,0} get-tuple-element()" + state + R"( %s), index=4
CHECK-NEXT: %[[Z:constant.[0-9]+]] = s32[] constant(0)
CHECK-NEXT: dynamic-slice(f32[7,1]{1,0} %[[X]], s32[] %i, s32[] %[[Z]]), dynamic_slice_sizes={1,1}
CHECK:      %[[Y:get-tuple-element.[0-9]+]] = f32[7,1]{1,0} get-tuple-element()" + state + R"( %s), index=2
CHECK:      %[[W:dynamic-update-slice.[0-9]+]] = f32[7,1]{1,0} dynamic-update-slice(f32[7,1]{1,0} %[[Y]], f32[1,1]{1,0} %{{reshape.[0-9]+}}, s32[] %i,
CHECK-NEXT: ROOT {{.*}} tuple(s32[] %next, f32[] %sum, f32[7,1]{1,0} %[[W]], f32[7] %xs, f32[7,1]{1,0} %[[X]])
CHECK:      ENTRY %main
CHECK:      %[[YT:transpose.[0-9]+]] = f32[7,1]{1,0} transpose(
CHECK:      %[[XT:transpose.[0-9]+]] = f32[7,1]{1,0} transpose(
CHECK-NEXT: %[[I:tuple.[0-9]+]] = {{.*}} tuple(s32[] %zero, f32[] %c0, f32[7,1]{1,0} %[[YT]], f32[7] %xs, f32[7,1]{1,0} %[[XT]])
CHECK-NEXT: %w = )" + state + R"( while({{.*}} %[[I]]), condition=%cond, body=%body
CHECK-NEXT: %[[R:get-tuple-element.[0-9]+]] = f32[7,1]{1,0} get-tuple-element()" + state + R"( %w), index=2
CHECK-NEXT: %[[B:transpose.[0-9]+]] = f32[1,7]{1,0} transpose(f32[7,1]{1,0} %[[R]]), dimensions={1,0}
CHECK-NEXT: ROOT {{.*}} = f32[7]{0} reshape(f32[1,7]{1,0} %[[B]])
)"), "");
  std::mt19937 rng(9);
  hlo::Literal xs(module->entry_computation()->parameter_instruction(0)->shape());
  for (int64_t i = 0; i < xs.element_count(); ++i) xs.Set<float>(i, static_cast<float>(rng() % 17) / 8 - 1);
  std::vector<hlo::Literal> inputs;
  inputs.push_back(std::move(xs));
  EXPECT_EQ(hlo::Interpret(*rewritten, inputs).value()[0], hlo::Interpret(*module, inputs).value()[0]);
}

}  // namespace
}  // namespace tpu::compiler
