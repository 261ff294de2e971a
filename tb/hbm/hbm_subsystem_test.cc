// rtl/hbm/hbm_subsystem.sv with the configuration's geometry (the chip's HBM behind its line port) on one
// device model per channel: random line traffic must be answered once per request, in request order,
// with the data a shadow memory predicts; no timing violation; the backdoor (sysc/hbm_map.h) must see
// what the port wrote and the port what the backdoor wrote.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <random>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "Vhbm_subsystem.h"
#include "sysc/verilated_coverage.h"
#include "sysc/hbm_config.h"
#include "tb/hbm/hbm_dfi.h"
#include "verilated.h"

namespace tpu::hbm_tb {
namespace {

const HbmGeometry kGeometry = ConfiguredHbmGeometry();
const int kLineWords = kGeometry.line_bytes / 4;

class SubsystemBench {
 public:
  SubsystemBench() : context_(std::make_unique<VerilatedContext>()), top_(std::make_unique<Vhbm_subsystem>(context_.get())),
                     dram_(kGeometry), dfi_(&dram_) {
    top_->rst_ni = 0;
    top_->clk_i = 0;
    top_->eval();
    top_->rst_ni = 1;
    top_->eval();
  }

  ~SubsystemBench() { WriteVerilatedCoverage(context_.get()); }

  HbmDram& dram() { return dram_; }
  uint64_t cycle() const { return cycle_; }

  // One cycle with an optional request; returns whether it was accepted and fills `response` (if any).
  bool Step(bool valid, bool write, uint32_t line, const std::vector<uint32_t>& wdata, bool* rsp_valid,
            std::vector<uint32_t>* rsp) {
    top_->req_valid_i = valid;
    top_->req_write_i = write;
    top_->req_addr_i = line;
    for (int i = 0; i < kLineWords; ++i) top_->req_wdata_i[i] = wdata[size_t(i)];
    dfi_.DriveReadData(*top_, cycle_);
    top_->clk_i = 0;
    top_->eval();
    const bool accepted = valid && top_->req_ready_o;
    *rsp_valid = top_->rsp_valid_o;
    if (*rsp_valid) {
      for (int i = 0; i < kLineWords; ++i) (*rsp)[size_t(i)] = top_->rsp_rdata_o[i];
    }
    dfi_.Commands(*top_, cycle_);
    top_->clk_i = 1;
    top_->eval();
    ++cycle_;
    return accepted;
  }

 private:
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Vhbm_subsystem> top_;
  HbmDram dram_;
  HbmDfi<Vhbm_subsystem> dfi_;
  uint64_t cycle_ = 0;
};

std::vector<uint32_t> RandomLine(std::mt19937_64& rng) {
  std::vector<uint32_t> v(static_cast<size_t>(kLineWords));
  for (auto& w : v) w = uint32_t(rng());
  return v;
}

struct Traffic {
  uint64_t requests = 20000;
  int write_pct = 50;
  uint64_t seed = 1;
  bool sequential = false;
  uint64_t stride = 1;  // lines between sequential requests
};

struct Outcome {
  uint64_t answered = 0, mismatches = 0, cycles = 0, backdoor_mismatches = 0;
  std::string first_mismatch;
};

// Lines: a few hot lines shared by every channel (same-line reads and writes back to back), a region of
// a few rows, and lines anywhere in the HBM.
Outcome RunTraffic(const Traffic& t) {
  SubsystemBench bench;
  std::mt19937_64 rng(t.seed);
  const uint64_t lines = kGeometry.bytes() / uint64_t(kGeometry.line_bytes);
  std::unordered_map<uint64_t, std::vector<uint32_t>> shadow;
  auto pick = [&](uint64_t n) -> uint64_t {
    if (t.sequential) return (n * t.stride) % lines;
    switch (rng() % 4) {
      case 0: return rng() % 16;
      case 1: return rng() % 4096;
      case 2: return lines - 1 - rng() % 64;
      default: return rng() % lines;
    }
  };
  // Preload part of what the traffic touches through the backdoor.
  for (int i = 0; i < 2000; ++i) {
    const uint64_t line = pick(uint64_t(i));
    std::vector<uint32_t> v = RandomLine(rng);
    EXPECT_TRUE(bench.dram().WriteBytes(line * uint64_t(kGeometry.line_bytes),
                                        reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4));
    shadow[line] = v;
  }
  Outcome out;
  std::deque<std::vector<uint32_t>> expected;  // empty: a write's response
  std::vector<uint32_t> wdata = RandomLine(rng), rsp(static_cast<size_t>(kLineWords));
  uint64_t issued = 0, line = pick(0);
  bool write = int(rng() % 100) < t.write_pct;
  const uint64_t max_cycles = 400 * t.requests + 100000;
  while (out.answered < t.requests && bench.cycle() < max_cycles) {
    bool rsp_valid = false;
    const bool have = issued < t.requests;
    if (bench.Step(have, write, uint32_t(line), wdata, &rsp_valid, &rsp)) {
      if (write) {
        shadow[line] = wdata;
        expected.emplace_back();
      } else {
        auto it = shadow.find(line);
        expected.push_back(it == shadow.end() ? std::vector<uint32_t>(size_t(kLineWords), 0) : it->second);
      }
      ++issued;
      line = pick(issued);
      write = int(rng() % 100) < t.write_pct;
      wdata = RandomLine(rng);
    }
    if (rsp_valid) {
      if (expected.empty()) {
        ADD_FAILURE() << "response without a request at cycle " << bench.cycle();
        break;
      }
      if (!expected.front().empty() && expected.front() != rsp) {
        if (out.mismatches++ == 0) {
          out.first_mismatch = "request " + std::to_string(out.answered) + " word 0: " + std::to_string(rsp[0]) +
                               " expected " + std::to_string(expected.front()[0]);
        }
      }
      expected.pop_front();
      ++out.answered;
    }
  }
  out.cycles = bench.cycle();
  for (int c = 0; c < kGeometry.channels; ++c) bench.dram().channel(c).CheckRefresh(bench.cycle());
  for (const auto& [l, v] : shadow) {
    std::vector<uint32_t> got(v.size());
    bench.dram().ReadBytes(l * uint64_t(kGeometry.line_bytes), reinterpret_cast<uint8_t*>(got.data()), got.size() * 4);
    if (got != v) ++out.backdoor_mismatches;
  }
  std::string messages;
  for (const auto& m : bench.dram().violation_messages()) messages += m + "\n";
  EXPECT_EQ(bench.dram().violations(), 0u) << messages;
  return out;
}

TEST(HbmSubsystem, RandomLinesAnsweredInOrderWithShadowData) {
  Traffic t;
  const Outcome o = RunTraffic(t);
  EXPECT_EQ(o.answered, t.requests);
  EXPECT_EQ(o.mismatches, 0u) << "first at " << o.first_mismatch;
  EXPECT_EQ(o.backdoor_mismatches, 0u);
  std::printf("[ hbm      ] %d channels, %d-byte lines: %llu random requests in %llu cycles\n", kGeometry.channels,
              kGeometry.line_bytes, (unsigned long long)o.answered, (unsigned long long)o.cycles);
}

TEST(HbmSubsystem, SequentialReadsAndWritesStream) {
  for (int write_pct : {0, 100}) {
    Traffic t;
    t.requests = 8192;
    t.sequential = true;
    t.write_pct = write_pct;
    const Outcome o = RunTraffic(t);
    EXPECT_EQ(o.answered, t.requests);
    EXPECT_EQ(o.mismatches, 0u) << "first at " << o.first_mismatch;
    EXPECT_EQ(o.backdoor_mismatches, 0u);
    const double lines_per_cycle = double(o.answered) / double(o.cycles);
    std::printf("[ hbm      ] sequential %s: %.3f lines/cycle (%.1f bytes/cycle)\n", write_pct ? "writes" : "reads",
                lines_per_cycle, lines_per_cycle * kGeometry.line_bytes);
    // Every channel moves one 64-byte beat per two cycles at best.
    EXPECT_LE(lines_per_cycle * kGeometry.line_bytes, 32.0 * kGeometry.channels);
    EXPECT_GT(lines_per_cycle, 0.0);
  }
}

// Strided streams (rows of a tensor: 8 lines of a [*,1024] f32 row on v2; a stride of a whole channel
// round and of channels^2 units) go through the folded channel index on both sides: the port must read
// what the backdoor preloaded and the backdoor what the port wrote.
TEST(HbmSubsystem, StridedStreamsAgreeWithBackdoor) {
  const uint64_t round = uint64_t(kGeometry.channels) * uint64_t(kGeometry.lines_per_beat());
  // A set: on v2 a round is 8 lines.
  for (uint64_t stride : std::set<uint64_t>{8, round, round * uint64_t(kGeometry.channels), 3 * round + 1}) {
    Traffic t;
    t.requests = 4096;
    t.sequential = true;
    t.stride = stride;
    t.seed = stride;
    const Outcome o = RunTraffic(t);
    EXPECT_EQ(o.answered, t.requests) << "stride " << stride;
    EXPECT_EQ(o.mismatches, 0u) << "stride " << stride << ", first at " << o.first_mismatch;
    EXPECT_EQ(o.backdoor_mismatches, 0u) << "stride " << stride;
    std::printf("[ hbm      ] stride %llu lines, half writes: %.3f lines/cycle\n", (unsigned long long)stride,
                double(o.answered) / double(o.cycles));
  }
}

// A GEMM's DMA instructions (docs/performance.md): stride-8 reads only and writes only, from an idle
// subsystem to the last answer, for one weight tile (128 lines), one slice (1024) and a long stream.
TEST(HbmSubsystem, StrideEightReadAndWriteStreams) {
  for (uint64_t requests : {128, 1024, 8192}) {
    for (int write_pct : {0, 100}) {
      Traffic t;
      t.requests = requests;
      t.sequential = true;
      t.stride = 8;
      t.write_pct = write_pct;
      const Outcome o = RunTraffic(t);
      EXPECT_EQ(o.answered, t.requests);
      EXPECT_EQ(o.mismatches, 0u) << "first at " << o.first_mismatch;
      EXPECT_EQ(o.backdoor_mismatches, 0u);
      std::printf("[ hbm      ] stride 8 lines, %llu %s: %llu cycles, %.3f lines/cycle\n",
                  (unsigned long long)requests, write_pct ? "writes" : "reads", (unsigned long long)o.cycles,
                  double(o.answered) / double(o.cycles));
    }
  }
}

// Lines per channel of `count` lines from `first` with `stride`.
std::vector<uint64_t> ChannelCounts(const HbmGeometry& g, uint64_t first, uint64_t stride, uint64_t count) {
  std::vector<uint64_t> per_channel(size_t(g.channels), 0);
  for (uint64_t i = 0; i < count; ++i) ++per_channel[size_t(g.Locate(first + i * stride, 0).channel)];
  return per_channel;
}

// The folded channel index with the local index unit / channels is a bijection: no two lines of a
// range share a device location, at the bottom and the top of the HBM.
TEST(HbmMapping, LinesOfARangeHaveDistinctLocations) {
  const uint64_t lines = kGeometry.bytes() / uint64_t(kGeometry.line_bytes);
  const uint64_t span = 1u << 15;
  for (uint64_t first : {uint64_t(0), lines / 2 + 12345, lines - span}) {
    std::set<std::tuple<int, int, uint32_t, uint32_t, uint32_t>> seen;
    for (uint64_t line = first; line < first + span; ++line) {
      const HbmGeometry::Location loc = kGeometry.Locate(line, 0);
      ASSERT_GE(loc.channel, 0);
      ASSERT_LT(loc.channel, kGeometry.channels);
      ASSERT_LT(loc.row, 1u << kGeometry.row_bits) << "line " << line;
      ASSERT_TRUE(seen.emplace(loc.channel, loc.bank, loc.row, loc.col, loc.offset).second)
          << "line " << line << " shares its location with another line";
    }
  }
}

// For 1..16 channels: every channel-local index takes each channel exactly once.
TEST(HbmMapping, ChannelFoldIsABijectionForEveryChannelCount) {
  for (int channels : {1, 2, 4, 8, 16}) {
    HbmGeometry g = kGeometry;
    g.channels = channels;
    std::mt19937_64 rng{uint64_t(channels)};
    for (int i = 0; i < 20000; ++i) {
      const uint64_t local = i < 10000 ? uint64_t(i) : (rng() >> 36);  // units stay below 2^32
      std::vector<bool> hit(size_t(channels), false);
      for (int c = 0; c < channels; ++c) {
        const int ch = g.ChannelOf(local * uint64_t(channels) + uint64_t(c));
        ASSERT_GE(ch, 0);
        ASSERT_LT(ch, channels);
        ASSERT_FALSE(hit[size_t(ch)]) << channels << " channels, local index " << local;
        hit[size_t(ch)] = true;
      }
    }
  }
}

// Stride-1 and strided line streams (8 lines: a [*,1024] f32 row on v2; a whole round of channels;
// channels^2 units) spread evenly over all channels, on this configuration and on 2 and 8 channels.
TEST(HbmMapping, StridedStreamsSpreadOverAllChannels) {
  for (int channels : {kGeometry.channels, 2, 8}) {
    HbmGeometry g = kGeometry;
    g.channels = channels;
    const uint64_t round = uint64_t(channels) * uint64_t(g.lines_per_beat());
    for (uint64_t stride : {uint64_t(1), uint64_t(8), round, round * uint64_t(channels)}) {
      for (uint64_t first : {uint64_t(0), uint64_t(1) << 20}) {
        const uint64_t count = 64 * round;
        const std::vector<uint64_t> per_channel = ChannelCounts(g, first, stride, count);
        for (int c = 0; c < channels; ++c) {
          EXPECT_EQ(per_channel[size_t(c)], count / uint64_t(channels))
              << channels << " channels, stride " << stride << ", from line " << first << ", channel " << c;
        }
      }
    }
  }
}

TEST(HbmSubsystem, BackdoorRangesSpanLinesBeatsAndChannels) {
  HbmDram dram(kGeometry);
  std::vector<uint8_t> data(size_t(kGeometry.line_bytes) * 7 + 13), back(data.size());
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + 3);
  const uint64_t address = uint64_t(kGeometry.line_bytes) * 5 + 9;
  ASSERT_TRUE(dram.WriteBytes(address, data.data(), data.size()));
  ASSERT_TRUE(dram.ReadBytes(address, back.data(), back.size()));
  EXPECT_EQ(back, data);
  // The first round of units goes to consecutive channels (no higher bits to fold in).
  std::vector<int> channels;
  for (int u = 0; u < kGeometry.channels; ++u) {
    channels.push_back(kGeometry.Locate(uint64_t(u) * uint64_t(kGeometry.lines_per_beat()), 0).channel);
    EXPECT_EQ(channels.back(), u);
  }
  EXPECT_FALSE(dram.ReadBytes(kGeometry.bytes() - 4, back.data(), 8));
  EXPECT_TRUE(dram.ReadBytes(kGeometry.bytes() - 4, back.data(), 4));
}

}  // namespace
}  // namespace tpu::hbm_tb
