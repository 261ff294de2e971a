// The portable path of the MXU kernel and the choice of instruction set (mxu_kernel.h).
#include "sim/model/mxu_kernel.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "sim/model/mxu_kernel_body.h"
#include "sim/numerics/numerics.h"

namespace tpu::model {

static_assert(std::numeric_limits<float>::is_iec559, "the MXU kernel relies on IEEE 754 binary32 floats");
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD != 0
#error "the MXU kernel needs float arithmetic evaluated in float (FLT_EVAL_METHOD == 0)"
#endif

namespace {

// Four floats in a GCC/Clang generic vector: SSE2 on x86-64, NEON on AArch64, scalar code elsewhere.
typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));

struct Portable4Ops {
  using Vec = Float4;
  static constexpr uint32_t kWidth = 4;
  // Sized for 16 SIMD registers: 4 x 2 accumulators, 2 weight vectors, a broadcast.
  static constexpr uint32_t kRows = 4;
  static constexpr uint32_t kVecs = 2;
  static Vec Zero() { return Vec{}; }
  static Vec Load(const float* p) {
    Vec v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  static Vec Broadcast(float x) { return Vec{x, x, x, x}; }
  static Vec Mul(Vec a, Vec b) { return a * b; }
  static Vec Add(Vec a, Vec b) { return a + b; }
  // Two roundings (-ffp-contract=off); where the fused path is used the product is exact, so this equals
  // an FMA (which the baseline x86-64 target does not have).
  static Vec MulAdd(Vec a, Vec b, Vec c) { return a * b + c; }
  // Clears the magnitude bits of lanes below 2^-126 (a NaN's magnitude is above and is kept).
  static Vec FlushToZero(Vec x) {
    Int4 bits;
    std::memcpy(&bits, &x, sizeof bits);
    const Int4 magnitude = bits & 0x7FFFFFFF;
    bits ^= magnitude & (magnitude < 0x00800000);
    std::memcpy(&x, &bits, sizeof x);
    return x;
  }
  static Vec LoadBits(const uint32_t* p) { return Load(reinterpret_cast<const float*>(p)); }
  static void StoreCanonical(uint32_t* p, Vec x) {
    Int4 bits;
    std::memcpy(&bits, &x, sizeof bits);
    const Int4 nan = (bits & 0x7FFFFFFF) > 0x7F800000;
    bits = (bits & ~nan) | (static_cast<int32_t>(tpu::numerics::kF32CanonicalNan) & nan);
    std::memcpy(p, &bits, sizeof bits);
  }
};

// One float at a time: the columns left over by every vector path (lanes need not be a multiple of 4).
struct ScalarOps {
  using Vec = float;
  static constexpr uint32_t kWidth = 1;
  static constexpr uint32_t kRows = 4;
  static constexpr uint32_t kVecs = 3;
  static Vec Zero() { return 0.0f; }
  static Vec Load(const float* p) { return *p; }
  static Vec Broadcast(float x) { return x; }
  static Vec Mul(Vec a, Vec b) { return a * b; }
  static Vec Add(Vec a, Vec b) { return a + b; }
  static Vec MulAdd(Vec a, Vec b, Vec c) { return a * b + c; }  // see Portable4Ops::MulAdd
  static Vec FlushToZero(Vec x) { return std::fabs(x) < FLT_MIN ? std::copysign(0.0f, x) : x; }
  static Vec LoadBits(const uint32_t* p) {
    Vec x;
    std::memcpy(&x, p, sizeof x);
    return x;
  }
  static void StoreCanonical(uint32_t* p, Vec x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof bits);
    *p = std::isnan(x) ? tpu::numerics::kF32CanonicalNan : bits;
  }
};

using Portable4Loops = mxu_internal::KernelLoops<Portable4Ops>;
using ScalarLoops = mxu_internal::KernelLoops<ScalarOps>;

#if defined(TPU_MXU_X86_KERNELS)
bool HostHas(MxuIsa isa) {
  __builtin_cpu_init();
  switch (isa) {
    case MxuIsa::kPortable: return true;
    case MxuIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case MxuIsa::kAvx512: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  }
  return false;
}
#else
bool HostHas(MxuIsa isa) { return isa == MxuIsa::kPortable; }
#endif

// An unavailable instruction set falls back to the widest available one (they are nested).
MxuIsa Usable(MxuIsa isa) { return std::min(isa, BestMxuIsa()); }

}  // namespace

const char* MxuIsaName(MxuIsa isa) {
  switch (isa) {
    case MxuIsa::kPortable: return "portable";
    case MxuIsa::kAvx2: return "avx2";
    case MxuIsa::kAvx512: return "avx512";
  }
  return "?";
}

bool MxuIsaAvailable(MxuIsa isa) {
  static const bool available[] = {HostHas(MxuIsa::kPortable), HostHas(MxuIsa::kAvx2), HostHas(MxuIsa::kAvx512)};
  return available[static_cast<int>(isa)];
}

MxuIsa BestMxuIsa() {
  static const MxuIsa best = MxuIsaAvailable(MxuIsa::kAvx512) ? MxuIsa::kAvx512
                             : MxuIsaAvailable(MxuIsa::kAvx2) ? MxuIsa::kAvx2
                                                              : MxuIsa::kPortable;
  return best;
}

MxuExponentRange MxuExponentRangeOf(const float* values, size_t count) {
  return ScalarLoops::ExponentRangeOf(values, count);
}

void MxuRowsTimesWeights(const float* a, uint32_t rows, const float* w, const MxuExponentRange& w_range,
                         uint32_t lanes, uint32_t* out, MxuIsa isa) {
  isa = Usable(isa);
  const mxu_internal::RowsTimesWeightsArgs args{a, rows, w, w_range, lanes, out};
  // Each path takes the whole vectors it can from the next column on; the narrower ones take the rest
  // (the portable paths always run: they cover whatever the x86 paths leave).
  uint32_t column = 0;
#if defined(TPU_MXU_X86_KERNELS)
  if (isa >= MxuIsa::kAvx512) column = mxu_internal::RowsTimesWeightsAvx512(args, column);
  if (isa >= MxuIsa::kAvx2) column = mxu_internal::RowsTimesWeightsAvx2(args, column);
#endif
  column = Portable4Loops::RowsTimesWeights(args, column);
  ScalarLoops::RowsTimesWeights(args, column);
}

void MxuRoundToBf16(const uint32_t* bits, size_t count, float* values) {
  for (size_t i = 0; i < count; ++i) {
    const uint32_t rounded = uint32_t{tpu::numerics::F32ToBf16(bits[i])} << 16;
    std::memcpy(&values[i], &rounded, sizeof rounded);
  }
}

void MxuAccumulate(uint32_t* sums, const uint32_t* addends, size_t count, MxuIsa isa) {
  isa = Usable(isa);
  size_t done = 0;
#if defined(TPU_MXU_X86_KERNELS)
  if (isa >= MxuIsa::kAvx512) done = mxu_internal::AccumulateAvx512(sums, addends, count);
  if (isa >= MxuIsa::kAvx2) done += mxu_internal::AccumulateAvx2(sums + done, addends + done, count - done);
#endif
  done += Portable4Loops::Accumulate(sums + done, addends + done, count - done);
  ScalarLoops::Accumulate(sums + done, addends + done, count - done);
}

}  // namespace tpu::model
