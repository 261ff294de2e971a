// Verilated bench of the MXU (rtl/mxu/mxu.sv) for N = MXU_N.
//
// A C++ VMEM model serves the MXU's three ports (reads answer one cycle later); every command runs
// on the RTL and on a reference of docs/isa.md built on tpu::numerics, and after every command the
// whole VMEM of both is compared bit for bit. Each cycle the port traffic is checked against what
// the running command must do (addresses in order, no stray reads or writes), and each command's
// busy time against the documented pipeline timing.
//
// Environment: MXU_TEST_SEED=<n> replaces the fixed seeds of the random tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "Vmxu.h"
#include "sim/numerics/numerics.h"
#include "tpu_config.h"
#include "tpu_isa.h"
#include "verilated.h"

namespace {

namespace num = tpu::numerics;
namespace isa = tpu::isa;

constexpr int kN = MXU_N;
constexpr uint32_t kVmemLines = static_cast<uint32_t>(tpu::cfg::kVmemLines);
// Pipeline timing documented in rtl/mxu/mxu.sv: an MM of C rows is busy C + kMmOverhead cycles,
// an LW is busy kLwBusy cycles.
constexpr uint64_t kMmOverhead = 2 * kN + 1;
constexpr uint64_t kLwBusy = kN + 1;

using Line = std::array<uint32_t, kN>;
using Vmem = std::vector<Line>;

struct Command {
  isa::Opcode opcode = isa::Opcode::NOP;
  uint8_t flags = 0;
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t count = 0;

  bool is_mm() const { return opcode == isa::Opcode::MXU_MM; }
  std::string ToString() const {
    std::ostringstream out;
    if (is_mm()) {
      out << "MXU_MM src=" << src << " dst=" << dst << " count=" << count
          << ((flags & isa::flag::MXU_MM_ACC) ? " ACC" : "") << ((flags & isa::flag::MXU_MM_SWAP) ? " SWAP" : "");
    } else {
      out << "MXU_LW src=" << src << ((flags & isa::flag::MXU_LW_TRANSPOSE) ? " TRANSPOSE" : "");
    }
    return out.str();
  }
};

Command LoadWeights(uint32_t src, bool transpose) {
  return {isa::Opcode::MXU_LW, static_cast<uint8_t>(transpose ? isa::flag::MXU_LW_TRANSPOSE : 0), src, 0, 0};
}

Command Multiply(uint32_t src, uint32_t dst, uint32_t count, bool acc, bool swap) {
  const uint8_t flags = static_cast<uint8_t>((acc ? isa::flag::MXU_MM_ACC : 0) | (swap ? isa::flag::MXU_MM_SWAP : 0));
  return {isa::Opcode::MXU_MM, flags, src, dst, count};
}

// docs/isa.md semantics of MXU_LW and MXU_MM, written directly from the text with tpu::numerics.
class MxuReference {
 public:
  void Execute(const Command& cmd, Vmem& vmem) {
    if (!cmd.is_mm()) {
      const bool transpose = cmd.flags & isa::flag::MXU_LW_TRANSPOSE;
      for (int k = 0; k < kN; ++k) {
        for (int n = 0; n < kN; ++n) {
          back_[k][n] = num::F32ToBf16(transpose ? vmem[cmd.src + n][k] : vmem[cmd.src + k][n]);
        }
      }
      return;
    }
    if (cmd.flags & isa::flag::MXU_MM_SWAP) std::swap(front_, back_);
    const bool acc = cmd.flags & isa::flag::MXU_MM_ACC;
    for (uint32_t i = 0; i < cmd.count; ++i) {
      std::array<uint16_t, kN> a;
      for (int k = 0; k < kN; ++k) a[k] = num::F32ToBf16(vmem[cmd.src + i][k]);
      Line& out = vmem[cmd.dst + i];
      for (int n = 0; n < kN; ++n) {
        uint32_t sum = 0;  // +0
        for (int k = 0; k < kN; ++k) sum = num::F32Add(sum, num::Bf16Mul(a[k], front_[k][n]));
        out[n] = acc ? num::F32Add(out[n], sum) : sum;
      }
    }
  }

 private:
  using Weights = std::array<std::array<uint16_t, kN>, kN>;
  Weights front_{};  // both buffers reset to +0, like the RTL
  Weights back_{};
};

// Scoreboard: the first differing element of two VMEM images, or "" when they are equal.
std::string FirstMismatch(const Vmem& rtl, const Vmem& expected) {
  for (uint32_t line = 0; line < kVmemLines; ++line) {
    if (rtl[line] == expected[line]) continue;
    for (int lane = 0; lane < kN; ++lane) {
      if (rtl[line][lane] != expected[line][lane]) {
        std::ostringstream out;
        out << "VMEM line " << line << " lane " << lane << ": rtl " << num::F32ToString(rtl[line][lane])
            << ", reference " << num::F32ToString(expected[line][lane]);
        return out.str();
      }
    }
  }
  return "";
}

// The verilated MXU, its VMEM and a per-cycle check of the port traffic.
class MxuBench {
 public:
  explicit MxuBench(uint64_t seed) : vmem_(kVmemLines), rng_(seed) {
    context_ = std::make_unique<VerilatedContext>();
    top_ = std::make_unique<Vmxu>(context_.get());
    for (Line& line : vmem_) line.fill(0);
    top_->rst_ni = 0;
    for (int i = 0; i < 3; ++i) Cycle();
    top_->rst_ni = 1;
    top_->clk_i = 0;
    top_->eval();
  }
  ~MxuBench() { top_->final(); }

  Vmem& vmem() { return vmem_; }
  uint64_t cycle() const { return cycle_; }
  bool busy() const { return top_->busy_o; }
  uint64_t rows_accepted() const { return rows_accepted_; }
  uint64_t first_row_cycle() const { return first_row_cycle_; }
  uint64_t last_row_cycle() const { return last_row_cycle_; }

  // Drives `cmd` in the current cycle (the MXU must be idle) and clocks it in.
  void Issue(const Command& cmd) {
    ASSERT_FALSE(top_->busy_o) << "issue while busy: " << cmd.ToString();
    top_->cmd_valid_i = 1;
    top_->cmd_opcode_i = static_cast<uint8_t>(cmd.opcode);
    top_->cmd_flags_i = cmd.flags;
    top_->cmd_src_i = cmd.src;
    top_->cmd_dst_i = cmd.dst;
    top_->cmd_count_i = cmd.count;
    expect_ = Expectation{};
    expect_.cmd = cmd;
    expect_.a_reads_left = cmd.is_mm() ? cmd.count : kN;
    expect_.a_next = cmd.src;
    if (cmd.is_mm()) {
      expect_.writes_left = cmd.count;
      expect_.b_reads_left = (cmd.flags & isa::flag::MXU_MM_ACC) ? cmd.count : 0;
    }
    expect_.b_next = expect_.wr_next = cmd.dst;
    rows_accepted_ = 0;
    Cycle();
    RandomizeCommandInputs();  // cmd_valid_i is low again; other fields must not matter
  }

  // Clocks until busy_o is low at the start of a cycle; returns the number of busy cycles.
  uint64_t WaitIdle() {
    const uint64_t limit = 4 * (static_cast<uint64_t>(expect_.cmd.count) + kN) + 64;
    uint64_t busy_cycles = 0;
    top_->eval();
    while (top_->busy_o) {
      if (busy_cycles > limit) {
        ADD_FAILURE() << expect_.cmd.ToString() << " still busy after " << busy_cycles << " cycles";
        return busy_cycles;
      }
      Cycle();
      ++busy_cycles;
    }
    EXPECT_EQ(expect_.a_reads_left, 0u) << "missing port-A reads after " << expect_.cmd.ToString();
    EXPECT_EQ(expect_.b_reads_left, 0u) << "missing port-B reads after " << expect_.cmd.ToString();
    EXPECT_EQ(expect_.writes_left, 0u) << "missing writes after " << expect_.cmd.ToString();
    EXPECT_EQ(rows_accepted_, expect_.cmd.is_mm() ? expect_.cmd.count : 0u)
        << "row_accepted_o pulses for " << expect_.cmd.ToString();
    return busy_cycles;
  }

  uint64_t Run(const Command& cmd) {
    Issue(cmd);
    return WaitIdle();
  }

  void Idle(int cycles) {
    for (int i = 0; i < cycles; ++i) Cycle();
  }

  // Drives flush_i for one cycle: the command ends, nothing more is read or written.
  void Flush() {
    top_->flush_i = 1;
    Cycle();
    top_->flush_i = 0;
    expect_ = Expectation{};
    expect_.flushed = true;
  }

  // One clock cycle: sample and check the ports, serve reads (answered next cycle, with the VMEM
  // contents before this cycle's write), apply the write, clock the edge.
  void Cycle() {
    top_->clk_i = 0;
    top_->eval();
    const bool rst = !top_->rst_ni;
    const bool a_rd = top_->a_rd_en_o, b_rd = top_->b_rd_en_o, wr = top_->wr_en_o;
    if (!rst) CheckPorts(a_rd, b_rd, wr);
    if (top_->row_accepted_o) {
      if (rows_accepted_ == 0) first_row_cycle_ = cycle_;
      last_row_cycle_ = cycle_;
      ++rows_accepted_;
    }
    const Line a_data = a_rd ? vmem_.at(top_->a_rd_addr_o) : Garbage();
    const Line b_data = b_rd ? vmem_.at(top_->b_rd_addr_o) : Garbage();
    if (wr && !failed_) {
      Line& line = vmem_.at(top_->wr_addr_o);
      for (int j = 0; j < kN; ++j) line[j] = top_->wr_data_o[j];
    }
    top_->clk_i = 1;
    top_->eval();
    for (int j = 0; j < kN; ++j) {
      top_->a_rd_data_i[j] = a_data[j];
      top_->b_rd_data_i[j] = b_data[j];
    }
    top_->cmd_valid_i = 0;
    ++cycle_;
  }

 private:
  struct Expectation {
    Command cmd;
    bool flushed = false;
    uint64_t a_reads_left = 0, b_reads_left = 0, writes_left = 0;
    uint32_t a_next = 0, b_next = 0, wr_next = 0;
  };

  void CheckPorts(bool a_rd, bool b_rd, bool wr) {
    const std::string what = expect_.flushed ? std::string("after a flush") : expect_.cmd.ToString();
    auto fail = [&](const std::string& message) {
      if (!failed_) ADD_FAILURE() << "cycle " << cycle_ << ", " << what << ": " << message;
      failed_ = true;
    };
    if (a_rd) {
      if (expect_.a_reads_left == 0) {
        fail("unexpected port-A read of line " + std::to_string(top_->a_rd_addr_o));
      } else if (top_->a_rd_addr_o != expect_.a_next) {
        fail("port-A read of line " + std::to_string(top_->a_rd_addr_o) + ", expected " + std::to_string(expect_.a_next));
      } else {
        --expect_.a_reads_left;
        ++expect_.a_next;
      }
    }
    if (b_rd) {
      if (expect_.b_reads_left == 0) {
        fail("unexpected port-B read of line " + std::to_string(top_->b_rd_addr_o));
      } else if (top_->b_rd_addr_o != expect_.b_next) {
        fail("port-B read of line " + std::to_string(top_->b_rd_addr_o) + ", expected " + std::to_string(expect_.b_next));
      } else {
        --expect_.b_reads_left;
        ++expect_.b_next;
      }
    }
    if (wr) {
      if (expect_.writes_left == 0) {
        fail("unexpected write of line " + std::to_string(top_->wr_addr_o));
      } else if (top_->wr_addr_o != expect_.wr_next) {
        fail("write of line " + std::to_string(top_->wr_addr_o) + ", expected " + std::to_string(expect_.wr_next));
      } else if (expect_.b_reads_left != 0 && expect_.b_next <= top_->wr_addr_o) {
        fail("write of line " + std::to_string(top_->wr_addr_o) + " before its old value was read");
      } else {
        --expect_.writes_left;
        ++expect_.wr_next;
      }
    }
    if ((a_rd || b_rd || wr) && !top_->busy_o) fail("port traffic while busy_o is low");
  }

  // Data driven on a read port in cycles that answer no read: using it shows up as a mismatch.
  Line Garbage() {
    Line line;
    for (uint32_t& word : line) word = static_cast<uint32_t>(rng_());
    return line;
  }

  void RandomizeCommandInputs() {
    top_->cmd_opcode_i = static_cast<uint8_t>(rng_());
    top_->cmd_flags_i = static_cast<uint8_t>(rng_());
    top_->cmd_src_i = static_cast<uint32_t>(rng_());
    top_->cmd_dst_i = static_cast<uint32_t>(rng_());
    top_->cmd_count_i = static_cast<uint32_t>(rng_());
  }

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vmxu> top_;
  Vmem vmem_;
  std::mt19937_64 rng_;
  Expectation expect_;
  uint64_t cycle_ = 0;
  uint64_t rows_accepted_ = 0;
  uint64_t first_row_cycle_ = 0;
  uint64_t last_row_cycle_ = 0;
  bool failed_ = false;
};

uint64_t Seed(uint64_t fixed) {
  const char* env = std::getenv("MXU_TEST_SEED");
  return env ? std::strtoull(env, nullptr, 0) : fixed;
}

// Random fp32 data: mostly normal numbers around 1 of both signs, some zeros, some tiny and some
// large values (products and sums reach the FTZ and overflow paths), and with `specials` also
// infinities, NaNs, subnormals and values that round to infinity in bf16.
class DataGenerator {
 public:
  explicit DataGenerator(uint64_t seed) : rng_(seed) {}

  uint32_t Value(bool specials) {
    const uint32_t sign = (rng_() & 1) ? num::kF32SignMask : 0u;
    const uint32_t fraction = static_cast<uint32_t>(rng_()) & num::kF32FractionMask;
    const int pick = static_cast<int>(rng_() % 100);
    if (specials) {
      switch (pick % 10) {
        case 0: return sign | num::kF32Inf;
        case 1: return num::kF32Inf | (fraction | 1u);                              // NaN, any payload
        case 2: return sign | fraction;                                             // subnormal or zero
        case 3: return sign | 0x7F7F8000u | (fraction & 0x7FFFu);                  // rounds to inf in bf16
        case 4: return sign | (static_cast<uint32_t>(1 + rng_() % 4) << 23) | fraction;  // tiny: FTZ
        case 5: return sign | (static_cast<uint32_t>(200 + rng_() % 54) << 23) | fraction;  // overflows
        default: break;
      }
    }
    if (pick < 6) return sign;                                                     // +-0
    if (pick < 9) return sign | (static_cast<uint32_t>(1 + rng_() % 40) << 23) | fraction;
    if (pick < 11) return sign | (static_cast<uint32_t>(180 + rng_() % 40) << 23) | fraction;
    return sign | (static_cast<uint32_t>(127 - 12 + rng_() % 24) << 23) | fraction;  // 2^-12 .. 2^12
  }

  void Fill(Vmem& vmem, uint32_t first, uint32_t count, bool specials) {
    for (uint32_t i = 0; i < count; ++i) {
      for (uint32_t& word : vmem[first + i]) word = Value(specials);
    }
  }

  uint64_t Next() { return rng_(); }

 private:
  std::mt19937_64 rng_;
};

// Runs `cmd` on both sides and compares the VMEMs; returns the busy cycles.
uint64_t RunAndCompare(MxuBench& bench, MxuReference& reference, Vmem& expected, const Command& cmd) {
  SCOPED_TRACE(cmd.ToString());
  const uint64_t busy = bench.Run(cmd);
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
  bench.Issue(aborted);
  bench.Idle(3 * kN);
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
