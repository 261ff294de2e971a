#include "compiler/codegen/program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "compiler/codegen/assembler.h"
#include "tpu_csr.h"

namespace tpu::compiler {
namespace {

TEST(DeviceLayoutTest, PadsTheMinorDimensionToLanes) {
  DeviceLayout layout = MakeDeviceLayout(hlo::Shape::Make(hlo::PrimitiveType::F32, {5, 13}), 8);
  EXPECT_EQ(layout.rows, 5);
  EXPECT_EQ(layout.cols, 13);
  EXPECT_EQ(layout.padded_cols, 16);
  EXPECT_EQ(layout.lines, 10u);
  EXPECT_EQ(layout.column_tiles(8), 2);

  DeviceLayout scalar = MakeDeviceLayout(hlo::Shape::Make(hlo::PrimitiveType::F32, {}), 8);
  EXPECT_EQ(scalar.rows, 1);
  EXPECT_EQ(scalar.cols, 1);
  EXPECT_EQ(scalar.lines, 1u);

  DeviceLayout rank3 = MakeDeviceLayout(hlo::Shape::Make(hlo::PrimitiveType::F32, {2, 3, 130}), 128);
  EXPECT_EQ(rank3.rows, 6);
  EXPECT_EQ(rank3.padded_cols, 256);
  EXPECT_EQ(rank3.lines, 12u);
}

TEST(DeviceLayoutTest, BytesRoundTripAndPaddingIsZero) {
  std::mt19937 rng(7);
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F32, {3, 11});
  hlo::Literal value = hlo::Literal::Random(shape, rng);
  DeviceLayout layout = MakeDeviceLayout(shape, 8);
  std::vector<uint8_t> bytes = ToDeviceBytes(value, layout);
  ASSERT_EQ(bytes.size(), size_t{layout.lines} * 32);
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 11; c < 16; ++c) {
      float padded;
      std::memcpy(&padded, &bytes[(r * 16 + c) * 4], 4);
      EXPECT_EQ(padded, 0.0f);
    }
    float first;
    std::memcpy(&first, &bytes[r * 16 * 4], 4);
    EXPECT_EQ(first, value.Get<float>(r * 11));
  }
  EXPECT_EQ(FromDeviceBytes(bytes.data(), layout), value);
}

// Every f16 bit pattern goes to the f32 word of its value and back unchanged (NaNs as the canonical
// quiet NaN of their sign); a word that is not an f16 value is rounded to nearest even on the way back.
TEST(DeviceLayoutTest, F16TransfersAreExact) {
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F16, {256, 256});
  hlo::Literal value(shape);
  for (int i = 0; i < 65536; ++i) value.Set<hlo::half>(i, hlo::half{static_cast<uint16_t>(i)});
  DeviceLayout layout = MakeDeviceLayout(shape, 8);
  std::vector<uint8_t> bytes = ToDeviceBytes(value, layout);
  hlo::Literal back = FromDeviceBytes(bytes.data(), layout);
  for (int i = 0; i < 65536; ++i) {
    const uint16_t bits = static_cast<uint16_t>(i);
    const bool nan = (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff) != 0;
    float word;
    std::memcpy(&word, &bytes[static_cast<size_t>(i) * 4], 4);
    if (nan) {
      EXPECT_TRUE(std::isnan(word)) << i;
      EXPECT_EQ(back.Get<hlo::half>(i).bits, (bits & 0x8000) | 0x7e00) << i;
    } else {
      EXPECT_EQ(word, hlo::HalfToFloat(hlo::half{bits})) << i;
      EXPECT_EQ(back.Get<hlo::half>(i).bits, bits) << i;
    }
  }
  // 1 + 2^-11 is halfway between 1 and the next f16: to even (1); 1 + 3 * 2^-11 rounds up.
  hlo::Literal ties(hlo::Shape::Make(hlo::PrimitiveType::F16, {2}));
  DeviceLayout tie_layout = MakeDeviceLayout(ties.shape(), 8);
  std::vector<uint8_t> words(static_cast<size_t>(tie_layout.lines) * 32, 0);
  const float halfway[2] = {1.0f + std::ldexp(1.0f, -11), 1.0f + 3 * std::ldexp(1.0f, -11)};
  std::memcpy(words.data(), halfway, 8);
  hlo::Literal rounded = FromDeviceBytes(words.data(), tie_layout);
  EXPECT_EQ(rounded.Get<hlo::half>(0).bits, 0x3c00);
  EXPECT_EQ(rounded.Get<hlo::half>(1).bits, 0x3c02);
}

Program SmallProgram() {
  Assembler a;
  a.LoadAddress(Reg{1}, RegionKind::kParameter, 0, 0);
  a.LoadAddress(Reg{2}, RegionKind::kOutput, 0, 1);
  a.LoadAddress(Reg{3}, RegionKind::kConstant, 0, 0);
  a.LoadAddress(Reg{4}, RegionKind::kTemp, 0, 2);
  a.Halt();
  Program program;
  program.module_name = "small";
  program.lanes = 8;
  EXPECT_TRUE(a.Finish(&program.code, &program.relocations).ok());
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F32, {2, 8});
  program.parameters.push_back(MakeDeviceLayout(shape, 8));
  program.outputs.push_back(MakeDeviceLayout(shape, 8));
  program.constants.push_back(MakeDeviceLayout(shape, 8));
  program.constant_bytes.push_back(ToDeviceBytes(hlo::Literal(shape, std::vector<float>(16, 1.5f)), program.constants[0]));
  program.temp_lines = 4;
  program.mxu_macs = 99;
  program.code_ranges = {CodeRange{"a = f32[2,8] add", 0, 2}, CodeRange{"copy a to output 0", 2, 4}};
  return program;
}

TEST(ProgramTest, RelocateCodeAddsRegionBases) {
  Program program = SmallProgram();
  ASSERT_TRUE(ValidateProgram(program).ok());
  StatusOr<std::vector<uint64_t>> code = RelocateCode(program, {100}, {200}, {300}, 400);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(isa::Decode((*code)[0]).imm, 100u);
  EXPECT_EQ(isa::Decode((*code)[1]).imm, 201u);
  EXPECT_EQ(isa::Decode((*code)[2]).imm, 300u);
  EXPECT_EQ(isa::Decode((*code)[3]).imm, 402u);
  EXPECT_FALSE(RelocateCode(program, {}, {200}, {300}, 400).ok());
}

// Parameter, output and constant of 2 lines each and 4 temp lines; an output written into its parameter
// takes no lines of its own, and an empty region still takes one.
TEST(ProgramTest, HbmLinesCountEveryRegionTheRuntimeAllocates) {
  Program program = SmallProgram();
  EXPECT_EQ(ProgramHbmLines(program), 2u + 2u + 2u + 4u);
  program.output_aliases = {0};
  EXPECT_EQ(ProgramHbmLines(program), 2u + 2u + 4u);
  program.output_aliases = {-1};
  program.temp_lines = 0;
  program.constants[0].lines = 0;
  EXPECT_EQ(ProgramHbmLines(program), 2u + 2u + 1u);
}

TEST(ProgramTest, SerializationRoundTrips) {
  Program program = SmallProgram();
  StatusOr<Program> loaded = DeserializeProgram(SerializeProgram(program));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->module_name, "small");
  EXPECT_EQ(loaded->code, program.code);
  EXPECT_EQ(loaded->relocations.size(), program.relocations.size());
  EXPECT_EQ(loaded->relocations[1].kind, RegionKind::kOutput);
  EXPECT_EQ(loaded->relocations[1].line_offset, 1u);
  EXPECT_EQ(loaded->parameters[0], program.parameters[0]);
  EXPECT_EQ(loaded->constant_bytes, program.constant_bytes);
  EXPECT_EQ(loaded->temp_lines, 4u);
  EXPECT_EQ(loaded->mxu_macs, 99u);
  ASSERT_EQ(loaded->code_ranges.size(), 2u);
  EXPECT_EQ(loaded->code_ranges[1].what, "copy a to output 0");
  EXPECT_EQ(loaded->code_ranges[1].begin, 2u);
  EXPECT_EQ(loaded->code_ranges[1].end, 4u);
}

// A program for four replicas in two rings: {0,1,2,3} and the pairs {1,0} {3,2}; LI immediates patched
// per device.
Program RingProgram() {
  Assembler a;
  const DeviceValue values[] = {DeviceValue::kReplicaId,     DeviceValue::kNextCore,      DeviceValue::kNextReceive,
                                DeviceValue::kWaitSemaphore, DeviceValue::kPostSemaphore, DeviceValue::kChunkFirstLine,
                                DeviceValue::kChunkLines,    DeviceValue::kWaitSemaphore};
  Program program = SmallProgram();
  program.code.pop_back();  // the HALT
  for (size_t i = 0; i < 8; ++i) {
    DevicePatch patch;
    patch.instr_index = static_cast<uint32_t>(program.code.size());
    patch.value = values[i];
    patch.ring = i == 7 ? 1 : 0;
    patch.step = 1;
    patch.chunk = 3;
    patch.lines = 10;  // chunks of 3, 3, 3, 1 lines
    patch.offset = i == 2 ? 7 : 20;
    program.device_patches.push_back(patch);
    program.code.push_back(isa::Encode(isa::Instr{static_cast<uint8_t>(isa::Opcode::LI), 1, 0, 0, 0, 0, 0}));
  }
  program.code.push_back(isa::Encode(isa::Instr{static_cast<uint8_t>(isa::Opcode::HALT), 0, 0, 0, 0, 0, 0}));
  program.replicas = 4;
  program.rings = {CollectiveRing{{{0, 1, 2, 3}}}, CollectiveRing{{{1, 0}, {3, 2}}}};
  program.receive_lines = 12;
  return program;
}

TEST(ProgramTest, DevicePatchesGiveEachDeviceItsPeersAndChunks) {
  const Program program = RingProgram();
  ASSERT_TRUE(ValidateProgram(program).ok()) << ValidateProgram(program);
  const DevicePlacement placement{0, {10, 11, 12, 13}, {1000, 2000, 3000, 4000}};
  auto imm = [&](uint32_t position, size_t patch) {
    DevicePlacement at = placement;
    at.position = position;
    std::vector<uint64_t> code = program.code;
    EXPECT_TRUE(PlaceOnDevice(program, at, &code).ok());
    return isa::Decode(code[program.device_patches[patch].instr_index]).imm;
  };
  EXPECT_EQ(imm(2, 0), 2u);                // replica id
  EXPECT_EQ(imm(1, 1), 12u);               // the next device's core
  EXPECT_EQ(imm(3, 1), 10u);               // the ring wraps
  EXPECT_EQ(imm(1, 2), 3007u);             // the next device's receive region + offset
  // Device 0 hears from 3 (ring 0) and from 1 (ring 1): a semaphore each, from HOST_SEMS on.
  EXPECT_EQ(imm(0, 3), csr::HOST_SEMS);
  EXPECT_EQ(imm(0, 7), csr::HOST_SEMS + 1);
  // Device 3 posts device 0's ring-0 semaphore; device 1 posts 2's (2 hears from 1 first).
  EXPECT_EQ(imm(3, 4), csr::HOST_SEMS);
  EXPECT_EQ(imm(1, 4), csr::HOST_SEMS);
  // Step 1 sends chunk (place - 1) mod 4: device 0 the last chunk (9..10), device 2 the second (3..6).
  EXPECT_EQ(imm(0, 5), 20u + 9u);
  EXPECT_EQ(imm(0, 6), 1u);
  EXPECT_EQ(imm(2, 5), 20u + 3u);
  EXPECT_EQ(imm(2, 6), 3u);

  // The placement must match the grid.
  std::vector<uint64_t> code = program.code;
  EXPECT_FALSE(PlaceOnDevice(program, DevicePlacement{4, {10, 11, 12, 13}, {1, 2, 3, 4}}, &code).ok());
  EXPECT_FALSE(PlaceOnDevice(program, DevicePlacement{0, {10, 11}, {1, 2}}, &code).ok());

  StatusOr<Program> loaded = DeserializeProgram(SerializeProgram(program));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->replicas, 4u);
  EXPECT_EQ(loaded->rings[1].groups, program.rings[1].groups);
  EXPECT_EQ(loaded->receive_lines, 12u);
  ASSERT_EQ(loaded->device_patches.size(), program.device_patches.size());
  EXPECT_EQ(loaded->device_patches[2].value, DeviceValue::kNextReceive);
  EXPECT_EQ(loaded->device_patches[2].offset, 7u);
  EXPECT_EQ(ProgramHbmLines(*loaded), ProgramHbmLines(SmallProgram()) + 12u);
}

// A collective-permute's chain 0 -> 1 -> 2 and device 3 alone: the ends send or receive nothing.
TEST(ProgramTest, OpenLinksSendAndReceiveNothing) {
  Program program = RingProgram();
  program.rings = {CollectiveRing{{{0, 1, 2}, {3}}, {2, 3}}};
  const DeviceValue values[] = {DeviceValue::kSendLines, DeviceValue::kReceiveLines, DeviceValue::kZeroLines,
                                DeviceValue::kWaitSemaphore};
  for (size_t i = 0; i < 4; ++i) {
    program.device_patches[i].value = values[i];
    program.device_patches[i].ring = 0;
    program.device_patches[i].lines = 5;
  }
  program.device_patches.resize(4);
  ASSERT_TRUE(ValidateProgram(program).ok()) << ValidateProgram(program);
  auto imm = [&](uint32_t position, size_t patch) {
    std::vector<uint64_t> code = program.code;
    EXPECT_TRUE(PlaceOnDevice(program, {position, {0, 1, 2, 3}, {0, 0, 0, 0}}, &code).ok());
    return isa::Decode(code[program.device_patches[patch].instr_index]).imm;
  };
  EXPECT_EQ(imm(0, 0), 5u);  // 0 sends, receives nothing and zeroes its result
  EXPECT_EQ(imm(0, 1), 0u);
  EXPECT_EQ(imm(0, 2), 5u);
  EXPECT_EQ(imm(2, 0), 0u);  // 2 receives and sends nothing
  EXPECT_EQ(imm(2, 1), 5u);
  EXPECT_EQ(imm(2, 2), 0u);
  EXPECT_EQ(imm(3, 0), 0u);  // 3 is alone
  EXPECT_EQ(imm(3, 1), 0u);
  EXPECT_EQ(imm(1, 3), csr::HOST_SEMS);  // 1 hears from 0 only
  StatusOr<Program> loaded = DeserializeProgram(SerializeProgram(program));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->rings[0].open, program.rings[0].open);
}

TEST(ProgramTest, RingsMustCoverTheGrid) {
  Program program = RingProgram();
  program.rings[1].groups = {{1, 0}, {3, 2}, {}};
  EXPECT_NE(ValidateProgram(program).message().find("an empty group"), std::string::npos);
  program.rings[1].groups = {{1, 0}, {3, 2}};
  program.rings[1].open = {3, 1};
  EXPECT_NE(ValidateProgram(program).message().find("open links out of order"), std::string::npos);
  program.rings[1].groups = {{1, 0}, {3, 3}};
  EXPECT_NE(ValidateProgram(program).message().find("names device 3 twice"), std::string::npos);
  program.rings[1].groups = {{1, 0}};
  EXPECT_NE(ValidateProgram(program).message().find("leaves devices of the grid out"), std::string::npos);
  program = RingProgram();
  program.device_patches[7].ring = 2;
  EXPECT_NE(ValidateProgram(program).message().find("names ring 2"), std::string::npos);
  // Five rings that give device 0 five different senders: more than its semaphores.
  program = RingProgram();
  program.replicas = 6;
  program.rings.clear();
  for (uint32_t before = 1; before <= 5; ++before) {
    std::vector<uint32_t> ring = {0};
    for (uint32_t d = 5; d >= 1; --d) {
      if (d != before) ring.push_back(d);
    }
    ring.push_back(before);
    program.rings.push_back(CollectiveRing{{ring}});
  }
  for (DevicePatch& patch : program.device_patches) patch.ring = 0;
  EXPECT_NE(ValidateProgram(program).message().find("posted by more than"), std::string::npos)
      << ValidateProgram(program);
}

TEST(ProgramTest, CodeRangesMustBeOrderedAndInsideTheCode) {
  Program program = SmallProgram();
  program.code_ranges = {CodeRange{"b", 2, 3}, CodeRange{"a", 0, 2}};
  EXPECT_NE(ValidateProgram(program).message().find("out of order"), std::string::npos);
  program.code_ranges = {CodeRange{"a", 0, 9}};
  EXPECT_NE(ValidateProgram(program).message().find("'a'"), std::string::npos);
}

TEST(ProgramTest, LoadRejectsBadFilesWithClearErrors) {
  std::vector<uint8_t> bytes = SerializeProgram(SmallProgram());
  std::vector<uint8_t> bad_magic = bytes;
  bad_magic[0] = 'X';
  EXPECT_NE(DeserializeProgram(bad_magic).status().message().find("bad magic"), std::string::npos);

  std::vector<uint8_t> bad_version = bytes;
  bad_version[8] = 77;
  EXPECT_NE(DeserializeProgram(bad_version).status().message().find("version 77"), std::string::npos);

  for (size_t cut : {size_t{9}, size_t{20}, bytes.size() / 2, bytes.size() - 1}) {
    std::vector<uint8_t> truncated(bytes.begin(), bytes.begin() + cut);
    Status status = DeserializeProgram(truncated).status();
    EXPECT_FALSE(status.ok()) << "cut at " << cut;
  }
  std::vector<uint8_t> trailing = bytes;
  trailing.push_back(0);
  EXPECT_NE(DeserializeProgram(trailing).status().message().find("trailing"), std::string::npos);

  // A huge count must be refused, not allocated.
  std::vector<uint8_t> huge = bytes;
  size_t code_count_at = 8 + 4 + 8 + std::string("small").size() + 4;
  huge[code_count_at + 7] = 0x7f;
  EXPECT_FALSE(DeserializeProgram(huge).ok());

  EXPECT_EQ(LoadProgram("/nonexistent/x.tpuprog").status().code(), StatusCode::kNotFound);
}

TEST(ProgramTest, SaveAndLoadFile) {
  Program program = SmallProgram();
  std::string path = testing::TempDir() + "/small.tpuprog";
  ASSERT_TRUE(SaveProgram(program, path).ok());
  StatusOr<Program> loaded = LoadProgram(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->code, program.code);
  std::remove(path.c_str());
}

TEST(ProgramTest, ValidateCatchesInconsistentPrograms) {
  Program program = SmallProgram();
  program.relocations[0].region_index = 5;
  EXPECT_FALSE(ValidateProgram(program).ok());
  program = SmallProgram();
  program.relocations[0].instr_index = 4;  // the HALT
  EXPECT_FALSE(ValidateProgram(program).ok());
  program = SmallProgram();
  program.code.pop_back();
  program.relocations.clear();
  EXPECT_FALSE(ValidateProgram(program).ok());
  program = SmallProgram();
  program.constant_bytes[0].pop_back();
  EXPECT_FALSE(ValidateProgram(program).ok());
}

}  // namespace
}  // namespace tpu::compiler
