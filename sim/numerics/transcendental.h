// tpusim numerics: the unary transcendentals of the vector unit (VEXP, VLOG, VRSQRT, VRCP).
//
// Each is defined as a fixed sequence of contract operations (F32Mul, F32Add, F32Sub, F32Min/Max,
// S32ToF32) and exact bit manipulations, so rtl/numerics/tpu_fp_pkg.sv (the same sequence) gives the
// same bits by construction. Special cases and the measured accuracy are in docs/numerics.md.
#ifndef TPUSIM_SIM_NUMERICS_TRANSCENDENTAL_H_
#define TPUSIM_SIM_NUMERICS_TRANSCENDENTAL_H_

#include <cstdint>

#include "sim/numerics/numerics.h"

namespace tpu::numerics {

namespace transcendental {
inline constexpr uint32_t kOne = 0x3F800000u, kTwo = 0x40000000u, kHalf = 0x3F000000u;
inline constexpr uint32_t kLog2e = 0x3FB8AA3Bu;
inline constexpr uint32_t kLn2Hi = 0x3F317200u;  // 15 significant bits: k * kLn2Hi is exact for |k| < 512
inline constexpr uint32_t kLn2Lo = 0x35BFBE8Eu;  // ln 2 - kLn2Hi
inline constexpr uint32_t kRoundMagic = 0x4B400000u;  // 1.5 * 2^23: adding it rounds to an integer
inline constexpr uint32_t kExpMax = 0x42B20000u;      // 89: e^89 overflows
inline constexpr uint32_t kExpMin = 0xC2D00000u;      // -104: e^-104 flushes
inline constexpr uint32_t kSqrt2Fraction = 0x3504F3u;  // fraction field of sqrt(2)
// 1/m at the middle of each eighth of [1, 2) (index: top three fraction bits).
inline constexpr uint32_t kRcpSeed[8] = {0x3F70F0F1u, 0x3F579436u, 0x3F430C31u, 0x3F321643u,
                                         0x3F23D70Au, 0x3F17B426u, 0x3F0D3DCBu, 0x3F042108u};
// 1/sqrt(m) at the middle of each eighth of [1, 2) (first 8) and of [2, 4) (last 8).
inline constexpr uint32_t kRsqrtSeed[16] = {0x3F785B42u, 0x3F6AEBF5u, 0x3F5F7483u, 0x3F5584CDu, 0x3F4CCCCDu, 0x3F4511A3u,
                                            0x3F3E26EBu, 0x3F37EA74u, 0x3F2F9D53u, 0x3F261D5Fu, 0x3F1E01B3u, 0x3F16FB06u,
                                            0x3F10D0C3u, 0x3F0B5948u, 0x3F067532u, 0x3F020C52u};
// e^r: 1/7!, 1/6!, ..., 1/2! (Horner, then + r + 1).
inline constexpr uint32_t kExpCoefficients[6] = {0x39500D01u, 0x3AB60B61u, 0x3C088889u,
                                                 0x3D2AAAABu, 0x3E2AAAABu, 0x3F000000u};
// log: 1/11, 1/9, ..., 1/3, 1 (series in s^2 of atanh).
inline constexpr uint32_t kLogCoefficients[6] = {0x3DBA2E8Cu, 0x3DE38E39u, 0x3E124925u,
                                                 0x3E4CCCCDu, 0x3EAAAAABu, 0x3F800000u};

// value * 2^shift for a positive normal value, exact, with FTZ below 2^-126 and infinity at the top.
inline uint32_t ScaleByPowerOfTwo(uint32_t value, int32_t shift, uint32_t sign) {
  const int32_t biased = static_cast<int32_t>((value >> 23) & 0xFFu) + shift;
  if (biased <= 0) return sign;
  if (biased >= 255) return sign | kF32Inf;
  return sign | (static_cast<uint32_t>(biased) << 23) | (value & kF32FractionMask);
}
}  // namespace transcendental

// 1/x: seed from the top fraction bits, three Newton steps r = r + r * (1 - m*r) on the significand m,
// exponent applied exactly. 1/(+-0) = +-inf, 1/(+-inf) = +-0, NaN -> NaN, |x| >= 2^126 flushes to +-0.
inline uint32_t F32Rcp(uint32_t x) {
  using namespace transcendental;
  const uint32_t sign = x & kF32SignMask;
  const uint32_t exponent = (x >> 23) & 0xFFu;
  if (IsF32Nan(x)) return kF32CanonicalNan;
  if (exponent == 0) return sign | kF32Inf;
  if (exponent == 0xFF) return sign;
  const uint32_t m = kOne | (x & kF32FractionMask);
  uint32_t r = kRcpSeed[(x >> 20) & 7u];
  for (int step = 0; step < 3; ++step) r = F32Add(r, F32Mul(r, F32Sub(kOne, F32Mul(m, r))));
  return ScaleByPowerOfTwo(r, 127 - static_cast<int32_t>(exponent), sign);
}

// 1/sqrt(x): x = m * 2^(2h) with m in [1, 4); seed from a table, three Newton steps
// r = r + r * (0.5 - (m/2) * r * r), then * 2^-h. rsqrt(+-0) = +-inf, rsqrt(+inf) = +0, negative -> NaN.
inline uint32_t F32Rsqrt(uint32_t x) {
  using namespace transcendental;
  const uint32_t exponent = (x >> 23) & 0xFFu;
  if (IsF32Nan(x)) return kF32CanonicalNan;
  if (exponent == 0) return (x & kF32SignMask) | kF32Inf;
  if (x & kF32SignMask) return kF32CanonicalNan;
  if (exponent == 0xFF) return 0;
  const int32_t unbiased = static_cast<int32_t>(exponent) - 127;
  const uint32_t odd = static_cast<uint32_t>(unbiased) & 1u;
  const int32_t half = (unbiased - static_cast<int32_t>(odd)) / 2;
  const uint32_t m = (odd ? kTwo : kOne) | (x & kF32FractionMask);
  const uint32_t half_m = F32Mul(m, kHalf);
  uint32_t r = kRsqrtSeed[odd * 8 + ((x >> 20) & 7u)];
  for (int step = 0; step < 3; ++step) r = F32Add(r, F32Mul(r, F32Sub(kHalf, F32Mul(F32Mul(r, r), half_m))));
  return ScaleByPowerOfTwo(r, -half, 0);
}

// e^x: x clamped to [-104, 89]; k = round(x * log2 e) (by adding 1.5 * 2^23); r = x - k ln2 in two
// parts (Cody-Waite); e^r by a degree-7 Taylor polynomial (Horner); times 2^k exactly.
// e^NaN = NaN, e^+inf = +inf, e^-inf = +0, overflow -> +inf, results below 2^-126 -> +0.
inline uint32_t F32Exp(uint32_t x) {
  using namespace transcendental;
  if (IsF32Nan(x)) return kF32CanonicalNan;
  const uint32_t clamped = F32Min(F32Max(x, kExpMin), kExpMax);
  const uint32_t shifted = F32Add(F32Mul(clamped, kLog2e), kRoundMagic);
  const int32_t k = static_cast<int32_t>(shifted - kRoundMagic);  // the integer, from the low fraction bits
  const uint32_t k_float = F32Sub(shifted, kRoundMagic);
  const uint32_t r = F32Sub(F32Sub(clamped, F32Mul(k_float, kLn2Hi)), F32Mul(k_float, kLn2Lo));
  uint32_t p = kExpCoefficients[0];
  for (int i = 1; i < 6; ++i) p = F32Add(F32Mul(p, r), kExpCoefficients[i]);
  p = F32Add(F32Mul(p, r), kOne);
  p = F32Add(F32Mul(p, r), kOne);
  return ScaleByPowerOfTwo(p, k, 0);
}

// ln x: x = m * 2^e with m in [sqrt(2)/2, sqrt(2)); f = m - 1 (exact); s = f * rcp(2 + f);
// ln m = 2s (1 + s^2/3 + ... + s^10/11); ln x = e ln2_hi + (e ln2_lo + ln m).
// ln(+-0) = -inf, ln(negative) = NaN, ln(+inf) = +inf, ln(NaN) = NaN, ln(1) = +0.
inline uint32_t F32Log(uint32_t x) {
  using namespace transcendental;
  const uint32_t exponent = (x >> 23) & 0xFFu;
  if (IsF32Nan(x)) return kF32CanonicalNan;
  if (exponent == 0) return kF32SignMask | kF32Inf;
  if (x & kF32SignMask) return kF32CanonicalNan;
  if (exponent == 0xFF) return kF32Inf;
  const uint32_t fraction = x & kF32FractionMask;
  const bool above_sqrt2 = fraction > kSqrt2Fraction;
  const int32_t e = static_cast<int32_t>(exponent) - 127 + (above_sqrt2 ? 1 : 0);
  const uint32_t m = (above_sqrt2 ? kHalf : kOne) | fraction;
  const uint32_t f = F32Sub(m, kOne);
  const uint32_t s = F32Mul(f, F32Rcp(F32Add(f, kTwo)));
  const uint32_t z = F32Mul(s, s);
  uint32_t q = kLogCoefficients[0];
  for (int i = 1; i < 6; ++i) q = F32Add(F32Mul(q, z), kLogCoefficients[i]);
  const uint32_t log_m = F32Mul(F32Add(s, s), q);
  const uint32_t e_float = S32ToF32(static_cast<uint32_t>(e));
  return F32Add(F32Mul(e_float, kLn2Hi), F32Add(F32Mul(e_float, kLn2Lo), log_m));
}

}  // namespace tpu::numerics

#endif  // TPUSIM_SIM_NUMERICS_TRANSCENDENTAL_H_
