#include "compiler/hlo/collective_groups.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "compiler/hlo/attributes.h"

namespace tpu::hlo {
namespace {

StatusOr<int64_t> HeaderCount(const HloModule& module, const std::string& key) {
  for (const auto& [name, value] : module.raw_attributes()) {
    if (name != key) continue;
    char* end = nullptr;
    long long count = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || count < 1 || count > kMaxDevices)
      return InvalidArgument("module " + module.name() + ": " + key + "=" + value + " is not a count from 1 to " +
                             std::to_string(kMaxDevices));
    return static_cast<int64_t>(count);
  }
  return int64_t{1};
}

Status GroupError(const HloInstruction& collective, const std::string& what) {
  return InvalidArgument(collective.opcode_name() + " %" + collective.name() + ": " + what);
}

// The ids of `groups` are replica ids, partition ids or flattened ids (below `limit`); returns the group
// holding `id`, or all ids below `limit` when there are no groups.
StatusOr<std::vector<int64_t>> GroupHolding(const HloInstruction& collective,
                                            const std::vector<std::vector<int64_t>>& groups, int64_t id,
                                            int64_t limit, const std::string& kind) {
  if (groups.empty()) {
    std::vector<int64_t> all(static_cast<size_t>(limit));
    for (int64_t i = 0; i < limit; ++i) all[static_cast<size_t>(i)] = i;
    return all;
  }
  const std::vector<int64_t>* holding = nullptr;
  for (const auto& group : groups) {
    for (int64_t member : group) {
      if (member >= limit)
        return GroupError(collective, kind + " " + std::to_string(member) + " in replica_groups, but the module has " +
                                          std::to_string(limit));
      if (member == id) holding = &group;
    }
  }
  if (holding == nullptr) return GroupError(collective, kind + " " + std::to_string(id) + " is in no replica group");
  return *holding;
}

}  // namespace

StatusOr<DeviceGrid> ModuleDeviceGrid(const HloModule& module) {
  DeviceGrid grid;
  TPU_ASSIGN_OR_RETURN(grid.replicas, HeaderCount(module, "replica_count"));
  TPU_ASSIGN_OR_RETURN(grid.partitions, HeaderCount(module, "num_partitions"));
  if (grid.devices() > kMaxDevices)
    return InvalidArgument("module " + module.name() + " runs on " + std::to_string(grid.devices()) +
                           " devices (replica_count x num_partitions); at most " + std::to_string(kMaxDevices));
  return grid;
}

const char* CollectiveGroupModeName(CollectiveGroupMode mode) {
  switch (mode) {
    case CollectiveGroupMode::kCrossReplica: return "cross-replica";
    case CollectiveGroupMode::kCrossPartition: return "cross-partition";
    case CollectiveGroupMode::kCrossReplicaAndPartition: return "cross-replica-and-partition";
    case CollectiveGroupMode::kFlattenedId: return "flattened-id";
  }
  return "?";
}

StatusOr<CollectiveGroupMode> GetCollectiveGroupMode(const HloInstruction& collective) {
  const bool channel = collective.raw_attribute("channel_id") != nullptr;
  const std::string* global = collective.raw_attribute("use_global_device_ids");
  if (global != nullptr && *global != "true" && *global != "false")
    return GroupError(collective, "use_global_device_ids=" + *global + " is neither true nor false");
  if (collective.opcode() == HloOpcode::kCollectivePermute)
    return channel ? CollectiveGroupMode::kCrossPartition : CollectiveGroupMode::kCrossReplica;
  if (!channel) {
    if (global != nullptr && *global == "true")
      return GroupError(collective, "use_global_device_ids=true needs a channel_id");
    return CollectiveGroupMode::kCrossReplica;
  }
  if (global == nullptr) return CollectiveGroupMode::kCrossPartition;
  return *global == "true" ? CollectiveGroupMode::kFlattenedId : CollectiveGroupMode::kCrossReplicaAndPartition;
}

StatusOr<std::vector<int64_t>> CollectiveGroup(const HloInstruction& collective, const DeviceGrid& grid,
                                               int64_t device) {
  if (device < 0 || device >= grid.devices())
    return GroupError(collective, "device " + std::to_string(device) + " outside the grid of " +
                                      std::to_string(grid.devices()));
  TPU_ASSIGN_OR_RETURN(CollectiveGroupMode mode, GetCollectiveGroupMode(collective));
  TPU_ASSIGN_OR_RETURN(auto groups, GetReplicaGroups(collective));
  const int64_t replica = grid.replica_of(device);
  const int64_t partition = grid.partition_of(device);
  std::vector<int64_t> devices;
  switch (mode) {
    case CollectiveGroupMode::kCrossReplica: {
      TPU_ASSIGN_OR_RETURN(auto replicas, GroupHolding(collective, groups, replica, grid.replicas, "replica"));
      for (int64_t r : replicas) devices.push_back(grid.device(r, partition));
      break;
    }
    case CollectiveGroupMode::kCrossPartition: {
      TPU_ASSIGN_OR_RETURN(auto partitions, GroupHolding(collective, groups, partition, grid.partitions, "partition"));
      for (int64_t p : partitions) devices.push_back(grid.device(replica, p));
      break;
    }
    case CollectiveGroupMode::kCrossReplicaAndPartition: {
      TPU_ASSIGN_OR_RETURN(auto replicas, GroupHolding(collective, groups, replica, grid.replicas, "replica"));
      for (int64_t r : replicas)
        for (int64_t p = 0; p < grid.partitions; ++p) devices.push_back(grid.device(r, p));
      break;
    }
    case CollectiveGroupMode::kFlattenedId:
      if (groups.empty()) return GroupError(collective, "use_global_device_ids=true needs explicit replica_groups");
      TPU_ASSIGN_OR_RETURN(devices, GroupHolding(collective, groups, device, grid.devices(), "device"));
      break;
  }
  return devices;
}

StatusOr<PermutePeers> CollectivePermutePeers(const HloInstruction& permute, const DeviceGrid& grid, int64_t device) {
  if (device < 0 || device >= grid.devices())
    return GroupError(permute, "device " + std::to_string(device) + " outside the grid of " + std::to_string(grid.devices()));
  TPU_ASSIGN_OR_RETURN(CollectiveGroupMode mode, GetCollectiveGroupMode(permute));
  TPU_ASSIGN_OR_RETURN(auto pairs, GetSourceTargetPairs(permute));
  const bool across_partitions = mode == CollectiveGroupMode::kCrossPartition;
  const int64_t limit = across_partitions ? grid.partitions : grid.replicas;
  const int64_t own = across_partitions ? grid.partition_of(device) : grid.replica_of(device);
  // Ids in the pairs name replicas of this device's partition, or partitions of its replica.
  auto to_device = [&](int64_t id) {
    return across_partitions ? grid.device(grid.replica_of(device), id) : grid.device(id, grid.partition_of(device));
  };
  PermutePeers peers;
  std::set<int64_t> group;
  for (const auto& [source, target] : pairs) {
    for (int64_t id : {source, target})
      if (id >= limit)
        return GroupError(permute, std::string(across_partitions ? "partition " : "replica ") + std::to_string(id) +
                                       " in source_target_pairs, but the module has " + std::to_string(limit));
    group.insert(to_device(source));
    group.insert(to_device(target));
    if (target == own) peers.source = to_device(source);
    if (source == own) peers.target = to_device(target);
  }
  peers.group.assign(group.begin(), group.end());
  return peers;
}

}  // namespace tpu::hlo
