#include "sysc/rtl_transport.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "sim/model/ici.h"
#include "tpu_csr.h"

namespace tpu {
namespace {

sysc::Platform* g_platform = nullptr;  // created once, never destroyed (see the header)
bool g_transport_alive = false;

sysc::Platform* ProcessPlatform(uint32_t chips) {
  if (g_platform == nullptr) {
    // SystemC prints a banner on stdout when its kernel is created; keep tool output clean.
    setenv("SYSC_DISABLE_COPYRIGHT_MESSAGE", "1", /*overwrite=*/0);
    sysc::PlatformOptions options;
    options.chips = chips;
    g_platform = sysc::Platform::Create(options);
  }
  return g_platform;
}

}  // namespace

Status RtlTransport::Prepare(sysc::Platform** platform, const RtlTraceOptions& trace, uint32_t chips,
                             uint32_t platform_chips) {
  if (g_transport_alive) {
    return FailedPrecondition("an RtlTransport already exists in this process; SystemC runs one simulation "
                              "per process: destroy the first before creating another");
  }
  TPU_RETURN_IF_ERROR(ici::CheckBoardChips(chips));
  if (platform_chips == 0) platform_chips = chips;
  TPU_RETURN_IF_ERROR(ici::CheckBoardChips(platform_chips));
  if (platform_chips < chips) {
    return InvalidArgument("a board of " + std::to_string(chips) + " chips cannot run on a platform of " +
                           std::to_string(platform_chips));
  }
  *platform = ProcessPlatform(platform_chips);
  if ((*platform)->chips() < chips) {
    return FailedPrecondition("this process's SystemC platform has " + std::to_string((*platform)->chips()) +
                              " chips (SystemC runs one simulation per process, built by the first transport); "
                              "a board of " + std::to_string(chips) + " was asked for");
  }
  TPU_RETURN_IF_ERROR((*platform)->SetBoardChips(chips));
  for (unsigned chip = 0; chip < (*platform)->chips(); ++chip) {
    for (unsigned core = 0; core < sysc::kCores; ++core) (*platform)->hbm(core, chip).Clear();
  }
  (*platform)->host_memory().Clear();
  if (!trace.file.empty()) TPU_RETURN_IF_ERROR(sysc::Platform::CheckTraceOptions(trace));
  return OkStatus();
}

StatusOr<std::unique_ptr<RtlTransport>> RtlTransport::Create(const RtlTraceOptions& trace, uint32_t chips,
                                                             uint32_t platform_chips) {
  sysc::Platform* platform = nullptr;
  TPU_RETURN_IF_ERROR(Prepare(&platform, trace, chips, platform_chips));
  auto transport = std::make_unique<RtlTransport>(PassKey{}, platform, chips);
  transport->pending_trace_ = trace;
  return transport;
}

RtlTransport::RtlTransport(const RtlTraceOptions& trace) : platform_(nullptr) {
  const Status status = Prepare(&platform_, trace, 1, 0);
  if (!status.ok()) throw std::runtime_error(status.ToString());
  pending_trace_ = trace;
  base_cycle_ = platform_->Cycles();
  g_transport_alive = true;
  const Status reset = platform_->Reset();
  if (!reset.ok()) throw std::runtime_error(reset.ToString());
}

RtlTransport::RtlTransport(PassKey, sysc::Platform* platform, uint32_t chips) : platform_(platform), chips_(chips) {
  base_cycle_ = platform_->Cycles();
  g_transport_alive = true;
  // A reset of a few cycles cannot fail unless the kernel is broken; report it loudly if it does.
  const Status reset = platform_->Reset();
  if (!reset.ok()) std::fprintf(stderr, "RtlTransport: %s\n", reset.ToString().c_str());
}

RtlTransport::~RtlTransport() {
  CloseTrace();
  g_transport_alive = false;
}

void RtlTransport::CloseTrace() { platform_->StopTrace(); }

uint32_t RtlTransport::MmioRead(uint32_t offset) {
  StatusOr<uint32_t> value = platform_->MmioRead(offset);
  if (value.ok()) return *value;
  ++mmio_errors_;
  last_mmio_error_ = value.status();
  return 0xffffffffu;
}

void RtlTransport::MmioWrite(uint32_t offset, uint32_t value) {
  if (offset == csr::DOORBELL && !pending_trace_.file.empty()) {
    trace_origin_cycle_ = platform_->Cycles();
    const Status started = platform_->StartTrace(pending_trace_);
    pending_trace_.file.clear();
    if (!started.ok()) {
      ++mmio_errors_;
      last_mmio_error_ = started;
    }
  }
  const Status status = platform_->MmioWrite(offset, value);
  if (status.ok()) return;
  ++mmio_errors_;
  last_mmio_error_ = status;
}

uint64_t RtlTransport::HostMemoryBytes() const { return platform_->host_memory().size_bytes(); }

void RtlTransport::CheckHostRange(uint64_t address, size_t bytes, const char* what) const {
  const uint64_t size = HostMemoryBytes();
  if (address > size || bytes > size - address) {
    throw std::out_of_range(std::string("RtlTransport::") + what + ": bytes [" + std::to_string(address) +
                            ", " + std::to_string(address) + " + " + std::to_string(bytes) +
                            ") leave host memory of " + std::to_string(size) + " bytes");
  }
}

void RtlTransport::HostWrite(uint64_t address, const void* data, size_t bytes) {
  CheckHostRange(address, bytes, "HostWrite");
  // The debug transport moves at most UINT_MAX bytes per call.
  const auto* source = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const unsigned int chunk = static_cast<unsigned int>(std::min<size_t>(bytes, 1u << 30));
    tlm::tlm_generic_payload payload;
    payload.set_command(tlm::TLM_WRITE_COMMAND);
    payload.set_address(address);
    payload.set_data_ptr(const_cast<uint8_t*>(source));
    payload.set_data_length(chunk);
    platform_->host_memory().DebugTransport(payload);
    address += chunk;
    source += chunk;
    bytes -= chunk;
  }
}

void RtlTransport::HostRead(uint64_t address, void* data, size_t bytes) {
  CheckHostRange(address, bytes, "HostRead");
  auto* target = static_cast<uint8_t*>(data);
  while (bytes > 0) {
    const unsigned int chunk = static_cast<unsigned int>(std::min<size_t>(bytes, 1u << 30));
    tlm::tlm_generic_payload payload;
    payload.set_command(tlm::TLM_READ_COMMAND);
    payload.set_address(address);
    payload.set_data_ptr(target);
    payload.set_data_length(chunk);
    platform_->host_memory().DebugTransport(payload);
    address += chunk;
    target += chunk;
    bytes -= chunk;
  }
}

bool RtlTransport::WaitForInterruptOn(uint64_t lines, uint64_t timeout_cycles) {
  return platform_->RunUntilIrq(timeout_cycles, lines);
}

void RtlTransport::Advance(uint64_t cycles) { platform_->Run(cycles); }

uint64_t RtlTransport::Cycles() const { return platform_->Cycles() - base_cycle_; }

bool RtlTransport::SetProfile(ExecutionProfile* profile) {
  platform_->SetProfile(profile);
  return true;
}

}  // namespace tpu
