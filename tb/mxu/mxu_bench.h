// Verilated bench of the MXU (rtl/mxu/mxu.sv) for N = MXU_N, shared by the GoogleTest bench
// (mxu_test.cc) and the benchmark (mxu_perf.cc).
//
// A C++ VMEM model of MXU_VMEM_LINES lines serves the MXU's four ports (reads answer one cycle later
// with the contents before that cycle's write). Commands are queued and issued as soon as the MXU is
// ready for them, so loads overlap multiplies and multiplies follow each other without a gap, as a
// sequencer would issue them. Each cycle the port traffic is checked against what the accepted
// commands must do, in order: the lines of every port in the order of the commands, no stray reads or
// writes, no traffic while idle. A reference of docs/isa.md built on tpu::numerics executes the same
// commands one after the other; the scoreboard compares the two VMEM images and names the first
// differing element.
#pragma once

#include <verilated.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "Vmxu.h"
#include "sysc/verilated_coverage.h"
#include "sim/numerics/numerics.h"
#include "tpu_config.h"
#include "tpu_isa.h"

#ifndef MXU_VMEM_LINES
#define MXU_VMEM_LINES (tpu::cfg::kVmemLines)
#endif

namespace mxu_bench {

namespace num = tpu::numerics;
namespace isa = tpu::isa;

constexpr int kN = MXU_N;
constexpr uint32_t kVmemLines = static_cast<uint32_t>(MXU_VMEM_LINES);
// Pipeline timing documented in rtl/mxu/mxu.sv: an MM of C rows alone is busy C + kMmOverhead
// cycles, an LW alone kLwBusy cycles.
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
  bool acc() const { return is_mm() && (flags & isa::flag::MXU_MM_ACC); }
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

inline Command LoadWeights(uint32_t src, bool transpose) {
  return {isa::Opcode::MXU_LW, static_cast<uint8_t>(transpose ? isa::flag::MXU_LW_TRANSPOSE : 0), src, 0, 0};
}

inline Command Multiply(uint32_t src, uint32_t dst, uint32_t count, bool acc, bool swap) {
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
          (*back_)[k][n] = num::F32ToBf16(transpose ? vmem[cmd.src + n][k] : vmem[cmd.src + k][n]);
        }
      }
      return;
    }
    if (cmd.flags & isa::flag::MXU_MM_SWAP) std::swap(front_, back_);
    const bool acc = cmd.flags & isa::flag::MXU_MM_ACC;
    // Columns of the front weights, contiguous for the inner loop.
    std::vector<uint16_t> columns(static_cast<size_t>(kN) * kN);
    for (int k = 0; k < kN; ++k) {
      for (int n = 0; n < kN; ++n) columns[static_cast<size_t>(n) * kN + k] = (*front_)[k][n];
    }
    for (uint32_t i = 0; i < cmd.count; ++i) {
      std::array<uint16_t, kN> a;
      for (int k = 0; k < kN; ++k) a[k] = num::F32ToBf16(vmem[cmd.src + i][k]);
      Line& out = vmem[cmd.dst + i];
      for (int n = 0; n < kN; ++n) {
        const uint16_t* w = &columns[static_cast<size_t>(n) * kN];
        uint32_t sum = 0;  // +0
        for (int k = 0; k < kN; ++k) sum = num::F32Add(sum, num::Bf16Mul(a[k], w[k]));
        out[n] = acc ? num::F32Add(out[n], sum) : sum;
      }
    }
  }

 private:
  using Weights = std::array<std::array<uint16_t, kN>, kN>;
  // Both buffers reset to +0, like the RTL. Heap: 2 x 32 KiB at N=128.
  std::unique_ptr<Weights> front_ = std::make_unique<Weights>();
  std::unique_ptr<Weights> back_ = std::make_unique<Weights>();
};

// Scoreboard: the first differing element of two VMEM images, or "" when they are equal; `count`
// (optional) receives the number of differing elements.
inline std::string FirstMismatch(const Vmem& rtl, const Vmem& expected, uint64_t* count = nullptr) {
  std::string first;
  uint64_t differing = 0;
  for (uint32_t line = 0; line < kVmemLines; ++line) {
    if (rtl[line] == expected[line]) continue;
    for (int lane = 0; lane < kN; ++lane) {
      if (rtl[line][lane] == expected[line][lane]) continue;
      if (first.empty()) {
        std::ostringstream out;
        out << "VMEM line " << line << " lane " << lane << ": rtl " << num::F32ToString(rtl[line][lane])
            << ", reference " << num::F32ToString(expected[line][lane]);
        first = out.str();
        if (count == nullptr) return first;
      }
      ++differing;
    }
  }
  if (count != nullptr) *count = differing;
  return first;
}

// The verilated MXU, its VMEM, a command queue and a per-cycle check of the port traffic.
class MxuBench {
 public:
  explicit MxuBench(uint64_t seed) : vmem_(kVmemLines), garbage_state_(seed | 1) {
    context_ = std::make_unique<VerilatedContext>();
    top_ = std::make_unique<Vmxu>(context_.get());
    for (Line& line : vmem_) line.fill(0);
    top_->rst_ni = 0;
    for (int i = 0; i < 3; ++i) Cycle();
    top_->rst_ni = 1;
    top_->clk_i = 0;
    top_->eval();
  }
  ~MxuBench() {
    top_->final();
    tpu::WriteVerilatedCoverage(context_.get());
  }

  Vmem& vmem() { return vmem_; }
  uint64_t cycle() const { return cycle_; }
  bool busy() const { return top_->busy_o; }
  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }
  uint64_t rows_accepted() const { return rows_accepted_; }
  uint64_t first_row_cycle() const { return first_row_cycle_; }
  uint64_t last_row_cycle() const { return last_row_cycle_; }
  uint64_t last_issue_cycle() const { return last_issue_cycle_; }
  // Cycles in which the head of the queue waited for the MXU to be ready.
  uint64_t issue_stall_cycles() const { return issue_stall_cycles_; }

  // Queues `cmd`; it is issued in the first cycle, `gap` cycles or more from now, that the MXU is
  // ready for it and every earlier command is issued.
  void Enqueue(const Command& cmd, int gap = 0) { queue_.push_back({cmd, gap}); }
  bool queue_empty() const { return queue_.empty(); }
  void ResetRowCounters() { rows_accepted_ = 0; }

  // Clocks until the queue is empty and busy_o is low at the start of a cycle; returns the cycles
  // run. Gives up (failure()) after `limit` cycles.
  uint64_t RunUntilIdle(uint64_t limit) {
    const uint64_t start = cycle_;
    for (;;) {
      top_->clk_i = 0;
      top_->eval();
      if (queue_.empty() && !top_->busy_o) break;
      if (cycle_ - start > limit) {
        Fail("still busy after " + std::to_string(cycle_ - start) + " cycles");
        break;
      }
      Cycle();
    }
    if (!failed()) {
      if (!expect_w_.empty() || !expect_a_.empty() || !expect_b_.empty() || !expect_wr_.empty()) {
        Fail("idle with port traffic missing: W " + std::to_string(expect_w_.size()) + ", A " +
             std::to_string(expect_a_.size()) + ", B " + std::to_string(expect_b_.size()) + ", writes " +
             std::to_string(expect_wr_.size()));
      }
    }
    return cycle_ - start;
  }

  // Issues `cmd` alone on an idle MXU; returns its busy cycles (cycles after the issue cycle
  // until busy_o is low).
  uint64_t Run(const Command& cmd) {
    if (!queue_.empty() || top_->busy_o) Fail("Run() on a busy MXU");
    Enqueue(cmd);
    const uint64_t start = cycle_;
    RunUntilIdle(4 * (static_cast<uint64_t>(cmd.count) + kN) + 64);
    return cycle_ - start - 1;
  }

  void Idle(int cycles) {
    for (int i = 0; i < cycles; ++i) Cycle();
  }

  // Drives flush_i for one cycle: every command ends, nothing more is read or written.
  void Flush() {
    top_->flush_i = 1;
    Cycle();
    top_->flush_i = 0;
    expect_w_.clear();
    expect_a_.clear();
    expect_b_.clear();
    expect_wr_.clear();
    queue_.clear();
    b_reads_done_ = acc_writes_done_ = 0;
  }

  // Issues the head of the queue (if ready) and makes one clock cycle: sample and check the ports,
  // serve reads (answered next cycle, with the VMEM contents before this cycle's write), apply the
  // write, clock the edge.
  void Cycle() {
    top_->clk_i = 0;
    top_->cmd_valid_i = 0;
    top_->eval();
    const bool rst = !top_->rst_ni;
    if (!rst && !top_->flush_i && !queue_.empty()) {
      Pending& head = queue_.front();
      if (head.gap > 0) {
        --head.gap;
      } else {
        const bool ready = head.cmd.is_mm() ? top_->mm_ready_o : top_->lw_ready_o;
        if (ready) {
          DriveCommand(head.cmd);
          ExpectTraffic(head.cmd);
          last_issue_cycle_ = cycle_;
          queue_.pop_front();
          top_->eval();
        } else {
          ++issue_stall_cycles_;
        }
      }
    }
    const bool w_rd = top_->w_rd_en_o, a_rd = top_->a_rd_en_o, b_rd = top_->b_rd_en_o, wr = top_->wr_en_o;
    if (!rst) CheckPorts(w_rd, a_rd, b_rd, wr);
    if (top_->row_accepted_o) {
      if (rows_accepted_ == 0) first_row_cycle_ = cycle_;
      last_row_cycle_ = cycle_;
      ++rows_accepted_;
    }
    const Line* w_data = w_rd ? &vmem_.at(top_->w_rd_addr_o) : nullptr;
    const Line* a_data = a_rd ? &vmem_.at(top_->a_rd_addr_o) : nullptr;
    const Line* b_data = b_rd ? &vmem_.at(top_->b_rd_addr_o) : nullptr;
    Line w_line, a_line, b_line;
    w_line = w_data ? *w_data : Garbage();
    a_line = a_data ? *a_data : Garbage();
    b_line = b_data ? *b_data : Garbage();
    if (wr && !failed()) {
      Line& line = vmem_.at(top_->wr_addr_o);
      for (int j = 0; j < kN; ++j) line[j] = top_->wr_data_o[j];
    }
    top_->clk_i = 1;
    top_->eval();
    for (int j = 0; j < kN; ++j) {
      top_->w_rd_data_i[j] = w_line[j];
      top_->a_rd_data_i[j] = a_line[j];
      top_->b_rd_data_i[j] = b_line[j];
    }
    RandomizeCommandInputs();  // cmd_valid_i is low between issues; other fields must not matter
    ++cycle_;
  }

 private:
  struct Pending {
    Command cmd;
    int gap;
  };

  void DriveCommand(const Command& cmd) {
    top_->cmd_valid_i = 1;
    top_->cmd_opcode_i = static_cast<uint8_t>(cmd.opcode);
    top_->cmd_flags_i = cmd.flags;
    top_->cmd_src_i = cmd.src;
    top_->cmd_dst_i = cmd.dst;
    top_->cmd_count_i = cmd.count;
  }

  void ExpectTraffic(const Command& cmd) {
    if (!cmd.is_mm()) {
      for (uint32_t i = 0; i < static_cast<uint32_t>(kN); ++i) expect_w_.push_back(cmd.src + i);
      return;
    }
    for (uint32_t i = 0; i < cmd.count; ++i) {
      expect_a_.push_back(cmd.src + i);
      expect_wr_.push_back({cmd.dst + i, cmd.acc()});
      if (cmd.acc()) expect_b_.push_back(cmd.dst + i);
    }
  }

  void Fail(const std::string& message) {
    if (failure_.empty()) failure_ = "cycle " + std::to_string(cycle_) + ": " + message;
  }

  void CheckPort(const char* port, bool enable, uint32_t addr, std::deque<uint32_t>& expect) {
    if (!enable) return;
    if (expect.empty()) {
      Fail(std::string("unexpected ") + port + " of line " + std::to_string(addr));
    } else if (addr != expect.front()) {
      Fail(std::string(port) + " of line " + std::to_string(addr) + ", expected " + std::to_string(expect.front()));
    } else {
      expect.pop_front();
    }
  }

  void CheckPorts(bool w_rd, bool a_rd, bool b_rd, bool wr) {
    CheckPort("port-W read", w_rd, top_->w_rd_addr_o, expect_w_);
    CheckPort("port-A read", a_rd, top_->a_rd_addr_o, expect_a_);
    if (wr) {
      const uint32_t addr = top_->wr_addr_o;
      if (expect_wr_.empty()) {
        Fail("unexpected write of line " + std::to_string(addr));
      } else if (addr != expect_wr_.front().line) {
        Fail("write of line " + std::to_string(addr) + ", expected " + std::to_string(expect_wr_.front().line));
      } else {
        // An ACC row's old value must have been read (port B, an earlier cycle) before its result.
        if (expect_wr_.front().acc) {
          if (b_reads_done_ <= acc_writes_done_) {
            Fail("write of line " + std::to_string(addr) + " before its old value was read");
          }
          ++acc_writes_done_;
        }
        expect_wr_.pop_front();
      }
    }
    const size_t b_before = expect_b_.size();
    CheckPort("port-B read", b_rd, top_->b_rd_addr_o, expect_b_);
    if (expect_b_.size() < b_before) ++b_reads_done_;
    if ((w_rd || a_rd || b_rd || wr) && !top_->busy_o) Fail("port traffic while busy_o is low");
  }

  // Data driven on a read port in cycles that answer no read: using it shows up as a mismatch.
  Line Garbage() {
    Line line;
    for (uint32_t& word : line) {
      garbage_state_ ^= garbage_state_ << 13;
      garbage_state_ ^= garbage_state_ >> 7;
      garbage_state_ ^= garbage_state_ << 17;
      word = static_cast<uint32_t>(garbage_state_);
    }
    return line;
  }

  void RandomizeCommandInputs() {
    const Line noise = Garbage();
    top_->cmd_opcode_i = static_cast<uint8_t>(noise[0]);
    top_->cmd_flags_i = static_cast<uint8_t>(noise[1 % kN]);
    top_->cmd_src_i = noise[2 % kN];
    top_->cmd_dst_i = noise[3 % kN];
    top_->cmd_count_i = noise[4 % kN];
  }

  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vmxu> top_;
  Vmem vmem_;
  uint64_t garbage_state_;
  std::deque<Pending> queue_;
  struct ExpectedWrite {
    uint32_t line;
    bool acc;
  };
  std::deque<uint32_t> expect_w_, expect_a_, expect_b_;
  std::deque<ExpectedWrite> expect_wr_;
  uint64_t b_reads_done_ = 0, acc_writes_done_ = 0;
  uint64_t cycle_ = 0;
  uint64_t rows_accepted_ = 0;
  uint64_t first_row_cycle_ = 0;
  uint64_t last_row_cycle_ = 0;
  uint64_t last_issue_cycle_ = 0;
  uint64_t issue_stall_cycles_ = 0;
  std::string failure_;
};

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

// Tiled GEMM C[M x Nc] = A[M x K] * B[K x Nc] as a command program, with M, K, Nc multiples of kN
// (K tiles accumulated with ACC, weight loads overlapped with the previous tile's multiply). A is
// stored as K/kN regions of M lines (region kt holds columns kt*kN..), B as (K/kN)*(Nc/kN) tiles of kN
// lines (tile (kt, nt) rows kt*kN.., columns nt*kN..; transposed tiles hold the transpose), C as
// Nc/kN regions of M lines.
struct GemmLayout {
  uint32_t m, k_tiles, n_tiles;
  uint32_t a_base, b_base, c_base;
  bool transposed;

  uint32_t a_region(uint32_t kt) const { return a_base + kt * m; }
  uint32_t b_tile(uint32_t kt, uint32_t nt) const { return b_base + (kt * n_tiles + nt) * kN; }
  uint32_t c_region(uint32_t nt) const { return c_base + nt * m; }
  uint32_t lines() const { return k_tiles * m + k_tiles * n_tiles * kN + n_tiles * m; }

  std::vector<Command> Program() const {
    std::vector<Command> program;
    for (uint32_t nt = 0; nt < n_tiles; ++nt) {
      for (uint32_t kt = 0; kt < k_tiles; ++kt) {
        program.push_back(LoadWeights(b_tile(kt, nt), transposed));
        program.push_back(Multiply(a_region(kt), c_region(nt), m, kt > 0, true));
      }
    }
    return program;
  }
};

}  // namespace mxu_bench
