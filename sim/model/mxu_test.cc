// The MXU of the reference model against a straightforward computation with tpu::numerics, written
// here independently of the model's vectorized kernel: inputs rounded with F32ToBf16, Bf16Mul products
// added with F32Add down each column in order k = 0..N-1, starting from +0.
#include <gtest/gtest.h>

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

// Operand pairs for one row x matrix product, from several regimes: moderate values, special classes,
// fully random bit patterns, and products whose exponents sit at the FTZ and overflow boundaries so that
// partial sums cancel into (and get flushed from) the subnormal range.
void MakeOperands(std::mt19937& rng, int regime, uint32_t n, std::vector<uint32_t>* a, std::vector<uint32_t>* w) {
  a->resize(n);
  w->resize(size_t{n} * n);
  for (uint32_t k = 0; k < n; ++k) {
    for (uint32_t col = 0; col <= n; ++col) {
      uint32_t* target = col == n ? &(*a)[k] : &(*w)[size_t{k} * n + col];
      switch (regime) {
        case 0: *target = MixedFloat(rng, 0.0); break;
        case 1: *target = MixedFloat(rng, 0.2); break;
        case 2: *target = rng(); break;
        case 3:  // a near 2^(e-127), w near 2^(128-e-127): products near 2^-126
          *target = col == n ? WithExponent(rng, 1 + static_cast<int>(rng() % 60))
                             : WithExponent(rng, 66 + static_cast<int>(rng() % 4) - 2);
          break;
        case 4:  // products near 2^128
          *target = col == n ? WithExponent(rng, 190 + static_cast<int>(rng() % 4))
                             : WithExponent(rng, 190 + static_cast<int>(rng() % 4));
          break;
        default:  // products near the FTZ boundary with partial sums of both signs
          *target = WithExponent(rng, 63 + static_cast<int>(rng() % 3));
          break;
      }
    }
  }
}

TEST(MxuKernelTest, MatchesNumericsOnEveryRegime) {
  std::mt19937 rng(7);
  for (uint32_t n : {8u, 16u, 128u}) {
    for (int regime = 0; regime < 6; ++regime) {
      for (int trial = 0; trial < (n == 128 ? 6 : 60); ++trial) {
        std::vector<uint32_t> a, w;
        MakeOperands(rng, regime, n, &a, &w);
        // The model feeds the kernel bf16 values as floats.
        std::vector<float> a_f(n), w_f(w.size()), scratch(n);
        for (uint32_t k = 0; k < n; ++k) {
          const uint32_t bits = uint32_t{num::F32ToBf16(a[k])} << 16;
          std::memcpy(&a_f[k], &bits, 4);
        }
        for (size_t i = 0; i < w.size(); ++i) {
          const uint32_t bits = uint32_t{num::F32ToBf16(w[i])} << 16;
          std::memcpy(&w_f[i], &bits, 4);
        }
        std::vector<uint32_t> out(n);
        MxuRowTimesWeights(a_f.data(), w_f.data(), n, scratch.data(), out.data());
        const std::vector<uint32_t> expected = ReferenceMatmul(a, w, n);
        for (uint32_t col = 0; col < n; ++col) {
          ASSERT_EQ(out[col], expected[col]) << "n=" << n << " regime=" << regime << " col=" << col
                                             << " got " << num::F32ToString(out[col]) << " want "
                                             << num::F32ToString(expected[col]);
        }
      }
    }
  }
}

class MxuTest : public ::testing::TestWithParam<std::tuple<const char*, MxuKernel>> {
 protected:
  void SetUp() override {
    StatusOr<ChipConfig> config = ChipConfig::Named(std::get<0>(GetParam()));
    ASSERT_TRUE(config.ok()) << config.status();
    model_ = std::make_unique<ChipModel>(*config);
    model_->set_mxu_kernel(std::get<1>(GetParam()));
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

INSTANTIATE_TEST_SUITE_P(ConfigsAndKernels, MxuTest,
                         ::testing::Combine(::testing::Values("tiny", "v2"),
                                            ::testing::Values(MxuKernel::kHostFloat, MxuKernel::kNumericsLibrary)));

}  // namespace
}  // namespace tpu::model
