// ChipHarness: drives the verilated tpu_chip (plain C++, no SystemC) for the chip-level benches.
//
// Around the chip it models:
//  - HBM behind the controller port: a fixed latency (default tpu::cfg::kHbmLatency cycles), at most one
//    request accepted per cycle, responses in request order (reads return the data as of acceptance);
//    sparse storage so every configuration's HBM size is addressable; optional random back-pressure.
//  - host memory behind the host DMA port: same protocol with its own latency; bytes in a configurable
//    range answer with a bus error (and are not written); accesses beyond the host memory size too.
// Both models record protocol violations (a request outside the memory, a misaligned host address) so
// tests can assert that the chip never makes one.
// Backdoor access to HBM, host memory and VMEM takes no simulated time.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "tpu_isa.h"

class Vtpu_chip;
class VerilatedContext;

namespace tpu::tb {

struct HarnessOptions {
  uint32_t hbm_latency = 0;        // 0: the configuration's HBM_LATENCY
  uint32_t host_latency = 8;       // cycles
  double hbm_ready_probability = 1.0;   // < 1 adds random back-pressure on the HBM port
  double host_ready_probability = 1.0;  // same on the host port
  uint64_t seed = 1;
};

// Small assembler for test programs; every instruction is encoded with tpu::isa::Encode.
class Program {
 public:
  uint32_t size() const { return static_cast<uint32_t>(words_.size()); }
  const std::vector<uint64_t>& words() const { return words_; }
  // Appends one instruction; returns its pc.
  uint32_t Emit(isa::Opcode op, uint8_t rd = 0, uint8_t rs1 = 0, uint8_t rs2 = 0, uint8_t rs3 = 0,
                uint8_t flags = 0, uint32_t imm = 0);
  uint32_t Raw(uint64_t word);
  uint32_t Nop() { return Emit(isa::Opcode::NOP); }
  uint32_t Halt() { return Emit(isa::Opcode::HALT); }
  uint32_t Li(uint8_t rd, uint32_t imm) { return Emit(isa::Opcode::LI, rd, 0, 0, 0, 0, imm); }
  uint32_t Addi(uint8_t rd, uint8_t rs1, uint32_t imm) { return Emit(isa::Opcode::ADDI, rd, rs1, 0, 0, 0, imm); }
  uint32_t Add(uint8_t rd, uint8_t rs1, uint8_t rs2) { return Emit(isa::Opcode::ADD, rd, rs1, rs2); }
  uint32_t Sub(uint8_t rd, uint8_t rs1, uint8_t rs2) { return Emit(isa::Opcode::SUB, rd, rs1, rs2); }
  uint32_t Mul(uint8_t rd, uint8_t rs1, uint8_t rs2) { return Emit(isa::Opcode::MUL, rd, rs1, rs2); }
  uint32_t Bne(uint8_t rs1, uint8_t rs2, uint32_t target) { return Emit(isa::Opcode::BNE, 0, rs1, rs2, 0, 0, target); }
  uint32_t Beq(uint8_t rs1, uint8_t rs2, uint32_t target) { return Emit(isa::Opcode::BEQ, 0, rs1, rs2, 0, 0, target); }
  uint32_t Blt(uint8_t rs1, uint8_t rs2, uint32_t target) { return Emit(isa::Opcode::BLT, 0, rs1, rs2, 0, 0, target); }
  uint32_t Jmp(uint32_t target) { return Emit(isa::Opcode::JMP, 0, 0, 0, 0, 0, target); }
  uint32_t Sync(uint8_t flags = 0) { return Emit(isa::Opcode::SYNC, 0, 0, 0, 0, flags); }
  // DMA_LD/ST hbm=s[rs_hbm], vmem=s[rs_vmem], count=s[rs_count], stride=imm.
  uint32_t DmaLd(uint8_t rs_hbm, uint8_t rs_vmem, uint8_t rs_count, uint32_t stride) {
    return Emit(isa::Opcode::DMA_LD, 0, rs_hbm, rs_vmem, rs_count, 0, stride);
  }
  uint32_t DmaSt(uint8_t rs_hbm, uint8_t rs_vmem, uint8_t rs_count, uint32_t stride) {
    return Emit(isa::Opcode::DMA_ST, 0, rs_hbm, rs_vmem, rs_count, 0, stride);
  }
  uint32_t MxuLw(uint8_t rs_src, uint8_t flags = 0) { return Emit(isa::Opcode::MXU_LW, 0, rs_src, 0, 0, flags); }
  uint32_t MxuMm(uint8_t rs_src, uint8_t rs_dst, uint8_t rs_count, uint8_t flags = 0) {
    return Emit(isa::Opcode::MXU_MM, 0, rs_src, rs_dst, rs_count, flags);
  }
  uint32_t Vadd(uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags = 0, uint32_t imm = 0) {
    return Emit(isa::Opcode::VADD, rd, rs1, rs2, rs3, flags, imm);
  }
  uint32_t Vmax(uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags = 0, uint32_t imm = 0) {
    return Emit(isa::Opcode::VMAX, rd, rs1, rs2, rs3, flags, imm);
  }
  uint32_t Vsplat(uint8_t rd, uint8_t rs3, uint32_t imm) { return Emit(isa::Opcode::VSPLAT, rd, 0, 0, rs3, 0, imm); }
  // Rewrites the immediate of the instruction at `pc` (for forward branch targets).
  void PatchImm(uint32_t pc, uint32_t imm);

 private:
  std::vector<uint64_t> words_;
};

class ChipHarness {
 public:
  explicit ChipHarness(const HarnessOptions& options = HarnessOptions());
  ~ChipHarness();
  ChipHarness(const ChipHarness&) = delete;
  ChipHarness& operator=(const ChipHarness&) = delete;

  // Configuration, read from the generated tpu_config.h.
  uint32_t lanes() const;
  uint32_t line_bytes() const { return lanes() * 4; }

  // Holds rst_ni low for a few cycles (memories keep their contents).
  void Reset();
  void Tick(uint64_t cycles = 1);
  uint64_t cycle() const { return cycle_; }
  bool irq() const;

  // One MMIO access; returns after its response pulse. Reads return the data.
  uint32_t MmioRead(uint32_t offset);
  void MmioWrite(uint32_t offset, uint32_t value);

  // Writes `words` into IMEM from `base` through the MMIO window.
  void LoadProgram(const std::vector<uint64_t>& words, uint32_t base = 0);
  uint64_t ReadImemWord(uint32_t index);
  // Loads `program` at 0, rings the doorbell at `start_pc` and waits until the core is not busy.
  // Returns false on timeout.
  bool RunProgram(const Program& program, uint64_t max_cycles = 2000000, uint32_t start_pc = 0);
  // Waits until STATUS shows neither the core nor the host DMA busy. Returns false on timeout.
  bool WaitIdle(uint64_t max_cycles);
  // Waits for the interrupt line. Returns false on timeout.
  bool WaitIrq(uint64_t max_cycles);

  // Backdoor access of core 0: a line is lanes() 32-bit words, lane 0 first.
  std::vector<uint32_t> ReadHbm(uint64_t line) const;
  void WriteHbm(uint64_t line, const std::vector<uint32_t>& lanes);
  std::vector<uint32_t> ReadVmem(uint32_t line) const;
  void WriteVmem(uint32_t line, const std::vector<uint32_t>& lanes);
  uint32_t ReadSreg(unsigned index) const;
  void HostWrite(uint64_t address, const void* data, size_t bytes);
  void HostRead(uint64_t address, void* data, size_t bytes) const;
  // Host accesses touching bytes in [begin, end) get a bus error; an empty range disables it.
  void SetHostBusErrorRange(uint64_t begin, uint64_t end);

  // Protocol violations seen on the memory ports (empty when the chip behaved).
  const std::vector<std::string>& violations() const { return violations_; }
  uint64_t hbm_requests() const { return hbm_requests_; }

 private:
  struct Response {
    uint64_t due;
    std::vector<uint32_t> data;
    bool error;
  };
  // Sparse line store: pages of lines allocated on first write; unwritten lines read as zero.
  struct SparseLines {
    uint32_t lanes = 0;
    std::unordered_map<uint64_t, std::vector<uint32_t>> pages;
    std::vector<uint32_t> Read(uint64_t line) const;
    void Write(uint64_t line, const uint32_t* data);
  };

  void DriveInputs();
  void SampleOutputs();
  void SampleHbm(unsigned core);

  HarnessOptions options_;
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vtpu_chip> top_;
  uint64_t cycle_ = 0;
  std::mt19937_64 rng_;

  std::unordered_map<uint64_t, std::vector<uint8_t>> host_pages_;
  std::deque<Response> host_pending_;
  uint64_t bus_error_begin_ = 0, bus_error_end_ = 0;
  uint64_t hbm_requests_ = 0;

  // A request presented without being accepted must stay presented, unchanged (checked per port).
  struct HeldRequest {
    bool held = false;
    bool write = false;
    uint64_t address = 0;
    std::vector<uint32_t> wdata;
  };
  void CheckHeld(const char* port, HeldRequest& held, bool valid, bool ready, bool write, uint64_t address,
                 const std::vector<uint32_t>& wdata);
  HeldRequest host_held_;
  // Each core's HBM: its lines, the responses on their way and its request held for the ready.
  struct CoreHbm {
    SparseLines lines;
    std::deque<Response> pending;
    HeldRequest held;
  };
  std::vector<CoreHbm> hbm_;

  bool mmio_rvalid_seen_ = false;
  uint32_t mmio_rdata_ = 0;
  std::vector<std::string> violations_;
};

}  // namespace tpu::tb
