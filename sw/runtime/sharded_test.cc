#include "sw/runtime/sharded.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tpu::runtime {
namespace {

using compiler::ShardLayout;

// An s32 array of `dims` whose element i holds i.
hlo::Literal Iota(std::vector<int64_t> dims) {
  hlo::Literal literal(hlo::Shape::Make(hlo::PrimitiveType::S32, std::move(dims)));
  for (int64_t i = 0; i < literal.element_count(); ++i) literal.Set<int32_t>(i, static_cast<int32_t>(i));
  return literal;
}

std::vector<int32_t> Values(const hlo::Literal& literal) {
  return std::vector<int32_t>(literal.data<int32_t>(), literal.data<int32_t>() + literal.element_count());
}

std::vector<const hlo::Literal*> Pointers(const std::vector<hlo::Literal>& parts) {
  std::vector<const hlo::Literal*> pointers;
  for (const hlo::Literal& part : parts) pointers.push_back(&part);
  return pointers;
}

TEST(ShardedTest, CutsBothDimensionsOfAMeshAndJoinsThemBack) {
  // A [4,6] array over a 2x3 mesh: device d holds rows 2*(d/3).., columns 2*(d%3)..
  ShardLayout layout{{{"x"}, {"y"}}, {2, 3}, {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}};
  const hlo::Literal global = Iota({4, 6});
  std::vector<hlo::Literal> parts = CutGlobalArray(global, layout).value();
  ASSERT_EQ(parts.size(), 6u);
  EXPECT_EQ(parts[0].shape().dimensions, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Values(parts[0]), (std::vector<int32_t>{0, 1, 6, 7}));
  EXPECT_EQ(Values(parts[2]), (std::vector<int32_t>{4, 5, 10, 11}));
  EXPECT_EQ(Values(parts[4]), (std::vector<int32_t>{14, 15, 20, 21}));
  hlo::Literal joined = JoinParts(Pointers(parts), layout).value();
  EXPECT_EQ(joined, global);
}

TEST(ShardedTest, AMiddleDimensionCutOverTwoAxesAndReplicatedOverAThird) {
  // [2,8,3] cut along dimension 1 into 4 blocks over (x, y) = 2 x 2, replicated over z = 2 (the mesh's last
  // axis): devices 2k and 2k+1 hold block k.
  ShardLayout layout{{{}, {"x", "y"}, {}}, {1, 4, 1}, {}};
  for (int64_t d = 0; d < 8; ++d) layout.device_blocks.push_back({0, d / 2, 0});
  const hlo::Literal global = Iota({2, 8, 3});
  std::vector<hlo::Literal> parts = CutGlobalArray(global, layout).value();
  ASSERT_EQ(parts.size(), 8u);
  EXPECT_EQ(Values(parts[3]), (std::vector<int32_t>{6, 7, 8, 9, 10, 11, 30, 31, 32, 33, 34, 35}));
  EXPECT_EQ(parts[2], parts[3]);
  EXPECT_EQ(BlockProviders(layout), (std::vector<bool>{true, false, true, false, true, false, true, false}));
  // Only the providers are read: the others may be missing.
  std::vector<const hlo::Literal*> pointers = Pointers(parts);
  for (size_t d = 1; d < pointers.size(); d += 2) pointers[d] = nullptr;
  EXPECT_EQ(JoinParts(pointers, layout).value(), global);
  pointers[2] = nullptr;
  EXPECT_EQ(JoinParts(pointers, layout).status().message(), "device 2's part is missing");
}

TEST(ShardedTest, AScalarIsReplicatedOnEveryDevice) {
  ShardLayout layout{{}, {}, {{}, {}, {}}};
  const hlo::Literal global = hlo::Literal::CreateR0<float>(2.5f);
  std::vector<hlo::Literal> parts = CutGlobalArray(global, layout).value();
  ASSERT_EQ(parts.size(), 3u);
  for (const hlo::Literal& part : parts) EXPECT_EQ(part, global);
  EXPECT_EQ(JoinParts(Pointers(parts), layout).value(), global);
  EXPECT_EQ(GlobalShape(parts[0].shape(), layout), global.shape());
}

TEST(ShardedTest, ALayoutThatDoesNotFitIsRefused) {
  const hlo::Literal global = Iota({5, 4});
  Status status = CutGlobalArray(global, ShardLayout{{{"x"}, {}}, {2, 1}, {{0, 0}, {1, 0}}}).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "dimension 0 of s32[5,4] does not cut into 2 equal pieces (layout [{\"x\"}, {}])");
  status = CutGlobalArray(global, ShardLayout{{{"x"}}, {2}, {{0}, {1}}}).status();
  EXPECT_EQ(status.message(), "the layout [{\"x\"}] cuts 1 dimensions, the array s32[5,4] has 2");
  const hlo::Literal part = Iota({2});
  status = JoinParts({&part}, ShardLayout{{{"x"}}, {2}, {{0}, {1}}}).status();
  EXPECT_EQ(status.message(), "the layout [{\"x\"}] has 2 devices, 1 parts were given");
  EXPECT_EQ(JoinParts({}, ShardLayout{{{"x"}}, {2}, {}}).status().message(), "the layout [{\"x\"}] names no device");
}

}  // namespace
}  // namespace tpu::runtime
