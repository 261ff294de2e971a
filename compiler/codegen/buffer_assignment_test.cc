#include "compiler/codegen/buffer_assignment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace tpu::compiler {
namespace {

TEST(BufferAssignmentTest, ReusesSpaceAfterTheLastUse) {
  // a: [0,1], b: [1,2], c: [2,3]; a is dead when c is defined.
  BufferAssignment result = AssignBuffers({{0, 10, 0, 1}, {1, 10, 1, 2}, {2, 10, 2, 3}});
  EXPECT_EQ(result.offsets[0], 0u);
  EXPECT_EQ(result.offsets[1], 10u);
  EXPECT_EQ(result.offsets[2], 0u);
  EXPECT_EQ(result.peak_lines, 20u);
}

TEST(BufferAssignmentTest, AValueUsedByTheDefiningInstructionIsStillLive) {
  // b is defined at 1 where a is last used: they must not overlap.
  BufferAssignment result = AssignBuffers({{0, 4, 0, 1}, {1, 4, 1, 1}});
  EXPECT_NE(result.offsets[0], result.offsets[1]);
  EXPECT_EQ(result.peak_lines, 8u);
}

TEST(BufferAssignmentTest, RandomRequestsNeverOverlapWhileLive) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferRequest> requests;
    for (int i = 0; i < 30; ++i) {
      int64_t def = i;
      requests.push_back({i, static_cast<uint32_t>(1 + rng() % 20), def, def + static_cast<int64_t>(rng() % 8)});
    }
    BufferAssignment result = AssignBuffers(requests);
    uint64_t total = 0;
    for (const auto& a : requests) {
      total += a.lines;
      EXPECT_LE(result.offsets[a.id] + a.lines, result.peak_lines);
      for (const auto& b : requests) {
        if (a.id >= b.id) continue;
        bool lifetimes_overlap = !(a.last_use < b.defined_at || b.last_use < a.defined_at);
        bool lines_overlap = result.offsets[a.id] < result.offsets[b.id] + b.lines &&
                             result.offsets[b.id] < result.offsets[a.id] + a.lines;
        EXPECT_FALSE(lifetimes_overlap && lines_overlap) << "values " << a.id << " and " << b.id;
      }
    }
    EXPECT_LT(result.peak_lines, total);  // some reuse happened
  }
}

TEST(BufferAssignmentTest, ReportsTheValuesLiveAtThePeak) {
  // a and b overlap (peak 30 lines); c reuses a's lines after a's last use.
  BufferAssignment result = AssignBuffers({{0, 10, 0, 1}, {1, 20, 1, 3}, {2, 5, 2, 3}});
  EXPECT_EQ(result.peak_lines, 30u);
  std::vector<int64_t> live = result.live_at_peak;
  std::sort(live.begin(), live.end());
  EXPECT_EQ(live, (std::vector<int64_t>{0, 1}));
}

TEST(BufferAssignmentTest, APeakBeyond32BitsSaturatesInsteadOfWrappingAround) {
  // Two live values of 3e9 lines: 6e9 lines would wrap to 1.7e9 in 32 bits.
  BufferAssignment result = AssignBuffers({{0, 3000000000u, 0, 1}, {1, 3000000000u, 1, 2}});
  EXPECT_EQ(result.peak_lines, UINT32_MAX);
}

TEST(HbmFitTest, SizesBeyond64BitBytesSaturate) {
  StatusOr<uint64_t> fits = CheckHbmFits({{"a", UINT64_MAX / 2}, {"b", UINT64_MAX / 2}, {"c", 7}}, 1000, 512);
  ASSERT_FALSE(fits.ok());
  EXPECT_NE(fits.status().message().find("used: 16.0E; limit: 500.0K"), std::string::npos) << fits.status();
}

TEST(HbmFitTest, SumsAllocationsAndListsTheLargestWhenTheyDoNotFit) {
  const std::vector<HbmAllocation> allocations = {{"small", 0}, {"big", 40}, {"middle", 20}};
  StatusOr<uint64_t> fits = CheckHbmFits(allocations, 61, 32);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(*fits, 61u);  // an empty allocation still takes a line, as the runtime allocates it
  StatusOr<uint64_t> too_big = CheckHbmFits(allocations, 60, 32, 2);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(too_big.status().message(),
            "Ran out of memory in memory space hbm; used: 1.91K; limit: 1.88K\n"
            "Largest allocations in hbm:\n"
            "  1. Size: 1.25K, big\n"
            "  2. Size: 640B, middle");
}

}  // namespace
}  // namespace tpu::compiler
