#include "sim/model/mxu_kernel.h"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace tpu::model {

static_assert(std::numeric_limits<float>::is_iec559, "the MXU kernel relies on IEEE 754 binary32 floats");
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "the MXU kernel needs float arithmetic evaluated in float (FLT_EVAL_METHOD == 0)"
#endif

namespace {

// FTZ: a finite value below 2^-126 in magnitude becomes a zero of its sign. Written as a select so that
// the loop below vectorizes.
inline float FlushToZero(float x) {
  return std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x;
}

}  // namespace

void MxuRowTimesWeights(const float* a, const float* w, uint32_t lanes, float* acc, uint32_t* out) {
  for (uint32_t n = 0; n < lanes; ++n) acc[n] = 0.0f;
  for (uint32_t k = 0; k < lanes; ++k) {
    const float a_k = a[k];
    const float* w_row = w + static_cast<size_t>(k) * lanes;
    for (uint32_t n = 0; n < lanes; ++n) {
      const float product = FlushToZero(a_k * w_row[n]);
      acc[n] = FlushToZero(acc[n] + product);
    }
  }
  for (uint32_t n = 0; n < lanes; ++n) {
    uint32_t bits;
    std::memcpy(&bits, &acc[n], sizeof bits);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) bits = 0x7FC00000u;  // canonical NaN
    out[n] = bits;
  }
}

}  // namespace tpu::model
