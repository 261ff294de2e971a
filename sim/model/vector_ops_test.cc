// The widened vector unit in the reference model: every binary op with its operand modes, the s32
// variants, compares, select, conversions and the block transpose, against the numerics library.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sim/model/chip_model.h"
#include "sim/model/model_test_util.h"
#include "sim/numerics/numerics.h"
#include "sim/numerics/transcendental.h"

namespace tpu::model {
namespace {

using namespace tpu::model::testing;  // NOLINT: test helpers
namespace csr = tpu::csr;
namespace flag = tpu::isa::flag;
namespace num = tpu::numerics;
using tpu::isa::Error;

uint64_t V(Opcode op, uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags = 0, uint32_t imm = 0) {
  return Assemble(op, rd, rs1, rs2, rs3, flags, imm);
}

// What one lane of a binary op must give (the instruction semantics of docs/isa.md).
uint32_t Expected(Opcode op, bool is_int, uint8_t dir, uint32_t old, uint32_t x, uint32_t y) {
  const int32_t sx = static_cast<int32_t>(x), sy = static_cast<int32_t>(y);
  const auto d = static_cast<num::CmpDir>(dir);
  switch (op) {
    case Opcode::VADD: return is_int ? x + y : num::F32Add(x, y);
    case Opcode::VSUB: return is_int ? x - y : num::F32Sub(x, y);
    case Opcode::VMUL: return is_int ? x * y : num::F32Mul(x, y);
    case Opcode::VMAX: return is_int ? static_cast<uint32_t>(std::max(sx, sy)) : num::F32Max(x, y);
    case Opcode::VMIN: return is_int ? static_cast<uint32_t>(std::min(sx, sy)) : num::F32Min(x, y);
    case Opcode::VAND: return x & y;
    case Opcode::VOR: return x | y;
    case Opcode::VXOR: return x ^ y;
    case Opcode::VSHL: return y >= 32 ? 0 : x << y;
    case Opcode::VSHRL: return y >= 32 ? 0 : x >> y;
    case Opcode::VSHRA: return y >= 32 ? (sx < 0 ? 0xffffffffu : 0) : static_cast<uint32_t>(sx >> y);
    case Opcode::VCMP: return is_int ? num::S32Compare(x, y, d) : num::F32Compare(x, y, d);
    case Opcode::VSEL: return old != 0 ? x : y;
    default: return 0xBAD;
  }
}

class VectorOpsTest : public ::testing::Test {
 protected:
  VectorOpsTest() : model_(ChipConfig::Build()) {}
  uint32_t lanes() const { return model_.config().lanes; }
  ChipModel model_;
};

struct Mode {
  uint8_t flags;
  const char* name;
};

TEST_F(VectorOpsTest, BinaryOpsEveryOperandMode) {
  std::mt19937 rng(5);
  const uint32_t count = 5;
  std::vector<uint32_t> a(count * lanes()), b(count * lanes()), mask(count * lanes());
  for (uint32_t& v : a) v = MixedFloat(rng, 0.3);
  for (uint32_t& v : b) v = MixedFloat(rng, 0.3);
  for (size_t i = 0; i < a.size(); i += 3) b[i] = a[i];  // equal operands for the compares
  for (uint32_t& v : mask) v = (rng() % 3 == 0) ? 0 : rng();
  const uint32_t imm = F32(-0.75f);
  const Opcode ops[] = {Opcode::VADD, Opcode::VSUB, Opcode::VMUL, Opcode::VMAX, Opcode::VMIN, Opcode::VAND, Opcode::VOR,
                        Opcode::VXOR, Opcode::VSHL, Opcode::VSHRL, Opcode::VSHRA, Opcode::VCMP, Opcode::VSEL};
  const Mode modes[] = {{0, "tensor"}, {flag::VADD_SRC2_BCAST, "bcast"}, {flag::VADD_SRC2_IMM, "imm"}};
  for (Opcode op : ops) {
    for (const Mode& mode : modes) {
      for (int variant = 0; variant < 12; ++variant) {
        const bool is_int = variant % 2 == 1;
        const uint8_t dir = static_cast<uint8_t>(variant / 2);
        const bool has_int = op == Opcode::VADD || op == Opcode::VSUB || op == Opcode::VMUL || op == Opcode::VMAX ||
                             op == Opcode::VMIN || op == Opcode::VCMP;
        if (is_int && !has_int) continue;
        if (dir != 0 && op != Opcode::VCMP) continue;
        uint8_t flags = mode.flags | (is_int ? flag::VADD_INT : 0);
        if (op == Opcode::VCMP) flags |= static_cast<uint8_t>(dir << flag::VCMP_DIR_LSB);
        WriteVmemWords(model_, 0, a);
        WriteVmemWords(model_, 100, b);
        WriteVmemWords(model_, 200, mask);
        const uint32_t status = RunProgram(model_, {Li(1, 0), Li(2, 100), Li(3, count), Li(4, 200),
                                                    V(op, 4, 1, 2, 3, flags, imm), Halt()});
        ASSERT_EQ(status, csr::STATUS_HALTED);
        const auto got = ReadVmemWords(model_, 200, count);
        int bad = 0;
        for (uint32_t i = 0; i < count * lanes() && bad < 3; ++i) {
          const uint32_t y = mode.flags == flag::VADD_SRC2_IMM ? imm
                             : mode.flags == flag::VADD_SRC2_BCAST ? b[i % lanes()] : b[i];
          const uint32_t want = Expected(op, is_int, dir, mask[i], a[i], y);
          if (got[i] != want) ++bad;
          EXPECT_EQ(got[i], want) << tpu::isa::FindOpcode(static_cast<uint8_t>(op))->name << " " << mode.name
                                  << " int " << is_int << " dir " << int(dir) << " element " << i;
        }
        EXPECT_EQ(model_.MmioRead(csr::VPU_BUSY), count);
      }
    }
  }
}

// Shifts by every amount from 0 to 40 (32 and more shift everything out), negative and positive words.
TEST_F(VectorOpsTest, ShiftsByEveryAmount) {
  std::mt19937 rng(11);
  const uint32_t count = 6;
  std::vector<uint32_t> a(count * lanes()), b(count * lanes());
  for (uint32_t& v : a) v = rng();
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint32_t>(i % 41);
  for (Opcode op : {Opcode::VSHL, Opcode::VSHRL, Opcode::VSHRA}) {
    WriteVmemWords(model_, 0, a);
    WriteVmemWords(model_, 100, b);
    ASSERT_EQ(RunProgram(model_, {Li(1, 0), Li(2, 100), Li(3, count), Li(4, 200), V(op, 4, 1, 2, 3, 0, 0), Halt()}),
              csr::STATUS_HALTED);
    const auto got = ReadVmemWords(model_, 200, count);
    for (uint32_t i = 0; i < count * lanes(); ++i) {
      const int32_t x = static_cast<int32_t>(a[i]);
      const uint32_t amount = b[i];
      uint32_t want = 0;
      if (op == Opcode::VSHL) want = amount >= 32 ? 0 : static_cast<uint32_t>(static_cast<uint64_t>(a[i]) << amount);
      if (op == Opcode::VSHRL) want = amount >= 32 ? 0 : static_cast<uint32_t>(static_cast<uint64_t>(a[i]) >> amount);
      if (op == Opcode::VSHRA) want = static_cast<uint32_t>(static_cast<int64_t>(x) >> std::min<uint32_t>(amount, 63));
      ASSERT_EQ(got[i], want) << tpu::isa::FindOpcode(static_cast<uint8_t>(op))->name << " of " << a[i] << " by " << amount;
    }
  }
}

TEST_F(VectorOpsTest, FloatAddInPlaceOnEitherSource) {
  // The float VADD runs a vectorized loop that accumulates into the destination: a destination that is
  // the first or the second source must still give F32Add(a, b) element for element.
  std::mt19937 rng(7);
  const uint32_t count = 4;
  std::vector<uint32_t> a(count * lanes()), b(count * lanes());
  for (uint32_t& v : a) v = MixedFloat(rng, 0.3);
  for (uint32_t& v : b) v = MixedFloat(rng, 0.3);
  for (int destination = 1; destination <= 2; ++destination) {
    WriteVmemWords(model_, 0, a);
    WriteVmemWords(model_, 100, b);
    ASSERT_EQ(RunProgram(model_, {Li(1, 0), Li(2, 100), Li(3, count),
                                  V(Opcode::VADD, static_cast<uint8_t>(destination), 1, 2, 3, 0, 0), Halt()}),
              csr::STATUS_HALTED);
    const auto got = ReadVmemWords(model_, destination == 1 ? 0 : 100, count);
    for (uint32_t i = 0; i < count * lanes(); ++i) {
      ASSERT_EQ(got[i], tpu::numerics::F32Add(a[i], b[i])) << "destination r" << destination << " element " << i;
    }
  }
}

TEST_F(VectorOpsTest, NegateAndAbsoluteAreBitOps) {
  const std::vector<uint32_t> a = {F32(1.5f), F32(-2.0f), 0x80000000u, 0x7FC00000u, 0xFF800000u, 1u, 0u, F32(-0.1f)};
  std::vector<uint32_t> line(lanes());
  for (uint32_t n = 0; n < lanes(); ++n) line[n] = a[n % a.size()];
  WriteVmemWords(model_, 0, line);
  ASSERT_EQ(RunProgram(model_, {Li(1, 0), Li(2, 1), Li(3, 2), Li(4, 1),
                                V(Opcode::VXOR, 2, 1, 0, 4, flag::VXOR_SRC2_IMM, 0x80000000u),
                                V(Opcode::VAND, 3, 1, 0, 4, flag::VAND_SRC2_IMM, 0x7FFFFFFFu), Halt()}),
            csr::STATUS_HALTED);
  const auto negated = ReadVmemWords(model_, 1, 1);
  const auto absolute = ReadVmemWords(model_, 2, 1);
  for (uint32_t n = 0; n < lanes(); ++n) {
    EXPECT_EQ(negated[n], line[n] ^ 0x80000000u);
    EXPECT_EQ(absolute[n], line[n] & 0x7FFFFFFFu);
  }
}

TEST_F(VectorOpsTest, Conversions) {
  std::mt19937 rng(6);
  const uint32_t count = 4;
  std::vector<uint32_t> f(count * lanes()), s(count * lanes());
  for (uint32_t& v : f) v = MixedFloat(rng, 0.3);
  for (uint32_t& v : s) v = rng() >> (rng() % 32);
  for (size_t i = 0; i < s.size(); i += 2) s[i] = 0u - s[i];
  WriteVmemWords(model_, 0, f);
  WriteVmemWords(model_, 100, s);
  ASSERT_EQ(RunProgram(model_, {Li(1, 0), Li(2, 100), Li(3, count), Li(4, 200), Li(5, 300),
                                V(Opcode::VCVT, 4, 1, 0, 3, flag::VCVT_F32_TO_S32), V(Opcode::VCVT, 5, 2, 0, 3), Halt()}),
            csr::STATUS_HALTED);
  const auto to_s32 = ReadVmemWords(model_, 200, count);
  const auto to_f32 = ReadVmemWords(model_, 300, count);
  for (uint32_t i = 0; i < count * lanes(); ++i) {
    EXPECT_EQ(to_s32[i], num::F32ToS32(f[i])) << i;
    EXPECT_EQ(to_f32[i], num::S32ToF32(s[i])) << i;
  }
}

TEST_F(VectorOpsTest, Transcendentals) {
  std::mt19937 rng(8);
  const uint32_t count = 3;
  std::vector<uint32_t> x(count * lanes());
  for (uint32_t& v : x) v = MixedFloat(rng, 0.3);
  WriteVmemWords(model_, 0, x);
  ASSERT_EQ(RunProgram(model_, {Li(1, 0), Li(3, count), Li(4, 100), Li(5, 200), Li(6, 300), Li(7, 400),
                                V(Opcode::VEXP, 4, 1, 0, 3), V(Opcode::VLOG, 5, 1, 0, 3), V(Opcode::VRSQRT, 6, 1, 0, 3),
                                V(Opcode::VRCP, 7, 1, 0, 3), Halt()}),
            csr::STATUS_HALTED);
  const auto exp = ReadVmemWords(model_, 100, count);
  const auto log = ReadVmemWords(model_, 200, count);
  const auto rsqrt = ReadVmemWords(model_, 300, count);
  const auto rcp = ReadVmemWords(model_, 400, count);
  for (uint32_t i = 0; i < count * lanes(); ++i) {
    EXPECT_EQ(exp[i], num::F32Exp(x[i])) << i;
    EXPECT_EQ(log[i], num::F32Log(x[i])) << i;
    EXPECT_EQ(rsqrt[i], num::F32Rsqrt(x[i])) << i;
    EXPECT_EQ(rcp[i], num::F32Rcp(x[i])) << i;
  }
  EXPECT_EQ(model_.MmioRead(csr::VPU_BUSY), 4 * count);
}

TEST_F(VectorOpsTest, TransposeBlocks) {
  const uint32_t blocks = 3;
  const uint32_t lines = blocks * lanes();
  std::vector<uint32_t> src(lines * lanes());
  for (uint32_t i = 0; i < src.size(); ++i) src[i] = 0x1000000u * (i % 7) + i;  // distinct words
  WriteVmemWords(model_, 10, src);
  ASSERT_EQ(RunProgram(model_, {Li(1, 10), Li(2, 200), Li(3, blocks), V(Opcode::VTRANS, 2, 1, 0, 3), Halt()}),
            csr::STATUS_HALTED);
  const auto dst = ReadVmemWords(model_, 200, lines);
  for (uint32_t b = 0; b < blocks; ++b)
    for (uint32_t i = 0; i < lanes(); ++i)
      for (uint32_t j = 0; j < lanes(); ++j)
        ASSERT_EQ(dst[(b * lanes() + j) * lanes() + i], src[(b * lanes() + i) * lanes() + j]) << b << " " << i << " " << j;
  EXPECT_EQ(model_.MmioRead(csr::VPU_BUSY), lines);
}

TEST_F(VectorOpsTest, BadVmemRangesWriteNothing) {
  const uint32_t vmem = model_.config().vmem_lines;
  struct Case {
    const char* name;
    uint64_t word;
    uint32_t bad_base;  // s1: one line (or one VTRANS block of LANES lines) from there leaves VMEM
  };
  const Case cases[] = {
      {"VTRANS dst", V(Opcode::VTRANS, 1, 2, 0, 3), vmem - lanes() + 1},
      {"VTRANS src", V(Opcode::VTRANS, 2, 1, 0, 3), vmem - lanes() + 1},
      {"VSUB src2", V(Opcode::VSUB, 2, 2, 1, 3), vmem},
      {"VCVT src", V(Opcode::VCVT, 2, 1, 0, 3), vmem},
      {"VSEL dst", V(Opcode::VSEL, 1, 2, 2, 3), vmem},
  };
  for (const Case& c : cases) {
    const uint32_t status = RunProgram(model_, {Li(1, c.bad_base), Li(2, 0), Li(3, 1), c.word, Halt()});
    EXPECT_EQ(status, csr::STATUS_ERROR) << c.name;
    EXPECT_EQ(model_.MmioRead(csr::ERROR_CODE), static_cast<uint32_t>(Error::BAD_VMEM_ADDR)) << c.name;
  }
  // The same VTRANS one line lower fits.
  EXPECT_EQ(RunProgram(model_, {Li(1, vmem - lanes()), Li(2, 0), Li(3, 1), V(Opcode::VTRANS, 1, 2, 0, 3), Halt()}),
            csr::STATUS_HALTED);
}

}  // namespace
}  // namespace tpu::model
