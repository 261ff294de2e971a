// The integer numerics library against the host FPU with DAZ/FTZ emulated around it
// (numerics_host_reference.h): every pair of special values, then 4 * 10^6 biased random pairs per op.
#include "sim/numerics/numerics.h"

#include <gtest/gtest.h>

#include <cfenv>
#include <cstdio>
#include <string>
#include <vector>

#include "sim/numerics/numerics_host_reference.h"
#include "sim/numerics/numerics_testing.h"

namespace tpu::numerics {
namespace {

namespace ref = host_reference;
using testing::OperandGenerator;
using testing::SpecialBf16;
using testing::SpecialF32;
using testing::TestSeed;

constexpr int kRandomPairs = 4'000'000;
constexpr int kMaxReported = 5;  // mismatches printed per test; the count says the rest

// Counts mismatches between the library and the reference and describes the first few.
class Tally {
 public:
  // `describe_inputs` is only called on a mismatch: formatting every pair would dominate the run.
  template <typename Describe>
  void Check(const char* op, Describe describe_inputs, uint32_t got, uint32_t want, bool bf16_result = false) {
    if (got == want) return;
    if (++mismatches_ <= kMaxReported) {
      ADD_FAILURE() << op << "(" << describe_inputs() << "): library "
                    << (bf16_result ? Bf16ToString(static_cast<uint16_t>(got)) : F32ToString(got)) << ", reference "
                    << (bf16_result ? Bf16ToString(static_cast<uint16_t>(want)) : F32ToString(want));
    }
  }
  int mismatches() const { return mismatches_; }

 private:
  int mismatches_ = 0;
};

std::string Pair32(uint32_t a, uint32_t b) { return F32ToString(a) + ", " + F32ToString(b); }
std::string Pair16(uint16_t a, uint16_t b) { return Bf16ToString(a) + ", " + Bf16ToString(b); }

// --- Rules of docs/numerics.md stated directly, so a wrong reference cannot hide them. ---

TEST(NumericsRules, SignedZeros) {
  EXPECT_EQ(F32Add(0x00000000, 0x80000000), 0x00000000u);  // (+0) + (-0) = +0
  EXPECT_EQ(F32Add(0x80000000, 0x00000000), 0x00000000u);
  EXPECT_EQ(F32Add(0x80000000, 0x80000000), 0x80000000u);  // (-0) + (-0) = -0
  EXPECT_EQ(F32Add(0x3F800000, 0xBF800000), 0x00000000u);  // x + (-x) = +0
  EXPECT_EQ(F32Add(0xBF800000, 0x3F800000), 0x00000000u);
  EXPECT_EQ(Bf16Mul(0x8000, 0x3F80), 0x80000000u);         // sign is the XOR
  EXPECT_EQ(Bf16Mul(0x8000, 0xBF80), 0x00000000u);
  EXPECT_EQ(F32Max(0x80000000, 0x00000000), 0x00000000u);  // max(-0, +0) = +0
  EXPECT_EQ(F32Max(0x00000000, 0x80000000), 0x00000000u);
  EXPECT_EQ(F32ToBf16(0x80000000), 0x8000);
}

TEST(NumericsRules, DenormalsAreZeroAndFlushToZero) {
  EXPECT_EQ(F32Add(0x00000001, 0x00000001), 0x00000000u);  // subnormal inputs read as +0
  EXPECT_EQ(F32Add(0x80400000, 0x80000000), 0x80000000u);  // (-sub) + (-0) = -0
  EXPECT_EQ(F32Add(0x00800001, 0x80800000), 0x00000000u);  // exact 2^-149 flushes
  EXPECT_EQ(F32Add(0x80800001, 0x00800000), 0x80000000u);  // to a zero of the result's sign
  EXPECT_EQ(F32Max(0x00000001, 0x80000000), 0x00000000u);  // max(+sub, -0) is the DAZ value +0
  EXPECT_EQ(F32ToBf16(0x807FFFFF), 0x8000);
  EXPECT_EQ(Bf16ToF32(0x0001), 0x00000000u);
  EXPECT_EQ(Bf16ToF32(0x807F), 0x80000000u);
  EXPECT_EQ(Bf16Mul(0x2000, 0x2000), 0x00800000u);  // 2^-63 * 2^-63 = 2^-126: the smallest normal
  EXPECT_EQ(Bf16Mul(0x1FFF, 0x2000), 0x00000000u);  // just below: flushed
  EXPECT_EQ(Bf16Mul(0x0040, 0x7F00), 0x00000000u);  // subnormal times huge: zero, not 2^0
}

TEST(NumericsRules, NansAreCanonical) {
  for (uint32_t nan : {0x7FC00001u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu}) {
    EXPECT_EQ(F32Add(nan, 0x3F800000), kF32CanonicalNan);
    EXPECT_EQ(F32Add(0x7F800000, nan), kF32CanonicalNan);
    EXPECT_EQ(F32Max(nan, 0x7F800000), kF32CanonicalNan);
    EXPECT_EQ(F32Max(0xFF800000, nan), kF32CanonicalNan);
    EXPECT_EQ(F32ToBf16(nan), kBf16CanonicalNan);
    EXPECT_EQ(Bf16Mul(static_cast<uint16_t>(nan >> 16), 0x0000), kF32CanonicalNan);
  }
  EXPECT_EQ(F32Add(0x7F800000, 0xFF800000), kF32CanonicalNan);  // inf - inf (x86 would give 0xFFC00000)
  EXPECT_EQ(Bf16Mul(0x7F80, 0x8000), kF32CanonicalNan);         // inf * 0
  EXPECT_EQ(Bf16Mul(0x0001, 0xFF80), kF32CanonicalNan);         // inf * subnormal (DAZ: a zero)
  EXPECT_EQ(Bf16ToF32(0xFF81), kF32CanonicalNan);
}

TEST(NumericsRules, OverflowAndRounding) {
  EXPECT_EQ(F32Add(0x7F7FFFFF, 0x7F7FFFFF), 0x7F800000u);
  EXPECT_EQ(F32Add(0x7F7FFFFF, 0x73000000), 0x7F800000u);  // + half ulp, odd LSB: rounds to inf
  EXPECT_EQ(F32Add(0x7F7FFFFE, 0x73000000), 0x7F7FFFFEu);  // + half ulp, even LSB: stays
  EXPECT_EQ(F32Add(0x3F800000, 0x33800000), 0x3F800000u);  // 1 + 2^-24: tie to even (down)
  EXPECT_EQ(F32Add(0x3F800001, 0x33800000), 0x3F800002u);  // odd: tie rounds up
  EXPECT_EQ(F32ToBf16(0x3F808000), 0x3F80);                // tie, even kept
  EXPECT_EQ(F32ToBf16(0x3F818000), 0x3F82);                // tie, odd rounds up
  EXPECT_EQ(F32ToBf16(0x7F7F8000), 0x7F80);                // rounds to infinity
  EXPECT_EQ(F32ToBf16(0xFF7FFFFF), 0xFF80);
  EXPECT_EQ(Bf16Mul(0x5F80, 0x5F80), 0x7F800000u);  // 2^64 * 2^64 = 2^128
  EXPECT_EQ(Bf16Mul(0xDF80, 0x5F00), 0xFF000000u);  // -2^127 is finite
  EXPECT_EQ(Bf16Mul(0x3FFF, 0x3FFF), FloatBits(1.9921875f * 1.9921875f));  // exact 16-bit product
}

// --- Every pair of special values against the host reference. ---

TEST(NumericsSpecials, AllPairs) {
  const std::vector<uint32_t> f32 = SpecialF32();
  const std::vector<uint16_t> bf16 = SpecialBf16();
  Tally tally;
  for (uint32_t a : f32) {
    tally.Check("F32ToBf16", [&] { return F32ToString(a); }, F32ToBf16(a), ref::F32ToBf16(a), true);
    for (uint32_t b : f32) {
      tally.Check("F32Add", [&] { return Pair32(a, b); }, F32Add(a, b), ref::Add(a, b));
      tally.Check("F32Max", [&] { return Pair32(a, b); }, F32Max(a, b), ref::Max(a, b));
    }
  }
  for (uint16_t a : bf16) {
    tally.Check("Bf16ToF32", [&] { return Bf16ToString(a); }, Bf16ToF32(a), ref::Bf16ToF32(a));
    for (uint16_t b : bf16) tally.Check("Bf16Mul", [&] { return Pair16(a, b); }, Bf16Mul(a, b), ref::Bf16Mul(a, b));
  }
  // The special bf16 values also as the upper halves of fp32 operands (every exponent edge of add).
  for (uint16_t a : bf16)
    for (uint32_t b : f32) {
      const uint32_t wide = static_cast<uint32_t>(a) << 16;
      tally.Check("F32Add", [&] { return Pair32(wide, b); }, F32Add(wide, b), ref::Add(wide, b));
    }
  EXPECT_EQ(tally.mismatches(), 0);
}

// --- Random biased pairs (>= 10^6 per op). ---

TEST(NumericsRandom, F32Add) {
  OperandGenerator gen(TestSeed(1));
  Tally tally;
  for (int i = 0; i < kRandomPairs; ++i) {
    const auto pair = gen.F32AddPair();
    const uint32_t a = pair.first, b = pair.second;
    tally.Check("F32Add", [&] { return Pair32(a, b); }, F32Add(a, b), ref::Add(a, b));
    tally.Check("F32Add", [&] { return Pair32(b, a); }, F32Add(b, a), ref::Add(b, a));
  }
  EXPECT_EQ(tally.mismatches(), 0);
}

TEST(NumericsRandom, Bf16Mul) {
  OperandGenerator gen(TestSeed(2));
  Tally tally;
  for (int i = 0; i < kRandomPairs; ++i) {
    const auto pair = gen.Bf16MulPair();
    const uint16_t a = pair.first, b = pair.second;
    tally.Check("Bf16Mul", [&] { return Pair16(a, b); }, Bf16Mul(a, b), ref::Bf16Mul(a, b));
  }
  EXPECT_EQ(tally.mismatches(), 0);
}

TEST(NumericsRandom, F32Max) {
  OperandGenerator gen(TestSeed(3));
  Tally tally;
  for (int i = 0; i < kRandomPairs; ++i) {
    const auto pair = gen.F32AddPair();
    const uint32_t a = pair.first, b = pair.second;
    tally.Check("F32Max", [&] { return Pair32(a, b); }, F32Max(a, b), ref::Max(a, b));
    tally.Check("F32Max", [&] { return Pair32(b, a); }, F32Max(b, a), ref::Max(b, a));
  }
  EXPECT_EQ(tally.mismatches(), 0);
}

// --- Vector unit operations (VSUB, VMUL, VMIN, VCMP, VCVT) against the host. ---

TEST(VectorNumericsRules, MulMinCompareConvert) {
  EXPECT_EQ(F32Mul(0x3FC00000, 0x40000000), 0x40400000u);  // 1.5 * 2 = 3
  EXPECT_EQ(F32Mul(0x80000000, 0x3F800000), 0x80000000u);  // -0 * 1 = -0
  EXPECT_EQ(F32Mul(0x7F800000, 0x00000001), kF32CanonicalNan);  // inf * subnormal (a zero) = NaN
  EXPECT_EQ(F32Mul(0x7F000000, 0x40000000), kF32Inf);       // 2^127 * 2 overflows
  EXPECT_EQ(F32Mul(0x00800000, 0x3F000000), 0x00000000u);   // 2^-126 * 0.5 flushes
  // 2^-126 * (1 - 2^-24) is exact in 24 bits and below 2^-126: flushed (FTZ after rounding to 24 bits).
  EXPECT_EQ(F32Mul(0x00800000, 0x3F7FFFFF), 0x00000000u);
  // (1 + 2^-23)(1 - 2^-24) 2^-126 = (1 + 2^-24 - 2^-47) 2^-126 rounds down to 2^-126: kept.
  EXPECT_EQ(F32Mul(0x00800001, 0x3F7FFFFF), 0x00800000u);
  EXPECT_EQ(F32Min(0x80000000, 0x00000000), 0x80000000u);   // min(-0, +0) = -0
  EXPECT_EQ(F32Min(0x00000000, 0x80000000), 0x80000000u);
  EXPECT_EQ(F32Sub(0x3F800000, 0x3F800000), 0x00000000u);   // x - x = +0
  EXPECT_TRUE(F32Compare(0x80000000, 0x00000000, CmpDir::kEq));
  EXPECT_TRUE(F32Compare(0x00000001, 0x80000000, CmpDir::kEq));  // DAZ
  EXPECT_FALSE(F32Compare(kF32CanonicalNan, kF32CanonicalNan, CmpDir::kEq));
  EXPECT_TRUE(F32Compare(kF32CanonicalNan, 0, CmpDir::kNe));
  EXPECT_FALSE(F32Compare(0, 0, static_cast<CmpDir>(6)));
  EXPECT_TRUE(S32Compare(0xFFFFFFFFu, 0, CmpDir::kLt));
  EXPECT_EQ(F32ToS32(0xBFF00000), 0xFFFFFFFFu);              // -1.875 -> -1
  EXPECT_EQ(F32ToS32(kF32CanonicalNan), 0u);
  EXPECT_EQ(F32ToS32(0xFF800000), 0x80000000u);
  EXPECT_EQ(F32ToS32(0x4F000000), 0x7FFFFFFFu);              // 2^31 saturates
  EXPECT_EQ(S32ToF32(0x80000000u), 0xCF000000u);             // -2^31 exact
  EXPECT_EQ(S32ToF32(0x01000001u), 0x4B800000u);             // 2^24 + 1 ties to even
}

// Regression (tb/fuzz/program_fuzzer, VEXP of a tiny value): products far below 2^-126 made F32Mul
// shift a negative exponent left, undefined behaviour that UBSan reports. They flush to a signed zero.
TEST(VectorNumericsRules, MulFarBelowTheNormalRangeFlushesToSignedZero) {
  EXPECT_EQ(F32Mul(0x0D800000, 0x0D800000), 0x00000000u);  // 2^-100 * 2^-100
  EXPECT_EQ(F32Mul(0x8D800000, 0x0D800000), 0x80000000u);  // -2^-100 * 2^-100
  EXPECT_EQ(F32Mul(0x00800000, 0x00800000), 0x00000000u);  // 2^-126 * 2^-126: the smallest exponent sum
  EXPECT_EQ(F32Mul(0x00FFFFFF, 0x80FFFFFF), 0x80000000u);
}

TEST(VectorNumericsSpecials, AllPairs) {
  const std::vector<uint32_t> f32 = SpecialF32();
  Tally tally;
  for (uint32_t a : f32) {
    tally.Check("F32ToS32", [&] { return F32ToString(a); }, F32ToS32(a), ref::F32ToS32(a));
    for (uint32_t b : f32) {
      tally.Check("F32Mul", [&] { return Pair32(a, b); }, F32Mul(a, b), ref::Mul(a, b));
      tally.Check("F32Sub", [&] { return Pair32(a, b); }, F32Sub(a, b), ref::Sub(a, b));
      tally.Check("F32Min", [&] { return Pair32(a, b); }, F32Min(a, b), ref::Min(a, b));
      for (int dir = 0; dir < 8; ++dir) {
        tally.Check("F32Compare", [&] { return Pair32(a, b) + " dir " + std::to_string(dir); },
                    F32Compare(a, b, static_cast<CmpDir>(dir)), ref::Compare(a, b, dir));
      }
    }
  }
  EXPECT_EQ(tally.mismatches(), 0);
}

TEST(VectorNumericsRandom, MulSubMinCompare) {
  OperandGenerator gen(TestSeed(11));
  Tally tally;
  for (int i = 0; i < kRandomPairs / 4; ++i) {
    const auto pair = gen.F32AddPair();
    const uint32_t a = pair.first, b = pair.second;
    tally.Check("F32Sub", [&] { return Pair32(a, b); }, F32Sub(a, b), ref::Sub(a, b));
    tally.Check("F32Min", [&] { return Pair32(a, b); }, F32Min(a, b), ref::Min(a, b));
    const int dir = static_cast<int>(i % 6);
    tally.Check("F32Compare", [&] { return Pair32(a, b); }, F32Compare(a, b, static_cast<CmpDir>(dir)),
                ref::Compare(a, b, dir));
    // Products: random fp32 bit patterns, and pairs whose exponents sum near the FTZ/overflow edges.
    const uint32_t x = gen.random().Next32();
    const uint32_t y = (i & 1) ? gen.random().Next32()
                               : ((x ^ gen.random().Next32()) & 0x807FFFFFu) |
                                     (static_cast<uint32_t>((254 - ((x >> 23) & 0xFF) + gen.random().Range(-3, 3)) & 0xFF)
                                      << 23);
    tally.Check("F32Mul", [&] { return Pair32(x, y); }, F32Mul(x, y), ref::Mul(x, y));
    tally.Check("F32Mul", [&] { return Pair32(a, b); }, F32Mul(a, b), ref::Mul(a, b));
  }
  EXPECT_EQ(tally.mismatches(), 0);
}

TEST(VectorNumericsRandom, Conversions) {
  OperandGenerator gen(TestSeed(12));
  Tally tally;
  for (int i = 0; i < kRandomPairs / 4; ++i) {
    const uint32_t x = gen.random().Next32();
    const uint32_t small = x >> gen.random().Below(32);  // every magnitude class of s32
    tally.Check("S32ToF32", [&] { return std::to_string(static_cast<int32_t>(x)); }, S32ToF32(x), ref::S32ToF32(x));
    tally.Check("S32ToF32", [&] { return std::to_string(small); }, S32ToF32(small), ref::S32ToF32(small));
    const uint32_t f = (x & 0x807FFFFFu) | (static_cast<uint32_t>(gen.random().Range(100, 160)) << 23);
    tally.Check("F32ToS32", [&] { return F32ToString(f); }, F32ToS32(f), ref::F32ToS32(f));
    tally.Check("F32ToS32", [&] { return F32ToString(x); }, F32ToS32(x), ref::F32ToS32(x));
  }
  EXPECT_EQ(tally.mismatches(), 0);
}

TEST(NumericsRandom, F32ToBf16) {
  OperandGenerator gen(TestSeed(4));
  Tally tally;
  for (int i = 0; i < kRandomPairs; ++i) {
    const uint32_t x = gen.F32ForBf16();
    tally.Check("F32ToBf16", [&] { return F32ToString(x); }, F32ToBf16(x), ref::F32ToBf16(x), true);
  }
  EXPECT_EQ(tally.mismatches(), 0);
}

// Every bf16 value (all 65536) against every special bf16 and a sample of random ones: covers each
// exponent combination on both sides of the product's range.
TEST(NumericsExhaustive, Bf16MulAllLeftOperands) {
  std::vector<uint16_t> rights = SpecialBf16();
  testing::Random random(TestSeed(5));
  for (int i = 0; i < 64; ++i) rights.push_back(static_cast<uint16_t>(random.Next32()));
  Tally tally;
  for (uint16_t b : rights)
    for (uint32_t a = 0; a <= 0xFFFF; ++a) {
      const uint16_t a16 = static_cast<uint16_t>(a);
      tally.Check("Bf16Mul", [&] { return Pair16(a16, b); }, Bf16Mul(a16, b), ref::Bf16Mul(a16, b));
    }
  EXPECT_EQ(tally.mismatches(), 0);
}

TEST(NumericsExhaustive, Bf16ToF32AllValues) {
  Tally tally;
  for (uint32_t b = 0; b <= 0xFFFF; ++b) {
    const uint16_t b16 = static_cast<uint16_t>(b);
    tally.Check("Bf16ToF32", [&] { return Bf16ToString(b16); }, Bf16ToF32(b16), ref::Bf16ToF32(b16));
    // Round trip: a bf16 that is not NaN or subnormal survives fp32 and back unchanged.
    if (!IsBf16Nan(b16) && (b16 & 0x7F80u) != 0) {
      EXPECT_EQ(F32ToBf16(Bf16ToF32(b16)), b16);
    }
  }
  EXPECT_EQ(tally.mismatches(), 0);
}

// --- The MXU column sum. ---

// The column sum composed from the host reference: the fixed k order, starting at +0.
uint32_t ReferenceDot(const std::vector<uint16_t>& a, const std::vector<uint16_t>& w, int n, int col) {
  uint32_t acc = 0;
  for (int k = 0; k < n; ++k) acc = ref::Add(acc, ref::Bf16Mul(a[k], w[static_cast<size_t>(k) * n + col]));
  return acc;
}

TEST(MxuDot, MatchesReferenceInColumnOrder) {
  OperandGenerator gen(TestSeed(6));
  for (int n : {1, 2, 8, 33, 128}) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<uint16_t> a(n), w(static_cast<size_t>(n) * n);
      // Mostly ordinary magnitudes (so sums cancel and round), some specials.
      for (auto& v : a) v = trial % 4 == 0 ? gen.Bf16() : F32ToBf16(FloatBits(static_cast<float>(gen.random().Range(-1000, 1000)) / 7.0f));
      for (auto& v : w) v = trial % 4 == 1 ? gen.Bf16() : F32ToBf16(FloatBits(static_cast<float>(gen.random().Range(-1000, 1000)) / 3.0f));
      std::vector<uint32_t> out(n);
      MxuMatVec(a.data(), w.data(), n, out.data());
      for (int col = 0; col < n; ++col) {
        const uint32_t want = ReferenceDot(a, w, n, col);
        ASSERT_EQ(MxuDot(a.data(), w.data() + col, n, n), want) << "n=" << n << " col=" << col;
        ASSERT_EQ(out[col], want) << "MxuMatVec n=" << n << " col=" << col;
      }
    }
  }
}

// The fast host-FPU column sum against the integer definition, on data full of special values
// (NaN, inf, subnormal, huge and tiny magnitudes that overflow and flush inside the sum).
void ExpectFastPathMatchesPortable(uint64_t seed) {
  OperandGenerator gen(seed);
  for (int n : {3, 8, 64, 128}) {
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<uint16_t> a(n), w(static_cast<size_t>(n) * n);
      const uint32_t special_one_in = 2 + trial % 16;  // from dense specials to sparse ones
      // Exponent fields: around 1.0, or products near 2^-126 (flushes, tiny sums), or near 2^128.
      const int32_t center = trial % 3 == 0 ? 127 : trial % 3 == 1 ? 63 : 191;
      auto value = [&]() {
        if (gen.random().Below(special_one_in) == 0) return gen.Bf16();
        const uint32_t exponent = static_cast<uint32_t>(center + gen.random().Range(-4, 4));
        return static_cast<uint16_t>((gen.random().Below(2) << 15) | (exponent << 7) | gen.random().Below(128));
      };
      for (auto& v : a) v = value();
      for (auto& v : w) v = value();
      std::vector<uint32_t> out(n);
      MxuMatVec(a.data(), w.data(), n, out.data());
      for (int col = 0; col < n; ++col) {
        const uint32_t want = MxuDotPortable(a.data(), w.data() + col, n, n);
        ASSERT_EQ(MxuDot(a.data(), w.data() + col, n, n), want) << "n=" << n << " col=" << col << " trial=" << trial;
        ASSERT_EQ(out[col], want) << "MxuMatVec n=" << n << " col=" << col << " trial=" << trial;
      }
    }
  }
}

TEST(MxuDot, FastPathMatchesIntegerDefinition) { ExpectFastPathMatchesPortable(TestSeed(7)); }

// Under another host rounding mode the fast path must not be used: results stay those of RNE.
TEST(MxuDot, IndependentOfHostRoundingMode) {
  ASSERT_EQ(std::fesetround(FE_UPWARD), 0);
  ExpectFastPathMatchesPortable(TestSeed(8));
  const uint16_t a[2] = {0x3F80, 0x3F80};
  const uint16_t w[2] = {0x3F80, 0x3380};  // 1 + 2^-24: RNE keeps 1, upward rounding would not
  const uint32_t upward_result = MxuDot(a, w, 2, 1);
  ASSERT_EQ(std::fesetround(FE_TONEAREST), 0);
  EXPECT_EQ(upward_result, 0x3F800000u);
}

TEST(MxuDot, OrderIsFixedAndStartsAtPositiveZero) {
  // 2^100 + 1 - 2^100 in k order is 0 (the 1 is absorbed); any other order would give 1.
  const uint16_t a[3] = {0x3F80, 0x3F80, 0x3F80};
  const uint16_t w[3] = {0x7180, 0x3F80, 0xF180};
  EXPECT_EQ(MxuDot(a, w, 3, 1), 0x00000000u);
  const uint16_t w2[3] = {0x3F80, 0x7180, 0xF180};
  EXPECT_EQ(MxuDot(a, w2, 3, 1), 0x00000000u);
  const uint16_t w3[3] = {0x7180, 0xF180, 0x3F80};
  EXPECT_EQ(MxuDot(a, w3, 3, 1), 0x3F800000u);
  // Starting from +0: a sum of negative zeros is +0 ((+0) + (-0) = +0).
  const uint16_t neg[2] = {0x8000, 0x8000};
  EXPECT_EQ(MxuDot(a, neg, 2, 1), 0x00000000u);
  EXPECT_EQ(MxuDot(a, w, 0, 1), 0x00000000u);
  EXPECT_EQ(MxuDot(a, w, -3, 1), 0x00000000u);
}

}  // namespace
}  // namespace tpu::numerics
