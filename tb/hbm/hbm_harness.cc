#include "tb/hbm/hbm_harness.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>
#include <random>
#include <sstream>
#include <unordered_map>

#include "Vhbm_ctrl.h"
#include "sysc/verilated_coverage.h"
#include "verilated.h"

namespace tpu::hbm_tb {

namespace {

constexpr int kBeatBytes = 64;
constexpr int kBeatWords = kBeatBytes / 4;
// Traffic stays inside a preloaded region so every read has a known, non-trivial expected value.
constexpr uint64_t kRegionLines = 1ull << 18;  // 16 MiB: 1024 rows in each of 16 banks
constexpr int kMaxReadBeatsInFlight = 48;
constexpr int kMaxWritesInFlight = 32;
constexpr uint64_t kLatencyBuckets = 1 << 16;

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Contents of `line` after its `version`-th write (version 0: the preloaded value).
void LineData(uint64_t line, uint32_t version, uint8_t* out) {
  for (int i = 0; i < kBeatBytes / 8; ++i) {
    const uint64_t v = SplitMix(line * 0x100000001B3ull + uint64_t(version) * 0x5851F42D4C957F2Dull + i);
    std::memcpy(out + 8 * i, &v, 8);
  }
}

// Which bytes of each beat a write sets.
enum class Strobe { kFull, kLowHalf, kHighHalf, kScattered };

uint64_t StrobeMask(Strobe s, uint64_t line, uint32_t version) {
  switch (s) {
    case Strobe::kFull: return ~0ull;
    case Strobe::kLowHalf: return 0x00000000FFFFFFFFull;
    case Strobe::kHighHalf: return 0xFFFFFFFF00000000ull;
    case Strobe::kScattered: return SplitMix(line ^ (uint64_t(version) << 40)) | 1;
  }
  return ~0ull;
}

struct Request {
  bool write = false;
  uint64_t line = 0;
  int beats = 1;
  uint32_t id = 0;
  Strobe strobe = Strobe::kFull;
};

// Produces the request stream of one pattern.
class Generator {
 public:
  Generator(Pattern p, uint64_t seed, bool partial_strobes)
      : pattern_(p), rng_(seed), partial_strobes_(partial_strobes) {}
  Request Next() {
    Request r;
    switch (pattern_) {
      case Pattern::kSeqRead:
      case Pattern::kSeqWrite:
        r.write = pattern_ == Pattern::kSeqWrite;
        r.beats = 4;
        r.line = cursor_;
        cursor_ = (cursor_ + 4) % kRegionLines;
        break;
      case Pattern::kMix:
        r.write = (rng_() & 1) != 0;
        r.line = cursor_;
        cursor_ = (cursor_ + 1) % kRegionLines;
        break;
      case Pattern::kRandomRead:
        r.line = rng_() % kRegionLines;
        r.id = uint32_t(count_ % 8);
        break;
      case Pattern::kStrided:
        // 1 KiB stride: with the default mapping every access lands on a new row of another bank.
        r.line = cursor_;
        cursor_ = (cursor_ + 16) % kRegionLines;
        break;
      case Pattern::kManyIds:
        r.beats = 2;
        r.line = (rng_() % kRegionLines) & ~1ull;
        r.id = uint32_t(rng_() % 64);
        break;
      case Pattern::kSameLine:
        // Eight lines in each of two banks (on two rows): reads after writes, writes after reads and
        // writes after writes of the same lines, with bursts that overlap partly.
        r.write = (rng_() & 1) != 0;
        r.beats = 1 + int(rng_() % 4);
        r.line = (rng_() % 8) + ((rng_() & 1) ? (1ull << 12) : 0);
        r.id = uint32_t(rng_() % 4);
        // Half of the writes set only part of each beat (as the chip's narrow lines do): a read is
        // answered from the write queue only where the queued data covers the whole beat.
        if (r.write && partial_strobes_) {
          const uint64_t k = rng_() % 6;
          r.strobe = k < 3 ? Strobe::kFull : k == 3 ? Strobe::kLowHalf : k == 4 ? Strobe::kHighHalf : Strobe::kScattered;
        }
        break;
    }
    ++count_;
    return r;
  }

 private:
  Pattern pattern_;
  std::mt19937_64 rng_;
  bool partial_strobes_;
  uint64_t cursor_ = 0, count_ = 0;
};

struct ReadBurst {
  uint64_t line;
  int beats, done;
  uint64_t issued;
  std::vector<uint8_t> expect;  // beats * 64 bytes: memory as the read is accepted
};
struct WriteBeat {
  std::vector<uint8_t> data;
  uint64_t strobe;
  bool last;
};
struct WriteBurst {
  uint64_t issued;
  std::vector<uint64_t> lines;
};

}  // namespace

const char* PatternName(Pattern p) {
  switch (p) {
    case Pattern::kSeqRead: return "seq_read";
    case Pattern::kSeqWrite: return "seq_write";
    case Pattern::kMix: return "mix_50_50";
    case Pattern::kRandomRead: return "random_64b";
    case Pattern::kStrided: return "strided_1k";
    case Pattern::kManyIds: return "many_ids";
    case Pattern::kSameLine: return "same_line";
  }
  return "?";
}

std::vector<Pattern> AllPatterns() {
  return {Pattern::kSeqRead, Pattern::kSeqWrite, Pattern::kMix,
          Pattern::kRandomRead, Pattern::kStrided, Pattern::kManyIds, Pattern::kSameLine};
}

double BoundPct(Pattern p, const DramConfig& c) {
  const double refresh = 1.0 - double(c.tRFC) / double(c.tREFI);
  // Cycles between row activations the ACT constraints allow: four per tFAW, tRRD_S apart, and each
  // bank once per tRC.
  const double act_interval =
      std::max({double(c.tFAW) / 4.0, double(c.tRRD_S), double(c.tRC) / double(c.banks())});
  auto act_bound = [&](double beats_per_act) {
    return std::min(1.0, beats_per_act * c.tBURST / act_interval);
  };
  switch (p) {
    case Pattern::kSeqRead:
    case Pattern::kSeqWrite:
      return 100.0 * refresh * act_bound(double(1 << c.col_bits));
    case Pattern::kMix:
      // Sixteen bursts per row as for streams; the read/write turnarounds (tRTW, CWL + burst + tWTR)
      // cost a fixed time per switch, which the device lets batches of any length amortize.
      return 100.0 * refresh * act_bound(double(1 << c.col_bits));
    case Pattern::kRandomRead:
    case Pattern::kStrided:
      return 100.0 * refresh * act_bound(1.0);
    case Pattern::kManyIds:
      return 100.0 * refresh * act_bound(2.0);
    case Pattern::kSameLine:
      // One bank, two rows: with requests free to be grouped by row, the row switches amortize too.
      return 100.0 * refresh;
  }
  return 0;
}

std::string RunResult::Line(Pattern p) const {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << "hbm pattern=" << PatternName(p) << " txns=" << transactions << " peak_pct=" << peak_pct
     << " bound_pct=" << bound_pct << " of_bound_pct=" << (bound_pct > 0 ? 100.0 * peak_pct / bound_pct : 0)
     << " lat_mean=" << lat_mean << " lat_p99=" << lat_p99 << " row_hit_pct=" << row_hit_pct
     << " refresh_pct=" << refresh_pct << " pins_pct=" << pins_pct << " mismatches=" << mismatches
     << " violations=" << violations;
  return os.str();
}

RunResult Run(Pattern pattern, const RunOptions& options) {
  const DramConfig config;
  const CtrlParams params;
  DramDevice device(config);
  auto context = std::make_unique<VerilatedContext>();
  auto top = std::make_unique<Vhbm_ctrl>(context.get());
  RunResult result;
  auto fail = [&](const std::string& what) {
    ++result.protocol_errors;
    if (result.messages.size() < 16) result.messages.push_back(what);
  };

  // Controller mapping: line -> (bank, row, column) as rtl/hbm/hbm_ctrl.sv decodes it.
  auto device_address = [&](uint64_t line) {
    const int bg = int((line >> params.bg_lsb) & ((1u << config.bg_bits) - 1));
    const int ba = int((line >> params.ba_lsb) & ((1u << config.ba_bits) - 1));
    const uint32_t row = uint32_t((line >> params.row_lsb) & ((1u << config.row_bits) - 1));
    const uint32_t col = uint32_t((line >> params.col_lsb) & ((1u << config.col_bits) - 1));
    return device.ByteAddress((bg << config.ba_bits) | ba, row, col);
  };
  {
    uint8_t buf[kBeatBytes];
    for (uint64_t line = 0; line < kRegionLines; ++line) {
      LineData(line, 0, buf);
      device.WriteBytes(device_address(line), buf, kBeatBytes);
    }
  }

  Generator gen(pattern, options.seed, options.partial_strobes);
  std::mt19937_64 rng(options.seed ^ 0xABCDEF);
  std::vector<uint32_t> version(kRegionLines, 0);
  // Lines last written with a partial strobe hold a mix of versions: their bytes are kept here.
  std::unordered_map<uint64_t, std::array<uint8_t, kBeatBytes>> mixed;
  auto contents = [&](uint64_t line, uint8_t* out) {
    auto it = mixed.find(line);
    if (it != mixed.end()) std::memcpy(out, it->second.data(), kBeatBytes);
    else LineData(line, version[line], out);
  };
  std::unordered_map<uint64_t, int> reads_in_flight, writes_in_flight;  // per line
  std::unordered_map<uint32_t, std::deque<ReadBurst>> read_bursts;      // per ID, in order
  std::unordered_map<uint32_t, std::deque<WriteBurst>> write_bursts;
  std::deque<WriteBeat> w_beats;
  std::vector<uint64_t> latency_hist(kLatencyBuckets, 0);
  uint64_t latency_sum = 0, latency_count = 0;
  int read_beats_in_flight = 0, writes_outstanding = 0;
  uint64_t issued = 0, completed = 0, beats = 0;
  bool have_next = false, ar_valid = false, aw_valid = false;
  Request next, ar, aw;
  const uint64_t max_cycles = options.max_cycles ? options.max_cycles : 200 * options.transactions + 100000;
  uint64_t first_cycle = 0, last_cycle = 0;
  uint8_t data[kBeatBytes];

  auto record_latency = [&](uint64_t lat) {
    latency_sum += lat;
    ++latency_count;
    ++latency_hist[std::min(lat, kLatencyBuckets - 1)];
  };

  top->rst_ni = 0;
  top->clk_i = 0;
  top->eval();
  top->rst_ni = 1;
  top->eval();

  uint64_t cycle = 0;
  for (; cycle < max_cycles && completed < options.transactions; ++cycle) {
    // Generator: place the next request on AR or AW/W once the hazards and limits allow it.
    if (!have_next && issued < options.transactions) {
      next = gen.Next();
      have_next = true;
    }
    if (have_next) {
      // The other patterns keep same-line requests apart; kSameLine relies on the controller's order.
      bool hazard = false;
      for (int b = 0; b < next.beats && pattern != Pattern::kSameLine; ++b) {
        const uint64_t line = (next.line + b) % kRegionLines;
        if (writes_in_flight.count(line) || (next.write && reads_in_flight.count(line))) hazard = true;
      }
      if (!next.write && !ar_valid && !hazard && read_beats_in_flight + next.beats <= kMaxReadBeatsInFlight) {
        ar = next;
        ar_valid = true;
        have_next = false;
      } else if (next.write && !aw_valid && !hazard && writes_outstanding < kMaxWritesInFlight &&
                 w_beats.size() < 8) {
        aw = next;
        aw_valid = true;
        have_next = false;
      }
    }

    top->ar_valid_i = ar_valid;
    top->ar_id_i = ar.id;
    top->ar_addr_i = uint32_t(ar.line * kBeatBytes);
    top->ar_len_i = ar.beats - 1;
    top->aw_valid_i = aw_valid;
    top->aw_id_i = aw.id;
    top->aw_addr_i = uint32_t(aw.line * kBeatBytes);
    top->aw_len_i = aw.beats - 1;
    top->w_valid_i = !w_beats.empty();
    if (!w_beats.empty()) {
      for (int i = 0; i < kBeatWords; ++i) std::memcpy(&top->w_data_i[i], &w_beats.front().data[4 * i], 4);
      top->w_last_i = w_beats.front().last;
      top->w_strb_i = w_beats.front().strobe;
    }
    const bool accept = options.backpressure_pct == 0 || int(rng() % 100) >= options.backpressure_pct;
    top->r_ready_i = accept;
    top->b_ready_i = accept;
    const bool rd_valid = device.PopReadData(cycle, data);
    top->dfi_rddata_valid_i = rd_valid;
    if (rd_valid) {
      for (int i = 0; i < kBeatWords; ++i) std::memcpy(&top->dfi_rddata_i[i], &data[4 * i], 4);
    }
    top->clk_i = 0;
    top->eval();

    // Sample the handshakes and the DFI commands of this cycle. AR before AW: a read accepted in the
    // same cycle as a write is older than it and must not see its data.
    if (ar_valid && top->ar_ready_o) {
      ReadBurst burst{ar.line, ar.beats, 0, cycle, std::vector<uint8_t>(size_t(ar.beats) * kBeatBytes)};
      for (int b = 0; b < ar.beats; ++b) {
        const uint64_t line = (ar.line + b) % kRegionLines;
        contents(line, &burst.expect[size_t(b) * kBeatBytes]);
        ++reads_in_flight[line];
      }
      read_bursts[ar.id].push_back(std::move(burst));
      read_beats_in_flight += ar.beats;
      if (issued == 0) first_cycle = cycle;
      ++issued;
      ar_valid = false;
    }
    if (aw_valid && top->aw_ready_o) {
      WriteBurst burst{cycle, {}};
      for (int b = 0; b < aw.beats; ++b) {
        const uint64_t line = (aw.line + b) % kRegionLines;
        burst.lines.push_back(line);
        ++writes_in_flight[line];
        std::vector<uint8_t> beat(kBeatBytes);
        std::array<uint8_t, kBeatBytes> before;
        contents(line, before.data());
        LineData(line, ++version[line], beat.data());
        const uint64_t strobe = StrobeMask(aw.strobe, line, version[line]);
        if (strobe == ~0ull) {
          mixed.erase(line);
        } else {
          for (int i = 0; i < kBeatBytes; ++i) {
            if ((strobe >> i) & 1) before[i] = beat[i];
          }
          mixed[line] = before;
        }
        w_beats.push_back({std::move(beat), strobe, b == aw.beats - 1});
      }
      write_bursts[aw.id].push_back(std::move(burst));
      ++writes_outstanding;
      if (issued == 0) first_cycle = cycle;
      ++issued;
      aw_valid = false;
    }
    if (top->w_valid_i && top->w_ready_o) w_beats.pop_front();
    if (top->r_valid_o && top->r_ready_i) {
      auto it = read_bursts.find(top->r_id_o);
      if (it == read_bursts.end() || it->second.empty()) {
        fail("R beat for ID " + std::to_string(top->r_id_o) + " with no read outstanding");
      } else {
        ReadBurst& burst = it->second.front();
        const uint64_t line = (burst.line + burst.done) % kRegionLines;
        for (int i = 0; i < kBeatWords; ++i) std::memcpy(&data[4 * i], &top->r_data_o[i], 4);
        if (std::memcmp(data, &burst.expect[size_t(burst.done) * kBeatBytes], kBeatBytes) != 0) {
          ++result.mismatches;
          if (result.messages.size() < 16) result.messages.push_back("read data mismatch at line " + std::to_string(line));
        }
        record_latency(cycle - burst.issued);
        if (--reads_in_flight[line] == 0) reads_in_flight.erase(line);
        ++burst.done;
        ++beats;
        --read_beats_in_flight;
        if (bool(top->r_last_o) != (burst.done == burst.beats)) fail("RLAST wrong at line " + std::to_string(line));
        if (burst.done == burst.beats) {
          it->second.pop_front();
          ++completed;
          last_cycle = cycle;
        }
      }
    }
    if (top->b_valid_o && top->b_ready_i) {
      auto it = write_bursts.find(top->b_id_o);
      if (it == write_bursts.end() || it->second.empty()) {
        fail("B for ID " + std::to_string(top->b_id_o) + " with no write outstanding");
      } else {
        WriteBurst& burst = it->second.front();
        for (uint64_t line : burst.lines) {
          if (--writes_in_flight[line] == 0) writes_in_flight.erase(line);
        }
        beats += burst.lines.size();
        record_latency(cycle - burst.issued);
        it->second.pop_front();
        --writes_outstanding;
        ++completed;
        last_cycle = cycle;
      }
    }
    std::vector<uint8_t> wdata(kBeatBytes), wmask(kBeatBytes / 8);
    device.Row(cycle, RowCmd(top->dfi_row_cmd_o), top->dfi_row_bank_o, top->dfi_row_addr_o);
    if (top->dfi_col_cmd_o == uint8_t(ColCmd::kWr)) {
      for (int i = 0; i < kBeatWords; ++i) std::memcpy(&wdata[4 * i], &top->dfi_wrdata_o[i], 4);
      const uint64_t mask = top->dfi_wrmask_o;
      std::memcpy(wmask.data(), &mask, 8);
    }
    device.Col(cycle, ColCmd(top->dfi_col_cmd_o), top->dfi_col_bank_o, top->dfi_col_addr_o, wdata.data(),
               wmask.data());
    top->clk_i = 1;
    top->eval();
  }
  // Posted writes: let the write queue drain into the device, then compare what it holds.
  if (completed < options.transactions) fail("timeout after " + std::to_string(cycle) + " cycles");
  device.CheckRefresh(cycle);
  top->final();

  result.transactions = completed;
  result.beats = beats;
  result.cycles = last_cycle > first_cycle ? last_cycle - first_cycle : 1;
  result.violations = device.violations();
  for (const auto& m : device.violation_messages()) result.messages.push_back(m);
  result.peak_pct = 100.0 * double(beats * config.tBURST) / double(result.cycles);
  result.bound_pct = BoundPct(pattern, config);
  result.lat_mean = latency_count ? double(latency_sum) / double(latency_count) : 0;
  uint64_t seen = 0;
  for (uint64_t l = 0; l < kLatencyBuckets; ++l) {
    seen += latency_hist[l];
    if (latency_count && seen * 100 >= latency_count * 99) {
      result.lat_p99 = l;
      break;
    }
  }
  const double columns = double(device.commands(ColCmd::kRd) + device.commands(ColCmd::kWr));
  result.row_hit_pct = columns > 0 ? 100.0 * double(device.row_hits()) / columns : 0;
  result.pins_pct = 100.0 * columns * config.tBURST / double(result.cycles);
  result.refresh_pct = 100.0 * double(device.commands(RowCmd::kRef) * uint64_t(config.tRFC)) / double(cycle);
  WriteVerilatedCoverage(context.get());
  return result;
}

}  // namespace tpu::hbm_tb
