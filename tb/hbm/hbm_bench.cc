// make bench-hbm: every traffic pattern on the verilated controller and the device model; one line per
// pattern (see docs/hbm.md). Exits non-zero on any mismatch, violation or protocol error.
// Usage: hbm_bench [bursts per pattern] [pattern ...] (default: 2*10^6 bursts, every pattern).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tb/hbm/hbm_harness.h"

int main(int argc, char** argv) {
  using namespace tpu::hbm_tb;
  RunOptions options;
  options.transactions = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000000;
  if (options.transactions == 0) {
    std::fprintf(stderr, "usage: hbm_bench [bursts per pattern > 0] [pattern ...]\n");
    return 2;
  }
  std::vector<Pattern> patterns;
  for (int a = 2; a < argc; ++a) {
    bool found = false;
    for (Pattern p : AllPatterns()) {
      if (std::string(argv[a]) == PatternName(p)) {
        patterns.push_back(p);
        found = true;
      }
    }
    if (!found) {
      std::fprintf(stderr, "hbm_bench: unknown pattern '%s'\n", argv[a]);
      return 2;
    }
  }
  if (patterns.empty()) patterns = AllPatterns();
  int status = 0;
  uint64_t total = 0;
  for (Pattern p : patterns) {
    const RunResult r = Run(p, options);
    std::printf("%s\n", r.Line(p).c_str());
    std::fflush(stdout);
    for (const auto& m : r.messages) std::fprintf(stderr, "  %s\n", m.c_str());
    total += r.transactions;
    if (r.mismatches || r.violations || r.protocol_errors) status = 1;
  }
  std::printf("hbm total_txns=%llu\n", static_cast<unsigned long long>(total));
  return status;
}
