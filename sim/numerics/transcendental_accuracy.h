// Error of the VEXP/VLOG/VRSQRT/VRCP definitions in ulp of the exact result (libm in double, whose
// error is far below an fp32 ulp), over the normal fp32 inputs whose results are normal.
#ifndef TPUSIM_SIM_NUMERICS_TRANSCENDENTAL_ACCURACY_H_
#define TPUSIM_SIM_NUMERICS_TRANSCENDENTAL_ACCURACY_H_

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sim/numerics/transcendental.h"

namespace tpu::numerics::accuracy {

struct Function {
  const char* name;
  uint32_t (*device)(uint32_t);
  double (*exact)(double);
  uint32_t first, last;  // inclusive range of input bit patterns
  double bound_ulp;      // documented bound
};

struct Result {
  double max_ulp = 0, mean_ulp = 0;
  uint32_t worst_input = 0;
  uint64_t inputs = 0;
};

inline const std::vector<Function>& Functions() {
  static const std::vector<Function> functions = {
      // e^x is normal for x in (-87.33, 88.72); both signs.
      {"exp", F32Exp, [](double x) { return std::exp(x); }, 0x00800000u, 0x42B17217u, 4.0},
      {"exp-", F32Exp, [](double x) { return std::exp(x); }, 0x80800000u, 0xC2AEAC4Fu, 4.0},
      {"log", F32Log, [](double x) { return std::log(x); }, 0x00800000u, 0x7F7FFFFFu, 4.0},
      {"rsqrt", F32Rsqrt, [](double x) { return 1.0 / std::sqrt(x); }, 0x00800000u, 0x7F7FFFFFu, 4.0},
      {"rcp", F32Rcp, [](double x) { return 1.0 / x; }, 0x00800000u, 0x7E7FFFFFu, 4.0},
  };
  return functions;
}

// |device - exact| in units of the fp32 ulp at the exact value (2^(floor(log2 |exact|) - 23)).
inline double UlpError(uint32_t device_bits, double exact) {
  float device;
  std::memcpy(&device, &device_bits, sizeof device);
  if (exact == 0) return device == 0 ? 0 : INFINITY;
  int exponent;
  std::frexp(exact, &exponent);  // exact = f * 2^exponent, f in [0.5, 1)
  const double ulp = std::ldexp(1.0, std::max(exponent - 1, -126) - 23);
  return std::fabs(static_cast<double>(device) - exact) / ulp;
}

inline Result Measure(const Function& function, uint32_t stride) {
  Result result;
  double sum = 0;
  for (uint64_t bits = function.first; bits <= function.last; bits += stride) {
    const uint32_t x = static_cast<uint32_t>(bits);
    float input;
    std::memcpy(&input, &x, sizeof input);
    const double exact = function.exact(static_cast<double>(input));
    if (std::fabs(exact) < 0x1p-126 && exact != 0) continue;  // flushed results are not measured
    const double error = UlpError(function.device(x), exact);
    sum += error;
    ++result.inputs;
    if (error > result.max_ulp) {
      result.max_ulp = error;
      result.worst_input = x;
    }
  }
  result.mean_ulp = result.inputs ? sum / static_cast<double>(result.inputs) : 0;
  return result;
}

}  // namespace tpu::numerics::accuracy

#endif  // TPUSIM_SIM_NUMERICS_TRANSCENDENTAL_ACCURACY_H_
