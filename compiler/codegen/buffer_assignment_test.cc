#include "compiler/codegen/buffer_assignment.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tpu::compiler
