// Verilated RTL numerics units (rtl/numerics) against the C++ library (sim/numerics), bit for bit:
// every pair of special values, exhaustive sweeps where they are cheap, and 10^6 random vectors per
// unit biased to the interesting exponents (cancellation, far-apart exponents, overflow/underflow
// edges, rounding ties). A scoreboard reports the first mismatch with inputs and both outputs in hex.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "Vbf16_mul.h"
#include "Vfp32_add.h"
#include "Vfp32_max.h"
#include "Vfp32_to_bf16.h"
#include "Vfp32_vpu_ops.h"
#include "sim/numerics/numerics.h"
#include "sim/numerics/numerics_testing.h"
#include "sim/numerics/transcendental.h"
#include "verilated.h"

namespace tpu::numerics {
namespace {

using testing::OperandGenerator;
using testing::SpecialBf16;
using testing::SpecialF32;
using testing::TestSeed;

constexpr int kRandomVectors = 1'000'000;

std::string Hex(uint32_t value, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%0*x", digits, value);
  return text;
}

// Compares RTL outputs with the library's, counts vectors and mismatches, and keeps a description
// of the first mismatch: the unit, its inputs and both outputs in hex (plus their values).
class Scoreboard {
 public:
  explicit Scoreboard(std::string unit, int result_digits) : unit_(std::move(unit)), result_digits_(result_digits) {}

  // `describe_inputs` (a callable returning a string) is only called on the first mismatch.
  template <typename DescribeInputs>
  void Compare(const DescribeInputs& describe_inputs, uint32_t rtl, uint32_t library) {
    ++vectors_;
    if (rtl == library) return;
    if (++mismatches_ == 1) {
      first_mismatch_ = "scoreboard " + unit_ + ": first mismatch at vector " + std::to_string(vectors_) + ": " +
                        describe_inputs() + " rtl=" + Describe(rtl) + " library=" + Describe(library);
      std::fprintf(stderr, "%s\n", first_mismatch_.c_str());
    }
  }

  uint64_t vectors() const { return vectors_; }
  uint64_t mismatches() const { return mismatches_; }
  const std::string& first_mismatch() const { return first_mismatch_; }

  // gtest assertion helper: passes when nothing mismatched, else shows the first mismatch.
  ::testing::AssertionResult Clean() const {
    std::printf("scoreboard %s: vectors=%llu mismatches=%llu\n", unit_.c_str(),
                static_cast<unsigned long long>(vectors_), static_cast<unsigned long long>(mismatches_));
    if (mismatches_ == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << mismatches_ << " of " << vectors_ << " vectors differ; " << first_mismatch_;
  }

 private:
  std::string Describe(uint32_t value) const {
    return result_digits_ == 4 ? Bf16ToString(static_cast<uint16_t>(value)) : F32ToString(value);
  }

  std::string unit_;
  int result_digits_;
  uint64_t vectors_ = 0;
  uint64_t mismatches_ = 0;
  std::string first_mismatch_;
};

// Thin drivers: set the inputs, evaluate the combinational model, read the output.
class Bf16MulDut {
 public:
  uint32_t operator()(uint16_t a, uint16_t b) {
    model_.a_i = a;
    model_.b_i = b;
    model_.eval();
    return model_.p_o;
  }

 private:
  Vbf16_mul model_;
};

class Fp32AddDut {
 public:
  uint32_t operator()(uint32_t a, uint32_t b) {
    model_.a_i = a;
    model_.b_i = b;
    model_.eval();
    return model_.sum_o;
  }

 private:
  Vfp32_add model_;
};

class Fp32MaxDut {
 public:
  uint32_t operator()(uint32_t a, uint32_t b) {
    model_.a_i = a;
    model_.b_i = b;
    model_.eval();
    return model_.max_o;
  }

 private:
  Vfp32_max model_;
};

class Fp32ToBf16Dut {
 public:
  uint16_t operator()(uint32_t x) {
    model_.a_i = x;
    model_.eval();
    return model_.bf16_o;
  }

 private:
  Vfp32_to_bf16 model_;
};

auto Inputs32(uint32_t a, uint32_t b) {
  return [a, b] { return "a=" + Hex(a, 8) + " b=" + Hex(b, 8); };
}
auto Inputs16(uint16_t a, uint16_t b) {
  return [a, b] { return "a=" + Hex(a, 4) + " b=" + Hex(b, 4); };
}
auto Input32(uint32_t x) {
  return [x] { return "a=" + Hex(x, 8); };
}

// The exhaustive sweeps take minutes, so they run only on request: TPU_NUMERICS_EXHAUSTIVE=1.
bool ExhaustiveRequested() {
  const char* value = std::getenv("TPU_NUMERICS_EXHAUSTIVE");
  return value != nullptr && std::string(value) == "1";
}

// fp32 operands for the two-input units: every special value, and every bf16 special as the
// upper half of an fp32 (the exponent edges of the product that feeds the MXU adder).
std::vector<uint32_t> SpecialF32Operands() {
  std::vector<uint32_t> values = SpecialF32();
  for (uint16_t b : SpecialBf16()) values.push_back(static_cast<uint32_t>(b) << 16);
  return values;
}

TEST(ScoreboardTest, ReportsFirstMismatchInHex) {
  Scoreboard board("fp32_add", 8);
  board.Compare(Inputs32(0x3F800000, 0x40000000), 0x40400000, 0x40400000);
  board.Compare(Inputs32(0x00000001, 0xFF800000), 0x7FC00000, 0xFF800000);
  board.Compare(Inputs32(1, 2), 3, 4);
  EXPECT_EQ(board.vectors(), 3u);
  EXPECT_EQ(board.mismatches(), 2u);
  const std::string& message = board.first_mismatch();
  EXPECT_NE(message.find("fp32_add"), std::string::npos) << message;
  EXPECT_NE(message.find("vector 2"), std::string::npos) << message;
  EXPECT_NE(message.find("a=0x00000001 b=0xff800000"), std::string::npos) << message;
  EXPECT_NE(message.find("rtl=0x7fc00000"), std::string::npos) << message;
  EXPECT_NE(message.find("library=0xff800000"), std::string::npos) << message;
  EXPECT_FALSE(board.Clean());
}

TEST(Fp32AddRtl, SpecialPairs) {
  Fp32AddDut dut;
  Scoreboard board("fp32_add", 8);
  const std::vector<uint32_t> values = SpecialF32Operands();
  for (uint32_t a : values)
    for (uint32_t b : values) board.Compare(Inputs32(a, b), dut(a, b), F32Add(a, b));
  EXPECT_TRUE(board.Clean());
}

TEST(Fp32AddRtl, RandomBiasedVectors) {
  Fp32AddDut dut;
  Scoreboard board("fp32_add", 8);
  OperandGenerator gen(TestSeed(11));
  for (int i = 0; i < kRandomVectors; ++i) {
    const auto pair = gen.F32AddPair();
    const uint32_t a = pair.first, b = pair.second;
    board.Compare(Inputs32(a, b), dut(a, b), F32Add(a, b));
    board.Compare(Inputs32(b, a), dut(b, a), F32Add(b, a));
  }
  EXPECT_TRUE(board.Clean());
}

// Sums as the MXU forms them: a partial sum plus an exact bf16 product.
TEST(Fp32AddRtl, PartialSumPlusProduct) {
  Fp32AddDut dut;
  Scoreboard board("fp32_add", 8);
  OperandGenerator gen(TestSeed(12));
  for (int i = 0; i < kRandomVectors / 4; ++i) {
    const auto factors = gen.Bf16MulPair();
    const uint32_t product = Bf16Mul(factors.first, factors.second);
    const uint32_t psum = gen.random().Below(2) ? gen.F32() : (product ^ (gen.random().Next32() & 0x80FFFFFFu));
    board.Compare(Inputs32(psum, product), dut(psum, product), F32Add(psum, product));
  }
  EXPECT_TRUE(board.Clean());
}

TEST(Bf16MulRtl, SpecialPairs) {
  Bf16MulDut dut;
  Scoreboard board("bf16_mul", 8);
  const std::vector<uint16_t> values = SpecialBf16();
  for (uint16_t a : values)
    for (uint16_t b : values) board.Compare(Inputs16(a, b), dut(a, b), Bf16Mul(a, b));
  EXPECT_TRUE(board.Clean());
}

// Every bf16 value times every special value: covers all exponent sums at both range edges.
TEST(Bf16MulRtl, AllValuesTimesSpecials) {
  Bf16MulDut dut;
  Scoreboard board("bf16_mul", 8);
  for (uint16_t b : SpecialBf16())
    for (uint32_t a = 0; a <= 0xFFFF; ++a) {
      const uint16_t a16 = static_cast<uint16_t>(a);
      board.Compare(Inputs16(a16, b), dut(a16, b), Bf16Mul(a16, b));
    }
  EXPECT_TRUE(board.Clean());
}

TEST(Bf16MulRtl, RandomBiasedVectors) {
  Bf16MulDut dut;
  Scoreboard board("bf16_mul", 8);
  OperandGenerator gen(TestSeed(13));
  for (int i = 0; i < kRandomVectors; ++i) {
    const auto pair = gen.Bf16MulPair();
    board.Compare(Inputs16(pair.first, pair.second), dut(pair.first, pair.second), Bf16Mul(pair.first, pair.second));
  }
  EXPECT_TRUE(board.Clean());
}

TEST(Fp32MaxRtl, SpecialPairs) {
  Fp32MaxDut dut;
  Scoreboard board("fp32_max", 8);
  const std::vector<uint32_t> values = SpecialF32Operands();
  for (uint32_t a : values)
    for (uint32_t b : values) board.Compare(Inputs32(a, b), dut(a, b), F32Max(a, b));
  EXPECT_TRUE(board.Clean());
}

TEST(Fp32MaxRtl, RandomBiasedVectors) {
  Fp32MaxDut dut;
  Scoreboard board("fp32_max", 8);
  OperandGenerator gen(TestSeed(14));
  for (int i = 0; i < kRandomVectors; ++i) {
    const auto pair = gen.F32AddPair();
    const uint32_t a = pair.first, b = pair.second;
    board.Compare(Inputs32(a, b), dut(a, b), F32Max(a, b));
    board.Compare(Inputs32(b, a), dut(b, a), F32Max(b, a));
  }
  EXPECT_TRUE(board.Clean());
}

// The vector unit's lane operations: every output against its library function for one input pair.
class VpuOpsDut {
 public:
  void Check(uint32_t a, uint32_t b, Scoreboard& board) {
    model_.a_i = a;
    model_.b_i = b;
    model_.int_i = 0;
    model_.dir_i = 0;
    model_.eval();
    board.Compare([&] { return "mul " + Inputs32(a, b)(); }, model_.mul_o, F32Mul(a, b));
    board.Compare([&] { return "min " + Inputs32(a, b)(); }, model_.min_o, F32Min(a, b));
    board.Compare([&] { return "to_s32 " + Input32(a)(); }, model_.to_s32_o, F32ToS32(a));
    board.Compare([&] { return "to_f32 " + Input32(a)(); }, model_.to_f32_o, S32ToF32(a));
    board.Compare([&] { return "exp " + Input32(a)(); }, model_.exp_o, F32Exp(a));
    board.Compare([&] { return "log " + Input32(a)(); }, model_.log_o, F32Log(a));
    board.Compare([&] { return "rsqrt " + Input32(a)(); }, model_.rsqrt_o, F32Rsqrt(a));
    board.Compare([&] { return "rcp " + Input32(a)(); }, model_.rcp_o, F32Rcp(a));
    for (uint32_t dir = 0; dir < 8; ++dir) {
      for (uint32_t is_int = 0; is_int < 2; ++is_int) {
        model_.dir_i = dir;
        model_.int_i = is_int;
        model_.eval();
        const auto d = static_cast<CmpDir>(dir);
        board.Compare([&] { return "cmp dir " + std::to_string(dir) + " int " + std::to_string(is_int) + " " + Inputs32(a, b)(); },
                      model_.cmp_o, is_int ? S32Compare(a, b, d) : F32Compare(a, b, d));
      }
    }
  }

 private:
  Vfp32_vpu_ops model_;
};

TEST(VpuOpsRtl, SpecialPairs) {
  VpuOpsDut dut;
  Scoreboard board("fp32_vpu_ops", 8);
  const std::vector<uint32_t> values = SpecialF32Operands();
  for (uint32_t a : values)
    for (uint32_t b : values) dut.Check(a, b, board);
  EXPECT_TRUE(board.Clean());
}

TEST(VpuOpsRtl, RandomBiasedVectors) {
  VpuOpsDut dut;
  Scoreboard board("fp32_vpu_ops", 8);
  OperandGenerator gen(TestSeed(21));
  // Fewer pairs than the other units: every pair evaluates all outputs 17 times (16 compare variants).
  for (int i = 0; i < kRandomVectors / 16; ++i) {
    const auto pair = gen.F32AddPair();
    dut.Check(pair.first, pair.second, board);
    // Products near the FTZ and overflow edges, and plain random bits (s32 values for the conversions).
    const uint32_t x = gen.random().Next32();
    const uint32_t y = ((x ^ gen.random().Next32()) & 0x807FFFFFu) |
                       (static_cast<uint32_t>((254 - ((x >> 23) & 0xFF) + gen.random().Range(-3, 3)) & 0xFF) << 23);
    dut.Check(x, (i & 1) ? y : gen.random().Next32(), board);
  }
  EXPECT_TRUE(board.Clean());
}

TEST(Fp32ToBf16Rtl, SpecialValues) {
  Fp32ToBf16Dut dut;
  Scoreboard board("fp32_to_bf16", 4);
  for (uint32_t x : SpecialF32Operands()) board.Compare(Input32(x), dut(x), F32ToBf16(x));
  EXPECT_TRUE(board.Clean());
}

// Every upper half with the lower halves that decide rounding: exact, just below/at/above the tie.
TEST(Fp32ToBf16Rtl, AllUpperHalvesAtRoundingEdges) {
  Fp32ToBf16Dut dut;
  Scoreboard board("fp32_to_bf16", 4);
  for (uint32_t upper = 0; upper <= 0xFFFF; ++upper)
    for (uint32_t lower : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      const uint32_t x = (upper << 16) | lower;
      board.Compare(Input32(x), dut(x), F32ToBf16(x));
    }
  EXPECT_TRUE(board.Clean());
}

TEST(Fp32ToBf16Rtl, RandomBiasedVectors) {
  Fp32ToBf16Dut dut;
  Scoreboard board("fp32_to_bf16", 4);
  OperandGenerator gen(TestSeed(15));
  for (int i = 0; i < kRandomVectors; ++i) {
    const uint32_t x = gen.F32ForBf16();
    board.Compare(Input32(x), dut(x), F32ToBf16(x));
  }
  EXPECT_TRUE(board.Clean());
}

// All 2^32 operand pairs (opt-in, see ExhaustiveRequested).
TEST(Bf16MulRtl, AllPairsExhaustive) {
  if (!ExhaustiveRequested()) GTEST_SKIP() << "set TPU_NUMERICS_EXHAUSTIVE=1 to run all 2^32 pairs";
  Bf16MulDut dut;
  Scoreboard board("bf16_mul", 8);
  for (uint32_t a = 0; a <= 0xFFFF; ++a)
    for (uint32_t b = 0; b <= 0xFFFF; ++b) {
      const uint16_t a16 = static_cast<uint16_t>(a), b16 = static_cast<uint16_t>(b);
      board.Compare(Inputs16(a16, b16), dut(a16, b16), Bf16Mul(a16, b16));
    }
  EXPECT_TRUE(board.Clean());
}

// All 2^32 inputs (opt-in, see ExhaustiveRequested).
TEST(Fp32ToBf16Rtl, AllInputsExhaustive) {
  if (!ExhaustiveRequested()) GTEST_SKIP() << "set TPU_NUMERICS_EXHAUSTIVE=1 to run all 2^32 inputs";
  Fp32ToBf16Dut dut;
  Scoreboard board("fp32_to_bf16", 4);
  uint32_t x = 0;
  do {
    board.Compare(Input32(x), dut(x), F32ToBf16(x));
  } while (++x != 0);
  EXPECT_TRUE(board.Clean());
}

// An MXU column chained through the two RTL units (psum = fp32_add(psum, bf16_mul(a, w)) from +0,
// k in order) against the library's column sum.
TEST(MxuColumnRtl, ChainedUnitsMatchMxuDot) {
  Bf16MulDut mul;
  Fp32AddDut add;
  Scoreboard board("mxu column (bf16_mul + fp32_add)", 8);
  OperandGenerator gen(TestSeed(16));
  constexpr int kLength = 128;
  uint16_t a[kLength], w[kLength];
  for (int column = 0; column < 4000; ++column) {
    const uint32_t center = column % 3 == 0 ? 127 : column % 3 == 1 ? 63 : 191;  // ~1, near 2^-126, near 2^128
    for (int k = 0; k < kLength; ++k) {
      a[k] = gen.random().Below(16) == 0 ? gen.Bf16()
                                         : static_cast<uint16_t>((gen.random().Below(2) << 15) |
                                                                 ((center + gen.random().Range(-4, 4)) << 7) |
                                                                 gen.random().Below(128));
      w[k] = static_cast<uint16_t>((gen.random().Below(2) << 15) | ((127 + gen.random().Range(-3, 3)) << 7) |
                                   gen.random().Below(128));
    }
    uint32_t psum = 0;
    for (int k = 0; k < kLength; ++k) psum = add(psum, mul(a[k], w[k]));
    board.Compare([column] { return "column " + std::to_string(column); }, psum, MxuDotPortable(a, w, kLength, 1));
  }
  EXPECT_TRUE(board.Clean());
}

}  // namespace
}  // namespace tpu::numerics
