#include "sysc/dram_device.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace tpu {

namespace {
const char* RowName(RowCmd c) {
  switch (c) {
    case RowCmd::kNop: return "NOP";
    case RowCmd::kAct: return "ACT";
    case RowCmd::kPre: return "PRE";
    case RowCmd::kPrea: return "PREA";
    case RowCmd::kRef: return "REF";
  }
  return "?";
}
}  // namespace

DramDevice::DramDevice(const DramConfig& config)
    : config_(config),
      banks_(config.banks()),
      group_last_act_(config.banks() >> config.ba_bits, kNever),
      group_last_rd_(config.banks() >> config.ba_bits, kNever),
      group_last_wr_(config.banks() >> config.ba_bits, kNever),
      read_due_(size_t(config.tCL + config.tBURST + 2)),
      read_data_(read_due_.size() * size_t(config.burst_bytes)) {}

void DramDevice::Fail(uint64_t cycle, const char* cmd, int bank, const std::string& what) {
  ++violations_;
  if (messages_.size() < 16) {
    std::ostringstream os;
    os << "cycle " << cycle << ": " << cmd << " bank " << bank << ": " << what;
    messages_.push_back(os.str());
  }
}

void DramDevice::Require(uint64_t cycle, int64_t since, int need, const char* cmd, int bank, const char* rule) {
  const int64_t elapsed = int64_t(cycle) - since;
  if (elapsed < need) {
    std::ostringstream os;
    os << rule << " violated (" << elapsed << " cycles, needs " << need << ")";
    Fail(cycle, cmd, bank, os.str());
  }
}

void DramDevice::CheckRefresh(uint64_t cycle) {
  // Refreshes owed by `cycle`: one per tREFI; at most max_postponed_refreshes may be outstanding.
  const uint64_t owed = (cycle - std::min(cycle, refresh_base_)) / uint64_t(config_.tREFI);
  if (owed > refreshes_ + uint64_t(config_.max_postponed_refreshes)) {
    std::ostringstream os;
    os << "refresh deadline missed (" << refreshes_ << " REF by cycle " << cycle << ", tREFI "
       << config_.tREFI << ")";
    Fail(cycle, "REF", -1, os.str());
    refreshes_ = owed - config_.max_postponed_refreshes;  // report each miss once
  }
}

void DramDevice::Row(uint64_t cycle, RowCmd cmd, int bank, uint32_t row) {
  const char* name = RowName(cmd);
  if (cmd == RowCmd::kNop) return;
  if (cycle < last_cycle_) Fail(cycle, name, bank, "command cycle went backwards");
  last_cycle_ = cycle;
  ++row_counts_[int(cmd)];
  CheckRefresh(cycle);
  const DramConfig& c = config_;
  if (cmd == RowCmd::kRef) {
    for (int b = 0; b < c.banks(); ++b) {
      if (banks_[b].open) Fail(cycle, name, b, "bank open at refresh");
      Require(cycle, banks_[b].last_pre, c.tRP, name, b, "tRP");
    }
    Require(cycle, last_ref_, c.tRFC, name, -1, "tRFC");
    last_ref_ = int64_t(cycle);
    ++refreshes_;
    return;
  }
  if (cmd == RowCmd::kPrea) {
    for (int b = 0; b < c.banks(); ++b) {
      Bank& k = banks_[b];
      if (!k.open) continue;
      Require(cycle, k.last_act, c.tRAS, name, b, "tRAS");
      Require(cycle, k.last_rd, c.tRTP, name, b, "tRTP");
      Require(cycle, k.last_wr, c.tCWL + c.tBURST + c.tWR, name, b, "tWR");
      k.open = false;
      k.last_pre = int64_t(cycle);
    }
    return;
  }
  if (bank < 0 || bank >= c.banks()) {
    Fail(cycle, name, bank, "bank out of range");
    return;
  }
  Bank& k = banks_[bank];
  const int group = c.group_of(bank);
  if (cmd == RowCmd::kAct) {
    if (row >= (1u << c.row_bits)) Fail(cycle, name, bank, "row out of range");
    if (k.open) Fail(cycle, name, bank, "ACT to an open bank");
    Require(cycle, k.last_pre, c.tRP, name, bank, "tRP");
    Require(cycle, k.last_act, c.tRC, name, bank, "tRC");
    Require(cycle, last_ref_, c.tRFC, name, bank, "tRFC");
    Require(cycle, group_last_act_[group], c.tRRD_L, name, bank, "tRRD_L");
    // The short spacing applies between groups; within a group the long one (checked above) covers it.
    if (last_act_group_ != group) Require(cycle, last_act_any_, c.tRRD_S, name, bank, "tRRD_S");
    Require(cycle, recent_acts_[oldest_act_], c.tFAW, name, bank, "tFAW");
    recent_acts_[oldest_act_] = int64_t(cycle);
    oldest_act_ = (oldest_act_ + 1) % recent_acts_.size();
    k.open = true;
    k.accessed = false;
    k.row = row;
    k.last_act = group_last_act_[group] = last_act_any_ = int64_t(cycle);
    last_act_group_ = group;
    return;
  }
  // PRE of one bank; a PRE to a closed bank is a legal no-op.
  if (k.open) {
    Require(cycle, k.last_act, c.tRAS, name, bank, "tRAS");
    Require(cycle, k.last_rd, c.tRTP, name, bank, "tRTP");
    Require(cycle, k.last_wr, c.tCWL + c.tBURST + c.tWR, name, bank, "tWR");
  }
  k.open = false;
  k.last_pre = last_pre_any_ = int64_t(cycle);
}

void DramDevice::Col(uint64_t cycle, ColCmd cmd, int bank, uint32_t col, const uint8_t* data,
                     const uint8_t* mask) {
  if (cmd == ColCmd::kNop) return;
  const bool is_read = cmd == ColCmd::kRd;
  const char* name = is_read ? "RD" : "WR";
  if (cycle < last_cycle_) Fail(cycle, name, bank, "command cycle went backwards");
  last_cycle_ = cycle;
  ++col_counts_[int(cmd)];
  const DramConfig& c = config_;
  if (bank < 0 || bank >= c.banks() || col >= (1u << c.col_bits)) {
    Fail(cycle, name, bank, "bank or column out of range");
    return;
  }
  Bank& k = banks_[bank];
  const int group = c.group_of(bank);
  if (!k.open) {
    Fail(cycle, name, bank, "column command to a closed bank");
    return;
  }
  Require(cycle, k.last_act, c.tRCD, name, bank, "tRCD");
  if (k.accessed) ++row_hits_;
  k.accessed = true;
  const int ccd_l = std::max(c.tCCD_L, c.tBURST), ccd_s = std::max(c.tCCD_S, c.tBURST);
  if (is_read) {
    Require(cycle, group_last_rd_[group], ccd_l, name, bank, "tCCD_L");
    if (last_rd_group_ != group) Require(cycle, last_rd_any_, ccd_s, name, bank, "tCCD_S");
    Require(cycle, group_last_wr_[group], c.tCWL + c.tBURST + c.tWTR_L, name, bank, "tWTR_L");
    if (last_wr_group_ != group) Require(cycle, last_wr_any_, c.tCWL + c.tBURST + c.tWTR_S, name, bank, "tWTR_S");
    k.last_rd = group_last_rd_[group] = last_rd_any_ = int64_t(cycle);
    last_rd_group_ = group;
    if (read_count_ == read_due_.size()) {
      Fail(cycle, name, bank, "more reads in flight than one per cycle allows");
      return;
    }
    const size_t slot = (read_head_ + read_count_) % read_due_.size();
    read_due_[slot] = cycle + uint64_t(c.tCL + c.tBURST);
    ReadBytes(ByteAddress(bank, k.row, col), &read_data_[slot * size_t(c.burst_bytes)], size_t(c.burst_bytes));
    ++read_count_;
  } else {
    Require(cycle, group_last_wr_[group], ccd_l, name, bank, "tCCD_L");
    if (last_wr_group_ != group) Require(cycle, last_wr_any_, ccd_s, name, bank, "tCCD_S");
    Require(cycle, last_rd_any_, c.tRTW, name, bank, "tRTW");
    k.last_wr = group_last_wr_[group] = last_wr_any_ = int64_t(cycle);
    last_wr_group_ = group;
    const uint64_t addr = ByteAddress(bank, k.row, col);
    if (data != nullptr) {
      uint8_t* page = Page(addr, true);
      const size_t off = addr % kPageBytes;
      for (int i = 0; i < c.burst_bytes; ++i) {
        if (mask == nullptr || ((mask[i / 8] >> (i % 8)) & 1)) page[off + i] = data[i];
      }
    }
  }
}

void DramDevice::Reset(uint64_t cycle) {
  for (Bank& b : banks_) b = Bank();
  std::fill(group_last_act_.begin(), group_last_act_.end(), kNever);
  std::fill(group_last_rd_.begin(), group_last_rd_.end(), kNever);
  std::fill(group_last_wr_.begin(), group_last_wr_.end(), kNever);
  recent_acts_.fill(kNever);
  last_act_any_ = last_rd_any_ = last_wr_any_ = last_ref_ = last_pre_any_ = kNever;
  last_act_group_ = last_rd_group_ = last_wr_group_ = -1;
  read_head_ = read_count_ = 0;
  refresh_base_ = cycle;
  refreshes_ = 0;
  last_cycle_ = cycle;
}

bool DramDevice::PopReadData(uint64_t cycle, uint8_t* out) {
  if (read_count_ == 0 || read_due_[read_head_] > cycle) return false;
  const size_t bytes = size_t(config_.burst_bytes);
  std::memcpy(out, &read_data_[read_head_ * bytes], bytes);
  read_head_ = (read_head_ + 1) % read_due_.size();
  --read_count_;
  return true;
}

uint64_t DramDevice::ByteAddress(int bank, uint32_t row, uint32_t col) const {
  // Device-internal linear address (row-major over banks), independent of the controller's mapping.
  const uint64_t bursts_per_row = 1ull << config_.col_bits;
  const uint64_t index = (uint64_t(row) * config_.banks() + uint64_t(bank)) * bursts_per_row + col;
  return index * uint64_t(config_.burst_bytes);
}

uint8_t* DramDevice::Page(uint64_t addr, bool allocate) {
  const uint64_t key = addr / kPageBytes;
  auto it = pages_.find(key);
  if (it != pages_.end()) return it->second.get();
  if (!allocate) return nullptr;
  auto page = std::make_unique<uint8_t[]>(kPageBytes);
  std::memset(page.get(), 0, kPageBytes);
  uint8_t* raw = page.get();
  pages_.emplace(key, std::move(page));
  return raw;
}

void DramDevice::WriteBytes(uint64_t addr, const uint8_t* src, size_t n) {
  while (n > 0) {
    const size_t off = addr % kPageBytes, chunk = std::min(n, size_t(kPageBytes) - off);
    std::memcpy(Page(addr, true) + off, src, chunk);
    addr += chunk;
    src += chunk;
    n -= chunk;
  }
}

void DramDevice::ReadBytes(uint64_t addr, uint8_t* dst, size_t n) const {
  while (n > 0) {
    const size_t off = addr % kPageBytes, chunk = std::min(n, size_t(kPageBytes) - off);
    auto it = pages_.find(addr / kPageBytes);
    if (it == pages_.end()) std::memset(dst, 0, chunk);
    else std::memcpy(dst, it->second.get() + off, chunk);
    addr += chunk;
    dst += chunk;
    n -= chunk;
  }
}

}  // namespace tpu
