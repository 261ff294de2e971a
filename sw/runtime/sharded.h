// Global arrays over several devices, as JAX sees the arrays of a shard_map or pmap: the global-view
// module JAX lowers them to is made into the program every device runs (the per-device-program pass,
// compiler/passes/per_device_program.h), which runs on every device of its mesh; each global array
// lives as one part per device, cut by a compiler::ShardLayout.
//
//   auto exe = client->CompileSharded(hlo_text).value();         // the global view, as JAX lowered it
//   auto x = client->BufferFromGlobalLiteral(x_literal, exe->parameter_layouts()[0]).value();
//   auto result = exe->Execute({x.get()}).value();                // result.outputs: global arrays
//   hlo::Literal y = result.outputs[0]->ToLiteral().value();     // the parts put together
//
// The cutting and joining of host arrays happens here and nowhere else (CutGlobalArray, JoinParts).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/hlo/shape.h"
#include "compiler/passes/per_device_program.h"
#include "sw/base/status.h"
#include "sw/runtime/client.h"

namespace tpu::runtime {

// The global shape of an array whose device parts have shape `part` (layout kept).
hlo::Shape GlobalShape(const hlo::Shape& part, const compiler::ShardLayout& layout);

// Each device's part of `global` (device d: blocks layout.device_blocks[d] of each dimension).
// InvalidArgument when the layout does not fit the array (its rank, or a dimension not a multiple of its
// pieces).
StatusOr<std::vector<hlo::Literal>> CutGlobalArray(const hlo::Literal& global, const compiler::ShardLayout& layout);

// The device that provides each block when the parts are put together: for every device, true when it is
// the first (lowest numbered) to hold its blocks. Devices that hold the same blocks hold equal values.
std::vector<bool> BlockProviders(const compiler::ShardLayout& layout);

// The global array from its parts. `parts[d]` is device d's part; only the providers' (BlockProviders)
// are read, the others may be null. InvalidArgument when a provider's part is missing or its shape differs.
StatusOr<hlo::Literal> JoinParts(const std::vector<const hlo::Literal*>& parts, const compiler::ShardLayout& layout);

// A global array in HBM: one buffer per device of an execution, the parts `layout` cuts the array into.
class ShardedBuffer {
 public:
  ShardedBuffer(hlo::Shape shape, compiler::ShardLayout layout, std::vector<std::unique_ptr<Buffer>> parts)
      : shape_(std::move(shape)), layout_(std::move(layout)), parts_(std::move(parts)) {}

  const hlo::Shape& shape() const { return shape_; }  // the global shape
  const compiler::ShardLayout& layout() const { return layout_; }
  size_t num_parts() const { return parts_.size(); }
  const Buffer& part(size_t device) const { return *parts_.at(device); }
  std::vector<const Buffer*> parts() const;
  // True once any part was donated to an execution.
  bool is_donated() const;
  // True when every device holds the whole array.
  bool is_replicated() const;

  // The global array: each block read from the first device that holds it.
  StatusOr<hlo::Literal> ToLiteral() const;
  // Every device's part, in device order (to compare the replicas of a block).
  StatusOr<std::vector<hlo::Literal>> PartLiterals() const;

 private:
  hlo::Shape shape_;
  compiler::ShardLayout layout_;
  std::vector<std::unique_ptr<Buffer>> parts_;
};

struct ShardedExecuteResult {
  std::vector<std::unique_ptr<ShardedBuffer>> outputs;  // the global results, tuple flattened
  std::vector<ExecuteResult> devices;                   // each device's run (counters; its outputs moved out)
  // The slowest device's run (counters.cycles) and call (elapsed_cycles): the execution's time.
  uint64_t cycles = 0;
  uint64_t elapsed_cycles = 0;
};

// The per-device program of a global-view module loaded on every device of its mesh, with the layouts
// that cut its global arguments and put its global results together.
class ShardedExecutable {
 public:
  ShardedExecutable(std::unique_ptr<ReplicatedExecutable> replicated, std::vector<hlo::Shape> parameter_shapes,
                    std::vector<compiler::ShardLayout> parameter_layouts, std::vector<compiler::ShardLayout> result_layouts)
      : replicated_(std::move(replicated)),
        parameter_shapes_(std::move(parameter_shapes)),
        parameter_layouts_(std::move(parameter_layouts)),
        result_layouts_(std::move(result_layouts)) {}

  const std::string& name() const { return replicated_->name(); }
  ReplicatedExecutable& replicated() const { return *replicated_; }
  size_t num_devices() const { return replicated_->num_devices(); }
  // The client device indices, position d running device d of the mesh.
  std::vector<int> device_ids() const;
  const std::vector<hlo::Shape>& parameter_shapes() const { return parameter_shapes_; }  // global
  const std::vector<compiler::ShardLayout>& parameter_layouts() const { return parameter_layouts_; }
  const std::vector<compiler::ShardLayout>& result_layouts() const { return result_layouts_; }

  // Runs the program on every device at once, device d on the parts d of the arguments. Each argument
  // must have its parameter's global shape and layout and live on the executable's devices
  // (InvalidArgument naming the argument otherwise). Donation as ReplicatedExecutable::Execute, per part.
  StatusOr<ShardedExecuteResult> Execute(const std::vector<const ShardedBuffer*>& arguments,
                                         const ExecuteOptions& options = {});

 private:
  std::unique_ptr<ReplicatedExecutable> replicated_;
  std::vector<hlo::Shape> parameter_shapes_;
  std::vector<compiler::ShardLayout> parameter_layouts_;
  std::vector<compiler::ShardLayout> result_layouts_;
};

}  // namespace tpu::runtime
