#include "sysc/platform.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "Vtpu_chip.h"
#include "tpu_config.h"
#include "verilated.h"
#include "verilated_fst_sc.h"

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>

#include <utility>
#endif

namespace tpu::sysc {
namespace {

// Runs the kernel. SystemC 2.3.4 tells AddressSanitizer that each switch back to its main coroutine lands
// on an empty stack (fixed in 3.0.1); ASan then cannot clean the frames a later exception unwinds on this
// stack and reports stack-use-after-scope in them. The thread's real stack is announced again here.
void StartKernel(const sc_core::sc_time& duration) {
  sc_core::sc_start(duration);
#if defined(__SANITIZE_ADDRESS__)
  thread_local const std::pair<void*, size_t> stack = [] {
    std::pair<void*, size_t> bounds{nullptr, 0};
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
      pthread_attr_getstack(&attributes, &bounds.first, &bounds.second);
      pthread_attr_destroy(&attributes);
    }
    return bounds;
  }();
  void* fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&fake_stack, stack.first, stack.second);
  __sanitizer_finish_switch_fiber(fake_stack, nullptr, nullptr);
#endif
}

// The module name of core `core`'s instance of a per-core part: `base` for core 0 (so that a one-core
// platform keeps its scopes, e.g. platform.hbm.rtl), `base` and the core's number for the others.
std::string CoreModuleName(const std::string& base, unsigned core) {
  return core == 0 ? base : base + std::to_string(core);
}

// One HBM per core.
std::vector<std::unique_ptr<HbmMemory>> MakeHbm() {
  std::vector<std::unique_ptr<HbmMemory>> hbm;
  for (unsigned core = 0; core < kCores; ++core)
    hbm.push_back(std::make_unique<HbmMemory>(CoreModuleName("hbm", core).c_str(), core));
  return hbm;
}

std::vector<HbmMemory*> Pointers(const std::vector<std::unique_ptr<HbmMemory>>& hbm) {
  std::vector<HbmMemory*> pointers;
  for (const auto& memory : hbm) pointers.push_back(memory.get());
  return pointers;
}

}  // namespace

Platform* Platform::Create(const PlatformOptions& options) {
  // Tracing must be allowed before the model exists; it costs nothing until a trace file is opened.
  Verilated::traceEverOn(true);
  auto chip = std::make_unique<Vtpu_chip>("tpu");
  return new Platform("platform", std::move(chip), options);
}

Platform::Platform(sc_core::sc_module_name name, std::unique_ptr<Vtpu_chip> chip, const PlatformOptions& options)
    : sc_core::sc_module(name),
      options_(options),
      clk_("clk", ClockPeriod()),
      rst_n_("rst_n", false),
      core_hbm_ready_("core_hbm_ready", kCores),
      core_hbm_rsp_valid_("core_hbm_rsp_valid", kCores),
      core_hbm_rsp_rdata_("core_hbm_rsp_rdata", kCores),
      hbm_(MakeHbm()),
      host_memory_("host_memory", tpu::cfg::kHostMemBytes, options.host_memory_latency),
      bridge_("bridge", Pointers(hbm_), ClockPeriod(), options.mmio_timeout_cycles, options.min_host_latency_cycles),
      mmio_initiator_("mmio_initiator") {
  chip_ = std::move(chip);

  chip_->clk_i(clk_);
  chip_->rst_ni(rst_n_);
  chip_->chip_id_i(chip_id_);
  chip_->mmio_valid_i(mmio_valid_);
  chip_->mmio_write_i(mmio_write_);
  chip_->mmio_addr_i(mmio_addr_);
  chip_->mmio_wdata_i(mmio_wdata_);
  chip_->mmio_rvalid_o(mmio_rvalid_);
  chip_->mmio_rdata_o(mmio_rdata_);
  chip_->irq_o(irq_);
  chip_->hbm_req_valid_o(hbm_req_valid_);
  chip_->hbm_req_ready_i(hbm_req_ready_);
  chip_->hbm_req_write_o(hbm_req_write_);
  chip_->hbm_req_addr_o(hbm_req_addr_);
  chip_->hbm_req_wdata_o(hbm_req_wdata_);
  chip_->hbm_rsp_valid_i(hbm_rsp_valid_);
  chip_->hbm_rsp_rdata_i(hbm_rsp_rdata_);
  chip_->host_req_valid_o(host_req_valid_);
  chip_->host_req_ready_i(host_req_ready_);
  chip_->host_req_write_o(host_req_write_);
  chip_->host_req_addr_o(host_req_addr_);
  chip_->host_req_wdata_o(host_req_wdata_);
  chip_->host_rsp_valid_i(host_rsp_valid_);
  chip_->host_rsp_rdata_i(host_rsp_rdata_);
  chip_->host_rsp_error_i(host_rsp_error_);
  chip_->trace_run_o(trace_run_);
  chip_->trace_issue_o(trace_issue_);
  chip_->trace_pc_o(trace_pc_);
  chip_->trace_wait_o(trace_wait_);
  chip_->trace_unit_o(trace_unit_);
  chip_->trace_work_o(trace_work_);
  for (unsigned core = 0; core < kCores; ++core) {
    trace_monitors_.push_back(std::make_unique<IssueTraceMonitor>(CoreModuleName("trace_monitor", core).c_str(),
                                                                  core, tpu::cfg::kImemWords, ClockPeriod()));
    IssueTraceMonitor& monitor = *trace_monitors_.back();
    monitor.clk_i(clk_);
    monitor.run_i(trace_run_);
    monitor.issue_i(trace_issue_);
    monitor.pc_i(trace_pc_);
    monitor.wait_i(trace_wait_);
    monitor.unit_i(trace_unit_);
    monitor.work_i(trace_work_);

    HbmMemory& hbm = *hbm_[core];
    hbm.clk_i(clk_);
    hbm.rst_ni(rst_n_);
    hbm.req_valid_i(hbm_req_valid_);
    hbm.req_write_i(hbm_req_write_);
    hbm.req_addr_i(hbm_req_addr_);
    hbm.req_wdata_i(hbm_req_wdata_);
    hbm.req_ready_o(core_hbm_ready_[core]);
    hbm.rsp_valid_o(core_hbm_rsp_valid_[core]);
    hbm.rsp_rdata_o(core_hbm_rsp_rdata_[core]);
  }

  bridge_.clk_i(clk_);
  bridge_.rst_ni(rst_n_);
  bridge_.mmio_valid_o(mmio_valid_);
  bridge_.mmio_write_o(mmio_write_);
  bridge_.mmio_addr_o(mmio_addr_);
  bridge_.mmio_wdata_o(mmio_wdata_);
  bridge_.mmio_rvalid_i(mmio_rvalid_);
  bridge_.mmio_rdata_i(mmio_rdata_);
  bridge_.host_req_valid_i(host_req_valid_);
  bridge_.host_req_ready_o(host_req_ready_);
  bridge_.host_req_write_i(host_req_write_);
  bridge_.host_req_addr_i(host_req_addr_);
  bridge_.host_req_wdata_i(host_req_wdata_);
  bridge_.host_rsp_valid_o(host_rsp_valid_);
  bridge_.host_rsp_rdata_o(host_rsp_rdata_);
  bridge_.host_rsp_error_o(host_rsp_error_);
  bridge_.host_socket.bind(host_memory_.socket);
  mmio_initiator_.bind(bridge_.mmio_socket);

  SC_THREAD(HostThread);
  SC_METHOD(MergeHbmAnswers);
  for (unsigned core = 0; core < kCores; ++core)
    sensitive << core_hbm_ready_[core] << core_hbm_rsp_valid_[core] << core_hbm_rsp_rdata_[core];
  SC_METHOD(WatchIrq);
  sensitive << irq_;
  dont_initialize();
  SC_METHOD(OpenTraceFile);
  sensitive << trace_open_event_;
  dont_initialize();
  SC_METHOD(CloseTraceFile);
  sensitive << trace_close_event_;
  dont_initialize();
}

Platform::~Platform() {
  if (trace_) trace_->close();
}

uint64_t Platform::Cycles() const {
  return static_cast<uint64_t>(sc_core::sc_time_stamp() / ClockPeriod());
}

void Platform::EnsureStarted() {
  if (started_) return;
  started_ = true;
  StartKernel(sc_core::SC_ZERO_TIME);  // finishes elaboration; needed before a trace opens
}

// Executes the current command from the host's side. Each command ends with sc_pause(), so the kernel
// runs exactly as long as the command needs.
void Platform::HostThread() {
  while (true) {
    while (command_.done) sc_core::wait(command_event_);
    Command& command = command_;
    if (command.kind == CommandKind::kReset) {
      sc_core::wait(clk_.posedge_event());
      rst_n_.write(false);
      for (unsigned i = 0; i < options_.reset_cycles; ++i) sc_core::wait(clk_.posedge_event());
      rst_n_.write(true);
      command.status = tlm::TLM_OK_RESPONSE;
    } else {
      uint8_t data[4];
      std::memcpy(data, &command.value, 4);
      tlm::tlm_generic_payload payload;
      payload.set_command(command.kind == CommandKind::kWrite ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
      payload.set_address(command.offset);
      payload.set_data_ptr(data);
      payload.set_data_length(4);
      payload.set_streaming_width(4);
      payload.set_byte_enable_ptr(nullptr);
      payload.set_dmi_allowed(false);
      payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      mmio_initiator_->b_transport(payload, delay);
      command.status = payload.get_response_status();
      std::memcpy(&command.value, data, 4);
    }
    command.done = true;
    sc_core::sc_pause();
  }
}

void Platform::WatchIrq() {
  if ((IrqLines() & pause_on_irq_lines_) != 0) sc_core::sc_pause();
}

void Platform::MergeHbmAnswers() {
  CoreBits ready{}, rsp_valid{};
  CoreLines rsp_rdata;  // every core's line is set below
  for (unsigned core = 0; core < kCores; ++core) {
    SetField(&ready, core, 1, core_hbm_ready_[core].read());
    SetField(&rsp_valid, core, 1, core_hbm_rsp_valid_[core].read());
    SetLineAt(&rsp_rdata, core, core_hbm_rsp_rdata_[core].read());
  }
  hbm_req_ready_.write(ready);
  hbm_rsp_valid_.write(rsp_valid);
  hbm_rsp_rdata_.write(rsp_rdata);
}

template <typename Stop>
void Platform::RunUntil(uint64_t deadline, Stop stop) {
  EnsureStarted();
  // One sc_start for the whole span; it returns early only when a process calls sc_pause().
  while (!stop() && Cycles() < deadline) {
    StartKernel(ClockPeriod() * static_cast<double>(deadline - Cycles()));
  }
}

Status Platform::Execute(const Command& command, uint64_t max_cycles) {
  // A command that outlived its caller's patience (it cannot, given the bridge's own timeout) must finish
  // before the next one replaces it.
  RunUntil(Cycles() + max_cycles, [this] { return command_.done; });
  if (!command_.done) return Internal("the platform's host thread is stuck in an earlier command");
  command_ = command;
  command_.done = false;
  command_event_.notify(sc_core::SC_ZERO_TIME);
  RunUntil(Cycles() + max_cycles, [this] { return command_.done; });
  if (!command_.done) {
    return Internal("the platform's host thread did not finish a command in " + std::to_string(max_cycles) +
                    " cycles");
  }
  return OkStatus();
}

std::string Platform::ResponseName(tlm::tlm_response_status status) {
  switch (status) {
    case tlm::TLM_OK_RESPONSE: return "TLM_OK_RESPONSE";
    case tlm::TLM_INCOMPLETE_RESPONSE: return "TLM_INCOMPLETE_RESPONSE";
    case tlm::TLM_GENERIC_ERROR_RESPONSE: return "TLM_GENERIC_ERROR_RESPONSE (no answer from the chip)";
    case tlm::TLM_ADDRESS_ERROR_RESPONSE: return "TLM_ADDRESS_ERROR_RESPONSE";
    case tlm::TLM_COMMAND_ERROR_RESPONSE: return "TLM_COMMAND_ERROR_RESPONSE";
    case tlm::TLM_BURST_ERROR_RESPONSE: return "TLM_BURST_ERROR_RESPONSE";
    case tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE: return "TLM_BYTE_ENABLE_ERROR_RESPONSE";
  }
  return "unknown TLM response";
}

Status Platform::Reset() {
  Command command;
  command.kind = CommandKind::kReset;
  return Execute(command, options_.reset_cycles + 4);
}

StatusOr<uint32_t> Platform::MmioRead(uint32_t offset) {
  Command command;
  command.kind = CommandKind::kRead;
  command.offset = offset;
  TPU_RETURN_IF_ERROR(Execute(command, options_.mmio_timeout_cycles + 8));
  if (command_.status != tlm::TLM_OK_RESPONSE) {
    char text[64];
    std::snprintf(text, sizeof(text), "MMIO read at offset 0x%05x failed: ", offset);
    return InvalidArgument(text + ResponseName(command_.status));
  }
  return command_.value;
}

Status Platform::MmioWrite(uint32_t offset, uint32_t value) {
  Command command;
  command.kind = CommandKind::kWrite;
  command.offset = offset;
  command.value = value;
  TPU_RETURN_IF_ERROR(Execute(command, options_.mmio_timeout_cycles + 8));
  if (command_.status != tlm::TLM_OK_RESPONSE) {
    char text[64];
    std::snprintf(text, sizeof(text), "MMIO write at offset 0x%05x failed: ", offset);
    return InvalidArgument(text + ResponseName(command_.status));
  }
  return OkStatus();
}

bool Platform::RunUntilIrq(uint64_t max_cycles, uint32_t lines) {
  EnsureStarted();
  auto raised = [this, lines] { return (IrqLines() & lines) != 0; };
  if (raised()) return true;
  pause_on_irq_lines_ = lines;  // WatchIrq pauses the kernel in the delta cycle one of them rises
  RunUntil(Cycles() + std::min(max_cycles, kMaxRunCycles), raised);
  pause_on_irq_lines_ = 0;
  return raised();
}

void Platform::Run(uint64_t cycles) {
  RunUntil(Cycles() + std::min(cycles, kMaxRunCycles), [] { return false; });
}

Status Platform::CheckTraceOptions(const TraceOptions& options) {
  if (options.file.empty()) return InvalidArgument("trace: no file name given");
  if (options.depth < 0) return InvalidArgument("trace: depth must be >= 0 (0 dumps every level)");
  if (options.stop_cycle <= options.start_cycle) {
    return InvalidArgument("trace: the window [" + std::to_string(options.start_cycle) + ", " +
                           std::to_string(options.stop_cycle) + ") is empty");
  }
  // Check the file can be written now rather than failing silently at the window start.
  if (FILE* probe = std::fopen(options.file.c_str(), "wb")) {
    std::fclose(probe);
  } else {
    return InvalidArgument("trace: cannot write " + options.file + ": " + std::strerror(errno));
  }
  return OkStatus();
}

Status Platform::StartTrace(const TraceOptions& options) {
  if (trace_open_ || trace_pending_) return FailedPrecondition("trace: " + trace_file_ + " is still open");
  TPU_RETURN_IF_ERROR(CheckTraceOptions(options));
  EnsureStarted();
  if (!trace_) {
    trace_ = std::make_unique<VerilatedFstSc>();
    chip_->trace(trace_.get(), 99);  // register every signal once; dumpvars picks what each file holds
    for (auto& hbm : hbm_) hbm->Trace(trace_.get());
  }
  // Verilator names signals "tpu tpu_chip <scopes...> name"; dumpvars counts levels below the scope it
  // is given, so a signal directly in tpu_chip is at level 2 below "tpu".
  trace_->dumpvars(0, "");
  if (options.depth > 0) {
    trace_->dumpvars(options.depth + 1, "tpu");
    // Verilator 5.006 sizes its table of enabled signals from the highest enabled one and reads past it
    // for the rest (a crash when a deeper signal was declared last); the package parameters are declared
    // last, so enabling them keeps the table whole. They are constants: they cost nothing per cycle.
    trace_->dumpvars(1, "tpu.tpu_pkg");
    trace_->dumpvars(1, "tpu.tpu_fp_pkg");
    for (const auto& hbm : hbm_)  // the HBM subsystems, as deep as the chip
      trace_->dumpvars(options.depth + 3, (std::string(hbm->name()) + ".rtl").c_str());
  }
  trace_file_ = options.file;
  trace_pending_ = true;
  trace_open_event_.notify(ClockPeriod() * static_cast<double>(options.start_cycle));
  if (options.stop_cycle != std::numeric_limits<uint64_t>::max()) {
    trace_close_event_.notify(ClockPeriod() * static_cast<double>(options.stop_cycle));
  }
  if (options.start_cycle == 0) {
    trace_open_event_.cancel();
    OpenTraceFile();
  }
  return OkStatus();
}

void Platform::OpenTraceFile() {
  if (!trace_pending_) return;
  trace_pending_ = false;
  trace_->open(trace_file_.c_str());
  trace_open_ = true;
}

void Platform::CloseTraceFile() {
  trace_pending_ = false;
  if (!trace_open_) return;
  trace_->close();
  trace_open_ = false;
}

void Platform::StopTrace() {
  trace_open_event_.cancel();
  trace_close_event_.cancel();
  CloseTraceFile();
}

bool Platform::tracing() const { return trace_open_; }

Status Platform::HbmDebugWrite(unsigned core, uint64_t byte_address, const void* data, size_t bytes) {
  return HbmDebug(true, core, byte_address, const_cast<void*>(data), bytes);
}

Status Platform::HbmDebugRead(unsigned core, uint64_t byte_address, void* data, size_t bytes) {
  return HbmDebug(false, core, byte_address, data, bytes);
}

Status Platform::HbmDebug(bool write, unsigned core, uint64_t byte_address, void* data, size_t bytes) {
  const uint64_t hbm_bytes = HostBridge::HbmBytes();
  const std::string what = std::string("HBM backdoor ") + (write ? "write" : "read") + " of " +
                           std::to_string(bytes) + " bytes at byte address " + std::to_string(byte_address);
  if (core >= kCores) return OutOfRange(what + ": the chip has no core " + std::to_string(core));
  if (byte_address > hbm_bytes || bytes > hbm_bytes - byte_address)
    return OutOfRange(what + " leaves HBM (" + std::to_string(hbm_bytes) + " bytes)");
  tlm::tlm_generic_payload payload;
  payload.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  payload.set_address(core * hbm_bytes + byte_address);
  payload.set_data_ptr(static_cast<uint8_t*>(data));
  payload.set_data_length(static_cast<unsigned int>(bytes));
  if (bytes > std::numeric_limits<unsigned int>::max() || mmio_initiator_->transport_dbg(payload) != bytes)
    return OutOfRange(what + " leaves HBM (" + std::to_string(hbm_bytes) + " bytes)");
  return OkStatus();
}

}  // namespace tpu::sysc

// libsystemc.so defines main() and needs an sc_main. Programs that use the platform have their own
// main() and never call this one; it exists so they link.
extern "C" __attribute__((weak)) int sc_main(int, char**) {
  std::fprintf(stderr, "tpusim: this program has no sc_main; create a tpu::sysc::Platform from main()\n");
  return 1;
}
