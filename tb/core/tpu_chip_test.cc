// Chip-level tests of the verilated tpu_chip: CSRs, IMEM, scalar programs, DMA, VPU, MXU, errors,
// soft reset and the host DMA engine. Arithmetic expectations come from tpu::numerics.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "sim/numerics/numerics.h"
#include "tb/core/chip_harness.h"
#include "tpu_config.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu::tb {
namespace {

using isa::Opcode;
namespace flag = isa::flag;

constexpr uint32_t kLanes = static_cast<uint32_t>(cfg::kLanes);
constexpr uint32_t kVmemLines = static_cast<uint32_t>(cfg::kVmemLines);
constexpr uint32_t kImemWords = static_cast<uint32_t>(cfg::kImemWords);
constexpr uint64_t kHbmLines = cfg::kHbmLines;

uint32_t ErrorCode(isa::Error error) { return static_cast<uint32_t>(error); }

// fp32 values across many binades, both signs, with a few zeros, denormals, infinities and NaNs.
uint32_t RandomF32(std::mt19937& rng) {
  const uint32_t kind = rng() % (4 * kLanes);  // specials rarer on wide lines: a dot product stays finite often
  const uint32_t sign = (rng() & 1u) << 31;
  if (kind == 0) return sign;                                  // zero
  if (kind == 1) return sign | (rng() & 0x007FFFFFu);          // denormal (read as zero)
  if (kind == 2) return sign | 0x7F800000u;                    // infinity
  if (kind == 3) return 0x7F800000u | 1u | (rng() & 0x7FFFFFu);  // NaN
  const uint32_t exponent = 112 + rng() % 32;                  // about 2^-15 .. 2^16
  return sign | (exponent << 23) | (rng() & 0x007FFFFFu);
}

std::vector<uint32_t> RandomLine(std::mt19937& rng) {
  std::vector<uint32_t> line(kLanes);
  for (uint32_t& lane : line) lane = RandomF32(rng);
  return line;
}

std::vector<uint32_t> RawLine(std::mt19937& rng) {
  std::vector<uint32_t> line(kLanes);
  for (uint32_t& lane : line) lane = static_cast<uint32_t>(rng());
  return line;
}

uint32_t Status(ChipHarness& chip) { return chip.MmioRead(csr::STATUS); }

// Expects the core stopped with `error` at `pc`, CORE_ERROR raised and the line high.
void ExpectCoreError(ChipHarness& chip, isa::Error error, uint32_t pc) {
  const uint32_t status = Status(chip);
  EXPECT_EQ(status & csr::STATUS_BUSY, 0u);
  EXPECT_NE(status & csr::STATUS_ERROR, 0u);
  EXPECT_EQ(status & csr::STATUS_HALTED, 0u);
  EXPECT_EQ(chip.MmioRead(csr::ERROR_CODE), ErrorCode(error)) << isa::ErrorName(chip.MmioRead(csr::ERROR_CODE));
  EXPECT_EQ(chip.MmioRead(csr::ERROR_PC), pc);
  EXPECT_NE(chip.MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_CORE_ERROR, 0u);
  EXPECT_TRUE(chip.irq());
}

void ExpectHalted(ChipHarness& chip) {
  const uint32_t status = Status(chip);
  EXPECT_EQ(status & (csr::STATUS_BUSY | csr::STATUS_ERROR), 0u) << "ERROR_CODE "
      << isa::ErrorName(chip.MmioRead(csr::ERROR_CODE)) << " at pc " << chip.MmioRead(csr::ERROR_PC);
  EXPECT_NE(status & csr::STATUS_HALTED, 0u);
}

TEST(TpuChip, IdAndConfigRegisters) {
  ChipHarness chip;
  EXPECT_EQ(chip.MmioRead(csr::ID), csr::ID_MAGIC);
  EXPECT_EQ(chip.MmioRead(csr::VERSION), csr::VERSION_VALUE);
  EXPECT_EQ(chip.MmioRead(csr::CFG_LANES), cfg::kLanes);
  EXPECT_EQ(chip.MmioRead(csr::CFG_VMEM_LINES), cfg::kVmemLines);
  EXPECT_EQ(chip.MmioRead(csr::CFG_IMEM_WORDS), cfg::kImemWords);
  EXPECT_EQ(chip.MmioRead(csr::CFG_HBM_LINES), cfg::kHbmLines);
  EXPECT_EQ(chip.MmioRead(csr::CFG_NUM_CORES), cfg::kNumCores);
  EXPECT_EQ(chip.MmioRead(csr::CFG_SREGS), cfg::kSregs);
  EXPECT_EQ(chip.MmioRead(csr::CFG_HBM_CHANNELS), cfg::kHbmChannels);
  EXPECT_EQ(chip.MmioRead(csr::STATUS), 0u);
  EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS), 0u);
  EXPECT_EQ(chip.MmioRead(csr::IRQ_ENABLE), 0x1Fu);
  EXPECT_EQ(chip.MmioRead(csr::WATCHDOG_LIMIT), 1000000u);
  EXPECT_FALSE(chip.irq());
  // Read/write registers hold what was written; read-only ones ignore writes.
  chip.MmioWrite(csr::START_PC, 0x123);
  EXPECT_EQ(chip.MmioRead(csr::START_PC), 0x123u);
  chip.MmioWrite(csr::HDMA_HOST_HI, 0xABCD);
  EXPECT_EQ(chip.MmioRead(csr::HDMA_HOST_HI), 0xABCDu);
  chip.MmioWrite(csr::ID, 0);
  EXPECT_EQ(chip.MmioRead(csr::ID), csr::ID_MAGIC);
  EXPECT_EQ(chip.MmioRead(0x3FC), 0u);  // unmapped
  EXPECT_TRUE(chip.violations().empty());
}

TEST(TpuChip, ImemLoadAndReadback) {
  ChipHarness chip;
  std::mt19937_64 rng(7);
  std::vector<uint64_t> words(64);
  for (uint64_t& word : words) word = rng();
  chip.LoadProgram(words, 0);
  chip.LoadProgram({0x1122334455667788ull}, kImemWords - 1);
  for (size_t i = 0; i < words.size(); ++i) EXPECT_EQ(chip.ReadImemWord(i), words[i]) << "word " << i;
  EXPECT_EQ(chip.ReadImemWord(kImemWords - 1), 0x1122334455667788ull);

  // A write while the core runs is dropped: start a long loop, try to overwrite word 0.
  Program loop;
  loop.Li(1, 100000);
  const uint32_t top = loop.Addi(1, 1, static_cast<uint32_t>(-1));
  loop.Bne(1, 0, top);
  loop.Halt();
  chip.LoadProgram(loop.words());
  chip.MmioWrite(csr::DOORBELL, 1);
  ASSERT_NE(Status(chip) & csr::STATUS_BUSY, 0u);
  chip.MmioWrite(csr::IMEM_WINDOW, 0xDEADBEEF);
  EXPECT_EQ(chip.ReadImemWord(0), loop.words()[0]);
  chip.MmioWrite(csr::SOFT_RESET, 1);
  EXPECT_EQ(Status(chip) & csr::STATUS_BUSY, 0u);
}

TEST(TpuChip, MmioOutsideTheMapIsHarmless) {
  ChipHarness chip;
  chip.LoadProgram({0x0102030405060708ull}, 0);
  const uint32_t beyond = csr::IMEM_WINDOW + 8 * kImemWords;  // first byte after the window
  chip.MmioWrite(beyond, 0xFFFFFFFF);
  chip.MmioWrite(beyond + 4, 0xFFFFFFFF);
  EXPECT_EQ(chip.MmioRead(beyond), 0u);
  EXPECT_EQ(chip.ReadImemWord(0), 0x0102030405060708ull);  // no wrap-around into word 0
  // Writes to read-only and unmapped CSRs change nothing that can be read back.
  const std::vector<uint32_t> before = {chip.MmioRead(csr::STATUS), chip.MmioRead(csr::IRQ_STATUS),
                                        chip.MmioRead(csr::CFG_LANES), chip.MmioRead(csr::CYCLES_LO)};
  for (uint32_t offset : {csr::STATUS, csr::CFG_LANES, csr::CYCLES_LO, csr::HDMA_STATUS, 0x100u, 0x7FFFCu}) {
    chip.MmioWrite(offset, 0xFFFFFFFF);
  }
  const std::vector<uint32_t> after = {chip.MmioRead(csr::STATUS), chip.MmioRead(csr::IRQ_STATUS),
                                       chip.MmioRead(csr::CFG_LANES), chip.MmioRead(csr::CYCLES_LO)};
  EXPECT_EQ(before, after);
  EXPECT_TRUE(chip.violations().empty());
}

TEST(TpuChip, ScalarOpsAndCountedLoop) {
  ChipHarness chip;
  Program p;
  p.Li(1, 7);
  p.Li(2, 0xFFFFFFFDu);          // -3
  p.Add(3, 1, 2);                // 4
  p.Sub(4, 2, 1);                // -10
  p.Mul(5, 1, 2);                // -21
  p.Addi(6, 1, 0xFFFFFFFFu);     // 6 (wraps)
  p.Li(0, 55);                   // s0 stays 0
  p.Mul(7, 1, 1);
  p.Mul(7, 7, 7);
  p.Mul(7, 7, 7);                // 7^8 mod 2^32
  // Counted loop: s8 = sum of 1..10 (BNE back edge), s9 = iterations.
  p.Li(10, 10);
  p.Li(8, 0);
  p.Li(9, 0);
  const uint32_t loop = p.Addi(9, 9, 1);
  p.Add(8, 8, 9);
  p.Bne(9, 10, loop);
  // BLT is signed: -3 < 7 taken, so s11 stays 0.
  const uint32_t blt = p.Blt(2, 1, 0);
  p.Li(11, 1);
  p.PatchImm(blt, p.size());
  // BEQ not taken, JMP skips one instruction.
  p.Beq(1, 2, 0);
  p.Li(12, 1);
  const uint32_t jmp = p.Jmp(0);
  p.Li(12, 2);
  p.PatchImm(jmp, p.size());
  p.Halt();

  ASSERT_TRUE(chip.RunProgram(p, 10000));
  ExpectHalted(chip);
  EXPECT_EQ(chip.ReadSreg(0), 0u);
  EXPECT_EQ(chip.ReadSreg(3), 4u);
  EXPECT_EQ(chip.ReadSreg(4), static_cast<uint32_t>(-10));
  EXPECT_EQ(chip.ReadSreg(5), static_cast<uint32_t>(-21));
  EXPECT_EQ(chip.ReadSreg(6), 6u);
  EXPECT_EQ(chip.ReadSreg(7), static_cast<uint32_t>(5764801u));
  EXPECT_EQ(chip.ReadSreg(8), 55u);
  EXPECT_EQ(chip.ReadSreg(9), 10u);
  EXPECT_EQ(chip.ReadSreg(11), 0u);
  EXPECT_EQ(chip.ReadSreg(12), 1u);
  // 13 straight-line + 3 * 10 loop + BLT + BEQ + LI + JMP + HALT.
  EXPECT_EQ(chip.MmioRead(csr::INSTRET), 13u + 30u + 5u);
  EXPECT_GE(chip.MmioRead(csr::CYCLES_LO), 13u + 30u + 5u);
  EXPECT_EQ(chip.MmioRead(csr::CYCLES_HI), 0u);
  EXPECT_NE(chip.MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_CORE_DONE, 0u);
}

TEST(TpuChip, HaltRaisesCoreDoneAndIrqFollowsEnable) {
  ChipHarness chip;
  Program p;
  p.Halt();
  chip.MmioWrite(csr::IRQ_ENABLE, 0);
  ASSERT_TRUE(chip.RunProgram(p, 1000));
  EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS), csr::IRQ_STATUS_CORE_DONE);
  EXPECT_FALSE(chip.irq());
  chip.MmioWrite(csr::IRQ_ENABLE, csr::IRQ_STATUS_CORE_DONE);
  EXPECT_TRUE(chip.irq());
  chip.MmioWrite(csr::IRQ_STATUS, csr::IRQ_STATUS_CORE_DONE);  // write one to clear
  EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS), 0u);
  EXPECT_FALSE(chip.irq());
  // The doorbell clears HALTED; the next HALT sets it and the interrupt again.
  chip.MmioWrite(csr::DOORBELL, 1);
  EXPECT_TRUE(chip.WaitIrq(1000));
  ExpectHalted(chip);
}

TEST(TpuChip, DmaRoundTripWithStrides) {
  for (const double ready : {1.0, 0.6}) {
    HarnessOptions options;
    options.hbm_ready_probability = ready;
    options.seed = 3;
    ChipHarness chip(options);
    std::mt19937 rng(11);
    const uint32_t count = 100, load_stride = 3, store_stride = 5;
    const uint64_t src = 4096, dst = 200000;
    const uint32_t vbase = 1000;
    std::vector<std::vector<uint32_t>> source;
    for (uint32_t i = 0; i < count * load_stride; ++i) {
      source.push_back(RawLine(rng));
      chip.WriteHbm(src + i, source.back());
    }
    Program p;
    p.Li(1, src);
    p.Li(2, vbase);
    p.Li(3, count);
    p.Li(4, dst);
    p.DmaLd(1, 2, 3, load_stride);
    p.Sync(flag::SYNC_DMA);
    p.DmaSt(4, 2, 3, store_stride);
    p.Halt();
    ASSERT_TRUE(chip.RunProgram(p, 100000));
    ExpectHalted(chip);
    for (uint32_t i = 0; i < count; ++i) {
      ASSERT_EQ(chip.ReadVmem(vbase + i), source[i * load_stride]) << "VMEM line " << vbase + i;
      ASSERT_EQ(chip.ReadHbm(dst + uint64_t(i) * store_stride), source[i * load_stride]) << "HBM line " << i;
      if (i + 1 < count) {
        ASSERT_EQ(chip.ReadHbm(dst + uint64_t(i) * store_stride + 1), std::vector<uint32_t>(kLanes, 0));
      }
    }
    EXPECT_EQ(chip.MmioRead(csr::DMA_LINES), 2 * count);
    EXPECT_TRUE(chip.violations().empty());
  }
}

TEST(TpuChip, DmaStrideZeroAndCountZero) {
  ChipHarness chip;
  std::mt19937 rng(5);
  const std::vector<uint32_t> line = RawLine(rng);
  chip.WriteHbm(77, line);
  Program p;
  p.Li(1, 77);
  p.Li(2, 10);
  p.Li(3, 4);
  p.DmaLd(1, 2, 3, 0);  // stride 0: the same HBM line four times
  p.Li(5, kVmemLines + 5);
  p.DmaLd(1, 5, 0, 1);  // count 0 (s0): nothing, and no range error
  p.Halt();
  ASSERT_TRUE(chip.RunProgram(p, 10000));
  ExpectHalted(chip);
  for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(chip.ReadVmem(10 + i), line);
}

// VADD/VMAX with every operand form, and VSPLAT, against tpu::numerics lane by lane.
TEST(TpuChip, VectorOps) {
  ChipHarness chip;
  std::mt19937 rng(21);
  const uint32_t count = 40, a = 100, b = 200, out = 300;
  std::vector<std::vector<uint32_t>> lines_a, lines_b;
  for (uint32_t i = 0; i < count; ++i) {
    lines_a.push_back(RandomLine(rng));
    lines_b.push_back(RandomLine(rng));
    chip.WriteVmem(a + i, lines_a.back());
    chip.WriteVmem(b + i, lines_b.back());
  }
  const uint32_t imm = 0x3FC00000u;  // 1.5
  struct Case {
    Opcode op;
    uint8_t flags;
    uint32_t dst;
  };
  const std::vector<Case> cases = {
      {Opcode::VADD, 0, out},
      {Opcode::VADD, flag::VADD_SRC2_BCAST, out + count},
      {Opcode::VADD, flag::VADD_SRC2_IMM, out + 2 * count},
      {Opcode::VMAX, 0, out + 3 * count},
      {Opcode::VMAX, flag::VMAX_SRC2_BCAST, out + 4 * count},
      {Opcode::VMAX, flag::VMAX_SRC2_IMM, out + 5 * count},
  };
  Program p;
  p.Li(1, a);
  p.Li(2, b);
  p.Li(3, count);
  for (const Case& c : cases) {
    p.Li(4, c.dst);
    p.Emit(c.op, 4, 1, 2, 3, c.flags, imm);
  }
  p.Li(4, out + 6 * count);
  p.Vsplat(4, 3, 0xC0490FDBu);
  // In place: s[rd] == s[rs1].
  p.Vadd(1, 1, 2, 3);
  p.Halt();
  ASSERT_TRUE(chip.RunProgram(p, 100000));
  ExpectHalted(chip);

  for (size_t c = 0; c < cases.size(); ++c) {
    for (uint32_t i = 0; i < count; ++i) {
      const std::vector<uint32_t> got = chip.ReadVmem(cases[c].dst + i);
      for (uint32_t l = 0; l < kLanes; ++l) {
        const uint32_t x = lines_a[i][l];
        uint32_t y = lines_b[i][l];
        if (cases[c].flags & flag::VADD_SRC2_BCAST) y = lines_b[0][l];
        if (cases[c].flags & flag::VADD_SRC2_IMM) y = imm;
        const uint32_t want = cases[c].op == Opcode::VADD ? numerics::F32Add(x, y) : numerics::F32Max(x, y);
        ASSERT_EQ(got[l], want) << "case " << c << " line " << i << " lane " << l << ": "
                                << numerics::F32ToString(x) << " op " << numerics::F32ToString(y);
      }
    }
  }
  for (uint32_t i = 0; i < count; ++i) {
    EXPECT_EQ(chip.ReadVmem(out + 6 * count + i), std::vector<uint32_t>(kLanes, 0xC0490FDBu));
    const std::vector<uint32_t> in_place = chip.ReadVmem(a + i);
    for (uint32_t l = 0; l < kLanes; ++l) {
      ASSERT_EQ(in_place[l], numerics::F32Add(lines_a[i][l], lines_b[i][l])) << "in place line " << i;
    }
  }
  EXPECT_EQ(chip.MmioRead(csr::VPU_BUSY), 8 * count);
}

// The ISA's matvec, built from the numerics primitives.
std::vector<uint32_t> MatVec(const std::vector<uint32_t>& row, const std::vector<std::vector<uint16_t>>& w) {
  std::vector<uint32_t> result(kLanes);
  for (uint32_t n = 0; n < kLanes; ++n) {
    uint32_t acc = 0;
    for (uint32_t k = 0; k < kLanes; ++k) {
      acc = numerics::F32Add(acc, numerics::Bf16Mul(numerics::F32ToBf16(row[k]), w[k][n]));
    }
    result[n] = acc;
  }
  return result;
}

TEST(TpuChip, MxuLoadWeightsAndMatmulThroughTheCore) {
  ChipHarness chip;
  std::mt19937 rng(31);
  const uint32_t rows = 50, w1 = 0, w2 = kLanes, lhs = 2 * kLanes, out = lhs + rows, acc_out = out + rows;
  std::vector<std::vector<uint32_t>> weights1, weights2, lhs_lines, acc_init;
  for (uint32_t k = 0; k < kLanes; ++k) {
    weights1.push_back(RandomLine(rng));
    weights2.push_back(RandomLine(rng));
    chip.WriteVmem(w1 + k, weights1.back());
    chip.WriteVmem(w2 + k, weights2.back());
  }
  for (uint32_t i = 0; i < rows; ++i) {
    lhs_lines.push_back(RandomLine(rng));
    acc_init.push_back(RandomLine(rng));
    chip.WriteVmem(lhs + i, lhs_lines.back());
    chip.WriteVmem(acc_out + i, acc_init.back());
  }
  // W1 plain, W2 transposed.
  std::vector<std::vector<uint16_t>> front1(kLanes, std::vector<uint16_t>(kLanes));
  std::vector<std::vector<uint16_t>> front2(kLanes, std::vector<uint16_t>(kLanes));
  for (uint32_t k = 0; k < kLanes; ++k) {
    for (uint32_t n = 0; n < kLanes; ++n) {
      front1[k][n] = numerics::F32ToBf16(weights1[k][n]);
      front2[k][n] = numerics::F32ToBf16(weights2[n][k]);
    }
  }
  Program p;
  p.Li(1, w1);
  p.Li(2, w2);
  p.Li(3, lhs);
  p.Li(4, out);
  p.Li(5, rows);
  p.Li(6, acc_out);
  p.MxuLw(1);
  p.MxuMm(3, 4, 5, flag::MXU_MM_SWAP);                      // out = lhs x W1
  p.MxuLw(2, flag::MXU_LW_TRANSPOSE);
  p.MxuMm(3, 6, 5, flag::MXU_MM_SWAP | flag::MXU_MM_ACC);  // acc_out += lhs x W2^T
  p.Halt();
  ASSERT_TRUE(chip.RunProgram(p, 100000));
  ExpectHalted(chip);
  for (uint32_t i = 0; i < rows; ++i) {
    ASSERT_EQ(chip.ReadVmem(out + i), MatVec(lhs_lines[i], front1)) << "row " << i;
    const std::vector<uint32_t> product = MatVec(lhs_lines[i], front2);
    const std::vector<uint32_t> got = chip.ReadVmem(acc_out + i);
    for (uint32_t n = 0; n < kLanes; ++n) {
      ASSERT_EQ(got[n], numerics::F32Add(acc_init[i][n], product[n])) << "acc row " << i << " lane " << n;
    }
  }
  EXPECT_EQ(chip.MmioRead(csr::MXU_BUSY_LO), 2 * rows);
}

TEST(TpuChip, IllegalOpcodeStopsWithError) {
  ChipHarness chip;
  Program p;
  p.Li(1, 5);
  p.Nop();
  p.Raw(uint64_t{0xFF} << 56);
  p.Halt();
  ASSERT_TRUE(chip.RunProgram(p, 1000));
  ExpectCoreError(chip, isa::Error::ILLEGAL_INSTR, 2);
  // Every value that is not an opcode is illegal.
  for (uint32_t op = 0; op < 256; ++op) {
    if (isa::FindOpcode(static_cast<uint8_t>(op)) != nullptr) continue;
    chip.LoadProgram({uint64_t{op} << 56});
    chip.MmioWrite(csr::DOORBELL, 1);
    ASSERT_TRUE(chip.WaitIdle(1000));
    ASSERT_EQ(chip.MmioRead(csr::ERROR_CODE), ErrorCode(isa::Error::ILLEGAL_INSTR)) << "opcode " << op;
  }
}

TEST(TpuChip, BadHbmAddressWritesNothing) {
  ChipHarness chip;
  std::mt19937 rng(2);
  chip.WriteVmem(0, RawLine(rng));
  Program p;
  p.Li(1, 10);
  p.Li(2, 0);
  p.Li(3, 3);
  p.Li(4, 0);
  p.DmaSt(1, 4, 3, 0x80000000u);  // lines 10, 10 + 2^31, 10 + 2^32 (64-bit): beyond HBM
  p.Halt();
  ASSERT_TRUE(chip.RunProgram(p, 1000));
  ExpectCoreError(chip, isa::Error::BAD_HBM_ADDR, 4);
  EXPECT_EQ(chip.ReadHbm(10), std::vector<uint32_t>(kLanes, 0));
  EXPECT_EQ(chip.hbm_requests(), 0u);

  // The last line exactly at HBM_LINES fails, one below passes.
  Program edge;
  edge.Li(1, static_cast<uint32_t>(kHbmLines - 2));
  edge.Li(3, 2);
  edge.DmaLd(1, 0, 3, 1);
  edge.Sync();
  edge.Li(1, static_cast<uint32_t>(kHbmLines - 1));
  edge.DmaLd(1, 0, 3, 1);
  edge.Halt();
  ASSERT_TRUE(chip.RunProgram(edge, 1000));
  ExpectCoreError(chip, isa::Error::BAD_HBM_ADDR, 5);
  EXPECT_TRUE(chip.violations().empty());
}

TEST(TpuChip, BadVmemAddress) {
  ChipHarness chip;
  struct Case {
    Program program;
    uint32_t pc;
  };
  std::vector<Case> cases;
  {
    Program p;  // VADD destination runs past the end
    p.Li(1, kVmemLines - 4);
    p.Li(3, 5);
    p.Vadd(1, 0, 0, 3);
    cases.push_back({p, 2});
  }
  {
    Program p;  // MXU_LW needs LANES lines
    p.Li(1, kVmemLines - kLanes + 1);
    p.MxuLw(1);
    cases.push_back({p, 1});
  }
  {
    Program p;  // DMA VMEM side
    p.Li(2, kVmemLines);
    p.Li(3, 1);
    p.DmaLd(0, 2, 3, 1);
    cases.push_back({p, 2});
  }
  {
    Program p;  // broadcast operand itself out of range
    p.Li(2, kVmemLines);
    p.Li(3, 1);
    p.Vmax(0, 0, 2, 3, flag::VMAX_SRC2_BCAST);
    cases.push_back({p, 2});
  }
  {
    Program p;  // MXU_MM destination
    p.Li(2, kVmemLines - 1);
    p.Li(3, 2);
    p.MxuMm(0, 2, 3);
    cases.push_back({p, 2});
  }
  for (Case& c : cases) {
    c.program.Halt();
    chip.MmioWrite(csr::IRQ_STATUS, 0xF);
    ASSERT_TRUE(chip.RunProgram(c.program, 1000));
    ExpectCoreError(chip, isa::Error::BAD_VMEM_ADDR, c.pc);
  }
}

TEST(TpuChip, BadPc) {
  ChipHarness chip;
  Program p;
  p.Jmp(kImemWords + 3);
  ASSERT_TRUE(chip.RunProgram(p, 1000));
  ExpectCoreError(chip, isa::Error::BAD_PC, kImemWords + 3);
  // Running off the end of IMEM.
  chip.LoadProgram({isa::Encode(isa::Instr{})}, kImemWords - 1);  // a NOP in the last word
  chip.MmioWrite(csr::START_PC, kImemWords - 1);
  chip.MmioWrite(csr::DOORBELL, 1);
  ASSERT_TRUE(chip.WaitIdle(1000));
  ExpectCoreError(chip, isa::Error::BAD_PC, kImemWords);
}

TEST(TpuChip, WatchdogStopsAStalledCore) {
  ChipHarness chip;
  chip.MmioWrite(csr::WATCHDOG_LIMIT, 20);
  Program p;
  p.Li(1, 0);
  p.Li(2, 0);
  p.Li(3, 500);
  p.DmaLd(1, 2, 3, 1);
  p.Sync();  // waits far longer than 20 cycles
  p.Halt();
  ASSERT_TRUE(chip.RunProgram(p, 5000));
  ExpectCoreError(chip, isa::Error::WATCHDOG, 4);
  EXPECT_LT(chip.MmioRead(csr::CYCLES_LO), 100u);
  // The aborted DMA drains; a new run works.
  Program ok;
  ok.Halt();
  chip.MmioWrite(csr::WATCHDOG_LIMIT, 0);  // disabled
  ASSERT_TRUE(chip.RunProgram(ok, 5000));
  ExpectHalted(chip);
  EXPECT_TRUE(chip.violations().empty());
}

TEST(TpuChip, SoftResetRecoversAfterErrorAndMidRun) {
  ChipHarness chip;
  Program bad;
  bad.Raw(uint64_t{0xEE} << 56);
  ASSERT_TRUE(chip.RunProgram(bad, 1000));
  ASSERT_NE(Status(chip) & csr::STATUS_ERROR, 0u);
  chip.MmioWrite(csr::SOFT_RESET, 1);
  EXPECT_EQ(Status(chip), 0u);
  EXPECT_EQ(chip.MmioRead(csr::ERROR_CODE), 0u);
  EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS), 0u);
  EXPECT_FALSE(chip.irq());

  // Abort a run in the middle of a long DMA and a host DMA; memories keep their contents.
  std::mt19937 rng(9);
  const std::vector<uint32_t> marker = RawLine(rng);
  chip.WriteVmem(5000, marker);
  Program busy;
  busy.Li(3, 4000);
  busy.DmaLd(0, 0, 3, 1);
  const uint32_t spin = busy.Jmp(0);
  busy.PatchImm(spin, spin);
  chip.LoadProgram(busy.words());
  chip.MmioWrite(csr::DOORBELL, 1);
  chip.MmioWrite(csr::HDMA_HOST_LO, 0);
  chip.MmioWrite(csr::HDMA_HBM_LINE, 100000);
  chip.MmioWrite(csr::HDMA_LINES, 3000);
  chip.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START);
  chip.Tick(200);
  ASSERT_EQ(Status(chip) & (csr::STATUS_BUSY | csr::STATUS_HDMA_BUSY), csr::STATUS_BUSY | csr::STATUS_HDMA_BUSY);
  chip.MmioWrite(csr::SOFT_RESET, 1);
  EXPECT_EQ(Status(chip) & (csr::STATUS_BUSY | csr::STATUS_HALTED | csr::STATUS_ERROR), 0u);
  ASSERT_TRUE(chip.WaitIdle(1000));  // the host DMA drains its outstanding responses
  EXPECT_EQ(chip.MmioRead(csr::HDMA_STATUS), 0u);
  EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS), 0u);
  EXPECT_EQ(chip.ReadVmem(5000), marker);
  EXPECT_EQ(chip.ReadImemWord(0), busy.words()[0]);

  // A full program runs normally afterwards.
  std::vector<uint32_t> line = RawLine(rng);
  chip.WriteHbm(9, line);
  Program good;
  good.Li(1, 9);
  good.Li(2, 6000);
  good.Li(3, 1);
  good.DmaLd(1, 2, 3, 1);
  good.Halt();
  ASSERT_TRUE(chip.RunProgram(good, 10000));
  ExpectHalted(chip);
  EXPECT_EQ(chip.ReadVmem(6000), line);
  EXPECT_TRUE(chip.violations().empty());
}

void StartHostDma(ChipHarness& chip, uint64_t host, uint32_t hbm_line, uint32_t lines, bool to_host) {
  chip.MmioWrite(csr::HDMA_HOST_LO, static_cast<uint32_t>(host));
  chip.MmioWrite(csr::HDMA_HOST_HI, static_cast<uint32_t>(host >> 32));
  chip.MmioWrite(csr::HDMA_HBM_LINE, hbm_line);
  chip.MmioWrite(csr::HDMA_LINES, lines);
  chip.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START | (to_host ? csr::HDMA_CTRL_TO_HOST : 0));
}

uint32_t HdmaCode(uint32_t status) { return (status & csr::HDMA_STATUS_CODE) >> csr::HDMA_STATUS_CODE_LSB; }

TEST(TpuChip, HostDmaBothDirections) {
  for (const double ready : {1.0, 0.5}) {
    HarnessOptions options;
    options.hbm_ready_probability = ready;
    options.host_ready_probability = ready;
    ChipHarness chip(options);
    std::mt19937 rng(77);
    const uint32_t lines = 300;
    const uint64_t bytes = uint64_t(lines) * chip.line_bytes();
    std::vector<uint8_t> data(bytes);
    for (uint8_t& byte : data) byte = static_cast<uint8_t>(rng());
    chip.HostWrite(0x10000, data.data(), bytes);

    StartHostDma(chip, 0x10000, 5000, lines, false);
    ASSERT_TRUE(chip.WaitIdle(100000));
    EXPECT_EQ(chip.MmioRead(csr::HDMA_STATUS), 0u);
    EXPECT_NE(chip.MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_HDMA_DONE, 0u);
    for (uint32_t i = 0; i < lines; ++i) {
      std::vector<uint32_t> want(kLanes);
      std::memcpy(want.data(), data.data() + uint64_t(i) * chip.line_bytes(), chip.line_bytes());
      ASSERT_EQ(chip.ReadHbm(5000 + i), want) << "line " << i;
    }
    chip.MmioWrite(csr::IRQ_STATUS, 0xF);

    StartHostDma(chip, 0x800000, 5000, lines, true);
    ASSERT_TRUE(chip.WaitIdle(100000));
    EXPECT_EQ(chip.MmioRead(csr::HDMA_STATUS), 0u);
    std::vector<uint8_t> back(bytes);
    chip.HostRead(0x800000, back.data(), bytes);
    EXPECT_EQ(back, data);
    EXPECT_TRUE(chip.irq());
    EXPECT_TRUE(chip.violations().empty());
  }
}

TEST(TpuChip, DoorbellAndHostDmaStartAreIgnoredWhileBusy) {
  ChipHarness chip;
  Program p;
  p.Li(1, 50000);
  const uint32_t top = p.Addi(1, 1, static_cast<uint32_t>(-1));
  p.Bne(1, 0, top);
  const uint32_t halt = p.Halt();
  chip.LoadProgram(p.words());
  chip.MmioWrite(csr::DOORBELL, 1);
  chip.MmioWrite(csr::START_PC, halt);
  chip.MmioWrite(csr::DOORBELL, 1);  // ignored: the loop keeps running
  chip.Tick(100);
  EXPECT_EQ(Status(chip) & (csr::STATUS_BUSY | csr::STATUS_HALTED), csr::STATUS_BUSY);

  std::vector<uint8_t> data(uint64_t(600) * chip.line_bytes());
  std::mt19937 rng(8);
  for (uint8_t& byte : data) byte = static_cast<uint8_t>(rng());
  chip.HostWrite(0, data.data(), data.size());
  StartHostDma(chip, 0, 1000, 600, false);
  StartHostDma(chip, 0, 9000, 1, false);  // ignored while the first transfer runs
  ASSERT_TRUE(chip.WaitIdle(300000));
  EXPECT_EQ(chip.ReadHbm(9000), std::vector<uint32_t>(kLanes, 0));
  std::vector<uint32_t> last(kLanes);
  std::memcpy(last.data(), data.data() + uint64_t(599) * chip.line_bytes(), chip.line_bytes());
  EXPECT_EQ(chip.ReadHbm(1000 + 599), last);
  EXPECT_EQ(chip.MmioRead(csr::INSTRET), 1u + 2u * 50000u + 1u);  // the run was never restarted
  EXPECT_TRUE(chip.violations().empty());
}

TEST(TpuChip, HostDmaErrors) {
  ChipHarness chip;
  // Misaligned host address.
  StartHostDma(chip, 4, 0, 1, false);
  ASSERT_TRUE(chip.WaitIdle(1000));
  uint32_t status = chip.MmioRead(csr::HDMA_STATUS);
  EXPECT_NE(status & csr::HDMA_STATUS_ERROR, 0u);
  EXPECT_EQ(HdmaCode(status), ErrorCode(isa::Error::BAD_HOST_ADDR));
  EXPECT_NE(chip.MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_HDMA_ERROR, 0u);
  EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS) & csr::IRQ_STATUS_CORE_ERROR, 0u);

  // HBM range: hbm_line + lines > HBM_LINES; exactly equal is fine.
  chip.MmioWrite(csr::IRQ_STATUS, 0xF);
  StartHostDma(chip, 0, static_cast<uint32_t>(kHbmLines - 2), 3, true);
  ASSERT_TRUE(chip.WaitIdle(1000));
  status = chip.MmioRead(csr::HDMA_STATUS);
  EXPECT_EQ(HdmaCode(status), ErrorCode(isa::Error::BAD_HBM_ADDR));
  EXPECT_EQ(chip.hbm_requests(), 0u);
  StartHostDma(chip, 0, static_cast<uint32_t>(kHbmLines - 2), 2, true);
  ASSERT_TRUE(chip.WaitIdle(1000));
  EXPECT_EQ(chip.MmioRead(csr::HDMA_STATUS), 0u);

  // A bus error in the middle stops the transfer.
  chip.MmioWrite(csr::IRQ_STATUS, 0xF);
  const uint64_t error_at = 64 * chip.line_bytes();
  chip.SetHostBusErrorRange(error_at, error_at + chip.line_bytes());
  StartHostDma(chip, 0, 0, 200, false);
  ASSERT_TRUE(chip.WaitIdle(10000));
  status = chip.MmioRead(csr::HDMA_STATUS);
  EXPECT_NE(status & csr::HDMA_STATUS_ERROR, 0u);
  EXPECT_EQ(HdmaCode(status), ErrorCode(isa::Error::HOST_BUS_ERROR));
  EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS) & (csr::IRQ_STATUS_HDMA_ERROR | csr::IRQ_STATUS_HDMA_DONE),
            csr::IRQ_STATUS_HDMA_ERROR);
  // Same in the other direction (an error answer to a host write).
  StartHostDma(chip, 0, 0, 200, true);
  ASSERT_TRUE(chip.WaitIdle(10000));
  EXPECT_EQ(HdmaCode(chip.MmioRead(csr::HDMA_STATUS)), ErrorCode(isa::Error::HOST_BUS_ERROR));
  // Recovers: the next good transfer completes and clears the status.
  chip.SetHostBusErrorRange(0, 0);
  StartHostDma(chip, 0, 0, 10, true);
  ASSERT_TRUE(chip.WaitIdle(10000));
  EXPECT_EQ(chip.MmioRead(csr::HDMA_STATUS), 0u);
  EXPECT_TRUE(chip.violations().empty());
}

// The core's DMA and the host DMA engine share the HBM port; both must see all their data.
TEST(TpuChip, CoreAndHostDmaShareHbm) {
  HarnessOptions options;
  options.hbm_ready_probability = 0.7;
  ChipHarness chip(options);
  std::mt19937 rng(123);
  const uint32_t lines = 400;
  std::vector<std::vector<uint32_t>> hbm_data;
  for (uint32_t i = 0; i < lines; ++i) {
    hbm_data.push_back(RawLine(rng));
    chip.WriteHbm(i, hbm_data.back());
  }
  std::vector<uint8_t> host_data(uint64_t(lines) * chip.line_bytes());
  for (uint8_t& byte : host_data) byte = static_cast<uint8_t>(rng());
  chip.HostWrite(0, host_data.data(), host_data.size());

  Program p;
  p.Li(3, lines);
  p.DmaLd(0, 0, 3, 1);
  p.Halt();
  chip.LoadProgram(p.words());
  chip.MmioWrite(csr::DOORBELL, 1);
  StartHostDma(chip, 0, 100000, lines, false);
  ASSERT_TRUE(chip.WaitIdle(100000));
  ExpectHalted(chip);
  for (uint32_t i = 0; i < lines; ++i) {
    ASSERT_EQ(chip.ReadVmem(i), hbm_data[i]) << "line " << i;
    std::vector<uint32_t> want(kLanes);
    std::memcpy(want.data(), host_data.data() + uint64_t(i) * chip.line_bytes(), chip.line_bytes());
    ASSERT_EQ(chip.ReadHbm(100000 + i), want) << "line " << i;
  }
  EXPECT_TRUE(chip.violations().empty());
}

TEST(TpuChip, PerfCountersCountStalls) {
  ChipHarness chip;
  Program p;
  p.Li(3, 64);
  p.DmaLd(0, 0, 3, 1);
  p.DmaLd(0, 0, 3, 1);  // stalls on the busy DMA unit
  p.Sync();
  p.Halt();
  ASSERT_TRUE(chip.RunProgram(p, 10000));
  ExpectHalted(chip);
  const uint32_t cycles = chip.MmioRead(csr::CYCLES_LO);
  const uint32_t stalls = chip.MmioRead(csr::STALL_CYCLES);
  EXPECT_EQ(chip.MmioRead(csr::INSTRET), 5u);
  EXPECT_EQ(chip.MmioRead(csr::DMA_LINES), 128u);
  EXPECT_GT(stalls, 2 * cfg::kHbmLatency);
  EXPECT_EQ(cycles, stalls + 5u);  // every cycle issues or stalls in this program
}

// SOFT_RESET at random moments of busy programs (all units and the host DMA running, with back-pressure):
// the chip always returns to idle within a bounded time, and a program run afterwards is correct.
TEST(TpuChip, RandomSoftResetsNeverWedgeTheChip) {
  HarnessOptions options;
  options.hbm_ready_probability = 0.8;
  options.host_ready_probability = 0.8;
  ChipHarness chip(options);
  std::mt19937 rng(555);
  Program busy;
  busy.Li(1, 0);
  busy.Li(2, 2048);
  busy.Li(3, 300);
  busy.Li(4, 4096);
  busy.Li(5, 6000);
  const uint32_t top = busy.DmaLd(1, 2, 3, 2);
  busy.DmaSt(4, 2, 3, 1);
  busy.Vadd(5, 2, 2, 3);
  busy.MxuLw(1);
  busy.MxuMm(2, 4, 3, flag::MXU_MM_SWAP);
  busy.Jmp(top);
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    chip.LoadProgram(busy.words());
    chip.MmioWrite(csr::DOORBELL, 1);
    if (rng() % 2) {
      chip.MmioWrite(csr::HDMA_HOST_LO, 0);
      chip.MmioWrite(csr::HDMA_HBM_LINE, 200000);
      chip.MmioWrite(csr::HDMA_LINES, 500);
      chip.MmioWrite(csr::HDMA_CTRL, csr::HDMA_CTRL_START | ((rng() % 2) ? csr::HDMA_CTRL_TO_HOST : 0));
    }
    chip.Tick(rng() % 3000);
    chip.MmioWrite(csr::SOFT_RESET, 1);
    ASSERT_TRUE(chip.WaitIdle(2000));
    EXPECT_EQ(Status(chip), 0u);
    EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS), 0u);
    EXPECT_EQ(chip.MmioRead(csr::HDMA_STATUS), 0u);

    const std::vector<uint32_t> line = RawLine(rng);
    chip.WriteHbm(300000, line);
    Program check;
    check.Li(1, 300000);
    check.Li(2, 7000);
    check.Li(3, 1);
    check.DmaLd(1, 2, 3, 1);
    check.Sync();
    check.Vadd(2, 2, 0, 3, flag::VADD_SRC2_IMM, 0);  // in place: line + 0.0 through the VPU
    check.Halt();
    ASSERT_TRUE(chip.RunProgram(check, 10000));
    ExpectHalted(chip);
    const std::vector<uint32_t> got = chip.ReadVmem(7000);
    for (uint32_t l = 0; l < kLanes; ++l) EXPECT_EQ(got[l], numerics::F32Add(line[l], 0));
  }
  EXPECT_TRUE(chip.violations().empty());
}

// The DMA keeps requests in flight and the VPU writes a line per cycle: long transfers cost about one
// cycle per line plus a fixed latency.
TEST(TpuChip, DmaAndVpuStreamOneLinePerCycle) {
  ChipHarness chip;
  const uint32_t lines = 2000;
  struct Case {
    const char* name;
    Opcode op;
    uint64_t overhead;  // allowed cycles beyond one per line
  };
  for (const Case& c : {Case{"DMA_LD", Opcode::DMA_LD, cfg::kHbmLatency + 16},
                        Case{"DMA_ST", Opcode::DMA_ST, cfg::kHbmLatency + 16},
                        Case{"VADD", Opcode::VADD, 16}}) {
    Program p;
    p.Li(1, 0);
    p.Li(2, 4000);
    p.Li(3, lines);
    if (c.op == Opcode::VADD) {
      p.Vadd(2, 1, 1, 3);
    } else {
      p.Emit(c.op, 0, 1, 2, 3, 0, 1);
    }
    p.Halt();
    ASSERT_TRUE(chip.RunProgram(p, 100000));
    ExpectHalted(chip);
    const uint32_t cycles = chip.MmioRead(csr::CYCLES_LO);
    std::printf("[ stream   ] %s %u lines: %u cycles\n", c.name, lines, cycles);
    EXPECT_LE(cycles, lines + c.overhead) << c.name;
  }
}

// Simulation speed (not a timed assertion): a long VPU + DMA loop; prints cycles per second.
TEST(TpuChip, SimulationSpeed) {
  ChipHarness chip;
  Program p;
  p.Li(1, 0);
  p.Li(2, 1024);
  p.Li(3, 256);
  p.Li(5, 200);
  const uint32_t loop = p.DmaLd(0, 1, 3, 1);
  p.Vadd(2, 1, 1, 3);
  p.Sync();
  p.Addi(5, 5, static_cast<uint32_t>(-1));
  p.Bne(5, 0, loop);
  p.Halt();
  chip.LoadProgram(p.words());
  const auto start = std::chrono::steady_clock::now();
  const uint64_t first = chip.cycle();
  chip.MmioWrite(csr::DOORBELL, 1);
  ASSERT_TRUE(chip.WaitIdle(10000000));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const uint64_t cycles = chip.cycle() - first;
  std::printf("[ speed    ] %llu cycles in %.3f s: %.0f cycles/s (%u lanes)\n",
              static_cast<unsigned long long>(cycles), seconds, cycles / seconds, kLanes);
  ExpectHalted(chip);
}

}  // namespace
}  // namespace tpu::tb
