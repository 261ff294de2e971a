#include "sw/driver/driver.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu {
namespace {

constexpr uint32_t kAllIrqs = csr::IRQ_STATUS_CORE_DONE | csr::IRQ_STATUS_CORE_ERROR |
                              csr::IRQ_STATUS_HDMA_DONE | csr::IRQ_STATUS_HDMA_ERROR | csr::IRQ_STATUS_SEM_POST;
constexpr uint32_t kCoreIrqs = csr::IRQ_STATUS_CORE_DONE | csr::IRQ_STATUS_CORE_ERROR;
constexpr uint32_t kHostDmaIrqs = csr::IRQ_STATUS_HDMA_DONE | csr::IRQ_STATUS_HDMA_ERROR;
// How long (device cycles) a soft reset may take to bring the core and the host DMA back to idle.
constexpr uint64_t kResetSettleCycles = 1000;

std::string Hex(uint64_t value, int digits) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "0x%0*llx", digits, static_cast<unsigned long long>(value));
  return buffer;
}

}  // namespace

uint64_t HostLinkModel::TransferCycles(uint64_t bytes) const {
  if (bytes_per_cycle <= 0) return 0;
  return transfer_latency_cycles + static_cast<uint64_t>(std::ceil(static_cast<double>(bytes) / bytes_per_cycle));
}

HostLinkModel HostLinkModel::PcieGen3x16() {
  HostLinkModel link;
  link.bytes_per_cycle = 12.0;
  link.transfer_latency_cycles = 1000;
  link.launch_latency_cycles = 10000;
  return link;
}

Status CoreErrorStatus(uint32_t error_code, uint32_t pc) {
  const std::string what =
      std::string("TPU core stopped with error ") + isa::ErrorName(error_code) + " at pc " + std::to_string(pc);
  switch (static_cast<isa::Error>(error_code)) {
    case isa::Error::BAD_HBM_ADDR:
    case isa::Error::BAD_VMEM_ADDR:
    case isa::Error::BAD_CORE:
      return OutOfRange(what);
    case isa::Error::WATCHDOG:
      return DeadlineExceeded(what + " (no instruction issued within the watchdog limit)");
    case isa::Error::ILLEGAL_INSTR:
    case isa::Error::BAD_PC:
    default:
      return Internal(what);
  }
}

std::string ToString(const DeviceInfo& info) {
  return "version=" + Hex(info.version, 8) + " lanes=" + std::to_string(info.lanes) +
         " vmem_lines=" + std::to_string(info.vmem_lines) + " imem_words=" + std::to_string(info.imem_words) +
         " hbm_lines=" + std::to_string(info.hbm_lines) + " num_cores=" + std::to_string(info.num_cores) +
         " sregs=" + std::to_string(info.sregs) + " hbm_channels=" + std::to_string(info.hbm_channels) +
         " line_bytes=" + std::to_string(info.line_bytes);
}

Status Driver::Reset() {
  transport_.MmioWrite(Reg(csr::SOFT_RESET), 1);
  // The reset may take a few cycles to reach every unit; let the device run until it reports idle.
  const uint64_t start = transport_.Cycles();
  while (transport_.MmioRead(Reg(csr::STATUS)) & (csr::STATUS_BUSY | csr::STATUS_HDMA_BUSY)) {
    if (transport_.Cycles() - start >= kResetSettleCycles) {
      return Internal("device still busy " + std::to_string(kResetSettleCycles) + " cycles after SOFT_RESET");
    }
    const uint64_t before = transport_.Cycles();
    transport_.WaitForInterruptOn(irq_line(), 16);
    if (transport_.Cycles() == before) return Internal("transport did not advance time after SOFT_RESET");
  }
  transport_.MmioWrite(Reg(csr::IRQ_STATUS), kAllIrqs);
  transport_.MmioWrite(Reg(csr::IRQ_ENABLE), kAllIrqs);
  latched_irqs_ = 0;
  return OkStatus();
}

StatusOr<DeviceInfo> Driver::Discover() {
  const uint32_t id = transport_.MmioRead(Reg(csr::ID));
  if (id != csr::ID_MAGIC) {
    return FailedPrecondition("no tpusim device on the " + transport_.name() + " transport: ID reads " +
                              Hex(id, 8) + ", expected " + Hex(csr::ID_MAGIC, 8));
  }
  DeviceInfo info;
  info.version = transport_.MmioRead(Reg(csr::VERSION));
  if ((info.version >> 16) != (csr::VERSION_VALUE >> 16)) {
    return FailedPrecondition("unsupported tpusim device version " + Hex(info.version, 8) + " (driver supports " +
                              Hex(csr::VERSION_VALUE, 8) + ")");
  }
  info.lanes = transport_.MmioRead(Reg(csr::CFG_LANES));
  info.vmem_lines = transport_.MmioRead(Reg(csr::CFG_VMEM_LINES));
  info.imem_words = transport_.MmioRead(Reg(csr::CFG_IMEM_WORDS));
  info.hbm_lines = transport_.MmioRead(Reg(csr::CFG_HBM_LINES));
  info.num_cores = transport_.MmioRead(Reg(csr::CFG_NUM_CORES));
  info.sregs = transport_.MmioRead(Reg(csr::CFG_SREGS));
  info.hbm_channels = transport_.MmioRead(Reg(csr::CFG_HBM_CHANNELS));
  if (info.lanes == 0 || info.lanes > (1u << 20) || info.vmem_lines == 0 || info.imem_words == 0 ||
      info.hbm_lines == 0 || info.num_cores == 0) {
    return FailedPrecondition("tpusim device reports an impossible configuration: " + ToString(info));
  }
  info.line_bytes = info.lanes * 4;
  info_ = info;
  discovered_ = true;
  return info;
}

Status Driver::RequireDiscovered() const {
  if (!discovered_) return FailedPrecondition("the device has not been discovered (call Driver::Discover first)");
  return OkStatus();
}

Status Driver::LoadProgram(const std::vector<uint64_t>& code, uint32_t first_word) {
  TPU_RETURN_IF_ERROR(RequireDiscovered());
  if (uint64_t(first_word) + code.size() > info_.imem_words) {
    return ResourceExhausted("program of " + std::to_string(code.size()) + " instruction words at word " +
                             std::to_string(first_word) + " does not fit in IMEM of " +
                             std::to_string(info_.imem_words) + " words");
  }
  if (transport_.MmioRead(Reg(csr::STATUS)) & csr::STATUS_BUSY) {
    return FailedPrecondition("cannot load IMEM while the core is busy");
  }
  for (size_t i = 0; i < code.size(); ++i) {
    const uint32_t offset = Reg(csr::IMEM_WINDOW) + 8 * (first_word + static_cast<uint32_t>(i));
    transport_.MmioWrite(offset, static_cast<uint32_t>(code[i]));
    transport_.MmioWrite(offset + 4, static_cast<uint32_t>(code[i] >> 32));
  }
  return OkStatus();
}

StatusOr<std::vector<uint64_t>> Driver::ReadProgram(uint32_t first_word, uint32_t count) {
  TPU_RETURN_IF_ERROR(RequireDiscovered());
  if (uint64_t(first_word) + count > info_.imem_words) {
    return OutOfRange("IMEM words [" + std::to_string(first_word) + ", " + std::to_string(uint64_t(first_word) + count) +
                      ") are outside IMEM of " + std::to_string(info_.imem_words) + " words");
  }
  std::vector<uint64_t> words(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t offset = Reg(csr::IMEM_WINDOW) + 8 * (first_word + i);
    words[i] = uint64_t(transport_.MmioRead(offset)) | (uint64_t(transport_.MmioRead(offset + 4)) << 32);
  }
  return words;
}

Status Driver::SetWatchdogLimit(uint32_t cycles) {
  transport_.MmioWrite(Reg(csr::WATCHDOG_LIMIT), cycles);
  return OkStatus();
}

uint32_t Driver::WatchdogLimit() { return transport_.MmioRead(Reg(csr::WATCHDOG_LIMIT)); }

Status Driver::Launch(uint32_t start_pc, bool charge_latency) {
  TPU_RETURN_IF_ERROR(RequireDiscovered());
  if (transport_.MmioRead(Reg(csr::STATUS)) & csr::STATUS_BUSY) {
    return FailedPrecondition("cannot launch: the core is still busy with the previous program");
  }
  if (start_pc >= info_.imem_words) {
    return OutOfRange("start pc " + std::to_string(start_pc) + " is outside IMEM of " +
                      std::to_string(info_.imem_words) + " words");
  }
  // Completions of an earlier run must not be mistaken for this one's.
  transport_.MmioWrite(Reg(csr::IRQ_STATUS), kCoreIrqs);
  latched_irqs_ &= ~kCoreIrqs;
  transport_.MmioWrite(Reg(csr::START_PC), start_pc);
  if (charge_latency) transport_.Advance(host_link_.launch_latency_cycles);
  transport_.MmioWrite(Reg(csr::DOORBELL), 1);
  return OkStatus();
}

StatusOr<uint32_t> Driver::WaitForIrq(uint32_t wanted, uint64_t timeout_cycles, const Progress& progress,
                                      uint64_t progress_cycles) {
  const uint64_t start = transport_.Cycles();
  while (true) {
    const uint32_t pending = transport_.MmioRead(Reg(csr::IRQ_STATUS)) | latched_irqs_;
    if (pending & wanted) {
      transport_.MmioWrite(Reg(csr::IRQ_STATUS), pending & wanted);
      latched_irqs_ = pending & ~wanted;
      return pending & wanted;
    }
    if (pending & kAllIrqs) {
      // Keep other completions for whoever waits for them, but drop the line so the wait can sleep.
      transport_.MmioWrite(Reg(csr::IRQ_STATUS), pending & kAllIrqs);
      latched_irqs_ = pending & kAllIrqs;
    }
    const uint64_t elapsed = transport_.Cycles() - start;
    if (elapsed >= timeout_cycles) {
      return DeadlineExceeded("no interrupt within " + std::to_string(timeout_cycles) + " cycles");
    }
    const uint64_t before = transport_.Cycles();
    uint64_t slice = timeout_cycles - elapsed;
    if (progress && progress_cycles > 0) slice = std::min(slice, progress_cycles);
    const bool raised = transport_.WaitForInterruptOn(irq_line(), slice);
    if (!raised && transport_.Cycles() == before) {
      return Internal("the " + transport_.name() + " transport did not advance time while waiting for an interrupt");
    }
    if (progress && !raised) progress(transport_.Cycles() - start);
  }
}

StatusOr<RunEvent> Driver::WaitForRunEvent(uint64_t timeout_cycles, const Progress& progress,
                                           uint64_t progress_cycles) {
  TPU_RETURN_IF_ERROR(RequireDiscovered());
  StatusOr<uint32_t> irqs = WaitForIrq(kCoreIrqs | csr::IRQ_STATUS_SEM_POST, timeout_cycles, progress, progress_cycles);
  if (!irqs.ok()) {
    if (irqs.status().code() != StatusCode::kDeadlineExceeded) return irqs.status();
    Status reset = Reset();
    std::string message = "TPU program did not complete within " + std::to_string(timeout_cycles) +
                          " cycles; the device was reset";
    if (!reset.ok()) message += " (reset failed: " + reset.ToString() + ")";
    return DeadlineExceeded(message);
  }
  if (*irqs & csr::IRQ_STATUS_CORE_ERROR) {
    const uint32_t code = transport_.MmioRead(Reg(csr::ERROR_CODE));
    const uint32_t pc = transport_.MmioRead(Reg(csr::ERROR_PC));
    Status error = CoreErrorStatus(code, pc);
    if (pc < info_.imem_words) {
      // Name the offending instruction word: the first thing anyone debugging the program wants.
      const uint32_t offset = Reg(csr::IMEM_WINDOW) + 8 * pc;
      const uint64_t word = uint64_t(transport_.MmioRead(offset)) | (uint64_t(transport_.MmioRead(offset + 4)) << 32);
      const isa::OpcodeInfo* op = isa::FindOpcode(isa::Decode(word).opcode);
      error = Status(error.code(), error.message() + " (instruction " + Hex(word, 16) + ", " +
                                       (op ? op->name : "illegal opcode") + ")");
    }
    return error;
  }
  return (*irqs & csr::IRQ_STATUS_CORE_DONE) ? RunEvent::kCompleted : RunEvent::kSemaphorePosted;
}

Status Driver::WaitForCompletion(uint64_t timeout_cycles, const Progress& progress, uint64_t progress_cycles) {
  const uint64_t start = transport_.Cycles();
  while (true) {
    const uint64_t elapsed = transport_.Cycles() - start;
    TPU_ASSIGN_OR_RETURN(RunEvent event, WaitForRunEvent(timeout_cycles > elapsed ? timeout_cycles - elapsed : 0,
                                                         progress, progress_cycles));
    if (event == RunEvent::kCompleted) return OkStatus();
  }
}

std::vector<uint32_t> Driver::ReadSemaphores() {
  const uint32_t counts = transport_.MmioRead(Reg(csr::SEM_COUNTS));
  std::vector<uint32_t> values(csr::HOST_SEMS);
  for (uint32_t i = 0; i < csr::HOST_SEMS; ++i) values[i] = (counts >> (i * csr::SEM_BITS)) & ((1u << csr::SEM_BITS) - 1);
  return values;
}

void Driver::PostSemaphore(uint32_t index) { transport_.MmioWrite(Reg(csr::SEM_POST), index); }
void Driver::TakeSemaphore(uint32_t index) { transport_.MmioWrite(Reg(csr::SEM_TAKE), index); }
void Driver::ClearSemaphores() { transport_.MmioWrite(Reg(csr::SEM_CLEAR), 1); }

uint64_t Driver::StagingBytes() const {
  // Each core of the board stages in its own slice of host memory (whole lines), so that one core's
  // transfers never touch another's.
  const uint64_t slice = transport_.HostMemoryBytes() / transport_.Cores();
  return slice - slice % std::max<uint64_t>(info_.line_bytes, 1);
}

uint64_t Driver::StagingBase() const { return StagingBytes() * core_; }

uint64_t Driver::StagingLines() const {
  const uint64_t bytes = std::min(StagingBytes(), staging_limit_bytes_);
  // HDMA_LINES is a 32-bit register.
  return std::min<uint64_t>(std::max<uint64_t>(bytes / info_.line_bytes, 1), UINT32_MAX);
}

Status Driver::RunHostDma(uint32_t hbm_line, uint32_t lines, bool to_host) {
  transport_.MmioWrite(Reg(csr::IRQ_STATUS), kHostDmaIrqs);
  latched_irqs_ &= ~kHostDmaIrqs;
  transport_.MmioWrite(Reg(csr::HDMA_HOST_LO), static_cast<uint32_t>(StagingBase()));
  transport_.MmioWrite(Reg(csr::HDMA_HOST_HI), static_cast<uint32_t>(StagingBase() >> 32));
  transport_.MmioWrite(Reg(csr::HDMA_HBM_LINE), hbm_line);
  transport_.MmioWrite(Reg(csr::HDMA_LINES), lines);
  transport_.MmioWrite(Reg(csr::HDMA_CTRL), csr::HDMA_CTRL_START | (to_host ? csr::HDMA_CTRL_TO_HOST : 0));
  const uint64_t timeout = kHostDmaFixedCycles + kHostDmaCyclesPerLine * uint64_t(lines);
  StatusOr<uint32_t> irqs = WaitForIrq(kHostDmaIrqs, timeout);
  const std::string what = std::string("host DMA ") + (to_host ? "HBM -> host" : "host -> HBM") + " of " +
                           std::to_string(lines) + " lines at HBM line " + std::to_string(hbm_line);
  if (!irqs.ok()) {
    if (irqs.status().code() != StatusCode::kDeadlineExceeded) return irqs.status();
    Status reset = Reset();
    return DeadlineExceeded(what + " did not complete within " + std::to_string(timeout) +
                            " cycles; the device was reset" + (reset.ok() ? "" : " (reset failed)"));
  }
  if (*irqs & csr::IRQ_STATUS_HDMA_ERROR) {
    const uint32_t status = transport_.MmioRead(Reg(csr::HDMA_STATUS));
    const uint32_t code = (status & csr::HDMA_STATUS_CODE) >> csr::HDMA_STATUS_CODE_LSB;
    const std::string message = what + " failed: " + isa::ErrorName(code) + " (HBM has " +
                                std::to_string(info_.hbm_lines) + " lines)";
    if (code == static_cast<uint32_t>(isa::Error::BAD_HBM_ADDR) ||
        code == static_cast<uint32_t>(isa::Error::BAD_HOST_ADDR)) {
      return OutOfRange(message);
    }
    return Internal(message);
  }
  return OkStatus();
}

Status Driver::CopyToHbm(const void* data, size_t bytes, uint32_t hbm_line) {
  TPU_RETURN_IF_ERROR(RequireDiscovered());
  const uint64_t line_bytes = info_.line_bytes;
  const uint64_t total_lines = (uint64_t(bytes) + line_bytes - 1) / line_bytes;
  if (uint64_t(hbm_line) + total_lines > UINT32_MAX) {
    return OutOfRange("host DMA to HBM lines [" + std::to_string(hbm_line) + ", " +
                      std::to_string(uint64_t(hbm_line) + total_lines) + ") exceeds the 32-bit line address space");
  }
  const uint64_t chunk_lines = StagingLines();
  transport_.Advance(host_link_.TransferCycles(bytes));
  const uint8_t* source = static_cast<const uint8_t*>(data);
  std::vector<uint8_t> zeros;
  for (uint64_t done = 0; done < total_lines;) {
    const uint64_t lines = std::min(chunk_lines, total_lines - done);
    const uint64_t offset = done * line_bytes;
    const uint64_t chunk_bytes = std::min<uint64_t>(lines * line_bytes, bytes - offset);
    transport_.HostWrite(StagingBase(), source + offset, chunk_bytes);
    if (chunk_bytes < lines * line_bytes) {
      zeros.assign(lines * line_bytes - chunk_bytes, 0);
      transport_.HostWrite(StagingBase() + chunk_bytes, zeros.data(), zeros.size());
    }
    TPU_RETURN_IF_ERROR(RunHostDma(hbm_line + static_cast<uint32_t>(done), static_cast<uint32_t>(lines), false));
    done += lines;
  }
  return OkStatus();
}

Status Driver::CopyFromHbm(uint32_t hbm_line, uint32_t lines, void* out) {
  TPU_RETURN_IF_ERROR(RequireDiscovered());
  if (uint64_t(hbm_line) + lines > UINT32_MAX) {
    return OutOfRange("host DMA from HBM lines [" + std::to_string(hbm_line) + ", " +
                      std::to_string(uint64_t(hbm_line) + lines) + ") exceeds the 32-bit line address space");
  }
  const uint64_t line_bytes = info_.line_bytes;
  const uint64_t chunk_lines = StagingLines();
  transport_.Advance(host_link_.TransferCycles(uint64_t(lines) * line_bytes));
  uint8_t* destination = static_cast<uint8_t*>(out);
  for (uint64_t done = 0; done < lines;) {
    const uint64_t count = std::min<uint64_t>(chunk_lines, lines - done);
    TPU_RETURN_IF_ERROR(RunHostDma(hbm_line + static_cast<uint32_t>(done), static_cast<uint32_t>(count), true));
    transport_.HostRead(StagingBase(), destination + done * line_bytes, count * line_bytes);
    done += count;
  }
  return OkStatus();
}

StatusOr<std::vector<uint8_t>> Driver::CopyFromHbm(uint32_t hbm_line, uint32_t lines) {
  TPU_RETURN_IF_ERROR(RequireDiscovered());
  std::vector<uint8_t> bytes(uint64_t(lines) * info_.line_bytes);
  TPU_RETURN_IF_ERROR(CopyFromHbm(hbm_line, lines, bytes.data()));
  return bytes;
}

bool Driver::CoreBusy() { return (transport_.MmioRead(Reg(csr::STATUS)) & csr::STATUS_BUSY) != 0; }

uint64_t Driver::Read64(uint32_t lo_offset) {
  // Counters only move while the core is busy and are read after it stopped, so LO/HI cannot tear.
  const uint64_t lo = transport_.MmioRead(Reg(lo_offset));
  const uint64_t hi = transport_.MmioRead(Reg(lo_offset + 4));
  return (hi << 32) | lo;
}

DeviceCounters Driver::ReadCounters() {
  DeviceCounters counters;
  counters.cycles = Read64(csr::CYCLES_LO);
  counters.mxu_busy_cycles = Read64(csr::MXU_BUSY_LO);
  counters.instructions = transport_.MmioRead(Reg(csr::INSTRET));
  counters.dma_lines = transport_.MmioRead(Reg(csr::DMA_LINES));
  counters.vpu_busy_cycles = transport_.MmioRead(Reg(csr::VPU_BUSY));
  counters.stall_cycles = transport_.MmioRead(Reg(csr::STALL_CYCLES));
  counters.feed_stall_cycles = transport_.MmioRead(Reg(csr::FEED_STALL));
  return counters;
}

}  // namespace tpu
