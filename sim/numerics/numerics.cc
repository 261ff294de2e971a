#include "sim/numerics/numerics.h"

#include <cfenv>
#include <cstdio>

namespace tpu::numerics {
namespace internal {

uint32_t F32AddSpecial(uint32_t a, uint32_t b) {
  if (IsF32Nan(a) || IsF32Nan(b)) return kF32CanonicalNan;
  const bool inf_a = (a & kF32MagnitudeMask) == kF32Inf;
  const bool inf_b = (b & kF32MagnitudeMask) == kF32Inf;
  if (inf_a && inf_b) return a == b ? a : kF32CanonicalNan;  // inf - inf
  return inf_a ? a : b;  // inf plus anything finite (a subnormal is a zero under DAZ)
}


bool HostRoundsToNearest() { return std::fegetround() == FE_TONEAREST; }

}  // namespace internal

void MxuMatVec(const uint16_t* a, const uint16_t* w, int n, uint32_t* out) {
  for (int col = 0; col < n; ++col) out[col] = 0;
  if (internal::kHostFloatUsable && internal::HostRoundsToNearest()) {
    for (int k = 0; k < n; ++k) {
      const uint16_t* row = w + static_cast<long>(k) * n;
      const uint16_t a_k = a[k];
      for (int col = 0; col < n; ++col) out[col] = internal::HostMac(out[col], a_k, row[col]);
    }
    for (int col = 0; col < n; ++col) out[col] = internal::CanonicalizeNan(out[col]);
    return;
  }
  for (int k = 0; k < n; ++k) {
    const uint16_t* row = w + static_cast<long>(k) * n;
    const uint16_t a_k = a[k];
    for (int col = 0; col < n; ++col) out[col] = F32Add(out[col], Bf16Mul(a_k, row[col]));
  }
}

std::string F32ToString(uint32_t bits) {
  char text[48];
  std::snprintf(text, sizeof text, "0x%08x (%.9g)", bits, static_cast<double>(BitsFloat(bits)));
  return text;
}

std::string Bf16ToString(uint16_t bits) {
  char text[48];
  const float value = BitsFloat(static_cast<uint32_t>(bits) << 16);
  std::snprintf(text, sizeof text, "0x%04x (%.4g)", bits, static_cast<double>(value));
  return text;
}

}  // namespace tpu::numerics
