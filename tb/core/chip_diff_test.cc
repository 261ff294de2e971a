// Differential test: random legal programs run on the verilated chip and on the C++ reference model
// (tpu::model::ChipModel); VMEM, HBM, scalar registers and the error/status registers must agree
// byte for byte.
//
// The generator follows the ISA's ordering rule the way a compiler does: it tracks, per unit, the VMEM
// lines each unit may still be reading or writing, and inserts a SYNC on exactly the units whose
// pending accesses conflict with the next instruction. Units therefore really run concurrently.
// Some programs end with an error (bad address, illegal opcode) instead of HALT; the error code, the
// pc and the memory contents (every earlier instruction completes) must match as well.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "sim/model/chip_model.h"
#include "tb/core/chip_harness.h"
#include "tpu_config.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu::tb {
namespace {

using isa::Opcode;
namespace flag = isa::flag;

constexpr uint32_t kLanes = static_cast<uint32_t>(cfg::kLanes);
constexpr uint32_t kVmemWindow = 512;    // VMEM lines the programs use (dense, so accesses collide)
constexpr uint32_t kHbmWindow = 2048;    // HBM lines the programs use
constexpr uint64_t kHbmHighBase = cfg::kHbmLines - 64;  // plus a few lines at the very end of HBM

struct Range {
  uint32_t begin, end;  // VMEM lines [begin, end)
  bool Overlaps(const Range& other) const { return begin < other.end && other.begin < end; }
};

class ProgramGenerator {
 public:
  explicit ProgramGenerator(uint32_t seed) : rng_(seed) {}

  Program Generate(int unit_instructions, bool end_with_error) {
    Program p;
    for (int i = 0; i < unit_instructions; ++i) {
      switch (rng_() % 9) {
        case 0: case 1: EmitDma(p); break;
        case 8: EmitLoop(p); break;
        case 2: EmitMxuLoad(p); break;
        case 3: case 4: EmitMxuMatmul(p); break;
        default: EmitVector(p); break;
      }
      if (rng_() % 4 == 0) EmitScalarNoise(p);
      if (rng_() % 8 == 0) EmitScalarLoad(p);
    }
    if (end_with_error) {
      EmitError(p);
    } else {
      p.Halt();
    }
    return p;
  }

 private:
  enum Unit { kDma = 0, kMxu = 1, kVpu = 2 };

  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }

  // A count biased toward small values, sometimes 0.
  uint32_t Count(uint32_t max) {
    const uint32_t r = Below(16);
    if (r == 0) return 0;
    if (r < 10) return 1 + Below(std::min<uint32_t>(max, 8));
    return 1 + Below(max);
  }

  uint32_t VmemBase(uint32_t count) { return Below(kVmemWindow - count + 1); }

  // Loads `value` into a fresh operand register (s1..s9) and returns it.
  uint8_t Operand(Program& p, uint32_t value) {
    const uint8_t reg = static_cast<uint8_t>(1 + next_operand_++ % 9);
    p.Li(reg, value);
    return reg;
  }

  // Makes the next instruction of `unit` safe: syncs every other unit whose pending accesses conflict.
  void Order(Program& p, Unit unit, const std::vector<Range>& reads, const std::vector<Range>& writes) {
    uint8_t sync_flags = 0;
    for (int other = 0; other < 3; ++other) {
      if (other == unit) continue;
      bool conflict = false;
      for (const Range& w : writes_[other]) {
        for (const Range& r : reads) conflict |= r.Overlaps(w);
        for (const Range& x : writes) conflict |= x.Overlaps(w);
      }
      for (const Range& r : reads_[other]) {
        for (const Range& x : writes) conflict |= x.Overlaps(r);
      }
      if (conflict) sync_flags |= static_cast<uint8_t>(1u << other);
    }
    // Now and then a SYNC that is not needed, or a SYNC on everything (flags 0).
    if (Below(10) == 0) sync_flags |= static_cast<uint8_t>(1u << Below(3));
    if (sync_flags != 0) {
      const bool all = sync_flags == 7 || Below(4) == 0;
      p.Sync(all ? 0 : sync_flags);
      for (int other = 0; other < 3; ++other) {
        if (all || (sync_flags & (1u << other))) {
          reads_[other].clear();
          writes_[other].clear();
        }
      }
    }
    for (const Range& r : reads) reads_[unit].push_back(r);
    for (const Range& w : writes) writes_[unit].push_back(w);
  }

  void EmitDma(Program& p) {
    const bool load = Below(2) == 0;
    const uint32_t count = Count(64);
    const uint32_t vbase = VmemBase(count);
    const uint32_t stride = Below(5) == 0 ? 0 : 1 + Below(4);
    const uint64_t span = count == 0 ? 1 : uint64_t(count - 1) * stride + 1;
    uint64_t hbase = Below(static_cast<uint32_t>(kHbmWindow - std::min<uint64_t>(span, kHbmWindow) + 1));
    if (Below(8) == 0 && span <= 64) hbase = kHbmHighBase + Below(static_cast<uint32_t>(64 - span + 1));
    const Range vrange{vbase, vbase + count};
    if (load) {
      Order(p, kDma, {}, {vrange});
    } else {
      Order(p, kDma, {vrange}, {});
    }
    const uint8_t rh = Operand(p, static_cast<uint32_t>(hbase));
    const uint8_t rv = Operand(p, vbase);
    const uint8_t rc = Operand(p, count);
    if (load) {
      p.DmaLd(rh, rv, rc, stride);
    } else {
      p.DmaSt(rh, rv, rc, stride);
    }
  }

  void EmitMxuLoad(Program& p) {
    const uint32_t base = VmemBase(kLanes);
    Order(p, kMxu, {{base, base + kLanes}}, {});
    const uint8_t rs = Operand(p, base);
    p.MxuLw(rs, Below(2) ? flag::MXU_LW_TRANSPOSE : 0);
  }

  void EmitMxuMatmul(Program& p) {
    const uint32_t count = Count(48);
    uint32_t src = VmemBase(count), dst = VmemBase(count);
    for (int tries = 0; tries < 16 && Range{src, src + count}.Overlaps({dst, dst + count}); ++tries) {
      dst = VmemBase(count);
    }
    if (Range{src, src + count}.Overlaps({dst, dst + count})) return;
    const uint8_t flags = static_cast<uint8_t>((Below(2) ? flag::MXU_MM_ACC : 0) | (Below(2) ? flag::MXU_MM_SWAP : 0));
    Order(p, kMxu, {{src, src + count}, {dst, dst + count}}, {{dst, dst + count}});
    const uint8_t rs = Operand(p, src);
    const uint8_t rd = Operand(p, dst);
    const uint8_t rc = Operand(p, count);
    p.MxuMm(rs, rd, rc, flags);
  }

  // Vector instructions with every opcode and flag; operand regions follow docs/isa.md: a source is
  // the identical lines of the destination or disjoint from it, a SRC2_BCAST line lies outside the
  // destination, VTRANS source and destination never overlap.
  void EmitVector(Program& p) {
    const uint32_t kind = Below(20);
    if (kind == 0) return EmitSplat(p);
    if (kind == 1) return EmitTranspose(p);
    if (kind < 7) return EmitUnary(p);
    EmitBinary(p);
  }

  void EmitSplat(Program& p) {
    const uint32_t count = Count(64);
    const uint32_t dst = VmemBase(count);
    Order(p, kVpu, {}, {{dst, dst + count}});
    const uint8_t rd = Operand(p, dst);
    const uint8_t rc = Operand(p, count);
    Record(Opcode::VSPLAT);
    p.Vsplat(rd, rc, static_cast<uint32_t>(rng_()));
  }

  void EmitTranspose(Program& p) {
    const uint32_t max_blocks = std::max<uint32_t>(1, std::min<uint32_t>(4, kVmemWindow / (2 * kLanes)));
    const uint32_t blocks = Below(max_blocks + 1);
    const uint32_t lines = blocks * kLanes;
    const uint32_t src = VmemBase(lines), dst = VmemBase(lines);
    const Range rs{src, src + lines}, d{dst, dst + lines};
    if (rs.Overlaps(d)) return;
    Order(p, kVpu, {rs}, {d});
    const uint8_t rd = Operand(p, dst), r1 = Operand(p, src), rc = Operand(p, blocks);
    Record(Opcode::VTRANS);
    p.Emit(Opcode::VTRANS, rd, r1, 0, rc);
  }

  // VCVT (both directions) and the transcendental instructions.
  void EmitUnary(Program& p) {
    static const Opcode kOps[] = {Opcode::VCVT, Opcode::VEXP, Opcode::VLOG, Opcode::VRSQRT, Opcode::VRCP};
    const Opcode op = kOps[Below(5)];
    const uint8_t flags = op == Opcode::VCVT && Below(2) ? flag::VCVT_F32_TO_S32 : 0;
    const uint32_t count = Count(64);
    const uint32_t dst = VmemBase(count);
    const uint32_t a = Below(3) == 0 ? dst : VmemBase(count);
    const Range d{dst, dst + count}, ra{a, a + count};
    if (a != dst && ra.Overlaps(d)) return;
    Order(p, kVpu, {ra}, {d});
    const uint8_t rd = Operand(p, dst), r1 = Operand(p, a), rc = Operand(p, count);
    Record(op);
    p.Emit(op, rd, r1, 0, rc, flags);
  }

  void EmitBinary(Program& p) {
    static const Opcode kOps[] = {Opcode::VADD, Opcode::VMAX, Opcode::VSUB, Opcode::VMUL,  Opcode::VMIN,
                                  Opcode::VAND, Opcode::VOR,  Opcode::VXOR, Opcode::VCMP,  Opcode::VSEL,
                                  Opcode::VSHL, Opcode::VSHRL, Opcode::VSHRA};
    const Opcode op = kOps[Below(static_cast<uint32_t>(sizeof kOps / sizeof kOps[0]))];
    const bool shift = op == Opcode::VSHL || op == Opcode::VSHRL || op == Opcode::VSHRA;
    const bool takes_int = op == Opcode::VADD || op == Opcode::VSUB || op == Opcode::VMUL || op == Opcode::VMAX ||
                           op == Opcode::VMIN || op == Opcode::VCMP;
    const uint32_t count = Count(64);
    const uint8_t form = static_cast<uint8_t>(Below(3));  // 0: vector, 1: broadcast, 2: immediate
    uint8_t flags = form == 1 ? flag::VADD_SRC2_BCAST : form == 2 ? flag::VADD_SRC2_IMM : 0;
    if (takes_int && Below(2)) flags |= flag::VADD_INT;
    if (op == Opcode::VCMP) flags |= static_cast<uint8_t>(Below(8) << flag::VCMP_DIR_LSB);  // 6, 7: always 0
    const uint32_t dst = VmemBase(count);
    const uint32_t a = Below(4) == 0 ? dst : VmemBase(count);
    const uint32_t b = form == 0 && Below(5) == 0 ? dst : VmemBase(form == 1 ? 1 : count);
    const Range d{dst, dst + count}, ra{a, a + count};
    const Range rb{b, b + (form == 1 ? std::min<uint32_t>(count, 1) : count)};
    if (a != dst && ra.Overlaps(d)) return;
    if (form == 0 && b != dst && rb.Overlaps(d)) return;
    if (form == 1 && rb.Overlaps(d)) return;
    std::vector<Range> reads = {ra};
    if (form != 2) reads.push_back(rb);
    if (op == Opcode::VSEL) reads.push_back(d);  // the mask is the destination's old contents
    Order(p, kVpu, reads, {d});
    if (op == Opcode::VSEL && Below(2)) {
      // A compare fills the mask first (as compiled code does), so both select inputs are taken.
      const uint32_t c = VmemBase(count);
      if (!Range{c, c + count}.Overlaps(d)) {
        Order(p, kVpu, {{c, c + count}}, {d});
        const uint8_t rd = Operand(p, dst), r1 = Operand(p, c), rc = Operand(p, count);
        Record(Opcode::VCMP);
        p.Emit(Opcode::VCMP, rd, r1, 0, rc,
               static_cast<uint8_t>(flag::VCMP_SRC2_IMM | (Below(6) << flag::VCMP_DIR_LSB)), 0);
      }
    }
    const uint8_t rd = Operand(p, dst);
    const uint8_t r1 = Operand(p, a);
    const uint8_t r2 = Operand(p, b);
    const uint8_t rc = Operand(p, count);
    uint32_t imm = form == 2 && Below(2) ? (Below(2) ? 0x3F800000u : 0u) : static_cast<uint32_t>(rng_());
    if (shift && Below(4) != 0) imm = Below(40);  // amounts that keep some bits, and some past 31
    Record(op);
    p.Emit(op, rd, r1, r2, rc, flags, imm);
  }

  void Record(Opcode op) { ++emitted_[static_cast<uint8_t>(op)]; }

 public:
  // How many instructions of each opcode the generator emitted (vector ones; loops not counted).
  const std::map<uint8_t, uint64_t>& emitted() const { return emitted_; }

 private:
  // A counted loop (counter s12) issuing the same unit instruction on consecutive blocks, the operand
  // registers advanced with ADDI: register values are read at issue, so each iteration sees its own.
  void EmitLoop(Program& p) {
    const uint32_t iterations = 2 + Below(3), count = 1 + Below(8), span = iterations * count;
    uint32_t top;
    if (Below(2) == 0) {
      const bool load = Below(2) == 0;
      const uint32_t stride = 1 + Below(3);
      const uint32_t vbase = VmemBase(span);
      const uint32_t hbase = Below(kHbmWindow - span * stride);
      const Range vrange{vbase, vbase + span};
      if (load) {
        Order(p, kDma, {}, {vrange});
      } else {
        Order(p, kDma, {vrange}, {});
      }
      const uint8_t rh = Operand(p, hbase), rv = Operand(p, vbase), rc = Operand(p, count);
      p.Li(12, iterations);
      top = load ? p.DmaLd(rh, rv, rc, stride) : p.DmaSt(rh, rv, rc, stride);
      p.Addi(rh, rh, count * stride);
      p.Addi(rv, rv, count);
    } else {
      const uint32_t dst = VmemBase(span), a = VmemBase(span), b = VmemBase(span);
      const Range d{dst, dst + span}, ra{a, a + span}, rb{b, b + span};
      if (ra.Overlaps(d) || rb.Overlaps(d)) return;
      Order(p, kVpu, {ra, rb}, {d});
      const uint8_t rd = Operand(p, dst), r1 = Operand(p, a), r2 = Operand(p, b), rc = Operand(p, count);
      p.Li(12, iterations);
      static const Opcode kLoopOps[] = {Opcode::VADD, Opcode::VMAX, Opcode::VMUL, Opcode::VCMP, Opcode::VEXP, Opcode::VRCP};
      const Opcode op = kLoopOps[Below(6)];
      const uint8_t flags = op == Opcode::VCMP ? static_cast<uint8_t>(Below(6) << flag::VCMP_DIR_LSB) : 0;
      top = p.Emit(op, rd, r1, r2, rc, flags);
      p.Addi(rd, rd, count);
      p.Addi(r1, r1, count);
      p.Addi(r2, r2, count);
    }
    p.Addi(12, 12, static_cast<uint32_t>(-1));
    p.Bne(12, 0, top);
  }

  // Scalar work in s10..s15 (compared at the end) including a short counted loop.
  void EmitScalarNoise(Program& p) {
    const uint8_t a = static_cast<uint8_t>(10 + Below(6)), b = static_cast<uint8_t>(10 + Below(6));
    const uint8_t c = static_cast<uint8_t>(10 + Below(6));
    switch (Below(6)) {
      case 0: p.Addi(c, a, static_cast<uint32_t>(rng_())); break;
      case 1: p.Add(c, a, b); break;
      case 2: p.Sub(c, a, b); break;
      case 3: p.Mul(c, a, b); break;
      case 4: p.Li(c, static_cast<uint32_t>(rng_())); break;
      default: {
        p.Li(15, 1 + Below(5));
        const uint32_t top = p.Addi(14, 14, 3);
        p.Addi(15, 15, static_cast<uint32_t>(-1));
        p.Bne(15, 0, top);
        break;
      }
    }
  }

  // SLD of a line the units computed into s10..s15 (after a SYNC on the units that may still write it),
  // then a branch on the value over scalar work: the control flow follows the data on both sides.
  void EmitScalarLoad(Program& p) {
    const uint32_t line = Below(kVmemWindow);
    uint8_t sync_flags = 0;
    for (int unit = 0; unit < 3; ++unit) {
      for (const Range& w : writes_[unit]) {
        if (w.Overlaps({line, line + 1})) sync_flags |= static_cast<uint8_t>(1u << unit);
      }
    }
    if (sync_flags != 0) {
      p.Sync(sync_flags);
      for (int unit = 0; unit < 3; ++unit) {
        if (sync_flags & (1u << unit)) {
          reads_[unit].clear();
          writes_[unit].clear();
        }
      }
    }
    const uint32_t offset = Below(line + 1);
    const uint8_t base = Operand(p, line - offset);
    const uint8_t value = static_cast<uint8_t>(10 + Below(6));
    Record(Opcode::SLD);
    p.Emit(Opcode::SLD, value, base, 0, 0, 0, offset);
    const uint32_t branch = p.Emit(Below(2) ? Opcode::BEQ : Opcode::BLT, 0, value, 0);
    p.Addi(14, 14, 7);
    p.PatchImm(branch, p.size());
  }

  void EmitError(Program& p) {
    switch (Below(5)) {
      case 4: {
        const uint8_t rv = Operand(p, static_cast<uint32_t>(cfg::kVmemLines) - 1);
        p.Emit(Opcode::SLD, 10, rv, 0, 0, 0, 1 + Below(2));
        break;
      }
      case 0: p.Raw(uint64_t{0x7F} << 56); break;
      case 1: {
        const uint8_t rv = Operand(p, kVmemWindow);
        const uint8_t rc = Operand(p, static_cast<uint32_t>(cfg::kVmemLines));
        p.Vadd(rv, rv, rv, rc);
        break;
      }
      case 2: {
        const uint8_t rh = Operand(p, static_cast<uint32_t>(cfg::kHbmLines - 1));
        const uint8_t rc = Operand(p, 2);
        p.DmaLd(rh, 0, rc, 1);
        break;
      }
      default: p.Jmp(static_cast<uint32_t>(cfg::kImemWords));
    }
  }

  std::mt19937 rng_;
  uint32_t next_operand_ = 0;
  std::vector<Range> reads_[3], writes_[3];
  std::map<uint8_t, uint64_t> emitted_;
};

std::vector<uint32_t> RandomLine(std::mt19937& rng) {
  std::vector<uint32_t> line(kLanes);
  for (uint32_t& lane : line) {
    const uint32_t kind = rng() % (4 * kLanes);  // specials rarer on wide lines
    const uint32_t sign = (rng() & 1u) << 31;
    if (kind == 0) lane = sign;
    else if (kind == 1) lane = sign | 0x7F800000u;
    else if (kind == 2) lane = 0x7FC00001u;
    else lane = sign | ((112 + rng() % 32) << 23) | (rng() & 0x7FFFFFu);
  }
  return line;
}

std::string Hex(const std::vector<uint32_t>& line) {
  std::string text;
  char buffer[16];
  for (uint32_t lane : line) {
    std::snprintf(buffer, sizeof buffer, "%08x ", lane);
    text += buffer;
  }
  return text;
}

// Lines whose contents a program changed, summed over the run (a generator that does nothing fails).
struct Coverage {
  uint64_t vmem_lines_changed = 0;
  uint64_t hbm_lines_changed = 0;
  uint64_t error_runs = 0;
  uint64_t cycles = 0;
  std::map<uint8_t, uint64_t> emitted;  // vector instructions per opcode
};

void RunOne(uint32_t seed, int unit_instructions, Coverage& coverage) {
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  HarnessOptions options;
  options.seed = seed;
  options.hbm_ready_probability = (seed % 3 == 0) ? 0.6 : 1.0;
  // Memory latency is not part of the contract: vary it, down to one cycle.
  if (seed % 5 == 2) options.hbm_latency = 1 + seed % 97;
  ChipHarness chip(options);
  model::ChipModel reference(model::ChipConfig::Build());

  std::vector<std::vector<uint32_t>> initial_vmem, initial_hbm;
  for (uint32_t line = 0; line < kVmemWindow; ++line) {
    const std::vector<uint32_t> data = RandomLine(rng);
    initial_vmem.push_back(data);
    chip.WriteVmem(line, data);
    ASSERT_TRUE(reference.WriteVmem(line, data.data(), 1).ok());
  }
  std::vector<uint64_t> hbm_lines;
  for (uint64_t line = 0; line < kHbmWindow; ++line) hbm_lines.push_back(line);
  for (uint64_t line = kHbmHighBase; line < cfg::kHbmLines; ++line) hbm_lines.push_back(line);
  for (uint64_t line : hbm_lines) {
    const std::vector<uint32_t> data = RandomLine(rng);
    initial_hbm.push_back(data);
    chip.WriteHbm(line, data);
    ASSERT_TRUE(reference.WriteHbm(line, data.data(), 1).ok());
  }

  ProgramGenerator generator(seed * 7919u + 1);
  const Program program = generator.Generate(unit_instructions, seed % 4 == 1);
  ASSERT_LE(program.size(), cfg::kImemWords);
  for (const auto& [op, n] : generator.emitted()) coverage.emitted[op] += n;
  for (uint32_t i = 0; i < program.size(); ++i) {
    reference.MmioWrite(csr::IMEM_WINDOW + 8 * i, static_cast<uint32_t>(program.words()[i]));
    reference.MmioWrite(csr::IMEM_WINDOW + 8 * i + 4, static_cast<uint32_t>(program.words()[i] >> 32));
  }
  reference.MmioWrite(csr::DOORBELL, 1);
  reference.Run(50000000);
  const uint64_t start_cycle = chip.cycle();
  ASSERT_TRUE(chip.RunProgram(program, 5000000));
  coverage.cycles += chip.cycle() - start_cycle;
  if (chip.MmioRead(csr::STATUS) & csr::STATUS_ERROR) ++coverage.error_runs;

  for (uint32_t reg : {csr::STATUS, csr::ERROR_CODE, csr::ERROR_PC, csr::IRQ_STATUS, csr::INSTRET,
                       csr::DMA_LINES, csr::VPU_BUSY, csr::MXU_BUSY_LO}) {
    EXPECT_EQ(chip.MmioRead(reg), reference.MmioRead(reg)) << "CSR 0x" << std::hex << reg;
  }
  for (unsigned r = 0; r < cfg::kSregs; ++r) EXPECT_EQ(chip.ReadSreg(r), reference.sreg(r)) << "s" << r;
  int mismatches = 0;
  std::vector<uint32_t> want(kLanes);
  for (uint32_t line = 0; line < kVmemWindow && mismatches < 5; ++line) {
    ASSERT_TRUE(reference.ReadVmem(line, want.data(), 1).ok());
    const std::vector<uint32_t> got = chip.ReadVmem(line);
    coverage.vmem_lines_changed += got != initial_vmem[line];
    if (got != want) {
      ++mismatches;
      ADD_FAILURE() << "VMEM line " << line << "\n  rtl   " << Hex(got) << "\n  model " << Hex(want);
    }
  }
  for (size_t i = 0; i < hbm_lines.size(); ++i) {
    const uint64_t line = hbm_lines[i];
    if (mismatches >= 5) break;
    ASSERT_TRUE(reference.ReadHbm(line, want.data(), 1).ok());
    const std::vector<uint32_t> got = chip.ReadHbm(line);
    coverage.hbm_lines_changed += got != initial_hbm[i];
    if (got != want) {
      ++mismatches;
      ADD_FAILURE() << "HBM line " << line << "\n  rtl   " << Hex(got) << "\n  model " << Hex(want);
    }
  }
  EXPECT_TRUE(chip.violations().empty());
}

// TPU_DIFF_PROGRAMS=<n> runs more programs (the default keeps ctest quick); TPU_DIFF_PROGRAM_SEED=<s>
// makes s the first program's seed (default 1000; program i has seed s + i, the seed a failure names).
int ProgramCount() {
  const char* env = std::getenv("TPU_DIFF_PROGRAMS");
  return env != nullptr ? std::max(1, std::atoi(env)) : 24;
}
uint32_t FirstProgramSeed() {
  const char* env = std::getenv("TPU_DIFF_PROGRAM_SEED");
  return env != nullptr && *env != '\0' ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10)) : 1000;
}

// DMA instructions overlap (DMA_QUEUE): the next one issues when the previous one has sent its
// requests. Queued loads pay the memory latency once; a store of lines an earlier load writes waits for
// that load (and must see its data). The model's cycle estimate follows the same rules.
TEST(ChipDiff, QueuedDmaTimingFollowsTheModel) {
  constexpr uint32_t kLines = 16, kDmas = 8;
  const uint64_t latency = cfg::kHbmLatency;
  struct Case {
    const char* name;
    bool loads, stores, interleaved;
  };
  for (const Case& c : {Case{"loads", true, false, false}, Case{"stores", false, true, false},
                        Case{"load then store of its lines", true, true, true}}) {
    SCOPED_TRACE(c.name);
    Program p;
    p.Li(3, kLines);
    for (uint32_t i = 0; i < kDmas; ++i) {
      p.Li(1, 64 * i);    // HBM source
      p.Li(2, 32 * i);    // VMEM
      p.Li(4, 4096 + 64 * i);  // HBM destination
      if (c.loads) p.Emit(Opcode::DMA_LD, 0, 1, 2, 3, 0, 1);
      if (c.stores && c.interleaved) p.Emit(Opcode::DMA_ST, 0, 4, 2, 3, 0, 1);
      if (c.stores && !c.interleaved) p.Emit(Opcode::DMA_ST, 0, 4, 2, 3, 0, 2);
    }
    p.Sync(0);
    p.Halt();
    ChipHarness chip;
    model::ChipModel reference(model::ChipConfig::Build());
    std::mt19937 rng(7);
    for (uint32_t line = 0; line < 64 * kDmas; ++line) {
      const std::vector<uint32_t> data = RandomLine(rng);
      chip.WriteHbm(line, data);
      ASSERT_TRUE(reference.WriteHbm(line, data.data(), 1).ok());
      chip.WriteVmem(line % (32 * kDmas), data);
      ASSERT_TRUE(reference.WriteVmem(line % (32 * kDmas), data.data(), 1).ok());
    }
    for (uint32_t i = 0; i < p.size(); ++i) {
      reference.MmioWrite(csr::IMEM_WINDOW + 8 * i, static_cast<uint32_t>(p.words()[i]));
      reference.MmioWrite(csr::IMEM_WINDOW + 8 * i + 4, static_cast<uint32_t>(p.words()[i] >> 32));
    }
    reference.MmioWrite(csr::DOORBELL, 1);
    reference.Run(1000000);
    ASSERT_TRUE(chip.RunProgram(p, 1000000));
    const uint32_t rtl_cycles = chip.MmioRead(csr::CYCLES_LO);
    const uint32_t model_cycles = reference.MmioRead(csr::CYCLES_LO);
    std::printf("[ dma queue ] %s: rtl %u cycles, model %u\n", c.name, rtl_cycles, model_cycles);
    const uint64_t lines = uint64_t{kLines} * kDmas * ((c.loads ? 1 : 0) + (c.stores ? 1 : 0));
    if (!c.interleaved) {
      EXPECT_LT(rtl_cycles, lines + 2 * latency + 8 * kDmas) << "latency paid once, not per instruction";
    } else {
      EXPECT_GE(rtl_cycles, kDmas * (2 * kLines + latency)) << "each store waits for its load";
    }
    EXPECT_NEAR(static_cast<double>(model_cycles), rtl_cycles, 4.0 * kDmas);
    std::vector<uint32_t> want(kLanes);
    for (uint32_t i = 0; c.stores && i < kDmas; ++i) {
      for (uint32_t l = 0; l < kLines; ++l) {
        const uint64_t line = 4096 + 64 * i + (c.interleaved ? l : 2 * l);
        ASSERT_TRUE(reference.ReadHbm(line, want.data(), 1).ok());
        ASSERT_EQ(chip.ReadHbm(line), want) << "HBM line " << line;
      }
    }
    EXPECT_EQ(chip.MmioRead(csr::STATUS) & csr::STATUS_ERROR, 0u);
  }
}

// SLD: a loop that runs while the word the sequencer loads is non-zero (lines 0..5 hold 1, line 6 holds 0;
// the other lanes are noise), a word the VPU wrote (after a SYNC), and a line past VMEM. Values, the
// cycle counts (two cycles per SLD, the first a stall) and the error agree with the model exactly.
TEST(ChipDiff, ScalarLoadSteersLoopsOnDeviceData) {
  Program p;
  p.Li(1, 0);
  const uint32_t top = p.Emit(Opcode::SLD, 2, 1, 0, 0, 0, 0);
  const uint32_t exit = p.Beq(2, 0, 0);
  p.Addi(1, 1, 1);
  p.Addi(3, 3, 5);
  p.Jmp(top);
  p.PatchImm(exit, p.size());
  p.Li(5, 20);
  p.Li(6, 1);
  p.Vsplat(5, 6, 42);
  p.Sync(isa::flag::SYNC_VPU);
  p.Emit(Opcode::SLD, 4, 5, 0, 0, 0, 0);
  p.Li(7, static_cast<uint32_t>(cfg::kVmemLines) - 2);
  const uint32_t bad = p.Emit(Opcode::SLD, 8, 7, 0, 0, 0, 2);
  p.Halt();

  ChipHarness chip;
  model::ChipModel reference(model::ChipConfig::Build());
  std::mt19937 rng(5);
  for (uint32_t line = 0; line < 8; ++line) {
    std::vector<uint32_t> data = RandomLine(rng);
    data[0] = line < 6 ? 1u : 0u;
    chip.WriteVmem(line, data);
    ASSERT_TRUE(reference.WriteVmem(line, data.data(), 1).ok());
  }
  for (uint32_t i = 0; i < p.size(); ++i) {
    reference.MmioWrite(csr::IMEM_WINDOW + 8 * i, static_cast<uint32_t>(p.words()[i]));
    reference.MmioWrite(csr::IMEM_WINDOW + 8 * i + 4, static_cast<uint32_t>(p.words()[i] >> 32));
  }
  reference.MmioWrite(csr::DOORBELL, 1);
  reference.Run(100000);
  ASSERT_TRUE(chip.RunProgram(p, 100000));
  EXPECT_EQ(chip.ReadSreg(1), 6u);
  EXPECT_EQ(chip.ReadSreg(3), 30u);
  EXPECT_EQ(chip.ReadSreg(4), 42u);
  EXPECT_EQ(chip.ReadSreg(8), 0u);
  EXPECT_EQ(chip.MmioRead(csr::ERROR_CODE), static_cast<uint32_t>(isa::Error::BAD_VMEM_ADDR));
  EXPECT_EQ(chip.MmioRead(csr::ERROR_PC), bad);
  for (uint32_t reg : {csr::STATUS, csr::ERROR_CODE, csr::ERROR_PC, csr::INSTRET, csr::CYCLES_LO, csr::STALL_CYCLES}) {
    EXPECT_EQ(chip.MmioRead(reg), reference.MmioRead(reg)) << "CSR 0x" << std::hex << reg;
  }
  for (unsigned r = 0; r < cfg::kSregs; ++r) EXPECT_EQ(chip.ReadSreg(r), reference.sreg(r)) << "s" << r;
}

TEST(ChipDiff, RandomProgramsMatchTheReferenceModel) {
  const int programs = ProgramCount();
  Coverage coverage;
  for (int i = 0; i < programs; ++i) {
    RunOne(FirstProgramSeed() + static_cast<uint32_t>(i), 10 + i % 40, coverage);
    if (HasFailure()) break;
  }
  std::printf("[ coverage ] %d programs, %llu cycles: %llu VMEM and %llu HBM lines changed, %llu ended in an error\n",
              programs, static_cast<unsigned long long>(coverage.cycles),
              static_cast<unsigned long long>(coverage.vmem_lines_changed),
              static_cast<unsigned long long>(coverage.hbm_lines_changed),
              static_cast<unsigned long long>(coverage.error_runs));
  std::printf("[ coverage ] vector instructions:");
  for (const auto& [op, n] : coverage.emitted) {
    std::printf(" %s %llu", isa::FindOpcode(op)->name, static_cast<unsigned long long>(n));
  }
  std::printf("\n");
  EXPECT_GT(coverage.vmem_lines_changed, 10u * programs);
  EXPECT_GT(coverage.hbm_lines_changed, 2u * programs);
  EXPECT_GT(coverage.error_runs, 0u);
  if (programs >= 24) {
    for (Opcode op : {Opcode::VADD, Opcode::VMAX, Opcode::VSUB, Opcode::VMUL, Opcode::VMIN, Opcode::VAND, Opcode::VOR,
                      Opcode::VXOR, Opcode::VSHL, Opcode::VSHRL, Opcode::VSHRA, Opcode::VCMP, Opcode::VSEL,
                      Opcode::VCVT, Opcode::VTRANS, Opcode::VEXP, Opcode::VLOG, Opcode::VRSQRT, Opcode::VRCP,
                      Opcode::VSPLAT}) {
      EXPECT_GT(coverage.emitted[static_cast<uint8_t>(op)], 0u) << "no random " << isa::FindOpcode(static_cast<uint8_t>(op))->name;
    }
  }
}

// Host DMA transfers, legal and not, on both backends: status, interrupts and the bytes moved agree.
// After a bus error only the status is compared: how many lines land before the engine stops is
// timing, which the model does not claim to reproduce.
TEST(ChipDiff, HostDmaMatchesTheReferenceModel) {
  struct Transfer {
    uint64_t host;
    uint32_t hbm_line, lines;
    bool to_host;
    bool bus_error;  // the host range [0x40000, 0x40000 + one line) answers with an error
  };
  const uint32_t line_bytes = kLanes * 4;
  const std::vector<Transfer> transfers = {
      {0x1000, 100, 40, false, false},
      {0x9000, 100, 40, true, false},
      {0x2000, 0, 0, false, false},                                              // nothing to move
      {line_bytes / 2, 0, 1, false, false},                                      // misaligned host address
      {0, static_cast<uint32_t>(cfg::kHbmLines - 3), 4, true, false},            // past the end of HBM
      {0, static_cast<uint32_t>(cfg::kHbmLines - 4), 4, true, false},            // exactly to the end
      {0x40000 - 8 * line_bytes, 500, 32, false, true},                          // bus error reading
      {0x40000 - 8 * line_bytes, 500, 32, true, true},                           // bus error writing
      {0x20000, 700, 64, true, false},
  };
  ChipHarness chip;
  model::ChipModel reference(model::ChipConfig::Build());
  std::mt19937 rng(4242);
  std::vector<uint8_t> host(0x50000);
  for (uint8_t& byte : host) byte = static_cast<uint8_t>(rng());
  chip.HostWrite(0, host.data(), host.size());
  ASSERT_TRUE(reference.HostWrite(0, host.data(), host.size()).ok());
  for (uint32_t line = 0; line < 1024; ++line) {
    const std::vector<uint32_t> data = RandomLine(rng);
    chip.WriteHbm(line, data);
    ASSERT_TRUE(reference.WriteHbm(line, data.data(), 1).ok());
  }

  for (size_t t = 0; t < transfers.size(); ++t) {
    SCOPED_TRACE("transfer " + std::to_string(t));
    const Transfer& x = transfers[t];
    const uint64_t error_begin = x.bus_error ? 0x40000 : 0, error_end = x.bus_error ? 0x40000 + line_bytes : 0;
    chip.SetHostBusErrorRange(error_begin, error_end);
    reference.SetHostBusErrorRange(error_begin, error_end);
    const uint32_t ctrl = csr::HDMA_CTRL_START | (x.to_host ? csr::HDMA_CTRL_TO_HOST : 0);
    for (auto write : {std::pair<uint32_t, uint32_t>{csr::IRQ_STATUS, 0xF},
                       {csr::HDMA_HOST_LO, static_cast<uint32_t>(x.host)},
                       {csr::HDMA_HOST_HI, static_cast<uint32_t>(x.host >> 32)},
                       {csr::HDMA_HBM_LINE, x.hbm_line},
                       {csr::HDMA_LINES, x.lines},
                       {csr::HDMA_CTRL, ctrl}}) {
      chip.MmioWrite(write.first, write.second);
      reference.MmioWrite(write.first, write.second);
    }
    ASSERT_TRUE(chip.WaitIdle(100000));
    reference.Run(1000000);
    EXPECT_EQ(chip.MmioRead(csr::HDMA_STATUS), reference.MmioRead(csr::HDMA_STATUS));
    EXPECT_EQ(chip.MmioRead(csr::IRQ_STATUS), reference.MmioRead(csr::IRQ_STATUS));
    EXPECT_EQ(chip.irq(), reference.Irq());
    if (x.bus_error) {
      // Re-synchronize the memories the interrupted transfer may have touched differently.
      std::vector<uint32_t> line(kLanes);
      for (uint32_t i = 0; i < x.lines; ++i) {
        const std::vector<uint32_t> data = chip.ReadHbm(x.hbm_line + i);
        ASSERT_TRUE(reference.WriteHbm(x.hbm_line + i, data.data(), 1).ok());
      }
      std::vector<uint8_t> bytes(uint64_t(x.lines) * line_bytes);
      chip.HostRead(x.host, bytes.data(), bytes.size());
      ASSERT_TRUE(reference.HostWrite(x.host, bytes.data(), bytes.size()).ok());
      continue;
    }
    std::vector<uint32_t> want(kLanes);
    for (uint32_t line = 0; line < 1024; ++line) {
      ASSERT_TRUE(reference.ReadHbm(line, want.data(), 1).ok());
      ASSERT_EQ(chip.ReadHbm(line), want) << "HBM line " << line;
    }
    std::vector<uint8_t> got(host.size()), expected(host.size());
    chip.HostRead(0, got.data(), got.size());
    ASSERT_TRUE(reference.HostRead(0, expected.data(), expected.size()).ok());
    ASSERT_EQ(got, expected);
  }
  EXPECT_TRUE(chip.violations().empty());
}

}  // namespace
}  // namespace tpu::tb
