#include "compiler/codegen/program.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <fstream>
#include <iterator>
#include <type_traits>

#include "compiler/hlo/collective_groups.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu::compiler {

DeviceLayout MakeDeviceLayout(const hlo::Shape& shape, uint32_t lanes) {
  DeviceLayout layout;
  layout.shape = shape;
  const int rank = shape.rank();
  layout.cols = rank == 0 ? 1 : shape.dimensions.back();
  layout.rows = 1;
  for (int d = 0; d + 1 < rank; ++d) layout.rows *= shape.dimensions[d];
  layout.padded_cols = lanes == 0 ? layout.cols : (layout.cols + lanes - 1) / lanes * lanes;
  // A zero-sized dimension still occupies no line; keep at least the arithmetic consistent.
  layout.lines = lanes == 0 ? 0 : static_cast<uint32_t>(layout.rows * layout.padded_cols / lanes);
  return layout;
}

uint64_t DeviceLines(const hlo::Shape& shape, uint32_t lanes) {
  if (lanes == 0) return 0;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const int rank = shape.rank();
  const uint64_t cols = rank == 0 ? 1 : static_cast<uint64_t>(std::max<int64_t>(shape.dimensions.back(), 0));
  uint64_t lines = (cols + lanes - 1) / lanes;  // column tiles per row
  for (int d = 0; d + 1 < rank; ++d) {
    const uint64_t size = static_cast<uint64_t>(std::max<int64_t>(shape.dimensions[d], 0));
    if (size != 0 && lines > kMax / size) return kMax;
    lines *= size;
  }
  return lines;
}

namespace {

// The 32-bit device word of element `index` of an array literal (f32 bits; integers and pred as a
// two's-complement int32: narrow signed types sign-extended, narrow unsigned ones zero-extended; 64-bit
// integers keep their low 32 bits).
bool DeviceWord(const hlo::Literal& value, int64_t index, uint32_t* word) {
  return hlo::PrimitiveTypeSwitch(
      value.shape().element_type,
      [&](auto zero) -> bool {
        using T = decltype(zero);
        const T element = reinterpret_cast<const T*>(value.untyped_data())[index];
        if constexpr (std::is_same_v<T, float>) {
          std::memcpy(word, &element, 4);
          return true;
        } else if constexpr (std::is_same_v<T, hlo::bfloat16>) {
          *word = uint32_t{element.bits} << 16;  // the f32 with the same value: exact
          return true;
        } else if constexpr (std::is_same_v<T, hlo::half>) {
          const float wide = hlo::HalfToFloat(element);  // exact (a NaN becomes the canonical one)
          std::memcpy(word, &wide, 4);
          return true;
        } else if constexpr (std::is_integral_v<T>) {
          *word = static_cast<uint32_t>(static_cast<int64_t>(element));
          return true;
        } else {
          return false;
        }
      },
      [&]() { return false; });
}

void SetFromDeviceWord(hlo::Literal* value, int64_t index, uint32_t word) {
  hlo::PrimitiveTypeSwitch(
      value->shape().element_type,
      [&](auto zero) {
        using T = decltype(zero);
        T* target = reinterpret_cast<T*>(value->untyped_data()) + index;
        if constexpr (std::is_same_v<T, float>) {
          std::memcpy(target, &word, 4);
        } else if constexpr (std::is_same_v<T, hlo::bfloat16>) {
          // Device code keeps bf16 values exact in their words; a word that is not (a NaN payload, or
          // a value written without rounding) is rounded to nearest even here rather than truncated.
          float value;
          std::memcpy(&value, &word, 4);
          *target = (word & 0xffffu) == 0 ? hlo::bfloat16{static_cast<uint16_t>(word >> 16)}
                                          : hlo::FloatToBfloat16(value);
        } else if constexpr (std::is_same_v<T, hlo::half>) {
          // Device code keeps f16 values exact in their words (f16-rounding-expansion); any other word
          // is rounded to the nearest f16 (ties to even, subnormals, overflow to inf), as a convert does.
          float value;
          std::memcpy(&value, &word, 4);
          *target = hlo::FloatToHalf(value);
        } else if constexpr (std::is_same_v<T, bool>) {
          *target = word != 0;
        } else if constexpr (std::is_integral_v<T>) {
          *target = static_cast<T>(static_cast<int32_t>(word));
        }
      },
      [&]() {});
}

}  // namespace

bool IsDeviceElementType(hlo::PrimitiveType type) {
  switch (type) {
    case hlo::PrimitiveType::F32:
    case hlo::PrimitiveType::BF16:
    case hlo::PrimitiveType::F16:
    case hlo::PrimitiveType::S8:
    case hlo::PrimitiveType::S16:
    case hlo::PrimitiveType::S32:
    case hlo::PrimitiveType::S64:
    case hlo::PrimitiveType::U8:
    case hlo::PrimitiveType::U16:
    case hlo::PrimitiveType::U32:
    case hlo::PrimitiveType::PRED:
      return true;
    default:
      return false;
  }
}

Status CheckDeviceValues(const hlo::Literal& value) {
  if (value.IsTuple() || value.shape().element_type != hlo::PrimitiveType::S64) return OkStatus();
  const int64_t* elements = reinterpret_cast<const int64_t*>(value.untyped_data());
  for (int64_t i = 0; i < value.element_count(); ++i) {
    if (elements[i] < std::numeric_limits<int32_t>::min() || elements[i] > std::numeric_limits<int32_t>::max()) {
      return InvalidArgument("s64 value " + std::to_string(elements[i]) + " (element " + std::to_string(i) + " of " +
                             value.shape().ToString() +
                             ") does not fit the device's 32-bit integers: this TPU holds s64 values in the s32 "
                             "range only; convert to f32, or split the value");
    }
  }
  return OkStatus();
}

std::vector<uint8_t> ToDeviceBytes(const hlo::Literal& value, const DeviceLayout& layout) {
  std::vector<uint8_t> bytes(static_cast<size_t>(layout.rows * layout.padded_cols) * 4, 0);
  if (value.IsTuple() || !IsDeviceElementType(value.shape().element_type) ||
      value.element_count() != layout.rows * layout.cols) {
    return bytes;
  }
  if (value.shape().element_type == hlo::PrimitiveType::F32) {
    const uint8_t* source = value.untyped_data();
    for (int64_t r = 0; r < layout.rows; ++r) {
      std::memcpy(&bytes[static_cast<size_t>(r * layout.padded_cols) * 4], source + r * layout.cols * 4,
                  static_cast<size_t>(layout.cols) * 4);
    }
    return bytes;
  }
  for (int64_t r = 0; r < layout.rows; ++r) {
    for (int64_t c = 0; c < layout.cols; ++c) {
      uint32_t word = 0;
      DeviceWord(value, r * layout.cols + c, &word);
      std::memcpy(&bytes[static_cast<size_t>(r * layout.padded_cols + c) * 4], &word, 4);
    }
  }
  return bytes;
}

hlo::Literal FromDeviceBytes(const uint8_t* bytes, const DeviceLayout& layout) {
  hlo::Shape shape = layout.shape;
  if (!IsDeviceElementType(shape.element_type)) shape.element_type = hlo::PrimitiveType::F32;
  hlo::Literal literal(shape);
  if (shape.element_type == hlo::PrimitiveType::F32) {
    uint8_t* target = literal.untyped_data();
    for (int64_t r = 0; r < layout.rows; ++r) {
      std::memcpy(target + r * layout.cols * 4, bytes + r * layout.padded_cols * 4,
                  static_cast<size_t>(layout.cols) * 4);
    }
    return literal;
  }
  for (int64_t r = 0; r < layout.rows; ++r) {
    for (int64_t c = 0; c < layout.cols; ++c) {
      uint32_t word;
      std::memcpy(&word, bytes + (r * layout.padded_cols + c) * 4, 4);
      SetFromDeviceWord(&literal, r * layout.cols + c, word);
    }
  }
  return literal;
}

const char* RegionKindName(RegionKind kind) {
  switch (kind) {
    case RegionKind::kParameter: return "parameter";
    case RegionKind::kOutput: return "output";
    case RegionKind::kTemp: return "temp";
    case RegionKind::kConstant: return "constant";
    case RegionKind::kInfeed: return "infeed";
    case RegionKind::kOutfeed: return "outfeed";
    case RegionKind::kReceive: return "receive";
  }
  return "unknown";
}

const char* DeviceValueName(DeviceValue value) {
  switch (value) {
    case DeviceValue::kReplicaId: return "replica id";
    case DeviceValue::kPartitionId: return "partition id";
    case DeviceValue::kNextCore: return "next core";
    case DeviceValue::kNextReceive: return "next receive line";
    case DeviceValue::kWaitSemaphore: return "wait semaphore";
    case DeviceValue::kPostSemaphore: return "post semaphore";
    case DeviceValue::kChunkFirstLine: return "chunk first line";
    case DeviceValue::kChunkLines: return "chunk lines";
    case DeviceValue::kSendLines: return "send lines";
    case DeviceValue::kReceiveLines: return "receive lines";
    case DeviceValue::kZeroLines: return "zero lines";
  }
  return "unknown";
}

uint32_t PeerSemaphores() { return csr::SEMS - csr::HOST_SEMS; }

namespace {

size_t RegionCount(const Program& program, RegionKind kind) {
  switch (kind) {
    case RegionKind::kParameter: return program.parameters.size();
    case RegionKind::kOutput: return program.outputs.size();
    case RegionKind::kConstant: return program.constants.size();
    case RegionKind::kTemp: return 1;
    case RegionKind::kInfeed: return program.infeed.empty() ? 0 : 1;
    case RegionKind::kOutfeed: return program.outfeed.empty() ? 0 : 1;
    case RegionKind::kReceive: return program.receive_lines == 0 ? 0 : 1;
  }
  return 0;
}

uint64_t RegionLines(const Program& program, RegionKind kind, uint32_t index) {
  switch (kind) {
    case RegionKind::kParameter: return program.parameters[index].lines;
    case RegionKind::kOutput: return program.outputs[index].lines;
    case RegionKind::kConstant: return program.constants[index].lines;
    case RegionKind::kTemp: return program.temp_lines;
    case RegionKind::kInfeed: return FeedLines(program.infeed);
    case RegionKind::kOutfeed: return FeedLines(program.outfeed);
    case RegionKind::kReceive: return program.receive_lines;
  }
  return 0;
}

bool UsesRing(DeviceValue value) { return value != DeviceValue::kReplicaId && value != DeviceValue::kPartitionId; }

// Where `position` sits in `ring`: its group and its place there; false when no group holds it.
bool FindInRing(const CollectiveRing& ring, uint32_t position, const std::vector<uint32_t>** group, uint32_t* place) {
  for (const std::vector<uint32_t>& candidate : ring.groups) {
    for (size_t i = 0; i < candidate.size(); ++i) {
      if (candidate[i] != position) continue;
      *group = &candidate;
      *place = static_cast<uint32_t>(i);
      return true;
    }
  }
  return false;
}

// The device before and after `position` in `ring` (ValidateProgram has checked the ring covers it).
uint32_t Before(const CollectiveRing& ring, uint32_t position) {
  const std::vector<uint32_t>* group = nullptr;
  uint32_t place = 0;
  FindInRing(ring, position, &group, &place);
  return (*group)[(place + group->size() - 1) % group->size()];
}
uint32_t After(const CollectiveRing& ring, uint32_t position) {
  const std::vector<uint32_t>* group = nullptr;
  uint32_t place = 0;
  FindInRing(ring, position, &group, &place);
  return (*group)[(place + 1) % group->size()];
}

bool SendsToNext(const CollectiveRing& ring, uint32_t position) {
  return !std::binary_search(ring.open.begin(), ring.open.end(), position);
}

// The distinct devices that send to `position` in the program's rings, in ring order: the k-th one posts
// semaphore HOST_SEMS + k of this device.
std::vector<uint32_t> PeersBefore(const Program& program, uint32_t position) {
  std::vector<uint32_t> peers;
  for (const CollectiveRing& ring : program.rings) {
    const uint32_t before = Before(ring, position);
    if (!SendsToNext(ring, before)) continue;
    if (std::find(peers.begin(), peers.end(), before) == peers.end()) peers.push_back(before);
  }
  return peers;
}

uint32_t PeerSemaphore(const Program& program, uint32_t position, uint32_t peer) {
  const std::vector<uint32_t> peers = PeersBefore(program, position);
  return csr::HOST_SEMS + static_cast<uint32_t>(std::find(peers.begin(), peers.end(), peer) - peers.begin());
}

}  // namespace

Status ValidateRings(const Program& program) {
  const uint64_t devices = uint64_t{program.replicas} * program.partitions;
  if (devices == 0 || devices > uint64_t(hlo::kMaxDevices)) {
    return InvalidArgument("program has a grid of " + std::to_string(devices) + " devices (1 to " +
                           std::to_string(hlo::kMaxDevices) + ")");
  }
  for (size_t r = 0; r < program.rings.size(); ++r) {
    const CollectiveRing& ring = program.rings[r];
    std::vector<bool> seen(devices, false);
    uint64_t covered = 0;
    for (const std::vector<uint32_t>& group : ring.groups) {
      if (group.empty()) return InvalidArgument("ring " + std::to_string(r) + " has an empty group");
      for (uint32_t position : group) {
        if (position >= devices || seen[position]) {
          return InvalidArgument("ring " + std::to_string(r) + " names device " + std::to_string(position) +
                                 " twice or outside the grid of " + std::to_string(devices));
        }
        seen[position] = true;
        ++covered;
      }
    }
    if (covered != devices) return InvalidArgument("ring " + std::to_string(r) + " leaves devices of the grid out");
    if (!std::is_sorted(ring.open.begin(), ring.open.end()) ||
        (!ring.open.empty() && ring.open.back() >= devices)) {
      return InvalidArgument("ring " + std::to_string(r) + " has open links out of order or outside the grid");
    }
  }
  for (uint32_t position = 0; position < devices; ++position) {
    if (PeersBefore(program, position).size() > PeerSemaphores()) {
      return InvalidArgument("device " + std::to_string(position) + " is posted by more than " +
                             std::to_string(PeerSemaphores()) + " peers (one semaphore each)");
    }
  }
  return OkStatus();
}

Status PlaceOnDevice(const Program& program, const DevicePlacement& placement, std::vector<uint64_t>* code) {
  if (program.device_patches.empty()) return OkStatus();  // the same code on any device
  const uint64_t devices = uint64_t{program.replicas} * program.partitions;
  if (placement.position >= devices || placement.cores.size() != devices ||
      placement.receive_bases.size() != devices) {
    return InvalidArgument("program " + program.module_name + " runs on " + std::to_string(devices) +
                           " devices; the placement names position " + std::to_string(placement.position) + " of " +
                           std::to_string(placement.cores.size()));
  }
  const uint32_t position = placement.position;
  for (const DevicePatch& patch : program.device_patches) {
    if (patch.instr_index >= code->size()) return InvalidArgument("device patch past the code end");
    uint64_t value = 0;
    const CollectiveRing* ring = UsesRing(patch.value) ? &program.rings.at(patch.ring) : nullptr;
    switch (patch.value) {
      case DeviceValue::kReplicaId: value = position / program.partitions; break;
      case DeviceValue::kPartitionId: value = position % program.partitions; break;
      case DeviceValue::kNextCore: value = placement.cores[After(*ring, position)]; break;
      case DeviceValue::kNextReceive: value = placement.receive_bases[After(*ring, position)] + patch.offset; break;
      case DeviceValue::kWaitSemaphore: value = PeerSemaphore(program, position, Before(*ring, position)); break;
      case DeviceValue::kPostSemaphore: value = PeerSemaphore(program, After(*ring, position), position); break;
      case DeviceValue::kChunkFirstLine:
      case DeviceValue::kChunkLines: {
        const std::vector<uint32_t>* group = nullptr;
        uint32_t place = 0;
        FindInRing(*ring, position, &group, &place);
        const uint64_t size = group->size();
        const uint64_t chunk = (place + size - patch.step % size) % size;
        const uint64_t first = std::min<uint64_t>(chunk * patch.chunk, patch.lines);
        const uint64_t end = std::min<uint64_t>((chunk + 1) * patch.chunk, patch.lines);
        value = patch.value == DeviceValue::kChunkLines ? end - first : patch.offset + first;
        break;
      }
      case DeviceValue::kSendLines: value = SendsToNext(*ring, position) ? patch.lines : 0; break;
      case DeviceValue::kReceiveLines: value = SendsToNext(*ring, Before(*ring, position)) ? patch.lines : 0; break;
      case DeviceValue::kZeroLines: value = SendsToNext(*ring, Before(*ring, position)) ? 0 : patch.lines; break;
    }
    if (value > 0xffffffffull) return OutOfRange("device patch value does not fit in 32 bits");
    isa::Instr instr = isa::Decode((*code)[patch.instr_index]);
    instr.imm = static_cast<uint32_t>(value);
    (*code)[patch.instr_index] = isa::Encode(instr);
  }
  return OkStatus();
}

std::vector<uint32_t> FeedOffsets(const std::vector<DeviceLayout>& elements) {
  std::vector<uint32_t> offsets;
  uint32_t next = 0;
  for (const DeviceLayout& element : elements) {
    offsets.push_back(next);
    next += element.lines;
  }
  return offsets;
}

std::string ShapesText(const std::vector<DeviceLayout>& elements) {
  std::string text;
  for (const DeviceLayout& element : elements) text += (text.empty() ? "" : ", ") + element.shape.ToString();
  return "(" + text + ")";
}

uint32_t FeedLines(const std::vector<DeviceLayout>& elements) {
  uint32_t lines = 0;
  for (const DeviceLayout& element : elements) lines += element.lines;
  return lines;
}

Status ValidateProgram(const Program& program) {
  if (program.lanes == 0) return InvalidArgument("program has lanes = 0");
  if (program.code.empty()) return InvalidArgument("program has no code");
  if (isa::Decode(program.code.back()).opcode != static_cast<uint8_t>(isa::Opcode::HALT)) {
    return InvalidArgument("program does not end with HALT");
  }
  if (program.constants.size() != program.constant_bytes.size()) {
    return InvalidArgument("program has " + std::to_string(program.constants.size()) + " constants but " +
                           std::to_string(program.constant_bytes.size()) + " constant contents");
  }
  for (size_t i = 0; i < program.constants.size(); ++i) {
    if (program.constant_bytes[i].size() != uint64_t{program.constants[i].lines} * LineBytes(program.lanes)) {
      return InvalidArgument("constant " + std::to_string(i) + " has " + std::to_string(program.constant_bytes[i].size()) +
                             " bytes, its layout needs " +
                             std::to_string(uint64_t{program.constants[i].lines} * LineBytes(program.lanes)));
    }
  }
  for (const auto* list : {&program.parameters, &program.outputs, &program.constants, &program.infeed, &program.outfeed}) {
    for (const DeviceLayout& layout : *list) {
      if (layout.padded_cols % program.lanes != 0 ||
          uint64_t(layout.lines) * program.lanes != uint64_t(layout.rows * layout.padded_cols)) {
        return InvalidArgument("layout of " + layout.shape.ToString() + " does not match lanes " +
                               std::to_string(program.lanes));
      }
    }
  }
  uint32_t previous_end = 0;
  for (const CodeRange& range : program.code_ranges) {
    if (range.begin < previous_end || range.end < range.begin || range.end > program.code.size()) {
      return InvalidArgument("code range [" + std::to_string(range.begin) + ", " + std::to_string(range.end) + ") of '" +
                             range.what + "' is out of order or beyond the code");
    }
    previous_end = range.end;
  }
  if (!program.output_aliases.empty() && program.output_aliases.size() != program.outputs.size()) {
    return InvalidArgument("program has " + std::to_string(program.output_aliases.size()) + " output aliases for " +
                           std::to_string(program.outputs.size()) + " outputs");
  }
  std::vector<bool> aliased(program.parameters.size(), false);
  for (size_t i = 0; i < program.output_aliases.size(); ++i) {
    const int32_t parameter = program.output_aliases[i];
    if (parameter < 0) continue;
    if (static_cast<size_t>(parameter) >= program.parameters.size()) {
      return InvalidArgument("output " + std::to_string(i) + " aliases parameter " + std::to_string(parameter) +
                             " that does not exist");
    }
    if (aliased[parameter]) {
      return InvalidArgument("parameter " + std::to_string(parameter) + " is aliased by more than one output");
    }
    aliased[parameter] = true;
    if (!(program.parameters[parameter] == program.outputs[i])) {
      return InvalidArgument("output " + std::to_string(i) + " (" + program.outputs[i].shape.ToString() +
                             ") aliases parameter " + std::to_string(parameter) + " of another layout (" +
                             program.parameters[parameter].shape.ToString() + ")");
    }
  }
  TPU_RETURN_IF_ERROR(ValidateRings(program));
  for (const DevicePatch& patch : program.device_patches) {
    if (patch.instr_index >= program.code.size()) {
      return InvalidArgument("device patch at instruction " + std::to_string(patch.instr_index) + " past the code end");
    }
    if (UsesRing(patch.value) && patch.ring >= program.rings.size()) {
      return InvalidArgument("device patch at instruction " + std::to_string(patch.instr_index) + " (" +
                             DeviceValueName(patch.value) + ") names ring " + std::to_string(patch.ring) +
                             " that does not exist");
    }
  }
  for (const Relocation& reloc : program.relocations) {
    if (reloc.instr_index >= program.code.size()) {
      return InvalidArgument("relocation at instruction " + std::to_string(reloc.instr_index) + " past the code end");
    }
    if (isa::Decode(program.code[reloc.instr_index]).opcode != static_cast<uint8_t>(isa::Opcode::LI)) {
      return InvalidArgument("relocation at instruction " + std::to_string(reloc.instr_index) + " is not an LI");
    }
    if (reloc.region_index >= RegionCount(program, reloc.kind)) {
      return InvalidArgument("relocation at instruction " + std::to_string(reloc.instr_index) + " names " +
                             RegionKindName(reloc.kind) + " region " + std::to_string(reloc.region_index) +
                             " that does not exist");
    }
    // One past the end is a legal loop bound; anything further is a compiler bug.
    if (reloc.line_offset > RegionLines(program, reloc.kind, reloc.region_index)) {
      return InvalidArgument("relocation at instruction " + std::to_string(reloc.instr_index) + " points " +
                             std::to_string(reloc.line_offset) + " lines into " + RegionKindName(reloc.kind) +
                             " region " + std::to_string(reloc.region_index) + " of " +
                             std::to_string(RegionLines(program, reloc.kind, reloc.region_index)) + " lines");
    }
  }
  return OkStatus();
}

uint64_t ProgramHbmLines(const Program& program) {
  auto region = [](uint64_t lines) { return std::max<uint64_t>(lines, 1); };
  uint64_t lines = program.temp_lines;
  for (const DeviceLayout& parameter : program.parameters) lines += region(parameter.lines);
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const bool aliased = !program.output_aliases.empty() && program.output_aliases[i] >= 0;
    if (!aliased) lines += region(program.outputs[i].lines);
  }
  for (const DeviceLayout& constant : program.constants) lines += region(constant.lines);
  if (!program.infeed.empty()) lines += region(FeedLines(program.infeed));
  if (!program.outfeed.empty()) lines += region(FeedLines(program.outfeed));
  lines += program.receive_lines;
  return lines;
}

StatusOr<std::vector<uint64_t>> RelocateCode(const Program& program, const std::vector<uint64_t>& parameter_bases,
                                             const std::vector<uint64_t>& output_bases,
                                             const std::vector<uint64_t>& constant_bases, uint64_t temp_base,
                                             uint64_t infeed_base, uint64_t outfeed_base, uint64_t receive_base) {
  if (parameter_bases.size() != program.parameters.size() || output_bases.size() != program.outputs.size() ||
      constant_bases.size() != program.constants.size()) {
    return InvalidArgument("RelocateCode: region base count does not match the program's regions");
  }
  std::vector<uint64_t> code = program.code;
  for (const Relocation& reloc : program.relocations) {
    if (reloc.instr_index >= code.size()) return InvalidArgument("relocation past the code end");
    const std::vector<uint64_t>* bases = nullptr;
    switch (reloc.kind) {
      case RegionKind::kParameter: bases = &parameter_bases; break;
      case RegionKind::kOutput: bases = &output_bases; break;
      case RegionKind::kConstant: bases = &constant_bases; break;
      case RegionKind::kTemp:
      case RegionKind::kInfeed:
      case RegionKind::kOutfeed:
      case RegionKind::kReceive: break;
    }
    uint64_t base = reloc.kind == RegionKind::kInfeed    ? infeed_base
                    : reloc.kind == RegionKind::kOutfeed ? outfeed_base
                    : reloc.kind == RegionKind::kReceive ? receive_base
                                                         : temp_base;
    if (bases != nullptr) {
      if (reloc.region_index >= bases->size()) return InvalidArgument("relocation names a missing region");
      base = (*bases)[reloc.region_index];
    }
    isa::Instr instr = isa::Decode(code[reloc.instr_index]);
    if (instr.opcode != static_cast<uint8_t>(isa::Opcode::LI)) return InvalidArgument("relocation is not on an LI");
    uint64_t address = base + reloc.line_offset;
    if (address > 0xffffffffull) return OutOfRange("relocated address does not fit in 32 bits");
    instr.imm = static_cast<uint32_t>(address);
    code[reloc.instr_index] = isa::Encode(instr);
  }
  return code;
}

namespace {

constexpr char kMagic[8] = {'T', 'P', 'U', 'P', 'R', 'O', 'G', '\0'};

class Writer {
 public:
  void U8(uint8_t v) { out_.push_back(v); }
  void U32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Bytes(const std::vector<uint8_t>& v) {
    U64(v.size());
    out_.insert(out_.end(), v.begin(), v.end());
  }
  void String(const std::string& s) { Bytes(std::vector<uint8_t>(s.begin(), s.end())); }
  void Layout(const DeviceLayout& layout) {
    U32(static_cast<uint32_t>(layout.shape.element_type));
    U32(static_cast<uint32_t>(layout.shape.dimensions.size()));
    for (int64_t d : layout.shape.dimensions) I64(d);
    I64(layout.rows);
    I64(layout.cols);
    I64(layout.padded_cols);
    U32(layout.lines);
  }
  std::vector<uint8_t>& out() { return out_; }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& in) : in_(in) {}
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  bool Need(uint64_t bytes, const char* what) {
    if (!ok()) return false;
    if (bytes > in_.size() - pos_) {
      error_ = std::string("program file truncated while reading ") + what + " at byte " + std::to_string(pos_);
      return false;
    }
    return true;
  }
  uint8_t U8(const char* what) { return Need(1, what) ? in_[pos_++] : 0; }
  uint32_t U32(const char* what) {
    if (!Need(4, what)) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{in_[pos_++]} << (8 * i);
    return v;
  }
  uint64_t U64(const char* what) {
    if (!Need(8, what)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{in_[pos_++]} << (8 * i);
    return v;
  }
  int64_t I64(const char* what) { return static_cast<int64_t>(U64(what)); }
  // A count of items of at least `item_bytes` each, checked against what is left so that a corrupt
  // count cannot make the loader allocate gigabytes.
  uint64_t Count(uint64_t item_bytes, const char* what) {
    uint64_t n = U64(what);
    if (ok() && item_bytes > 0 && n > (in_.size() - pos_) / item_bytes) {
      error_ = std::string("program file corrupt: ") + what + " count " + std::to_string(n) + " exceeds the file";
      return 0;
    }
    return n;
  }
  std::vector<uint8_t> Bytes(const char* what) {
    uint64_t n = Count(1, what);
    if (!Need(n, what)) return {};
    std::vector<uint8_t> v(in_.begin() + pos_, in_.begin() + pos_ + n);
    pos_ += n;
    return v;
  }
  std::string String(const char* what) {
    std::vector<uint8_t> v = Bytes(what);
    return std::string(v.begin(), v.end());
  }
  DeviceLayout Layout(const char* what) {
    DeviceLayout layout;
    uint32_t type = U32(what);
    if (ok() && type > static_cast<uint32_t>(hlo::PrimitiveType::TOKEN)) {
      error_ = std::string("program file corrupt: bad element type in ") + what;
      return layout;
    }
    uint32_t rank = U32(what);
    if (ok() && rank > (in_.size() - pos_) / 8) {
      error_ = std::string("program file corrupt: bad rank in ") + what;
      return layout;
    }
    std::vector<int64_t> dims;
    for (uint32_t i = 0; i < rank && ok(); ++i) dims.push_back(I64(what));
    layout.shape = hlo::Shape::Make(static_cast<hlo::PrimitiveType>(type), dims);
    layout.rows = I64(what);
    layout.cols = I64(what);
    layout.padded_cols = I64(what);
    layout.lines = U32(what);
    return layout;
  }
  bool AtEnd() const { return pos_ == in_.size(); }

 private:
  const std::vector<uint8_t>& in_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

std::vector<uint8_t> SerializeProgram(const Program& program) {
  Writer w;
  for (char c : kMagic) w.U8(static_cast<uint8_t>(c));
  w.U32(kProgramFormatVersion);
  w.String(program.module_name);
  w.U32(program.lanes);
  w.U64(program.code.size());
  for (uint64_t word : program.code) w.U64(word);
  w.U64(program.relocations.size());
  for (const Relocation& r : program.relocations) {
    w.U32(r.instr_index);
    w.U32(static_cast<uint32_t>(r.kind));
    w.U32(r.region_index);
    w.U32(r.line_offset);
  }
  for (const auto* list : {&program.parameters, &program.outputs, &program.constants}) {
    w.U64(list->size());
    for (const DeviceLayout& layout : *list) w.Layout(layout);
  }
  w.U64(program.constant_bytes.size());
  for (const auto& bytes : program.constant_bytes) w.Bytes(bytes);
  w.U32(program.temp_lines);
  w.U64(program.mxu_macs);
  w.U64(program.logical_macs);
  w.U64(program.output_aliases.size());
  for (int32_t parameter : program.output_aliases) w.U32(static_cast<uint32_t>(parameter));
  w.U64(program.code_ranges.size());
  for (const CodeRange& range : program.code_ranges) {
    w.String(range.what);
    w.U32(range.begin);
    w.U32(range.end);
  }
  for (const auto* list : {&program.infeed, &program.outfeed}) {
    w.U64(list->size());
    for (const DeviceLayout& layout : *list) w.Layout(layout);
  }
  w.U32(program.replicas);
  w.U32(program.partitions);
  w.U64(program.rings.size());
  for (const CollectiveRing& ring : program.rings) {
    w.U64(ring.groups.size());
    for (const std::vector<uint32_t>& group : ring.groups) {
      w.U64(group.size());
      for (uint32_t position : group) w.U32(position);
    }
    w.U64(ring.open.size());
    for (uint32_t position : ring.open) w.U32(position);
  }
  w.U32(program.receive_lines);
  w.U64(program.device_patches.size());
  for (const DevicePatch& patch : program.device_patches) {
    for (uint32_t field : {patch.instr_index, static_cast<uint32_t>(patch.value), patch.ring, patch.step, patch.chunk,
                           patch.lines, patch.offset}) {
      w.U32(field);
    }
  }
  return std::move(w.out());
}

StatusOr<Program> DeserializeProgram(const std::vector<uint8_t>& bytes) {
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return InvalidArgument("not a tpusim program file (bad magic)");
  }
  Reader r(bytes);
  for (size_t i = 0; i < sizeof(kMagic); ++i) r.U8("magic");
  uint32_t version = r.U32("version");
  if (r.ok() && version != kProgramFormatVersion) {
    return InvalidArgument("program file format version " + std::to_string(version) + " is not supported (this build reads version " +
                           std::to_string(kProgramFormatVersion) + "); recompile the module with this tpuc");
  }
  Program program;
  program.module_name = r.String("module name");
  program.lanes = r.U32("lanes");
  uint64_t words = r.Count(8, "code");
  for (uint64_t i = 0; i < words && r.ok(); ++i) program.code.push_back(r.U64("code"));
  uint64_t relocs = r.Count(16, "relocations");
  for (uint64_t i = 0; i < relocs && r.ok(); ++i) {
    Relocation reloc;
    reloc.instr_index = r.U32("relocation");
    uint32_t kind = r.U32("relocation");
    if (r.ok() && kind > static_cast<uint32_t>(RegionKind::kReceive)) {
      return InvalidArgument("program file corrupt: relocation " + std::to_string(i) + " has region kind " +
                             std::to_string(kind));
    }
    reloc.kind = static_cast<RegionKind>(kind);
    reloc.region_index = r.U32("relocation");
    reloc.line_offset = r.U32("relocation");
    program.relocations.push_back(reloc);
  }
  for (auto* list : {&program.parameters, &program.outputs, &program.constants}) {
    uint64_t n = r.Count(36, "layouts");
    for (uint64_t i = 0; i < n && r.ok(); ++i) list->push_back(r.Layout("layout"));
  }
  uint64_t constant_count = r.Count(8, "constant contents");
  for (uint64_t i = 0; i < constant_count && r.ok(); ++i) program.constant_bytes.push_back(r.Bytes("constant"));
  program.temp_lines = r.U32("temp lines");
  program.mxu_macs = r.U64("statistics");
  program.logical_macs = r.U64("statistics");
  const uint64_t alias_count = r.Count(4, "output aliases");
  for (uint64_t i = 0; i < alias_count && r.ok(); ++i) {
    program.output_aliases.push_back(static_cast<int32_t>(r.U32("output aliases")));
  }
  const uint64_t range_count = r.Count(16, "code ranges");
  for (uint64_t i = 0; i < range_count && r.ok(); ++i) {
    CodeRange range;
    range.what = r.String("code range");
    range.begin = r.U32("code range");
    range.end = r.U32("code range");
    program.code_ranges.push_back(std::move(range));
  }
  for (auto* list : {&program.infeed, &program.outfeed}) {
    uint64_t n = r.Count(36, "feed layouts");
    for (uint64_t i = 0; i < n && r.ok(); ++i) list->push_back(r.Layout("feed layout"));
  }
  program.replicas = r.U32("grid");
  program.partitions = r.U32("grid");
  const uint64_t ring_count = r.Count(8, "rings");
  for (uint64_t i = 0; i < ring_count && r.ok(); ++i) {
    CollectiveRing ring;
    const uint64_t group_count = r.Count(8, "ring groups");
    for (uint64_t g = 0; g < group_count && r.ok(); ++g) {
      const uint64_t size = r.Count(4, "ring group");
      std::vector<uint32_t> group;
      for (uint64_t k = 0; k < size && r.ok(); ++k) group.push_back(r.U32("ring group"));
      ring.groups.push_back(std::move(group));
    }
    const uint64_t open = r.Count(4, "ring open links");
    for (uint64_t k = 0; k < open && r.ok(); ++k) ring.open.push_back(r.U32("ring open links"));
    program.rings.push_back(std::move(ring));
  }
  program.receive_lines = r.U32("receive lines");
  const uint64_t patch_count = r.Count(28, "device patches");
  for (uint64_t i = 0; i < patch_count && r.ok(); ++i) {
    DevicePatch patch;
    patch.instr_index = r.U32("device patch");
    const uint32_t value = r.U32("device patch");
    if (r.ok() && value > static_cast<uint32_t>(DeviceValue::kZeroLines)) {
      return InvalidArgument("program file corrupt: device patch " + std::to_string(i) + " has value kind " +
                             std::to_string(value));
    }
    patch.value = static_cast<DeviceValue>(value);
    patch.ring = r.U32("device patch");
    patch.step = r.U32("device patch");
    patch.chunk = r.U32("device patch");
    patch.lines = r.U32("device patch");
    patch.offset = r.U32("device patch");
    program.device_patches.push_back(patch);
  }
  if (!r.ok()) return InvalidArgument(r.error());
  if (!r.AtEnd()) return InvalidArgument("program file has trailing bytes after the program");
  Status valid = ValidateProgram(program);
  if (!valid.ok()) return InvalidArgument("program file inconsistent: " + valid.message());
  return program;
}

Status SaveProgram(const Program& program, const std::string& path) {
  std::vector<uint8_t> bytes = SerializeProgram(program);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgument("cannot open '" + path + "' for writing");
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) return Internal("writing '" + path + "' failed");
  return OkStatus();
}

StatusOr<Program> LoadProgram(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot open program file '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  StatusOr<Program> program = DeserializeProgram(bytes);
  if (!program.ok()) return Status(program.status().code(), path + ": " + program.status().message());
  return program;
}

}  // namespace tpu::compiler
