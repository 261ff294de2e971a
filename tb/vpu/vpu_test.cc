// The vector unit in RTL against the reference model: random programs of vector instructions (every
// opcode, operand mode, INT/DIR/F32_TO_S32 flag, the transcendentals and VTRANS block counts) on the verilated chip and on
// the model from the same VMEM contents, compared byte for byte with the status CSRs; and the VMEM range
// errors of the new instructions.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "sim/model/chip_model.h"
#include "sim/model/disassembler.h"
#include "tb/core/chip_harness.h"
#include "tpu_config.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu::tb {
namespace {

using isa::Opcode;
namespace flag = isa::flag;

constexpr uint32_t kLanes = static_cast<uint32_t>(cfg::kLanes);
constexpr uint32_t kSlotLines = 2 * kLanes;  // regions start on slots: identical or disjoint, never overlapping
constexpr uint32_t kSlots = 6;
constexpr uint32_t kWindow = kSlots * kSlotLines;

// Lane values that exercise every rule: zeros of both signs, subnormals, infinities, NaNs, small and
// extreme s32 values, 0/1 masks, values around 1 and random bits.
uint32_t RandomWord(std::mt19937& rng) {
  static const uint32_t kSpecial[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x7F800000u,
                                      0xFF800000u, 0x7FC00000u, 0xFFFFFFFFu, 0x7F7FFFFFu, 0x00800000u,
                                      0x4F000000u, 0xCF000000u, 0x7FFFFFFFu, 0x00000002u, 0x3F800000u};
  switch (rng() % 7) {
    case 0: return kSpecial[rng() % (sizeof kSpecial / sizeof kSpecial[0])];
    case 1: return static_cast<uint32_t>(static_cast<int32_t>(rng() % 2001) - 1000);  // small s32
    case 2: return rng() % 2;
    case 3: return (rng() & 0x807FFFFFu) | ((100u + rng() % 56) << 23);               // moderate fp32
    case 4: return (rng() & 0x807FFFFFu) | ((120u + rng() % 14) << 23);               // |x| < 128: exp, log
    default: return rng();
  }
}

std::vector<uint32_t> RandomLine(std::mt19937& rng) {
  std::vector<uint32_t> line(kLanes);
  for (uint32_t& v : line) v = RandomWord(rng);
  return line;
}

const Opcode kOps[] = {Opcode::VADD, Opcode::VSUB, Opcode::VMUL, Opcode::VMAX,  Opcode::VMIN,
                       Opcode::VAND, Opcode::VOR,  Opcode::VXOR, Opcode::VCMP,  Opcode::VSEL,
                       Opcode::VSHL, Opcode::VSHRL, Opcode::VSHRA,
                       Opcode::VCVT, Opcode::VTRANS, Opcode::VSPLAT, Opcode::VEXP, Opcode::VLOG,
                       Opcode::VRSQRT, Opcode::VRCP};

// `count` random vector instructions (with the LIs that set their operands); only the first `keep` are
// emitted, so a failing program can be shortened to its first differing instruction.
Program RandomProgram(std::mt19937& rng, int count, int keep) {
  Program program;
  for (int k = 0; k < count; ++k) {
    const Opcode op = kOps[rng() % (sizeof kOps / sizeof kOps[0])];
    const uint32_t dst_slot = rng() % kSlots;
    uint32_t src1_slot = rng() % kSlots;
    uint32_t src2_slot = rng() % kSlots;
    uint8_t flags = 0;
    uint32_t n = rng() % (kSlotLines + 1);
    if (op == Opcode::VTRANS) {
      n = rng() % 3;                                               // blocks; never in place
      while (src1_slot == dst_slot) src1_slot = rng() % kSlots;
    } else if (op == Opcode::VCVT) {
      flags = rng() % 2;
    } else if (op == Opcode::VEXP || op == Opcode::VLOG || op == Opcode::VRSQRT || op == Opcode::VRCP) {
      flags = 0;
    } else if (op != Opcode::VSPLAT) {
      flags = static_cast<uint8_t>(rng() % 3 == 0 ? flag::VADD_SRC2_IMM : rng() % 3 == 0 ? flag::VADD_SRC2_BCAST : 0);
      if (rng() % 2) flags |= flag::VADD_INT;  // ignored by the ops without INT
      if (op == Opcode::VCMP) flags |= static_cast<uint8_t>((rng() % 8) << flag::VCMP_DIR_LSB);
    }
    // A broadcast line inside the destination range is undefined (read once per line, written on the way).
    while ((flags & flag::VADD_SRC2_BCAST) && src2_slot == dst_slot) src2_slot = rng() % kSlots;
    const uint32_t src2_offset = (rng() % 2) * (rng() % kSlotLines) * ((flags & flag::VADD_SRC2_BCAST) != 0);
    const bool shift = op == Opcode::VSHL || op == Opcode::VSHRL || op == Opcode::VSHRA;
    const uint32_t imm = shift && rng() % 4 != 0 ? rng() % 40 : RandomWord(rng);  // amounts past 31 too
    if (k >= keep) continue;
    if (shift && !(flags & flag::VADD_SRC2_IMM)) {
      // Amounts 0..63 in the source lines, so that most shifts keep some bits.
      program.Li(3, src2_slot * kSlotLines);
      program.Li(4, kSlotLines);
      program.Emit(Opcode::VAND, 3, 3, 0, 4, flag::VAND_SRC2_IMM, 63);
    }
    program.Li(1, dst_slot * kSlotLines);
    program.Li(2, src1_slot * kSlotLines);
    program.Li(3, src2_slot * kSlotLines + src2_offset);
    program.Li(4, n);
    program.Emit(op, 1, 2, 3, 4, flags, imm);
  }
  program.Halt();
  return program;
}

std::string LineText(const std::vector<uint32_t>& line) {
  std::string text;
  char buffer[16];
  for (uint32_t lane : line) {
    std::snprintf(buffer, sizeof buffer, "%08x ", lane);
    text += buffer;
  }
  return text;
}

// Runs `program` on both from the same VMEM window (drawn from `data_seed`); compares status CSRs and
// the window. With `report` false it only says whether they agree.
// `vpu_lines` (optional) receives the RTL's VPU_BUSY count, to check that the program really ran.
bool RunBoth(const Program& program, uint32_t data_seed, bool report = true, uint32_t* vpu_lines = nullptr) {
  std::mt19937 rng(data_seed);
  ChipHarness chip;
  model::ChipModel reference(model::ChipConfig::Build());
  for (uint32_t line = 0; line < kWindow; ++line) {
    const std::vector<uint32_t> data = RandomLine(rng);
    chip.WriteVmem(line, data);
    EXPECT_TRUE(reference.WriteVmem(line, data.data(), 1).ok());
  }
  for (uint32_t i = 0; i < program.size(); ++i) {
    reference.MmioWrite(csr::IMEM_WINDOW + 8 * i, static_cast<uint32_t>(program.words()[i]));
    reference.MmioWrite(csr::IMEM_WINDOW + 8 * i + 4, static_cast<uint32_t>(program.words()[i] >> 32));
  }
  reference.MmioWrite(csr::DOORBELL, 1);
  reference.Run(50000000);
  const bool finished = chip.RunProgram(program, 2000000);
  if (report) EXPECT_TRUE(finished);
  if (vpu_lines) *vpu_lines = chip.MmioRead(csr::VPU_BUSY);
  int mismatches = finished ? 0 : 1;
  for (uint32_t reg : {csr::STATUS, csr::ERROR_CODE, csr::ERROR_PC, csr::INSTRET, csr::VPU_BUSY}) {
    if (chip.MmioRead(reg) == reference.MmioRead(reg)) continue;
    ++mismatches;
    if (report) ADD_FAILURE() << "CSR 0x" << std::hex << reg << ": rtl " << chip.MmioRead(reg) << ", model " << reference.MmioRead(reg);
  }
  std::vector<uint32_t> want(kLanes);
  for (uint32_t line = 0; line < kWindow; ++line) {
    EXPECT_TRUE(reference.ReadVmem(line, want.data(), 1).ok());
    const std::vector<uint32_t> got = chip.ReadVmem(line);
    if (got == want) continue;
    if (report && ++mismatches <= 5) {
      ADD_FAILURE() << "VMEM line " << line << "\n  rtl:   " << LineText(got) << "\n  model: " << LineText(want);
    }
    mismatches += !report;
  }
  if (report && mismatches) ADD_FAILURE() << "program:\n" << model::DisassembleProgram(program.words());
  if (report) EXPECT_TRUE(chip.violations().empty());
  return mismatches == 0 && chip.violations().empty();
}

TEST(VpuDiff, RandomVectorPrograms) {
  constexpr int kInstructions = 40;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    if (RunBoth(RandomProgram(rng, kInstructions, kInstructions), seed, false)) continue;
    // Report the shortest failing prefix: its last instruction is the first that differs.
    for (int keep = 1; keep <= kInstructions; ++keep) {
      std::mt19937 again(seed);
      const Program prefix = RandomProgram(again, kInstructions, keep);
      if (!RunBoth(prefix, seed, false)) {
        RunBoth(prefix, seed, true);
        break;
      }
    }
    ADD_FAILURE() << "seed " << seed << " differs";
    break;
  }
}

// Every op once with a fixed large count, so each runs long enough to stream (back-to-back lines).
TEST(VpuDiff, EveryOpLongRuns) {
  Program program;
  for (Opcode op : kOps) {
    const bool trans = op == Opcode::VTRANS;
    program.Li(1, 0);
    program.Li(2, 2 * kSlotLines);
    program.Li(3, 4 * kSlotLines);
    program.Li(4, trans ? 2 : kSlotLines);
    const uint8_t flags = op == Opcode::VCMP ? static_cast<uint8_t>(3u << flag::VCMP_DIR_LSB) : 0;
    program.Emit(op, 1, 2, 3, 4, flags, 0x3F800000u);
    program.Li(1, kSlotLines);  // and once in place (dst = src1), except VTRANS
    program.Li(2, trans ? 3 * kSlotLines : kSlotLines);
    program.Emit(op, 1, 2, 3, 4, flag::VADD_SRC2_BCAST, 0);
  }
  program.Halt();
  uint32_t vpu_lines = 0;
  RunBoth(program, 99, true, &vpu_lines);
  // Every op twice over a slot (VTRANS: two blocks each time) ran to completion.
  EXPECT_EQ(vpu_lines, 2u * (sizeof kOps / sizeof kOps[0]) * kSlotLines);
}

TEST(VpuDiff, RangeErrors) {
  const uint32_t vmem = static_cast<uint32_t>(cfg::kVmemLines);
  struct Case {
    Opcode op;
    uint32_t base;  // s1: dst or src
    bool src;
  };
  const Case cases[] = {{Opcode::VTRANS, vmem - kLanes + 1, false}, {Opcode::VTRANS, vmem - kLanes + 1, true},
                        {Opcode::VTRANS, vmem - kLanes, false},     {Opcode::VCVT, vmem, true},
                        {Opcode::VSEL, vmem, false},                {Opcode::VMUL, vmem, true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(isa::FindOpcode(static_cast<uint8_t>(c.op))->name) + " base " + std::to_string(c.base));
    Program program;
    program.Li(1, c.base);
    program.Li(2, 0);
    program.Li(3, 1);
    program.Emit(c.op, c.src ? 2 : 1, c.src ? 1 : 2, 2, 3);
    program.Li(3, 0xFFFFFFFFu);  // a VTRANS block count whose line count wraps 32 bits
    program.Emit(Opcode::VTRANS, 2, 2, 0, 3);
    program.Halt();
    RunBoth(program, 5);
  }
}

}  // namespace
}  // namespace tpu::tb
