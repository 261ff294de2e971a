#include "compiler/hlo/collective_groups.h"

#include <gtest/gtest.h>

#include "compiler/hlo/parser.h"

namespace tpu::hlo {
namespace {

// A module of one collective `op` with `attributes` over an f32[8] parameter; `header` follows the name.
std::unique_ptr<HloModule> Collective(const std::string& op, const std::string& attributes,
                                      const std::string& header = "") {
  const std::string shape = op == "reduce-scatter" ? "f32[2]{0}" : op == "all-gather" ? "f32[32]{0}" : "f32[8]{0}";
  const std::string reducer = op == "all-reduce" || op == "reduce-scatter" ? ", to_apply=%add" : "";
  auto module = ParseHloModule("HloModule m" + header +
                               "\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                               "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n"
                               "ENTRY %e {\n  %x = f32[8]{0} parameter(0)\n  ROOT %c = " +
                               shape + " " + op + "(%x), " + attributes + reducer + "\n}\n");
  EXPECT_TRUE(module.ok()) << module.status();
  return module.ok() ? std::move(module).value() : nullptr;
}

const HloInstruction& Root(const HloModule& module) { return *module.entry_computation()->root_instruction(); }

std::vector<int64_t> Group(const HloModule& module, const DeviceGrid& grid, int64_t device) {
  auto group = CollectiveGroup(Root(module), grid, device);
  EXPECT_TRUE(group.ok()) << group.status();
  return group.ok() ? *group : std::vector<int64_t>{};
}

TEST(CollectiveGroupsTest, DeviceGridFromTheModuleHeader) {
  auto plain = Collective("all-reduce", "replica_groups={}");
  auto grid = ModuleDeviceGrid(*plain);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->devices(), 1);
  auto pmap = Collective("all-reduce", "replica_groups={}", ", is_scheduled=true, num_partitions=8");
  grid = ModuleDeviceGrid(*pmap);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->replicas, 1);
  EXPECT_EQ(grid->partitions, 8);
  auto both = Collective("all-reduce", "replica_groups={}", ", replica_count=2, num_partitions=4");
  grid = ModuleDeviceGrid(*both);
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->devices(), 8);
  EXPECT_EQ(grid->device(1, 3), 7);
  EXPECT_EQ(grid->replica_of(6), 1);
  EXPECT_EQ(grid->partition_of(6), 2);
  auto zero = Collective("all-reduce", "replica_groups={}", ", replica_count=0");
  grid = ModuleDeviceGrid(*zero);
  ASSERT_FALSE(grid.ok());
  EXPECT_NE(grid.status().message().find("replica_count=0 is not a count"), std::string::npos) << grid.status();
}

TEST(CollectiveGroupsTest, ModesFollowChannelIdAndGlobalDeviceIds) {
  auto mode = [](const std::string& op, const std::string& attributes) {
    auto module = Collective(op, attributes);
    auto got = GetCollectiveGroupMode(Root(*module));
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? std::string(CollectiveGroupModeName(*got)) : got.status().message();
  };
  EXPECT_EQ(mode("all-reduce", "replica_groups={}"), "cross-replica");
  EXPECT_EQ(mode("all-reduce", "replica_groups={}, use_global_device_ids=false"), "cross-replica");
  EXPECT_EQ(mode("all-reduce", "channel_id=1, replica_groups={}"), "cross-partition");
  EXPECT_EQ(mode("all-reduce", "channel_id=1, replica_groups={}, use_global_device_ids=false"),
            "cross-replica-and-partition");
  EXPECT_EQ(mode("all-reduce", "channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true"), "flattened-id");
  EXPECT_EQ(mode("collective-permute", "source_target_pairs={{0,1}}"), "cross-replica");
  EXPECT_EQ(mode("collective-permute", "channel_id=2, source_target_pairs={{0,1}}"), "cross-partition");
  auto bad = Collective("all-reduce", "replica_groups={{0,1}}, use_global_device_ids=true");
  auto got = GetCollectiveGroupMode(Root(*bad));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("use_global_device_ids=true needs a channel_id"), std::string::npos);
}

TEST(CollectiveGroupsTest, GroupsOfEachMode) {
  const DeviceGrid grid{2, 4};  // devices 0..3 are replica 0, 4..7 replica 1
  // Cross-replica: replica ids, within the device's partition.
  auto cross_replica = Collective("all-reduce", "replica_groups={{1,0}}");
  EXPECT_EQ(Group(*cross_replica, grid, 6), (std::vector<int64_t>{6, 2}));
  auto all_replicas = Collective("all-reduce", "replica_groups={}");
  EXPECT_EQ(Group(*all_replicas, grid, 3), (std::vector<int64_t>{3, 7}));
  // Cross-partition: partition ids, within the device's replica.
  auto cross_partition = Collective("all-reduce", "channel_id=1, replica_groups={{0,2},{1,3}}");
  EXPECT_EQ(Group(*cross_partition, grid, 7), (std::vector<int64_t>{5, 7}));
  auto all_partitions = Collective("all-reduce", "channel_id=1, replica_groups={}");
  EXPECT_EQ(Group(*all_partitions, grid, 5), (std::vector<int64_t>{4, 5, 6, 7}));
  // Cross-replica-and-partition: every partition of the replicas of the group.
  auto both = Collective("all-reduce", "channel_id=1, replica_groups={{0,1}}, use_global_device_ids=false");
  EXPECT_EQ(Group(*both, grid, 2), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  // Flattened ids, as JAX's shard_map and pmap write them.
  auto flat = Collective("all-reduce", "channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7}}, use_global_device_ids=true");
  EXPECT_EQ(Group(*flat, grid, 5), (std::vector<int64_t>{4, 5, 6, 7}));
  auto iota = Collective("all-gather", "channel_id=1, replica_groups=[2,4]<=[8], dimensions={0}, use_global_device_ids=true");
  EXPECT_EQ(Group(*iota, grid, 1), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(CollectiveGroupsTest, GroupErrorsNameTheProblem) {
  const DeviceGrid grid{4, 1};
  auto expect_error = [&](const std::string& op, const std::string& attributes, int64_t device, const std::string& text) {
    auto module = Collective(op, attributes);
    auto group = CollectiveGroup(Root(*module), grid, device);
    ASSERT_FALSE(group.ok()) << attributes;
    EXPECT_EQ(group.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(group.status().message().find(text), std::string::npos) << group.status();
  };
  expect_error("all-reduce", "replica_groups={{0,1},{2,5}}", 0, "replica 5 in replica_groups, but the module has 4");
  expect_error("all-reduce", "replica_groups={{0,1}}", 3, "replica 3 is in no replica group");
  expect_error("all-reduce", "channel_id=1, replica_groups={}, use_global_device_ids=true", 0,
               "needs explicit replica_groups");
  expect_error("all-reduce", "replica_groups={}", 4, "device 4 outside the grid of 4");
}

TEST(CollectiveGroupsTest, PermutePeers) {
  const DeviceGrid grid{1, 4};
  auto ring = Collective("collective-permute", "channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}");
  auto peers = CollectivePermutePeers(Root(*ring), grid, 2);
  ASSERT_TRUE(peers.ok()) << peers.status();
  EXPECT_EQ(peers->source, 1);
  EXPECT_EQ(peers->target, 3);
  EXPECT_EQ(peers->group, (std::vector<int64_t>{0, 1, 2, 3}));
  // A device no pair names neither sends nor receives.
  auto shift = Collective("collective-permute", "channel_id=1, source_target_pairs={{0,1}}");
  peers = CollectivePermutePeers(Root(*shift), grid, 3);
  ASSERT_TRUE(peers.ok());
  EXPECT_EQ(peers->source, -1);
  EXPECT_EQ(peers->target, -1);
  peers = CollectivePermutePeers(Root(*shift), grid, 1);
  ASSERT_TRUE(peers.ok());
  EXPECT_EQ(peers->source, 0);
  EXPECT_EQ(peers->target, -1);
  // Without a channel the ids are replicas: partitions 0..3 of one replica name only replica 0.
  auto replicas = Collective("collective-permute", "source_target_pairs={{0,1}}");
  peers = CollectivePermutePeers(Root(*replicas), grid, 0);
  ASSERT_FALSE(peers.ok());
  EXPECT_NE(peers.status().message().find("replica 1 in source_target_pairs, but the module has 1"), std::string::npos)
      << peers.status();
}

}  // namespace
}  // namespace tpu::hlo
