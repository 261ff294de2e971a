#include "compiler/passes/per_device_program.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "compiler/hlo/collective_groups.h"
#include "compiler/passes/call_inliner.h"

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloModule;
using hlo::HloOpcode;
using hlo::Shape;

constexpr std::string_view kShardyPrefix = "xla.sdy.";
constexpr std::string_view kGlobalToLocal = "xla.sdy.GlobalToLocalShape";
constexpr std::string_view kLocalToGlobal = "xla.sdy.LocalToGlobalShape";
constexpr std::string_view kFuncResultSharding = "xla.sdy.FuncResultSharding";
constexpr std::string_view kManualBodyPrefix = "xla.sdy.manual_computation_body";

std::string Named(const HloInstruction& instruction) { return instruction.opcode_name() + " %" + instruction.name(); }

bool IsCustomCall(const HloInstruction& instruction, std::string_view target) {
  return instruction.opcode() == HloOpcode::kCustomCall && instruction.custom_call_target() == target;
}

bool IsShardyCustomCall(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kCustomCall &&
         instruction.custom_call_target().rfind(kShardyPrefix, 0) == 0;
}

bool IsManualBodyCall(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kCall && instruction.to_apply() != nullptr &&
         instruction.to_apply()->name().rfind(kManualBodyPrefix, 0) == 0;
}

Status WithContext(const Status& status, const std::string& context) {
  return status.ok() ? status : Status(status.code(), context + status.message());
}

// One entry of frontend_attributes={key=value,...}: the value as written, and its text (a quoted value
// unquoted and unescaped; the module's xla.sdy.meshes is written without quotes).
struct FrontendAttribute {
  std::string key;
  std::string written;
  std::string text;
};

StatusOr<std::vector<FrontendAttribute>> ParseFrontendAttributes(std::string_view written) {
  auto error = [&](size_t at) {
    return InvalidArgument("cannot read frontend_attributes at '" + std::string(written.substr(at, 40)) + "'");
  };
  std::vector<FrontendAttribute> attributes;
  if (written.size() < 2 || written.front() != '{' || written.back() != '}') return error(0);
  size_t i = 1;
  const size_t end = written.size() - 1;
  while (i < end) {
    const size_t equals = written.find('=', i);
    if (equals == std::string_view::npos || equals >= end) return error(i);
    FrontendAttribute attribute;
    attribute.key = std::string(written.substr(i, equals - i));
    const size_t start = equals + 1;
    i = start;
    if (i < end && written[i] == '"') {
      for (++i; i < end && written[i] != '"'; ++i) {
        if (written[i] == '\\' && i + 1 < end) ++i;
        attribute.text += written[i];
      }
      if (i >= end) return error(start);
      ++i;
    } else {
      // Up to the comma or brace that closes the value; quoted text inside does not count.
      int depth = 0;
      for (; i < end && !(depth == 0 && written[i] == ','); ++i) {
        const char c = written[i];
        if (c == '"') {
          for (++i; i < end && written[i] != '"'; ++i)
            if (written[i] == '\\') ++i;
        } else if (c == '{' || c == '[' || c == '(' || c == '<') {
          ++depth;
        } else if (c == '}' || c == ']' || c == ')' || c == '>') {
          --depth;
        }
      }
      if (depth != 0) return error(start);
      attribute.text = std::string(written.substr(start, i - start));
    }
    attribute.written = std::string(written.substr(start, i - start));
    attributes.push_back(std::move(attribute));
    if (i < end && written[i] != ',') return error(i);
    if (i < end) ++i;
  }
  return attributes;
}

// The text of frontend attribute `key` of `instruction`; InvalidArgument naming both when it is missing.
StatusOr<std::string> FrontendAttributeOf(const HloInstruction& instruction, std::string_view key) {
  const std::string* written = instruction.raw_attribute("frontend_attributes");
  if (written != nullptr) {
    StatusOr<std::vector<FrontendAttribute>> attributes = ParseFrontendAttributes(*written);
    if (!attributes.ok()) return WithContext(attributes.status(), Named(instruction) + ": ");
    for (const FrontendAttribute& attribute : *attributes)
      if (attribute.key == key) return attribute.text;
  }
  return InvalidArgument(Named(instruction) + " has no frontend attribute " + std::string(key));
}

// `written` without Shardy's keys ("" when nothing else is left).
StatusOr<std::string> WithoutShardyAttributes(const std::string& written) {
  TPU_ASSIGN_OR_RETURN(std::vector<FrontendAttribute> attributes, ParseFrontendAttributes(written));
  std::string kept;
  for (const FrontendAttribute& attribute : attributes) {
    if (attribute.key.rfind(kShardyPrefix, 0) == 0) continue;
    kept += (kept.empty() ? "" : ",") + attribute.key + "=" + attribute.written;
  }
  return kept.empty() ? "" : "{" + kept + "}";
}

// Reads Shardy's attributes (MLIR syntax); spaces between tokens are skipped.
class ShardyReader {
 public:
  explicit ShardyReader(std::string_view text) : text_(text) {}

  bool Consume(std::string_view token) {
    SkipSpaces();
    if (text_.substr(position_, token.size()) != token) return false;
    position_ += token.size();
    return true;
  }
  // "name"
  bool ReadString(std::string* value) {
    if (!Consume("\"")) return false;
    const size_t end = text_.find('"', position_);
    if (end == std::string_view::npos) return false;
    *value = std::string(text_.substr(position_, end - position_));
    position_ = end + 1;
    return true;
  }
  // A symbol name: mesh in `@mesh` and `mesh = #sdy.mesh<...>`.
  bool ReadName(std::string* name) {
    SkipSpaces();
    const size_t start = position_;
    while (position_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[position_])) ||
                                        std::string_view("_.$-").find(text_[position_]) != std::string_view::npos))
      ++position_;
    *name = std::string(text_.substr(start, position_ - start));
    return !name->empty();
  }
  bool ReadInt(int64_t* value) {
    SkipSpaces();
    const size_t start = position_;
    while (position_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[position_]))) ++position_;
    if (position_ == start || position_ - start > 9) return false;
    *value = std::stoll(std::string(text_.substr(start, position_ - start)));
    return true;
  }
  bool AtEnd() {
    SkipSpaces();
    return position_ == text_.size();
  }
  Status Expected(std::string_view what) const {
    return InvalidArgument("expected " + std::string(what) + " at '" + std::string(text_.substr(position_, 40)) + "'");
  }

 private:
  void SkipSpaces() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) ++position_;
  }
  std::string_view text_;
  size_t position_ = 0;
};

// Strings separated by commas up to `close`: `"x", "y"}`.
Status ReadStrings(ShardyReader* reader, std::string_view close, std::vector<std::string>* strings) {
  while (!reader->Consume(close)) {
    if (!strings->empty() && !reader->Consume(","))
      return reader->Expected("',' or '" + std::string(close) + "'");
    std::string value;
    if (!reader->ReadString(&value)) return reader->Expected("a quoted axis name");
    strings->push_back(std::move(value));
  }
  return OkStatus();
}

// #sdy.mesh<["x"=2, "y"=4]>: the devices are numbered row-major over the axes, the first axis major.
struct Mesh {
  std::vector<std::string> axis_names;
  std::vector<int64_t> axis_sizes;

  int64_t devices() const {
    int64_t devices = 1;
    for (int64_t size : axis_sizes) devices *= size;
    return devices;
  }
  int64_t AxisIndex(const std::string& name) const {
    auto found = std::find(axis_names.begin(), axis_names.end(), name);
    return found == axis_names.end() ? -1 : found - axis_names.begin();
  }
  int64_t Coordinate(int64_t device, size_t axis) const {
    int64_t stride = 1;
    for (size_t a = axis + 1; a < axis_sizes.size(); ++a) stride *= axis_sizes[a];
    return device / stride % axis_sizes[axis];
  }
};

Status ReadMesh(ShardyReader* reader, Mesh* mesh) {
  if (!reader->Consume("#sdy.mesh<") || !reader->Consume("[")) return reader->Expected("#sdy.mesh<[");
  while (!reader->Consume("]")) {
    if (!mesh->axis_names.empty() && !reader->Consume(",")) return reader->Expected("',' or ']'");
    std::string name;
    int64_t size = 0;
    if (!reader->ReadString(&name) || !reader->Consume("=") || !reader->ReadInt(&size) || size < 1)
      return reader->Expected("\"axis\"=size");
    if (mesh->AxisIndex(name) >= 0) return InvalidArgument("mesh axis \"" + name + "\" named twice");
    mesh->axis_names.push_back(name);
    mesh->axis_sizes.push_back(size);
    if (mesh->devices() > hlo::kMaxDevices)
      return InvalidArgument("a mesh of more than " + std::to_string(hlo::kMaxDevices) + " devices");
  }
  if (reader->Consume(",")) {
    // Devices in another order than the mesh's would need partition-id mapped; only the usual order is taken.
    if (!reader->Consume("device_ids") || !reader->Consume("=") || !reader->Consume("["))
      return reader->Expected("device_ids=[");
    for (int64_t i = 0; !reader->Consume("]"); ++i) {
      int64_t id = 0;
      if ((i > 0 && !reader->Consume(",")) || !reader->ReadInt(&id)) return reader->Expected("a device id");
      if (id != i) return Unimplemented("meshes with devices in another order (device_ids) are not handled");
    }
  }
  if (!reader->Consume(">")) return reader->Expected("'>'");
  return OkStatus();
}

// The meshes of frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<...>, ...}} in the module header.
StatusOr<std::map<std::string, Mesh>> ModuleMeshes(const HloModule& module) {
  std::string text;
  for (const auto& [key, value] : module.raw_attributes()) {
    if (key != "frontend_attributes") continue;
    TPU_ASSIGN_OR_RETURN(std::vector<FrontendAttribute> attributes, ParseFrontendAttributes(value));
    for (const FrontendAttribute& attribute : attributes)
      if (attribute.key == "xla.sdy.meshes") text = attribute.text;
  }
  if (text.empty()) return InvalidArgument("the module header names no mesh (frontend_attributes xla.sdy.meshes)");
  std::map<std::string, Mesh> meshes;
  ShardyReader reader(text);
  Status read = [&]() -> Status {
    if (!reader.Consume("{")) return reader.Expected("'{'");
    while (!reader.Consume("}")) {
      if (!meshes.empty() && !reader.Consume(",")) return reader.Expected("',' or '}'");
      std::string name;
      if (!reader.ReadName(&name) || !reader.Consume("=")) return reader.Expected("name = #sdy.mesh<...>");
      TPU_RETURN_IF_ERROR(ReadMesh(&reader, &meshes[name]));
    }
    return reader.AtEnd() ? OkStatus() : reader.Expected("the end");
  }();
  TPU_RETURN_IF_ERROR(WithContext(read, "the module's xla.sdy.meshes \"" + text + "\": "));
  return meshes;
}

// <@mesh, [{"x"}, {}]>: per dimension, the mesh axes splitting it, major first.
struct Sharding {
  std::string mesh;
  std::vector<std::vector<std::string>> dimensions;
  // What the text says that the pass does not handle (open dimensions, sub-axes, unreduced axes); ""
  // when nothing. Read through, so that a partially manual computation is reported as such first.
  std::string unhandled;
};

Status ReadSharding(ShardyReader* reader, Sharding* sharding) {
  if (!reader->Consume("<")) return reader->Expected("'<'");
  if (!reader->Consume("@")) return Unimplemented("shardings with a mesh written in line are not handled");
  if (!reader->ReadName(&sharding->mesh)) return reader->Expected("a mesh name");
  if (!reader->Consume(",") || !reader->Consume("[")) return reader->Expected(", [");
  while (!reader->Consume("]")) {
    if (!sharding->dimensions.empty() && !reader->Consume(",")) return reader->Expected("',' or ']'");
    if (!reader->Consume("{")) return reader->Expected("'{'");
    std::vector<std::string>& axes = sharding->dimensions.emplace_back();
    while (!reader->Consume("}")) {
      if (!axes.empty() && !reader->Consume(",")) return reader->Expected("',' or '}'");
      // Open dimensions leave the cut to propagation, which a manual computation has none of.
      if (reader->Consume("?")) {
        sharding->unhandled = "open dimensions ('?')";
        continue;
      }
      if (!reader->ReadString(&axes.emplace_back())) return reader->Expected("a quoted axis name");
      int64_t offset = 0, size = 0;
      if (reader->Consume(":")) {
        if (!reader->Consume("(") || !reader->ReadInt(&offset) || !reader->Consume(")") || !reader->ReadInt(&size))
          return reader->Expected("a sub-axis (k)n");
        sharding->unhandled =
            "sub-axes (\"" + axes.back() + "\":(" + std::to_string(offset) + ")" + std::to_string(size) + ")";
      }
    }
    int64_t priority = 0;
    if (reader->Consume("p") && !reader->ReadInt(&priority)) return reader->Expected("a priority");
  }
  while (reader->Consume(",")) {
    std::string key;
    if (!reader->ReadName(&key) || !reader->Consume("=") || !reader->Consume("{")) return reader->Expected("key={...}");
    // Replicated axes are what the dimensions leave out anyway; unreduced ones hold partial sums.
    if (key != "replicated") sharding->unhandled = key + " axes";
    std::vector<std::string> axes;
    TPU_RETURN_IF_ERROR(ReadStrings(reader, "}", &axes));
  }
  if (!reader->Consume(">")) return reader->Expected("'>'");
  return OkStatus();
}

// #sdy.sharding_per_value<[<@mesh, [...]>, ...]>
StatusOr<std::vector<Sharding>> ReadShardingPerValue(const std::string& text) {
  std::vector<Sharding> shardings;
  ShardyReader reader(text);
  if (!reader.Consume("#sdy.sharding_per_value<") || !reader.Consume("["))
    return reader.Expected("#sdy.sharding_per_value<[");
  while (!reader.Consume("]")) {
    if (!shardings.empty() && !reader.Consume(",")) return reader.Expected("',' or ']'");
    TPU_RETURN_IF_ERROR(ReadSharding(&reader, &shardings.emplace_back()));
  }
  if (!reader.Consume(">") || !reader.AtEnd()) return reader.Expected("'>' and the end");
  return shardings;
}

// #sdy<manual_axes{"x", "y"}>
StatusOr<std::vector<std::string>> ReadManualAxes(const std::string& text) {
  ShardyReader reader(text);
  if (!reader.Consume("#sdy<") || !reader.Consume("manual_axes") || !reader.Consume("{"))
    return reader.Expected("#sdy<manual_axes{");
  std::vector<std::string> axes;
  TPU_RETURN_IF_ERROR(ReadStrings(&reader, "}", &axes));
  if (!reader.Consume(">") || !reader.AtEnd()) return reader.Expected("'>' and the end");
  return axes;
}

// How an array of `shape` is cut as `sharding` says on `mesh` (named `mesh_name`).
StatusOr<ShardLayout> LayoutOf(const Sharding& sharding, const std::string& mesh_name, const Mesh& mesh,
                                const Shape& shape) {
  if (!sharding.unhandled.empty()) return Unimplemented("shardings with " + sharding.unhandled + " are not handled");
  if (sharding.mesh != mesh_name)
    return Unimplemented("sharding on mesh @" + sharding.mesh + " in a module whose manual computations use @" +
                         mesh_name);
  if (!shape.IsArray()) return InvalidArgument("a sharding of " + shape.ToString() + ", which is not an array");
  if (static_cast<int>(sharding.dimensions.size()) != shape.rank())
    return InvalidArgument("a sharding of " + std::to_string(sharding.dimensions.size()) + " dimensions for " +
                           shape.ToString());
  ShardLayout layout;
  layout.axes = sharding.dimensions;
  std::vector<bool> used(mesh.axis_names.size(), false);
  for (int i = 0; i < shape.rank(); ++i) {
    int64_t pieces = 1;
    for (const std::string& axis : layout.axes[i]) {
      const int64_t index = mesh.AxisIndex(axis);
      if (index < 0) return InvalidArgument("axis \"" + axis + "\" is not an axis of mesh @" + mesh_name);
      if (used[index]) return InvalidArgument("axis \"" + axis + "\" splits two dimensions");
      used[index] = true;
      pieces *= mesh.axis_sizes[index];
    }
    if (shape.dimensions[i] % pieces != 0)
      return InvalidArgument("dimension " + std::to_string(i) + " of " + shape.ToString() + " does not split into " +
                             std::to_string(pieces) + " pieces");
    layout.pieces.push_back(pieces);
  }
  for (int64_t device = 0; device < mesh.devices(); ++device) {
    std::vector<int64_t>& blocks = layout.device_blocks.emplace_back();
    for (const std::vector<std::string>& axes : layout.axes) {
      int64_t block = 0;
      for (const std::string& axis : axes) {
        const size_t index = static_cast<size_t>(mesh.AxisIndex(axis));
        block = block * mesh.axis_sizes[index] + mesh.Coordinate(device, index);
      }
      blocks.push_back(block);
    }
  }
  return layout;
}

// What an instruction of the global view is to one device.
struct DeviceValue {
  enum class Kind {
    kGlobal,  // a global array, cut as `layout`; `part` computes the device's part
    kLocal,   // a value of the manual computation (or a non-array every device computes alike), `part`
    kTuple,   // a tuple of `elements`
  };
  Kind kind = Kind::kLocal;
  HloInstruction* part = nullptr;
  ShardLayout layout;
  std::vector<DeviceValue> elements;

  bool replicated() const {
    return kind == Kind::kGlobal &&
           std::all_of(layout.pieces.begin(), layout.pieces.end(), [](int64_t pieces) { return pieces == 1; });
  }
  // Whether every device can use the value as it is: a global array only when it is whole everywhere.
  bool same_on_each_device() const {
    if (kind == Kind::kTuple)
      return std::all_of(elements.begin(), elements.end(),
                         [](const DeviceValue& element) { return element.same_on_each_device(); });
    return kind == Kind::kLocal || replicated();
  }
  bool has_local() const {
    if (kind == Kind::kTuple)
      return std::any_of(elements.begin(), elements.end(),
                         [](const DeviceValue& element) { return element.has_local(); });
    return kind == Kind::kLocal;
  }
};

DeviceValue Local(HloInstruction* part) {
  DeviceValue value;
  value.part = part;
  return value;
}

DeviceValue Global(HloInstruction* part, ShardLayout layout) {
  DeviceValue value;
  value.kind = DeviceValue::Kind::kGlobal;
  value.part = part;
  value.layout = std::move(layout);
  return value;
}

// Reads the global view of the entry (Analyze, which changes nothing) and then rewrites it (Rewrite).
class GlobalViewRewriter {
 public:
  explicit GlobalViewRewriter(HloModule* module) : module_(module), entry_(module->entry_computation()) {}

  Status Analyze();
  Status Rewrite();

  int64_t devices() const { return mesh_.devices(); }
  const std::vector<ShardLayout>& parameter_layouts() const { return parameter_layouts_; }
  const std::vector<ShardLayout>& result_layouts() const { return result_layouts_; }

 private:
  Status ReadCuts();
  Status ReadParameterLayouts();
  StatusOr<DeviceValue> Visit(HloInstruction* instruction);
  StatusOr<DeviceValue> VisitGlobalToLocal(HloInstruction* cut);
  StatusOr<DeviceValue> VisitLocalToGlobal(HloInstruction* join);
  StatusOr<DeviceValue> VisitOther(HloInstruction* instruction);
  StatusOr<ShardLayout> Layout(const HloInstruction& instruction, size_t value, const Shape& shape) const;
  // The layout of a value of `instruction`'s shape that every device holds whole.
  StatusOr<ShardLayout> WholeLayout(const HloInstruction& instruction) const;
  HloInstruction* PartOf(HloInstruction* instruction);
  HloInstruction* PartOf(const DeviceValue& value);
  Status RewriteHeader();

  HloModule* module_;
  HloComputation* entry_;
  std::string mesh_name_;
  Mesh mesh_;
  // The shardings of every Shardy custom call of the entry, one per value.
  std::unordered_map<const HloInstruction*, std::vector<Sharding>> cuts_;
  std::vector<HloInstruction*> live_;  // post order, parameters excluded
  std::unordered_map<const HloInstruction*, DeviceValue> values_;
  std::unordered_map<const HloInstruction*, HloInstruction*> tuple_parts_;
  DeviceValue root_;
  std::vector<ShardLayout> parameter_layouts_;
  std::vector<ShardLayout> result_layouts_;
};

Status GlobalViewRewriter::ReadCuts() {
  TPU_ASSIGN_OR_RETURN(auto meshes, ModuleMeshes(*module_));
  std::vector<std::pair<const HloInstruction*, std::vector<std::string>>> manual_axes;
  const HloInstruction* first = nullptr;
  for (const HloInstruction* instruction : entry_->instructions()) {
    if (!IsShardyCustomCall(*instruction)) continue;
    if (first == nullptr) first = instruction;
    const std::string& target = instruction->custom_call_target();
    const char* key = target == kGlobalToLocal ? "xla.sdy.in_shardings"
                      : target == kLocalToGlobal ? "xla.sdy.out_shardings"
                      : target == kFuncResultSharding ? "xla.sdy.sharding"
                                                      : nullptr;
    if (key == nullptr)
      return Unimplemented(Named(*instruction) + ": custom call target " + target + " is not handled");
    TPU_ASSIGN_OR_RETURN(std::string text, FrontendAttributeOf(*instruction, key));
    StatusOr<std::vector<Sharding>> shardings = ReadShardingPerValue(text);
    TPU_RETURN_IF_ERROR(WithContext(shardings.status(), Named(*instruction) + ": " + key + " \"" + text + "\": "));
    const Shape& shape = instruction->shape();
    const size_t values = target == kLocalToGlobal ? (shape.IsTuple() ? shape.tuple_shapes.size() : 1)
                                                   : static_cast<size_t>(instruction->operand_count());
    if (shardings->size() != values)
      return InvalidArgument(Named(*instruction) + ": " + key + " has " + std::to_string(shardings->size()) +
                             " shardings for " + std::to_string(values) + " values");
    if (mesh_name_.empty() && !shardings->empty()) mesh_name_ = shardings->front().mesh;
    cuts_[instruction] = std::move(shardings).value();
    if (target == kFuncResultSharding) continue;
    TPU_ASSIGN_OR_RETURN(std::string axes_text, FrontendAttributeOf(*instruction, "xla.sdy.manual_axes"));
    StatusOr<std::vector<std::string>> axes = ReadManualAxes(axes_text);
    TPU_RETURN_IF_ERROR(
        WithContext(axes.status(), Named(*instruction) + ": xla.sdy.manual_axes \"" + axes_text + "\": "));
    manual_axes.emplace_back(instruction, std::move(axes).value());
  }
  if (manual_axes.empty()) {
    return Unimplemented(Named(*first) + ": Shardy's custom calls without a manual computation "
                         "(shard_map); a program sharded by propagation is not handled");
  }
  if (meshes.size() == 1) mesh_name_ = meshes.begin()->first;
  auto mesh = meshes.find(mesh_name_);
  if (mesh == meshes.end()) return InvalidArgument("the module header has no mesh @" + mesh_name_);
  mesh_ = mesh->second;
  // Every axis must be manual: the pass does not partition what is left to propagation.
  for (const auto& [instruction, axes] : manual_axes) {
    std::vector<std::string> manual = axes, all = mesh_.axis_names;
    std::sort(manual.begin(), manual.end());
    std::sort(all.begin(), all.end());
    if (manual == all) continue;
    std::string names;
    for (const std::string& axis : mesh_.axis_names) names += (names.empty() ? "\"" : ", \"") + axis + "\"";
    return Unimplemented(Named(*instruction) + ": a manual computation over some of the axes of mesh @" + mesh_name_ +
                         " (" + names + "); only computations manual over every axis are handled");
  }
  return OkStatus();
}

StatusOr<ShardLayout> GlobalViewRewriter::Layout(const HloInstruction& instruction, size_t value,
                                                  const Shape& shape) const {
  StatusOr<ShardLayout> layout = LayoutOf(cuts_.at(&instruction).at(value), mesh_name_, mesh_, shape);
  if (!layout.ok()) return WithContext(layout.status(), Named(instruction) + ", value " + std::to_string(value) + ": ");
  return layout;
}

StatusOr<ShardLayout> GlobalViewRewriter::WholeLayout(const HloInstruction& instruction) const {
  Sharding whole{mesh_name_, std::vector<std::vector<std::string>>(static_cast<size_t>(instruction.shape().rank()))};
  StatusOr<ShardLayout> layout = LayoutOf(whole, mesh_name_, mesh_, instruction.shape());
  if (!layout.ok()) return WithContext(layout.status(), Named(instruction) + ": ");
  return layout;
}

// A parameter is cut as the manual computations that take it say (all alike); one they do not take is whole.
Status GlobalViewRewriter::ReadParameterLayouts() {
  for (HloInstruction* parameter : entry_->parameter_instructions()) {
    if (parameter == nullptr) return InvalidArgument("the entry computation misses a parameter number");
    if (!parameter->shape().IsArray())
      return Unimplemented(Named(*parameter) + ": parameters of type " + parameter->shape().ToString() +
                           " are not handled");
    std::optional<ShardLayout> layout;
    const HloInstruction* first_cut = nullptr;
    for (const HloInstruction* user : parameter->users()) {
      if (!IsCustomCall(*user, kGlobalToLocal)) continue;
      for (int64_t i = 0; i < user->operand_count(); ++i) {
        if (user->operand(i) != parameter) continue;
        TPU_ASSIGN_OR_RETURN(ShardLayout cut, Layout(*user, static_cast<size_t>(i), parameter->shape()));
        if (layout.has_value() && cut != *layout)
          return Unimplemented(Named(*user) + " takes %" + parameter->name() + " cut as " + cut.ToString() + ", %" +
                               first_cut->name() + " as " + layout->ToString() + " (resharding is not handled)");
        if (!layout.has_value()) first_cut = user;
        layout = std::move(cut);
      }
    }
    if (!layout.has_value()) {
      TPU_ASSIGN_OR_RETURN(layout, WholeLayout(*parameter));
    }
    values_[parameter] = Global(parameter, std::move(layout).value());
  }
  return OkStatus();
}

StatusOr<DeviceValue> GlobalViewRewriter::VisitGlobalToLocal(HloInstruction* cut) {
  const bool tuple = cut->shape().IsTuple();
  if (!tuple && cut->operand_count() != 1)
    return InvalidArgument(Named(*cut) + ": " + std::to_string(cut->operand_count()) + " operands and one result");
  if (tuple && static_cast<int64_t>(cut->shape().tuple_shapes.size()) != cut->operand_count())
    return InvalidArgument(Named(*cut) + ": " + std::to_string(cut->operand_count()) + " operands and " +
                           std::to_string(cut->shape().tuple_shapes.size()) + " results");
  DeviceValue result;
  result.kind = DeviceValue::Kind::kTuple;
  for (int64_t i = 0; i < cut->operand_count(); ++i) {
    HloInstruction* operand = cut->operand(i);
    const DeviceValue& global = values_.at(operand);
    if (global.kind != DeviceValue::Kind::kGlobal)
      return InvalidArgument(Named(*cut) + ": operand %" + operand->name() + " is not a global array");
    TPU_ASSIGN_OR_RETURN(ShardLayout wanted, Layout(*cut, static_cast<size_t>(i), operand->shape()));
    if (wanted != global.layout)
      return Unimplemented(Named(*cut) + " takes %" + operand->name() + " cut as " + wanted.ToString() +
                           ", but it is cut as " + global.layout.ToString() + " (resharding is not handled)");
    const Shape& local = tuple ? cut->shape().tuple_shapes[i] : cut->shape();
    if (local != wanted.PartShape(operand->shape()))
      return InvalidArgument(Named(*cut) + ": a device's part of %" + operand->name() + " cut as " + wanted.ToString() +
                             " is " + wanted.PartShape(operand->shape()).ToString() + ", not " + local.ToString());
    result.elements.push_back(Local(global.part));
  }
  return tuple ? result : result.elements.front();
}

StatusOr<DeviceValue> GlobalViewRewriter::VisitLocalToGlobal(HloInstruction* join) {
  const bool tuple = join->shape().IsTuple();
  const size_t results = tuple ? join->shape().tuple_shapes.size() : 1;
  if (static_cast<size_t>(join->operand_count()) != results)
    return InvalidArgument(Named(*join) + ": " + std::to_string(join->operand_count()) + " operands and " +
                           std::to_string(results) + " results");
  DeviceValue result;
  result.kind = DeviceValue::Kind::kTuple;
  for (size_t i = 0; i < results; ++i) {
    HloInstruction* operand = join->operand(static_cast<int64_t>(i));
    const DeviceValue& local = values_.at(operand);
    if (local.kind == DeviceValue::Kind::kTuple || !local.same_on_each_device())
      return InvalidArgument(Named(*join) + ": operand %" + operand->name() +
                             " is not an array of the manual computation");
    const Shape& global = tuple ? join->shape().tuple_shapes[i] : join->shape();
    TPU_ASSIGN_OR_RETURN(ShardLayout layout, Layout(*join, i, global));
    if (operand->shape() != layout.PartShape(global))
      return InvalidArgument(Named(*join) + ": a device's part of " + global.ToString() + " cut as " +
                             layout.ToString() + " is " + layout.PartShape(global).ToString() + ", not " +
                             operand->shape().ToString() + " (%" + operand->name() + ")");
    result.elements.push_back(Global(local.part, std::move(layout)));
  }
  return tuple ? result : result.elements.front();
}

// Any other instruction: a value of the manual computation if it uses one, else a value every device
// computes alike from whole arrays. Global-view work on parts of arrays needs a partitioner.
StatusOr<DeviceValue> GlobalViewRewriter::VisitOther(HloInstruction* instruction) {
  bool uses_local = IsManualBodyCall(*instruction);
  if (uses_local && instruction->to_apply()->num_parameters() != instruction->operand_count())
    return InvalidArgument(Named(*instruction) + " passes " + std::to_string(instruction->operand_count()) +
                           " operands to %" + instruction->to_apply()->name() + ", which takes " +
                           std::to_string(instruction->to_apply()->num_parameters()));
  for (const HloInstruction* operand : instruction->operands()) {
    const DeviceValue& value = values_.at(operand);
    if (!value.same_on_each_device()) {
      const std::string cut =
          value.kind == DeviceValue::Kind::kGlobal ? "cut as " + value.layout.ToString() : "(parts of cut arrays)";
      return Unimplemented(Named(*instruction) + " works on %" + operand->name() + " " + cut +
                           " outside the manual computation (shard_map); only manual computations are handled");
    }
    uses_local |= value.has_local();
  }
  // Every device doing it once would not be the global view's doing it once.
  if (!uses_local && instruction->HasSideEffect())
    return Unimplemented(Named(*instruction) + ": global-view instructions with side effects are not handled");
  if (uses_local || !instruction->shape().IsArray()) return Local(instruction);
  TPU_ASSIGN_OR_RETURN(ShardLayout whole, WholeLayout(*instruction));
  return Global(instruction, std::move(whole));
}

StatusOr<DeviceValue> GlobalViewRewriter::Visit(HloInstruction* instruction) {
  if (IsCustomCall(*instruction, kGlobalToLocal)) return VisitGlobalToLocal(instruction);
  if (IsCustomCall(*instruction, kLocalToGlobal)) return VisitLocalToGlobal(instruction);
  if (IsCustomCall(*instruction, kFuncResultSharding)) {
    // States how the result is cut; it must be as it already is.
    if (instruction->operand_count() != 1) return InvalidArgument(Named(*instruction) + ": expected one operand");
    const DeviceValue& value = values_.at(instruction->operand(0));
    if (value.kind != DeviceValue::Kind::kGlobal)
      return InvalidArgument(Named(*instruction) + ": operand %" + instruction->operand(0)->name() +
                             " is not a global array");
    TPU_ASSIGN_OR_RETURN(ShardLayout stated, Layout(*instruction, 0, instruction->shape()));
    if (stated != value.layout)
      return Unimplemented(Named(*instruction) + " wants the result cut as " + stated.ToString() +
                           ", but it is cut as " + value.layout.ToString() + " (resharding is not handled)");
    return value;
  }
  switch (instruction->opcode()) {
    case HloOpcode::kTuple: {
      DeviceValue tuple;
      tuple.kind = DeviceValue::Kind::kTuple;
      for (const HloInstruction* operand : instruction->operands()) tuple.elements.push_back(values_.at(operand));
      return tuple;
    }
    case HloOpcode::kGetTupleElement: {
      const Shape& shape = instruction->operand(0)->shape();
      if (!shape.IsTuple() || instruction->tuple_index() < 0 ||
          instruction->tuple_index() >= static_cast<int64_t>(shape.tuple_shapes.size()))
        return InvalidArgument(Named(*instruction) + ": no element " + std::to_string(instruction->tuple_index()) +
                               " in " + shape.ToString());
      const DeviceValue& tuple = values_.at(instruction->operand(0));
      if (tuple.kind != DeviceValue::Kind::kTuple) break;
      return tuple.elements.at(static_cast<size_t>(instruction->tuple_index()));
    }
    case HloOpcode::kReshape: {
      // JAX's reshapes of results to their own shape (they carry the sharding in the global view).
      const DeviceValue& value = values_.at(instruction->operand(0));
      if (value.kind == DeviceValue::Kind::kGlobal && instruction->shape() == instruction->operand(0)->shape())
        return value;
      break;
    }
    default:
      break;
  }
  return VisitOther(instruction);
}

Status GlobalViewRewriter::Analyze() {
  if (entry_->root_instruction() == nullptr) return InvalidArgument("the entry computation has no root");
  TPU_RETURN_IF_ERROR(ReadCuts());
  for (const auto& [key, value] : module_->raw_attributes()) {
    if (key == "replica_count" && value != "1")
      return Unimplemented("a module of replica_count=" + value + ": the devices of the mesh are partitions");
    if (key == "num_partitions" && value != std::to_string(mesh_.devices()))
      return InvalidArgument("the module header says num_partitions=" + value + ", its mesh @" + mesh_name_ + " has " +
                             std::to_string(mesh_.devices()) + " devices");
  }
  TPU_RETURN_IF_ERROR(ReadParameterLayouts());
  // What the result needs and what has side effects: the rest goes.
  std::unordered_set<const HloInstruction*> live;
  std::vector<const HloInstruction*> stack = {entry_->root_instruction()};
  for (const HloInstruction* instruction : entry_->instructions())
    if (instruction->HasSideEffect()) stack.push_back(instruction);
  while (!stack.empty()) {
    const HloInstruction* instruction = stack.back();
    stack.pop_back();
    if (instruction == nullptr || !live.insert(instruction).second) continue;
    for (const HloInstruction* operand : instruction->operands()) stack.push_back(operand);
  }
  for (HloInstruction* instruction : entry_->MakeInstructionPostOrder()) {
    if (!live.count(instruction) || instruction->opcode() == HloOpcode::kParameter) continue;
    TPU_ASSIGN_OR_RETURN(DeviceValue value, Visit(instruction));
    values_[instruction] = std::move(value);
    live_.push_back(instruction);
  }
  root_ = values_.at(entry_->root_instruction());
  const std::vector<DeviceValue> results =
      root_.kind == DeviceValue::Kind::kTuple ? root_.elements : std::vector<DeviceValue>{root_};
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].kind != DeviceValue::Kind::kGlobal)
      return Unimplemented("result " + std::to_string(i) + " of the entry (%" + entry_->root_instruction()->name() +
                           ") is not a global array");
    result_layouts_.push_back(results[i].layout);
  }
  for (const HloInstruction* parameter : entry_->parameter_instructions())
    parameter_layouts_.push_back(values_.at(parameter).layout);
  return OkStatus();
}

// The instruction computing a device's `value`; a tuple of parts is made when first needed.
HloInstruction* GlobalViewRewriter::PartOf(const DeviceValue& value) {
  if (value.kind != DeviceValue::Kind::kTuple) return value.part;
  std::vector<HloInstruction*> elements;
  for (const DeviceValue& element : value.elements) elements.push_back(PartOf(element));
  return entry_->AddInstruction(HloInstruction::CreateTuple(std::move(elements)));
}

HloInstruction* GlobalViewRewriter::PartOf(HloInstruction* instruction) {
  const DeviceValue& value = values_.at(instruction);
  if (value.kind != DeviceValue::Kind::kTuple) return value.part;
  HloInstruction*& part = tuple_parts_[instruction];
  if (part == nullptr) part = PartOf(value);
  return part;
}

Status GlobalViewRewriter::Rewrite() {
  for (HloInstruction* parameter : entry_->parameter_instructions()) {
    parameter->set_shape(values_.at(parameter).layout.PartShape(parameter->shape()));
    parameter->remove_raw_attribute("sharding");
    if (const std::string* attributes = parameter->raw_attribute("frontend_attributes")) {
      TPU_ASSIGN_OR_RETURN(std::string kept, WithoutShardyAttributes(*attributes));
      if (kept.empty()) {
        parameter->remove_raw_attribute("frontend_attributes");
      } else {
        parameter->set_raw_attribute("frontend_attributes", kept);
      }
    }
  }
  // What stays reads the devices' parts instead of the global view's values.
  std::vector<HloInstruction*> body_calls;
  for (HloInstruction* instruction : live_) {
    if (values_.at(instruction).part != instruction) continue;
    for (int64_t i = 0; i < instruction->operand_count(); ++i) {
      HloInstruction* part = PartOf(instruction->operand(i));
      if (part != instruction->operand(i)) TPU_RETURN_IF_ERROR(instruction->ReplaceOperandWith(i, part));
    }
    if (IsManualBodyCall(*instruction)) body_calls.push_back(instruction);
  }
  entry_->set_root_instruction(root_.kind == DeviceValue::Kind::kTuple ? PartOf(root_) : root_.part);
  entry_->RemoveDeadInstructions();
  for (HloInstruction* call : body_calls) TPU_RETURN_IF_ERROR(InlineComputation(entry_, call, *call->to_apply()));
  // The inlined bodies end in tuples that the entry takes apart again.
  for (HloInstruction* instruction : std::vector<HloInstruction*>(entry_->instructions())) {
    if (instruction->opcode() != HloOpcode::kGetTupleElement) continue;
    const HloInstruction* tuple = instruction->operand(0);
    if (tuple->opcode() != HloOpcode::kTuple || instruction->tuple_index() < 0 ||
        instruction->tuple_index() >= tuple->operand_count())
      continue;
    TPU_RETURN_IF_ERROR(instruction->ReplaceAllUsesWith(tuple->operand(instruction->tuple_index())));
  }
  entry_->RemoveDeadInstructions();
  module_->RemoveUnusedComputations();
  return RewriteHeader();
}

// num_partitions says how many devices run the program; what described the global view goes.
Status GlobalViewRewriter::RewriteHeader() {
  auto& attributes = module_->mutable_raw_attributes();
  bool has_partitions = false;
  for (auto it = attributes.begin(); it != attributes.end();) {
    if (it->first == "entry_computation_layout") {
      it = attributes.erase(it);
      continue;
    }
    if (it->first == "num_partitions") has_partitions = true;
    if (it->first == "frontend_attributes") {
      TPU_ASSIGN_OR_RETURN(it->second, WithoutShardyAttributes(it->second));
      if (it->second.empty()) {
        it = attributes.erase(it);
        continue;
      }
    }
    ++it;
  }
  if (!has_partitions) attributes.emplace_back("num_partitions", std::to_string(mesh_.devices()));
  return OkStatus();
}

}  // namespace

hlo::Shape ShardLayout::PartShape(const hlo::Shape& global) const {
  hlo::Shape part = global;
  for (size_t i = 0; i < pieces.size() && i < part.dimensions.size(); ++i) part.dimensions[i] /= pieces[i];
  return part;
}

std::string ShardLayout::ToString() const {
  std::string text = "[";
  for (size_t i = 0; i < axes.size(); ++i) {
    text += i == 0 ? "{" : ", {";
    for (size_t a = 0; a < axes[i].size(); ++a) text += (a == 0 ? "\"" : ", \"") + axes[i][a] + "\"";
    text += "}";
  }
  return text + "]";
}

StatusOr<bool> PerDeviceProgram::Run(HloModule* module) {
  devices_ = 0;
  parameter_layouts_.clear();
  result_layouts_.clear();
  HloComputation* entry = module->entry_computation();
  if (entry == nullptr) return false;
  bool global_view = false;
  for (const HloComputation* computation : module->computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (!IsShardyCustomCall(*instruction)) continue;
      if (computation != entry)
        return Unimplemented(Named(*instruction) + " in %" + computation->name() +
                             ": Shardy's custom calls are handled in the entry computation only");
      global_view = true;
    }
  }
  if (!global_view) return false;
  GlobalViewRewriter rewriter(module);
  TPU_RETURN_IF_ERROR(rewriter.Analyze());
  TPU_RETURN_IF_ERROR(rewriter.Rewrite());
  devices_ = rewriter.devices();
  parameter_layouts_ = rewriter.parameter_layouts();
  result_layouts_ = rewriter.result_layouts();
  return true;
}

}  // namespace tpu::compiler
