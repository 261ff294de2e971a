// The compiled program format shared by the code generator and the runtime: how tensors are laid out in
// HBM, the code, the relocations of its HBM addresses, and the regions the loader must allocate.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/hlo/shape.h"
#include "sw/base/status.h"

namespace tpu::compiler {

// How a logical tensor is stored in HBM ("device layout"): row-major, the minor dimension padded
// with zeros to a multiple of LANES. rows = product of all dims but the last (1 for rank 0/1),
// cols = last dim (1 for rank 0), padded_cols = round_up(cols, lanes), lines = rows * padded_cols / lanes.
// Line (r, t) = r * (padded_cols / lanes) + t holds columns [t*lanes, (t+1)*lanes) of row r.
struct DeviceLayout {
  hlo::Shape shape;  // logical shape
  int64_t rows = 0, cols = 0, padded_cols = 0;
  uint32_t lines = 0;  // HBM lines occupied

  // Lines per row (padded_cols / lanes).
  int64_t column_tiles(uint32_t lanes) const { return padded_cols / lanes; }
  bool operator==(const DeviceLayout& other) const {
    return shape == other.shape && rows == other.rows && cols == other.cols && padded_cols == other.padded_cols &&
           lines == other.lines;
  }
};
DeviceLayout MakeDeviceLayout(const hlo::Shape& shape, uint32_t lanes);
// The lines of MakeDeviceLayout(shape, lanes) in 64 bits (saturating at UINT64_MAX): `lines` above is 32
// bits, so a size must be checked with this before a layout is made of a shape of unknown size.
uint64_t DeviceLines(const hlo::Shape& shape, uint32_t lanes);
// Element types the device stores, each as one 32-bit word per element: f32 bits; bf16 as the f32 bits
// of the same value (the bf16 bits in the upper half, zeros below: exact, and what the MXU and VPU read
// as f32); f16 as the f32 bits of the same value too (exact: subnormal f16s are normal f32s); s32, u32, pred (0/1) and s64 (low 32 bits, sign-extended when read back) as two's-complement
// integers; s8 and s16 sign-extended, u8 and u16 zero-extended to 32 bits (their values exactly).
bool IsDeviceElementType(hlo::PrimitiveType type);
// OK, or InvalidArgument naming the first s64 element outside the s32 range: the device holds an s64 in
// one 32-bit word, so such a value could not be held exactly (it is refused, never truncated).
Status CheckDeviceValues(const hlo::Literal& value);
// Pads with zeros. The literal must be of a device element type and the layout's dimensions (checked in debug builds; a
// mismatch yields zeros where the literal has no data).
std::vector<uint8_t> ToDeviceBytes(const hlo::Literal& value, const DeviceLayout& layout);
// Drops the padding. `bytes` holds layout.lines lines of lanes*4 bytes, lanes = padded_cols / column tiles.
hlo::Literal FromDeviceBytes(const uint8_t* bytes, const DeviceLayout& layout);
// Bytes of one HBM line of the given configuration.
inline uint32_t LineBytes(uint32_t lanes) { return lanes * 4; }

// kInfeed / kOutfeed: the slot the host fills with the next infeed value / reads the next outfeed value
// from (docs/csr.md, "Host semaphores"), one region each. kReceive: where the collectives' peers write
// (Program::receive_lines), one region; no other value lives there, so a peer may write it while this
// device still works on something else.
enum class RegionKind { kParameter, kOutput, kTemp, kConstant, kInfeed, kOutfeed, kReceive };
// "parameter", "output", "temp", "constant", "infeed", "outfeed", "receive"
const char* RegionKindName(RegionKind kind);

// The instruction code[instr_index] is an LI whose imm must become
//   base line of (kind, region_index) + line_offset      (region_index unused for kTemp)
// when the program is loaded: HBM addresses exist in a program only as relocated LI immediates.
struct Relocation {
  uint32_t instr_index;
  RegionKind kind;
  uint32_t region_index;
  uint32_t line_offset;
};

// A program that runs on several devices at once (a grid of replicas x partitions, every device the same
// code) meets its peers in collectives. Each collective runs around rings: the devices of each of its
// groups in ring order. What differs from device to device -- its ids, its place in a ring, the core and
// receive region of the next device, the semaphores -- enters the code as instruction immediates patched
// when the program is placed on its device (PlaceOnDevice), as HBM addresses enter it by relocation.
struct CollectiveRing {
  // Grid positions (replica * partitions + partition) in ring order; every position of the grid in exactly
  // one group. The groups of an all-reduce, all-gather or reduce-scatter have one size (size()).
  std::vector<std::vector<uint32_t>> groups;
  // Positions that send nothing to the device after them (a collective-permute's chains end there), in
  // increasing order.
  std::vector<uint32_t> open;
  uint32_t size() const { return groups.empty() ? 0 : static_cast<uint32_t>(groups.front().size()); }
};

enum class DeviceValue : uint32_t {
  kReplicaId,       // the device's replica: position / partitions
  kPartitionId,     // its partition: position % partitions
  kNextCore,        // the board core of the device after it in `ring`
  kNextReceive,     // line `offset` of the receive region of that device
  kWaitSemaphore,   // the semaphore this device takes for each post of the device before it in `ring`
  kPostSemaphore,   // the semaphore of the next device that this device posts
  kChunkFirstLine,  // offset + first line of chunk (place - step) mod size of a value of `lines` lines cut
                    // into chunks of `chunk` lines (the last ones shorter or empty); place: the device's
                    // position in its group of `ring`
  kChunkLines,      // the lines of that chunk
  kSendLines,       // `lines`, or 0 when the device sends nothing to the next one (CollectiveRing::open)
  kReceiveLines,    // `lines`, or 0 when the device before it sends nothing
  kZeroLines,       // the other way round: `lines` when the device before it sends nothing, else 0
};
const char* DeviceValueName(DeviceValue value);

// code[instr_index]'s imm becomes `value` for the device the program is placed on.
struct DevicePatch {
  uint32_t instr_index = 0;
  DeviceValue value = DeviceValue::kReplicaId;
  uint32_t ring = 0;
  uint32_t step = 0, chunk = 0, lines = 0, offset = 0;
};

// Where one device of a replicated execution sits: its grid position, and for every grid position the
// board core running it and the first line of its receive region.
struct DevicePlacement {
  uint32_t position = 0;
  std::vector<uint32_t> cores;
  std::vector<uint64_t> receive_bases;
};

// The semaphores the core's peers post (RDMA POST): csr::SEMS - csr::HOST_SEMS of them, from
// csr::HOST_SEMS on. A device takes one per distinct device before it in the program's rings, so that
// the posts of two peers never mix.
uint32_t PeerSemaphores();

// The code words [begin, end) one step of the program compiled to: an HLO instruction
// ("dot.3 = f32[32,120] dot") or a copy at the end ("copy p3.23 to output 6"). Profiles and listings
// name code by these.
struct CodeRange {
  std::string what;
  uint32_t begin = 0, end = 0;
};

struct Program {
  std::string module_name;
  uint32_t lanes = 0;                    // configuration the program was compiled for
  std::vector<uint64_t> code;            // loaded into IMEM at word 0, starts at pc 0, ends with HALT
  std::vector<Relocation> relocations;
  std::vector<DeviceLayout> parameters;  // entry parameters, by parameter number
  std::vector<DeviceLayout> outputs;     // root value, tuple flattened
  std::vector<DeviceLayout> constants;   // constant tensors the program reads (kConstant regions)
  std::vector<std::vector<uint8_t>> constant_bytes;  // their contents, device layout
  uint32_t temp_lines = 0;               // size of the scratch HBM region (kTemp)
  // input_output_alias: output_aliases[i] is the parameter whose buffer output i is written into (the
  // runtime passes that buffer's base as output i's region and hands it back as the output), or -1 for
  // an output of its own. Empty when no output aliases a parameter. Each parameter appears at most once,
  // with the output's layout.
  std::vector<int32_t> output_aliases;
  // Statistics for reports: MACs the program performs on the MXU, padding waste, etc.
  uint64_t mxu_macs = 0;     // MACs of the padded tiles the MXU computes
  uint64_t logical_macs = 0; // MACs of the dots as written in HLO (M*K*N summed)
  std::vector<CodeRange> code_ranges;  // in program order, disjoint; words outside every range are SYNCs and HALT
  // The values the program's infeeds take and its outfeeds give, tuples flattened (empty: none). Every
  // infeed of a program takes values of one shape, every outfeed gives one shape. In the slot the elements
  // follow one another, each in its device layout (FeedOffsets).
  std::vector<DeviceLayout> infeed;
  std::vector<DeviceLayout> outfeed;
  // The grid the program was compiled for (1 x 1: one device), its collectives' rings, the receive
  // region (kReceive) and the immediates that differ from device to device.
  uint32_t replicas = 1, partitions = 1;
  std::vector<CollectiveRing> rings;
  uint32_t receive_lines = 0;
  std::vector<DevicePatch> device_patches;
};

// "(f32[3,20], s32[3])": the shapes of a feed's elements, for messages.
std::string ShapesText(const std::vector<DeviceLayout>& elements);
// Line offsets of the elements of a feed slot, and its size in lines.
std::vector<uint32_t> FeedOffsets(const std::vector<DeviceLayout>& elements);
uint32_t FeedLines(const std::vector<DeviceLayout>& elements);

// HBM lines the runtime allocates to run `program` (parameters, outputs that alias no parameter, constants,
// the temp region, the feed slots; every region at least one line, as the allocator gives): its footprint
// on the device.
uint64_t ProgramHbmLines(const Program& program);

// Patches every relocated LI of `program.code` for regions based at the given HBM lines and returns the
// code to load. Fails if a relocation names a region that does not exist or is not an LI.
StatusOr<std::vector<uint64_t>> RelocateCode(const Program& program, const std::vector<uint64_t>& parameter_bases,
                                             const std::vector<uint64_t>& output_bases,
                                             const std::vector<uint64_t>& constant_bases, uint64_t temp_base,
                                             uint64_t infeed_base = 0, uint64_t outfeed_base = 0,
                                             uint64_t receive_base = 0);

// Patches the device-dependent immediates of `code` (the program's code, relocated) for the device
// `placement` describes. InvalidArgument when the placement does not match the program's grid; a
// program without device patches runs on any device as it is.
Status PlaceOnDevice(const Program& program, const DevicePlacement& placement, std::vector<uint64_t>* code);

// Checks the program's rings against its grid: every device in one group of each ring, groups of one
// size, at most PeerSemaphores() distinct devices before any device.
Status ValidateRings(const Program& program);

// Checks the internal consistency of a program (relocations in range and on LI instructions, constant
// bytes matching their layouts, layouts matching the lanes).
Status ValidateProgram(const Program& program);

// Binary file format for `tpuc -o`: the magic "TPUPROG\0", a format version, then the fields in order
// (little endian). Load checks the magic, the version, every length against the file size, and runs
// ValidateProgram.
// 2: output_aliases, 3: code_ranges, 4: infeed/outfeed, 5: grid, rings, receive region, device patches
inline constexpr uint32_t kProgramFormatVersion = 5;
std::vector<uint8_t> SerializeProgram(const Program& program);
StatusOr<Program> DeserializeProgram(const std::vector<uint8_t>& bytes);
Status SaveProgram(const Program& program, const std::string& path);
StatusOr<Program> LoadProgram(const std::string& path);

}  // namespace tpu::compiler
