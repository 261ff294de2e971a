// Long-running check of the numerics library against the host FPU reference (not a ctest).
//
//   numerics_exhaustive [--pairs=N] [--seed=S] [--all-bf16]
//
// --pairs   random operand pairs per operation (F32Add, Bf16Mul, F32Max, F32ToBf16), default 10^8
// --seed    generator seed, default 1
// --all-bf16  additionally every one of the 2^32 bf16 x bf16 products and every 2^32 fp32 -> bf16 input
//
// Prints one line per operation, the library's speed, and finally
//   numerics pairs=<total> mismatches=<count>
// Exit status 0 only when there is no mismatch.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "sim/numerics/numerics.h"
#include "sim/numerics/numerics_host_reference.h"
#include "sim/numerics/numerics_testing.h"

namespace {

namespace num = tpu::numerics;
namespace ref = tpu::numerics::host_reference;

constexpr uint64_t kMaxPrinted = 10;

struct Totals {
  uint64_t pairs = 0;
  uint64_t mismatches = 0;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Report(const char* op, uint64_t pairs, uint64_t mismatches, double seconds, Totals& totals) {
  std::printf("%-22s pairs=%llu mismatches=%llu (%.1f s)\n", op, static_cast<unsigned long long>(pairs),
              static_cast<unsigned long long>(mismatches), seconds);
  totals.pairs += pairs;
  totals.mismatches += mismatches;
}

void PrintMismatch(uint64_t count, const std::string& what) {
  if (count <= kMaxPrinted) std::printf("MISMATCH %s\n", what.c_str());
}

void RandomChecks(uint64_t pairs, uint64_t seed, Totals& totals) {
  num::testing::OperandGenerator gen(seed);
  {
    const auto start = std::chrono::steady_clock::now();
    uint64_t bad = 0;
    for (uint64_t i = 0; i < pairs; ++i) {
      const auto [a, b] = gen.F32AddPair();
      const uint32_t got = num::F32Add(a, b), want = ref::Add(a, b);
      if (got != want)
        PrintMismatch(++bad, "F32Add(" + num::F32ToString(a) + ", " + num::F32ToString(b) + "): library " +
                                 num::F32ToString(got) + ", reference " + num::F32ToString(want));
    }
    Report("F32Add", pairs, bad, SecondsSince(start), totals);
  }
  {
    const auto start = std::chrono::steady_clock::now();
    uint64_t bad = 0;
    for (uint64_t i = 0; i < pairs; ++i) {
      const auto [a, b] = gen.Bf16MulPair();
      const uint32_t got = num::Bf16Mul(a, b), want = ref::Bf16Mul(a, b);
      if (got != want)
        PrintMismatch(++bad, "Bf16Mul(" + num::Bf16ToString(a) + ", " + num::Bf16ToString(b) + "): library " +
                                 num::F32ToString(got) + ", reference " + num::F32ToString(want));
    }
    Report("Bf16Mul", pairs, bad, SecondsSince(start), totals);
  }
  {
    const auto start = std::chrono::steady_clock::now();
    uint64_t bad = 0;
    for (uint64_t i = 0; i < pairs; ++i) {
      const auto [a, b] = gen.F32AddPair();
      const uint32_t got = num::F32Max(a, b), want = ref::Max(a, b);
      if (got != want)
        PrintMismatch(++bad, "F32Max(" + num::F32ToString(a) + ", " + num::F32ToString(b) + "): library " +
                                 num::F32ToString(got) + ", reference " + num::F32ToString(want));
    }
    Report("F32Max", pairs, bad, SecondsSince(start), totals);
  }
  {
    const auto start = std::chrono::steady_clock::now();
    uint64_t bad = 0;
    for (uint64_t i = 0; i < pairs; ++i) {
      const uint32_t x = gen.F32ForBf16();
      const uint16_t got = num::F32ToBf16(x), want = ref::F32ToBf16(x);
      if (got != want)
        PrintMismatch(++bad, "F32ToBf16(" + num::F32ToString(x) + "): library " + num::Bf16ToString(got) +
                                 ", reference " + num::Bf16ToString(want));
    }
    Report("F32ToBf16", pairs, bad, SecondsSince(start), totals);
  }
}

void AllBf16Checks(Totals& totals) {
  auto start = std::chrono::steady_clock::now();
  uint64_t bad = 0;
  for (uint32_t a = 0; a <= 0xFFFF; ++a)
    for (uint32_t b = 0; b <= 0xFFFF; ++b) {
      const uint32_t got = num::Bf16Mul(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
      const uint32_t want = ref::Bf16Mul(static_cast<uint16_t>(a), static_cast<uint16_t>(b));
      if (got != want)
        PrintMismatch(++bad, "Bf16Mul(" + num::Bf16ToString(static_cast<uint16_t>(a)) + ", " +
                                 num::Bf16ToString(static_cast<uint16_t>(b)) + "): library " + num::F32ToString(got) +
                                 ", reference " + num::F32ToString(want));
    }
  Report("Bf16Mul (all 2^32)", uint64_t{1} << 32, bad, SecondsSince(start), totals);

  start = std::chrono::steady_clock::now();
  bad = 0;
  uint32_t x = 0;
  do {
    const uint16_t got = num::F32ToBf16(x), want = ref::F32ToBf16(x);
    if (got != want)
      PrintMismatch(++bad, "F32ToBf16(" + num::F32ToString(x) + "): library " + num::Bf16ToString(got) +
                               ", reference " + num::Bf16ToString(want));
  } while (++x != 0);
  Report("F32ToBf16 (all 2^32)", uint64_t{1} << 32, bad, SecondsSince(start), totals);
}

// Library throughput on a dependent chain like the MXU column (the reference model's inner loop).
void Benchmark(uint64_t seed) {
  constexpr int kN = 128;
  constexpr int kRepeats = 2000;
  num::testing::Random random(seed);
  static uint16_t a[kN], w[kN * kN];
  for (auto& v : a) v = num::F32ToBf16(num::FloatBits(static_cast<float>(random.Range(-999, 999)) / 17.0f));
  for (auto& v : w) v = num::F32ToBf16(num::FloatBits(static_cast<float>(random.Range(-999, 999)) / 13.0f));
  uint32_t out[kN];
  uint32_t checksum = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < kRepeats; ++r) {
    a[r % kN] ^= 1;  // keep the compiler from hoisting the work
    num::MxuMatVec(a, w, kN, out);
    checksum ^= out[r % kN];
  }
  const double seconds = SecondsSince(start);
  const double macs = static_cast<double>(kRepeats) * kN * kN;
  std::printf("MxuMatVec 128x128: %.2f ns per multiply-add (%.0f M MAC/s, checksum %08x)\n", seconds * 1e9 / macs,
              macs / seconds / 1e6, checksum);
}

bool ParseUnsigned(const char* text, uint64_t* value) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long parsed = std::strtoull(text, &end, 0);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-') return false;
  *value = parsed;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t pairs = 100'000'000;
  uint64_t seed = 1;
  bool all_bf16 = false;
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strncmp(arg, "--pairs=", 8) == 0) {
      if (!ParseUnsigned(arg + 8, &pairs)) {
        std::fprintf(stderr, "numerics_exhaustive: --pairs needs an unsigned integer, got '%s'\n", arg + 8);
        return 2;
      }
    } else if (std::strncmp(arg, "--seed=", 7) == 0) {
      if (!ParseUnsigned(arg + 7, &seed)) {
        std::fprintf(stderr, "numerics_exhaustive: --seed needs an unsigned integer, got '%s'\n", arg + 7);
        return 2;
      }
    } else if (std::strcmp(arg, "--all-bf16") == 0) {
      all_bf16 = true;
    } else {
      std::fprintf(stderr, "numerics_exhaustive: unknown argument '%s'\nusage: %s [--pairs=N] [--seed=S] [--all-bf16]\n",
                   arg, argv[0]);
      return 2;
    }
  }
  Totals totals;
  RandomChecks(pairs, seed, totals);
  if (all_bf16) AllBf16Checks(totals);
  Benchmark(seed);
  std::printf("numerics pairs=%llu mismatches=%llu\n", static_cast<unsigned long long>(totals.pairs),
              static_cast<unsigned long long>(totals.mismatches));
  return totals.mismatches == 0 ? 0 : 1;
}
