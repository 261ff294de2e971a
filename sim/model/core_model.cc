#include "sim/model/core_model.h"

#include <algorithm>
#include <vector>
#include <cfenv>
#include <cstring>
#include <limits>

#include "sim/model/mxu_kernel.h"
#include "sim/numerics/numerics.h"
#include "sim/numerics/transcendental.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu::model {

namespace {

constexpr uint32_t kSemMax = (1u << tpu::csr::SEM_BITS) - 1;  // a host semaphore saturates here

using tpu::isa::Error;
using tpu::isa::Opcode;

constexpr uint32_t ErrorValue(Error error) { return static_cast<uint32_t>(error); }


// MXU_MM runs the host-float kernel on chunks of about this many LHS elements (64 KiB of floats, so that
// a chunk and its results stay in the host's L2 cache).
constexpr uint32_t kMxuChunkElements = 16384;

}  // namespace

CoreModel::CoreModel(const ChipConfig& config, const Timing& timing, uint32_t core_id, uint32_t chip_id,
                     HostMemory* host, CoreNetwork* network)
    : config_(config),
      timing_(timing),
      core_id_(core_id),
      chip_id_(chip_id),
      imem_(config.imem_words, 0),
      vmem_(static_cast<size_t>(config.vmem_lines) * config.lanes, 0),
      hbm_(std::make_unique<SparseMemory>(config.hbm_lines * config.line_bytes())),
      hbm_twin_(config.hbm_timing ? std::make_unique<HbmTwin>(config.hbm_geometry()) : nullptr),
      host_(host),
      network_(network),
      mxu_chunk_rows_(std::max(1u, kMxuChunkElements / config.lanes)),
      mxu_lhs_(static_cast<size_t>(mxu_chunk_rows_) * config.lanes),
      mxu_lhs_bf16_(config.lanes),
      mxu_out_(static_cast<size_t>(mxu_chunk_rows_) * config.lanes) {
  for (MxuWeights* weights : {&mxu_front_, &mxu_back_}) {
    weights->values.assign(static_cast<size_t>(config.lanes) * config.lanes, 0.0f);
    weights->bf16.assign(weights->values.size(), 0);
    weights->range = MxuExponentRangeOf(weights->values.data(), weights->values.size());
  }
}

CoreModel::~CoreModel() = default;

void CoreModel::Reset() {
  cycle_ = 0;
  // memset rather than std::fill: the fuzz build instruments every iteration of a fill loop.
  std::memset(imem_.data(), 0, imem_.size() * sizeof(imem_[0]));
  std::memset(vmem_.data(), 0, vmem_.size() * sizeof(vmem_[0]));
  hbm_->Clear();
  for (MxuWeights* weights : {&mxu_front_, &mxu_back_}) {
    std::memset(weights->values.data(), 0, weights->values.size() * sizeof(weights->values[0]));
    std::memset(weights->bf16.data(), 0, weights->bf16.size() * sizeof(weights->bf16[0]));
    weights->range = MxuExponentRangeOf(weights->values.data(), weights->values.size());
  }
  std::memset(mxu_lhs_.data(), 0, mxu_lhs_.size() * sizeof(mxu_lhs_[0]));
  std::memset(mxu_lhs_bf16_.data(), 0, mxu_lhs_bf16_.size() * sizeof(mxu_lhs_bf16_[0]));
  std::memset(mxu_out_.data(), 0, mxu_out_.size() * sizeof(mxu_out_[0]));

  // In the order of the declarations (core_model.h).
  sregs_.fill(0);
  core_running_ = false;
  pc_ = 0;
  core_time_ = 0;
  last_issue_ = 0;
  watchdog_expired_ = false;
  draining_ = false;
  sld_read_ = false;
  sem_blocked_ = false;
  sem_wait_start_ = 0;
  unit_busy_until_.fill(0);
  dma_accept_at_ = dma_last_load_done_ = 0;
  dma_done_at_.clear();
  dma_streams_.clear();
  if (hbm_twin_ != nullptr) hbm_twin_->Reset(0);
  ici_accept_at_ = 0;
  ici_core_ = 0;
  mxu_lw_ready_ = mxu_mm_ready_ = 0;
  mxu_bank_free_.fill(0);
  mxu_front_bank_ = 0;

  start_pc_ = 0;
  halted_ = error_ = false;
  error_code_ = error_pc_ = 0;
  irq_status_ = 0;
  irq_enable_ = kIrqMask;
  sems_.fill(0);
  watchdog_limit_ = kWatchdogLimitAtReset;

  run_start_ = run_stop_ = 0;
  mxu_busy_ = 0;
  instret_ = dma_lines_ = vpu_busy_ = stall_cycles_ = feed_stall_ = 0;

  hdma_host_lo_ = hdma_host_hi_ = hdma_hbm_line_ = hdma_lines_ = 0;
  hdma_status_ = 0;
  hdma_busy_ = hdma_to_host_ = false;
  hdma_done_at_ = 0;
  hdma_host_ = hdma_hbm_ = hdma_count_ = 0;

  pending_stall_on_.fill(0);
}

size_t CoreModel::hbm_pages_allocated() const { return hbm_->pages_allocated(); }

// ---------------------------------------------------------------------------------------------------------
// MMIO

uint64_t CoreModel::CounterCycles() const {
  if (!core_running_) return run_stop_ - run_start_;
  return cycle_ > run_start_ ? cycle_ - run_start_ : 0;
}

uint32_t CoreModel::MmioRead(uint32_t offset) {
  namespace csr = tpu::csr;
  if (offset >= csr::IMEM_WINDOW) {
    const uint64_t index = (offset - csr::IMEM_WINDOW) / 8;
    if ((offset & 3) != 0 || index >= imem_.size()) return 0;
    const uint64_t word = imem_[index];
    return (offset & 4) ? static_cast<uint32_t>(word >> 32) : static_cast<uint32_t>(word);
  }
  switch (offset) {
    case csr::ID: return csr::ID_MAGIC;
    case csr::VERSION: return csr::VERSION_VALUE;
    case csr::CFG_LANES: return config_.lanes;
    case csr::CFG_VMEM_LINES: return config_.vmem_lines;
    case csr::CFG_IMEM_WORDS: return config_.imem_words;
    case csr::CFG_HBM_LINES: return static_cast<uint32_t>(config_.hbm_lines);
    case csr::CFG_NUM_CORES: return config_.num_cores;
    case csr::CFG_SREGS: return config_.sregs;
    case csr::CFG_HBM_CHANNELS: return config_.hbm_channels;
    case csr::CFG_CORE_ID: return core_id_;
    case csr::CFG_CHIP_ID: return chip_id_;
    case csr::CFG_NUM_CHIPS: return network_ == nullptr ? 1 : network_->Chips();
    case csr::START_PC: return start_pc_;
    case csr::STATUS:
      return (core_running_ ? csr::STATUS_BUSY : 0) | (halted_ ? csr::STATUS_HALTED : 0) |
             (error_ ? csr::STATUS_ERROR : 0) | (hdma_busy_ ? csr::STATUS_HDMA_BUSY : 0);
    case csr::ERROR_CODE: return error_code_;
    case csr::ERROR_PC: return error_pc_;
    case csr::IRQ_STATUS: return irq_status_;
    case csr::IRQ_ENABLE: return irq_enable_;
    case csr::WATCHDOG_LIMIT: return watchdog_limit_;
    case csr::CYCLES_LO: return static_cast<uint32_t>(CounterCycles());
    case csr::CYCLES_HI: return static_cast<uint32_t>(CounterCycles() >> 32);
    case csr::MXU_BUSY_LO: return static_cast<uint32_t>(mxu_busy_);
    case csr::MXU_BUSY_HI: return static_cast<uint32_t>(mxu_busy_ >> 32);
    case csr::INSTRET: return instret_;
    case csr::DMA_LINES: return dma_lines_;
    case csr::VPU_BUSY: return vpu_busy_;
    case csr::STALL_CYCLES: return stall_cycles_;
    case csr::FEED_STALL: return feed_stall_;
    case csr::SEM_COUNTS:
    case csr::SEM_COUNTS_HI: {
      const uint32_t first = offset == csr::SEM_COUNTS ? 0 : 4;
      uint32_t counts = 0;
      for (uint32_t i = 0; i < 4; ++i) counts |= sems_[first + i] << (i * csr::SEM_BITS);
      return counts;
    }
    case csr::HDMA_HOST_LO: return hdma_host_lo_;
    case csr::HDMA_HOST_HI: return hdma_host_hi_;
    case csr::HDMA_HBM_LINE: return hdma_hbm_line_;
    case csr::HDMA_LINES: return hdma_lines_;
    case csr::HDMA_STATUS: return hdma_status_;
    default: return 0;  // write-only strobes and unmapped offsets
  }
}

void CoreModel::MmioWrite(uint32_t offset, uint32_t value) {
  namespace csr = tpu::csr;
  if (offset >= csr::IMEM_WINDOW) {
    const uint64_t index = (offset - csr::IMEM_WINDOW) / 8;
    if ((offset & 3) != 0 || index >= imem_.size() || core_running_) return;  // dropped while BUSY
    uint64_t& word = imem_[index];
    if (offset & 4) {
      word = (word & 0xFFFFFFFFull) | (uint64_t{value} << 32);
    } else {
      word = (word & ~0xFFFFFFFFull) | value;
    }
    return;
  }
  switch (offset) {
    case csr::DOORBELL:
      if (value & 1u) DoorBell();
      break;
    case csr::START_PC: start_pc_ = value; break;
    case csr::SOFT_RESET:
      if (value & 1u) SoftReset();
      break;
    case csr::IRQ_STATUS: irq_status_ &= ~value; break;
    case csr::IRQ_ENABLE: irq_enable_ = value & kIrqMask; break;
    case csr::SEM_POST:
      if (value < csr::SEMS) PostSemaphore(value, cycle_ + 1);
      break;
    case csr::SEM_TAKE:
      if (value < csr::SEMS && sems_[value] != 0) --sems_[value];
      break;
    case csr::SEM_CLEAR:
      if (value & 1u) sems_.fill(0);
      break;
    case csr::WATCHDOG_LIMIT: watchdog_limit_ = value; break;
    case csr::HDMA_HOST_LO: hdma_host_lo_ = value; break;
    case csr::HDMA_HOST_HI: hdma_host_hi_ = value; break;
    case csr::HDMA_HBM_LINE: hdma_hbm_line_ = value; break;
    case csr::HDMA_LINES: hdma_lines_ = value; break;
    case csr::HDMA_CTRL: StartHostDma(value); break;
    default: break;  // read-only and unmapped
  }
}

bool CoreModel::Irq() const { return (irq_status_ & irq_enable_) != 0; }

void CoreModel::DoorBell() {
  if (core_running_) return;  // ignored while BUSY
  core_running_ = true;
  halted_ = false;
  error_ = false;
  error_code_ = 0;
  error_pc_ = 0;
  sregs_.fill(0);
  mxu_busy_ = 0;
  instret_ = dma_lines_ = vpu_busy_ = stall_cycles_ = feed_stall_ = 0;
  pc_ = start_pc_;
  core_time_ = cycle_ + timing_.doorbell_to_fetch;
  run_start_ = run_stop_ = core_time_;  // CYCLES counts the cycles the sequencer runs
  last_issue_ = core_time_ - 1;
  watchdog_expired_ = false;
  draining_ = false;
  sld_read_ = false;
  sem_blocked_ = false;
  pending_stall_on_.fill(0);
  if (profile_ != nullptr) {
    profile_->Clear(config_.imem_words);
    profile_->start_cycle = run_start_;
  }
}

void CoreModel::SoftReset() {
  if (core_running_) run_stop_ = std::max(cycle_, run_start_);  // counters stop at the abort
  core_running_ = false;
  watchdog_expired_ = false;
  draining_ = false;
  sld_read_ = false;
  sem_blocked_ = false;
  sems_.fill(0);
  halted_ = false;
  error_ = false;
  error_code_ = 0;
  error_pc_ = 0;
  irq_status_ = 0;
  hdma_status_ = 0;
  hdma_busy_ = false;  // an aborted host DMA moves nothing (the model moves data on completion)
  unit_busy_until_.fill(cycle_);
  dma_done_at_.clear();
  dma_streams_.clear();
}

// ---------------------------------------------------------------------------------------------------------
// Host DMA engine

void CoreModel::StartHostDma(uint32_t ctrl) {
  namespace csr = tpu::csr;
  if (!(ctrl & csr::HDMA_CTRL_START) || hdma_busy_) return;  // ignored while busy
  const uint64_t host = (uint64_t{hdma_host_hi_} << 32) | hdma_host_lo_;
  // The engine checks alignment and the HBM range (docs/csr.md); host addresses beyond host memory get
  // bus error responses during the transfer, as from the platform's host memory.
  uint32_t error = 0;
  if (host % config_.line_bytes() != 0) {
    error = ErrorValue(Error::BAD_HOST_ADDR);
  } else if (uint64_t{hdma_hbm_line_} + hdma_lines_ > config_.hbm_lines) {
    error = ErrorValue(Error::BAD_HBM_ADDR);
  }
  if (error != 0) {
    hdma_status_ = csr::HDMA_STATUS_ERROR | (error << csr::HDMA_STATUS_CODE_LSB);
    irq_status_ |= csr::IRQ_STATUS_HDMA_ERROR;
    return;
  }
  hdma_busy_ = true;
  hdma_status_ = csr::HDMA_STATUS_BUSY;
  hdma_to_host_ = (ctrl & csr::HDMA_CTRL_TO_HOST) != 0;
  hdma_host_ = host;
  hdma_hbm_ = hdma_hbm_line_;
  hdma_count_ = hdma_lines_;
  const uint32_t overhead = hdma_to_host_ ? timing_.hdma_to_host_overhead : timing_.hdma_to_hbm_overhead;
  if (hbm_twin_ != nullptr && hdma_count_ > 0) {
    const HbmTwin::StreamTiming port =
        hbm_twin_->Stream(cycle_ + timing_.hdma_port_delay, !hdma_to_host_, hdma_hbm_, hdma_count_, 1);
    hdma_done_at_ = port.last_answer + timing_.hbm_answer_delay + overhead - timing_.hdma_port_delay;
  } else {
    hdma_done_at_ = cycle_ + overhead + config_.hbm_latency + hdma_count_;
  }
}

void CoreModel::CompleteHostDma() {
  namespace csr = tpu::csr;
  hdma_busy_ = false;
  const uint64_t line_bytes = config_.line_bytes();
  // A host bus error stops the engine at the first failing line; the lines before it have moved.
  const uint64_t good_lines = host_->GoodLines(hdma_host_, hdma_count_, line_bytes);
  const bool bus_error = good_lines < hdma_count_;
  std::vector<uint8_t> buffer(std::min<uint64_t>(good_lines, 4096) * line_bytes);
  for (uint64_t done = 0; done < good_lines;) {
    const uint64_t chunk = std::min<uint64_t>(good_lines - done, 4096);
    const uint64_t host = hdma_host_ + done * line_bytes;
    const uint64_t hbm = (hdma_hbm_ + done) * line_bytes;
    if (hdma_to_host_) {
      hbm_->Read(hbm, buffer.data(), chunk * line_bytes);
      host_->memory().Write(host, buffer.data(), chunk * line_bytes);
    } else {
      host_->memory().Read(host, buffer.data(), chunk * line_bytes);
      hbm_->Write(hbm, buffer.data(), chunk * line_bytes);
    }
    done += chunk;
  }
  if (bus_error) {
    hdma_status_ = csr::HDMA_STATUS_ERROR | (ErrorValue(Error::HOST_BUS_ERROR) << csr::HDMA_STATUS_CODE_LSB);
    irq_status_ |= csr::IRQ_STATUS_HDMA_ERROR;
  } else {
    hdma_status_ = 0;
    irq_status_ |= csr::IRQ_STATUS_HDMA_DONE;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Time

uint64_t CoreModel::NextEvent() const {
  uint64_t next = kNever;
  if (core_running_) next = std::max(core_time_, cycle_);
  if (hdma_busy_) next = std::min(next, std::max(hdma_done_at_, cycle_));
  return next;
}

void CoreModel::RunEvent(uint64_t at) {
  cycle_ = at;
  if (hdma_busy_ && hdma_done_at_ <= cycle_) {
    CompleteHostDma();
  } else {
    StepCore();
  }
}

// ---------------------------------------------------------------------------------------------------------
// Sequencer

void CoreModel::StopCore() {
  core_running_ = false;
  run_stop_ = std::max(core_time_, run_start_);
  if (profile_ != nullptr) {
    // A run that ends in an error: the drain after the last issue is the faulting instruction's.
    if (run_stop_ > last_issue_ + 1 && pc_ < profile_->pcs.size()) {
      PcProfile& word = profile_->pcs[pc_];
      word.cycles += run_stop_ - 1 - last_issue_;
      word.stall_cycles += run_stop_ - 1 - last_issue_;
    }
    profile_->cycles = run_stop_ - run_start_;
  }
}

namespace {
// The profile's unit of a core unit: the order is the same, and the link engine counts as DMA.
uint8_t ProfileUnitOf(int unit) { return unit < kProfileUnits ? static_cast<uint8_t>(unit) : static_cast<uint8_t>(kProfileDma); }
}  // namespace

void CoreModel::ProfileIssue() {
  PcProfile& word = profile_->pcs[pc_];
  word.issues += 1;
  word.cycles += core_time_ - last_issue_;
  word.stall_cycles += core_time_ - last_issue_ - 1;
  for (int unit = 0; unit < kNumUnits; ++unit) word.stall_on[ProfileUnitOf(unit)] += pending_stall_on_[unit];
  pending_stall_on_.fill(0);
}

void CoreModel::ProfileInterval(UnitIndex unit, uint64_t begin, uint64_t end, uint32_t lines, uint32_t hbm_line,
                                uint32_t stride) {
  profile_->pcs[pc_].work[ProfileUnitOf(unit)] += lines;
  profile_->AddInterval(UnitInterval{ProfileUnitOf(unit), pc_, begin - run_start_, end - run_start_, lines,
                                     hbm_line, stride});
}

// As the RTL sequencer does: the error is raised in cycle t = core_time_ without issuing; from t+1 the
// core drains (still BUSY) until every unit is idle or the watchdog, still counting from the last issue,
// expires; it stops with ERROR the cycle after.
void CoreModel::RaiseCoreError(uint32_t code) {
  error_code_ = code;
  error_pc_ = pc_;
  const uint64_t t = core_time_;
  const uint64_t units_idle = *std::max_element(unit_busy_until_.begin(), unit_busy_until_.end());
  uint64_t last_drain_cycle = std::max(t + 1, units_idle);
  if (watchdog_limit_ != 0) {
    last_drain_cycle = std::min(last_drain_cycle, std::max(t + 1, last_issue_ + watchdog_limit_));
  }
  core_time_ = last_drain_cycle + 1;
  for (uint64_t& busy_until : unit_busy_until_) busy_until = std::min(busy_until, core_time_);  // flushed
  draining_ = true;
}

void CoreModel::FinishCoreError() {
  draining_ = false;
  error_ = true;
  irq_status_ |= tpu::csr::IRQ_STATUS_CORE_ERROR;
  StopCore();
}

bool CoreModel::WaitUntil(uint64_t ready, UnitIndex unit) {
  if (ready <= core_time_) return true;
  if (watchdog_limit_ != 0) {
    // The watchdog expires in the cycle that is WATCHDOG_LIMIT cycles after the last issue.
    const uint64_t expires = last_issue_ + watchdog_limit_;
    if (expires < ready) {
      stall_cycles_ += static_cast<uint32_t>(expires + 1 - core_time_);
      if (unit != kNumUnits) pending_stall_on_[unit] += expires + 1 - core_time_;
      core_time_ = expires + 1;
      watchdog_expired_ = true;
      return false;
    }
  }
  stall_cycles_ += static_cast<uint32_t>(ready - core_time_);
  if (unit != kNumUnits) pending_stall_on_[unit] += ready - core_time_;
  core_time_ = ready;
  return false;
}

// The RTL's SEMWAIT stalls on no unit, cycle after cycle, until the semaphore is non-zero; here the core
// sleeps (core_time_ at the watchdog's expiry, or never) and the wait is charged when it ends.
void CoreModel::BlockOnSemaphore() {
  sem_blocked_ = true;
  sem_wait_start_ = core_time_;
  if (watchdog_limit_ != 0) {
    core_time_ = std::max(core_time_, last_issue_ + watchdog_limit_ + 1);
    watchdog_expired_ = true;
  } else {
    core_time_ = kNever;
  }
}

void CoreModel::WakeFromSemaphore(uint64_t wake) {
  sem_blocked_ = false;
  if (wake < core_time_) watchdog_expired_ = false;  // a post came before the watchdog expired
  core_time_ = std::max(wake, sem_wait_start_);
  const uint64_t waited = core_time_ - sem_wait_start_;
  stall_cycles_ += static_cast<uint32_t>(waited);
  feed_stall_ += static_cast<uint32_t>(waited);
}

void CoreModel::IncrementSemaphore(uint32_t index) { sems_[index] = std::min(sems_[index] + 1, kSemMax); }

void CoreModel::PostSemaphore(uint32_t index, uint64_t wake) {
  IncrementSemaphore(index);
  if (sem_blocked_ && sems_[tpu::isa::Decode(imem_[pc_]).imm] != 0) WakeFromSemaphore(wake);
}

bool CoreModel::CheckVmemRange(uint64_t base, uint64_t count) {
  if (count == 0 || base + count <= config_.vmem_lines) return true;
  RaiseCoreError(ErrorValue(Error::BAD_VMEM_ADDR));
  return false;
}

void CoreModel::StepCore() {
  if (draining_) {
    FinishCoreError();
    return;
  }
  if (watchdog_expired_) {
    // The units are flushed and the core stops at once.
    if (sem_blocked_) WakeFromSemaphore(core_time_);
    watchdog_expired_ = false;
    error_code_ = ErrorValue(Error::WATCHDOG);
    error_pc_ = pc_;
    for (uint64_t& busy_until : unit_busy_until_) busy_until = std::min(busy_until, core_time_);
    FinishCoreError();
    return;
  }
  if (pc_ >= config_.imem_words) {
    RaiseCoreError(ErrorValue(Error::BAD_PC));
    return;
  }
  Issue(imem_[pc_]);
}

// Executes the instruction at pc_ in cycle core_time_, or moves core_time_ to when it can issue (a stall;
// the caller comes back then). Address checks come first, as in the RTL: an instruction that would fault
// raises its error without waiting for its unit. Everything an instruction does happens here, at issue.
void CoreModel::Issue(uint64_t word) {
  namespace flag = tpu::isa::flag;
  const tpu::isa::Instr in = tpu::isa::Decode(word);
  const tpu::isa::OpcodeInfo* info = tpu::isa::FindOpcode(in.opcode);
  if (info == nullptr) {
    RaiseCoreError(ErrorValue(Error::ILLEGAL_INSTR));
    return;
  }
  auto reg = [this](uint8_t index) -> uint32_t { return sregs_[index & 15]; };
  auto set_reg = [this](uint8_t index, uint32_t value) {
    if ((index & 15) != 0) sregs_[index & 15] = value;
  };

  uint32_t next_pc = pc_ + 1;
  switch (info->opcode) {
    case Opcode::NOP: break;
    case Opcode::LI: set_reg(in.rd, in.imm); break;
    case Opcode::ADDI: set_reg(in.rd, reg(in.rs1) + in.imm); break;
    case Opcode::ADD: set_reg(in.rd, reg(in.rs1) + reg(in.rs2)); break;
    case Opcode::SUB: set_reg(in.rd, reg(in.rs1) - reg(in.rs2)); break;
    case Opcode::MUL: set_reg(in.rd, reg(in.rs1) * reg(in.rs2)); break;
    case Opcode::BNE:
      if (reg(in.rs1) != reg(in.rs2)) next_pc = in.imm;
      break;
    case Opcode::BEQ:
      if (reg(in.rs1) == reg(in.rs2)) next_pc = in.imm;
      break;
    case Opcode::BLT:
      if (static_cast<int32_t>(reg(in.rs1)) < static_cast<int32_t>(reg(in.rs2))) next_pc = in.imm;
      break;
    case Opcode::JMP: next_pc = in.imm; break;
    case Opcode::SLD: {
      // As the RTL: the first cycle reads the line (a stall on no unit), the second writes the register.
      const uint64_t line = uint64_t{reg(in.rs1)} + in.imm;
      if (line >= config_.vmem_lines) {
        sld_read_ = false;
        RaiseCoreError(ErrorValue(Error::BAD_VMEM_ADDR));
        return;
      }
      if (!sld_read_) {
        sld_read_ = true;
        WaitUntil(core_time_ + 1, kNumUnits);
        return;
      }
      sld_read_ = false;
      set_reg(in.rd, VmemLine(line)[0]);
      break;
    }
    case Opcode::SEMWAIT:
      if (in.imm >= tpu::csr::SEMS) {
        RaiseCoreError(ErrorValue(Error::ILLEGAL_INSTR));
        return;
      }
      if (sems_[in.imm] == 0) {
        BlockOnSemaphore();
        return;
      }
      --sems_[in.imm];
      break;
    case Opcode::SEMPOST:
      if (in.imm >= tpu::csr::SEMS) {
        RaiseCoreError(ErrorValue(Error::ILLEGAL_INSTR));
        return;
      }
      IncrementSemaphore(in.imm);
      // Only the core's posts of host semaphores interrupt the host.
      if (in.imm < tpu::csr::HOST_SEMS) irq_status_ |= tpu::csr::IRQ_STATUS_SEM_POST;
      break;
    case Opcode::RDMA: {
      const uint64_t count = reg(in.rs3);
      if (network_ == nullptr || reg(in.rd) >= network_->Cores()) {
        RaiseCoreError(ErrorValue(Error::BAD_CORE));
        return;
      }
      const bool post = (in.flags & flag::RDMA_POST) != 0;
      if (post && in.imm >= tpu::csr::SEMS) {
        RaiseCoreError(ErrorValue(Error::ILLEGAL_INSTR));
        return;
      }
      if (count > 0 && uint64_t{reg(in.rs1)} + count > config_.hbm_lines) {
        RaiseCoreError(ErrorValue(Error::BAD_HBM_ADDR));
        return;
      }
      if (!CheckVmemRange(reg(in.rs2), count)) return;
      // The link engine takes an RDMA when its previous one has sent its lines (to another core: when
      // they are all acknowledged) and every earlier DMA_LD has written VMEM.
      const uint32_t to = reg(in.rd);
      const uint64_t ici_idle = unit_busy_until_[kIci];
      const uint64_t loads_done = std::min(dma_last_load_done_, unit_busy_until_[kDma]);
      const uint64_t accept = std::max(to == ici_core_ ? std::min(ici_accept_at_, ici_idle) : ici_idle, loads_done);
      if (!WaitUntil(accept, accept == loads_done ? kDma : kIci)) return;
      // The lines land at issue (the model's order); the destination's semaphore is posted, and the
      // instruction done, when the last line has crossed the network and been written and acknowledged.
      const CoreNetwork::Transit transit = network_->Carry(chip_id_ * config_.num_cores + core_id_, to, core_time_, count);
      const uint64_t posted = transit.last_arrival + config_.hbm_latency + timing_.rdma_overhead +
                              (count == 0 ? 0 : timing_.dma_store_overhead);
      const uint64_t done = posted + transit.ack_cycles;
      if (count > 0) {
        CoreModel& destination = network_->Core(to);
        std::vector<uint8_t> lines(count * config_.line_bytes());
        std::memcpy(lines.data(), VmemLine(reg(in.rs2)), lines.size());
        (void)destination.WriteHbm(reg(in.rs1), lines.data(), count);
      }
      // An RDMA without lines sends nothing, so it posts nothing either.
      if (post && count > 0) network_->PostAt(to, in.imm, posted);
      ici_core_ = to;
      ici_accept_at_ = core_time_ + count + timing_.rdma_request_gap;
      unit_busy_until_[kIci] = std::max(ici_idle, count == 0 ? core_time_ + 1 : done);
      if (profile_ != nullptr && count > 0) {
        ProfileInterval(kIci, core_time_, done, static_cast<uint32_t>(count), reg(in.rs1), 1);
      }
      dma_lines_ += static_cast<uint32_t>(count);
      break;
    }
    case Opcode::SYNC: {
      constexpr uint8_t kAllUnits = flag::SYNC_DMA | flag::SYNC_MXU | flag::SYNC_VPU | flag::SYNC_ICI;
      const uint8_t units = (in.flags & kAllUnits) == 0 ? kAllUnits : (in.flags & kAllUnits);
      uint64_t ready = 0;
      UnitIndex last = kDma;  // the unit that finishes last
      const uint8_t unit_flags[kNumUnits] = {flag::SYNC_DMA, flag::SYNC_MXU, flag::SYNC_VPU, flag::SYNC_ICI};
      for (int unit = 0; unit < kNumUnits; ++unit) {
        if ((units & unit_flags[unit]) != 0 && unit_busy_until_[unit] > ready) {
          ready = unit_busy_until_[unit];
          last = static_cast<UnitIndex>(unit);
        }
      }
      if (!WaitUntil(ready, last)) return;
      break;
    }
    case Opcode::HALT: {
      const auto last = std::max_element(unit_busy_until_.begin(), unit_busy_until_.end());
      if (!WaitUntil(*last, static_cast<UnitIndex>(last - unit_busy_until_.begin()))) return;
      if (profile_ != nullptr) ProfileIssue();
      ++instret_;
      last_issue_ = core_time_++;
      halted_ = true;
      irq_status_ |= tpu::csr::IRQ_STATUS_CORE_DONE;
      StopCore();
      return;
    }
    case Opcode::DMA_LD:
    case Opcode::DMA_ST: {
      const uint64_t count = reg(in.rs3);
      if (count > 0 && uint64_t{reg(in.rs1)} + (count - 1) * uint64_t{in.imm} >= config_.hbm_lines) {
        RaiseCoreError(ErrorValue(Error::BAD_HBM_ADDR));
        return;
      }
      if (!CheckVmemRange(reg(in.rs2), count)) return;
      // Times past unit_busy_until_[kDma] are stale (a flush): the unit is idle then.
      const uint64_t dma_idle = unit_busy_until_[kDma];
      uint64_t accept = std::min(dma_accept_at_, dma_idle);
      if (dma_done_at_.size() >= config_.dma_queue) {
        accept = std::max(accept, std::min(dma_done_at_[dma_done_at_.size() - config_.dma_queue], dma_idle));
      }
      if (!WaitUntil(accept, kDma)) return;
      while (!dma_done_at_.empty() && std::min(dma_done_at_.front(), dma_idle) <= core_time_) {
        dma_done_at_.pop_front();
        dma_streams_.pop_front();
      }
      const bool load = info->opcode == Opcode::DMA_LD;
      ExecuteDma(load, reg(in.rs1), reg(in.rs2), reg(in.rs3), in.imm);
      if (count == 0) {
        dma_accept_at_ = core_time_ + 1;
        unit_busy_until_[kDma] = std::max(dma_idle, core_time_ + timing_.dma_empty);
      } else {
        const uint64_t start =
            load ? core_time_ : std::max(core_time_, std::min(dma_last_load_done_, dma_idle));
        const uint32_t overhead = load ? timing_.dma_load_overhead : timing_.dma_store_overhead;
        const uint32_t gap = load ? timing_.dma_load_request_gap : timing_.dma_store_request_gap;
        // The cycle after the last request left and the cycle the last answer arrived, as a memory of
        // fixed latency would give them.
        uint64_t requests_out = start + count, answered = start + count + config_.hbm_latency;
        DmaStream stream;
        if (hbm_twin_ != nullptr) {
          const HbmTwin::StreamTiming port =
              hbm_twin_->Stream(start + timing_.hbm_port_delay, !load, reg(in.rs1), count, in.imm);
          requests_out = port.last_accepted + 1 - timing_.hbm_port_delay;
          answered = port.last_answer + timing_.hbm_answer_delay - timing_.hbm_port_delay;
          stream = {port.stream, timing_.hbm_answer_delay + overhead - timing_.hbm_port_delay, load};
          // The unfinished DMAs before it: its requests may have delayed their last answers.
          for (size_t i = 0; i < dma_streams_.size(); ++i) {
            const uint64_t answer = dma_streams_[i].stream == kNoStream ? 0 : hbm_twin_->LastAnswer(dma_streams_[i].stream);
            if (answer == 0 || answer + dma_streams_[i].after_answer <= dma_done_at_[i]) continue;
            dma_done_at_[i] = answer + dma_streams_[i].after_answer;
            if (dma_streams_[i].load) dma_last_load_done_ = std::max(dma_last_load_done_, dma_done_at_[i]);
          }
        }
        const uint64_t done = std::max(dma_idle, answered + overhead);
        dma_accept_at_ = requests_out + gap;
        dma_done_at_.push_back(done);
        dma_streams_.push_back(stream);
        unit_busy_until_[kDma] = done;
        if (load) dma_last_load_done_ = done;
        if (profile_ != nullptr) ProfileInterval(kDma, start, done, static_cast<uint32_t>(count), reg(in.rs1), in.imm);
      }
      dma_lines_ += static_cast<uint32_t>(count);
      break;
    }
    case Opcode::MXU_LW: {
      if (!CheckVmemRange(reg(in.rs1), config_.lanes)) return;
      const uint64_t mxu_idle = unit_busy_until_[kMxu];
      if (!WaitUntil(std::min(mxu_lw_ready_, mxu_idle), kMxu)) return;
      ExecuteMxuLoadWeights(reg(in.rs1), (in.flags & flag::MXU_LW_TRANSPOSE) != 0);
      // Reads start once the back bank's rows are out; the last line arrives N cycles after the first read.
      const uint64_t first_read = std::max(core_time_ + 1, std::min(mxu_bank_free_[1 - mxu_front_bank_], mxu_idle));
      const uint64_t last_line = first_read + config_.lanes + timing_.mxu_lw_overhead - 2;
      mxu_lw_ready_ = last_line + 1;
      mxu_mm_ready_ = std::max(std::min(mxu_mm_ready_, mxu_idle), last_line);
      unit_busy_until_[kMxu] = std::max(mxu_idle, last_line + 1);
      if (profile_ != nullptr) ProfileInterval(kMxu, first_read, last_line + 1, 0);
      break;
    }
    case Opcode::MXU_MM: {
      const uint32_t count = reg(in.rs3);
      if (!CheckVmemRange(reg(in.rs1), count) || !CheckVmemRange(reg(in.rs2), count)) return;
      const uint64_t mxu_idle = unit_busy_until_[kMxu];
      if (!WaitUntil(std::min(mxu_mm_ready_, mxu_idle), kMxu)) return;
      if (in.flags & flag::MXU_MM_SWAP) {  // also when count is 0
        std::swap(mxu_front_, mxu_back_);
        mxu_front_bank_ = 1 - mxu_front_bank_;
      }
      ExecuteMxuMatmul(reg(in.rs1), reg(in.rs2), count, (in.flags & flag::MXU_MM_ACC) != 0);
      // Rows are read in cycles T+1..T+C; the next MXU_MM may issue in the cycle of the last read.
      const uint64_t rows_out = core_time_ + uint64_t{count} + 2ull * config_.lanes + timing_.mxu_mm_overhead;
      mxu_mm_ready_ = core_time_ + std::max<uint64_t>(count, 1);
      if (count > 0) mxu_bank_free_[mxu_front_bank_] = rows_out;
      unit_busy_until_[kMxu] = std::max(mxu_idle, count == 0 ? core_time_ + 1 : rows_out);
      mxu_busy_ += count;
      if (profile_ != nullptr && count > 0) ProfileInterval(kMxu, core_time_ + 1, core_time_ + 1 + count, count);
      break;
    }
    case Opcode::VADD:
    case Opcode::VMAX:
    case Opcode::VSUB:
    case Opcode::VMUL:
    case Opcode::VMIN:
    case Opcode::VAND:
    case Opcode::VOR:
    case Opcode::VXOR:
    case Opcode::VSHL:
    case Opcode::VSHRL:
    case Opcode::VSHRA:
    case Opcode::VCMP:
    case Opcode::VSEL:
    case Opcode::VCVT:
    case Opcode::VTRANS:
    case Opcode::VEXP:
    case Opcode::VLOG:
    case Opcode::VRSQRT:
    case Opcode::VRCP:
    case Opcode::VSPLAT: {
      const uint32_t count = reg(in.rs3);
      // Every binary vector op has SRC2_BCAST/SRC2_IMM at the positions of VADD's (checked below).
      static_assert(flag::VADD_SRC2_IMM == flag::VMAX_SRC2_IMM && flag::VADD_SRC2_BCAST == flag::VMAX_SRC2_BCAST &&
                        flag::VADD_SRC2_IMM == flag::VSEL_SRC2_IMM && flag::VADD_SRC2_BCAST == flag::VSEL_SRC2_BCAST &&
                        flag::VADD_SRC2_IMM == flag::VCMP_SRC2_IMM && flag::VADD_SRC2_BCAST == flag::VXOR_SRC2_BCAST &&
                        flag::VADD_SRC2_IMM == flag::VSHL_SRC2_IMM && flag::VADD_SRC2_BCAST == flag::VSHL_SRC2_BCAST &&
                        flag::VADD_SRC2_IMM == flag::VSHRL_SRC2_IMM && flag::VADD_SRC2_BCAST == flag::VSHRL_SRC2_BCAST &&
                        flag::VADD_SRC2_IMM == flag::VSHRA_SRC2_IMM && flag::VADD_SRC2_BCAST == flag::VSHRA_SRC2_BCAST,
                    "binary vector op flags must agree");
      const bool binary = info->opcode != Opcode::VSPLAT && info->opcode != Opcode::VCVT &&
                          info->opcode != Opcode::VTRANS && info->opcode != Opcode::VEXP &&
                          info->opcode != Opcode::VLOG && info->opcode != Opcode::VRSQRT && info->opcode != Opcode::VRCP;
      const bool src2_imm = binary && (in.flags & flag::VADD_SRC2_IMM) != 0;
      const bool src2_bcast = (in.flags & flag::VADD_SRC2_BCAST) != 0;
      // VTRANS moves blocks of LANES lines.
      const uint64_t lines = info->opcode == Opcode::VTRANS ? uint64_t{count} * config_.lanes : count;
      if (!CheckVmemRange(reg(in.rd), lines)) return;
      if (info->opcode != Opcode::VSPLAT) {
        if (!CheckVmemRange(reg(in.rs1), lines)) return;
        // The broadcast operand is one line, read only when there is work to do.
        if (binary && !src2_imm && !CheckVmemRange(reg(in.rs2), src2_bcast ? std::min<uint32_t>(count, 1) : count)) return;
      }
      if (!WaitUntil(unit_busy_until_[kVpu], kVpu)) return;
      ExecuteVector(in.opcode, in.flags, reg(in.rd), reg(in.rs1), reg(in.rs2), count, in.imm);
      // VSEL reads three lines per line over two read ports (two cycles a line); VTRANS reads a block,
      // then writes it (2 * LANES cycles a block).
      uint64_t cycles = count;
      if (info->opcode == Opcode::VSEL) cycles = 2ull * count;
      if (info->opcode == Opcode::VTRANS) cycles = 2ull * lines;
      unit_busy_until_[kVpu] = core_time_ + (count == 0 ? timing_.vpu_empty : cycles + timing_.vpu_overhead);
      vpu_busy_ += static_cast<uint32_t>(lines);
      if (profile_ != nullptr && count > 0) {
        ProfileInterval(kVpu, core_time_ + 1, core_time_ + 1 + cycles, static_cast<uint32_t>(lines));
      }
      break;
    }
  }
  if (profile_ != nullptr) ProfileIssue();
  ++instret_;
  last_issue_ = core_time_++;
  pc_ = next_pc;
}

// ---------------------------------------------------------------------------------------------------------
// Units

void CoreModel::ExecuteDma(bool load, uint32_t hbm_base, uint32_t vmem_base, uint32_t count, uint32_t stride) {
  const uint64_t line_bytes = config_.line_bytes();
  if (stride == 1 && count > 0) {  // contiguous: one block copy
    if (load) {
      hbm_->Read(uint64_t{hbm_base} * line_bytes, VmemLine(vmem_base), count * line_bytes);
    } else {
      hbm_->Write(uint64_t{hbm_base} * line_bytes, VmemLine(vmem_base), count * line_bytes);
    }
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t hbm_address = (hbm_base + i * stride) * line_bytes;
    if (load) {
      hbm_->Read(hbm_address, VmemLine(vmem_base + i), line_bytes);
    } else {
      hbm_->Write(hbm_address, VmemLine(vmem_base + i), line_bytes);
    }
  }
}

void CoreModel::ExecuteMxuLoadWeights(uint32_t vmem_base, bool transpose) {
  const uint32_t lanes = config_.lanes;
  MxuWeights& back = mxu_back_;
  if (transpose) {
    uint32_t* column = mxu_out_.data();  // scratch: weight row k is VMEM column k
    for (uint32_t k = 0; k < lanes; ++k) {
      for (uint32_t n = 0; n < lanes; ++n) column[n] = VmemLine(vmem_base + n)[k];
      MxuRoundToBf16(column, lanes, &back.values[static_cast<size_t>(k) * lanes]);
    }
  } else {
    MxuRoundToBf16(VmemLine(vmem_base), back.values.size(), back.values.data());
  }
  for (size_t i = 0; i < back.values.size(); ++i) {
    back.bf16[i] = static_cast<uint16_t>(tpu::numerics::FloatBits(back.values[i]) >> 16);
  }
  back.range = MxuExponentRangeOf(back.values.data(), back.values.size());
}

void CoreModel::ExecuteMxuMatmul(uint32_t lhs, uint32_t dst, uint32_t count, bool accumulate) {
  const uint32_t lanes = config_.lanes;
  // The host-float kernel needs round-to-nearest-even (the default; a caller may have changed it).
  if (mxu_kernel_ == MxuKernel::kHostFloat && std::fegetround() == FE_TONEAREST) {
    // Row i reads line lhs + i and then writes line dst + i. A chunk reads all its rows before writing,
    // which gives the same bytes unless a chunk writes a line that one of its later rows reads: so when
    // the results start inside the LHS lines, ahead of them, a chunk stops short of the first such line.
    uint32_t chunk_rows = mxu_chunk_rows_;
    if (dst > lhs) chunk_rows = std::min(chunk_rows, dst - lhs);
    for (uint32_t first = 0; first < count; first += chunk_rows) {
      const uint32_t rows = std::min(chunk_rows, count - first);
      const size_t elements = static_cast<size_t>(rows) * lanes;
      MxuRoundToBf16(VmemLine(lhs + first), elements, mxu_lhs_.data());
      uint32_t* out = VmemLine(dst + first);
      uint32_t* results = accumulate ? mxu_out_.data() : out;
      MxuRowsTimesWeights(mxu_lhs_.data(), rows, mxu_front_.values.data(), mxu_front_.range, lanes, results,
                          mxu_isa_);
      if (accumulate) MxuAccumulate(out, results, elements, mxu_isa_);
    }
    return;
  }
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t* row = VmemLine(lhs + i);
    for (uint32_t k = 0; k < lanes; ++k) mxu_lhs_bf16_[k] = tpu::numerics::F32ToBf16(row[k]);
    tpu::numerics::MxuMatVec(mxu_lhs_bf16_.data(), mxu_front_.bf16.data(), static_cast<int>(lanes),
                             mxu_out_.data());
    uint32_t* out = VmemLine(dst + i);
    if (accumulate) {
      for (uint32_t n = 0; n < lanes; ++n) out[n] = tpu::numerics::F32Add(out[n], mxu_out_[n]);
    } else {
      std::memcpy(out, mxu_out_.data(), lanes * sizeof(uint32_t));
    }
  }
}

void CoreModel::ExecuteVector(uint8_t opcode, uint8_t flags, uint32_t dst, uint32_t src1, uint32_t src2,
                              uint32_t count, uint32_t imm) {
  namespace num = tpu::numerics;
  namespace flag = tpu::isa::flag;
  const uint32_t lanes = config_.lanes;
  const Opcode op = static_cast<Opcode>(opcode);
  if (op == Opcode::VSPLAT) {
    for (uint32_t i = 0; i < count; ++i) std::fill_n(VmemLine(dst + i), lanes, imm);
    return;
  }
  if (op == Opcode::VTRANS) {
    for (uint32_t block = 0; block < count; ++block) {
      const uint64_t base = uint64_t{block} * lanes;
      for (uint32_t j = 0; j < lanes; ++j) {
        uint32_t* out = VmemLine(static_cast<uint32_t>(dst + base + j));
        for (uint32_t i = 0; i < lanes; ++i) out[i] = VmemLine(static_cast<uint32_t>(src1 + base + i))[j];
      }
    }
    return;
  }
  if (op == Opcode::VCVT || op == Opcode::VEXP || op == Opcode::VLOG || op == Opcode::VRSQRT || op == Opcode::VRCP) {
    uint32_t (*unary)(uint32_t) = (flags & flag::VCVT_F32_TO_S32) ? num::F32ToS32 : num::S32ToF32;
    if (op == Opcode::VEXP) unary = num::F32Exp;
    if (op == Opcode::VLOG) unary = num::F32Log;
    if (op == Opcode::VRSQRT) unary = num::F32Rsqrt;
    if (op == Opcode::VRCP) unary = num::F32Rcp;
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t* a = VmemLine(src1 + i);
      uint32_t* out = VmemLine(dst + i);
      for (uint32_t n = 0; n < lanes; ++n) out[n] = unary(a[n]);
    }
    return;
  }
  const bool src2_imm = (flags & flag::VADD_SRC2_IMM) != 0;
  const bool src2_bcast = (flags & flag::VADD_SRC2_BCAST) != 0;
  const bool is_int = (flags & flag::VADD_INT) != 0 && op != Opcode::VAND && op != Opcode::VOR &&
                      op != Opcode::VXOR && op != Opcode::VSEL && op != Opcode::VSHL && op != Opcode::VSHRL &&
                      op != Opcode::VSHRA;
  if (op == Opcode::VADD && !is_int && mxu_kernel_ == MxuKernel::kHostFloat) {
    // The most frequent vector operation (optimizer updates, bias adds), on the host-float path (the
    // numerics-library kernel keeps the reference loop below): MxuAccumulate is F32Add's
    // vectorized twin. F32Add is commutative bit for bit (signed zeros, canonical NaN), so a destination
    // that is the second source accumulates the first.
    std::vector<uint32_t> imm_line(src2_imm ? lanes : 0, imm);
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t* a = VmemLine(src1 + i);
      const uint32_t* b = src2_imm ? imm_line.data() : VmemLine(src2_bcast ? src2 : src2 + i);
      uint32_t* out = VmemLine(dst + i);
      if (out != a && out == b) std::swap(a, b);
      if (out != a) std::copy(a, a + lanes, out);
      MxuAccumulate(out, b, lanes, mxu_isa_);
    }
    return;
  }
  const auto dir = static_cast<num::CmpDir>((flags & flag::VCMP_DIR_MASK) >> flag::VCMP_DIR_LSB);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t* a = VmemLine(src1 + i);
    const uint32_t* b = src2_imm ? nullptr : VmemLine(src2_bcast ? src2 : src2 + i);
    uint32_t* out = VmemLine(dst + i);
    for (uint32_t n = 0; n < lanes; ++n) {
      const uint32_t x = a[n];
      const uint32_t y = b ? b[n] : imm;
      const int32_t sx = static_cast<int32_t>(x), sy = static_cast<int32_t>(y);
      uint32_t r = 0;
      switch (op) {
        case Opcode::VADD: r = is_int ? x + y : num::F32Add(x, y); break;
        case Opcode::VSUB: r = is_int ? x - y : num::F32Sub(x, y); break;
        case Opcode::VMUL: r = is_int ? x * y : num::F32Mul(x, y); break;
        case Opcode::VMAX: r = is_int ? static_cast<uint32_t>(std::max(sx, sy)) : num::F32Max(x, y); break;
        case Opcode::VMIN: r = is_int ? static_cast<uint32_t>(std::min(sx, sy)) : num::F32Min(x, y); break;
        case Opcode::VAND: r = x & y; break;
        case Opcode::VOR: r = x | y; break;
        case Opcode::VXOR: r = x ^ y; break;
        // Amounts of 32 or more shift everything out (the sign fills an arithmetic shift).
        case Opcode::VSHL: r = y >= 32 ? 0 : x << y; break;
        case Opcode::VSHRL: r = y >= 32 ? 0 : x >> y; break;
        case Opcode::VSHRA: r = static_cast<uint32_t>(sx >> (y >= 32 ? 31 : y)); break;
        case Opcode::VCMP: r = is_int ? num::S32Compare(x, y, dir) : num::F32Compare(x, y, dir); break;
        case Opcode::VSEL: r = out[n] != 0 ? x : y; break;  // the mask is the destination's old value
        default: break;
      }
      out[n] = r;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// Backdoor

Status CoreModel::ReadHbm(uint64_t line, void* data, uint64_t lines) const {
  if (line > config_.hbm_lines || lines > config_.hbm_lines - line) {
    return OutOfRange("HBM lines [" + std::to_string(line) + ", +" + std::to_string(lines) + ") exceed " +
                      std::to_string(config_.hbm_lines) + " lines");
  }
  hbm_->Read(line * config_.line_bytes(), data, lines * config_.line_bytes());
  return OkStatus();
}

Status CoreModel::WriteHbm(uint64_t line, const void* data, uint64_t lines) {
  if (line > config_.hbm_lines || lines > config_.hbm_lines - line) {
    return OutOfRange("HBM lines [" + std::to_string(line) + ", +" + std::to_string(lines) + ") exceed " +
                      std::to_string(config_.hbm_lines) + " lines");
  }
  hbm_->Write(line * config_.line_bytes(), data, lines * config_.line_bytes());
  return OkStatus();
}

Status CoreModel::ReadVmem(uint64_t line, void* data, uint64_t lines) const {
  if (line > config_.vmem_lines || lines > config_.vmem_lines - line) {
    return OutOfRange("VMEM lines [" + std::to_string(line) + ", +" + std::to_string(lines) + ") exceed " +
                      std::to_string(config_.vmem_lines) + " lines");
  }
  std::memcpy(data, &vmem_[line * config_.lanes], lines * config_.line_bytes());
  return OkStatus();
}

Status CoreModel::WriteVmem(uint64_t line, const void* data, uint64_t lines) {
  if (line > config_.vmem_lines || lines > config_.vmem_lines - line) {
    return OutOfRange("VMEM lines [" + std::to_string(line) + ", +" + std::to_string(lines) + ") exceed " +
                      std::to_string(config_.vmem_lines) + " lines");
  }
  std::memcpy(&vmem_[line * config_.lanes], data, lines * config_.line_bytes());
  return OkStatus();
}

}  // namespace tpu::model
