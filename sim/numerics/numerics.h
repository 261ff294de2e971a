// tpusim numerics: the fp32/bf16 operations of docs/numerics.md on raw bit patterns.
//
// Contract (shared bit-for-bit with rtl/numerics/tpu_fp_pkg.sv):
//   DAZ  - an input with exponent field 0 is read as a zero of the same sign;
//   FTZ  - a finite non-zero result below 2^-126 in magnitude becomes a zero of its sign;
//   RNE  - round to nearest, ties to even;
//   NaN  - every NaN result is the canonical quiet NaN (fp32 0x7FC00000, bf16 0x7FC0);
//   zero - x + (-x) = +0, (-0) + (-0) = -0, product sign = XOR of operand signs.
//
// The hot operations are inline here because the reference model calls them in its MXU inner loop.
// They are written in integers only (no host FPU), so the results do not depend on the host's
// rounding mode or its DAZ/FTZ flags, and the algorithm mirrors the RTL.
#ifndef TPUSIM_SIM_NUMERICS_NUMERICS_H_
#define TPUSIM_SIM_NUMERICS_NUMERICS_H_

#include <cstdint>
#include <cstring>
#include <string>

namespace tpu::numerics {

inline constexpr uint32_t kF32SignMask = 0x80000000u;
inline constexpr uint32_t kF32MagnitudeMask = 0x7FFFFFFFu;
inline constexpr uint32_t kF32FractionMask = 0x007FFFFFu;
inline constexpr uint32_t kF32Inf = 0x7F800000u;
inline constexpr uint32_t kF32CanonicalNan = 0x7FC00000u;
inline constexpr uint16_t kBf16SignMask = 0x8000u;
inline constexpr uint16_t kBf16Inf = 0x7F80u;
inline constexpr uint16_t kBf16CanonicalNan = 0x7FC0u;

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float BitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

inline bool IsF32Nan(uint32_t x) { return (x & kF32MagnitudeMask) > kF32Inf; }
inline bool IsBf16Nan(uint16_t b) { return (b & 0x7FFFu) > kBf16Inf; }

// fp32 -> bf16: NaN -> 0x7FC0; DAZ; RNE on the lower 16 bits (overflow carries into infinity).
inline uint16_t F32ToBf16(uint32_t x) {
  const uint32_t exponent = (x >> 23) & 0xFFu;
  if (exponent == 0) return static_cast<uint16_t>((x >> 16) & kBf16SignMask);
  if (IsF32Nan(x)) return kBf16CanonicalNan;
  // Adding 0x7FFF plus the kept LSB rounds half to even; cannot wrap since x <= 0xFF800000.
  return static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

// bf16 -> fp32: b << 16 with DAZ; a NaN becomes the canonical NaN like every other NaN result.
inline uint32_t Bf16ToF32(uint16_t b) {
  if ((b & kBf16Inf) == 0) return static_cast<uint32_t>(b & kBf16SignMask) << 16;
  if (IsBf16Nan(b)) return kF32CanonicalNan;
  return static_cast<uint32_t>(b) << 16;
}

// bf16 x bf16 -> fp32. The 8x8-bit significand product has at most 16 significant bits, so the
// result is exact whenever it is in the normal range: no rounding step exists. Below 2^-126 it
// flushes to a signed zero (it cannot round up to 2^-126: the gap is at least 2^-142), at or
// above 2^128 it is an infinity.
inline uint32_t Bf16Mul(uint16_t a, uint16_t b) {
  const uint32_t sign = static_cast<uint32_t>((a ^ b) & kBf16SignMask) << 16;
  const int32_t exp_a = (a >> 7) & 0xFF;
  const int32_t exp_b = (b >> 7) & 0xFF;
  if (exp_a == 0xFF || exp_b == 0xFF) {
    if (IsBf16Nan(a) || IsBf16Nan(b) || exp_a == 0 || exp_b == 0) return kF32CanonicalNan;  // inf * 0
    return sign | kF32Inf;
  }
  if (exp_a == 0 || exp_b == 0) return sign;  // DAZ: zero times finite
  const uint32_t product = ((a & 0x7Fu) | 0x80u) * ((b & 0x7Fu) | 0x80u);  // in [2^14, 2^16)
  const uint32_t carry = product >> 15;                                      // product >= 2^15
  const int32_t exponent = exp_a + exp_b - 127 + static_cast<int32_t>(carry);
  if (exponent <= 0) return sign;  // FTZ
  if (exponent >= 0xFF) return sign | kF32Inf;
  const uint32_t fraction = (product << (9 - carry)) & kF32FractionMask;
  return sign | (static_cast<uint32_t>(exponent) << 23) | fraction;
}

namespace internal {
// Infinity/NaN operands of F32Add (after DAZ). Out of line: rare.
uint32_t F32AddSpecial(uint32_t a, uint32_t b);
}  // namespace internal

// fp32 + fp32, exact sum rounded RNE, with DAZ/FTZ/NaN rules. Significands carry three extra bits
// (guard, round, sticky), which is enough for a correctly rounded sum; a result below 2^-126 is
// always exact (both inputs are multiples of 2^-149), so FTZ does not depend on rounding.
// Written with selects rather than branches where the data decides (signs, operand order), since
// those branches are unpredictable in a dot product.
inline uint32_t F32Add(uint32_t a, uint32_t b) {
  const uint32_t exp_a = (a >> 23) & 0xFFu;
  const uint32_t exp_b = (b >> 23) & 0xFFu;
  if (__builtin_expect(exp_a == 0xFF || exp_b == 0xFF, 0)) return internal::F32AddSpecial(a, b);
  a = exp_a ? a : (a & kF32SignMask);  // DAZ
  b = exp_b ? b : (b & kF32SignMask);
  const uint32_t mag_a = a & kF32MagnitudeMask;
  const uint32_t mag_b = b & kF32MagnitudeMask;
  const bool swap = mag_a < mag_b;  // order so that |big| >= |small|
  const uint32_t big = swap ? b : a;
  const uint32_t small = swap ? a : b;
  if (__builtin_expect((small & kF32MagnitudeMask) == 0, 0)) {
    return (big & kF32MagnitudeMask) == 0 ? (a & b) : big;  // -0 only when both are -0
  }
  const uint32_t exp_big = (big >> 23) & 0xFFu;
  const uint32_t sig_big = ((big & kF32FractionMask) | 0x00800000u) << 3;  // 1.f in bits [26:3]
  const uint32_t sig_small = ((small & kF32FractionMask) | 0x00800000u) << 3;
  uint32_t shift = exp_big - ((small >> 23) & 0xFFu);
  shift = shift > 27 ? 27 : shift;  // 27 or more: only the sticky bit remains
  const uint32_t lost = sig_small & ((1u << shift) - 1u);
  const uint32_t aligned = (sig_small >> shift) | (lost != 0);
  const uint32_t subtract = (a ^ b) >> 31;
  const uint32_t sig = sig_big + ((aligned ^ (0u - subtract)) + subtract);  // sig_big -/+ aligned
  if (__builtin_expect(sig == 0, 0)) return 0;  // x + (-x) = +0
  // Leading one at bit 27 (carry out of an addition): shift right keeping the sticky bit;
  // otherwise shift it left up to bit 26 (after cancellation).
  const int leading = __builtin_clz(sig) - 5;  // -1 .. 26
  const uint32_t norm = leading < 0 ? ((sig >> 1) | (sig & 1u)) : (sig << (leading < 0 ? 0 : leading));
  const int32_t exponent = static_cast<int32_t>(exp_big) - leading;
  const uint32_t sign = big & kF32SignMask;
  if (__builtin_expect(exponent <= 0, 0)) return sign;  // FTZ (the value is exact here)
  const uint32_t round_bits = norm & 7u;
  const uint32_t round_up = (round_bits > 4u) | ((round_bits == 4u) & ((norm >> 3) & 1u));
  // The hidden one at bit 23 of (norm >> 3) adds one to (exponent - 1); a rounding carry ripples
  // into the exponent, and an exponent of 255 means overflow to infinity.
  const uint32_t magnitude = (static_cast<uint32_t>(exponent - 1) << 23) + (norm >> 3) + round_up;
  return sign | (magnitude >= kF32Inf ? kF32Inf : magnitude);
}

// max(a, b): DAZ; NaN if either is NaN; max(-0, +0) = +0.
inline uint32_t F32Max(uint32_t a, uint32_t b) {
  if (((a >> 23) & 0xFFu) == 0) a &= kF32SignMask;
  if (((b >> 23) & 0xFFu) == 0) b &= kF32SignMask;
  if (IsF32Nan(a) || IsF32Nan(b)) return kF32CanonicalNan;
  // Map sign-magnitude to an unsigned total order in which -0 < +0.
  const uint32_t key_a = (a & kF32SignMask) ? ~a : (a | kF32SignMask);
  const uint32_t key_b = (b & kF32SignMask) ? ~b : (b | kF32SignMask);
  return key_a >= key_b ? a : b;
}

// min(a, b): DAZ; NaN if either is NaN; min(-0, +0) = -0.
inline uint32_t F32Min(uint32_t a, uint32_t b) {
  if (((a >> 23) & 0xFFu) == 0) a &= kF32SignMask;
  if (((b >> 23) & 0xFFu) == 0) b &= kF32SignMask;
  if (IsF32Nan(a) || IsF32Nan(b)) return kF32CanonicalNan;
  const uint32_t key_a = (a & kF32SignMask) ? ~a : (a | kF32SignMask);
  const uint32_t key_b = (b & kF32SignMask) ? ~b : (b | kF32SignMask);
  return key_a <= key_b ? a : b;
}

// a - b = a + (-b): flipping the sign of b is exact, also for NaN (it stays a NaN) and zeros.
inline uint32_t F32Sub(uint32_t a, uint32_t b) { return F32Add(a, b ^ kF32SignMask); }

// fp32 x fp32: DAZ; the exact 48-bit significand product rounded RNE to 24 bits; then FTZ (below
// 2^-126 after rounding, as if the exponent range were unbounded) and overflow to infinity.
inline uint32_t F32Mul(uint32_t a, uint32_t b) {
  const uint32_t sign = (a ^ b) & kF32SignMask;
  const int32_t exp_a = (a >> 23) & 0xFF;
  const int32_t exp_b = (b >> 23) & 0xFF;
  if (exp_a == 0xFF || exp_b == 0xFF) {
    if (IsF32Nan(a) || IsF32Nan(b) || exp_a == 0 || exp_b == 0) return kF32CanonicalNan;  // inf * 0
    return sign | kF32Inf;
  }
  if (exp_a == 0 || exp_b == 0) return sign;  // DAZ: zero times finite
  const uint64_t product = uint64_t{(a & kF32FractionMask) | 0x00800000u} * ((b & kF32FractionMask) | 0x00800000u);
  const uint32_t carry = static_cast<uint32_t>(product >> 47);  // product in [2^46, 2^48)
  // Keep 24 significant bits; the rest are round (top dropped bit) and sticky (any other).
  const uint32_t dropped_bits = 23 + carry;
  const uint64_t kept = product >> dropped_bits;
  const uint64_t rest = product & ((uint64_t{1} << dropped_bits) - 1);
  const uint64_t half = uint64_t{1} << (dropped_bits - 1);
  const uint64_t round_up = (rest > half) || (rest == half && (kept & 1));
  // Biased exponent before rounding; a rounding carry out of 24 bits ripples into it below.
  const int32_t exponent = exp_a + exp_b - 127 + static_cast<int32_t>(carry);
  // A multiplication, not a shift: the exponent is negative for products far below 2^-126 (FTZ), and a
  // left shift of a negative value is undefined in C++17 (found by tb/fuzz/program_fuzzer).
  const int64_t magnitude = int64_t{exponent - 1} * (int64_t{1} << 23) + static_cast<int64_t>(kept + round_up);
  if (magnitude < (int64_t{1} << 23)) return sign;  // FTZ: below 2^-126 after rounding
  if (magnitude >= kF32Inf) return sign | kF32Inf;
  return sign | static_cast<uint32_t>(magnitude);
}

// Comparison directions of VCMP (flag field DIR).
enum class CmpDir : uint32_t { kEq = 0, kNe = 1, kLt = 2, kLe = 3, kGt = 4, kGe = 5 };

// fp32 comparison: DAZ; -0 == +0; any NaN operand makes every direction false except NE.
// Directions 6 and 7 (not defined) compare false.
inline bool F32Compare(uint32_t a, uint32_t b, CmpDir dir) {
  if (((a >> 23) & 0xFFu) == 0) a &= kF32SignMask;
  if (((b >> 23) & 0xFFu) == 0) b &= kF32SignMask;
  if (IsF32Nan(a) || IsF32Nan(b)) return dir == CmpDir::kNe;
  if ((a & kF32MagnitudeMask) == 0) a = 0;  // -0 == +0
  if ((b & kF32MagnitudeMask) == 0) b = 0;
  const uint32_t key_a = (a & kF32SignMask) ? ~a : (a | kF32SignMask);
  const uint32_t key_b = (b & kF32SignMask) ? ~b : (b | kF32SignMask);
  switch (dir) {
    case CmpDir::kEq: return key_a == key_b;
    case CmpDir::kNe: return key_a != key_b;
    case CmpDir::kLt: return key_a < key_b;
    case CmpDir::kLe: return key_a <= key_b;
    case CmpDir::kGt: return key_a > key_b;
    case CmpDir::kGe: return key_a >= key_b;
  }
  return false;
}

// s32 comparison (two's complement), same directions.
inline bool S32Compare(uint32_t a, uint32_t b, CmpDir dir) {
  const int32_t x = static_cast<int32_t>(a);
  const int32_t y = static_cast<int32_t>(b);
  switch (dir) {
    case CmpDir::kEq: return x == y;
    case CmpDir::kNe: return x != y;
    case CmpDir::kLt: return x < y;
    case CmpDir::kLe: return x <= y;
    case CmpDir::kGt: return x > y;
    case CmpDir::kGe: return x >= y;
  }
  return false;
}

// fp32 -> s32: DAZ, truncate toward zero, saturate to [-2^31, 2^31 - 1] (infinities too), NaN -> 0.
inline uint32_t F32ToS32(uint32_t x) {
  const uint32_t exponent = (x >> 23) & 0xFFu;
  if (IsF32Nan(x)) return 0;
  const bool negative = (x & kF32SignMask) != 0;
  if (exponent < 127) return 0;                                   // |x| < 1 (and zeros)
  if (exponent >= 127 + 31) return negative ? 0x80000000u : 0x7FFFFFFFu;  // |x| >= 2^31
  const uint32_t significand = (x & kF32FractionMask) | 0x00800000u;
  const int32_t shift = static_cast<int32_t>(exponent) - 127 - 23;  // -23 .. 7
  const uint32_t magnitude = shift >= 0 ? significand << shift : significand >> -shift;
  return negative ? 0u - magnitude : magnitude;
}

// s32 -> fp32, rounded RNE (exact below 2^24 in magnitude).
inline uint32_t S32ToF32(uint32_t x) {
  if (x == 0) return 0;
  const uint32_t sign = x & kF32SignMask;
  const uint32_t magnitude = sign ? 0u - x : x;  // 2^31 for INT32_MIN, fine as unsigned
  const int top = 31 - __builtin_clz(magnitude);  // position of the leading one, 0 .. 31
  uint32_t kept;
  uint32_t round_up = 0;
  if (top <= 23) {
    kept = magnitude << (23 - top);
  } else {
    const int dropped = top - 23;
    kept = magnitude >> dropped;
    const uint32_t rest = magnitude & ((1u << dropped) - 1u);
    const uint32_t half = 1u << (dropped - 1);
    round_up = (rest > half) || (rest == half && (kept & 1u));
  }
  // kept has its leading one at bit 23; a rounding carry ripples into the exponent.
  return sign | ((static_cast<uint32_t>(top + 127 - 1) << 23) + kept + round_up);
}

// One MXU column as docs/isa.md `matvec` defines it: acc = +0, then for k = 0..n-1 in this order
// acc = F32Add(acc, Bf16Mul(a[k], w_column[k * stride])). n <= 0 gives +0.
// This is the definition, built from the integer operations above.
inline uint32_t MxuDotPortable(const uint16_t* a, const uint16_t* w_column, int n, int stride) {
  uint32_t acc = 0;
  for (int k = 0; k < n; ++k) acc = F32Add(acc, Bf16Mul(a[k], w_column[static_cast<long>(k) * stride]));
  return acc;
}

namespace internal {

// The host's IEEE binary32 arithmetic can run the MXU column sum about 3x faster than the integer
// code, with the same bits, when (1) float operations are evaluated in float (SSE, not x87) and
// (2) the host rounds to nearest even. Then: a bf16 x bf16 product is exact in fp32 or overflows
// to inf, or lands in the subnormal range, which we flush; a sum of two normal/zero fp32 values is
// the correctly rounded one, tiny sums are exact subnormals, which we flush with their sign; IEEE
// signed-zero rules are those of the contract; a NaN stays a NaN to the end, where it is made
// canonical. Host DAZ/FTZ flags (e.g. from -ffast-math) do not change any of this: no subnormal
// ever reaches the FPU and the flush it would do is the one done here. The rounding mode is
// checked at run time (HostRoundsToNearest) and the portable code runs otherwise.
#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ == 0
inline constexpr bool kHostFloatUsable = true;
#else
inline constexpr bool kHostFloatUsable = false;
#endif

bool HostRoundsToNearest();

inline uint32_t FlushSubnormal(uint32_t x) { return (x & kF32Inf) ? x : (x & kF32SignMask); }

// acc + a * w on the host FPU; acc must be a result of this function or +0. NaNs are not canonical.
inline uint32_t HostMac(uint32_t acc, uint16_t a, uint16_t w) {
  const float product = BitsFloat(FlushSubnormal(static_cast<uint32_t>(a) << 16)) *
                        BitsFloat(FlushSubnormal(static_cast<uint32_t>(w) << 16));
  const float sum = BitsFloat(acc) + BitsFloat(FlushSubnormal(FloatBits(product)));
  return FlushSubnormal(FloatBits(sum));
}

inline uint32_t CanonicalizeNan(uint32_t x) { return IsF32Nan(x) ? kF32CanonicalNan : x; }

}  // namespace internal

// Same result as MxuDotPortable, faster (see internal::HostMac).
inline uint32_t MxuDot(const uint16_t* a, const uint16_t* w_column, int n, int stride) {
  if (!internal::kHostFloatUsable || !internal::HostRoundsToNearest()) return MxuDotPortable(a, w_column, n, stride);
  uint32_t acc = 0;
  for (int k = 0; k < n; ++k) acc = internal::HostMac(acc, a[k], w_column[static_cast<long>(k) * stride]);
  return internal::CanonicalizeNan(acc);
}

// Whole matvec: out[col] = MxuDot(a, w + col, n, n) for col in 0..n-1, where w is row-major
// (w[k * n + col] = W[k][col]). Walks W row by row for locality; the per-column order is unchanged.
void MxuMatVec(const uint16_t* a, const uint16_t* w, int n, uint32_t* out);

// "0x3f800000 (1)" style text for test and scoreboard messages.
std::string F32ToString(uint32_t bits);
std::string Bf16ToString(uint16_t bits);

}  // namespace tpu::numerics

#endif  // TPUSIM_SIM_NUMERICS_NUMERICS_H_
