// The MXU of the reference model against a straightforward computation with tpu::numerics, written
// here independently of the model's vectorized kernel: inputs rounded with F32ToBf16, Bf16Mul products
// added with F32Add down each column in order k = 0..N-1, starting from +0. Every instruction set of the
// kernel is forced in turn (those this host lacks are skipped).
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>

#include "sim/model/chip_model.h"
#include "sim/model/model_test_util.h"
#include "sim/model/mxu_kernel.h"
#include "sim/numerics/numerics.h"

namespace tpu::model {
namespace {

using namespace tpu::model::testing;  // NOLINT: test helpers
namespace csr = tpu::csr;
namespace flag = tpu::isa::flag;
namespace num = tpu::numerics;

// rows x n LHS (fp32 bits) times the n x n matrix `w` (w[k * n + col], fp32 bits as stored in VMEM).
std::vector<uint32_t> ReferenceMatmul(const std::vector<uint32_t>& lhs, const std::vector<uint32_t>& w, uint32_t n) {
  const size_t rows = lhs.size() / n;
  std::vector<uint32_t> out(rows * n);
  for (size_t i = 0; i < rows; ++i) {
    for (uint32_t col = 0; col < n; ++col) {
      uint32_t acc = 0;  // +0
      for (uint32_t k = 0; k < n; ++k) {
        const uint16_t a = num::F32ToBf16(lhs[i * n + k]);
        const uint16_t b = num::F32ToBf16(w[k * n + col]);
        acc = num::F32Add(acc, num::Bf16Mul(a, b));
      }
      out[i * n + col] = acc;
    }
  }
  return out;
}

std::vector<uint32_t> Transposed(const std::vector<uint32_t>& w, uint32_t n) {
  std::vector<uint32_t> t(w.size());
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t col = 0; col < n; ++col) t[col * n + k] = w[k * n + col];
  }
  return t;
}

// A normal fp32 with a random significand and sign and the given biased exponent.
uint32_t WithExponent(std::mt19937& rng, int exponent) {
  exponent = std::min(254, std::max(1, exponent));
  return (rng() & 0x80000000u) | (static_cast<uint32_t>(exponent) << 23) | (rng() & 0x007FFFFFu);
}

// A normal fp32 with a random sign, the given biased exponent and one of four significands, exact in
// bf16: 1 + {0, 1, 2, 3} * 2^-7 (`fine`: products differ in their last bits, so sums often cancel exactly
// or nearly) or 1 + {0, 1, 2, 3} * 2^-2 (products of 2 and more, which overflow at the top exponents).
uint32_t FewSignificands(std::mt19937& rng, int exponent, bool fine = true) {
  return (rng() & 0x80000000u) | (static_cast<uint32_t>(exponent) << 23) | ((rng() & 3u) << (fine ? 16 : 21));
}

constexpr int kRegimes = 10;

// Operands of a rows x n times n x n product, from several regimes: moderate values, special classes,
// fully random bit patterns, products whose exponents sit at the FTZ and overflow boundaries so that
// partial sums cancel into (and get flushed from) the subnormal range, products at both edges of the
// kernel's fused path (mxu_kernel.h), typical training data and large cancellation. Regimes that depend on
// a per-row choice mix rows on both sides of a boundary within one call.
void MakeOperands(std::mt19937& rng, int regime, uint32_t rows, uint32_t n, std::vector<uint32_t>* lhs,
                  std::vector<uint32_t>* w) {
  lhs->resize(size_t{rows} * n);
  w->resize(size_t{n} * n);
  std::normal_distribution<float> small_weight(0.0f, 0.05f);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  for (size_t i = 0; i < w->size(); ++i) {
    uint32_t& value = (*w)[i];
    switch (regime) {
      case 0: value = MixedFloat(rng, 0.0); break;
      case 1: value = MixedFloat(rng, 0.2); break;
      case 2: value = rng(); break;
      case 3: value = WithExponent(rng, 66 + static_cast<int>(rng() % 4) - 2); break;
      case 4: value = WithExponent(rng, 190 + static_cast<int>(rng() % 4)); break;
      case 5: value = WithExponent(rng, 63 + static_cast<int>(rng() % 3)); break;
      case 6: value = FewSignificands(rng, 70 + static_cast<int>(rng() % 2)); break;   // smallest exponent 70
      case 7: value = FewSignificands(rng, 189 + static_cast<int>(rng() % 2), false); break;  // largest 190
      case 8: value = F32(small_weight(rng)); break;
      default: {  // row 2j + 1 is minus row 2j, or nearly (last significant bf16 bit)
        const size_t k = i / n;
        value = k % 2 == 0 ? F32(unit(rng) * 1e20f) : (*w)[i - n] ^ 0x80000000u ^ ((rng() & 1u) << 16);
        break;
      }
    }
  }
  for (uint32_t row = 0; row < rows; ++row) {
    const int side = static_cast<int>(rng() % 2);  // which side of a boundary this row is on
    for (uint32_t k = 0; k < n; ++k) {
      uint32_t& value = (*lhs)[size_t{row} * n + k];
      switch (regime) {
        case 0: value = MixedFloat(rng, 0.0); break;
        case 1: value = MixedFloat(rng, 0.2); break;
        case 2: value = rng(); break;
        case 3: value = WithExponent(rng, 1 + static_cast<int>(rng() % 60)); break;  // products near 2^-126
        case 4: value = WithExponent(rng, 190 + static_cast<int>(rng() % 4)); break;  // products near 2^128
        case 5: value = WithExponent(rng, 63 + static_cast<int>(rng() % 3)); break;   // both signs near FTZ
        // Exponent sums of 141 (side 0: exact path, partial sums reach 2^-127 and flush) or 142 (side 1:
        // fused path, partial sums are multiples of 2^-126).
        case 6: value = FewSignificands(rng, 71 + side + static_cast<int>(rng() % 2)); break;
        // Largest exponent sums of 381 (side 0: exact path, products overflow) or 380 (side 1: fused path).
        case 7: value = FewSignificands(rng, 191 - side - static_cast<int>(rng() % 2), false); break;
        case 8: value = F32(unit(rng)); break;
        default: value = k % 2 == 0 ? F32(unit(rng)) : (*lhs)[size_t{row} * n + k - 1]; break;
      }
    }
  }
}

// The kernel's inputs: bf16 values as floats.
std::vector<float> Bf16Floats(const std::vector<uint32_t>& words) {
  std::vector<float> values(words.size());
  for (size_t i = 0; i < words.size(); ++i) {
    const uint32_t bits = uint32_t{num::F32ToBf16(words[i])} << 16;
    std::memcpy(&values[i], &bits, 4);
  }
  return values;
}

std::vector<uint32_t> KernelMatmul(const std::vector<uint32_t>& lhs, const std::vector<uint32_t>& w, uint32_t n,
                                   MxuIsa isa) {
  const uint32_t rows = static_cast<uint32_t>(lhs.size() / n);
  const std::vector<float> a = Bf16Floats(lhs), weights = Bf16Floats(w);
  std::vector<uint32_t> out(lhs.size(), 0xDEADBEEFu);
  MxuRowsTimesWeights(a.data(), rows, weights.data(), MxuExponentRangeOf(weights.data(), weights.size()), n,
                      out.data(), isa);
  return out;
}

std::string IsaName(const ::testing::TestParamInfo<MxuIsa>& info) { return MxuIsaName(info.param); }

// Every instruction set of the host-float kernel, forced, against tpu::numerics.
class MxuKernelTest : public ::testing::TestWithParam<MxuIsa> {
 protected:
  void SetUp() override {
    if (!MxuIsaAvailable(GetParam())) GTEST_SKIP() << MxuIsaName(GetParam()) << " is not available on this host";
  }
  MxuIsa isa() const { return GetParam(); }

  // lhs (rows x n) times w through the kernel, compared element by element with ReferenceMatmul.
  void ExpectMatchesNumerics(const std::vector<uint32_t>& lhs, const std::vector<uint32_t>& w, uint32_t n,
                             const std::string& what) {
    const std::vector<uint32_t> out = KernelMatmul(lhs, w, n, isa());
    const std::vector<uint32_t> expected = ReferenceMatmul(lhs, w, n);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out[i], expected[i]) << what << " n=" << n << " row=" << i / n << " col=" << i % n << " got "
                                     << num::F32ToString(out[i]) << " want " << num::F32ToString(expected[i]);
    }
  }
};

TEST_P(MxuKernelTest, MatchesNumericsOnEveryRegime) {
  std::mt19937 rng(7);
  // Lane counts cover whole register blocks, shorter last blocks and columns left to narrower paths
  // (16 floats per AVX-512 vector, 8 per AVX2 vector); row counts cover blocks and remainders.
  const uint32_t row_counts[] = {1, 4, 5, 3, 13, 2, 8, 7, 9};
  for (uint32_t n : {1u, 5u, 8u, 16u, 24u, 40u, 100u, 128u}) {
    for (int regime = 0; regime < kRegimes; ++regime) {
      for (int trial = 0; trial < (n >= 100 ? 3 : 12); ++trial) {
        const uint32_t rows = row_counts[(trial + regime) % std::size(row_counts)];
        std::vector<uint32_t> lhs, w;
        MakeOperands(rng, regime, rows, n, &lhs, &w);
        ExpectMatchesNumerics(lhs, w, n, "regime " + std::to_string(regime) + " rows " + std::to_string(rows));
      }
    }
  }
}

// One row whose products in every column are a[k] * w[k] for the given pairs, then (-0) * (+0) = -0,
// which leaves every sum unchanged, also a zero's sign.
void OneColumn(const std::vector<std::pair<float, float>>& pairs, uint32_t n, std::vector<uint32_t>* lhs,
               std::vector<uint32_t>* w) {
  lhs->assign(n, 0x80000000u);
  w->assign(size_t{n} * n, 0);
  for (size_t k = 0; k < pairs.size(); ++k) {
    (*lhs)[k] = F32(pairs[k].first);
    for (uint32_t col = 0; col < n; ++col) (*w)[k * n + col] = F32(pairs[k].second);
  }
}

TEST_P(MxuKernelTest, FlushesAndOverflowsAtTheBoundaries) {
  struct Case {
    const char* what;
    std::vector<std::pair<float, float>> pairs;
    uint32_t expected;
  };
  const Case cases[] = {
      // 2^-126 + 2^-127: the product 2^-127 is flushed before the add (unflushed: 1.5 * 2^-126).
      {"tiny product", {{0x1p-63f, 0x1p-63f}, {0x1p-64f, 0x1p-63f}}, 0x00800000u},
      // 1.5 * 2^-126 - 2^-126 = 2^-127 is flushed to a zero with the sign of the larger input.
      {"tiny sum", {{0x1.8p-63f, 0x1p-63f}, {-0x1p-63f, 0x1p-63f}}, 0x00000000u},
      {"tiny negative sum", {{-0x1.8p-63f, 0x1p-63f}, {0x1p-63f, 0x1p-63f}}, 0x80000000u},
      // -1.5 * 2^127 + 1.125 * 2^128 (exponent sums of 381): the product overflows to inf before the add
      // (a single rounding would give 1.5 * 2^126).
      {"overflowing product", {{-0x1.8p63f, 0x1p64f}, {0x1.8p63f, 0x1.8p64f}}, 0x7F800000u},
      // Exponent sums of 142 (the fused path): 129 * 129 - 128 * 130 = 1, so the sum is exactly 2^-126.
      {"fused path, sum 2^-126", {{0x1.02p-56f, 0x1.02p-56f}, {-0x1p-56f, 0x1.04p-56f}}, 0x00800000u},
      // The same with exponent sums of 141: 2^-127, flushed.
      {"exact path, sum 2^-127", {{0x1.02p-57f, 0x1.02p-56f}, {-0x1p-57f, 0x1.04p-56f}}, 0x00000000u},
      {"x + (-x) = +0", {{-1.0f, 3.0f}, {1.0f, 3.0f}}, 0x00000000u},
      {"the sum starts at +0: (+0) + (-0) = +0", {{-0.0f, 1.0f}, {-1.0f, 0.0f}}, 0x00000000u},
      {"inf * 0", {{1.0f, 1.0f}, {INFINITY, 0.0f}}, num::kF32CanonicalNan},
      {"inf - inf", {{INFINITY, 1.0f}, {-INFINITY, 1.0f}}, num::kF32CanonicalNan},
  };
  for (uint32_t n : {8u, 16u, 40u, 128u}) {
    for (const Case& c : cases) {
      std::vector<uint32_t> lhs, w;
      OneColumn(c.pairs, n, &lhs, &w);
      const std::vector<uint32_t> out = KernelMatmul(lhs, w, n, isa());
      for (uint32_t col = 0; col < n; ++col) {
        ASSERT_EQ(out[col], c.expected) << c.what << " n=" << n << " col=" << col << " got "
                                        << num::F32ToString(out[col]);
      }
      ExpectMatchesNumerics(lhs, w, n, c.what);
    }
  }
}

TEST_P(MxuKernelTest, AccumulateMatchesF32Add) {
  std::mt19937 rng(3);
  std::vector<uint32_t> values = SpecialFloats();
  for (uint32_t extra : {0x00C00000u, 0x80C00000u, 0x00800001u, 0x80800001u, 0x3F800001u, 0x33800000u,
                         0xB3800000u, 0x33C00000u, 0x7F7FFFFEu, 0x73800000u, 0xFFFFFFFFu, 0x00000002u}) {
    values.push_back(extra);
  }
  std::vector<uint32_t> sums, addends;
  for (uint32_t a : values) {
    for (uint32_t b : values) {
      sums.push_back(a);
      addends.push_back(b);
    }
  }
  for (int i = 0; i < 20000; ++i) {
    const uint32_t a = i % 3 == 0 ? rng() : MixedFloat(rng, 0.1);
    uint32_t b = i % 3 == 0 ? rng() : MixedFloat(rng, 0.1);
    if (i % 4 == 1) b = a ^ 0x80000000u ^ (rng() & 0xFu);  // cancellation, into the subnormal range too
    if (i % 4 == 2) b = WithExponent(rng, static_cast<int>((a >> 23) & 0xFFu) - static_cast<int>(rng() % 30));
    sums.push_back(a);
    addends.push_back(b);
  }
  sums.push_back(0x3F800000u);  // an odd count leaves a tail on every path
  addends.push_back(0x33800000u);
  std::vector<uint32_t> expected(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) expected[i] = num::F32Add(sums[i], addends[i]);
  // The whole array, then short arrays at every offset (tails of each width).
  std::vector<uint32_t> out = sums;
  MxuAccumulate(out.data(), addends.data(), out.size(), isa());
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i], expected[i]) << num::F32ToString(sums[i]) << " + " << num::F32ToString(addends[i]) << " got "
                                   << num::F32ToString(out[i]);
  }
  for (size_t count = 1; count <= 40; ++count) {
    out = sums;
    MxuAccumulate(out.data() + count, addends.data() + count, count, isa());
    for (size_t i = 0; i < out.size(); ++i) {
      const bool summed = i >= count && i < 2 * count;
      ASSERT_EQ(out[i], summed ? expected[i] : sums[i]) << "count " << count << " element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, MxuKernelTest,
                         ::testing::Values(MxuIsa::kPortable, MxuIsa::kAvx2, MxuIsa::kAvx512), IsaName);

TEST(MxuKernelHelpersTest, RoundToBf16MatchesF32ToBf16) {
  std::mt19937 rng(5);
  std::vector<uint32_t> bits = SpecialFloats();
  for (int i = 0; i < 10000; ++i) bits.push_back(rng());
  std::vector<float> values(bits.size());
  MxuRoundToBf16(bits.data(), bits.size(), values.data());
  for (size_t i = 0; i < bits.size(); ++i) {
    ASSERT_EQ(F32(values[i]), uint32_t{num::F32ToBf16(bits[i])} << 16) << num::F32ToString(bits[i]);
  }
}

TEST(MxuKernelHelpersTest, ExponentRange) {
  const float values[] = {0.0f, -0.0f, 0x1p-100f, -3.0f, 0x1p100f};
  const MxuExponentRange range = MxuExponentRangeOf(values, std::size(values));
  EXPECT_EQ(range.min_nonzero, 27u);
  EXPECT_EQ(range.max, 227u);
  const MxuExponentRange zeros = MxuExponentRangeOf(values, 2);
  EXPECT_EQ(zeros.min_nonzero, 255u);
  EXPECT_EQ(zeros.max, 0u);
  EXPECT_EQ(MxuExponentRangeOf(&values[0], 0).min_nonzero, 255u);
  EXPECT_TRUE(MxuIsaAvailable(MxuIsa::kPortable));
  EXPECT_TRUE(MxuIsaAvailable(BestMxuIsa()));
}

// How the chip-level tests run MXU_MM: the numerics library, or the host-float kernel on one instruction set.
struct MxuPath {
  MxuKernel kernel;
  MxuIsa isa;
};

std::ostream& operator<<(std::ostream& os, const MxuPath& path) {
  return os << (path.kernel == MxuKernel::kNumericsLibrary ? "numerics" : MxuIsaName(path.isa));
}

constexpr MxuPath kMxuPaths[] = {{MxuKernel::kNumericsLibrary, MxuIsa::kPortable},
                                 {MxuKernel::kHostFloat, MxuIsa::kPortable},
                                 {MxuKernel::kHostFloat, MxuIsa::kAvx2},
                                 {MxuKernel::kHostFloat, MxuIsa::kAvx512}};

class MxuTest : public ::testing::TestWithParam<std::tuple<const char*, MxuPath>> {
 protected:
  void SetUp() override {
    const MxuPath path = std::get<1>(GetParam());
    if (!MxuIsaAvailable(path.isa)) GTEST_SKIP() << MxuIsaName(path.isa) << " is not available on this host";
    StatusOr<ChipConfig> config = ChipConfig::Named(std::get<0>(GetParam()));
    ASSERT_TRUE(config.ok()) << config.status();
    model_ = std::make_unique<ChipModel>(*config);
    model_->set_mxu_kernel(path.kernel);
    model_->set_mxu_isa(path.isa);
    n_ = config->lanes;
  }
  std::unique_ptr<ChipModel> model_;
  uint32_t n_ = 0;
};

TEST_P(MxuTest, LoadWeightsMatmulAccumulateTranspose) {
  std::mt19937 rng(11);
  const uint32_t rows = 2 * n_ + 3;
  std::vector<uint32_t> w(size_t{n_} * n_), lhs(size_t{rows} * n_), old(size_t{rows} * n_);
  for (uint32_t& v : w) v = MixedFloat(rng, 0.05);
  for (uint32_t& v : lhs) v = MixedFloat(rng, 0.05);
  for (uint32_t& v : old) v = MixedFloat(rng, 0.05);
  const uint32_t kW = 0, kLhs = n_, kOut = n_ + rows, kAcc = n_ + 2 * rows, kTr = n_ + 3 * rows;
  WriteVmemWords(*model_, kW, w);
  WriteVmemWords(*model_, kLhs, lhs);
  WriteVmemWords(*model_, kAcc, old);
  ASSERT_EQ(RunProgram(*model_, {
                Li(1, kW), Li(2, kLhs), Li(3, rows), Li(4, kOut), Li(5, kAcc), Li(6, kTr),
                MxuLw(1),                         // back = W
                MxuMm(2, 4, 3, flag::MXU_MM_SWAP),  // front = W; out = lhs x W
                MxuMm(2, 5, 3, flag::MXU_MM_ACC),   // acc = old + lhs x W
                MxuLw(1, flag::MXU_LW_TRANSPOSE),   // back = W^T
                MxuMm(2, 6, 3, flag::MXU_MM_SWAP),  // out = lhs x W^T
                Sync(), Halt()}),
            csr::STATUS_HALTED);
  const std::vector<uint32_t> expected = ReferenceMatmul(lhs, w, n_);
  const std::vector<uint32_t> expected_tr = ReferenceMatmul(lhs, Transposed(w, n_), n_);
  const std::vector<uint32_t> out = ReadVmemWords(*model_, kOut, rows);
  const std::vector<uint32_t> acc = ReadVmemWords(*model_, kAcc, rows);
  const std::vector<uint32_t> tr = ReadVmemWords(*model_, kTr, rows);
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(out[i], expected[i]) << "element " << i;
    ASSERT_EQ(acc[i], num::F32Add(old[i], expected[i])) << "element " << i << ": ACC is add(old, r)";
    ASSERT_EQ(tr[i], expected_tr[i]) << "element " << i;
  }
  EXPECT_EQ(model_->MmioRead(csr::MXU_BUSY_LO), 3 * rows);
}

TEST_P(MxuTest, DoubleBufferingKeepsTheFrontWhileLoadingTheBack) {
  std::mt19937 rng(12);
  const uint32_t rows = 5;
  std::vector<uint32_t> wa = RandomFloats(rng, size_t{n_} * n_), wb = RandomFloats(rng, size_t{n_} * n_);
  std::vector<uint32_t> lhs = RandomFloats(rng, size_t{rows} * n_);
  const uint32_t kA = 0, kB = n_, kLhs = 2 * n_, kOut1 = 3 * n_, kOut2 = kOut1 + rows, kOut3 = kOut2 + rows;
  WriteVmemWords(*model_, kA, wa);
  WriteVmemWords(*model_, kB, wb);
  WriteVmemWords(*model_, kLhs, lhs);
  ASSERT_EQ(RunProgram(*model_, {
                Li(1, kA), Li(2, kB), Li(3, rows), Li(4, kLhs), Li(5, kOut1), Li(6, kOut2), Li(7, kOut3),
                Li(8, 0),
                MxuLw(1),
                MxuMm(4, 0, 8, flag::MXU_MM_SWAP),  // count 0: only the swap (front = A)
                MxuLw(2),                           // back = B, front still A
                MxuMm(4, 5, 3),                     // lhs x A
                MxuMm(4, 6, 3, flag::MXU_MM_SWAP),  // lhs x B (front = B, back = A)
                MxuMm(4, 7, 3, flag::MXU_MM_SWAP),  // lhs x A again
                Halt()}),
            csr::STATUS_HALTED);
  EXPECT_EQ(ReadVmemWords(*model_, kOut1, rows), ReferenceMatmul(lhs, wa, n_));
  EXPECT_EQ(ReadVmemWords(*model_, kOut2, rows), ReferenceMatmul(lhs, wb, n_));
  EXPECT_EQ(ReadVmemWords(*model_, kOut3, rows), ReferenceMatmul(lhs, wa, n_));
}

// MXU_MM runs the host-float kernel on chunks of rows, each read before it is written: when the results
// overwrite LHS lines that later rows read, the bytes must still be those of row-by-row execution (the
// numerics library path runs row by row).
TEST_P(MxuTest, ResultsOverwritingLaterLhsRowsKeepRowOrder) {
  std::mt19937 rng(13);
  const uint32_t rows = 300, kW = 0, kLhs = n_;
  const std::vector<uint32_t> w = RandomFloats(rng, size_t{n_} * n_, 1.0f);
  const std::vector<uint32_t> lines = RandomFloats(rng, size_t{rows + 8} * n_, 1.0f);
  for (uint32_t distance : {0u, 1u, 3u, 8u}) {
    for (uint8_t flags : {uint8_t{0}, uint8_t{flag::MXU_MM_ACC}}) {
      std::vector<uint32_t> results[2];
      for (int reference = 0; reference < 2; ++reference) {
        ChipModel model(model_->config());
        if (reference == 0) {
          model.set_mxu_kernel(std::get<1>(GetParam()).kernel);
          model.set_mxu_isa(std::get<1>(GetParam()).isa);
        } else {
          model.set_mxu_kernel(MxuKernel::kNumericsLibrary);
        }
        WriteVmemWords(model, kW, w);
        WriteVmemWords(model, kLhs, lines);
        ASSERT_EQ(RunProgram(model, {Li(1, kW), Li(2, kLhs), Li(3, kLhs + distance), Li(4, rows), MxuLw(1),
                                     MxuMm(2, 3, 4, static_cast<uint8_t>(flag::MXU_MM_SWAP | flags)), Sync(),
                                     Halt()}),
                  csr::STATUS_HALTED);
        results[reference] = ReadVmemWords(model, kLhs, rows + 8);
      }
      ASSERT_EQ(results[0], results[1]) << "distance " << distance << " flags " << int{flags};
    }
  }
}

std::string ConfigAndPathName(const ::testing::TestParamInfo<std::tuple<const char*, MxuPath>>& info) {
  std::ostringstream name;
  name << std::get<0>(info.param) << "_" << std::get<1>(info.param);
  return name.str();
}

INSTANTIATE_TEST_SUITE_P(ConfigsAndKernels, MxuTest,
                         ::testing::Combine(::testing::Values("tiny", "v2"), ::testing::ValuesIn(kMxuPaths)),
                         ConfigAndPathName);

}  // namespace
}  // namespace tpu::model
