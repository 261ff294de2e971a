// The program every device runs, made from the global view that JAX lowers jax.pmap and jax.shard_map
// (every mesh axis manual) to; what XLA's SPMD partitioner makes of a fully manual computation.
//
// The global view: the entry takes the global arrays, cuts each into this device's part with
// custom-call "xla.sdy.GlobalToLocalShape", calls the per-device program (`call(...),
// to_apply=xla.sdy.manual_computation_body.N`: local shapes, collectives already per device) and puts
// the parts of its results together again with "xla.sdy.LocalToGlobalShape" (then
// "xla.sdy.FuncResultSharding", reshapes that keep the shape, tuples). How arrays are cut is Shardy's:
//   module:  frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=4]>}}
//   cuts:    xla.sdy.in_shardings / xla.sdy.out_shardings of the custom calls, one sharding per value:
//            <@mesh, [{"x"}, {}]> splits dimension 0 over axis x and keeps dimension 1 whole;
//            {"x", "y"} splits a dimension over both axes, x major
//   manual:  xla.sdy.manual_axes, which must be every axis of the mesh
//
// After the pass the entry takes each device's part of every argument, runs the manual body in line
// and returns each device's part of every result; the header says num_partitions=<devices of the mesh>,
// so that hlo::InterpretReplicated runs that many devices (partition-id is the device number). The
// global-view custom calls, reshapes and attributes (Shardy's frontend attributes, the parameters'
// shardings, entry_computation_layout) are gone, and so are the computations nothing calls any more.
// What the entry computes from replicated arrays only (a constant, `b + 1` of a replicated b) stays:
// every device computes it.
//
// A module without Shardy's custom calls is left as it is (Run returns false, the layouts are empty).
// What the pass does not handle is an error naming the instruction, before anything changes:
// Unimplemented for a partially manual computation, explicit device orders (device_ids), sub-axes,
// open or unreduced dimensions, global-view computation on split arrays (outside shard_map), an array
// cut one way and used another (a resharding) and Shardy's custom calls outside the entry;
// InvalidArgument for attributes that do not read as Shardy's or disagree with the shapes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/shape.h"
#include "compiler/passes/pass.h"

namespace tpu::compiler {

// How a global array (an entry argument or result as the caller sees it) is cut into the devices' parts.
// Dimension i is cut into pieces[i] equal blocks (1: whole), and device d holds block device_blocks[d][i]
// of each dimension i: with L_i = G_i / pieces[i], its part of a [G_0, G_1, ...] array is
// global[b_0*L_0 : (b_0+1)*L_0, b_1*L_1 : (b_1+1)*L_1, ...], b_i = device_blocks[d][i]. Devices that hold
// the same blocks hold equal values: the array is replicated over the mesh axes that split none of its
// dimensions (all of them for an array with no pieces). Devices are numbered as partition-id numbers them:
// mesh coordinates in row-major order, the mesh's first axis major.
struct ShardLayout {
  std::vector<std::vector<std::string>> axes;       // per dimension: the mesh axes splitting it, major first
  std::vector<int64_t> pieces;                      // per dimension: the product of its axes' sizes
  std::vector<std::vector<int64_t>> device_blocks;  // [device][dimension]

  int64_t devices() const { return static_cast<int64_t>(device_blocks.size()); }
  // The shape of one device's part of an array of `global` shape (layout kept).
  hlo::Shape PartShape(const hlo::Shape& global) const;
  // In Shardy's notation: `[{"x"}, {}]`.
  std::string ToString() const;
  bool operator==(const ShardLayout& other) const { return axes == other.axes && device_blocks == other.device_blocks; }
  bool operator!=(const ShardLayout& other) const { return !(*this == other); }
};

class PerDeviceProgram : public HloPass {
 public:
  std::string_view name() const override { return "per-device-program"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

  // After a Run that changed the module: the devices of the mesh, and how the caller cuts each entry
  // argument into the devices' arguments and puts each result together from the devices' results (one
  // layout per element of a tuple root, else one).
  int64_t devices() const { return devices_; }
  const std::vector<ShardLayout>& parameter_layouts() const { return parameter_layouts_; }
  const std::vector<ShardLayout>& result_layouts() const { return result_layouts_; }

 private:
  int64_t devices_ = 0;
  std::vector<ShardLayout> parameter_layouts_;
  std::vector<ShardLayout> result_layouts_;
};

}  // namespace tpu::compiler
