#include "sysc/hbm_memory.h"

#include <cstdio>
#include <cstring>
#include <type_traits>

#include "Vhbm_subsystem.h"
#include "verilated_fst_sc.h"
#include "sysc/hbm_config.h"
#include "tpu_config.h"

namespace tpu::sysc {

namespace {

constexpr unsigned kChannels = unsigned(cfg::kHbmChannels);
constexpr unsigned kBankBits = unsigned(cfg::kHbmBgBits + cfg::kHbmBaBits);
constexpr unsigned kRowBits = unsigned(cfg::kHbmRowBits);
constexpr unsigned kColBits = unsigned(cfg::kHbmColBits);
constexpr unsigned kBeatBits = HbmGeometry::kBeatBytes * 8;
constexpr unsigned kBeatWords = kBeatBits / 32;

}  // namespace

struct HbmMemory::Dfi {
  sc_core::sc_signal<Pin<kChannels * 3>> row_cmd{"dfi_row_cmd"};
  sc_core::sc_signal<Pin<kChannels * kBankBits>> row_bank{"dfi_row_bank"};
  sc_core::sc_signal<Pin<kChannels * kRowBits>> row_addr{"dfi_row_addr"};
  sc_core::sc_signal<Pin<kChannels * 2>> col_cmd{"dfi_col_cmd"};
  sc_core::sc_signal<Pin<kChannels * kBankBits>> col_bank{"dfi_col_bank"};
  sc_core::sc_signal<Pin<kChannels * kColBits>> col_addr{"dfi_col_addr"};
  sc_core::sc_signal<Pin<kChannels * kBeatBits>> wrdata{"dfi_wrdata"};
  sc_core::sc_signal<Pin<kChannels * kBeatBits / 8>> wrmask{"dfi_wrmask"};
  sc_core::sc_signal<Pin<kChannels>> rddata_valid{"dfi_rddata_valid"};
  sc_core::sc_signal<Pin<kChannels * kBeatBits>> rddata{"dfi_rddata"};
  // Reused every cycle: the model never allocates per cycle.
  Pin<kChannels * kBeatBits> rddata_value;
  uint8_t beat[HbmGeometry::kBeatBytes] = {};
  uint8_t mask[HbmGeometry::kBeatBytes / 8] = {};
  uint32_t valid_driven = 0;
};

HbmMemory::HbmMemory(sc_core::sc_module_name name, unsigned core)
    : sc_core::sc_module(name),
      core_(core),
      lines_(cfg::kHbmLines),
      dram_(ConfiguredHbmGeometry()),
      dfi_(std::make_unique<Dfi>()),
      rtl_(std::make_unique<Vhbm_subsystem>("rtl")) {
  Vhbm_subsystem& r = *rtl_;
  r.clk_i(hbm_clk_);
  r.rst_ni(rst_ni);
  r.req_valid_i(req_valid_q_);
  r.req_ready_o(req_ready_o);
  r.req_write_i(req_write_q_);
  r.req_addr_i(req_addr_q_);
  r.req_wdata_i(req_wdata_q_);
  r.rsp_valid_o(rsp_valid_o);
  r.rsp_rdata_o(rsp_rdata_o);
  r.dfi_row_cmd_o(dfi_->row_cmd);
  r.dfi_row_bank_o(dfi_->row_bank);
  r.dfi_row_addr_o(dfi_->row_addr);
  r.dfi_col_cmd_o(dfi_->col_cmd);
  r.dfi_col_bank_o(dfi_->col_bank);
  r.dfi_col_addr_o(dfi_->col_addr);
  r.dfi_wrdata_o(dfi_->wrdata);
  r.dfi_wrmask_o(dfi_->wrmask);
  r.dfi_rddata_valid_i(dfi_->rddata_valid);
  r.dfi_rddata_i(dfi_->rddata);
  SC_METHOD(OnClock);
  sensitive << clk_i;
  dont_initialize();
}

HbmMemory::~HbmMemory() = default;

// The subsystem samples, at the rising edge of its clock, the request and the read data latched here for
// the cycle that just ended; its outputs (ready, response, DFI commands) settle during the next cycle.
void HbmMemory::OnClock() {
  Dfi& d = *dfi_;
  if (!clk_i.read()) {
    if (clock_high_) hbm_clk_.write(false);
    clock_high_ = false;
    return;
  }
  if (!rst_ni.read()) {
    // The controllers forget their state: the devices start over with every bank closed.
    for (unsigned c = 0; c < kChannels; ++c) dram_.channel(int(c)).Reset(cycle_);
    in_flight_ = 0;
    req_valid_q_.write(false);
    if (d.valid_driven != 0) d.rddata_valid.write(0);
    d.valid_driven = 0;
    return;
  }
  const bool req_valid = Field(req_valid_i.read(), core_, 1) != 0;
  if (in_flight_ == 0 && !req_valid) return;  // idle: HBM time stands still
  if (req_valid && req_ready_o.read()) {
    ++in_flight_;
    if (Field(req_write_i.read(), core_, 1) != 0) ++write_requests_;
    else ++read_requests_;
    if (Field(req_addr_i.read(), 32 * core_, 32) >= lines_) ++out_of_range_requests_;
  }
  if (rsp_valid_o.read()) --in_flight_;

  // DFI commands of the cycle that just ended.
  const auto row_cmd = d.row_cmd.read();
  const auto col_cmd = d.col_cmd.read();
  for (unsigned c = 0; c < kChannels; ++c) {
    DramDevice& device = dram_.channel(int(c));
    const auto row = RowCmd(Field(row_cmd, 3 * c, 3));
    if (row != RowCmd::kNop) {
      device.Row(cycle_, row, int(Field(d.row_bank.read(), kBankBits * c, kBankBits)),
                 Field(d.row_addr.read(), kRowBits * c, kRowBits));
    }
    const auto col = ColCmd(Field(col_cmd, 2 * c, 2));
    if (col == ColCmd::kNop) continue;
    if (col == ColCmd::kWr) {
      const auto& data = d.wrdata.read();
      const auto& mask = d.wrmask.read();
      for (unsigned w = 0; w < kBeatWords; ++w) {
        const uint32_t word = data.get_word(int(c * kBeatWords + w));
        std::memcpy(d.beat + 4 * w, &word, 4);
      }
      for (unsigned w = 0; w < 2; ++w) {
        const uint32_t word = Field(mask, 64 * c + 32 * w, 32);
        std::memcpy(d.mask + 4 * w, &word, 4);
      }
    }
    device.Col(cycle_, col, int(Field(d.col_bank.read(), kBankBits * c, kBankBits)),
               Field(d.col_addr.read(), kColBits * c, kColBits), d.beat, d.mask);
  }
  // A timing violation is a controller bug: say so on stderr (with the rule) the first time it happens.
  if (dram_.violations() != violations_reported_) {
    if (violations_reported_ == 0) {
      for (const std::string& m : dram_.violation_messages()) std::fprintf(stderr, "hbm: %s\n", m.c_str());
    }
    violations_reported_ = dram_.violations();
  }
  // Read data due in the cycle that just ended, sampled with it.
  uint32_t valid = 0;
  for (unsigned c = 0; c < kChannels; ++c) {
    if (!dram_.channel(int(c)).PopReadData(cycle_, d.beat)) continue;
    valid |= 1u << c;
    for (unsigned w = 0; w < kBeatWords; ++w) {
      uint32_t word;
      std::memcpy(&word, d.beat + 4 * w, 4);
      d.rddata_value.set_word(int(c * kBeatWords + w), word);
    }
  }
  if (valid != 0) d.rddata.write(d.rddata_value);
  if (valid != d.valid_driven) d.rddata_valid.write(Pin<kChannels>(valid));
  d.valid_driven = valid;
  ++cycle_;

  // The chip's request of the cycle that just ended, then the edge.
  req_valid_q_.write(req_valid);
  if (req_valid) {
    req_write_q_.write(Field(req_write_i.read(), core_, 1) != 0);
    req_addr_q_.write(Field(req_addr_i.read(), 32 * core_, 32));
    req_wdata_q_.write(LineAt(req_wdata_i.read(), core_));
  }
  hbm_clk_.write(true);
  clock_high_ = true;
}

bool HbmMemory::DebugRead(uint64_t byte_address, void* data, size_t bytes) const {
  return dram_.ReadBytes(byte_address, static_cast<uint8_t*>(data), bytes);
}

bool HbmMemory::DebugWrite(uint64_t byte_address, const void* data, size_t bytes) {
  return dram_.WriteBytes(byte_address, static_cast<const uint8_t*>(data), bytes);
}

void HbmMemory::Trace(VerilatedFstSc* trace) { rtl_->trace(trace, 99); }

}  // namespace tpu::sysc
