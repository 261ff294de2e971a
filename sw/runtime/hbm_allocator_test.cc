#include "sw/runtime/hbm_allocator.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace tpu::runtime {
namespace {

TEST(HumanReadableBytesTest, PrintsLikeTheTpuMessages) {
  EXPECT_EQ(HumanReadableBytes(0), "0B");
  EXPECT_EQ(HumanReadableBytes(1023), "1023B");
  EXPECT_EQ(HumanReadableBytes(1536), "1.5K");
  EXPECT_EQ(HumanReadableBytes(64ull << 20), "64.0M");
  EXPECT_EQ(HumanReadableBytes(8ull << 30), "8.0G");
  EXPECT_EQ(HumanReadableBytes(9ull << 30), "9.0G");
  // The Cloud TPU guide's limit for a v2 core.
  EXPECT_EQ(HumanReadableBytes(static_cast<uint64_t>(7.48 * (1ull << 30))), "7.48G");
}

TEST(HbmAllocatorTest, FirstFitReusesTheFirstHoleLargeEnough) {
  HbmAllocator allocator(1000, 32);
  const uint64_t a = allocator.Allocate(10).value();
  const uint64_t b = allocator.Allocate(20).value();
  const uint64_t c = allocator.Allocate(30).value();
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 10u);
  EXPECT_EQ(c, 30u);
  ASSERT_TRUE(allocator.Free(b).ok());
  EXPECT_EQ(allocator.Allocate(25).value(), 60u);  // the hole of 20 is too small
  EXPECT_EQ(allocator.Allocate(15).value(), b);    // but takes 15
  EXPECT_EQ(allocator.Allocate(5).value(), 25u);   // and the 5 left after it
  EXPECT_EQ(allocator.used_lines(), 10u + 15 + 5 + 30 + 25);
}

TEST(HbmAllocatorTest, FreeMergesNeighbours) {
  HbmAllocator allocator(100, 32);
  std::vector<uint64_t> blocks;
  for (int i = 0; i < 10; ++i) blocks.push_back(allocator.Allocate(10).value());
  EXPECT_EQ(allocator.Allocate(1).status().code(), StatusCode::kResourceExhausted);
  // Free in a scrambled order; in the end one region of 100 lines must exist again.
  std::mt19937 rng(7);
  std::shuffle(blocks.begin(), blocks.end(), rng);
  for (uint64_t block : blocks) ASSERT_TRUE(allocator.Free(block).ok());
  EXPECT_EQ(allocator.used_lines(), 0u);
  EXPECT_EQ(allocator.largest_free_lines(), 100u);
  EXPECT_EQ(allocator.Allocate(100).value(), 0u);
}

TEST(HbmAllocatorTest, FreeOfAnUnknownAddressIsAnError) {
  HbmAllocator allocator(100, 32);
  const uint64_t a = allocator.Allocate(10).value();
  EXPECT_EQ(allocator.Free(a + 1).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(allocator.Free(a).ok());
  EXPECT_EQ(allocator.Free(a).code(), StatusCode::kInvalidArgument);
}

TEST(HbmAllocatorTest, ZeroLinesStillGetsADistinctAddress) {
  HbmAllocator allocator(100, 32);
  const uint64_t a = allocator.Allocate(0).value();
  const uint64_t b = allocator.Allocate(0).value();
  EXPECT_NE(a, b);
}

TEST(HbmAllocatorTest, OutOfMemoryGivesTheTpuMessage) {
  const uint64_t lines = (64ull << 20) / 32;
  HbmAllocator allocator(lines, 32);
  ASSERT_TRUE(allocator.Allocate(lines / 2).ok());
  StatusOr<uint64_t> failed = allocator.Allocate(lines);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(failed.status().ToString(),
            "ResourceExhaustedError: Ran out of memory in memory space hbm; used: " +
                HumanReadableBytes((lines / 2 + lines) * 32) + "; limit: " + HumanReadableBytes(lines * 32));
  // Nothing was taken by the failed request.
  EXPECT_EQ(allocator.used_lines(), lines / 2);
}

TEST(HbmAllocatorTest, FragmentationIsExplained) {
  HbmAllocator allocator(100, 32);
  const uint64_t a = allocator.Allocate(40).value();
  allocator.Allocate(20).value();
  ASSERT_TRUE(allocator.Free(a).ok());
  // 80 lines free in total, but at most 40 together.
  StatusOr<uint64_t> failed = allocator.Allocate(50);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("fragmented"), std::string::npos) << failed.status();
}

}  // namespace
}  // namespace tpu::runtime
