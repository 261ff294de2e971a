// MXU benchmark (make bench-mxu): runs an 8N x 8N x 8N GEMM on the verilated MXU (N = MXU_N) with a
// VMEM model of MXU_VMEM_LINES lines, compares every result with the reference of docs/isa.md, and
// prints one key=value line:
//   mxu N=.. build_s=.. cycles_per_s=.. pe_cycles_per_s=.. gemm_util_pct=.. mismatches=..
// build_s is measured by the caller (tb/mxu/bench_mxu.sh) and passed as --build-s=SECONDS.
// Speeds are simulated cycles per second of process CPU time spent in the simulation loop (the
// reference runs afterwards), so other load on a shared machine moves them less than wall time.
// Exit status 1 when any element differs or the run fails.
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>

#include "tb/mxu/mxu_bench.h"

using namespace mxu_bench;

int main(int argc, char** argv) {
  double build_s = -1.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--build-s=", 10) == 0) {
      build_s = std::stod(argv[i] + 10);
    } else {
      std::fprintf(stderr, "usage: %s [--build-s=SECONDS]\n", argv[0]);
      return 2;
    }
  }
  const uint32_t m = 8 * kN, tiles = 8;
  GemmLayout gemm{m, tiles, tiles, 0, 0, 0, false};
  gemm.b_base = tiles * m;
  gemm.c_base = gemm.b_base + tiles * tiles * kN;
  if (gemm.lines() > kVmemLines) {
    std::fprintf(stderr, "mxu N=%d: the GEMM needs %u VMEM lines, the model has %u\n", kN, gemm.lines(), kVmemLines);
    return 2;
  }

  MxuBench bench(1);
  MxuReference reference;
  DataGenerator gen(2);
  gen.Fill(bench.vmem(), 0, gemm.c_base, false);  // A and B; C starts at +0 (the first K tile writes it)
  Vmem expected = bench.vmem();
  const std::vector<Command> program = gemm.Program();
  for (const Command& cmd : program) bench.Enqueue(cmd);

  const uint64_t start_cycle = bench.cycle();
  const std::clock_t start = std::clock();
  bench.RunUntilIdle(4ull * m * tiles * tiles + 64ull * kN);
  const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  const uint64_t cycles = bench.cycle() - start_cycle;
  if (bench.failed()) {
    std::fprintf(stderr, "mxu N=%d: port check failed: %s\n", kN, bench.failure().c_str());
    return 1;
  }

  for (const Command& cmd : program) reference.Execute(cmd, expected);
  uint64_t mismatches = 0;
  const std::string first = FirstMismatch(bench.vmem(), expected, &mismatches);
  if (!first.empty()) std::fprintf(stderr, "mxu N=%d: first mismatch: %s\n", kN, first.c_str());

  const double macs = static_cast<double>(m) * (tiles * kN) * (tiles * kN);
  const double utilization = macs / (static_cast<double>(kN) * kN * static_cast<double>(cycles));
  const double cycles_per_s = static_cast<double>(cycles) / seconds;
  std::printf("mxu N=%d build_s=%.1f cycles_per_s=%.0f pe_cycles_per_s=%.0f gemm_util_pct=%.2f mismatches=%llu\n", kN,
              build_s, cycles_per_s, cycles_per_s * kN * kN, utilization * 100.0,
              static_cast<unsigned long long>(mismatches));
  std::printf("  (%llu cycles, %.2f s CPU in the simulation loop, %llu rows, %zu commands)\n",
              static_cast<unsigned long long>(cycles), seconds, static_cast<unsigned long long>(bench.rows_accepted()),
              program.size());
  return mismatches == 0 ? 0 : 1;
}
