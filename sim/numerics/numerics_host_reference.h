// Independent reference for the numerics library: the host FPU (IEEE 754, round to nearest even),
// with DAZ and FTZ emulated in software around it and NaN results canonicalized. Only for tests:
// it depends on the host's default rounding mode and is slower than the integer library.
#ifndef TPUSIM_SIM_NUMERICS_NUMERICS_HOST_REFERENCE_H_
#define TPUSIM_SIM_NUMERICS_NUMERICS_HOST_REFERENCE_H_

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tpu::numerics::host_reference {

inline float Float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// DAZ: a subnormal input reads as a zero of its sign.
inline float FlushIn(uint32_t bits) {
  return std::fpclassify(Float(bits)) == FP_SUBNORMAL ? Float(bits & 0x80000000u) : Float(bits);
}

// FTZ on a result, and every NaN becomes the canonical one.
inline uint32_t FlushOut(float value) {
  if (std::isnan(value)) return 0x7FC00000u;
  if (std::fpclassify(value) == FP_SUBNORMAL) return Bits(value) & 0x80000000u;
  return Bits(value);
}

inline uint32_t Add(uint32_t a, uint32_t b) {
  volatile float sum = FlushIn(a) + FlushIn(b);  // volatile: keep it a single fp32 operation
  return FlushOut(sum);
}

// The product is computed exactly in double and rounded once to float; a result in the
// subnormal range is then flushed.
inline uint32_t Bf16Mul(uint16_t a, uint16_t b) {
  const double product = static_cast<double>(FlushIn(static_cast<uint32_t>(a) << 16)) *
                         static_cast<double>(FlushIn(static_cast<uint32_t>(b) << 16));
  return FlushOut(static_cast<float>(product));
}

inline uint32_t Max(uint32_t a, uint32_t b) {
  const float x = FlushIn(a), y = FlushIn(b);
  if (std::isnan(x) || std::isnan(y)) return 0x7FC00000u;
  if (x > y) return Bits(x);
  if (y > x) return Bits(y);
  // Equal values: only zeros can differ in bits; the larger of -0 and +0 is +0.
  return (std::signbit(x) && std::signbit(y)) ? Bits(x) : Bits(std::fabs(x));
}

// Nearest bf16 by comparing distances in double (exact for these magnitudes), ties to the even
// candidate; rounding past the largest finite bf16 (to 2^128 with unbounded exponent) is infinity.
inline uint16_t F32ToBf16(uint32_t bits) {
  const float x = FlushIn(bits);
  if (std::isnan(x)) return 0x7FC0;
  if (std::isinf(x)) return static_cast<uint16_t>(Bits(x) >> 16);
  const uint32_t sign = Bits(x) & 0x80000000u;
  const double magnitude = std::fabs(static_cast<double>(x));
  const uint32_t below = (Bits(x) & 0x7FFF0000u);  // truncation: the candidate towards zero
  const double below_value = static_cast<double>(Float(below));
  if (magnitude == below_value) return static_cast<uint16_t>((sign | below) >> 16);
  const int exponent = static_cast<int>((below >> 23) & 0xFF);          // normal: x != 0 here
  const double above_value = below_value + std::ldexp(1.0, exponent - 127 - 7);  // + one bf16 ulp
  const double to_below = magnitude - below_value, to_above = above_value - magnitude;
  uint32_t chosen;
  if (to_below < to_above) {
    chosen = below;
  } else if (to_above < to_below) {
    chosen = below + 0x10000u;
  } else {
    chosen = ((below >> 16) & 1u) ? below + 0x10000u : below;
  }
  // below + one ulp past the largest finite bf16 is 0x7F800000: infinity, as intended.
  return static_cast<uint16_t>((sign | chosen) >> 16);
}

// The 24x24-bit product is exact in double. FTZ applies after rounding to 24 bits with an unbounded
// exponent, so a tiny product is scaled into the normal float range (exact, by 2^64) before the
// cast rounds it, compared with 2^-126 there and scaled back (exact again).
inline uint32_t Mul(uint32_t a, uint32_t b) {
  const double product = static_cast<double>(FlushIn(a)) * static_cast<double>(FlushIn(b));
  if (std::fabs(product) < 0x1p-100) {
    const float scaled = static_cast<float>(product * 0x1p64);
    if (std::fabs(scaled) < 0x1p-62f) return Bits(scaled) & 0x80000000u;
    return Bits(static_cast<float>(static_cast<double>(scaled) * 0x1p-64));
  }
  return FlushOut(static_cast<float>(product));
}

inline uint32_t Sub(uint32_t a, uint32_t b) {
  volatile float difference = FlushIn(a) - FlushIn(b);
  return FlushOut(difference);
}

inline uint32_t Min(uint32_t a, uint32_t b) {
  const float x = FlushIn(a), y = FlushIn(b);
  if (std::isnan(x) || std::isnan(y)) return 0x7FC00000u;
  if (x < y) return Bits(x);
  if (y < x) return Bits(y);
  return (std::signbit(x) || std::signbit(y)) ? (Bits(x) | 0x80000000u) : Bits(x);
}

// Directions as tpu::numerics::CmpDir: EQ, NE, LT, LE, GT, GE.
inline bool Compare(uint32_t a, uint32_t b, int dir) {
  const float x = FlushIn(a), y = FlushIn(b);
  switch (dir) {
    case 0: return x == y;
    case 1: return x != y;
    case 2: return x < y;
    case 3: return x <= y;
    case 4: return x > y;
    case 5: return x >= y;
    default: return false;
  }
}

inline uint32_t F32ToS32(uint32_t bits) {
  const double x = static_cast<double>(FlushIn(bits));
  if (std::isnan(x)) return 0;
  if (x >= 2147483647.0) return 0x7FFFFFFFu;
  if (x <= -2147483648.0) return 0x80000000u;
  return static_cast<uint32_t>(static_cast<int32_t>(std::trunc(x)));
}

inline uint32_t S32ToF32(uint32_t bits) {
  volatile float value = static_cast<float>(static_cast<int32_t>(bits));  // RNE in the default mode
  return Bits(value);
}

inline uint32_t Bf16ToF32(uint16_t b) {
  const float x = FlushIn(static_cast<uint32_t>(b) << 16);
  return std::isnan(x) ? 0x7FC00000u : Bits(x);
}

}  // namespace tpu::numerics::host_reference

#endif  // TPUSIM_SIM_NUMERICS_NUMERICS_HOST_REFERENCE_H_
