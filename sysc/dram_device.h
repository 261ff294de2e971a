// HBM2 channel device model behind the DFI-like interface of rtl/hbm/hbm_ctrl.sv: sparse storage
// (gigabytes addressable, 4 KiB pages allocated on first write) and a timing checker that validates
// every command against every JEDEC constraint and the refresh deadline. Plain C++ (no SystemC);
// sysc/dram_device_sc.h wraps it for the SystemC platform.
#ifndef SYSC_DRAM_DEVICE_H_
#define SYSC_DRAM_DEVICE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/hbm/hbm_geometry.h"

namespace tpu {

// DramConfig (geometry and timing of one channel) is in sim/hbm/hbm_geometry.h, shared with the
// reference model's HBM twin.

// Command codes as driven on the DFI-like buses.
enum class RowCmd : uint8_t { kNop = 0, kAct = 1, kPre = 2, kPrea = 3, kRef = 4 };
enum class ColCmd : uint8_t { kNop = 0, kRd = 1, kWr = 2 };

class DramDevice {
 public:
  explicit DramDevice(const DramConfig& config = DramConfig());

  // Commands issued in `cycle` (cycles must not decrease). Row and column commands may share a cycle;
  // the row command is applied first. `mask` has one bit per byte of `data` (burst_bytes bytes).
  void Row(uint64_t cycle, RowCmd cmd, int bank, uint32_t row);
  void Col(uint64_t cycle, ColCmd cmd, int bank, uint32_t col, const uint8_t* data = nullptr,
           const uint8_t* mask = nullptr);
  // Read data due in `cycle` (CL + burst after its RD), in RD order; false if none.
  bool PopReadData(uint64_t cycle, uint8_t* out);
  // Checks the refresh deadline up to `cycle`; call at the end of a run.
  void CheckRefresh(uint64_t cycle);

  // Direct access for loading and inspection (no timing).
  void WriteBytes(uint64_t addr, const uint8_t* src, size_t n);
  void ReadBytes(uint64_t addr, uint8_t* dst, size_t n) const;
  uint64_t ByteAddress(int bank, uint32_t row, uint32_t col) const;
  // Forgets every written page (all bytes read as zero again); timing state is kept.
  void ClearStorage() { pages_.clear(); }
  // Power-up state after a controller reset: banks closed, no reads in flight, timing history and the
  // refresh deadline restarted at `cycle` (the device keeps its contents).
  void Reset(uint64_t cycle);

  uint64_t violations() const { return violations_; }
  const std::vector<std::string>& violation_messages() const { return messages_; }
  uint64_t commands(RowCmd c) const { return row_counts_[int(c)]; }
  uint64_t commands(ColCmd c) const { return col_counts_[int(c)]; }
  // Column commands that were not the first one after their row's ACT.
  uint64_t row_hits() const { return row_hits_; }
  size_t pages_allocated() const { return pages_.size(); }
  const DramConfig& config() const { return config_; }

 private:
  static constexpr int64_t kNever = INT64_MIN / 4;
  static constexpr int kPageBytes = 4096;
  struct Bank {
    bool open = false;
    uint32_t row = 0;
    int64_t last_act = kNever, last_pre = kNever, last_rd = kNever, last_wr = kNever;
    bool accessed = false;  // a column command since the ACT: later ones are row hits
  };
  // Records a violation when `cycle - since < need`.
  void Require(uint64_t cycle, int64_t since, int need, const char* cmd, int bank, const char* rule);
  void Fail(uint64_t cycle, const char* cmd, int bank, const std::string& what);
  uint8_t* Page(uint64_t addr, bool allocate);

  DramConfig config_;
  std::vector<Bank> banks_;
  std::vector<int64_t> group_last_act_, group_last_rd_, group_last_wr_;
  std::array<int64_t, 4> recent_acts_{kNever, kNever, kNever, kNever};  // last four ACT cycles, ring
  size_t oldest_act_ = 0;
  int64_t last_act_any_ = kNever, last_rd_any_ = kNever, last_wr_any_ = kNever, last_ref_ = kNever;
  int64_t last_pre_any_ = kNever;
  int last_act_group_ = -1, last_rd_group_ = -1, last_wr_group_ = -1;  // group of the last_*_any_
  uint64_t row_hits_ = 0;
  uint64_t refreshes_ = 0;
  uint64_t refresh_base_ = 0;  // cycle the refresh deadline counts from (the last Reset)
  uint64_t last_cycle_ = 0;
  // Reads in flight, in RD order: a ring of burst-sized slots allocated once (at most one RD per cycle,
  // each due CL + burst cycles later), so a simulated cycle never allocates.
  std::vector<uint64_t> read_due_;
  std::vector<uint8_t> read_data_;
  size_t read_head_ = 0, read_count_ = 0;
  std::unordered_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;
  uint64_t violations_ = 0;
  std::vector<std::string> messages_;
  std::array<uint64_t, 5> row_counts_{};
  std::array<uint64_t, 3> col_counts_{};
};

}  // namespace tpu

#endif  // SYSC_DRAM_DEVICE_H_
