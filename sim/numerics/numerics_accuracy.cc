// Prints the accuracy of VEXP/VLOG/VRSQRT/VRCP in ulp: `numerics_accuracy [--stride=N]` (1 = every input).
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "sim/numerics/transcendental_accuracy.h"

int main(int argc, char** argv) {
  uint32_t stride = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--stride=", 9) == 0 && std::atoi(argv[i] + 9) > 0) {
      stride = static_cast<uint32_t>(std::atoi(argv[i] + 9));
    } else {
      std::fprintf(stderr, "usage: %s [--stride=N]\n", argv[0]);
      return 2;
    }
  }
  for (const auto& function : tpu::numerics::accuracy::Functions()) {
    const auto result = tpu::numerics::accuracy::Measure(function, stride);
    std::printf("%-6s inputs [0x%08x, 0x%08x] stride %u: max %.3f ulp (at 0x%08x), mean %.4f ulp, %llu inputs\n",
                function.name, function.first, function.last, stride, result.max_ulp, result.worst_input,
                result.mean_ulp, static_cast<unsigned long long>(result.inputs));
  }
  return 0;
}
