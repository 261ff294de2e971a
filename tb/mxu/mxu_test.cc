// GoogleTest bench of the MXU (rtl/mxu/mxu.sv) for N = MXU_N, on the verilated RTL with a C++ VMEM
// model and a reference of docs/isa.md (tb/mxu/mxu_bench.h). Single commands are checked against
// the documented busy times; programs whose commands overlap (loads beside multiplies, multiplies
// back to back, hazards through VMEM between them) against sequential execution.
//
// Environment: MXU_TEST_SEED=<n> replaces the fixed seeds of the random tests.
#include <gtest/gtest.h>

#include <ctime>
#include <iostream>

#include "tb/mxu/mxu_bench.h"

namespace {

using namespace mxu_bench;

uint64_t Seed(uint64_t fixed) {
  const char* env = std::getenv("MXU_TEST_SEED");
  return env ? std::strtoull(env, nullptr, 0) : fixed;
}

// Runs `cmd` on both sides and compares the VMEMs; returns the busy cycles.
uint64_t RunAndCompare(MxuBench& bench, MxuReference& reference, Vmem& expected, const Command& cmd) {
  SCOPED_TRACE(cmd.ToString());
  const uint64_t busy = bench.Run(cmd);
  EXPECT_FALSE(bench.failed()) << bench.failure();
  reference.Execute(cmd, expected);
  const std::string mismatch = FirstMismatch(bench.vmem(), expected);
  EXPECT_EQ(mismatch, "") << "after " << cmd.ToString();
  if (cmd.is_mm()) {
    EXPECT_EQ(busy, cmd.count == 0 ? 0 : cmd.count + kMmOverhead) << cmd.ToString();
  } else {
    EXPECT_EQ(busy, kLwBusy) << cmd.ToString();
  }
  return busy;
}

// Picks a region of `count` lines that does not overlap [avoid, avoid + avoid_count).
uint32_t PickRegion(DataGenerator& gen, uint32_t count, uint32_t avoid, uint32_t avoid_count) {
  for (;;) {
    const uint32_t base = static_cast<uint32_t>(gen.Next() % (kVmemLines - count + 1));
    if (base + count <= avoid || avoid + avoid_count <= base) return base;
  }
}

void RandomSequence(uint64_t seed, int commands, bool specials) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  MxuBench bench(seed);
  MxuReference reference;
  DataGenerator gen(seed * 7919 + 1);
  gen.Fill(bench.vmem(), 0, kVmemLines, specials);
  Vmem expected = bench.vmem();
  const uint32_t counts[] = {0, 1, 2, kN - 1, kN, kN + 1, 2 * kN + 3, 8 * kN};
  for (int c = 0; c < commands && !::testing::Test::HasFailure(); ++c) {
    Command cmd;
    if (gen.Next() % 3 == 0) {
      cmd = LoadWeights(static_cast<uint32_t>(gen.Next() % (kVmemLines - kN + 1)), gen.Next() & 1);
    } else {
      const uint32_t count = (gen.Next() & 1) ? counts[gen.Next() % std::size(counts)]
                                              : static_cast<uint32_t>(gen.Next() % (3 * kN + 1));
      const uint32_t src = PickRegion(gen, count, 0, 0);
      const uint32_t dst = PickRegion(gen, count, src, count);
      cmd = Multiply(src, dst, count, gen.Next() & 1, gen.Next() & 1);
    }
    RunAndCompare(bench, reference, expected, cmd);
    // Fresh data now and then, so results do not feed on earlier results only.
    if (gen.Next() % 4 == 0) {
      const uint32_t count = 1 + static_cast<uint32_t>(gen.Next() % (4 * kN));
      const uint32_t first = PickRegion(gen, count, 0, 0);
      gen.Fill(bench.vmem(), first, count, specials);
      std::copy(bench.vmem().begin() + first, bench.vmem().begin() + first + count, expected.begin() + first);
    }
    if (gen.Next() % 2 == 0) bench.Idle(static_cast<int>(gen.Next() % 5));  // else back to back
  }
}

TEST(MxuTest, MultiplyBeforeAnyLoadUsesZeroWeights) {
  MxuBench bench(Seed(1));
  MxuReference reference;
  DataGenerator gen(Seed(1));
  gen.Fill(bench.vmem(), 0, 64, false);
  Vmem expected = bench.vmem();
  RunAndCompare(bench, reference, expected, Multiply(0, 32, 3, false, false));
  for (uint32_t line = 32; line < 35; ++line) {
    for (int lane = 0; lane < kN; ++lane) EXPECT_EQ(bench.vmem()[line][lane], 0u);
  }
}

TEST(MxuTest, LoadPlainAndTransposedThenMultiply) {
  MxuBench bench(Seed(2));
  MxuReference reference;
  DataGenerator gen(Seed(2));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  Vmem expected = bench.vmem();
  RunAndCompare(bench, reference, expected, LoadWeights(100, false));
  RunAndCompare(bench, reference, expected, Multiply(200, 1000, kN, false, true));
  RunAndCompare(bench, reference, expected, LoadWeights(300, true));
  RunAndCompare(bench, reference, expected, Multiply(200, 2000, kN, false, true));
  // Transposed and plain loads of the same lines differ unless the matrix is symmetric.
  bool differs = false;
  for (int i = 0; i < kN; ++i) differs |= bench.vmem()[1000 + i] != bench.vmem()[2000 + i];
  EXPECT_TRUE(differs);
}

TEST(MxuTest, AccumulateAddsToOldDestination) {
  MxuBench bench(Seed(3));
  MxuReference reference;
  DataGenerator gen(Seed(3));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  Vmem expected = bench.vmem();
  // Source and destination regions never overlap (undefined in docs/isa.md), for any N.
  const uint32_t rows = 2 * kN + 5;
  RunAndCompare(bench, reference, expected, LoadWeights(0, false));
  RunAndCompare(bench, reference, expected, Multiply(4 * kN, 8 * kN, rows, false, true));
  RunAndCompare(bench, reference, expected, Multiply(4 * kN, 8 * kN, rows, true, false));
  RunAndCompare(bench, reference, expected, Multiply(12 * kN, 8 * kN, rows, true, false));
}

TEST(MxuTest, SwapExchangesFrontAndBack) {
  MxuBench bench(Seed(4));
  MxuReference reference;
  DataGenerator gen(Seed(4));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  Vmem expected = bench.vmem();
  RunAndCompare(bench, reference, expected, LoadWeights(0, false));        // back = A
  RunAndCompare(bench, reference, expected, Multiply(500, 1000, 3, false, true));   // front = A
  RunAndCompare(bench, reference, expected, LoadWeights(2 * kN, true));     // back = B
  RunAndCompare(bench, reference, expected, Multiply(500, 1100, 3, false, false));  // still A
  RunAndCompare(bench, reference, expected, Multiply(500, 1200, 3, false, true));   // front = B
  RunAndCompare(bench, reference, expected, Multiply(500, 1300, 3, false, true));   // front = A again
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(bench.vmem()[1000 + i], bench.vmem()[1100 + i]);
    EXPECT_EQ(bench.vmem()[1000 + i], bench.vmem()[1300 + i]);
  }
}

TEST(MxuTest, CountZeroFinishesAtOnceAndStillSwaps) {
  MxuBench bench(Seed(5));
  MxuReference reference;
  DataGenerator gen(Seed(5));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  Vmem expected = bench.vmem();
  RunAndCompare(bench, reference, expected, LoadWeights(0, false));
  EXPECT_EQ(RunAndCompare(bench, reference, expected, Multiply(2 * kN, 4 * kN, 0, true, true)), 0u);
  RunAndCompare(bench, reference, expected, Multiply(2 * kN, 4 * kN, kN, false, false));
}

TEST(MxuTest, StreamingReachesOneRowPerCycle) {
  MxuBench bench(Seed(6));
  MxuReference reference;
  DataGenerator gen(Seed(6));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  Vmem expected = bench.vmem();
  RunAndCompare(bench, reference, expected, LoadWeights(0, true));
  const uint32_t rows = 8 * kN;
  const uint64_t busy = RunAndCompare(bench, reference, expected, Multiply(kN, 2 * kN + rows, rows, true, true));
  EXPECT_LE(busy, rows + kMmOverhead);
  EXPECT_EQ(bench.rows_accepted(), rows);
  EXPECT_EQ(bench.last_row_cycle() - bench.first_row_cycle(), rows - 1u) << "rows did not enter back to back";
  const double utilization = static_cast<double>(rows) / static_cast<double>(busy);
  std::cout << "N=" << kN << ": MM of " << rows << " rows busy " << busy << " cycles (" << rows << " + "
            << busy - rows << " fill/drain), MAC utilization " << utilization * 100.0 << "%\n";
  ::testing::Test::RecordProperty("busy_cycles", static_cast<int>(busy));

  // A GEMM long enough to cover fill and drain reaches >= 97% of N*N MACs per cycle (DESIGN.md).
  const uint32_t long_rows = 33 * static_cast<uint32_t>(kMmOverhead);
  if (2 * long_rows > kVmemLines) {
    std::cout << "N=" << kN << ": " << long_rows << " rows do not fit twice in VMEM; 97% check skipped\n";
    return;
  }
  const uint64_t long_busy = RunAndCompare(bench, reference, expected, Multiply(0, long_rows, long_rows, false, false));
  const double long_utilization = static_cast<double>(long_rows) / static_cast<double>(long_busy);
  EXPECT_GE(long_utilization, 0.97) << long_rows << " rows took " << long_busy << " cycles";
  std::cout << "N=" << kN << ": MM of " << long_rows << " rows busy " << long_busy << " cycles, MAC utilization "
            << long_utilization * 100.0 << "%\n";
}

TEST(MxuTest, FlushAbortsAndLeavesTheUnitUsable) {
  MxuBench bench(Seed(7));
  MxuReference reference;
  DataGenerator gen(Seed(7));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  Vmem expected = bench.vmem();
  RunAndCompare(bench, reference, expected, LoadWeights(0, false));
  // What the aborted command would have written; lines written before the flush must match it.
  const Command aborted = Multiply(100, 1000, 6 * kN, true, true);
  Vmem full = expected;
  reference.Execute(aborted, full);  // the reference swapped: so did the RTL, at issue
  const Vmem before = bench.vmem();
  bench.Enqueue(aborted);
  bench.Idle(3 * kN + 1);
  ASSERT_TRUE(bench.busy());
  bench.Flush();
  EXPECT_FALSE(bench.busy());
  bench.Idle(4 * kN);  // nothing may arrive late
  uint32_t written = 0;
  for (uint32_t i = 0; i < aborted.count; ++i) {
    const Line& line = bench.vmem()[aborted.dst + i];
    if (line == before[aborted.dst + i]) continue;
    EXPECT_EQ(line, full[aborted.dst + i]) << "line " << aborted.dst + i;
    EXPECT_EQ(i, written) << "lines written out of order before the flush";
    ++written;
  }
  EXPECT_GT(written, 0u);
  EXPECT_LT(written, aborted.count);
  for (uint32_t line = 0; line < kVmemLines; ++line) {
    if (line < aborted.dst || line >= aborted.dst + aborted.count) {
      ASSERT_EQ(bench.vmem()[line], before[line]) << "line " << line << " changed by the aborted command";
    }
  }
  expected = bench.vmem();
  RunAndCompare(bench, reference, expected, Multiply(2000, 3000, kN + 3, false, false));
  RunAndCompare(bench, reference, expected, LoadWeights(50, true));
  RunAndCompare(bench, reference, expected, Multiply(2000, 3000, kN + 3, true, true));
}

TEST(MxuTest, RandomSequences) { RandomSequence(Seed(11), kN <= 8 ? 300 : 120, false); }

TEST(MxuTest, RandomSequencesWithSpecialValues) { RandomSequence(Seed(12), kN <= 8 ? 150 : 60, true); }

// Runs `program` with every command issued as soon as the MXU takes it, then compares with the
// reference executing the commands one after the other.
void RunProgramAndCompare(MxuBench& bench, MxuReference& reference, Vmem& expected,
                          const std::vector<Command>& program, const std::vector<int>& gaps = {}) {
  uint64_t rows = 0;
  for (size_t i = 0; i < program.size(); ++i) {
    bench.Enqueue(program[i], i < gaps.size() ? gaps[i] : 0);
    rows += program[i].is_mm() ? program[i].count : 0;
  }
  bench.RunUntilIdle(8 * (rows + program.size() * kN) + 256);
  ASSERT_FALSE(bench.failed()) << bench.failure();
  std::string trace;
  for (const Command& cmd : program) {
    reference.Execute(cmd, expected);
    trace += "\n  " + cmd.ToString();
  }
  const std::string mismatch = FirstMismatch(bench.vmem(), expected);
  EXPECT_EQ(mismatch, "") << "after the program:" << trace;
}

// A tiled GEMM with shapes that are not multiples of N (zero padding in A's last K region and in the
// weight tiles, as the compiler pads): the weight loads overlap the multiplies, the rows of all
// tiles enter back to back, and the K tiles accumulate with ACC.
void OverlappedGemm(uint64_t seed, bool transposed) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  MxuBench bench(seed);
  MxuReference reference;
  DataGenerator gen(seed * 31 + 7);
  // m >= 3N + 3: a load behind a SWAP waits up to 2N + 2 cycles for the old rows, then takes N + 1.
  const uint32_t m = 3 * kN + 5, k = 2 * kN + 5, n = kN + 3;  // 3 K tiles, 2 N tiles
  GemmLayout gemm{m, (k + kN - 1) / kN, (n + kN - 1) / kN, 0, 0, 0, transposed};
  gemm.b_base = gemm.k_tiles * m;
  gemm.c_base = gemm.b_base + gemm.k_tiles * gemm.n_tiles * kN;
  ASSERT_LE(gemm.lines(), kVmemLines);
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  // Zero padding: A columns >= k, B rows >= k and columns >= n.
  for (uint32_t kt = 0; kt < gemm.k_tiles; ++kt) {
    for (uint32_t i = 0; i < m; ++i) {
      for (int lane = 0; lane < kN; ++lane) {
        if (kt * kN + lane >= k) bench.vmem()[gemm.a_region(kt) + i][lane] = 0;
      }
    }
    for (uint32_t nt = 0; nt < gemm.n_tiles; ++nt) {
      for (int r = 0; r < kN; ++r) {
        for (int c = 0; c < kN; ++c) {
          const uint32_t kk = kt * kN + (transposed ? c : r), nn = nt * kN + (transposed ? r : c);
          if (kk >= k || nn >= n) bench.vmem()[gemm.b_tile(kt, nt) + r][c] = 0;
        }
      }
    }
  }
  Vmem expected = bench.vmem();
  const std::vector<Command> program = gemm.Program();
  const uint64_t start = bench.cycle();
  RunProgramAndCompare(bench, reference, expected, program);
  const uint64_t cycles = bench.cycle() - start;
  const uint64_t rows = static_cast<uint64_t>(m) * gemm.k_tiles * gemm.n_tiles;
  EXPECT_EQ(bench.rows_accepted(), rows);
  EXPECT_EQ(bench.last_row_cycle() - bench.first_row_cycle() + 1, rows) << "a bubble between tiles";
  // First load alone (N + 1), then every row once, then the drain of the last row.
  EXPECT_EQ(cycles, kLwBusy + 1 + rows + kMmOverhead) << "cycles of the whole program";
}

TEST(MxuTest, OverlappedGemmStreamsWithoutBubble) { OverlappedGemm(Seed(21), false); }

TEST(MxuTest, OverlappedGemmTransposedWeights) { OverlappedGemm(Seed(22), true); }

// A load issued right behind a SWAP waits until the rows that still use its bank left the array,
// and the multiply after it waits for the load; results are those of sequential execution.
TEST(MxuTest, LoadBehindSwapWaitsForTheOldRows) {
  MxuBench bench(Seed(23));
  MxuReference reference;
  DataGenerator gen(Seed(23));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  Vmem expected = bench.vmem();
  RunProgramAndCompare(bench, reference, expected,
                       {LoadWeights(0, false), Multiply(4 * kN, 8 * kN, 3, false, true), LoadWeights(kN, true),
                        Multiply(12 * kN, 16 * kN, 2, false, true), Multiply(4 * kN, 20 * kN, 1, true, true)});
}

// Hazards through VMEM between overlapping commands: a multiply reads lines the previous one
// writes, a load reads lines a running multiply writes, ACC rows of consecutive one-row multiplies
// into the same line (the old value is the line written in the same cycle).
TEST(MxuTest, HazardsBetweenOverlappingCommands) {
  MxuBench bench(Seed(24));
  MxuReference reference;
  DataGenerator gen(Seed(24));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  Vmem expected = bench.vmem();
  const uint32_t a = 2 * kN, c = 6 * kN, d = 10 * kN;
  RunProgramAndCompare(bench, reference, expected,
                       {LoadWeights(0, false), Multiply(a, c, kN + 2, false, true),  // c = a * W0
                        Multiply(c, d, kN, false, false),                            // reads c: RAW
                        LoadWeights(d, false),                                       // reads d: RAW
                        Multiply(a, c, 1, true, true), Multiply(a, c, 1, true, false),
                        Multiply(a + 1, c, 1, true, false), Multiply(a, c, 2, true, false)});
}

// Random programs of overlapping commands over random (also overlapping) regions, compared with
// sequential execution after every program.
void RandomPrograms(uint64_t seed, int programs, bool specials) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  MxuBench bench(seed);
  MxuReference reference;
  DataGenerator gen(seed * 104729 + 3);
  gen.Fill(bench.vmem(), 0, kVmemLines, specials);
  Vmem expected = bench.vmem();
  const uint32_t span = std::min<uint32_t>(kVmemLines, 24 * kN);  // a small area: regions collide
  for (int p = 0; p < programs && !::testing::Test::HasFailure(); ++p) {
    std::vector<Command> program;
    std::vector<int> gaps;
    const int length = 1 + static_cast<int>(gen.Next() % 6);
    for (int c = 0; c < length; ++c) {
      if (gen.Next() % 3 == 0) {
        program.push_back(LoadWeights(static_cast<uint32_t>(gen.Next() % (span - kN + 1)), gen.Next() & 1));
      } else {
        const uint32_t count = (gen.Next() % 4 == 0) ? static_cast<uint32_t>(gen.Next() % 3)
                                                     : static_cast<uint32_t>(gen.Next() % (3 * kN + 1));
        const uint32_t src = static_cast<uint32_t>(gen.Next() % (span - count + 1));
        uint32_t dst = 0;
        do {
          dst = static_cast<uint32_t>(gen.Next() % (span - count + 1));
        } while (!(dst + count <= src || src + count <= dst) && count > 0);
        program.push_back(Multiply(src, dst, count, gen.Next() & 1, gen.Next() & 1));
      }
      gaps.push_back(gen.Next() % 3 == 0 ? static_cast<int>(gen.Next() % (2 * kN)) : 0);
    }
    RunProgramAndCompare(bench, reference, expected, program, gaps);
    if (gen.Next() % 3 == 0) {
      const uint32_t count = 1 + static_cast<uint32_t>(gen.Next() % (4 * kN));
      const uint32_t first = static_cast<uint32_t>(gen.Next() % (span - count + 1));
      gen.Fill(bench.vmem(), first, count, specials);
      std::copy(bench.vmem().begin() + first, bench.vmem().begin() + first + count, expected.begin() + first);
    }
  }
}

TEST(MxuTest, RandomOverlappedPrograms) { RandomPrograms(Seed(25), kN <= 8 ? 120 : 40, false); }

TEST(MxuTest, RandomOverlappedProgramsWithSpecialValues) { RandomPrograms(Seed(26), kN <= 8 ? 60 : 20, true); }

// Not a timed test: reports how fast the verilated MXU runs on a long stream.
TEST(MxuTest, SimulationSpeed) {
  MxuBench bench(Seed(13));
  DataGenerator gen(Seed(13));
  gen.Fill(bench.vmem(), 0, kVmemLines, false);
  bench.Run(LoadWeights(0, false));
  const uint32_t rows = kVmemLines / 2 - kN;
  const uint64_t start_cycle = bench.cycle();
  const std::clock_t start = std::clock();  // CPU time: the machine may be shared
  bench.Run(Multiply(kN, kVmemLines / 2, rows, false, true));
  const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  const double cycles = static_cast<double>(bench.cycle() - start_cycle);
  std::cout << "N=" << kN << ": " << cycles << " cycles in " << seconds << " s CPU: " << cycles / seconds
            << " cycles/s, " << cycles * kN * kN / seconds / 1e6 << " M PE-cycles/s\n";
  EXPECT_GT(cycles, rows);
}

}  // namespace
