// The AVX-512 path of the MXU kernel (mxu_kernel.h). Compiled with -mavx512f -mavx512dq and called only
// when the host has both (mxu_kernel.cc); nothing outside the anonymous namespace but the two entry points.
#include <immintrin.h>

#include "sim/model/mxu_kernel_body.h"

namespace tpu::model::mxu_internal {
namespace {

struct Avx512Ops {
  using Vec = __m512;
  static constexpr uint32_t kWidth = 16;
  // 32 zmm registers: 4 x 4 accumulators, 4 weight vectors and the broadcasts.
  static constexpr uint32_t kRows = 4;
  static constexpr uint32_t kVecs = 4;
  static Vec Zero() { return _mm512_setzero_ps(); }
  static Vec Load(const float* p) { return _mm512_loadu_ps(p); }
  static Vec Broadcast(float x) { return _mm512_set1_ps(x); }
  static Vec Mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static Vec Add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static Vec MulAdd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  // A value below 2^-126 is a subnormal (or already zero) here: keep only its sign bit.
  static Vec FlushToZero(Vec x) {
    constexpr int kSubnormal = 0x20;
    const __mmask16 tiny = _mm512_fpclass_ps_mask(x, kSubnormal);
    return _mm512_mask_and_ps(x, tiny, x, _mm512_castsi512_ps(_mm512_set1_epi32(INT32_MIN)));
  }
  static Vec LoadBits(const uint32_t* p) { return _mm512_castsi512_ps(_mm512_loadu_si512(p)); }
  static void StoreCanonical(uint32_t* p, Vec x) {
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const Vec canonical = _mm512_mask_mov_ps(x, nan, _mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000)));
    _mm512_storeu_si512(p, _mm512_castps_si512(canonical));
  }
};

}  // namespace

uint32_t RowsTimesWeightsAvx512(const RowsTimesWeightsArgs& args, uint32_t first_column) {
  return KernelLoops<Avx512Ops>::RowsTimesWeights(args, first_column);
}

size_t AccumulateAvx512(uint32_t* sums, const uint32_t* addends, size_t count) {
  return KernelLoops<Avx512Ops>::Accumulate(sums, addends, count);
}

}  // namespace tpu::model::mxu_internal
