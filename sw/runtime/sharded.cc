#include "sw/runtime/sharded.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "sw/runtime/logging.h"

namespace tpu::runtime {
namespace {

Status CheckLayoutFits(const hlo::Shape& global, const compiler::ShardLayout& layout) {
  if (layout.pieces.size() != global.dimensions.size()) {
    return InvalidArgument("the layout " + layout.ToString() + " cuts " + std::to_string(layout.pieces.size()) +
                           " dimensions, the array " + global.ToString() + " has " +
                           std::to_string(global.dimensions.size()));
  }
  for (size_t i = 0; i < layout.pieces.size(); ++i) {
    if (layout.pieces[i] < 1 || global.dimensions[i] % layout.pieces[i] != 0) {
      return InvalidArgument("dimension " + std::to_string(i) + " of " + global.ToString() + " does not cut into " +
                             std::to_string(layout.pieces[i]) + " equal pieces (layout " + layout.ToString() + ")");
    }
  }
  if (layout.device_blocks.empty()) return InvalidArgument("the layout " + layout.ToString() + " names no device");
  return OkStatus();
}

// Copies the box of `box` elements per dimension from `from` (dimensions from_dims), starting at
// from_origin, into `to` (to_dims) at to_origin. Both are row-major; the minor dimension moves as a run.
void CopyBox(const uint8_t* from, const std::vector<int64_t>& from_dims, const std::vector<int64_t>& from_origin,
             uint8_t* to, const std::vector<int64_t>& to_dims, const std::vector<int64_t>& to_origin,
             const std::vector<int64_t>& box, int64_t element_bytes) {
  const size_t rank = box.size();
  if (rank == 0) {
    std::memcpy(to, from, element_bytes);
    return;
  }
  for (int64_t extent : box) {
    if (extent == 0) return;
  }
  auto offset = [rank](const std::vector<int64_t>& dims, const std::vector<int64_t>& index) {
    int64_t linear = 0;
    for (size_t i = 0; i < rank; ++i) linear = linear * dims[i] + index[i];
    return linear;
  };
  const int64_t run_bytes = box[rank - 1] * element_bytes;
  std::vector<int64_t> position(rank, 0);  // within the box; the minor index stays 0
  std::vector<int64_t> from_index(rank), to_index(rank);
  while (true) {
    for (size_t i = 0; i < rank; ++i) {
      from_index[i] = from_origin[i] + position[i];
      to_index[i] = to_origin[i] + position[i];
    }
    std::memcpy(to + offset(to_dims, to_index) * element_bytes, from + offset(from_dims, from_index) * element_bytes,
                run_bytes);
    int d = static_cast<int>(rank) - 2;
    for (; d >= 0; --d) {
      if (++position[d] < box[d]) break;
      position[d] = 0;
    }
    if (d < 0) return;
  }
}

std::vector<int64_t> BlockOrigin(const std::vector<int64_t>& blocks, const std::vector<int64_t>& part_dims) {
  std::vector<int64_t> origin(part_dims.size());
  for (size_t i = 0; i < part_dims.size(); ++i) origin[i] = blocks[i] * part_dims[i];
  return origin;
}

}  // namespace

hlo::Shape GlobalShape(const hlo::Shape& part, const compiler::ShardLayout& layout) {
  hlo::Shape global = part;
  for (size_t i = 0; i < layout.pieces.size() && i < global.dimensions.size(); ++i) {
    global.dimensions[i] *= layout.pieces[i];
  }
  return global;
}

StatusOr<std::vector<hlo::Literal>> CutGlobalArray(const hlo::Literal& global, const compiler::ShardLayout& layout) {
  if (!global.shape().IsArray()) return InvalidArgument("only arrays are cut over devices, not " + global.shape().ToString());
  TPU_RETURN_IF_ERROR(CheckLayoutFits(global.shape(), layout));
  const hlo::Shape part_shape = layout.PartShape(global.shape());
  const int64_t element_bytes = hlo::PrimitiveTypeByteSize(global.shape().element_type);
  const std::vector<int64_t> zeros(part_shape.dimensions.size(), 0);
  std::vector<hlo::Literal> parts;
  for (const std::vector<int64_t>& blocks : layout.device_blocks) {
    hlo::Literal part(part_shape);
    CopyBox(global.untyped_data(), global.shape().dimensions, BlockOrigin(blocks, part_shape.dimensions),
            part.untyped_data(), part_shape.dimensions, zeros, part_shape.dimensions, element_bytes);
    parts.push_back(std::move(part));
  }
  return parts;
}

std::vector<bool> BlockProviders(const compiler::ShardLayout& layout) {
  std::vector<bool> providers;
  std::map<std::vector<int64_t>, int64_t> first;
  for (size_t d = 0; d < layout.device_blocks.size(); ++d) {
    providers.push_back(first.emplace(layout.device_blocks[d], static_cast<int64_t>(d)).second);
  }
  return providers;
}

StatusOr<hlo::Literal> JoinParts(const std::vector<const hlo::Literal*>& parts, const compiler::ShardLayout& layout) {
  if (parts.size() != layout.device_blocks.size()) {
    return InvalidArgument("the layout " + layout.ToString() + " has " + std::to_string(layout.device_blocks.size()) +
                           " devices, " + std::to_string(parts.size()) + " parts were given");
  }
  if (parts.empty()) return InvalidArgument("the layout " + layout.ToString() + " names no device");
  const std::vector<bool> providers = BlockProviders(layout);
  const hlo::Literal* first = nullptr;
  for (size_t d = 0; d < parts.size(); ++d) {
    if (!providers[d]) continue;
    if (parts[d] == nullptr) return InvalidArgument("device " + std::to_string(d) + "'s part is missing");
    if (first == nullptr) first = parts[d];
    if (parts[d]->shape() != first->shape()) {
      return InvalidArgument("device " + std::to_string(d) + "'s part is " + parts[d]->shape().ToString() +
                             ", device 0's " + first->shape().ToString());
    }
  }
  const hlo::Shape part_shape = first->shape();
  if (!part_shape.IsArray() || part_shape.dimensions.size() != layout.pieces.size()) {
    return InvalidArgument("a part of shape " + part_shape.ToString() + " does not fit the layout " + layout.ToString());
  }
  hlo::Literal global(GlobalShape(part_shape, layout));
  const int64_t element_bytes = hlo::PrimitiveTypeByteSize(part_shape.element_type);
  const std::vector<int64_t> zeros(part_shape.dimensions.size(), 0);
  for (size_t d = 0; d < parts.size(); ++d) {
    if (!providers[d]) continue;
    CopyBox(parts[d]->untyped_data(), part_shape.dimensions, zeros, global.untyped_data(), global.shape().dimensions,
            BlockOrigin(layout.device_blocks[d], part_shape.dimensions), part_shape.dimensions, element_bytes);
  }
  return global;
}

// ---------------------------------------------------------------------------------------------------------
// ShardedBuffer

std::vector<const Buffer*> ShardedBuffer::parts() const {
  std::vector<const Buffer*> parts;
  for (const auto& part : parts_) parts.push_back(part.get());
  return parts;
}

bool ShardedBuffer::is_donated() const {
  for (const auto& part : parts_) {
    if (part->is_donated()) return true;
  }
  return false;
}

bool ShardedBuffer::is_replicated() const {
  for (int64_t pieces : layout_.pieces) {
    if (pieces != 1) return false;
  }
  return true;
}

StatusOr<hlo::Literal> ShardedBuffer::ToLiteral() const {
  const std::vector<bool> providers = BlockProviders(layout_);
  std::vector<hlo::Literal> read(parts_.size());
  std::vector<const hlo::Literal*> pointers(parts_.size(), nullptr);
  for (size_t d = 0; d < parts_.size(); ++d) {
    if (!providers[d]) continue;
    TPU_ASSIGN_OR_RETURN(read[d], parts_[d]->ToLiteral());
    pointers[d] = &read[d];
  }
  return JoinParts(pointers, layout_);
}

StatusOr<std::vector<hlo::Literal>> ShardedBuffer::PartLiterals() const {
  std::vector<hlo::Literal> literals;
  for (const auto& part : parts_) {
    TPU_ASSIGN_OR_RETURN(hlo::Literal literal, part->ToLiteral());
    literals.push_back(std::move(literal));
  }
  return literals;
}

// ---------------------------------------------------------------------------------------------------------
// ShardedExecutable

std::vector<int> ShardedExecutable::device_ids() const {
  std::vector<int> ids;
  for (size_t i = 0; i < replicated_->num_devices(); ++i) ids.push_back(replicated_->device(i).id);
  return ids;
}

StatusOr<ShardedExecuteResult> ShardedExecutable::Execute(const std::vector<const ShardedBuffer*>& arguments,
                                                          const ExecuteOptions& options) {
  if (arguments.size() != parameter_layouts_.size()) {
    return InvalidArgument("executable " + name() + " takes " + std::to_string(parameter_layouts_.size()) +
                           " arguments, got " + std::to_string(arguments.size()));
  }
  const size_t devices = num_devices();
  std::vector<std::vector<const Buffer*>> per_device(devices);
  for (size_t a = 0; a < arguments.size(); ++a) {
    const ShardedBuffer& argument = *arguments[a];
    const std::string which = "argument " + std::to_string(a) + " of " + name();
    if (argument.shape() != parameter_shapes_[a]) {
      return InvalidArgument(which + " is " + argument.shape().ToString() + ", the parameter " +
                             parameter_shapes_[a].ToString());
    }
    if (argument.layout() != parameter_layouts_[a]) {
      return InvalidArgument(which + " is cut as " + argument.layout().ToString() + ", the parameter as " +
                             parameter_layouts_[a].ToString());
    }
    if (argument.num_parts() != devices) {
      return InvalidArgument(which + " has parts on " + std::to_string(argument.num_parts()) +
                             " devices, the executable runs on " + std::to_string(devices));
    }
    for (size_t d = 0; d < devices; ++d) per_device[d].push_back(&argument.part(d));
  }
  TPU_ASSIGN_OR_RETURN(std::vector<ExecuteResult> runs, replicated_->Execute(per_device, options));
  ShardedExecuteResult result;
  const size_t outputs = runs.front().outputs.size();
  if (outputs != result_layouts_.size()) {
    return Internal("executable " + name() + " returned " + std::to_string(outputs) + " values for " +
                    std::to_string(result_layouts_.size()) + " result layouts");
  }
  for (size_t i = 0; i < outputs; ++i) {
    std::vector<std::unique_ptr<Buffer>> parts;
    for (ExecuteResult& run : runs) parts.push_back(std::move(run.outputs[i]));
    hlo::Shape global = GlobalShape(parts.front()->shape(), result_layouts_[i]);
    result.outputs.push_back(std::make_unique<ShardedBuffer>(std::move(global), result_layouts_[i], std::move(parts)));
  }
  for (ExecuteResult& run : runs) {
    run.outputs.clear();
    result.cycles = std::max(result.cycles, run.counters.cycles);
    result.elapsed_cycles = std::max(result.elapsed_cycles, run.elapsed_cycles);
    result.devices.push_back(std::move(run));
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------------
// Client

StatusOr<std::unique_ptr<ShardedExecutable>> Client::CompileSharded(const std::string& hlo_text,
                                                                    const std::vector<int>& devices) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(hlo_text));
  std::vector<hlo::Shape> parameter_shapes;
  if (const hlo::HloComputation* entry = module->entry_computation()) {
    for (const hlo::HloInstruction* parameter : entry->parameter_instructions()) {
      parameter_shapes.push_back(parameter->shape());
    }
  }
  compiler::PerDeviceProgram pass;
  TPU_ASSIGN_OR_RETURN(bool changed, pass.Run(module.get()));
  if (!changed) {
    return InvalidArgument("module " + module->name() +
                           " has no manual computation over a mesh (jax.shard_map or jax.pmap): compile it for one "
                           "device (Compile) or as replicas (CompileReplicated)");
  }
  TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
  for (size_t i = 0; i < parameter_shapes.size() && i < pass.parameter_layouts().size(); ++i) {
    TPU_RETURN_IF_ERROR(CheckLayoutFits(parameter_shapes[i], pass.parameter_layouts()[i]));
  }
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<ReplicatedExecutable> replicated, CompileReplicatedOwned(std::move(module), devices));
  TPU_LOG(INFO) << "Sharded " << replicated->name() << " over " << pass.devices() << " devices";
  return std::make_unique<ShardedExecutable>(std::move(replicated), std::move(parameter_shapes),
                                             pass.parameter_layouts(), pass.result_layouts());
}

StatusOr<std::unique_ptr<ShardedBuffer>> Client::BufferFromGlobalLiteral(const hlo::Literal& global,
                                                                         const compiler::ShardLayout& layout,
                                                                         const std::vector<int>& devices) {
  TPU_ASSIGN_OR_RETURN(std::vector<hlo::Literal> parts, CutGlobalArray(global, layout));
  std::vector<int> targets = devices;
  if (targets.empty()) {
    for (size_t d = 0; d < parts.size(); ++d) targets.push_back(static_cast<int>(d));
  }
  if (targets.size() != parts.size()) {
    return InvalidArgument("the layout " + layout.ToString() + " cuts " + global.shape().ToString() + " for " +
                           std::to_string(parts.size()) + " devices, " + std::to_string(targets.size()) +
                           " devices were given");
  }
  std::vector<std::unique_ptr<Buffer>> buffers;
  for (size_t d = 0; d < parts.size(); ++d) {
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer, BufferFromHostLiteral(parts[d], targets[d]));
    buffers.push_back(std::move(buffer));
  }
  return std::make_unique<ShardedBuffer>(global.shape(), layout, std::move(buffers));
}

}  // namespace tpu::runtime
