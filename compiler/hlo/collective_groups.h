// Which devices take part in a collective, as XLA defines it for a module that runs on a grid of
// replicas x partitions. A device is named by its flattened id, replica * partitions + partition (XLA's
// global device id for the default device assignment). Shared by the interpreter (which runs every
// device) and by whatever lowers collectives to the chip's links.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "sw/base/status.h"

namespace tpu::hlo {

// The most devices a module may run on (replica_count x num_partitions).
inline constexpr int64_t kMaxDevices = 4096;

struct DeviceGrid {
  int64_t replicas = 1;
  int64_t partitions = 1;
  int64_t devices() const { return replicas * partitions; }
  int64_t replica_of(int64_t device) const { return device / partitions; }
  int64_t partition_of(int64_t device) const { return device % partitions; }
  int64_t device(int64_t replica, int64_t partition) const { return replica * partitions + partition; }
};

// replica_count= and num_partitions= of the module header; 1 each when absent.
StatusOr<DeviceGrid> ModuleDeviceGrid(const HloModule& module);

// How replica_groups= (or source_target_pairs=) name devices. XLA's rule: no channel_id: replica ids
// (kCrossReplica); channel_id alone: partition ids (kCrossPartition); channel_id with
// use_global_device_ids=false: replica ids, every partition of each replica taking part
// (kCrossReplicaAndPartition); channel_id with use_global_device_ids=true: flattened ids (kFlattenedId).
// collective-permute has no use_global_device_ids: a channel makes it cross-partition.
enum class CollectiveGroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedId };
const char* CollectiveGroupModeName(CollectiveGroupMode mode);
// InvalidArgument for use_global_device_ids=true without channel_id.
StatusOr<CollectiveGroupMode> GetCollectiveGroupMode(const HloInstruction& collective);

// all-reduce, all-gather, reduce-scatter, all-to-all: the devices of the group `device` belongs to, in
// the order the operation uses them (all-gather concatenates in this order, reduce-scatter gives the
// k-th shard to the k-th device, all-reduce combines left to right in this order). InvalidArgument when
// an id is outside the grid, `device` is in no group, or the groups of a partition (replica) differ in size.
StatusOr<std::vector<int64_t>> CollectiveGroup(const HloInstruction& collective, const DeviceGrid& grid,
                                               int64_t device);

// collective-permute as seen from one device.
struct PermutePeers {
  int64_t source = -1;         // the device whose operand this device receives; -1: none (zeros)
  int64_t target = -1;         // the device this device's operand goes to; -1: none
  std::vector<int64_t> group;  // every device the pairs of this device's slice name, in increasing order
};
StatusOr<PermutePeers> CollectivePermutePeers(const HloInstruction& permute, const DeviceGrid& grid, int64_t device);

}  // namespace tpu::hlo
