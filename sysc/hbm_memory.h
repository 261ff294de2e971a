// HbmMemory: the chip's HBM behind its line port (docs/architecture.md, docs/hbm.md).
//
// What it models: the synthesizable HBM subsystem (rtl/hbm/hbm_subsystem.sv: the line port on one HBM2
// channel controller per configured channel, verilated) in front of one HBM2 device model per channel
// (sysc/dram_device.h: sparse storage, every JEDEC timing rule checked). Geometry from the configuration
// (HBM_CHANNELS, HBM_*_BITS); timing DRAMSim3's HBM2_8Gb_x128. The port keeps its protocol: one response
// per accepted request, in request order; hbm_req_ready depends only on the subsystem's state.
//
// Speed: the subsystem and the devices are clocked only while a request is presented or in flight (a
// gated clock). While the port is idle HBM time stands still: no refresh is due and none is issued, as
// if the memory had been in self-refresh; the devices count only the cycles they were clocked.
// Reads see every earlier accepted write; a write is answered once it is in the device, so the backdoor
// (DebugRead) sees every write the chip has had answered.
//
// A request to a line >= lines() (the chip checks addresses before issuing, so this is a chip bug) is
// counted in out_of_range_requests(); the controllers drop the address bits above the geometry.
#pragma once

#include <systemc>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sysc/hbm_map.h"
#include "sysc/line.h"

class Vhbm_subsystem;
class VerilatedFstSc;

namespace tpu::sysc {

class HbmMemory : public sc_core::sc_module {
 public:
  sc_core::sc_in<bool> clk_i;
  sc_core::sc_in<bool> rst_ni;  // active low: resets the controllers; the devices keep their contents
  // The chip's HBM request pins, packed per core: this memory serves core `core` (constructor).
  sc_core::sc_in<CoreBits> req_valid_i;
  sc_core::sc_in<CoreBits> req_write_i;
  sc_core::sc_in<CoreWords> req_addr_i;  // line address
  sc_core::sc_in<CoreLines> req_wdata_i;
  // This memory's answers (the platform packs the cores' answers onto the chip's pins).
  sc_core::sc_out<bool> req_ready_o;
  sc_core::sc_out<bool> rsp_valid_o;
  sc_core::sc_out<Line> rsp_rdata_o;

  SC_HAS_PROCESS(HbmMemory);
  // The HBM of core `core` of the chip (its own controllers and devices, as each TensorCore of a TPU v2
  // has its own HBM stack).
  HbmMemory(sc_core::sc_module_name name, unsigned core);
  ~HbmMemory() override;

  uint64_t lines() const { return lines_; }

  // Backdoor access in bytes at HBM byte address line * kLineBytes, through the controllers' mapping
  // into the devices' storage; takes no simulated time and is not seen by the port. Returns false (and
  // transfers nothing) when the range leaves the memory.
  bool DebugRead(uint64_t byte_address, void* data, size_t bytes) const;
  bool DebugWrite(uint64_t byte_address, const void* data, size_t bytes);
  // Forgets all contents (every line reads as zero).
  void Clear() { dram_.Clear(); }
  // Registers the verilated subsystem's signals (controllers, per-channel command bus, bank state) with
  // a waveform before it opens: they appear under platform.hbm.rtl.
  void Trace(VerilatedFstSc* trace);

  HbmDram& dram() { return dram_; }
  // Timing violations the device models saw (zero when the controllers behaved), with messages; the
  // first ones are also printed to stderr when they happen.
  uint64_t violations() const { return dram_.violations(); }
  std::vector<std::string> violation_messages() const { return dram_.violation_messages(); }
  uint64_t read_requests() const { return read_requests_; }
  uint64_t write_requests() const { return write_requests_; }
  uint64_t out_of_range_requests() const { return out_of_range_requests_; }

 private:
  struct Dfi;  // the DFI signals, typed by the configuration's widths (hbm_memory.cc)

  // Both clock edges: at a rising edge while the port is busy, hands the cycle's DFI commands to the
  // devices, latches the chip's request and raises the subsystem's clock; at a falling edge lowers it.
  void OnClock();

  const unsigned core_;
  const uint64_t lines_;
  HbmDram dram_;
  std::unique_ptr<Dfi> dfi_;
  std::unique_ptr<Vhbm_subsystem> rtl_;
  uint64_t cycle_ = 0;        // HBM cycles clocked so far (the devices' time)
  uint64_t in_flight_ = 0;    // requests accepted and not yet answered
  uint64_t violations_reported_ = 0;
  bool clock_high_ = false;
  // The subsystem's clock and its latched request inputs (the chip's request of the cycle just ended).
  sc_core::sc_signal<bool> hbm_clk_{"hbm_clk"}, req_valid_q_{"req_valid_q"}, req_write_q_{"req_write_q"};
  sc_core::sc_signal<uint32_t> req_addr_q_{"req_addr_q"};
  sc_core::sc_signal<Line> req_wdata_q_{"req_wdata_q"};
  uint64_t read_requests_ = 0;
  uint64_t write_requests_ = 0;
  uint64_t out_of_range_requests_ = 0;
};

}  // namespace tpu::sysc
