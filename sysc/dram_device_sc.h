// Thin SystemC wrapper of the HBM2 device model (sysc/dram_device.h): samples the DFI-like command
// buses of rtl/hbm/hbm_ctrl.sv on each rising clock edge and drives read data back when it is due.
// Header-only so that plain C++ users of the model need no SystemC.
#ifndef SYSC_DRAM_DEVICE_SC_H_
#define SYSC_DRAM_DEVICE_SC_H_

#include <systemc>

#include <cstdint>
#include <vector>

#include "sysc/dram_device.h"

namespace tpu {

// kDataBits is the DFI data width: one burst (DramConfig::burst_bytes * 8).
template <int kDataBits = 512>
SC_MODULE(DramDeviceSc) {
  sc_core::sc_in<bool> clk;
  sc_core::sc_in<uint32_t> row_cmd, row_bank, row_addr;
  sc_core::sc_in<uint32_t> col_cmd, col_bank, col_addr;
  sc_core::sc_in<sc_dt::sc_bv<kDataBits>> wrdata;
  sc_core::sc_in<sc_dt::sc_bv<kDataBits / 8>> wrmask;
  sc_core::sc_out<bool> rddata_valid;
  sc_core::sc_out<sc_dt::sc_bv<kDataBits>> rddata;

  DramDeviceSc(sc_core::sc_module_name name, const DramConfig& config = DramConfig())
      : sc_core::sc_module(name), device_(config) {
    SC_METHOD(OnClock);
    sensitive << clk.pos();
    dont_initialize();
  }
  SC_HAS_PROCESS(DramDeviceSc);

  DramDevice& device() { return device_; }
  uint64_t cycle() const { return cycle_; }

 private:
  void OnClock() {
    // Commands on the buses during the cycle that ends at this edge.
    device_.Row(cycle_, RowCmd(row_cmd.read()), int(row_bank.read()), row_addr.read());
    const int bytes = kDataBits / 8;
    std::vector<uint8_t> data(size_t(bytes), 0), mask(size_t(bytes / 8), 0);
    if (ColCmd(col_cmd.read()) == ColCmd::kWr) {
      const sc_dt::sc_bv<kDataBits> d = wrdata.read();
      const sc_dt::sc_bv<kDataBits / 8> m = wrmask.read();
      for (int i = 0; i < bytes; ++i) data[size_t(i)] = uint8_t(d.range(8 * i + 7, 8 * i).to_uint());
      for (int i = 0; i < bytes; ++i) mask[size_t(i / 8)] |= uint8_t((m[i] == sc_dt::Log_1) << (i % 8));
    }
    device_.Col(cycle_, ColCmd(col_cmd.read()), int(col_bank.read()), col_addr.read(), data.data(), mask.data());
    ++cycle_;
    // Read data due in the next cycle is presented now, ahead of the edge that samples it.
    std::vector<uint8_t> out(static_cast<size_t>(bytes));
    if (device_.PopReadData(cycle_, out.data())) {
      sc_dt::sc_bv<kDataBits> d;
      for (int i = 0; i < bytes; ++i) d.range(8 * i + 7, 8 * i) = out[size_t(i)];
      rddata.write(d);
      rddata_valid.write(true);
    } else {
      rddata_valid.write(false);
    }
  }

  DramDevice device_;
  uint64_t cycle_ = 0;
};

}  // namespace tpu

#endif  // SYSC_DRAM_DEVICE_SC_H_
