// make bench-hbm: every traffic pattern on the verilated controller and the device model; one line per
// pattern (see docs/hbm.md). `hbm_bench [bursts per pattern] [seed] [pattern ...]` (defaults 2000000, 1
// and every pattern; the seed drives the traffic and the back-pressure). Exits non-zero on any mismatch,
// violation or protocol error. `hbm_bench --list` prints the patterns' names, one per line (the long
// regression runs them side by side).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tb/hbm/hbm_harness.h"

int main(int argc, char** argv) {
  using namespace tpu::hbm_tb;
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (Pattern p : AllPatterns()) std::printf("%s\n", PatternName(p));
    return 0;
  }
  RunOptions options;
  options.transactions = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2000000;
  if (argc > 2) options.seed = std::strtoull(argv[2], nullptr, 10);
  if (options.transactions == 0) {
    std::fprintf(stderr, "usage: hbm_bench [bursts per pattern > 0] [seed] [pattern ...]\n");
    return 2;
  }
  std::vector<Pattern> patterns;
  for (int a = 3; a < argc; ++a) {
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
  std::printf("hbm bursts_per_pattern=%llu seed=%llu\n", static_cast<unsigned long long>(options.transactions),
              static_cast<unsigned long long>(options.seed));
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
