#include "sim/hbm/hbm_twin.h"

#include <algorithm>
#include <stdexcept>

namespace tpu {

namespace {

bool Reached(int64_t t, int64_t now) { return now >= t; }

// Index of the lowest set bit of a non-zero mask.
int Lowest(uint32_t mask) { return __builtin_ctz(mask); }

}  // namespace

HbmTwin::HbmTwin(const HbmGeometry& geometry, const DramConfig& timing)
    : geometry_(geometry),
      timing_(timing),
      queue_depth_(geometry.queue_depth()),
      wq_hi_(geometry.queue_depth() * 3 / 4),
      wq_lo_(geometry.queue_depth() / 4),
      lines_per_beat_(geometry.lines_per_beat()),
      beats_per_line_(geometry.beats_per_line()),
      outputs_(size_t(geometry.channels)),
      inputs_(size_t(geometry.channels)) {
  if (queue_depth_ > kMaxQueue || timing.banks() > kMaxBanks || lines_per_beat_ > 8 ||
      geometry.channels > kMaxChannels) {
    throw std::invalid_argument("HbmTwin: geometry beyond the twin's sizes");
  }
  Reset(0);
}

void HbmTwin::Reset(uint64_t cycle) {
  state_ = State();
  state_.chip_now = cycle;
  state_.channels.assign(size_t(geometry_.channels), Channel());
  state_.w_pending.assign(size_t(geometry_.channels), false);
  state_.w_beat.assign(size_t(geometry_.channels), 0);
  state_.w_strobe.assign(size_t(geometry_.channels), 0);
  ahead_valid_ = false;
}

HbmTwin::ChannelOutput HbmTwin::Outputs(const Channel& c, int64_t now) const {
  ChannelOutput out;
  const uint32_t all = (uint32_t{1} << queue_depth_) - 1;
  if ((c.rq_valid & all) != all) out.rq_free = Lowest(~c.rq_valid);
  if ((c.wq_valid & all) != all) out.wq_free = Lowest(~c.wq_valid);
  out.wq_count = __builtin_popcount(c.wq_valid);
  out.rd_push = c.rd_busy && !c.rd_wait && out.rq_free >= 0;
  out.rd_burst_done = out.rd_push && c.rd_left == 0;
  out.ar_ready = !c.rd_busy || out.rd_burst_done;
  out.w_ready = c.wr_busy && !c.wr_wait && out.wq_free >= 0 && c.bq_count < kWriteResponses;
  out.r_valid = c.rsp_alloc != 0 && c.rsp_have[size_t(c.rsp_head)];
  out.r_id = c.rsp_id[size_t(c.rsp_head)];
  out.b_valid = c.bq_count != 0 && c.bq_left[size_t(c.bq_head)] == 0;
  out.b_id = c.bq_id[size_t(c.bq_head)];
  out.rddata_valid = c.rd_count != 0 && c.rd_due[size_t(c.rd_head)] <= now;
  return out;
}

void HbmTwin::StepChannel(Channel& c, int64_t now, const ChannelOutput& out, const ChannelInput& in,
                          Counters& counters) const {
  const DramConfig& t = timing_;
  const int q = queue_depth_;
  const bool wr_push = in.w && out.w_ready;
  const bool wr_burst_done = wr_push && in.w_last;
  const bool nothing_queued = c.wq_valid == 0 && c.rq_valid == 0 && !c.rd_busy && !c.wr_busy &&
                              c.rsp_alloc == 0 && c.bq_count == 0 && c.rd_count == 0 && !in.ar && !in.aw;
  if (nothing_queued && !c.ref_pending) {
    // Only the refresh interval runs.
    c.write_mode = false;
    if (c.refi_count == t.tREFI - 1) {
      c.ref_pending = true;
      c.refi_count = 0;
    } else {
      ++c.refi_count;
    }
    return;
  }

  // ---- Scheduler: what each entry may do in this cycle (hbm_ctrl.sv's always_comb).
  const bool faw_ok = Reached(c.faw[0] + t.tFAW, now);
  const bool rsp_credit = c.rsp_alloc < kResponseSlots;
  bool rq_blocked[kMaxQueue], rq_bank_wait[kMaxQueue], rq_fwd_src[kMaxQueue], rq_fwd_ready[kMaxQueue];
  bool rq_hit[kMaxQueue], wq_blocked[kMaxQueue], wq_wait_rd[kMaxQueue], wq_hit[kMaxQueue];
  uint64_t bank_hit_pending = 0;
  uint64_t wq_src_of_read = 0;
  bool rq_any_unblocked = false, rq_any_wait_wr = false, wq_any_unblocked = false;
  for (uint32_t m = c.rq_valid; m != 0; m &= m - 1) {
    const int i = Lowest(m);
    const ReadEntry& e = c.rq[size_t(i)];
    rq_blocked[i] = (e.older_same_id & c.rq_valid) != 0;
    rq_bank_wait[i] = (e.older_same_bank & c.rq_valid) != 0;
    rq_fwd_src[i] = e.src_valid && c.wq[e.src].strobe == (1u << lines_per_beat_) - 1;
    rq_fwd_ready[i] = rq_fwd_src[i] && !rq_blocked[i];
    if (e.src_valid) {
      wq_src_of_read |= uint64_t{1} << e.src;
      rq_blocked[i] = true;
    }
    const Bank& b = c.banks[e.bank];
    rq_hit[i] = b.open && b.row == e.row;
    if (!rq_blocked[i]) rq_any_unblocked = true;
    if (e.src_valid && !rq_fwd_src[i]) rq_any_wait_wr = true;
    if (!e.src_valid && !rq_bank_wait[i] && rq_hit[i] && !c.write_mode) bank_hit_pending |= uint64_t{1} << e.bank;
  }
  for (uint32_t m = c.wq_valid; m != 0; m &= m - 1) {
    const int i = Lowest(m);
    const WriteEntry& e = c.wq[size_t(i)];
    wq_wait_rd[i] = e.read_wait != 0;
    wq_blocked[i] = e.prev_valid || wq_wait_rd[i];
    const Bank& b = c.banks[e.bank];
    wq_hit[i] = b.open && b.row == e.row;
    if (!wq_blocked[i]) wq_any_unblocked = true;
    if (!wq_wait_rd[i] && wq_hit[i] && c.write_mode) bank_hit_pending |= uint64_t{1} << e.bank;
  }

  // Oldest ready first: column bus for hits, row bus for misses (entries waiting for the other kind last).
  int rd_issue = -1, wr_issue = -1, row_entry = -1, fwd = -1;
  bool row_from_reads = false, row_sel_waiting = true;
  auto row_candidate = [&](bool open, bool hit, bool waits_for_other, int bank) {
    if (hit) return false;
    if (open) return !waits_for_other && !(bank_hit_pending >> bank & 1) && Reached(c.banks[size_t(bank)].pre_ok, now);
    return faw_ok && Reached(c.banks[size_t(bank)].act_ok, now);
  };
  // A better row candidate: not waiting for the other kind beats waiting; then the older one.
  auto take_row = [&](int i, bool waiting, uint64_t age, uint64_t best_age) {
    if (row_entry < 0 || (row_sel_waiting && !waiting) || (row_sel_waiting == waiting && age < best_age)) {
      row_entry = i;
      row_sel_waiting = waiting;
    }
  };
  if (!c.write_mode && !c.ref_pending) {
    for (uint32_t m = c.rq_valid; m != 0; m &= m - 1) {
      const int i = Lowest(m);
      const ReadEntry& e = c.rq[size_t(i)];
      const Bank& b = c.banks[e.bank];
      if (!rq_blocked[i] && rq_hit[i] && rsp_credit && Reached(b.col_ok, now) &&
          Reached(c.rd_ok[size_t(t.group_of(e.bank))], now)) {
        if (rd_issue < 0 || e.age < c.rq[size_t(rd_issue)].age) rd_issue = i;
      }
      if (!rq_fwd_src[i] && row_candidate(b.open, rq_hit[i], e.src_valid, e.bank)) {
        take_row(i, e.src_valid, e.age, row_entry >= 0 ? c.rq[size_t(row_entry)].age : 0);
      }
    }
    row_from_reads = true;
  } else if (c.write_mode && !c.ref_pending) {
    for (uint32_t m = c.wq_valid; m != 0; m &= m - 1) {
      const int i = Lowest(m);
      const WriteEntry& e = c.wq[size_t(i)];
      const Bank& b = c.banks[e.bank];
      if (!wq_blocked[i] && wq_hit[i] && Reached(b.col_ok, now) && Reached(c.wr_ok[size_t(t.group_of(e.bank))], now)) {
        if (wr_issue < 0 || e.age < c.wq[size_t(wr_issue)].age) wr_issue = i;
      }
      if (row_candidate(b.open, wq_hit[i], wq_wait_rd[i], e.bank)) {
        take_row(i, wq_wait_rd[i], e.age, row_entry >= 0 ? c.wq[size_t(row_entry)].age : 0);
      }
    }
  }
  // Forwarding: the oldest read whose source covers its beat, in a cycle without RD.
  for (uint32_t m = c.rq_valid; m != 0; m &= m - 1) {
    const int i = Lowest(m);
    if (rq_fwd_ready[i] && (fwd < 0 || c.rq[size_t(i)].age < c.rq[size_t(fwd)].age)) fwd = i;
  }
  const bool fwd_fire = fwd >= 0 && rsp_credit && rd_issue < 0;

  enum class Row { kNop, kAct, kPre, kPrea, kRef } row_cmd = Row::kNop;
  int row_bank = 0;
  uint32_t row_addr = 0;
  if (row_entry >= 0) {
    row_bank = row_from_reads ? c.rq[size_t(row_entry)].bank : c.wq[size_t(row_entry)].bank;
    row_addr = row_from_reads ? c.rq[size_t(row_entry)].row : c.wq[size_t(row_entry)].row;
    row_cmd = c.banks[size_t(row_bank)].open ? Row::kPre : Row::kAct;
  }
  const int banks = t.banks();
  if (c.ref_pending) {
    bool all_closed = true, prea_ok = true;
    for (int b = 0; b < banks; ++b) {
      if (!c.banks[size_t(b)].open) continue;
      all_closed = false;
      if (!Reached(c.banks[size_t(b)].pre_ok, now)) prea_ok = false;
    }
    if (!all_closed) row_cmd = prea_ok ? Row::kPrea : Row::kNop;
    else row_cmd = Reached(c.ref_ok, now) ? Row::kRef : Row::kNop;
  }

  // ---- Timing state.
  const int groups = banks >> t.ba_bits;
  switch (row_cmd) {
    case Row::kAct: {
      const int group = t.group_of(row_bank);
      for (int b = 0; b < banks; ++b) {
        const int gap = b == row_bank ? t.tRC : (t.group_of(b) == group ? t.tRRD_L : t.tRRD_S);
        c.banks[size_t(b)].act_ok = std::max(c.banks[size_t(b)].act_ok, now + gap);
      }
      Bank& bank = c.banks[size_t(row_bank)];
      bank.open = true;
      bank.row = row_addr;
      bank.col_ok = now + t.tRCD;
      bank.pre_ok = now + t.tRAS;
      c.faw = {c.faw[1], c.faw[2], c.faw[3], now};
      ++counters.activates;
      break;
    }
    case Row::kPre: {
      Bank& bank = c.banks[size_t(row_bank)];
      bank.open = false;
      bank.act_ok = std::max(bank.act_ok, now + t.tRP);
      c.ref_ok = std::max(c.ref_ok, now + t.tRP);
      break;
    }
    case Row::kPrea:
      for (int b = 0; b < banks; ++b) {
        c.banks[size_t(b)].act_ok = std::max(c.banks[size_t(b)].act_ok, now + t.tRP);
        c.banks[size_t(b)].open = false;
      }
      c.ref_ok = std::max(c.ref_ok, now + t.tRP);
      break;
    case Row::kRef:
      for (int b = 0; b < banks; ++b) c.banks[size_t(b)].act_ok = std::max(c.banks[size_t(b)].act_ok, now + t.tRFC);
      c.ref_ok = now + t.tRFC;
      ++counters.refreshes;
      break;
    case Row::kNop:
      break;
  }
  const int ccd_s = std::max(t.tCCD_S, t.tBURST), ccd_l = std::max(t.tCCD_L, t.tBURST);
  if (rd_issue >= 0) {
    const int bank = c.rq[size_t(rd_issue)].bank, group = t.group_of(bank);
    for (int g = 0; g < groups; ++g) {
      c.rd_ok[size_t(g)] = std::max(c.rd_ok[size_t(g)], now + (g == group ? ccd_l : ccd_s));
      c.wr_ok[size_t(g)] = std::max(c.wr_ok[size_t(g)], now + t.tRTW);
    }
    c.banks[size_t(bank)].pre_ok = std::max(c.banks[size_t(bank)].pre_ok, now + t.tRTP);
  }
  if (wr_issue >= 0) {
    const int bank = c.wq[size_t(wr_issue)].bank, group = t.group_of(bank);
    for (int g = 0; g < groups; ++g) {
      c.wr_ok[size_t(g)] = std::max(c.wr_ok[size_t(g)], now + (g == group ? ccd_l : ccd_s));
      c.rd_ok[size_t(g)] =
          std::max(c.rd_ok[size_t(g)], now + t.tCWL + t.tBURST + (g == group ? t.tWTR_L : t.tWTR_S));
    }
    c.banks[size_t(bank)].pre_ok = std::max(c.banks[size_t(bank)].pre_ok, now + t.tCWL + t.tBURST + t.tWR);
  }
  // Write draining with hysteresis between the watermarks.
  if (!c.write_mode) {
    c.write_mode = wq_any_unblocked && (out.wq_count >= wq_hi_ || !rq_any_unblocked || rq_any_wait_wr);
  } else {
    c.write_mode = wq_any_unblocked && !(out.wq_count <= wq_lo_ && rq_any_unblocked && !rq_any_wait_wr);
  }
  if (c.refi_count == t.tREFI - 1) c.ref_pending = true;
  if (row_cmd == Row::kRef) c.ref_pending = false;
  c.refi_count = c.refi_count == t.tREFI - 1 ? 0 : c.refi_count + 1;

  // ---- Same-line lookups for the beats pushed now: the youngest queued write of the line not issued now.
  int rd_src = -1, wr_prev = -1;
  for (uint32_t m = c.wq_valid; m != 0; m &= m - 1) {
    const int j = Lowest(m);
    const WriteEntry& e = c.wq[size_t(j)];
    if (!e.newest || j == wr_issue) continue;
    if (out.rd_push && e.beat == c.rd_beat) rd_src = j;
    if (wr_push && e.beat == c.wr_beat) wr_prev = j;
  }
  const bool wr_merge = wr_push && wr_prev >= 0 && !(wq_src_of_read >> wr_prev & 1) &&
                        !(out.rd_push && c.rd_beat == c.wr_beat);

  // ---- Read queue and responses.
  uint32_t rq_leave = 0;
  if (rd_issue >= 0) {
    const ReadEntry& e = c.rq[size_t(rd_issue)];
    rq_leave |= 1u << rd_issue;
    const int slot = c.rsp_tail;
    c.rsp_id[size_t(slot)] = e.id;
    c.rsp_last[size_t(slot)] = e.last;
    const int ring = (c.rd_head + c.rd_count) % kResponseSlots;
    c.rd_slot[size_t(ring)] = uint8_t(slot);
    // The device's data, in the cycle whose closing edge the controller samples it with (the platform
    // drives DFI read data and the subsystem's clock edge together: sysc/hbm_memory.cc).
    c.rd_due[size_t(ring)] = now + t.tCL + t.tBURST;
    ++c.rd_count;
    c.rsp_tail = (c.rsp_tail + 1) % kResponseSlots;
    ++c.rsp_alloc;
    ++counters.reads;
  } else if (fwd_fire) {
    const ReadEntry& e = c.rq[size_t(fwd)];
    rq_leave |= 1u << fwd;
    const int slot = c.rsp_tail;
    c.rsp_id[size_t(slot)] = e.id;
    c.rsp_last[size_t(slot)] = e.last;
    c.rsp_have[size_t(slot)] = true;
    c.rsp_tail = (c.rsp_tail + 1) % kResponseSlots;
    ++c.rsp_alloc;
    ++counters.forwarded;
  }
  if (out.rddata_valid) {
    c.rsp_have[c.rd_slot[size_t(c.rd_head)]] = true;
    c.rd_head = (c.rd_head + 1) % kResponseSlots;
    --c.rd_count;
  }
  if (out.r_valid) {
    c.rsp_have[size_t(c.rsp_head)] = false;
    c.rsp_head = (c.rsp_head + 1) % kResponseSlots;
    --c.rsp_alloc;
  }
  if (wr_issue >= 0) {
    for (int i = 0; i < q; ++i) {
      if (c.rq[size_t(i)].src_valid && c.rq[size_t(i)].src == wr_issue) c.rq[size_t(i)].src_valid = false;
      if (c.wq[size_t(i)].prev_valid && c.wq[size_t(i)].prev == wr_issue) c.wq[size_t(i)].prev_valid = false;
    }
  }
  if (rq_leave != 0) {
    c.rq_valid &= ~rq_leave;
    for (int i = 0; i < q; ++i) {
      c.wq[size_t(i)].read_wait &= ~rq_leave;
      c.rq[size_t(i)].older_same_id &= ~rq_leave;
      c.rq[size_t(i)].older_same_bank &= ~rq_leave;
    }
  }
  if (out.rd_push) {
    ReadEntry& e = c.rq[size_t(out.rq_free)];
    const HbmGeometry::BeatFields fields = geometry_.SplitBeat(c.rd_beat);
    // Every entry still queued is older than the new one.
    e.older_same_id = e.older_same_bank = 0;
    for (uint32_t m = c.rq_valid; m != 0; m &= m - 1) {
      const int j = Lowest(m);
      if (c.rq[size_t(j)].id != c.rd_id) continue;
      e.older_same_id |= 1u << j;
      if (c.rq[size_t(j)].bank == fields.bank) e.older_same_bank |= 1u << j;
    }
    c.rq_valid |= 1u << out.rq_free;
    e.id = c.rd_id;
    e.beat = c.rd_beat;
    e.bank = uint8_t(fields.bank);
    e.row = fields.row;
    e.last = c.rd_left == 0;
    e.src_valid = rd_src >= 0;
    e.src = uint8_t(rd_src >= 0 ? rd_src : 0);
    e.age = c.next_age++;
  }

  // ---- Write queue and write responses.
  if (wr_issue >= 0) {
    c.wq_valid &= ~(1u << wr_issue);
    --c.bq_left[c.wq[size_t(wr_issue)].burst];
    ++counters.writes;
  }
  if (wr_merge) {
    c.wq[size_t(wr_prev)].strobe |= in.w_strobe;
    ++counters.merged;
  } else if (wr_push) {
    WriteEntry& e = c.wq[size_t(out.wq_free)];
    const HbmGeometry::BeatFields fields = geometry_.SplitBeat(c.wr_beat);
    c.wq_valid |= 1u << out.wq_free;
    e.beat = c.wr_beat;
    e.bank = uint8_t(fields.bank);
    e.row = fields.row;
    e.newest = true;
    if (wr_prev >= 0) c.wq[size_t(wr_prev)].newest = false;
    e.strobe = in.w_strobe;
    e.prev_valid = wr_prev >= 0;
    e.prev = uint8_t(wr_prev >= 0 ? wr_prev : 0);
    e.age = c.next_age++;
    e.burst = uint8_t(c.bq_tail);
    ++c.bq_left[size_t(c.bq_tail)];
    // The queued reads of its line (one pushed in this cycle too) are older than the new write.
    e.read_wait = 0;
    for (uint32_t m = c.rq_valid; m != 0; m &= m - 1) {
      if (c.rq[size_t(Lowest(m))].beat == c.wr_beat) e.read_wait |= 1u << Lowest(m);
    }
  }
  if (out.b_valid) {
    c.bq_head = (c.bq_head + 1) % kWriteResponses;
    --c.bq_count;
  }
  if (wr_burst_done) {
    c.bq_id[size_t(c.bq_tail)] = c.wr_id;
    c.bq_tail = (c.bq_tail + 1) % kWriteResponses;
    ++c.bq_count;
  }

  // ---- Burst splitters (one beat a cycle; same-line order between the two follows acceptance).
  const bool ar_accept = in.ar && out.ar_ready;
  const bool aw_accept = in.aw && (!c.wr_busy || wr_burst_done);
  if (ar_accept) c.rd_wait = c.wr_busy && !wr_burst_done;
  else if (wr_burst_done) c.rd_wait = false;
  if (aw_accept) c.wr_wait = ar_accept || (c.rd_busy && !out.rd_burst_done);
  else if (out.rd_burst_done) c.wr_wait = false;
  if (ar_accept) {
    c.rd_busy = true;
    c.rd_id = in.id;
    c.rd_beat = in.beat;
    c.rd_left = uint32_t(beats_per_line_ - 1);
  } else if (out.rd_push) {
    ++c.rd_beat;
    if (c.rd_left == 0) c.rd_busy = false;
    else --c.rd_left;
  }
  if (aw_accept) {
    c.wr_busy = true;
    c.wr_id = in.id;
    c.wr_beat = in.beat;
  } else if (wr_push) {
    ++c.wr_beat;
    if (in.w_last) c.wr_busy = false;
  }
}

bool HbmTwin::Cycle(State& s, const PortRequest* request) const {
  const int channels = geometry_.channels;
  const int64_t now = s.hbm_now;
  std::vector<ChannelOutput>& out = outputs_;
  for (int c = 0; c < channels; ++c) out[size_t(c)] = Outputs(s.channels[size_t(c)], now);

  // Adapter: W beats of the pending write lines, then the buffered request to its channel.
  std::vector<ChannelInput>& in = inputs_;
  bool w_free[kMaxChannels];
  for (int c = 0; c < channels; ++c) {
    in[size_t(c)] = ChannelInput();
    in[c].w = s.w_pending[size_t(c)];
    in[c].w_last = beats_per_line_ == 1 || s.w_beat[size_t(c)] == beats_per_line_ - 1;
    in[c].w_strobe = beats_per_line_ > 1 ? uint8_t((1u << lines_per_beat_) - 1) : s.w_strobe[size_t(c)];
    w_free[c] = !s.w_pending[size_t(c)] || (out[c].w_ready && in[c].w_last);
  }
  const bool tag_free = s.tag_tail - s.tag_head != uint64_t(kTags);
  int ch = 0;
  bool accept = false;
  if (s.buf_valid) {
    const uint64_t unit = s.buf_line / uint64_t(lines_per_beat_);
    ch = geometry_.ChannelOf(unit);
    const Channel& target = s.channels[size_t(ch)];
    const bool aw_ready = !target.wr_busy || (in[ch].w && out[ch].w_ready && in[ch].w_last);
    const bool chan_ready = s.buf_write ? (aw_ready && w_free[ch]) : out[ch].ar_ready;
    accept = tag_free && chan_ready;
    if (accept) {
      ChannelInput& input = in[ch];
      (s.buf_write ? input.aw : input.ar) = true;
      input.id = uint8_t(s.tag_tail % kTags);
      input.beat = uint32_t(geometry_.LocalBeat(s.buf_line));
    }
  }
  const bool req_ready = !s.buf_valid || accept;
  // The answer of this cycle, from the reorder buffer's state.
  const bool rsp_valid = s.tag_head != s.tag_tail && s.tag_done[size_t(s.tag_head % kTags)];

  for (int c = 0; c < channels; ++c) StepChannel(s.channels[size_t(c)], now, out[c], in[c], s.counters);

  // Adapter state.
  for (int c = 0; c < channels; ++c) {
    if (out[c].r_valid) {
      uint8_t& beats = s.tag_beats[out[c].r_id];
      if (beats_per_line_ == 1 || beats == beats_per_line_ - 1) s.tag_done[out[c].r_id] = true;
      ++beats;
    }
    if (out[c].b_valid) s.tag_done[out[c].b_id] = true;
  }
  if (rsp_valid) {
    s.tag_done[size_t(s.tag_head % kTags)] = false;
    ++s.tag_head;
    ++s.answered;
    s.last_answer_cycle = s.chip_now;
    while (s.streams_answered < s.streams && s.stream_end[s.streams_answered % kStreamsKept] <= s.answered) {
      s.stream_answer[s.streams_answered % kStreamsKept] = s.chip_now;
      ++s.streams_answered;
    }
  }
  for (int c = 0; c < channels; ++c) {
    if (s.w_pending[size_t(c)] && out[c].w_ready) {
      ++s.w_beat[size_t(c)];
      if (in[c].w_last) {
        s.w_pending[size_t(c)] = false;
        s.w_beat[size_t(c)] = 0;
      }
    }
  }
  if (accept) {
    s.tag_beats[size_t(s.tag_tail % kTags)] = 0;
    ++s.tag_tail;
    if (s.buf_write) {
      s.w_pending[size_t(ch)] = true;
      s.w_strobe[size_t(ch)] = uint8_t(1u << (s.buf_line % uint64_t(lines_per_beat_)));
    }
  }
  const bool taken = request != nullptr && req_ready;
  if (taken) {
    s.buf_valid = true;
    s.buf_write = request->write;
    s.buf_line = request->line;
    ++s.taken;
    ++s.counters.requests;
  } else if (accept) {
    s.buf_valid = false;
  }
  ++s.chip_now;
  ++s.hbm_now;
  ++s.counters.clocked_cycles;
  return taken;
}

void HbmTwin::StepWithoutRequest(State& s, uint64_t limit) const {
  // Quiet: no request buffered, no answer at the head of the reorder buffer, and every channel with
  // nothing queued or being split, no write response, no refresh pending and only RDs whose data has
  // not arrived: then only the devices' read pipelines and the refresh counters move.
  int64_t quiet = int64_t(limit);
  const bool answer_due = s.tag_head != s.tag_tail && s.tag_done[size_t(s.tag_head % kTags)];
  if (s.buf_valid || answer_due) quiet = 1;
  for (size_t c = 0; c < s.channels.size() && quiet > 1; ++c) {
    const Channel& ch = s.channels[c];
    if (ch.rq_valid != 0 || ch.wq_valid != 0 || ch.rd_busy || ch.wr_busy || ch.bq_count != 0 || ch.ref_pending ||
        s.w_pending[c] || ch.rsp_alloc != ch.rd_count) {
      quiet = 1;
      break;
    }
    if (ch.rd_count != 0) quiet = std::min(quiet, ch.rd_due[size_t(ch.rd_head)] - s.hbm_now);
    quiet = std::min(quiet, int64_t(timing_.tREFI - 1 - ch.refi_count));
  }
  if (quiet <= 1) {
    Cycle(s, nullptr);
    return;
  }
  for (Channel& ch : s.channels) {
    ch.refi_count += int(quiet);
    ch.write_mode = false;
  }
  s.chip_now += uint64_t(quiet);
  s.hbm_now += quiet;
  s.counters.clocked_cycles += uint64_t(quiet);
}

void HbmTwin::AdvanceTo(State& s, uint64_t cycle) const {
  while (s.chip_now < cycle) {
    if (NothingInFlight(s)) {  // nothing in flight: the subsystem's clock stands still
      s.chip_now = cycle;
      return;
    }
    StepWithoutRequest(s, cycle - s.chip_now);
  }
}

HbmTwin::StreamTiming HbmTwin::Stream(uint64_t start, bool write, uint64_t first_line, uint64_t count,
                                      uint64_t stride) {
  StreamTiming timing;
  if (ahead_valid_ && start >= ahead_.chip_now) std::swap(state_, ahead_);
  ahead_valid_ = false;
  AdvanceTo(state_, start);
  if (count == 0) {
    timing.last_accepted = timing.last_answer = state_.chip_now;
    return timing;
  }
  for (uint64_t i = 0; i < count; ++i) {
    const PortRequest request{write, first_line + i * stride};
    while (!Cycle(state_, &request)) {
    }
  }
  timing.last_accepted = state_.chip_now - 1;
  timing.stream = state_.streams;
  if (state_.streams - state_.streams_answered == kStreamsKept) ++state_.streams_answered;  // forget the oldest
  state_.stream_end[state_.streams % kStreamsKept] = state_.taken;
  ++state_.streams;
  ahead_ = state_;
  while (ahead_.answered < state_.taken) StepWithoutRequest(ahead_, ~uint64_t{0} >> 2);
  ahead_valid_ = true;
  timing.last_answer = ahead_.last_answer_cycle;
  return timing;
}

uint64_t HbmTwin::LastAnswer(uint64_t stream) const {
  const State& s = ahead_valid_ ? ahead_ : state_;
  if (stream >= s.streams_answered || stream + kStreamsKept < s.streams) return 0;
  return s.stream_answer[stream % kStreamsKept];
}

void HbmTwin::RunUntil(uint64_t cycle) {
  if (ahead_valid_ && cycle >= ahead_.chip_now) std::swap(state_, ahead_);
  ahead_valid_ = false;
  AdvanceTo(state_, cycle);
}

int HbmTwin::queued_reads(int channel) const {
  return __builtin_popcount(state_.channels[size_t(channel)].rq_valid);
}

int HbmTwin::queued_writes(int channel) const {
  return __builtin_popcount(state_.channels[size_t(channel)].wq_valid);
}

}  // namespace tpu
