// VEXP/VLOG/VRSQRT/VRCP definitions: special cases, and the error in ulp against the correctly rounded
// double-precision libm result over a strided sweep of every normal input of interest. The bounds are
// the figures documented in docs/numerics.md (numerics_accuracy prints them for any stride).
#include "sim/numerics/transcendental.h"

#include <gtest/gtest.h>

#include "sim/numerics/transcendental_accuracy.h"

namespace tpu::numerics {
namespace {

TEST(Transcendental, SpecialCases) {
  EXPECT_EQ(F32Rcp(0x00000000), kF32Inf);
  EXPECT_EQ(F32Rcp(0x80000001), kF32SignMask | kF32Inf);  // DAZ: -0
  EXPECT_EQ(F32Rcp(0xFF800000), kF32SignMask);
  EXPECT_EQ(F32Rcp(0x7F000000), 0u);                     // 1/2^127 flushes
  EXPECT_EQ(F32Rcp(0x3F800000), 0x3F800000u);
  EXPECT_EQ(F32Rcp(0x40000000), 0x3F000000u);
  EXPECT_EQ(F32Rsqrt(0x80000000), kF32SignMask | kF32Inf);
  EXPECT_EQ(F32Rsqrt(0xBF800000), kF32CanonicalNan);
  EXPECT_EQ(F32Rsqrt(0x7F800000), 0u);
  EXPECT_EQ(F32Rsqrt(0x40800000), 0x3F000000u);           // 1/sqrt(4)
  EXPECT_EQ(F32Exp(0x00000000), 0x3F800000u);
  EXPECT_EQ(F32Exp(0x7F800000), kF32Inf);
  EXPECT_EQ(F32Exp(0xFF800000), 0u);
  EXPECT_EQ(F32Exp(0x42B20000), kF32Inf);                 // e^89
  EXPECT_EQ(F32Exp(0xC2B00000), 0u);                      // e^-88 < 2^-126
  EXPECT_EQ(F32Log(0x3F800000), 0u);
  EXPECT_EQ(F32Log(0x00000000), 0xFF800000u);
  EXPECT_EQ(F32Log(0x80000000), 0xFF800000u);
  EXPECT_EQ(F32Log(0xBF800000), kF32CanonicalNan);
  EXPECT_EQ(F32Log(0x7F800000), kF32Inf);
  for (uint32_t nan : {0x7FC00000u, 0xFFFFFFFFu, 0x7F800001u}) {
    EXPECT_EQ(F32Rcp(nan), kF32CanonicalNan);
    EXPECT_EQ(F32Rsqrt(nan), kF32CanonicalNan);
    EXPECT_EQ(F32Exp(nan), kF32CanonicalNan);
    EXPECT_EQ(F32Log(nan), kF32CanonicalNan);
  }
}

// Bounds in ulp (docs/numerics.md); the sweep visits every 7919th fp32 bit pattern in each range.
TEST(Transcendental, AccuracyAgainstLibm) {
  constexpr uint32_t kStride = 7919;
  for (const accuracy::Function& function : accuracy::Functions()) {
    const accuracy::Result result = accuracy::Measure(function, kStride);
    std::printf("%-6s max %.3f ulp (at 0x%08x), mean %.4f ulp over %llu inputs\n", function.name, result.max_ulp,
                result.worst_input, result.mean_ulp, static_cast<unsigned long long>(result.inputs));
    EXPECT_LE(result.max_ulp, function.bound_ulp) << function.name << " at 0x" << std::hex << result.worst_input;
    EXPECT_GT(result.inputs, 100000u);
  }
}

}  // namespace
}  // namespace tpu::numerics
