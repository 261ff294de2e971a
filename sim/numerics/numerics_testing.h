// Operand sources for numerics tests: every special class of docs/numerics.md, and random operands
// biased towards the cases that break floating-point units (cancellation, far-apart exponents,
// overflow/underflow boundaries, rounding ties), not only uniform bit patterns.
// Shared by sim/numerics tests and the verilated benches in tb/numerics.
#ifndef TPUSIM_SIM_NUMERICS_NUMERICS_TESTING_H_
#define TPUSIM_SIM_NUMERICS_NUMERICS_TESTING_H_

#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

namespace tpu::numerics::testing {

// Both signs of every fp32 special class: zeros, subnormals, min/max normal and neighbours,
// infinities, quiet and signalling NaNs with payloads, bf16 rounding ties (odd and even),
// values that round to bf16 infinity, and ordinary values for cancellation with each other.
inline std::vector<uint32_t> SpecialF32() {
  const uint32_t magnitudes[] = {
      0x00000000, 0x00000001, 0x00000002, 0x00400000, 0x007FFFFF,  // zero, subnormals
      0x00800000, 0x00800001, 0x00FFFFFF, 0x01000000, 0x01000001,  // smallest normals
      0x01800000, 0x0C000000, 0x0C800001,                          // far below 1
      0x3F7FFFFF, 0x3F800000, 0x3F800001, 0x3FC00000, 0x3FFFFFFF,  // around 1
      0x40000000, 0x4B800000, 0x4B800001, 0x4B7FFFFF, 0x33800000,  // 2^24 and ulp-sized
      0x34000000, 0x33000000, 0x33000001,                          // half ulp of 1: ties
      0x3F808000, 0x3F818000, 0x3F807FFF, 0x3F808001, 0x3F80FFFF,  // bf16 ties, even/odd
      0x00808000, 0x00FF8000, 0x7F7F8000, 0x7F7F7FFF, 0x7F7FFFFF,  // bf16 rounding at the ends
      0x7F7FFFFE, 0x7F000000, 0x7F000001, 0x7E800000, 0x7EFFFFFF,  // near overflow
      0x7F800000,                                                  // infinity
      0x7FC00000, 0x7FC00001, 0x7FFFFFFF, 0x7FE00000,              // quiet NaNs, payloads
      0x7F800001, 0x7FA00000, 0x7FBFFFFF, 0x7F808000, 0x7F800100,  // signalling NaNs
  };
  std::vector<uint32_t> values;
  for (uint32_t m : magnitudes) {
    values.push_back(m);
    values.push_back(m | 0x80000000u);
  }
  return values;
}

// Both signs of every bf16 special class, plus operands whose products land on the fp32
// underflow (2^-126) and overflow (2^128) boundaries.
inline std::vector<uint16_t> SpecialBf16() {
  const uint16_t magnitudes[] = {
      0x0000, 0x0001, 0x0040, 0x007F,                  // zero, subnormals
      0x0080, 0x0081, 0x00FF, 0x0100,                  // smallest normals
      0x3F80, 0x3F81, 0x3FFF, 0x3FC0, 0x4000, 0x3F7F,  // around 1
      0x1F80, 0x1FFF, 0x2000, 0x2001, 0x1F00, 0x1F7F,  // squares near 2^-126
      0x5F80, 0x5F7F, 0x5F00, 0x5FFF, 0x5F81,          // squares near 2^128
      0x7F00, 0x7F7F, 0x7F7E,                          // max normal
      0x7F80,                                          // infinity
      0x7FC0, 0x7FC1, 0x7FFF, 0x7F81, 0x7FA0, 0x7FBF,  // quiet and signalling NaNs
  };
  std::vector<uint16_t> values;
  for (uint16_t m : magnitudes) {
    values.push_back(m);
    values.push_back(static_cast<uint16_t>(m | 0x8000u));
  }
  return values;
}

// Deterministic, fast generator (splitmix64): same seed, same vectors on every host.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t Next32() { return static_cast<uint32_t>(Next() >> 32); }
  uint32_t Below(uint32_t bound) { return static_cast<uint32_t>((Next() >> 32) * bound >> 32); }
  // Uniform in [lo, hi].
  int32_t Range(int32_t lo, int32_t hi) { return lo + static_cast<int32_t>(Below(static_cast<uint32_t>(hi - lo + 1))); }

 private:
  uint64_t state_;
};

// Seed for a test: TPU_NUMERICS_SEED overrides the default so a failure can be replayed/varied.
inline uint64_t TestSeed(uint64_t default_seed) {
  const char* text = std::getenv("TPU_NUMERICS_SEED");
  return text ? std::strtoull(text, nullptr, 0) : default_seed;
}

class OperandGenerator {
 public:
  explicit OperandGenerator(uint64_t seed) : random_(seed), f32_specials_(SpecialF32()), bf16_specials_(SpecialBf16()) {}

  Random& random() { return random_; }

  // A fraction field with structure: random, zero, all ones, one bit, or a few low/high bits.
  uint32_t Fraction23() {
    switch (random_.Below(6)) {
      case 0: return 0;
      case 1: return 0x7FFFFF;
      case 2: return 1u << random_.Below(23);
      case 3: return random_.Next32() & ((1u << random_.Below(24)) - 1u);           // low bits only
      case 4: return (random_.Next32() & 0x7FFFFF) & ~((1u << random_.Below(24)) - 1u);  // high bits only
      default: return random_.Next32() & 0x7FFFFF;
    }
  }

  uint32_t Sign() { return (random_.Next32() & 1u) << 31; }

  uint32_t MakeF32(uint32_t sign, int32_t exponent, uint32_t fraction) {
    if (exponent < 0) exponent = 0;
    if (exponent > 255) exponent = 255;
    return sign | (static_cast<uint32_t>(exponent) << 23) | (fraction & 0x7FFFFF);
  }

  // An exponent field: uniform, near the bottom, near the top, or around 1.0.
  int32_t Exponent() {
    switch (random_.Below(5)) {
      case 0: return random_.Range(0, 4);
      case 1: return random_.Range(250, 255);
      case 2: return random_.Range(120, 134);
      default: return random_.Range(0, 255);
    }
  }

  uint32_t F32() {
    switch (random_.Below(8)) {
      case 0: return random_.Next32();
      case 1: return f32_specials_[random_.Below(static_cast<uint32_t>(f32_specials_.size()))];
      default: return MakeF32(Sign(), Exponent(), Fraction23());
    }
  }

  // Operand pairs for addition (and max): each case aims at one part of the datapath.
  std::pair<uint32_t, uint32_t> F32AddPair() {
    const uint32_t a = F32();
    const int32_t exp_a = (a >> 23) & 0xFF;
    switch (random_.Below(10)) {
      case 0: return {random_.Next32(), random_.Next32()};
      case 1: {  // cancellation: opposite signs, exponents within 2, fractions close
        const uint32_t frac = (random_.Below(2) ? (a ^ (random_.Next32() & ((1u << random_.Below(24)) - 1u))) : Fraction23());
        return {a, MakeF32((a & 0x80000000u) ^ 0x80000000u, exp_a + random_.Range(-2, 2), frac)};
      }
      case 2:  // far-apart exponents, around the sticky/round boundary
        return {a, MakeF32(Sign(), exp_a - random_.Range(20, 30), Fraction23())};
      case 3:  // near overflow, same sign
        return {MakeF32(0, random_.Range(248, 254), Fraction23()) | (a & 0x80000000u),
                MakeF32(0, random_.Range(248, 254), Fraction23()) | (a & 0x80000000u)};
      case 4:  // near underflow, opposite signs (results around 2^-126)
        return {MakeF32(Sign(), random_.Range(0, 4), Fraction23()), MakeF32(Sign(), random_.Range(0, 4), Fraction23())};
      case 5: {  // rounding ties: b's shifted-out bits are exactly one half ulp (or just around it)
        const int32_t shift = random_.Range(1, 25);
        uint32_t frac = random_.Next32() & 0x7FFFFF;
        if (shift <= 23) {
          frac &= ~((1u << shift) - 1u);
          frac |= 1u << (shift - 1);
          if (random_.Below(4) == 0) frac += random_.Below(2) ? 1u : 0xFFFFFFFFu;
        }
        return {a, MakeF32(Sign(), exp_a - shift, frac)};
      }
      case 6:  // exact negation, equal values, or a zero
        switch (random_.Below(3)) {
          case 0: return {a, a ^ 0x80000000u};
          case 1: return {a, a};
          default: return {a, Sign()};
        }
      case 7:
        return {a, f32_specials_[random_.Below(static_cast<uint32_t>(f32_specials_.size()))]};
      default:  // nearby exponents, any signs
        return {a, MakeF32(Sign(), exp_a + random_.Range(-3, 3), Fraction23())};
    }
  }

  uint16_t Bf16() {
    switch (random_.Below(6)) {
      case 0: return bf16_specials_[random_.Below(static_cast<uint32_t>(bf16_specials_.size()))];
      case 1: return static_cast<uint16_t>(MakeF32(Sign(), Exponent(), Fraction23()) >> 16);
      default: return static_cast<uint16_t>(random_.Next32() >> 16);
    }
  }

  // Operand pairs for bf16 multiplication: products near the fp32 underflow and overflow edges
  // (exponent fields summing to about 127 + 1 or 127 + 254), and all-ones significands.
  std::pair<uint16_t, uint16_t> Bf16MulPair() {
    auto bf16 = [this](int32_t exponent, uint32_t fraction7) {
      if (exponent < 0) exponent = 0;
      if (exponent > 255) exponent = 255;
      return static_cast<uint16_t>((Sign() >> 16) | (static_cast<uint32_t>(exponent) << 7) | (fraction7 & 0x7F));
    };
    auto fraction7 = [this]() { return random_.Below(3) == 0 ? 0x7Fu : random_.Next32(); };
    switch (random_.Below(6)) {
      case 0: {  // result exponent within a few steps of the underflow boundary
        const int32_t exp_a = random_.Range(1, 126);
        return {bf16(exp_a, fraction7()), bf16(128 - exp_a + random_.Range(-3, 2), fraction7())};
      }
      case 1: {  // result exponent within a few steps of the overflow boundary
        const int32_t exp_a = random_.Range(127, 254);
        return {bf16(exp_a, fraction7()), bf16(381 - exp_a + random_.Range(-3, 2), fraction7())};
      }
      case 2: return {Bf16(), Bf16()};
      default: return {static_cast<uint16_t>(random_.Next32()), static_cast<uint16_t>(random_.Next32())};
    }
  }

  // Inputs for fp32 -> bf16: ties (low half exactly 0x8000 with odd or even kept bit), neighbours
  // of ties, values that round up into the exponent or to infinity, and uniform bits.
  uint32_t F32ForBf16() {
    uint32_t x = F32();
    switch (random_.Below(4)) {
      case 0: return (x & 0xFFFF0000u) | 0x8000u;
      case 1: return (x & 0xFFFF0000u) | (random_.Below(2) ? 0x7FFFu : 0x8001u);
      case 2: return (x & 0x80000000u) | (static_cast<uint32_t>(random_.Range(252, 254)) << 23) | 0x7F0000u | (random_.Next32() & 0xFFFF);
      default: return x;
    }
  }

 private:
  Random random_;
  std::vector<uint32_t> f32_specials_;
  std::vector<uint16_t> bf16_specials_;
};

}  // namespace tpu::numerics::testing

#endif  // TPUSIM_SIM_NUMERICS_NUMERICS_TESTING_H_
