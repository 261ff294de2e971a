// Lane relayouts (relayout.cc): slices, pads and concatenates that move columns to other lanes and
// reshapes that change the device layout, on sizes that are not multiples of the lane count, ranks 1-3.
// Each module is compiled by codegen, checked by the sync checker, run on the reference model (and the
// verilated chip) and compared bit for bit with the HLO interpreter; padded lanes of the
// outputs must be +0.
#include <gtest/gtest.h>

#include <string>

#include "compiler/codegen/device_test_util.h"

namespace tpu::compiler {
namespace {

using device_test::DeviceOptions;

// vmem_lines: the VMEM the code may use (less than the device has: narrower windows).
void ExpectExactOnDevice(const std::string& text, uint32_t vmem_lines = cfg::kVmemLines) {
  device_test::ExpectBitExactOnDevices(text, DeviceOptions(vmem_lines));
}

std::string Unary(const std::string& in, const std::string& out, const std::string& op, const std::string& attrs) {
  return "HloModule m\nENTRY %main (x: " + in + ") -> " + out + " {\n  %x = " + in + " parameter(0)\n  ROOT %r = " +
         out + " " + op + "(" + in + " %x)" + (attrs.empty() ? "" : ", " + attrs) + "\n}\n";
}

std::string Pad(const std::string& in, const std::string& out, const std::string& value, const std::string& padding) {
  return "HloModule m\nENTRY %main (x: " + in + ") -> " + out + " {\n  %x = " + in +
         " parameter(0)\n  %v = f32[] constant(" + value + ")\n  ROOT %r = " + out + " pad(" + in + " %x, f32[] %v), padding=" +
         padding + "\n}\n";
}

TEST(CodegenLaneRelayoutTest, SlicesOfTheMinorDimension) {
  ExpectExactOnDevice(Unary("f32[130]", "f32[117]", "slice", "slice={[3:120]}"));
  ExpectExactOnDevice(Unary("f32[13]", "f32[6]", "slice", "slice={[1:12:2]}"));
  ExpectExactOnDevice(Unary("f32[9]", "f32[1]", "slice", "slice={[8:9]}"));
  ExpectExactOnDevice(Unary("f32[7,130]", "f32[3,42]", "slice", "slice={[1:6:2], [5:129:3]}"));
  ExpectExactOnDevice(Unary("f32[13,9]", "f32[13,8]", "slice", "slice={[0:13], [1:9]}"));
  ExpectExactOnDevice(Unary("f32[3,9,13]", "f32[3,7,5]", "slice", "slice={[0:3], [1:8], [3:12:2]}"));
  ExpectExactOnDevice(Unary("s32[19,21]", "s32[9,13]", "slice", "slice={[1:19:2], [7:20]}"));
}

TEST(CodegenLaneRelayoutTest, ConcatenatesAtUnalignedOffsets) {
  ExpectExactOnDevice(R"(HloModule m
ENTRY %main (a: f32[7], b: f32[9], c: f32[1]) -> f32[17] {
  %a = f32[7] parameter(0)
  %b = f32[9] parameter(1)
  %c = f32[1] parameter(2)
  ROOT %r = f32[17] concatenate(f32[7] %a, f32[9] %b, f32[1] %c), dimensions={0}
})");
  ExpectExactOnDevice(R"(HloModule m
ENTRY %main (a: f32[13,7], b: f32[13,9]) -> f32[13,16] {
  %a = f32[13,7] parameter(0)
  %b = f32[13,9] parameter(1)
  ROOT %r = f32[13,16] concatenate(f32[13,7] %a, f32[13,9] %b), dimensions={1}
})");
  ExpectExactOnDevice(R"(HloModule m
ENTRY %main (a: f32[2,3,13], b: f32[2,3,8], c: f32[2,3,130]) -> f32[2,3,151] {
  %a = f32[2,3,13] parameter(0)
  %b = f32[2,3,8] parameter(1)
  %c = f32[2,3,130] parameter(2)
  ROOT %r = f32[2,3,151] concatenate(f32[2,3,13] %a, f32[2,3,8] %b, f32[2,3,130] %c), dimensions={2}
})");
  // The whole-tile operand first is a row copy; the others start at its end.
  ExpectExactOnDevice(R"(HloModule m
ENTRY %main (a: f32[5,16], b: f32[5,7], c: f32[5,9]) -> f32[5,32] {
  %a = f32[5,16] parameter(0)
  %b = f32[5,7] parameter(1)
  %c = f32[5,9] parameter(2)
  ROOT %r = f32[5,32] concatenate(f32[5,16] %a, f32[5,7] %b, f32[5,9] %c), dimensions={1}
})");
}

// The windows of an im2col matrix: slices on whole tiles concatenated along the minor dimension are read
// from their source by the concatenate (never written themselves), strided windows and a column range
// included; a slice that is also an output keeps its own code.
TEST(CodegenLaneRelayoutTest, ConcatenatesSlicesFromTheirSource) {
  const std::string f = std::to_string(2 * cfg::kLanes), l = std::to_string(cfg::kLanes);
  const std::string x = "f32[2,6,7," + f + "]", w = "f32[2,3,4," + f + "]", m = "f32[24," + f + "]";
  const std::string text = "HloModule m\nENTRY %main (x: " + x + ") -> (f32[24," + std::to_string(7 * cfg::kLanes) +
      "], " + w + ") {\n  %x = " + x + " parameter(0)\n" +
      "  %s0 = " + w + " slice(%x), slice={[0:2], [0:3], [0:4], [0:" + f + "]}\n" +
      "  %s1 = " + w + " slice(%x), slice={[0:2], [1:4], [2:6], [0:" + f + "]}\n" +
      "  %s2 = " + w + " slice(%x), slice={[0:2], [0:6:2], [0:7:2], [0:" + f + "]}\n" +
      "  %s3 = f32[2,3,4," + l + "] slice(%x), slice={[0:2], [3:6], [3:7], [" + l + ":" + f + "]}\n" +
      "  %r0 = " + m + " reshape(%s0)\n  %r1 = " + m + " reshape(%s1)\n  %r2 = " + m + " reshape(%s2)\n" +
      "  %r3 = f32[24," + l + "] reshape(%s3)\n" +
      "  %c = f32[24," + std::to_string(7 * cfg::kLanes) + "] concatenate(%r0, %r1, %r2, %r3), dimensions={1}\n" +
      "  ROOT %t = (f32[24," + std::to_string(7 * cfg::kLanes) + "], " + w + ") tuple(%c, %s1)\n}\n";
  ExpectExactOnDevice(text);
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<Program> program = Compile(**module, DeviceOptions());
  ASSERT_TRUE(program.ok()) << program.status();
  std::string steps;
  for (const CodeRange& range : program->code_ranges) steps += range.what.substr(0, range.what.find(' ')) + " ";
  EXPECT_EQ(steps, "s1 c ") << "only the slice that is an output and the concatenate have code";
}

TEST(CodegenLaneRelayoutTest, PadsWithInteriorAndMinorPadding) {
  ExpectExactOnDevice(Pad("f32[13]", "f32[30]", "1.5", "3_2_1"));
  ExpectExactOnDevice(Pad("f32[7,9]", "f32[22,26]", "0", "1_2_2x2_-1_2"));
  ExpectExactOnDevice(Pad("f32[2,3,13]", "f32[3,6,14]", "-2", "0_1x1_0_1x-2_3"));
  ExpectExactOnDevice(Pad("f32[9,130]", "f32[9,131]", "1.5", "0_0x1_0"));
  // Only rows move (interior padding of the leading dimension); the value fills unaligned rows.
  ExpectExactOnDevice(Pad("f32[7,9]", "f32[21,9]", "1.5", "1_1_2x0_0"));
}

TEST(CodegenLaneRelayoutTest, ReshapesThatChangeTheLayout) {
  ExpectExactOnDevice(Unary("f32[6,10]", "f32[60]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[4,6]", "f32[2,12]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[60]", "f32[6,10]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[4,6]", "f32[3,8]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[3,7,9]", "f32[3,63]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[2,13,9]", "f32[234]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[130,3]", "f32[390]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[9,13]", "f32[13,9]", "reshape", ""));
  ExpectExactOnDevice(Unary("s32[13,1,7]", "s32[7,13]", "reshape", ""));
  // Merges into fewer result rows than lanes (and splits of fewer operand rows) go through rows of
  // lcm(short row, LANES) elements in the same lines, a single row's last elements on their own.
  ExpectExactOnDevice(Unary("f32[40,6]", "f32[2,120]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[1000,3]", "f32[3000]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[1001,3]", "f32[3003]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[77,1]", "f32[1,77]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[3000]", "f32[1000,3]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[3003]", "f32[1001,3]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[2,120]", "f32[40,6]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[1,77]", "f32[77,1]", "reshape", ""));
  // Rows split into many rows (a flattened feature map back to NHWC): one relayout in a loop.
  ExpectExactOnDevice(Unary("f32[3,196]", "f32[3,7,7,4]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[1000]", "f32[100,10]", "reshape", ""));
  ExpectExactOnDevice(Unary("f32[9,130]", "f32[9,10,13]", "reshape", ""));
}

// Rows wider than the VMEM holds at once go in windows of output tiles; pieces and repeated pieces are
// cut at the windows' edges.
TEST(CodegenLaneRelayoutTest, RowsWiderThanOneWindow) {
  ExpectExactOnDevice(Unary("f32[3,5000]", "f32[3,4998]", "slice", "slice={[0:3], [1:4999]}"));
  ExpectExactOnDevice(Unary("f32[2,9000]", "f32[2,2997]", "slice", "slice={[0:2], [5:8996:3]}"));
  ExpectExactOnDevice(Pad("f32[3,2000]", "f32[3,4001]", "0.5", "0_0x1_1_1"));
  ExpectExactOnDevice(Unary("f32[2,300,9]", "f32[2,2700]", "reshape", ""));
  ExpectExactOnDevice(R"(HloModule m
ENTRY %main (a: f32[2,2500], b: f32[2,3001]) -> f32[2,5501] {
  %a = f32[2,2500] parameter(0)
  %b = f32[2,3001] parameter(1)
  ROOT %r = f32[2,5501] concatenate(f32[2,2500] %a, f32[2,3001] %b), dimensions={1}
})");
}

// Many rows: the software pipeline (stores of block j-1 and gathers of block j+1 beside block j), for
// even and odd block counts and a partial last block.
TEST(CodegenLaneRelayoutTest, ManyRowsInASoftwarePipeline) {
  for (int rows : {32, 33, 40, 47, 64, 100}) {
    const std::string n = std::to_string(rows);
    ExpectExactOnDevice(Unary("f32[" + n + ",30]", "f32[" + n + ",13]", "slice", "slice={[0:" + n + "], [3:29:2]}"));
    ExpectExactOnDevice(Pad("f32[" + n + ",13]", "f32[" + n + ",29]", "1.5", "0_0x1_3_1"));
  }
  ExpectExactOnDevice(Unary("s32[3,40,13]", "s32[3,40,11]", "slice", "slice={[0:3], [0:40], [1:12]}"));
  ExpectExactOnDevice(Pad("f32[40,9]", "f32[81,24]", "-0.25", "1_1_1x2_5_1"), 24 * cfg::kLanes);
  ExpectExactOnDevice(R"(HloModule m
ENTRY %main (a: f32[45,7], b: f32[45,9], c: f32[45,3]) -> f32[45,19] {
  %a = f32[45,7] parameter(0)
  %b = f32[45,9] parameter(1)
  %c = f32[45,3] parameter(2)
  ROOT %r = f32[45,19] concatenate(f32[45,7] %a, f32[45,9] %b, f32[45,3] %c), dimensions={1}
})");
}

// Many pipelined relayouts overflow the tiny IMEM; the compile retry without pipelines fits them.
TEST(CodegenLaneRelayoutTest, ManyRelayoutsFitTheImemWithoutPipelines) {
  std::string types, body, values;
  for (int i = 0; i < 40; ++i) {
    const std::string name = "%s" + std::to_string(i);
    const std::string range = "[" + std::to_string(1 + 7 * i) + ":" + std::to_string(10 + 7 * i) + "]";
    types += std::string(i ? ", " : "") + "f32[64,9]";
    values += std::string(i ? ", " : "") + "f32[64,9] " + name;
    body += "  " + name + " = f32[64,9] slice(f32[64,300] %x), slice={[0:64], " + range + "}\n";
  }
  ExpectExactOnDevice("HloModule m\nENTRY %main (x: f32[64,300]) -> (" + types + ") {\n  %x = f32[64,300] parameter(0)\n" +
                      body + "  ROOT %t = (" + types + ") tuple(" + values + ")\n}\n");
}

// The same windows with a VMEM of a few tiles: every piece, repeated piece and strided piece is cut.
TEST(CodegenLaneRelayoutTest, WindowsOfAFewTiles) {
  const uint32_t vmem = 16 * cfg::kLanes;
  ExpectExactOnDevice(Unary("f32[9,130]", "f32[9,117]", "slice", "slice={[0:9], [3:120]}"), vmem);
  ExpectExactOnDevice(Unary("f32[5,130]", "f32[5,42]", "slice", "slice={[0:5], [5:129:3]}"), vmem);
  ExpectExactOnDevice(Pad("f32[3,40]", "f32[3,83]", "-1", "0_0x2_2_1"), vmem);
  ExpectExactOnDevice(Unary("f32[2,13,9]", "f32[2,117]", "reshape", ""), vmem);
  ExpectExactOnDevice(Unary("f32[9,13]", "f32[13,9]", "reshape", ""), vmem);
  ExpectExactOnDevice(R"(HloModule m
ENTRY %main (a: f32[3,13], b: f32[3,50], c: f32[3,7]) -> f32[3,70] {
  %a = f32[3,13] parameter(0)
  %b = f32[3,50] parameter(1)
  %c = f32[3,7] parameter(2)
  ROOT %r = f32[3,70] concatenate(f32[3,13] %a, f32[3,50] %b, f32[3,7] %c), dimensions={1}
})", vmem);
}

// Reshapes whose rows meet too rarely for the code size are rejected with the reason.
TEST(CodegenLaneRelayoutTest, RejectsReshapesOfTooManyPieces) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module =
      hlo::ParseHloModule(Unary("f32[1000,7]", "f32[140,50]", "reshape", ""));
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<Program> program = Compile(**module, DeviceOptions());
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), StatusCode::kUnimplemented) << program.status();
  EXPECT_NE(program.status().message().find("row pieces"), std::string::npos) << program.status();
}

}  // namespace
}  // namespace tpu::compiler

