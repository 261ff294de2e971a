#include "sysc/platform.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <tuple>

#include "Vtpu_chip.h"
#include "sysc/verilated_coverage.h"
#include "tpu_config.h"
#include "tpu_csr.h"
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

// The module name of a per-core part of chip `chip`: `base` for core 0 of chip 0 (so that a one-chip
// platform keeps its scopes, e.g. platform.hbm.rtl), then the core's number for other cores and
// "_chip<m>" for other chips.
std::string PartName(const std::string& base, unsigned core, unsigned chip = 0) {
  return (core == 0 ? base : base + std::to_string(core)) + (chip == 0 ? "" : "_chip" + std::to_string(chip));
}

std::vector<HbmMemory*> Pointers(const std::vector<std::unique_ptr<HbmMemory>>& hbm) {
  std::vector<HbmMemory*> pointers;
  for (const auto& memory : hbm) pointers.push_back(memory.get());
  return pointers;
}

// A receive buffer that lets a link run at its full bandwidth: credits come back a round trip
// (2 x latency, plus the few cycles through the chips) after their packet left.
unsigned DefaultSlots(const ici::LinkConfig& link) {
  const uint64_t per_cycle_x1000 = std::min<uint64_t>(1000, uint64_t{link.bytes_per_cycle} * 1000 / IciLink::kPacketBytes);
  return static_cast<unsigned>(std::min<uint64_t>(65535, (2 * uint64_t{link.latency_cycles} + 16) * per_cycle_x1000 / 1000 + 4));
}

}  // namespace

Platform* Platform::Create(const PlatformOptions& options) {
  for (const Status& status : {ici::CheckBoardChips(options.chips), ici::CheckLink(options.link)}) {
    if (!status.ok()) throw std::invalid_argument(status.message());
  }
  // Tracing must be allowed before the model exists; it costs nothing until a trace file is opened.
  Verilated::traceEverOn(true);
  // The platform's models live until the process ends; their coverage is written then (coverage builds).
  static const bool coverage_at_exit = [] {
    Verilated::threadContextp();  // exists before the handler is registered, so outlives it
    return std::atexit([] { tpu::WriteVerilatedCoverage(Verilated::threadContextp()); }) == 0;
  }();
  (void)coverage_at_exit;
  std::vector<std::unique_ptr<Vtpu_chip>> chips;
  for (unsigned chip = 0; chip < options.chips; ++chip)
    chips.push_back(std::make_unique<Vtpu_chip>(chip == 0 ? "tpu" : ("tpu" + std::to_string(chip)).c_str()));
  return new Platform("platform", std::move(chips), options);
}

Platform::ChipSlot::ChipSlot(unsigned index, std::unique_ptr<Vtpu_chip> chip)
    : rtl(std::move(chip)),
      rst_n(PartName("rst_n", 0, index).c_str(), false),
      core_hbm_ready(PartName("core_hbm_ready", 0, index).c_str(), kCores),
      core_hbm_rsp_valid(PartName("core_hbm_rsp_valid", 0, index).c_str(), kCores),
      core_hbm_rsp_rdata(PartName("core_hbm_rsp_rdata", 0, index).c_str(), kCores),
      tx_valid(PartName("ici_tx_valid", 0, index).c_str(), kIciPorts),
      rx_ready(PartName("ici_rx_ready", 0, index).c_str(), kIciPorts),
      tx_packet(PartName("ici_tx_packet", 0, index).c_str(), kIciPorts),
      tx_ack(PartName("ici_tx_ack", 0, index).c_str(), kIciPorts),
      tx_credit(PartName("ici_tx_credit", 0, index).c_str(), kIciPorts),
      rx_valid(PartName("ici_rx_valid", 0, index).c_str(), kIciPorts),
      rx_packet(PartName("ici_rx_packet", 0, index).c_str(), kIciPorts),
      rx_ack(PartName("ici_rx_ack", 0, index).c_str(), kIciPorts) {
  chip_id.write(index);
  num_chips.write(1);
}

Platform::Platform(sc_core::sc_module_name name, std::vector<std::unique_ptr<Vtpu_chip>> chips,
                   const PlatformOptions& options)
    : sc_core::sc_module(name),
      options_(options),
      clk_("clk", ClockPeriod()),
      host_memory_("host_memory", tpu::cfg::kHostMemBytes, options.host_memory_latency) {
  for (unsigned index = 0; index < chips.size(); ++index) {
    chips_.push_back(std::make_unique<ChipSlot>(index, std::move(chips[index])));
    BindChip(index);
  }
  MakeLinks();

  SC_THREAD(HostThread);
  SC_METHOD(MergeHbmAnswers);
  for (auto& slot : chips_) {
    for (unsigned core = 0; core < kCores; ++core)
      sensitive << slot->core_hbm_ready[core] << slot->core_hbm_rsp_valid[core] << slot->core_hbm_rsp_rdata[core];
  }
  SC_METHOD(SplitIci);
  for (auto& slot : chips_) sensitive << slot->ici_tx_valid << slot->ici_tx_packet << slot->ici_tx_ack << slot->ici_rx_ready;
  SC_METHOD(MergeIci);
  for (auto& slot : chips_) {
    for (unsigned port = 0; port < kIciPorts; ++port)
      sensitive << slot->tx_credit[port] << slot->rx_valid[port] << slot->rx_packet[port] << slot->rx_ack[port];
  }
  SC_METHOD(WatchIrq);
  for (auto& slot : chips_) sensitive << slot->irq;
  dont_initialize();
  SC_METHOD(OpenTraceFile);
  sensitive << trace_open_event_;
  dont_initialize();
  SC_METHOD(CloseTraceFile);
  sensitive << trace_close_event_;
  dont_initialize();
}

void Platform::BindChip(unsigned index) {
  ChipSlot& slot = *chips_[index];
  Vtpu_chip& chip = *slot.rtl;
  slot.ici_credits.write(options_.link_slots != 0 ? options_.link_slots : DefaultSlots(options_.link));
  chip.clk_i(clk_);
  chip.rst_ni(slot.rst_n);
  chip.chip_id_i(slot.chip_id);
  chip.num_chips_i(slot.num_chips);
  chip.mmio_valid_i(slot.mmio_valid);
  chip.mmio_write_i(slot.mmio_write);
  chip.mmio_addr_i(slot.mmio_addr);
  chip.mmio_wdata_i(slot.mmio_wdata);
  chip.mmio_rvalid_o(slot.mmio_rvalid);
  chip.mmio_rdata_o(slot.mmio_rdata);
  chip.irq_o(slot.irq);
  chip.hbm_req_valid_o(slot.hbm_req_valid);
  chip.hbm_req_ready_i(slot.hbm_req_ready);
  chip.hbm_req_write_o(slot.hbm_req_write);
  chip.hbm_req_addr_o(slot.hbm_req_addr);
  chip.hbm_req_wdata_o(slot.hbm_req_wdata);
  chip.hbm_rsp_valid_i(slot.hbm_rsp_valid);
  chip.hbm_rsp_rdata_i(slot.hbm_rsp_rdata);
  chip.host_req_valid_o(slot.host_req_valid);
  chip.host_req_ready_i(slot.host_req_ready);
  chip.host_req_write_o(slot.host_req_write);
  chip.host_req_addr_o(slot.host_req_addr);
  chip.host_req_wdata_o(slot.host_req_wdata);
  chip.host_rsp_valid_i(slot.host_rsp_valid);
  chip.host_rsp_rdata_i(slot.host_rsp_rdata);
  chip.host_rsp_error_i(slot.host_rsp_error);
  chip.trace_run_o(slot.trace_run);
  chip.trace_issue_o(slot.trace_issue);
  chip.trace_pc_o(slot.trace_pc);
  chip.trace_wait_o(slot.trace_wait);
  chip.trace_unit_o(slot.trace_unit);
  chip.trace_work_o(slot.trace_work);
  chip.ici_credits_i(slot.ici_credits);
  chip.ici_tx_valid_o(slot.ici_tx_valid);
  chip.ici_tx_packet_o(slot.ici_tx_packet);
  chip.ici_tx_credit_i(slot.ici_tx_credit);
  chip.ici_tx_ack_o(slot.ici_tx_ack);
  chip.ici_rx_valid_i(slot.ici_rx_valid);
  chip.ici_rx_ready_o(slot.ici_rx_ready);
  chip.ici_rx_packet_i(slot.ici_rx_packet);
  chip.ici_rx_ack_i(slot.ici_rx_ack);
  for (unsigned core = 0; core < kCores; ++core) {
    slot.trace_monitors.push_back(std::make_unique<IssueTraceMonitor>(
        PartName("trace_monitor", core, index).c_str(), core, tpu::cfg::kImemWords, ClockPeriod()));
    IssueTraceMonitor& monitor = *slot.trace_monitors.back();
    monitor.clk_i(clk_);
    monitor.run_i(slot.trace_run);
    monitor.issue_i(slot.trace_issue);
    monitor.pc_i(slot.trace_pc);
    monitor.wait_i(slot.trace_wait);
    monitor.unit_i(slot.trace_unit);
    monitor.work_i(slot.trace_work);

    slot.hbm.push_back(std::make_unique<HbmMemory>(PartName("hbm", core, index).c_str(), core));
    HbmMemory& hbm = *slot.hbm.back();
    hbm.clk_i(clk_);
    hbm.rst_ni(slot.rst_n);
    hbm.req_valid_i(slot.hbm_req_valid);
    hbm.req_write_i(slot.hbm_req_write);
    hbm.req_addr_i(slot.hbm_req_addr);
    hbm.req_wdata_i(slot.hbm_req_wdata);
    hbm.req_ready_o(slot.core_hbm_ready[core]);
    hbm.rsp_valid_o(slot.core_hbm_rsp_valid[core]);
    hbm.rsp_rdata_o(slot.core_hbm_rsp_rdata[core]);
  }

  slot.bridge = std::make_unique<HostBridge>(PartName("bridge", 0, index).c_str(), Pointers(slot.hbm), ClockPeriod(),
                                             options_.mmio_timeout_cycles, options_.min_host_latency_cycles);
  HostBridge& bridge = *slot.bridge;
  bridge.clk_i(clk_);
  bridge.rst_ni(slot.rst_n);
  bridge.mmio_valid_o(slot.mmio_valid);
  bridge.mmio_write_o(slot.mmio_write);
  bridge.mmio_addr_o(slot.mmio_addr);
  bridge.mmio_wdata_o(slot.mmio_wdata);
  bridge.mmio_rvalid_i(slot.mmio_rvalid);
  bridge.mmio_rdata_i(slot.mmio_rdata);
  bridge.host_req_valid_i(slot.host_req_valid);
  bridge.host_req_ready_o(slot.host_req_ready);
  bridge.host_req_write_i(slot.host_req_write);
  bridge.host_req_addr_i(slot.host_req_addr);
  bridge.host_req_wdata_i(slot.host_req_wdata);
  bridge.host_rsp_valid_o(slot.host_rsp_valid);
  bridge.host_rsp_rdata_o(slot.host_rsp_rdata);
  bridge.host_rsp_error_o(slot.host_rsp_error);
  bridge.host_socket.bind(host_memory_.socket);
  slot.mmio_initiator = std::make_unique<tlm_utils::simple_initiator_socket<Platform>>(
      PartName("mmio_initiator", 0, index).c_str());
  slot.mmio_initiator->bind(bridge.mmio_socket);
}

void Platform::MakeLinks() {
  const unsigned chips = this->chips();
  const unsigned slots = options_.link_slots != 0 ? options_.link_slots : DefaultSlots(options_.link);
  // Every (sender, port, receiver) a board of 2 or 4 chips on these chips uses, once.
  std::vector<std::tuple<unsigned, unsigned, unsigned>> ends;
  for (unsigned board : {2u, 4u}) {
    if (board > chips) continue;
    for (unsigned from = 0; from < board; ++from) {
      for (unsigned port = 0; port < kIciPorts; ++port) {
        const unsigned to = ici::Neighbour(from, static_cast<ici::Port>(port), board);
        const auto end = std::make_tuple(from, port, to);
        const auto found = std::find(ends.begin(), ends.end(), end);
        if (found != ends.end()) {
          link_boards_[found - ends.begin()] |= 1u << board;
          continue;
        }
        ends.push_back(end);
        link_boards_.push_back(1u << board);
        ChipSlot& sender = *chips_[from];
        ChipSlot& receiver = *chips_[to];
        const unsigned rx_port = 1 - port;  // port next of one chip faces port prev of the next
        links_.push_back(std::make_unique<IciLink>(
            ("ici_" + std::to_string(from) + (port == ici::kNext ? "_next_to_" : "_prev_to_") + std::to_string(to)).c_str(),
            options_.link.latency_cycles, options_.link.bytes_per_cycle, slots));
        IciLink& link = *links_.back();
        link.clk_i(clk_);
        link.tx_valid_i(sender.tx_valid[port]);
        link.tx_packet_i(sender.tx_packet[port]);
        link.tx_ack_i(sender.tx_ack[port]);
        link.tx_credit_o(sender.tx_credit[port]);
        link.rx_valid_o(receiver.rx_valid[rx_port]);
        link.rx_ready_i(receiver.rx_ready[rx_port]);
        link.rx_packet_o(receiver.rx_packet[rx_port]);
        link.rx_ack_o(receiver.rx_ack[rx_port]);
      }
    }
  }
}

Status Platform::SetBoardChips(unsigned chips) {
  TPU_RETURN_IF_ERROR(ici::CheckBoardChips(chips));
  if (chips > this->chips()) {
    return FailedPrecondition("a board of " + std::to_string(chips) + " chips does not fit the platform's " +
                              std::to_string(this->chips()));
  }
  board_chips_ = chips;
  return OkStatus();
}

uint64_t Platform::IrqLines() const {
  uint64_t lines = 0;
  for (unsigned chip = 0; chip < board_chips_; ++chip)
    lines |= uint64_t{Field(chips_[chip]->irq.read(), 0, kCores)} << (chip * kCores);
  return lines;
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
      for (auto& slot : chips_) {
        slot->rst_n.write(false);
        slot->num_chips.write(board_chips_);
      }
      for (size_t link = 0; link < links_.size(); ++link) links_[link]->SetActive((link_boards_[link] >> board_chips_) & 1);
      for (unsigned i = 0; i < options_.reset_cycles; ++i) sc_core::wait(clk_.posedge_event());
      for (unsigned chip = 0; chip < board_chips_; ++chip) chips_[chip]->rst_n.write(true);
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
      const unsigned chip = command.offset >> csr::CHIP_SHIFT;
      payload.set_address(command.offset & ((1u << csr::CHIP_SHIFT) - 1));
      if (chip < board_chips_) {
        (*chips_[chip]->mmio_initiator)->b_transport(payload, delay);
      } else {
        payload.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);  // a chip the board does not have
      }
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
  for (auto& slot : chips_) {
    CoreBits ready{}, rsp_valid{};
    CoreLines rsp_rdata;  // every core's line is set below
    for (unsigned core = 0; core < kCores; ++core) {
      SetField(&ready, core, 1, slot->core_hbm_ready[core].read());
      SetField(&rsp_valid, core, 1, slot->core_hbm_rsp_valid[core].read());
      SetLineAt(&rsp_rdata, core, slot->core_hbm_rsp_rdata[core].read());
    }
    slot->hbm_req_ready.write(ready);
    slot->hbm_rsp_valid.write(rsp_valid);
    slot->hbm_rsp_rdata.write(rsp_rdata);
  }
}

void Platform::SplitIci() {
  for (auto& slot : chips_) {
    const auto packets = slot->ici_tx_packet.read();
    const auto acks = slot->ici_tx_ack.read();
    for (unsigned port = 0; port < kIciPorts; ++port) {
      slot->tx_valid[port].write(Field(slot->ici_tx_valid.read(), port, 1) != 0);
      slot->rx_ready[port].write(Field(slot->ici_rx_ready.read(), port, 1) != 0);
      IciPacket packet;
      packet = packets.range(int((port + 1) * kIciPacketBits - 1), int(port * kIciPacketBits));
      slot->tx_packet[port].write(packet);
      slot->tx_ack[port].write(static_cast<IciAck>(Field(acks, port * kIciAckBits, kIciAckBits)));
    }
  }
}

void Platform::MergeIci() {
  for (auto& slot : chips_) {
    Pin<kIciPorts> credit{}, valid{};
    Pin<kIciPorts * kIciPacketBits> packets;
    Pin<kIciPorts * kIciAckBits> acks{};
    for (unsigned port = 0; port < kIciPorts; ++port) {
      SetField(&credit, port, 1, slot->tx_credit[port].read());
      SetField(&valid, port, 1, slot->rx_valid[port].read());
      packets.range(int((port + 1) * kIciPacketBits - 1), int(port * kIciPacketBits)) = slot->rx_packet[port].read();
      SetField(&acks, port * kIciAckBits, kIciAckBits, static_cast<uint32_t>(slot->rx_ack[port].read()));
    }
    slot->ici_tx_credit.write(credit);
    slot->ici_rx_valid.write(valid);
    slot->ici_rx_packet.write(packets);
    slot->ici_rx_ack.write(acks);
  }
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

bool Platform::RunUntilIrq(uint64_t max_cycles, uint64_t lines) {
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
    chips_[0]->rtl->trace(trace_.get(), 99);  // register every signal once; dumpvars picks what each file holds
    for (auto& hbm : chips_[0]->hbm) hbm->Trace(trace_.get());
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
    for (const auto& hbm : chips_[0]->hbm)  // the HBM subsystems, as deep as the chip
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
  if (core >= board_chips_ * kCores) return OutOfRange(what + ": the board has no core " + std::to_string(core));
  if (byte_address > hbm_bytes || bytes > hbm_bytes - byte_address)
    return OutOfRange(what + " leaves HBM (" + std::to_string(hbm_bytes) + " bytes)");
  tlm::tlm_generic_payload payload;
  payload.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  payload.set_address((core % kCores) * hbm_bytes + byte_address);
  payload.set_data_ptr(static_cast<uint8_t*>(data));
  payload.set_data_length(static_cast<unsigned int>(bytes));
  if (bytes > std::numeric_limits<unsigned int>::max() ||
      (*chips_[core / kCores]->mmio_initiator)->transport_dbg(payload) != bytes)
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
