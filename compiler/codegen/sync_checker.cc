#include "compiler/codegen/sync_checker.h"

#include <array>
#include <deque>
#include <map>
#include <optional>

#include "tpu_isa.h"

namespace tpu::compiler {
namespace {

using isa::Opcode;

struct Range {
  uint64_t begin = 0, end = 0;  // [begin, end) VMEM lines
  bool Overlaps(const Range& other) const { return begin < other.end && other.begin < end && begin < end && other.begin < other.end; }
};

struct Footprint {
  uint32_t pc = 0;
  std::vector<Range> reads, writes;
};

// In the order of SYNC's flag bits.
enum Unit { kDma = 0, kMxu = 1, kVpu = 2, kIci = 3, kNumUnits = 4 };
const char* const kUnitNames[] = {"DMA", "MXU", "VPU", "ICI"};
static_assert(isa::flag::SYNC_DMA == 1u << kDma && isa::flag::SYNC_MXU == 1u << kMxu &&
                  isa::flag::SYNC_VPU == 1u << kVpu && isa::flag::SYNC_ICI == 1u << kIci,
              "units in the order of SYNC's flags");

std::string RangeText(const Range& r) { return "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")"; }

// What the MXU may still be doing (docs/isa.md, rtl/mxu/mxu.sv issue rules):
//  - an MXU_LW is accepted only when no other load runs, and an MXU_MM only when no load runs or its last
//    line arrives: a load is complete once a later MXU_LW or MXU_MM issued;
//  - an MXU_MM is accepted only when the previous one reads its last LHS line: its LHS reads are complete
//    once a later MXU_MM issued;
//  - its results (and, with ACC, the reads of the old destination lines just before them) leave the array
//    at most `mxu_result_latency` cycles after its last LHS read, and LHS lines are read one per cycle in
//    order: once the multiplies issued after it have read that many rows in all, an MXU_MM issued next
//    finds those results written.
struct MxuState {
  std::optional<Footprint> load;        // last MXU_LW
  std::optional<Footprint> lhs_reads;   // LHS reads of the last MXU_MM
  uint64_t last_rows = 0;               // rows of the last MXU_MM
  struct Results {
    Footprint footprint;                // destination writes (and ACC reads)
    uint64_t rows_after = 0;            // LHS rows read by later multiplies, complete at the last issue
  };
  std::vector<Results> results;

  void Clear() {
    load.reset();
    lhs_reads.reset();
    last_rows = 0;
    results.clear();
  }
  std::vector<const Footprint*> InFlight() const {
    std::vector<const Footprint*> all;
    if (load) all.push_back(&*load);
    if (lhs_reads) all.push_back(&*lhs_reads);
    for (const Results& r : results) all.push_back(&r.footprint);
    return all;
  }
};

}  // namespace

Status CheckUnitSynchronization(const std::vector<uint64_t>& code, const SyncCheckOptions& options) {
  const uint64_t result_latency =
      options.mxu_result_latency != 0 ? options.mxu_result_latency : 2ull * options.lanes + 2;
  std::array<uint32_t, 16> s{};
  std::array<std::deque<Footprint>, kNumUnits> in_flight;  // DMA, VPU, ICI: the instructions that may still run
  // The VPU and the link engine take an instruction when the previous one has read and written VMEM;
  // the DMA unit when fewer than dma_queue are unfinished.
  const std::array<size_t, kNumUnits> in_flight_limit = {std::max<size_t>(1, options.dma_queue), 0, 1, 1};
  MxuState mxu;
  // What unit u may still be executing.
  auto InFlight = [&](int u) {
    if (u == kMxu) return mxu.InFlight();
    std::vector<const Footprint*> busy;
    for (const Footprint& footprint : in_flight[u]) busy.push_back(&footprint);
    return busy;
  };
  std::map<uint32_t, uint32_t> scalar_loads;  // SLD executions per pc
  constexpr uint32_t kScalarLoadTrueReads = 2;
  // Registers whose value comes from an SLD (data), and how often each branch on data ran. Such a branch
  // goes into the loop (or branch) the first kScalarLoadTrueReads times and out afterwards, whatever the
  // compare: falling through, except for the idiom `B.. rs1, rs2, pc+2; JMP out`, where it is taken.
  std::array<bool, 16> data{};
  std::map<uint32_t, uint32_t> data_branches;
  auto data_branch = [&](const isa::Instr& in, uint32_t at) -> std::optional<bool> {
    if (!data[in.rs1] && !data[in.rs2]) return std::nullopt;
    const bool into = ++data_branches[at] <= kScalarLoadTrueReads;
    const bool skips_a_jump = in.imm == at + 2 && at + 1 < code.size() &&
                              isa::Decode(code[at + 1]).opcode == static_cast<uint8_t>(Opcode::JMP);
    return skips_a_jump ? into : !into;
  };
  uint32_t pc = 0;
  for (uint64_t step = 0; step < options.max_steps; ++step) {
    if (pc >= code.size()) return FailedPrecondition("pc " + std::to_string(pc) + " runs past the program");
    const isa::Instr in = isa::Decode(code[pc]);
    const Opcode op = static_cast<Opcode>(in.opcode);
    auto set = [&](uint32_t value, bool from_data = false) {
      if (in.rd == 0) return;
      s[in.rd] = value;
      data[in.rd] = from_data;
    };
    uint32_t next = pc + 1;
    int unit = -1;
    Footprint fp;
    fp.pc = pc;
    const uint64_t count = s[in.rs3];
    Footprint mm_results;  // MXU_MM: the part that completes late
    mm_results.pc = pc;
    switch (op) {
      case Opcode::NOP: break;
      case Opcode::HALT: return OkStatus();
      case Opcode::LI: set(in.imm); break;
      case Opcode::ADDI: set(s[in.rs1] + in.imm, data[in.rs1]); break;
      case Opcode::ADD: set(s[in.rs1] + s[in.rs2], data[in.rs1] || data[in.rs2]); break;
      case Opcode::SUB: set(s[in.rs1] - s[in.rs2], data[in.rs1] || data[in.rs2]); break;
      case Opcode::MUL: set(s[in.rs1] * s[in.rs2], data[in.rs1] || data[in.rs2]); break;
      case Opcode::BNE:
      case Opcode::BEQ:
      case Opcode::BLT: {
        bool taken = op == Opcode::BNE   ? s[in.rs1] != s[in.rs2]
                     : op == Opcode::BEQ ? s[in.rs1] == s[in.rs2]
                                         : static_cast<int32_t>(s[in.rs1]) < static_cast<int32_t>(s[in.rs2]);
        if (const std::optional<bool> on_data = data_branch(in, pc)) taken = *on_data;
        if (taken) next = in.imm;
        break;
      }
      case Opcode::JMP: next = in.imm; break;
      case Opcode::SLD: {
        // The sequencer reads the line at issue: no unit may still write it.
        const Range line{uint64_t{s[in.rs1]} + in.imm, uint64_t{s[in.rs1]} + in.imm + 1};
        for (int u = 0; u < kNumUnits; ++u) {
          for (const Footprint* busy : InFlight(u)) {
            for (const Range& write : busy->writes) {
              if (line.Overlaps(write)) {
                return FailedPrecondition("read-after-write race: pc " + std::to_string(pc) + " (SLD) reads VMEM " +
                                          RangeText(line) + " while pc " + std::to_string(busy->pc) + " (" +
                                          kUnitNames[u] + ") may still write " + RangeText(write) +
                                          "; a SYNC is missing");
              }
            }
          }
        }
        // The value is data (branches on it: data_branch); it reads 1 the first kScalarLoadTrueReads
        // times each SLD executes, then 0, for the addresses computed from it.
        set(++scalar_loads[pc] <= kScalarLoadTrueReads ? 1u : 0u, /*from_data=*/true);
        break;
      }
      case Opcode::SEMWAIT: break;  // the host filled HBM before posting: nothing of this core is in flight
      case Opcode::SEMPOST:
        // The host reads HBM the moment it sees the post: every DMA store must have landed.
        if (!in_flight[kDma].empty()) {
          return FailedPrecondition("pc " + std::to_string(pc) + " (SEMPOST) hands HBM to the host while pc " +
                                    std::to_string(in_flight[kDma].back().pc) +
                                    " (DMA) may still run; a SYNC is missing");
        }
        break;
      case Opcode::SYNC:
        for (int u = 0; u < kNumUnits; ++u) {
          if (in.flags == 0 || (in.flags & (1u << u))) {
            in_flight[u].clear();
            if (u == kMxu) mxu.Clear();
          }
        }
        break;
      case Opcode::DMA_LD:
        unit = kDma;
        fp.writes.push_back({s[in.rs2], s[in.rs2] + count});
        break;
      case Opcode::DMA_ST:
        unit = kDma;
        fp.reads.push_back({s[in.rs2], s[in.rs2] + count});
        break;
      case Opcode::RDMA: {  // reads this core's VMEM; what it writes is another core's
        unit = kIci;
        fp.reads.push_back({s[in.rs2], s[in.rs2] + count});
        // The link engine takes an RDMA once every earlier DMA_LD has written VMEM.
        std::deque<Footprint> stores;
        for (const Footprint& busy : in_flight[kDma]) {
          if (busy.writes.empty()) stores.push_back(busy);
        }
        in_flight[kDma] = std::move(stores);
        break;
      }
      case Opcode::MXU_LW:
        unit = kMxu;
        fp.reads.push_back({s[in.rs1], s[in.rs1] + options.lanes});
        break;
      case Opcode::MXU_MM:
        unit = kMxu;
        fp.reads.push_back({s[in.rs1], s[in.rs1] + count});
        mm_results.writes.push_back({s[in.rs2], s[in.rs2] + count});
        if (in.flags & isa::flag::MXU_MM_ACC) mm_results.reads.push_back({s[in.rs2], s[in.rs2] + count});
        break;
      case Opcode::VADD:
      case Opcode::VMAX:
        unit = kVpu;
        fp.reads.push_back({s[in.rs1], s[in.rs1] + count});
        if (in.flags & isa::flag::VADD_SRC2_IMM) {
        } else if (in.flags & isa::flag::VADD_SRC2_BCAST) {
          if (count > 0) fp.reads.push_back({s[in.rs2], s[in.rs2] + 1});
        } else {
          fp.reads.push_back({s[in.rs2], s[in.rs2] + count});
        }
        fp.writes.push_back({s[in.rd], s[in.rd] + count});
        break;
      case Opcode::VSPLAT:
        unit = kVpu;
        fp.writes.push_back({s[in.rd], s[in.rd] + count});
        break;
      case Opcode::VCVT:
        unit = kVpu;
        fp.reads.push_back({s[in.rs1], s[in.rs1] + count});
        fp.writes.push_back({s[in.rd], s[in.rd] + count});
        break;
      case Opcode::VTRANS:
        unit = kVpu;
        fp.reads.push_back({s[in.rs1], s[in.rs1] + count * options.lanes});
        fp.writes.push_back({s[in.rd], s[in.rd] + count * options.lanes});
        break;
      default: {
        // The other VPU instructions (VSUB, VMUL, VCMP, VSEL, ...) take the operands of VADD; VSEL also
        // reads its destination (the mask).
        const isa::OpcodeInfo* info = isa::FindOpcode(in.opcode);
        if (info == nullptr || info->unit != isa::Unit::kVpu) {
          return FailedPrecondition("illegal instruction at pc " + std::to_string(pc));
        }
        unit = kVpu;
        fp.reads.push_back({s[in.rs1], s[in.rs1] + count});
        if (in.flags & isa::flag::VADD_SRC2_IMM) {
        } else if (in.flags & isa::flag::VADD_SRC2_BCAST) {
          if (count > 0) fp.reads.push_back({s[in.rs2], s[in.rs2] + 1});
        } else {
          fp.reads.push_back({s[in.rs2], s[in.rs2] + count});
        }
        fp.writes.push_back({s[in.rd], s[in.rd] + count});
        if (op == Opcode::VSEL) fp.reads.push_back({s[in.rd], s[in.rd] + count});
        break;
      }
    }
    if (unit >= 0) {
      // Issuing to the MXU first retires what its issue rules guarantee complete (see MxuState).
      if (unit == kMxu) {
        mxu.load.reset();
        if (op == Opcode::MXU_MM) {
          mxu.lhs_reads.reset();
          // The previous multiply's rows are all read now; they count for the results issued before it
          // (when it had rows, it is the last entry; otherwise it adds nothing).
          for (MxuState::Results& r : mxu.results) {
            if (&r != &mxu.results.back()) r.rows_after += mxu.last_rows;
          }
          std::vector<MxuState::Results> still;
          for (const MxuState::Results& r : mxu.results) {
            if (r.rows_after < result_latency) still.push_back(r);
          }
          mxu.results = std::move(still);
        }
      }
      for (int other = 0; other < kNumUnits; ++other) {
        if (other == unit) continue;
        for (const Footprint* busy_ptr : InFlight(other)) {
          const Footprint& busy = *busy_ptr;
          auto race = [&](const std::vector<Range>& mine, const std::vector<Range>& theirs, const char* kind) -> Status {
            for (const Range& a : mine) {
              for (const Range& b : theirs) {
                if (a.Overlaps(b)) {
                  return FailedPrecondition(std::string(kind) + " race: pc " + std::to_string(pc) + " (" +
                                            kUnitNames[unit] + ") touches VMEM " + RangeText(a) + " while pc " +
                                            std::to_string(busy.pc) + " (" + kUnitNames[other] +
                                            ") may still use " + RangeText(b) + "; a SYNC is missing");
                }
              }
            }
            return OkStatus();
          };
          std::vector<Range> my_reads = fp.reads, my_writes = fp.writes;
          my_reads.insert(my_reads.end(), mm_results.reads.begin(), mm_results.reads.end());
          my_writes.insert(my_writes.end(), mm_results.writes.begin(), mm_results.writes.end());
          TPU_RETURN_IF_ERROR(race(my_reads, busy.writes, "read-after-write"));
          TPU_RETURN_IF_ERROR(race(my_writes, busy.writes, "write-after-write"));
          TPU_RETURN_IF_ERROR(race(my_writes, busy.reads, "write-after-read"));
        }
      }
      if (unit == kMxu) {
        if (op == Opcode::MXU_LW) {
          mxu.load = fp;
        } else {
          mxu.lhs_reads = fp;
          mxu.last_rows = count;
          if (count > 0) mxu.results.push_back({mm_results, 0});
        }
      } else {
        in_flight[unit].push_back(fp);
        if (in_flight[unit].size() > in_flight_limit[unit]) in_flight[unit].pop_front();
      }
    }
    pc = next;
  }
  return FailedPrecondition("program did not reach HALT within " + std::to_string(options.max_steps) + " steps");
}

}  // namespace tpu::compiler
