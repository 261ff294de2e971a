#include "compiler/codegen/sync_checker.h"

#include <array>
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

enum Unit { kDma = 0, kMxu = 1, kVpu = 2 };
const char* const kUnitNames[] = {"DMA", "MXU", "VPU"};

std::string RangeText(const Range& r) { return "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")"; }

}  // namespace

Status CheckUnitSynchronization(const std::vector<uint64_t>& code, const SyncCheckOptions& options) {
  std::array<uint32_t, 16> s{};
  std::array<std::optional<Footprint>, 3> in_flight;
  uint32_t pc = 0;
  for (uint64_t step = 0; step < options.max_steps; ++step) {
    if (pc >= code.size()) return FailedPrecondition("pc " + std::to_string(pc) + " runs past the program");
    const isa::Instr in = isa::Decode(code[pc]);
    const Opcode op = static_cast<Opcode>(in.opcode);
    auto set = [&](uint32_t value) {
      if (in.rd != 0) s[in.rd] = value;
    };
    uint32_t next = pc + 1;
    int unit = -1;
    Footprint fp;
    fp.pc = pc;
    const uint64_t count = s[in.rs3];
    switch (op) {
      case Opcode::NOP: break;
      case Opcode::HALT: return OkStatus();
      case Opcode::LI: set(in.imm); break;
      case Opcode::ADDI: set(s[in.rs1] + in.imm); break;
      case Opcode::ADD: set(s[in.rs1] + s[in.rs2]); break;
      case Opcode::SUB: set(s[in.rs1] - s[in.rs2]); break;
      case Opcode::MUL: set(s[in.rs1] * s[in.rs2]); break;
      case Opcode::BNE: if (s[in.rs1] != s[in.rs2]) next = in.imm; break;
      case Opcode::BEQ: if (s[in.rs1] == s[in.rs2]) next = in.imm; break;
      case Opcode::BLT: if (static_cast<int32_t>(s[in.rs1]) < static_cast<int32_t>(s[in.rs2])) next = in.imm; break;
      case Opcode::JMP: next = in.imm; break;
      case Opcode::SYNC:
        for (int u = 0; u < 3; ++u) {
          if (in.flags == 0 || (in.flags & (1u << u))) in_flight[u].reset();
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
      case Opcode::MXU_LW:
        unit = kMxu;
        fp.reads.push_back({s[in.rs1], s[in.rs1] + options.lanes});
        break;
      case Opcode::MXU_MM:
        unit = kMxu;
        fp.reads.push_back({s[in.rs1], s[in.rs1] + count});
        fp.writes.push_back({s[in.rs2], s[in.rs2] + count});
        if (in.flags & isa::flag::MXU_MM_ACC) fp.reads.push_back({s[in.rs2], s[in.rs2] + count});
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
      for (int other = 0; other < 3; ++other) {
        if (other == unit || !in_flight[other]) continue;
        const Footprint& busy = *in_flight[other];
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
        TPU_RETURN_IF_ERROR(race(fp.reads, busy.writes, "read-after-write"));
        TPU_RETURN_IF_ERROR(race(fp.writes, busy.writes, "write-after-write"));
        TPU_RETURN_IF_ERROR(race(fp.writes, busy.reads, "write-after-read"));
      }
      // The unit accepts an instruction only when idle: its previous one is complete.
      in_flight[unit] = fp;
    }
    pc = next;
  }
  return FailedPrecondition("program did not reach HALT within " + std::to_string(options.max_steps) + " steps");
}

}  // namespace tpu::compiler
