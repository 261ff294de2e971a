// Every traffic pattern through the verilated controller into the device model: zero data mismatches,
// zero timing violations, and bandwidth within the documented share of each pattern's bound.
#include <gtest/gtest.h>

#include <cstring>

#include "sysc/dram_device.h"
#include "tb/hbm/hbm_harness.h"

namespace tpu::hbm_tb {
namespace {

class PatternTest : public ::testing::TestWithParam<Pattern> {};

// Share of the pin peak each pattern keeps at least (measured with 2*10^4 bursts, docs/hbm.md).
double FloorPct(Pattern p) {
  switch (p) {
    case Pattern::kSeqRead:
    case Pattern::kSeqWrite: return 91.0;
    case Pattern::kMix: return 85.0;
    case Pattern::kRandomRead: return 24.0;
    case Pattern::kStrided: return 24.0;
    case Pattern::kManyIds: return 47.0;
    case Pattern::kSameLine: return 60.0;
  }
  return 0;
}

TEST_P(PatternTest, NoMismatchNoViolation) {
  RunOptions options;
  options.transactions = 20000;  // seven patterns: 1.4 * 10^5 transactions
  const RunResult r = hbm_tb::Run(GetParam(), options);
  std::string messages;
  for (const auto& m : r.messages) messages += m + "\n";
  EXPECT_EQ(r.transactions, options.transactions) << messages;
  EXPECT_EQ(r.mismatches, 0u) << messages;
  EXPECT_EQ(r.violations, 0u) << messages;
  EXPECT_EQ(r.protocol_errors, 0u) << messages;
  EXPECT_GE(r.peak_pct, FloorPct(GetParam()));
  EXPECT_LE(r.pins_pct, r.bound_pct + 0.5) << "pins busier than the bound: the bound or the checker is wrong";
  if (GetParam() == Pattern::kSameLine) {
    // Reads answered from the write queue and merged writes leave the pins idle.
    EXPECT_LT(r.pins_pct, r.peak_pct - 5.0);
  } else {
    // No two requests in flight share a line: every beat crosses the pins.
    EXPECT_NEAR(r.pins_pct, r.peak_pct, 1.0);
    EXPECT_LE(r.peak_pct, r.bound_pct + 0.5) << "faster than the bound: the bound or the checker is wrong";
  }
  std::printf("%s\n", r.Line(GetParam()).c_str());
}

TEST_P(PatternTest, BackpressureKeepsDataAndOrder) {
  RunOptions options;
  options.transactions = 3000;
  options.backpressure_pct = 40;
  options.seed = 7;
  const RunResult r = hbm_tb::Run(GetParam(), options);
  std::string messages;
  for (const auto& m : r.messages) messages += m + "\n";
  EXPECT_EQ(r.transactions, options.transactions) << messages;
  EXPECT_EQ(r.mismatches + r.violations + r.protocol_errors, 0u) << messages;
}

// Writes that set part of a beat: a read is answered from the write queue only where the queued data
// covers the whole beat (merged writes can), otherwise from the device after the writes; the data checks
// catch a read that takes a partial entry's unwritten bytes or misses a merged write.
TEST(HbmSameLine, PartialStrobesKeepDataAndOrder) {
  RunOptions options;
  options.transactions = 20000;
  options.partial_strobes = true;
  const RunResult r = hbm_tb::Run(Pattern::kSameLine, options);
  std::string messages;
  for (const auto& m : r.messages) messages += m + "\n";
  EXPECT_EQ(r.transactions, options.transactions) << messages;
  EXPECT_EQ(r.mismatches + r.violations + r.protocol_errors, 0u) << messages;
  EXPECT_LT(r.pins_pct, r.peak_pct) << "no read answered from the write queue and no write merged";
  std::printf("partial strobes: %s\n", r.Line(Pattern::kSameLine).c_str());
  options.transactions = 3000;
  options.backpressure_pct = 40;
  const RunResult b = hbm_tb::Run(Pattern::kSameLine, options);
  EXPECT_EQ(b.mismatches + b.violations + b.protocol_errors, 0u);
}

INSTANTIATE_TEST_SUITE_P(Hbm, PatternTest, ::testing::ValuesIn(AllPatterns()),
                         [](const ::testing::TestParamInfo<Pattern>& info) {
                           return std::string(PatternName(info.param));
                         });

// The device checker itself: each broken rule is reported with the command, the bank and the rule.
std::string FirstViolation(const DramDevice& d) {
  return d.violation_messages().empty() ? "" : d.violation_messages().front();
}

TEST(DramDeviceTest, ReportsTrcdWithCommandBankAndRule) {
  DramDevice d;
  d.Row(100, RowCmd::kAct, 5, 7);
  d.Col(110, ColCmd::kRd, 5, 0);
  EXPECT_EQ(d.violations(), 1u);
  EXPECT_NE(FirstViolation(d).find("RD bank 5"), std::string::npos) << FirstViolation(d);
  EXPECT_NE(FirstViolation(d).find("tRCD"), std::string::npos) << FirstViolation(d);
}

TEST(DramDeviceTest, ReportsFawRrdRasAndWtr) {
  const DramConfig c;
  DramDevice d;
  // Four ACTs tRRD_S apart in different groups, then a fifth inside tFAW.
  for (int i = 0; i < 4; ++i) d.Row(uint64_t(i * c.tRRD_S), RowCmd::kAct, i * 4, 1);
  EXPECT_EQ(d.violations(), 0u) << FirstViolation(d);
  d.Row(uint64_t(4 * c.tRRD_S), RowCmd::kAct, 1, 1);
  ASSERT_GE(d.violations(), 1u);
  EXPECT_NE(FirstViolation(d).find("tFAW"), std::string::npos) << FirstViolation(d);

  DramDevice e;
  e.Row(0, RowCmd::kAct, 0, 1);
  e.Row(1, RowCmd::kAct, 1, 1);  // same group: tRRD_L
  e.Row(20, RowCmd::kPre, 0, 0);  // before tRAS
  ASSERT_EQ(e.violations(), 2u);
  EXPECT_NE(e.violation_messages()[0].find("tRRD_L"), std::string::npos);
  EXPECT_NE(e.violation_messages()[1].find("PRE bank 0: tRAS"), std::string::npos) << e.violation_messages()[1];

  DramDevice f;
  std::vector<uint8_t> data(64, 0xAB);
  f.Row(0, RowCmd::kAct, 0, 1);
  f.Col(20, ColCmd::kWr, 0, 3, data.data());
  f.Col(25, ColCmd::kRd, 0, 3);  // needs CWL + burst + tWTR_L
  ASSERT_EQ(f.violations(), 1u);
  EXPECT_NE(FirstViolation(f).find("tWTR_L"), std::string::npos) << FirstViolation(f);
}

TEST(DramDeviceTest, ReportsMissedRefreshAndRefreshWithOpenBank) {
  const DramConfig c;
  DramDevice d;
  d.CheckRefresh(uint64_t(c.tREFI) * 10);
  ASSERT_EQ(d.violations(), 1u);
  EXPECT_NE(FirstViolation(d).find("refresh deadline"), std::string::npos);
  DramDevice e;
  e.Row(0, RowCmd::kAct, 3, 1);
  e.Row(100, RowCmd::kRef, 0, 0);
  ASSERT_GE(e.violations(), 1u);
  EXPECT_NE(FirstViolation(e).find("REF bank 3: bank open"), std::string::npos) << FirstViolation(e);
}

TEST(DramDeviceTest, SparseStorageReturnsWrittenDataAfterReadLatency) {
  const DramConfig c;
  DramDevice d;
  EXPECT_EQ(c.bytes(), 512ull << 20);
  std::vector<uint8_t> data(64), mask(8, 0xFF), out(64);
  for (int i = 0; i < 64; ++i) data[i] = uint8_t(i * 3 + 1);
  mask[0] = 0x0F;  // bytes 4..7 not written
  d.Row(0, RowCmd::kAct, 9, 30000);
  d.Col(uint64_t(c.tRCD), ColCmd::kWr, 9, 15, data.data(), mask.data());
  const uint64_t rd = uint64_t(c.tRCD + c.tCWL + c.tBURST + c.tWTR_L);
  d.Col(rd, ColCmd::kRd, 9, 15);
  EXPECT_EQ(d.violations(), 0u) << FirstViolation(d);
  EXPECT_FALSE(d.PopReadData(rd + c.tCL + c.tBURST - 1, out.data()));
  ASSERT_TRUE(d.PopReadData(rd + c.tCL + c.tBURST, out.data()));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(out[i], (i >= 4 && i < 8) ? 0 : data[i]) << i;
  EXPECT_EQ(d.pages_allocated(), 1u);
}

}  // namespace
}  // namespace tpu::hbm_tb
