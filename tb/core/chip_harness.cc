#include "tb/core/chip_harness.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "Vtpu_chip.h"
#include "sysc/verilated_coverage.h"
#include "Vtpu_chip___024root.h"
#include "sw/driver/test_instructions.h"
#include "tpu_config.h"
#include "tpu_csr.h"
#include "verilated.h"

// A flop of core 0's tpu_core, as Verilator names it in the flattened model.
#define TPU_CORE0(path) tpu_chip__DOT__gen_core__BRA__0__KET____DOT__u_tile__DOT__u_core__DOT__##path

namespace tpu::tb {
namespace {

constexpr uint64_t kLinesPerPage = 1024;
constexpr uint64_t kHostPageBytes = 4096;
constexpr uint32_t kLanes = static_cast<uint32_t>(cfg::kLanes);

constexpr unsigned kCores = static_cast<unsigned>(cfg::kNumCores);

// Copies line `index` of a verilated wide signal (lines of LINE_W bits packed) into lanes and back.
template <typename Wide>
std::vector<uint32_t> FromWide(const Wide& wide, unsigned index = 0) {
  std::vector<uint32_t> lanes(kLanes);
  for (uint32_t i = 0; i < kLanes; ++i) lanes[i] = wide[index * kLanes + i];
  return lanes;
}
template <typename Wide>
void ToWide(Wide& wide, const std::vector<uint32_t>& lanes, unsigned index = 0) {
  for (uint32_t i = 0; i < kLanes; ++i) wide[index * kLanes + i] = lanes[i];
}

// Bit `index` of a packed per-core pin, and setting it.
template <typename Bits>
bool BitAt(Bits bits, unsigned index) {
  return ((uint64_t(bits) >> index) & 1) != 0;
}
template <typename Bits>
void SetBitAt(Bits& bits, unsigned index, bool value) {
  bits = Bits((uint64_t(bits) & ~(uint64_t{1} << index)) | (uint64_t{value} << index));
}

}  // namespace

uint32_t Program::Emit(isa::Opcode op, uint8_t rd, uint8_t rs1, uint8_t rs2, uint8_t rs3, uint8_t flags,
                       uint32_t imm) {
  return Raw(testing::Assemble(op, rd, rs1, rs2, rs3, flags, imm));
}

uint32_t Program::Raw(uint64_t word) {
  words_.push_back(word);
  return size() - 1;
}

void Program::PatchImm(uint32_t pc, uint32_t imm) {
  isa::Instr instr = isa::Decode(words_.at(pc));
  instr.imm = imm;
  words_[pc] = isa::Encode(instr);
}

std::vector<uint32_t> ChipHarness::SparseLines::Read(uint64_t line) const {
  auto it = pages.find(line / kLinesPerPage);
  if (it == pages.end()) return std::vector<uint32_t>(lanes, 0);
  const uint32_t* begin = it->second.data() + (line % kLinesPerPage) * lanes;
  return std::vector<uint32_t>(begin, begin + lanes);
}

void ChipHarness::SparseLines::Write(uint64_t line, const uint32_t* data) {
  std::vector<uint32_t>& page = pages[line / kLinesPerPage];
  if (page.empty()) page.assign(kLinesPerPage * lanes, 0);
  std::copy(data, data + lanes, page.data() + (line % kLinesPerPage) * lanes);
}

ChipHarness::ChipHarness(const HarnessOptions& options)
    : options_(options), context_(new VerilatedContext), rng_(options.seed) {
  if (options_.hbm_latency == 0) options_.hbm_latency = static_cast<uint32_t>(cfg::kHbmLatency);
  if (options_.host_latency == 0) options_.host_latency = 1;
  hbm_.resize(kCores);
  for (CoreHbm& hbm : hbm_) hbm.lines.lanes = kLanes;
  top_.reset(new Vtpu_chip(context_.get(), "tpu_chip"));
  top_->clk_i = 0;
  top_->mmio_valid_i = 0;
  // A board of this one chip: its ICI ports stay idle (nothing is sent, nothing arrives).
  top_->num_chips_i = 1;
  top_->ici_credits_i = 2;
  Reset();
}

ChipHarness::~ChipHarness() {
  top_->final();
  WriteVerilatedCoverage(context_.get());
}

uint32_t ChipHarness::lanes() const { return kLanes; }

bool ChipHarness::irq() const { return BitAt(top_->irq_o, 0); }

void ChipHarness::Reset() {
  top_->rst_ni = 0;
  Tick(4);
  top_->rst_ni = 1;
  // Responses to requests made before the reset never arrive: the chip forgot them.
  for (CoreHbm& hbm : hbm_) {
    hbm.pending.clear();
    hbm.held = HeldRequest();
  }
  host_pending_.clear();
  host_held_ = HeldRequest();
  Tick(1);
}

void ChipHarness::DriveInputs() {
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  top_->hbm_rsp_valid_i = 0;
  for (unsigned core = 0; core < kCores; ++core) {
    SetBitAt(top_->hbm_req_ready_i, core, coin(rng_) < options_.hbm_ready_probability);
    std::deque<Response>& pending = hbm_[core].pending;
    if (!pending.empty() && pending.front().due <= cycle_) {
      SetBitAt(top_->hbm_rsp_valid_i, core, true);
      ToWide(top_->hbm_rsp_rdata_i, pending.front().data, core);
      pending.pop_front();
    }
  }
  top_->host_req_ready_i = coin(rng_) < options_.host_ready_probability;

  top_->host_rsp_valid_i = 0;
  top_->host_rsp_error_i = 0;
  if (!host_pending_.empty() && host_pending_.front().due <= cycle_) {
    top_->host_rsp_valid_i = 1;
    top_->host_rsp_error_i = host_pending_.front().error;
    ToWide(top_->host_rsp_rdata_i, host_pending_.front().data);
    host_pending_.pop_front();
  }
}

void ChipHarness::CheckHeld(const char* port, HeldRequest& held, bool valid, bool ready, bool write,
                            uint64_t address, const std::vector<uint32_t>& wdata) {
  // Write data matters only for writes.
  if (held.held && (!valid || write != held.write || address != held.address || (write && wdata != held.wdata))) {
    violations_.push_back(std::string(port) + " request withdrawn or changed before it was accepted, cycle " +
                          std::to_string(cycle_));
  }
  held.held = valid && !ready;
  held.write = write;
  held.address = address;
  held.wdata = wdata;
}

void ChipHarness::SampleHbm(unsigned core) {
  CoreHbm& hbm = hbm_[core];
  const bool valid = BitAt(top_->hbm_req_valid_o, core), ready = BitAt(top_->hbm_req_ready_i, core);
  const bool write = BitAt(top_->hbm_req_write_o, core);
  const uint64_t line = (uint64_t(top_->hbm_req_addr_o) >> (32 * core)) & 0xFFFFFFFFu;
  const std::string port = kCores == 1 ? "HBM" : "HBM of core " + std::to_string(core);
  CheckHeld(port.c_str(), hbm.held, valid, ready, write, line, FromWide(top_->hbm_req_wdata_o, core));
  if (!valid || !ready) return;
  ++hbm_requests_;
  Response response{cycle_ + options_.hbm_latency, std::vector<uint32_t>(kLanes, 0), false};
  if (line >= cfg::kHbmLines) {
    violations_.push_back(port + " request beyond HBM_LINES: line " + std::to_string(line));
  } else if (write) {
    hbm.lines.Write(line, FromWide(top_->hbm_req_wdata_o, core).data());
  } else {
    response.data = hbm.lines.Read(line);
  }
  hbm.pending.push_back(std::move(response));
}

void ChipHarness::SampleOutputs() {
  for (unsigned core = 0; core < kCores; ++core) SampleHbm(core);
  CheckHeld("host", host_held_, top_->host_req_valid_o, top_->host_req_ready_i, top_->host_req_write_o,
            top_->host_req_addr_o, FromWide(top_->host_req_wdata_o));
  if (top_->mmio_rvalid_o) {
    mmio_rvalid_seen_ = true;
    mmio_rdata_ = top_->mmio_rdata_o;
  }
  if (top_->host_req_valid_o && top_->host_req_ready_i) {
    const uint64_t address = top_->host_req_addr_o;
    Response response{cycle_ + options_.host_latency, std::vector<uint32_t>(kLanes, 0), false};
    const uint64_t end = address + line_bytes();
    if (address % line_bytes() != 0) {
      violations_.push_back("misaligned host request: " + std::to_string(address));
    }
    if (end > cfg::kHostMemBytes || (address < bus_error_end_ && end > bus_error_begin_)) {
      response.error = true;
    } else if (top_->host_req_write_o) {
      const std::vector<uint32_t> lanes = FromWide(top_->host_req_wdata_o);
      HostWrite(address, lanes.data(), line_bytes());
    } else {
      HostRead(address, response.data.data(), line_bytes());
    }
    host_pending_.push_back(std::move(response));
  }
}

void ChipHarness::Tick(uint64_t cycles) {
  for (uint64_t i = 0; i < cycles; ++i) {
    DriveInputs();
    top_->eval();
    SampleOutputs();
    top_->clk_i = 1;
    top_->eval();
    top_->clk_i = 0;
    top_->mmio_valid_i = 0;
    top_->eval();
    ++cycle_;
    context_->timeInc(1);
  }
}

uint32_t ChipHarness::MmioRead(uint32_t offset) {
  top_->mmio_valid_i = 1;
  top_->mmio_write_i = 0;
  top_->mmio_addr_i = offset;
  top_->mmio_wdata_i = 0;
  mmio_rvalid_seen_ = false;
  Tick(1);
  Tick(1);  // the response pulse is sampled in the cycle after the access
  if (!mmio_rvalid_seen_) violations_.push_back("no MMIO response for read of " + std::to_string(offset));
  return mmio_rdata_;
}

void ChipHarness::MmioWrite(uint32_t offset, uint32_t value) {
  top_->mmio_valid_i = 1;
  top_->mmio_write_i = 1;
  top_->mmio_addr_i = offset;
  top_->mmio_wdata_i = value;
  mmio_rvalid_seen_ = false;
  Tick(1);
  Tick(1);
  if (!mmio_rvalid_seen_) violations_.push_back("no MMIO response for write of " + std::to_string(offset));
}

void ChipHarness::LoadProgram(const std::vector<uint64_t>& words, uint32_t base) {
  for (size_t i = 0; i < words.size(); ++i) {
    const uint32_t offset = csr::IMEM_WINDOW + 8 * (base + static_cast<uint32_t>(i));
    MmioWrite(offset, static_cast<uint32_t>(words[i]));
    MmioWrite(offset + 4, static_cast<uint32_t>(words[i] >> 32));
  }
}

uint64_t ChipHarness::ReadImemWord(uint32_t index) {
  const uint32_t offset = csr::IMEM_WINDOW + 8 * index;
  const uint64_t lo = MmioRead(offset);
  const uint64_t hi = MmioRead(offset + 4);
  return lo | (hi << 32);
}

bool ChipHarness::RunProgram(const Program& program, uint64_t max_cycles, uint32_t start_pc) {
  LoadProgram(program.words());
  MmioWrite(csr::START_PC, start_pc);
  MmioWrite(csr::DOORBELL, 1);
  return WaitIdle(max_cycles);
}

bool ChipHarness::WaitIdle(uint64_t max_cycles) {
  const uint64_t deadline = cycle_ + max_cycles;
  while (cycle_ < deadline) {
    if ((MmioRead(csr::STATUS) & (csr::STATUS_BUSY | csr::STATUS_HDMA_BUSY)) == 0) return true;
    Tick(16);
  }
  return false;
}

bool ChipHarness::WaitIrq(uint64_t max_cycles) {
  const uint64_t deadline = cycle_ + max_cycles;
  while (cycle_ < deadline) {
    if (irq()) return true;
    Tick(1);
  }
  return irq();
}

std::vector<uint32_t> ChipHarness::ReadHbm(uint64_t line) const { return hbm_[0].lines.Read(line); }

void ChipHarness::WriteHbm(uint64_t line, const std::vector<uint32_t>& lanes) {
  std::vector<uint32_t> padded(lanes);
  padded.resize(kLanes, 0);
  hbm_[0].lines.Write(line, padded.data());
}

std::vector<uint32_t> ChipHarness::ReadVmem(uint32_t line) const {
  return FromWide(top_->rootp->TPU_CORE0(u_vmem__DOT__mem_q)[line % cfg::kVmemLines]);
}

void ChipHarness::WriteVmem(uint32_t line, const std::vector<uint32_t>& lanes) {
  std::vector<uint32_t> padded(lanes);
  padded.resize(kLanes, 0);
  ToWide(top_->rootp->TPU_CORE0(u_vmem__DOT__mem_q)[line % cfg::kVmemLines], padded);
}

uint32_t ChipHarness::ReadSreg(unsigned index) const {
  return top_->rootp->TPU_CORE0(u_sequencer__DOT__sregs_q)[index % cfg::kSregs];
}

void ChipHarness::HostWrite(uint64_t address, const void* data, size_t bytes) {
  const uint8_t* src = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    std::vector<uint8_t>& page = host_pages_[(address + i) / kHostPageBytes];
    if (page.empty()) page.assign(kHostPageBytes, 0);
    page[(address + i) % kHostPageBytes] = src[i];
  }
}

void ChipHarness::HostRead(uint64_t address, void* data, size_t bytes) const {
  uint8_t* dst = static_cast<uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    auto it = host_pages_.find((address + i) / kHostPageBytes);
    dst[i] = (it == host_pages_.end()) ? 0 : it->second[(address + i) % kHostPageBytes];
  }
}

void ChipHarness::SetHostBusErrorRange(uint64_t begin, uint64_t end) {
  bus_error_begin_ = begin;
  bus_error_end_ = end;
}

}  // namespace tpu::tb
