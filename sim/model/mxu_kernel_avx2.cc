// The AVX2 + FMA path of the MXU kernel (mxu_kernel.h). Compiled with -mavx2 -mfma and called only when
// the host has both (mxu_kernel.cc); nothing outside the anonymous namespace but the two entry points.
#include <immintrin.h>

#include "sim/model/mxu_kernel_body.h"

namespace tpu::model::mxu_internal {
namespace {

struct Avx2Ops {
  using Vec = __m256;
  static constexpr uint32_t kWidth = 8;
  // 16 ymm registers: 4 x 2 accumulators, 2 weight vectors, a broadcast and the flush constants.
  static constexpr uint32_t kRows = 4;
  static constexpr uint32_t kVecs = 2;
  static Vec Zero() { return _mm256_setzero_ps(); }
  static Vec Load(const float* p) { return _mm256_loadu_ps(p); }
  static Vec Broadcast(float x) { return _mm256_set1_ps(x); }
  static Vec Mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static Vec Add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static Vec MulAdd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  // Clears the magnitude bits of lanes below 2^-126 (NaN compares false and is kept).
  static Vec FlushToZero(Vec x) {
    const Vec magnitude = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF)));
    const Vec tiny = _mm256_cmp_ps(magnitude, _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
    return _mm256_xor_ps(x, _mm256_and_ps(tiny, magnitude));
  }
  static Vec LoadBits(const uint32_t* p) {
    return _mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static void StoreCanonical(uint32_t* p, Vec x) {
    const Vec nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    const Vec canonical = _mm256_blendv_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FC00000)), nan);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm256_castps_si256(canonical));
  }
};

}  // namespace

uint32_t RowsTimesWeightsAvx2(const RowsTimesWeightsArgs& args, uint32_t first_column) {
  return KernelLoops<Avx2Ops>::RowsTimesWeights(args, first_column);
}

size_t AccumulateAvx2(uint32_t* sums, const uint32_t* addends, size_t count) {
  return KernelLoops<Avx2Ops>::Accumulate(sums, addends, count);
}

}  // namespace tpu::model::mxu_internal
