#include "sim/hbm/hbm_twin.h"

#include <gtest/gtest.h>

#include <vector>

namespace tpu {
namespace {

HbmGeometry Tiny() { return HbmGeometry{}; }  // 2 channels, 32-byte lines, 2048 rows

HbmGeometry V2() {
  HbmGeometry g;
  g.channels = 8;
  g.line_bytes = 512;
  g.row_bits = 16;
  return g;
}

struct Expected {
  uint64_t line;
  int channel, bank;
  uint32_t row, col, offset;
};

void ExpectLocations(const HbmGeometry& g, const std::vector<Expected>& expected) {
  for (const Expected& e : expected) {
    const HbmGeometry::Location loc = g.Locate(e.line, 0);
    EXPECT_EQ(loc.channel, e.channel) << "line " << e.line;
    EXPECT_EQ(loc.bank, e.bank) << "line " << e.line;
    EXPECT_EQ(loc.row, e.row) << "line " << e.line;
    EXPECT_EQ(loc.col, e.col) << "line " << e.line;
    EXPECT_EQ(loc.offset, e.offset) << "line " << e.line;
  }
}

// Values worked out by hand from hbm_line_adapter.sv (unit = line / LPB, channel = XOR fold of the
// unit's log2(CHANNELS)-bit groups, beat = (unit / CHANNELS) * BPL) and hbm_ctrl.sv's field split of
// the beat (column [3:0], bank group [5:4], bank [7:6], row above).
TEST(HbmTwinMapping, TinyLinesDecodeAsTheAdapterAndController) {
  ExpectLocations(Tiny(), {
                              {0, 0, 0, 0, 0, 0},
                              {1, 0, 0, 0, 0, 32},      // second line of unit 0's beat
                              {2, 1, 0, 0, 0, 0},       // unit 1: parity 1
                              {4, 1, 0, 0, 1, 0},       // unit 2: parity 1, beat 1
                              {6, 0, 0, 0, 1, 0},       // unit 3: parity 0, beat 1
                              {64, 1, 4, 0, 0, 0},      // unit 32: beat 16 = bank group 1
                              {1024, 1, 0, 1, 0, 0},    // unit 512: beat 256 = row 1
                              {1026, 0, 0, 1, 0, 0},    // unit 513: parity 0
                              {1000, 0, 15, 0, 10, 0},  // unit 500 (6 ones): beat 250
                          });
}

TEST(HbmTwinMapping, V2LinesDecodeAsTheAdapterAndController) {
  ExpectLocations(V2(), {
                            {0, 0, 0, 0, 0, 0},
                            {1, 1, 0, 0, 0, 0},
                            {8, 1, 0, 0, 8, 0},    // 8 ^ 1 = 9 -> channel 1; beat 8
                            {9, 0, 0, 0, 8, 0},    // 9 ^ 1 = 8 -> channel 0
                            {100, 1, 9, 0, 0, 0},  // 4 ^ 4 ^ 1: channel 1; beat 96 = group 2, bank 1
                        });
}

// The line of `channel` whose (first) beat is `beat` (tiny: the unit with that local index and channel).
uint64_t LineAt(const HbmGeometry& g, int channel, uint64_t beat) {
  const uint64_t local = beat / uint64_t(g.beats_per_line());
  for (uint64_t unit = local * uint64_t(g.channels);; ++unit) {
    if (g.ChannelOf(unit) == channel) return unit * uint64_t(g.lines_per_beat());
  }
}

uint64_t ReadLatency(HbmTwin& twin, uint64_t start, uint64_t line) {
  return twin.Stream(start, false, line, 1, 1).last_answer - start;
}

TEST(HbmTwinTiming, RowHitSavesTrcdAndAConflictCostsTrp) {
  const HbmGeometry g = Tiny();
  HbmTwin twin(g);
  const DramConfig& t = twin.timing();
  // The first ACT after reset waits for tFAW from cycle 0 (the controller's ACT history starts there).
  EXPECT_EQ(ReadLatency(twin, 50, LineAt(g, 0, 15 << 4)), uint64_t(t.tFAW + t.tRCD + t.tCL + t.tBURST + 2));
  const uint64_t miss = ReadLatency(twin, 100, LineAt(g, 0, 0));      // bank 0 closed: ACT, RD
  const uint64_t hit = ReadLatency(twin, 1000, LineAt(g, 0, 1));      // row 0 open: RD
  const uint64_t conflict = ReadLatency(twin, 2000, LineAt(g, 0, 256));  // row 1: PRE, ACT, RD
  EXPECT_EQ(miss - hit, uint64_t(t.tRCD));
  EXPECT_EQ(conflict - hit, uint64_t(t.tRP + t.tRCD));
  // Request buffer, adapter, burst splitter, queue, RD; CL + burst (the data sampled in its last cycle);
  // response buffer, reorder buffer.
  EXPECT_EQ(hit, uint64_t(3 + t.tCL + t.tBURST + 2));
}

// Reads of new rows of one bank (a row cycle each) while a refresh falls due.
uint64_t RowConflictReads(HbmTwin& twin, int rows) {
  const HbmGeometry& g = twin.geometry();
  uint64_t cycle = 0, answer = 0;
  for (int row = 1; row <= rows; ++row) {
    const HbmTwin::StreamTiming timing = twin.Stream(cycle, false, LineAt(g, 0, uint64_t(row) << 8), 1, 1);
    cycle = timing.last_accepted + 1;
    answer = timing.last_answer;
  }
  twin.RunUntil(answer + 1);
  return answer;
}

TEST(HbmTwinTiming, RefreshBlocksActivationsForTrfc) {
  const HbmGeometry g = Tiny();
  DramConfig timing = g.channel_config();
  timing.tREFI = 400;  // due while the reads are queued (more than tRFC, or refresh would starve ACT)
  HbmTwin twin(g, timing);
  const uint64_t with_refresh = RowConflictReads(twin, 12);
  HbmTwin no_refresh(g);  // tREFI 3900
  const uint64_t without = RowConflictReads(no_refresh, 12);
  EXPECT_EQ(no_refresh.counters().refreshes, 0u);
  EXPECT_GE(twin.counters().refreshes, 1u);
  // While REF runs no bank can be activated: the reads lose at least tRFC.
  EXPECT_GE(with_refresh, without + uint64_t(timing.tRFC));
}

TEST(HbmTwinTiming, TimeStandsStillWhileIdle) {
  const HbmGeometry g = Tiny();
  HbmTwin twin(g);
  ReadLatency(twin, 0, LineAt(g, 0, 0));
  twin.RunUntil(500);
  const uint64_t clocked = twin.counters().clocked_cycles;
  twin.RunUntil(1000000);  // far beyond tREFI, nothing in flight
  EXPECT_EQ(twin.counters().clocked_cycles, clocked);
  EXPECT_EQ(twin.counters().refreshes, 0u);
}

TEST(HbmTwinScheduling, WritesDrainBetweenTheWatermarks) {
  const HbmGeometry g = Tiny();
  HbmTwin twin(g);
  const int depth = g.queue_depth(), high = depth * 3 / 4, low = depth / 4;
  // Slow reads: every one a new row of bank 0 (a row cycle each), so they stay queued.
  std::vector<uint64_t> reads;
  for (uint64_t row = 1; row <= uint64_t(depth); ++row) reads.push_back(LineAt(g, 0, row << 8));
  uint64_t cycle = 10;
  for (uint64_t line : reads) cycle = twin.Stream(cycle, false, line, 1, 1).last_accepted + 1;
  // Writes below the high watermark wait while reads can go.
  const uint64_t bank5 = 5 << 4;  // beat of bank group 1, bank 1, row 0
  for (int i = 0; i < high - 1; ++i) cycle = twin.Stream(cycle, true, LineAt(g, 0, bank5 + uint64_t(i)), 1, 1).last_accepted + 1;
  twin.RunUntil(cycle + 4);
  EXPECT_EQ(twin.queued_writes(0), high - 1);
  EXPECT_GT(twin.queued_reads(0), 0);
  EXPECT_FALSE(twin.write_mode(0));
  // The high watermark starts a drain although reads are waiting.
  cycle = twin.Stream(cycle + 4, true, LineAt(g, 0, bank5 + uint64_t(high)), 1, 1).last_accepted + 1;
  uint64_t now = cycle;
  while (!twin.write_mode(0) && now < cycle + 20) twin.RunUntil(++now);
  ASSERT_TRUE(twin.write_mode(0));
  EXPECT_GT(twin.queued_reads(0), 0);
  // It stops at the low watermark with writes still queued.
  int before = twin.queued_writes(0);
  while (twin.write_mode(0) && now < cycle + 400) {
    before = twin.queued_writes(0);
    twin.RunUntil(++now);
  }
  EXPECT_FALSE(twin.write_mode(0));
  EXPECT_LE(before, low);
  EXPECT_GT(twin.queued_writes(0), 0);
}

TEST(HbmTwinScheduling, HalfLineWritesMergeAndReadsAreForwarded) {
  const HbmGeometry g = Tiny();
  HbmTwin twin(g);
  // Keep channel 0 busy with reads so the writes stay queued, then write both lines of one beat and
  // read one back.
  uint64_t cycle = 0;
  for (uint64_t row = 1; row <= 4; ++row) cycle = twin.Stream(cycle, false, LineAt(g, 0, row << 8), 1, 1).last_accepted + 1;
  const uint64_t line = LineAt(g, 0, 5 << 4);
  cycle = twin.Stream(cycle, true, line, 2, 1).last_accepted + 1;  // lines line, line + 1: one beat
  twin.Stream(cycle, false, line + 1, 1, 1);
  twin.RunUntil(cycle + 2000);
  EXPECT_EQ(twin.counters().merged, 1u);
  EXPECT_EQ(twin.counters().forwarded, 1u);
  EXPECT_EQ(twin.counters().writes, 1u);  // one WR for both lines
}

TEST(HbmTwinTiming, LaterStreamsCanDelayAnEarlierAnswer) {
  const HbmGeometry g = Tiny();
  HbmTwin twin(g);
  uint64_t cycle = twin.Stream(0, false, LineAt(g, 0, 0), 1, 1).last_accepted + 1;  // opens row 0 of bank 0
  // Row 1 of the same bank: its PRE waits for tRAS after row 0's ACT.
  const HbmTwin::StreamTiming conflict = twin.Stream(cycle, false, LineAt(g, 0, 256), 1, 1);
  EXPECT_EQ(twin.LastAnswer(conflict.stream), conflict.last_answer);
  // Younger row hits on row 0 keep the bank open (FR-FCFS), so the conflict's answer comes later.
  cycle = conflict.last_accepted + 1;
  for (uint64_t beat = 1; beat <= 8; ++beat) cycle = twin.Stream(cycle, false, LineAt(g, 0, beat), 1, 1).last_accepted + 1;
  EXPECT_GT(twin.LastAnswer(conflict.stream), conflict.last_answer);
}

TEST(HbmTwinTiming, SequentialStreamsUseBothChannels) {
  const HbmGeometry g = Tiny();
  HbmTwin twin(g);
  const uint64_t lines = 4096;
  const HbmTwin::StreamTiming timing = twin.Stream(0, false, 0, lines, 1);
  // Each 32-byte line costs a 64-byte burst (2 cycles) on one of two channels: at most one line a cycle.
  EXPECT_GE(timing.last_accepted + 1, lines);
  EXPECT_LT(timing.last_answer, lines * 2);
  twin.RunUntil(timing.last_answer + 1);
  EXPECT_EQ(twin.counters().reads, lines);
}

}  // namespace
}  // namespace tpu
