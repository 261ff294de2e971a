#include "compiler/codegen/codegen.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "compiler/codegen/assembler.h"
#include "compiler/codegen/buffer_assignment.h"
#include "compiler/codegen/prepare.h"
#include "compiler/hlo/hlo_opcode.h"
#include "compiler/passes/relu_fusion.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

constexpr uint8_t kSyncDma = isa::flag::SYNC_DMA;
constexpr uint8_t kSyncMxu = isa::flag::SYNC_MXU;
constexpr uint8_t kSyncVpu = isa::flag::SYNC_VPU;
constexpr uint8_t kSyncAll = 0;

Status UnsupportedOp(const HloInstruction& instruction) {
  return NotFound("No registered '" + instruction.opcode_name() +
                  "' OpKernel for XLA_TPU_JIT devices compatible with node " + instruction.name());
}

uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

bool IsScalarF32Constant(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kConstant && instruction.has_literal() &&
         instruction.literal().shape().element_type == hlo::PrimitiveType::F32 && instruction.shape().rank() == 0;
}

// op(+0, c) == +0 bit for bit: the immediate form then keeps padded lanes zero.
bool ImmediateKeepsPaddingZero(HloOpcode op, uint32_t c) {
  const bool is_nan = (c & 0x7f800000u) == 0x7f800000u && (c & 0x007fffffu) != 0;
  const bool is_inf = (c & 0x7fffffffu) == 0x7f800000u;
  switch (op) {
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
      return c == 0u || c == 0x80000000u;
    case HloOpcode::kMaximum:  // +0 wins over -0 and every negative number
      return c == 0u || ((c & 0x80000000u) != 0 && !is_nan);
    case HloOpcode::kMinimum:  // +0 wins over every positive number
      return (c & 0x80000000u) == 0 && !is_nan;
    case HloOpcode::kMultiply:  // +0 * c is +0 for a positive finite c (or +0)
      return (c & 0x80000000u) == 0 && !is_nan && !is_inf;
    default:
      return false;
  }
}

// The VPU instruction that computes an elementwise HLO binary op, looked up by name in the generated
// instruction set so that an op lowers as soon as its instruction exists. nullopt when it does not.
// Every such instruction takes the operands of VADD (rd, rs1, rs2, rs3=count) and its SRC2_BCAST and
// SRC2_IMM flag bits (docs/isa.md).
std::optional<isa::Opcode> VpuOpcodeFor(HloOpcode op) {
  const char* name = nullptr;
  switch (op) {
    case HloOpcode::kAdd: name = "VADD"; break;
    case HloOpcode::kMaximum: name = "VMAX"; break;
    case HloOpcode::kSubtract: name = "VSUB"; break;
    case HloOpcode::kMultiply: name = "VMUL"; break;
    case HloOpcode::kMinimum: name = "VMIN"; break;
    default: return std::nullopt;
  }
  for (const isa::OpcodeInfo& info : isa::kOpcodes) {
    if (std::strcmp(info.name, name) == 0) return info.opcode;
  }
  return std::nullopt;
}

std::optional<isa::Opcode> OpcodeNamed(const char* name) {
  for (const isa::OpcodeInfo& info : isa::kOpcodes) {
    if (std::strcmp(info.name, name) == 0) return info.opcode;
  }
  return std::nullopt;
}
bool HasOpcode(const char* name) { return OpcodeNamed(name).has_value(); }

std::optional<float> ScalarConstantValue(const HloInstruction& value);

// The raw bits of select's on-false operand when it can be VSEL's immediate: a scalar f32 constant or
// its broadcast, zero unless the result has no padded lanes.
std::optional<uint32_t> SelectImmediate(const HloInstruction& select, uint32_t lanes) {
  const std::optional<float> value = ScalarConstantValue(*select.operand(2));
  if (!value || select.shape().element_type != hlo::PrimitiveType::F32) return std::nullopt;
  uint32_t bits;
  std::memcpy(&bits, &*value, 4);
  const int rank = select.shape().rank();
  const int64_t cols = rank == 0 ? 1 : select.shape().dimensions.back();
  if (bits != 0 && cols % lanes != 0) return std::nullopt;
  return bits;
}

// The VCMP direction code (docs/isa.md).
uint8_t VcmpDirection(hlo::ComparisonDirection direction) {
  switch (direction) {
    case hlo::ComparisonDirection::kEq: return 0;
    case hlo::ComparisonDirection::kNe: return 1;
    case hlo::ComparisonDirection::kLt: return 2;
    case hlo::ComparisonDirection::kLe: return 3;
    case hlo::ComparisonDirection::kGt: return 4;
    case hlo::ComparisonDirection::kGe: return 5;
  }
  return 6;
}

// Whether `direction` holds for (+0, b) where b is the padded lane's second operand (0, or an f32
// immediate): then padded lanes of a compare's result would be 1 and must be masked.
bool CompareTrueOnPadding(hlo::ComparisonDirection direction, bool has_immediate, uint32_t immediate_bits) {
  float b = 0.0f;
  if (has_immediate) std::memcpy(&b, &immediate_bits, 4);
  if (std::isnan(b)) return direction == hlo::ComparisonDirection::kNe;
  switch (direction) {
    case hlo::ComparisonDirection::kEq: return 0.0f == b;
    case hlo::ComparisonDirection::kNe: return 0.0f != b;
    case hlo::ComparisonDirection::kLt: return 0.0f < b;
    case hlo::ComparisonDirection::kLe: return 0.0f <= b;
    case hlo::ComparisonDirection::kGt: return 0.0f > b;
    case hlo::ComparisonDirection::kGe: return 0.0f >= b;
  }
  return true;
}

bool IsCommutative(HloOpcode op) { return op != HloOpcode::kSubtract; }

bool IsVpuBinary(HloOpcode op) { return VpuOpcodeFor(op).has_value(); }

// Values the VPU computes on as s32 lanes (INT flag): s32, and s64 through its low 32 bits.
bool IsIntegerValue(const hlo::Shape& shape) {
  return shape.element_type == hlo::PrimitiveType::S32 || shape.element_type == hlo::PrimitiveType::S64 ||
         shape.element_type == hlo::PrimitiveType::U32;
}

// The value of a scalar f32 constant, or of a broadcast of one.
std::optional<float> ScalarConstantValue(const HloInstruction& value) {
  if (IsScalarF32Constant(value)) return value.literal().Get<float>(0);
  if (value.opcode() == HloOpcode::kBroadcast && IsScalarF32Constant(*value.operand(0))) {
    return value.operand(0)->literal().Get<float>(0);
  }
  return std::nullopt;
}

// kAdd or kMaximum when `reduce` applies that op to the two parameters of its computation; kUnknown otherwise.
HloOpcode ReducerOpcode(const HloInstruction& reduce) {
  const hlo::HloComputation* reducer = reduce.to_apply();
  if (reducer == nullptr || reducer->num_parameters() != 2 || reducer->root_instruction() == nullptr) {
    return HloOpcode::kUnknown;
  }
  const HloInstruction& root = *reducer->root_instruction();
  if (root.opcode() != HloOpcode::kAdd && root.opcode() != HloOpcode::kMaximum) return HloOpcode::kUnknown;
  if (root.operand_count() != 2 || root.operand(0)->opcode() != HloOpcode::kParameter ||
      root.operand(1)->opcode() != HloOpcode::kParameter || root.operand(0) == root.operand(1)) {
    return HloOpcode::kUnknown;
  }
  return root.opcode();
}

// How the second operand of an elementwise op reaches the VPU.
struct Src2 {
  enum Kind { kTensor, kImmediate, kRow } kind = kTensor;
  const HloInstruction* value = nullptr;  // kTensor: the tensor; kRow: the rank-1 row (or null: constant row)
  uint32_t imm = 0;                       // kImmediate
  int32_t constant_row = -1;              // kRow from a scalar constant: index of the constant region
};

class CodeGenerator {
 public:
  CodeGenerator(const hlo::HloModule& module, const CompileOptions& options) : module_(module), options_(options) {}

  StatusOr<Program> Run(CompileStats* stats);

 private:
  uint32_t L() const { return options_.lanes; }

  // --- analysis ---
  Status CheckSupported(const HloInstruction& instruction);
  // The instruction whose buffer holds the value of `instruction` (through copies, reshapes, GTEs).
  const HloInstruction* BufferOf(const HloInstruction* instruction) const;
  void FlattenOutputs(const HloInstruction* value, std::vector<const HloInstruction*>* outputs) const;
  // Whether a user reads `value` from HBM (false when the user folds it into an instruction field).
  bool ReadsFromMemory(const HloInstruction& user, const HloInstruction& value) const;
  // For add/maximum: the fused form of operand `index` if it is a foldable broadcast.
  bool FoldableBroadcast(const HloInstruction& op, const HloInstruction& operand) const;

  // --- code ---
  StatusOr<ScopedReg> NewReg() { return AllocateScoped(&regs_); }
  void LoadAddress(Reg reg, const HloInstruction* value, uint32_t extra_lines);
  Status EmitInstruction(const HloInstruction& instruction);
  Status EmitElementwise(const HloInstruction& instruction, HloOpcode op, const HloInstruction* a, Src2 b);
  // One VPU instruction over `a` (and b), result stored as `instruction` (a may be `instruction` itself).
  struct VpuOp {
    isa::Opcode opcode = isa::Opcode::VADD;
    uint8_t flags = 0;            // OR-ed into every emitted instruction (INT, VCMP direction)
    bool then_add_zero = false;   // VADD imm +0 after it (negate)
    bool unary = false;           // one source (VCVT): no second-operand flags
  };
  Status EmitVpu(const HloInstruction& instruction, const VpuOp& vpu, const HloInstruction* a, Src2 b);
  Status EmitCompare(const HloInstruction& instruction);
  Status EmitRoundToBf16(const HloInstruction& instruction);
  enum class MathKind { kExp, kLog, kDivide, kRsqrt, kSqrt };
  // exp, log, rsqrt, sqrt and division by a tensor with VEXP, VLOG, VRSQRT, VRCP (see the definition).
  Status EmitMath(const HloInstruction& instruction, MathKind kind);
  Status EmitMathChunks(const HloInstruction& instruction, MathKind kind, uint32_t chunk, uint32_t used);
  Status EmitSelect(const HloInstruction& instruction);
  Status EmitConvert(const HloInstruction& instruction);
  Status EmitBroadcast(const HloInstruction& instruction);
  Status EmitRowBroadcastInto(const HloInstruction& out, const Src2& row);
  Status EmitDot(const HloInstruction& instruction);
  Status EmitReduce(const HloInstruction& instruction);
  Status EmitTranspose(const HloInstruction& instruction);
  Status EmitCopy(const HloInstruction* from, Location to);
  StatusOr<int32_t> ConstantRow(uint32_t bits, int64_t cols);
  // A constant region holding the LANES x LANES identity matrix (MXU transposes and broadcasts).
  int32_t IdentityRegion(float diagonal = 1.0f);
  // Transpose that keeps every f32 bit (see the definition); false when it does not fit the VMEM.
  StatusOr<bool> EmitExactTranspose(const HloInstruction& instruction);
  // VTRANS versions (exact, any 32-bit element type); false when they do not fit the VMEM.
  StatusOr<bool> EmitTransposeVtrans(const HloInstruction& instruction);
  StatusOr<bool> EmitLaneBroadcastVtrans(const HloInstruction& instruction);
  // Broadcast of a scalar or along the rows of a rank-2 result (dimensions={0}) on the MXU.
  Status EmitLaneBroadcast(const HloInstruction& instruction);
  int32_t ConstantRegion(const HloInstruction& constant);
  // Runs `body(count)` over `total` items in chunks of `chunk`, advancing each pointer register by
  // step * chunk after every chunk. Full chunks run in a loop when there are two or more.
  Status ForChunks(uint32_t total, uint32_t chunk, const std::vector<std::pair<Reg, uint32_t>>& pointers,
                   const std::function<Status(Reg count, uint32_t count_value)>& body);
  // Runs `emit_block(rows)` over `rows` rows in blocks of LANES: the full blocks in a loop when there are two
  // or more (each block advances `out_hbm` by one line of `output`), then the remaining rows.
  Status ForRowBlocks(const HloInstruction& output, uint32_t rows, Reg out_hbm,
                      const std::function<Status(uint32_t block_rows)>& emit_block);
  // Stores `rows` VMEM lines from `from_vmem` into column tiles [first_tile, first_tile + tile_count) of the
  // output rows starting at HBM line `row_hbm` (`row_tiles` lines per output row).
  Status StoreColumnTiles(Reg from_vmem, Reg rows, Reg row_hbm, uint32_t first_tile, uint32_t tile_count,
                          uint32_t row_tiles);
  Status VmemOverflow(const HloInstruction& instruction, uint64_t needed) const {
    return ResourceExhausted("Ran out of memory in memory space vmem; used: " + std::to_string(needed) +
                             " lines; limit: " + std::to_string(options_.vmem_lines) + " lines (compiling " +
                             instruction.name() + ")");
  }

  const hlo::HloModule& module_;
  CompileOptions options_;
  Assembler asm_;
  ScalarRegisterAllocator regs_;
  Program program_;
  std::map<const HloInstruction*, Location> locations_;
  std::map<const HloInstruction*, int32_t> constant_regions_;
  std::map<std::pair<uint32_t, int64_t>, int32_t> constant_rows_;
  std::vector<DotPaddingReport> dots_;
};

const HloInstruction* CodeGenerator::BufferOf(const HloInstruction* instruction) const {
  while (true) {
    switch (instruction->opcode()) {
      case HloOpcode::kCopy:
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
        instruction = instruction->operand(0);
        continue;
      case HloOpcode::kCustomCall:
        if (hlo::IsIdentityCustomCallTarget(instruction->custom_call_target())) {
          instruction = instruction->operand(0);
          continue;
        }
        return instruction;
      case HloOpcode::kGetTupleElement: {
        const HloInstruction* tuple = instruction->operand(0);
        if (tuple->opcode() != HloOpcode::kTuple) return instruction;
        instruction = tuple->operand(instruction->tuple_index());
        continue;
      }
      default:
        return instruction;
    }
  }
}

void CodeGenerator::FlattenOutputs(const HloInstruction* value, std::vector<const HloInstruction*>* outputs) const {
  if (value->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* element : value->operands()) FlattenOutputs(element, outputs);
    return;
  }
  if (value->opcode() == HloOpcode::kGetTupleElement && value->operand(0)->opcode() == HloOpcode::kTuple) {
    FlattenOutputs(value->operand(0)->operand(value->tuple_index()), outputs);
    return;
  }
  outputs->push_back(value);
}

bool CodeGenerator::FoldableBroadcast(const HloInstruction& op, const HloInstruction& operand) const {
  if (operand.opcode() != HloOpcode::kBroadcast) return false;
  const HloInstruction& source = *operand.operand(0);
  if (IsScalarF32Constant(source)) return true;
  // A row [N] broadcast along the minor dimension of the output.
  const int rank = op.shape().rank();
  return source.shape().rank() == 1 && rank >= 1 && operand.dimensions().size() == 1 &&
         operand.dimensions(0) == rank - 1 && source.shape().dimensions[0] == op.shape().dimensions.back();
}

bool CodeGenerator::ReadsFromMemory(const HloInstruction& user, const HloInstruction& value) const {
  if ((IsVpuBinary(user.opcode()) || user.opcode() == HloOpcode::kCompare) &&
      value.opcode() == HloOpcode::kBroadcast && FoldableBroadcast(user, value)) {
    // Folded unless both operands are foldable broadcasts: then operand 0 is materialized. Operand 0 of
    // a subtraction or compare is always materialized (the VPU takes the folded operand second).
    if (user.opcode() == HloOpcode::kCompare || !IsCommutative(user.opcode())) return user.operand(0) == &value;
    bool other_foldable = FoldableBroadcast(user, *user.operand(user.operand(0) == &value ? 1 : 0));
    return other_foldable && user.operand(0) == &value;
  }
  if (user.opcode() == HloOpcode::kBroadcast && IsScalarF32Constant(value)) return false;
  // The on-false value of a select may be an immediate.
  if (user.opcode() == HloOpcode::kSelect && user.operand(2) == &value && user.operand(1) != &value &&
      user.operand(0) != &value && SelectImmediate(user, L()).has_value()) {
    return false;
  }
  // A divisor that is a constant becomes the immediate of a multiplication.
  if (user.opcode() == HloOpcode::kDivide && user.operand(1) == &value && user.operand(0) != &value &&
      ScalarConstantValue(value)) {
    return false;
  }
  // The init value of a reduce is an immediate.
  if (user.opcode() == HloOpcode::kReduce && user.operand_count() == 2 && user.operand(1) == &value &&
      user.operand(0) != &value && IsScalarF32Constant(value)) {
    return false;
  }
  if (user.opcode() == HloOpcode::kFusion && IsReluFusion(user)) return true;
  if (user.opcode() == HloOpcode::kTuple || user.opcode() == HloOpcode::kGetTupleElement) return false;
  return true;
}

Status CodeGenerator::CheckSupported(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kBroadcast:
    case HloOpcode::kDot:
    case HloOpcode::kAdd:
    case HloOpcode::kMaximum:
    case HloOpcode::kTuple:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kCopy:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
      break;
    case HloOpcode::kTranspose: {
      const std::vector<int64_t>& dims = instruction.dimensions();
      bool identity = true;
      for (size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == static_cast<int64_t>(i);
      if (!identity && !(instruction.shape().rank() == 2 && dims == std::vector<int64_t>{1, 0})) {
        return Unimplemented("transpose " + instruction.name() + ": only rank-2 transposes are supported");
      }
      break;
    }
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kMinimum:
      if (!IsVpuBinary(instruction.opcode())) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kCompare:
      if (!HasOpcode("VCMP") || !HasOpcode("VAND")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kSelect:
      if (!HasOpcode("VSEL")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kConvert:
      if (!HasOpcode("VCVT") || !HasOpcode("VCMP")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kDivide:
      // x / c = x * (1/c) for a constant c: at most one rounding more than the division (docs/numerics.md
      // tolerance); by a computed value, x * rcp(y) (EmitMath).
      if (!IsVpuBinary(HloOpcode::kMultiply)) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kReducePrecision:
      if (!IsBf16Rounding(instruction)) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kExp:
      if (!HasOpcode("VEXP")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kLog:
      if (!HasOpcode("VLOG")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kRsqrt:
      if (!HasOpcode("VRSQRT")) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kSqrt:
      if (!HasOpcode("VRSQRT") || !HasOpcode("VMUL") || !HasOpcode("VCMP") || !HasOpcode("VSEL")) {
        return UnsupportedOp(instruction);
      }
      break;
    case HloOpcode::kNegate:
      // -x = (x * -1) + 0: the add turns the -0 of the padded lanes back into +0.
      if (!IsVpuBinary(HloOpcode::kMultiply)) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kReduce:
      if (instruction.operand_count() != 2 || ReducerOpcode(instruction) == HloOpcode::kUnknown) {
        return Unimplemented("reduce " + instruction.name() + ": only a single-operand add or maximum reduction is supported");
      }
      break;
    case HloOpcode::kCustomCall:
      if (!hlo::IsIdentityCustomCallTarget(instruction.custom_call_target())) return UnsupportedOp(instruction);
      break;
    case HloOpcode::kFusion:
      if (!IsReluFusion(instruction)) {
        return Unimplemented("fusion " + instruction.name() + " is not a fusion this code generator can lower");
      }
      break;
    default:
      return UnsupportedOp(instruction);
  }
  const hlo::Shape& shape = instruction.shape();
  if (instruction.opcode() == HloOpcode::kTuple) return OkStatus();
  if (shape.IsTuple()) {
    if (instruction.opcode() == HloOpcode::kParameter) {
      return Unimplemented("tuple-shaped parameter " + instruction.name() + " is not supported; pass its elements");
    }
    return Unimplemented(instruction.name() + " produces a tuple outside the root");
  }
  // Data movement, select and convert work on any 32-bit device word; elementwise arithmetic and
  // compares also on s32 lanes (s64 through its low word); the MXU paths on f32 only.
  const hlo::PrimitiveType type = shape.element_type;
  const bool f32 = type == hlo::PrimitiveType::F32;
  bool type_ok = f32;
  switch (instruction.opcode()) {
    case HloOpcode::kParameter:
    case HloOpcode::kConstant:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kCopy:
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast:
    case HloOpcode::kCustomCall:
    case HloOpcode::kSelect:
    case HloOpcode::kConvert:
      type_ok = IsDeviceElementType(type);
      break;
    case HloOpcode::kBroadcast:
    case HloOpcode::kTranspose:
      // Moved with DMA and VTRANS; the MXU fallbacks (no VTRANS) move f32 only.
      type_ok = IsDeviceElementType(type) && (f32 || HasOpcode("VTRANS"));
      break;
    case HloOpcode::kAdd:
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum:
    case HloOpcode::kNegate:
      type_ok = f32 || IsIntegerValue(shape);
      break;
    case HloOpcode::kCompare: {
      const hlo::Shape& operand = instruction.operand(0)->shape();
      type_ok = type == hlo::PrimitiveType::PRED &&
                (operand.element_type == hlo::PrimitiveType::F32 || IsIntegerValue(operand) ||
                 operand.element_type == hlo::PrimitiveType::PRED);
      break;
    }
    default:
      break;
  }
  if (!type_ok) {
    return Unimplemented(instruction.name() + " has element type " + hlo::PrimitiveTypeName(type) +
                         "; this code generator lowers " + instruction.opcode_name() + " for " +
                         (instruction.opcode() == HloOpcode::kCompare ? "f32, s32, s64 and pred operands only"
                                                                      : "f32 values only"));
  }
  if (instruction.opcode() == HloOpcode::kConstant && !instruction.has_literal()) {
    return FailedPrecondition("constant " + instruction.name() + " has no values (the dump elided them)");
  }
  if (instruction.opcode() == HloOpcode::kGetTupleElement &&
      instruction.operand(0)->opcode() != HloOpcode::kTuple) {
    return Unimplemented("get-tuple-element " + instruction.name() + " of a non-tuple instruction");
  }
  if (instruction.opcode() == HloOpcode::kReshape || instruction.opcode() == HloOpcode::kBitcast) {
    DeviceLayout in = MakeDeviceLayout(instruction.operand(0)->shape(), L());
    DeviceLayout out = MakeDeviceLayout(shape, L());
    const bool same_lines = in.rows == out.rows && in.cols == out.cols;
    const bool unpadded = in.cols % L() == 0 && out.cols % L() == 0 && in.lines == out.lines;
    if (!same_lines && !unpadded) {
      return Unimplemented(instruction.name() + ": reshape from " + instruction.operand(0)->shape().ToString() +
                           " to " + shape.ToString() + " changes the device layout");
    }
  }
  return OkStatus();
}

void CodeGenerator::LoadAddress(Reg reg, const HloInstruction* value, uint32_t extra_lines) {
  const Location& location = locations_.at(BufferOf(value));
  asm_.LoadAddress(reg, location.kind, location.index, location.offset + extra_lines);
}

int32_t CodeGenerator::ConstantRegion(const HloInstruction& constant) {
  auto it = constant_regions_.find(&constant);
  if (it != constant_regions_.end()) return it->second;
  DeviceLayout layout = MakeDeviceLayout(constant.shape(), L());
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(ToDeviceBytes(constant.literal(), layout));
  int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_regions_[&constant] = index;
  return index;
}

StatusOr<int32_t> CodeGenerator::ConstantRow(uint32_t bits, int64_t cols) {
  auto key = std::make_pair(bits, cols);
  auto it = constant_rows_.find(key);
  if (it != constant_rows_.end()) return it->second;
  float value;
  std::memcpy(&value, &bits, 4);
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F32, {cols});
  DeviceLayout layout = MakeDeviceLayout(shape, L());
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(
      ToDeviceBytes(hlo::Literal(shape, std::vector<float>(static_cast<size_t>(cols), value)), layout));
  int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_rows_[key] = index;
  return index;
}

int32_t CodeGenerator::IdentityRegion(float diagonal) {
  const uint32_t lanes = L();
  // Negative column counts: never the key of a constant row.
  auto key = std::make_pair(FloatBits(diagonal), -static_cast<int64_t>(lanes));
  if (auto it = constant_rows_.find(key); it != constant_rows_.end()) return it->second;
  std::vector<float> eye(size_t{lanes} * lanes, 0.0f);
  for (uint32_t i = 0; i < lanes; ++i) eye[size_t{i} * lanes + i] = diagonal;
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F32, {int64_t{lanes}, int64_t{lanes}});
  DeviceLayout layout = MakeDeviceLayout(shape, lanes);
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(ToDeviceBytes(hlo::Literal(shape, eye), layout));
  const int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_rows_[key] = index;
  return index;
}

Status CodeGenerator::ForChunks(uint32_t total, uint32_t chunk,
                                const std::vector<std::pair<Reg, uint32_t>>& pointers,
                                const std::function<Status(Reg count, uint32_t count_value)>& body) {
  if (total == 0) return OkStatus();
  chunk = std::min(chunk, total);
  const uint32_t full = total / chunk;
  const uint32_t rest = total % chunk;
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  auto advance = [&](uint32_t items) {
    for (const auto& [reg, step] : pointers) asm_.Addi(reg, reg, items * step);
  };
  asm_.Li(count, chunk);
  if (full >= 2) {
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
    asm_.Li(remaining, full);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(body(count, chunk));
    advance(chunk);
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, loop);
  } else {
    TPU_RETURN_IF_ERROR(body(count, chunk));
    if (rest > 0) advance(chunk);
  }
  if (rest > 0) {
    asm_.Li(count, rest);
    TPU_RETURN_IF_ERROR(body(count, rest));
  }
  return OkStatus();
}

Status CodeGenerator::EmitCopy(const HloInstruction* from, Location to) {
  const DeviceLayout layout = MakeDeviceLayout(from->shape(), L());
  TPU_ASSIGN_OR_RETURN(ScopedReg src, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg dst, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
  LoadAddress(src, from, 0);
  asm_.LoadAddress(dst, to.kind, to.index, to.offset);
  asm_.Li(buffer, 0);
  // One unit moves both ways and completes in order, so no SYNC is needed between load and store.
  return ForChunks(layout.lines, options_.vmem_lines, {{src, 1}, {dst, 1}}, [&](Reg count, uint32_t) {
    asm_.DmaLoad(src, buffer, count, 1);
    asm_.DmaStore(dst, buffer, count, 1);
    return OkStatus();
  });
}

Status CodeGenerator::EmitElementwise(const HloInstruction& instruction, HloOpcode op, const HloInstruction* a,
                                      Src2 b) {
  const std::optional<isa::Opcode> opcode = VpuOpcodeFor(op);
  if (!opcode) return UnsupportedOp(instruction);
  VpuOp vpu;
  vpu.opcode = *opcode;
  if (IsIntegerValue(instruction.shape())) vpu.flags = isa::flag::VADD_INT;
  // Negate runs a second instruction on the same lines: + 0 after * -1 turns -0 back into +0.
  vpu.then_add_zero = instruction.opcode() == HloOpcode::kNegate && !IsIntegerValue(instruction.shape());
  return EmitVpu(instruction, vpu, a, b);
}

Status CodeGenerator::EmitVpu(const HloInstruction& instruction, const VpuOp& vpu, const HloInstruction* a,
                              Src2 b) {
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  auto vop = [&](Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags, uint32_t imm) {
    if (vpu.unary) {
      asm_.Emit(vpu.opcode, {dst, src1, kZeroReg, count, vpu.flags, 0});
    } else {
      asm_.Emit(vpu.opcode, {dst, src1, src2, count, static_cast<uint8_t>(flags | vpu.flags), imm});
    }
    if (vpu.then_add_zero) asm_.Vadd(dst, dst, kZeroReg, count, isa::flag::VADD_SRC2_IMM, 0);
  };
  TPU_ASSIGN_OR_RETURN(ScopedReg a_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg a_vmem, NewReg());
  LoadAddress(a_hbm, a, 0);
  LoadAddress(out_hbm, &instruction, 0);
  const uint32_t budget = options_.vmem_lines;

  if (b.kind == Src2::kTensor || b.kind == Src2::kImmediate) {
    const bool tensor = b.kind == Src2::kTensor;
    const uint32_t chunk = tensor ? budget / 2 : budget;
    if (chunk == 0) return VmemOverflow(instruction, 2);
    TPU_ASSIGN_OR_RETURN(ScopedReg b_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg b_vmem, NewReg());
    if (tensor) LoadAddress(b_hbm, b.value, 0);
    asm_.Li(a_vmem, 0);
    asm_.Li(b_vmem, std::min(chunk, layout.lines));
    std::vector<std::pair<Reg, uint32_t>> pointers = {{a_hbm, 1}, {out_hbm, 1}};
    if (tensor) pointers.push_back({b_hbm, 1});
    return ForChunks(layout.lines, chunk, pointers, [&](Reg count, uint32_t) {
      asm_.DmaLoad(a_hbm, a_vmem, count, 1);
      if (tensor) asm_.DmaLoad(b_hbm, b_vmem, count, 1);
      asm_.Sync(kSyncDma);
      if (tensor) {
        vop(a_vmem, a_vmem, b_vmem, count, 0, 0);
      } else {
        vop(a_vmem, a_vmem, kZeroReg, count, isa::flag::VADD_SRC2_IMM, b.imm);
      }
      asm_.Sync(kSyncVpu);
      asm_.DmaStore(out_hbm, a_vmem, count, 1);
      return OkStatus();
    });
  }

  // Row broadcast: the row's line t is added to line t of every row.
  const uint32_t tiles = static_cast<uint32_t>(layout.column_tiles(L()));
  TPU_ASSIGN_OR_RETURN(ScopedReg row_vmem, NewReg());
  {
    TPU_ASSIGN_OR_RETURN(ScopedReg row_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_count, NewReg());
    if (b.constant_row >= 0) {
      asm_.LoadAddress(row_hbm, RegionKind::kConstant, static_cast<uint32_t>(b.constant_row), 0);
    } else {
      LoadAddress(row_hbm, b.value, 0);
    }
    asm_.Li(row_vmem, 0);
    asm_.Li(row_count, tiles);
    asm_.DmaLoad(row_hbm, row_vmem, row_count, 1);  // waited for by the first SYNC below
  }
  if (tiles == 1) {
    // Rows are whole lines: one VPU instruction per chunk with the row broadcast to every line.
    if (budget <= 1) return VmemOverflow(instruction, 2);
    asm_.Li(a_vmem, 1);
    return ForChunks(layout.lines, budget - 1, {{a_hbm, 1}, {out_hbm, 1}}, [&](Reg count, uint32_t) {
      asm_.DmaLoad(a_hbm, a_vmem, count, 1);
      asm_.Sync(kSyncDma);
      vop(a_vmem, a_vmem, row_vmem, count, isa::flag::VADD_SRC2_BCAST, 0);
      asm_.Sync(kSyncVpu);
      asm_.DmaStore(out_hbm, a_vmem, count, 1);
      return OkStatus();
    });
  }
  // Several lines per row: gather column tile t of a chunk of rows into contiguous lines (strided DMA),
  // apply line t of the row to all of them, scatter them back.
  if (budget <= tiles) return VmemOverflow(instruction, tiles + 1);
  asm_.Li(a_vmem, tiles);
  const uint32_t rows = static_cast<uint32_t>(layout.rows);
  return ForChunks(rows, budget - tiles, {{a_hbm, tiles}, {out_hbm, tiles}}, [&](Reg count, uint32_t) {
    TPU_ASSIGN_OR_RETURN(ScopedReg a_tile, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg out_tile, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_line, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_end, NewReg());
    asm_.Addi(a_tile, a_hbm, 0);
    asm_.Addi(out_tile, out_hbm, 0);
    asm_.Li(row_line, 0);
    asm_.Li(row_end, tiles);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    asm_.DmaLoad(a_tile, a_vmem, count, tiles);
    asm_.Sync(kSyncDma);
    vop(a_vmem, a_vmem, row_line, count, isa::flag::VADD_SRC2_BCAST, 0);
    asm_.Sync(kSyncVpu);
    asm_.DmaStore(out_tile, a_vmem, count, tiles);
    asm_.Addi(a_tile, a_tile, 1);
    asm_.Addi(out_tile, out_tile, 1);
    asm_.Addi(row_line, row_line, 1);
    asm_.Bne(row_line, row_end, loop);
    return OkStatus();
  });
}

Status CodeGenerator::EmitRowBroadcastInto(const HloInstruction& out, const Src2& row) {
  const DeviceLayout layout = MakeDeviceLayout(out.shape(), L());
  const uint32_t tiles = static_cast<uint32_t>(layout.column_tiles(L()));
  if (options_.vmem_lines < tiles) return VmemOverflow(out, tiles);
  TPU_ASSIGN_OR_RETURN(ScopedReg row_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg row_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg row_count, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  if (row.constant_row >= 0) {
    asm_.LoadAddress(row_hbm, RegionKind::kConstant, static_cast<uint32_t>(row.constant_row), 0);
  } else {
    LoadAddress(row_hbm, row.value, 0);
  }
  LoadAddress(out_hbm, &out, 0);
  asm_.Li(row_vmem, 0);
  asm_.Li(row_count, tiles);
  // DMA_LD then DMA_ST of the same lines: one unit, in order.
  asm_.DmaLoad(row_hbm, row_vmem, row_count, 1);
  return ForChunks(static_cast<uint32_t>(layout.rows), 1, {{out_hbm, tiles}}, [&](Reg, uint32_t) {
    asm_.DmaStore(out_hbm, row_vmem, row_count, 1);
    return OkStatus();
  });
}

Status CodeGenerator::EmitBroadcast(const HloInstruction& instruction) {
  const HloInstruction& source = *instruction.operand(0);
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  if (IsScalarF32Constant(source)) {
    const uint32_t bits = FloatBits(source.literal().Get<float>(0));
    if (layout.cols % L() == 0 || bits == 0) {
      // Whole lines (or zero): splat one chunk once and store it as often as needed.
      const uint32_t chunk = std::min(layout.lines, options_.vmem_lines);
      TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
      {
        TPU_ASSIGN_OR_RETURN(ScopedReg splat_count, NewReg());
        asm_.Li(buffer, 0);
        asm_.Li(splat_count, chunk);
        asm_.Vsplat(buffer, splat_count, bits);
        asm_.Sync(kSyncVpu);
      }
      LoadAddress(out_hbm, &instruction, 0);
      return ForChunks(layout.lines, chunk, {{out_hbm, 1}}, [&](Reg count, uint32_t) {
        asm_.DmaStore(out_hbm, buffer, count, 1);
        return OkStatus();
      });
    }
    Src2 row;
    row.kind = Src2::kRow;
    TPU_ASSIGN_OR_RETURN(row.constant_row, ConstantRow(bits, layout.cols));
    return EmitRowBroadcastInto(instruction, row);
  }
  if (source.shape().rank() == 0) return EmitLaneBroadcast(instruction);
  const int rank = instruction.shape().rank();
  if (source.shape().rank() == 1 && instruction.dimensions().size() == 1 && instruction.dimensions(0) == rank - 1) {
    Src2 row;
    row.kind = Src2::kRow;
    row.value = &source;
    return EmitRowBroadcastInto(instruction, row);
  }
  if (source.shape() == instruction.shape()) return EmitCopy(&source, locations_.at(&instruction));
  if (source.shape().rank() == 1 && rank == 2 && instruction.dimensions() == std::vector<int64_t>{0}) {
    return EmitLaneBroadcast(instruction);
  }
  return Unimplemented("broadcast " + instruction.name() + " from " + source.shape().ToString() + " to " +
                       instruction.shape().ToString() + " with dimensions other than the minor one");
}

// exp, log, rsqrt, sqrt and x / y with the transcendental VPU instructions (docs/numerics.md),
// chunk by chunk in VMEM:
//  - exp, log, rsqrt: VEXP, VLOG, VRSQRT in place;
//  - x / y = x * VRCP(y) (the rcp is ~1 ulp, the product one more rounding);
//  - sqrt(x) = x * VRSQRT(x), and 0 where x == 0 (the product would be 0 * inf = NaN); +inf is not
//    handled (inf * 0 = NaN).
// Padded lanes would hold exp(0) = 1, log(0), rsqrt(0) or 0 * rcp(0): when the minor dimension has
// padding, a second pass clears them (VAND with a row of ones in the logical lanes). sqrt gives 0 there.
Status CodeGenerator::EmitMath(const HloInstruction& instruction, MathKind kind) {
  static const char* const kOpcodeNames[] = {"VEXP", "VLOG", "VRCP", "VRSQRT", "VRSQRT"};
  if (!HasOpcode(kOpcodeNames[static_cast<int>(kind)]) || !HasOpcode("VMUL")) return UnsupportedOp(instruction);
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  constexpr uint32_t kBuffers = 2;
  const uint32_t chunk = options_.vmem_lines / kBuffers;
  if (chunk == 0) return VmemOverflow(instruction, kBuffers);
  const uint32_t used = std::min(chunk, layout.lines);
  TPU_RETURN_IF_ERROR(EmitMathChunks(instruction, kind, chunk, used));
  if (layout.cols % L() == 0 || kind == MathKind::kSqrt) return OkStatus();
  asm_.Sync(kSyncAll);
  VpuOp mask;
  mask.opcode = isa::Opcode::VAND;
  Src2 row;
  row.kind = Src2::kRow;
  TPU_ASSIGN_OR_RETURN(row.constant_row, ConstantRow(0xffffffffu, layout.cols));
  return EmitVpu(instruction, mask, &instruction, row);
}

Status CodeGenerator::EmitMathChunks(const HloInstruction& instruction, MathKind kind, uint32_t chunk,
                                     uint32_t used) {
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  TPU_ASSIGN_OR_RETURN(ScopedReg X, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg A, NewReg());
  asm_.Li(X, 0);
  asm_.Li(A, used);
  TPU_ASSIGN_OR_RETURN(ScopedReg x_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg y_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  LoadAddress(x_hbm, instruction.operand(0), 0);
  if (kind == MathKind::kDivide) LoadAddress(y_hbm, instruction.operand(1), 0);
  LoadAddress(out_hbm, &instruction, 0);
  std::vector<std::pair<Reg, uint32_t>> pointers = {{x_hbm, 1}, {out_hbm, 1}};
  if (kind == MathKind::kDivide) pointers.push_back({y_hbm, 1});

  return ForChunks(layout.lines, chunk, pointers, [&](Reg count, uint32_t) -> Status {
    using isa::Opcode;
    auto unary = [&](Opcode opcode, Reg d, Reg a) { asm_.Emit(opcode, {d, a, kZeroReg, count, 0, 0}); };
    asm_.DmaLoad(x_hbm, X, count, 1);
    if (kind == MathKind::kDivide) asm_.DmaLoad(y_hbm, A, count, 1);
    asm_.Sync(kSyncDma);
    switch (kind) {
      case MathKind::kExp:
        unary(Opcode::VEXP, X, X);
        break;
      case MathKind::kLog:
        unary(Opcode::VLOG, X, X);
        break;
      case MathKind::kRsqrt:
        unary(Opcode::VRSQRT, X, X);
        break;
      case MathKind::kDivide:
        unary(Opcode::VRCP, A, A);
        asm_.Emit(Opcode::VMUL, {X, X, A, count, 0, 0});
        break;
      case MathKind::kSqrt:
        unary(Opcode::VRSQRT, A, X);
        asm_.Emit(Opcode::VMUL, {A, X, A, count, 0, 0});
        asm_.Emit(Opcode::VCMP, {X, X, kZeroReg, count,
                                 static_cast<uint8_t>(isa::flag::VCMP_SRC2_IMM |
                                                      (VcmpDirection(hlo::ComparisonDirection::kNe)
                                                       << isa::flag::VCMP_DIR_LSB)),
                                 0});                                   // 1 where x != 0
        asm_.Emit(Opcode::VSEL, {X, A, kZeroReg, count, isa::flag::VSEL_SRC2_IMM, 0});
        break;
    }
    asm_.Sync(kSyncVpu);
    asm_.DmaStore(out_hbm, X, count, 1);
    return OkStatus();
  });
}

// bf16(x) on the MXU: the lines streamed through identity weights come out rounded to bf16 (products
// with 1.0 are exact, the column sum adds zeros).
Status CodeGenerator::EmitRoundToBf16(const HloInstruction& instruction) {
  const uint32_t lanes = L();
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), lanes);
  if (options_.vmem_lines < lanes + 2) return VmemOverflow(instruction, lanes + 2);
  const uint32_t chunk = (options_.vmem_lines - lanes) / 2;
  const uint32_t used = std::min(chunk, layout.lines);
  TPU_ASSIGN_OR_RETURN(ScopedReg identity_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg in_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  {
    TPU_ASSIGN_OR_RETURN(ScopedReg address, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
    asm_.LoadAddress(address, RegionKind::kConstant, static_cast<uint32_t>(IdentityRegion()), 0);
    asm_.Li(identity_reg, 0);
    asm_.Li(count, lanes);
    asm_.DmaLoad(address, identity_reg, count, 1);
    asm_.Sync(kSyncDma);
    asm_.MxuLoadWeights(identity_reg, /*transpose=*/false);
    // One line through the swapped-in identity (into a line the chunks overwrite): the identity is then
    // the front buffer for every chunk.
    asm_.Li(in_vmem, lanes);
    asm_.Li(count, 1);
    asm_.MxuMatmul(identity_reg, in_vmem, count, /*accumulate=*/false, /*swap=*/true);
    asm_.Sync(kSyncMxu);
  }
  asm_.Li(in_vmem, lanes);
  asm_.Li(out_vmem, lanes + used);
  LoadAddress(in_hbm, instruction.operand(0), 0);
  LoadAddress(out_hbm, &instruction, 0);
  return ForChunks(layout.lines, chunk, {{in_hbm, 1}, {out_hbm, 1}}, [&](Reg count, uint32_t) {
    asm_.DmaLoad(in_hbm, in_vmem, count, 1);
    asm_.Sync(kSyncDma);
    asm_.MxuMatmul(in_vmem, out_vmem, count, /*accumulate=*/false, /*swap=*/false);
    asm_.Sync(kSyncMxu);
    asm_.DmaStore(out_hbm, out_vmem, count, 1);
    return OkStatus();
  });
}

// compare: VCMP (INT for integer operands) with the direction in its flags; the second operand may be a
// folded broadcast. Padded lanes compare +0 with +0 (or the immediate): when that is true they are
// cleared afterwards with VAND against a row that is all ones in the logical lanes.
Status CodeGenerator::EmitCompare(const HloInstruction& instruction) {
  const HloInstruction* a = instruction.operand(0);
  const HloInstruction* b_value = instruction.operand(1);
  const hlo::ComparisonDirection direction = instruction.comparison_direction();
  VpuOp vpu;
  vpu.opcode = isa::Opcode::VCMP;
  vpu.flags = static_cast<uint8_t>(VcmpDirection(direction) << isa::flag::VCMP_DIR_LSB);
  if (a->shape().element_type != hlo::PrimitiveType::F32) vpu.flags |= isa::flag::VCMP_INT;
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  Src2 b;
  if (FoldableBroadcast(instruction, *b_value)) {
    const HloInstruction& source = *b_value->operand(0);
    if (IsScalarF32Constant(source)) {
      b.kind = Src2::kImmediate;
      b.imm = FloatBits(source.literal().Get<float>(0));
    } else {
      b.kind = Src2::kRow;
      b.value = &source;
    }
  } else {
    b.kind = Src2::kTensor;
    b.value = b_value;
  }
  TPU_RETURN_IF_ERROR(EmitVpu(instruction, vpu, a, b));
  const bool integer = a->shape().element_type != hlo::PrimitiveType::F32;
  const bool padding_true = CompareTrueOnPadding(direction, b.kind == Src2::kImmediate && !integer, b.imm);
  if (layout.cols % L() == 0 || !padding_true) return OkStatus();
  asm_.Sync(kSyncAll);
  VpuOp mask;
  mask.opcode = isa::Opcode::VAND;
  Src2 row;
  row.kind = Src2::kRow;
  TPU_ASSIGN_OR_RETURN(row.constant_row, ConstantRow(0xffffffffu, layout.cols));
  return EmitVpu(instruction, mask, &instruction, row);
}

// select: the predicate is loaded into the result lines, VSEL overwrites them with on-true where the
// predicate is non-zero and with on-false (a tensor or an immediate) elsewhere.
Status CodeGenerator::EmitSelect(const HloInstruction& instruction) {
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  const std::optional<uint32_t> immediate = SelectImmediate(instruction, L());
  const uint32_t buffers = immediate ? 2 : 3;
  const uint32_t chunk = options_.vmem_lines / buffers;
  if (chunk == 0) return VmemOverflow(instruction, buffers);
  TPU_ASSIGN_OR_RETURN(ScopedReg pred_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg true_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg false_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg result_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg true_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg false_vmem, NewReg());
  LoadAddress(pred_hbm, instruction.operand(0), 0);
  LoadAddress(true_hbm, instruction.operand(1), 0);
  if (!immediate) LoadAddress(false_hbm, instruction.operand(2), 0);
  LoadAddress(out_hbm, &instruction, 0);
  const uint32_t used = std::min(chunk, layout.lines);
  asm_.Li(result_vmem, 0);
  asm_.Li(true_vmem, used);
  asm_.Li(false_vmem, 2 * used);
  std::vector<std::pair<Reg, uint32_t>> pointers = {{pred_hbm, 1}, {true_hbm, 1}, {out_hbm, 1}};
  if (!immediate) pointers.push_back({false_hbm, 1});
  return ForChunks(layout.lines, chunk, pointers, [&](Reg count, uint32_t) {
    asm_.DmaLoad(pred_hbm, result_vmem, count, 1);
    asm_.DmaLoad(true_hbm, true_vmem, count, 1);
    if (!immediate) asm_.DmaLoad(false_hbm, false_vmem, count, 1);
    asm_.Sync(kSyncDma);
    if (immediate) {
      asm_.Emit(isa::Opcode::VSEL, {result_vmem, true_vmem, kZeroReg, count, isa::flag::VSEL_SRC2_IMM, *immediate});
    } else {
      asm_.Emit(isa::Opcode::VSEL, {result_vmem, true_vmem, false_vmem, count, 0, 0});
    }
    asm_.Sync(kSyncVpu);
    asm_.DmaStore(out_hbm, result_vmem, count, 1);
    return OkStatus();
  });
}

// convert between f32 and integers with VCVT (f32 -> integer truncates toward zero, saturating);
// f32 -> pred is x != 0; between integer types and pred (0/1 words) the words stay as they are.
Status CodeGenerator::EmitConvert(const HloInstruction& instruction) {
  const HloInstruction* operand = instruction.operand(0);
  const hlo::PrimitiveType from = operand->shape().element_type, to = instruction.shape().element_type;
  const bool from_f32 = from == hlo::PrimitiveType::F32, to_f32 = to == hlo::PrimitiveType::F32;
  if (from_f32 == to_f32 && (from_f32 || to != hlo::PrimitiveType::PRED)) {
    if (to != hlo::PrimitiveType::PRED || from == hlo::PrimitiveType::PRED) {
      return EmitCopy(operand, locations_.at(&instruction));
    }
  }
  if (to == hlo::PrimitiveType::PRED) {
    // x != 0 (for integers with INT); padded lanes are 0 != 0 = 0.
    VpuOp vpu;
    vpu.opcode = isa::Opcode::VCMP;
    vpu.flags = static_cast<uint8_t>(VcmpDirection(hlo::ComparisonDirection::kNe) << isa::flag::VCMP_DIR_LSB);
    if (!from_f32) vpu.flags |= isa::flag::VCMP_INT;
    Src2 zero;
    zero.kind = Src2::kImmediate;
    zero.imm = 0;
    return EmitVpu(instruction, vpu, operand, zero);
  }
  // VCVT takes one source; the unused second operand of EmitVpu's immediate form is ignored.
  VpuOp vpu;
  vpu.opcode = isa::Opcode::VCVT;
  vpu.flags = to_f32 ? 0 : isa::flag::VCVT_F32_TO_S32;
  vpu.unary = true;
  Src2 none;
  none.kind = Src2::kImmediate;
  return EmitVpu(instruction, vpu, operand, none);
}

// Reductions that keep only the minor dimension (or reduce everything when the minor dimension has one
// element): the result is one device row, the VPU combines the operand's rows into an accumulator row
// in row order. The accumulator starts as row 0; a non-identity init value is applied last.
Status CodeGenerator::EmitReduce(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  const HloInstruction& init = *instruction.operand(1);
  const HloOpcode op = ReducerOpcode(instruction);
  const int rank = operand.shape().rank();
  const DeviceLayout in = MakeDeviceLayout(operand.shape(), L());
  std::vector<int64_t> dims = instruction.dimensions();
  std::sort(dims.begin(), dims.end());
  bool leading = true;  // dims == {0, ..., rank-2} (or {0, ..., rank-1} with a minor dimension of 1)
  for (size_t i = 0; i < dims.size(); ++i) leading = leading && dims[i] == static_cast<int64_t>(i);
  const bool keeps_minor = leading && static_cast<int>(dims.size()) == rank - 1;
  const bool all_with_unit_minor = leading && static_cast<int>(dims.size()) == rank && in.cols == 1;
  if (rank == 0 || (!keeps_minor && !all_with_unit_minor)) {
    return Unimplemented("reduce " + instruction.name() + " over dimensions {" + [&] {
      std::string text;
      for (int64_t d : instruction.dimensions()) text += (text.empty() ? "" : ",") + std::to_string(d);
      return text;
    }() + "} of " + operand.shape().ToString() + ": only reductions that keep just the minor dimension are supported");
  }
  if (!IsScalarF32Constant(init)) {
    return Unimplemented("reduce " + instruction.name() + ": the init value must be a scalar f32 constant");
  }
  const uint32_t init_bits = FloatBits(init.literal().Get<float>(0));
  const bool init_is_identity = op == HloOpcode::kAdd ? (init_bits == 0u || init_bits == 0x80000000u)
                                                      : init_bits == 0xff800000u;
  if (!init_is_identity && !ImmediateKeepsPaddingZero(op, init_bits) && in.cols % L() != 0) {
    return Unimplemented("reduce " + instruction.name() + ": an init value that is not the identity of the reduction");
  }
  auto vop = [&](Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags, uint32_t imm) {
    if (op == HloOpcode::kAdd) {
      asm_.Vadd(dst, src1, src2, count, flags, imm);
    } else {
      asm_.Vmax(dst, src1, src2, count, flags, imm);
    }
  };
  const uint32_t tiles = static_cast<uint32_t>(in.column_tiles(L()));
  const uint32_t rows = static_cast<uint32_t>(in.rows);
  if (tiles == 0 || rows == 0) {
    return Unimplemented("reduce " + instruction.name() + " of an empty operand");
  }
  if (options_.vmem_lines < 2 * tiles) return VmemOverflow(instruction, 2 * tiles);
  // VMEM: the accumulator at line 0 (addressed through s0), then a chunk of operand rows.
  const uint32_t chunk_rows = (options_.vmem_lines - tiles) / tiles;
  TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg tiles_reg, NewReg());
  LoadAddress(in_hbm, &operand, 0);
  asm_.Li(tiles_reg, tiles);
  asm_.DmaLoad(in_hbm, kZeroReg, tiles_reg, 1);
  asm_.Addi(in_hbm, in_hbm, tiles);
  TPU_RETURN_IF_ERROR(ForChunks(rows - 1, chunk_rows, {{in_hbm, tiles}}, [&](Reg count, uint32_t) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg lines, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_end, NewReg());
    asm_.Mul(lines, count, tiles_reg);
    asm_.Li(buffer, tiles);
    asm_.DmaLoad(in_hbm, buffer, lines, 1);
    asm_.Sync(kSyncDma);
    asm_.Addi(row, buffer, 0);
    asm_.Add(row_end, buffer, lines);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    vop(kZeroReg, kZeroReg, row, tiles_reg, 0, 0);
    asm_.Add(row, row, tiles_reg);
    asm_.Bne(row, row_end, loop);
    asm_.Sync(kSyncVpu);  // the next chunk's DMA overwrites the rows just read
    return OkStatus();
  }));
  if (!init_is_identity) {
    asm_.Sync(kSyncDma);
    vop(kZeroReg, kZeroReg, kZeroReg, tiles_reg, isa::flag::VADD_SRC2_IMM, init_bits);
    asm_.Sync(kSyncVpu);
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  LoadAddress(out_hbm, &instruction, 0);
  asm_.DmaStore(out_hbm, kZeroReg, tiles_reg, 1);  // after the accumulator's DMA load: same unit, in order
  return OkStatus();
}

// A value that lives in lanes spread over a line goes to every lane of its own output rows through the
// MXU: a line copied into all LANES weight lines (DMA stride 0) and loaded with TRANSPOSE gives weights
// W[k][n] = line.lane[k] for every column n < the copies; identity row e_k then yields lane k in every
// lane. Weight lines past the last output column stay zero, which keeps padded lanes +0. Values are
// rounded to bf16 by the MXU (within the tolerance of docs/numerics.md).
//  - scalar source: the weights come from the scalar's line (only lane 0 is non-zero) and every output
//    row streams e_0 (copies of the identity's first line), in chunks of rows;
//  - dimensions={0} of a rank-2 result: block b of LANES output rows uses line b of the source and the
//    identity, and the result lines are stored into every column tile.
Status CodeGenerator::EmitLaneBroadcast(const HloInstruction& instruction) {
  {
    TPU_ASSIGN_OR_RETURN(bool done, EmitLaneBroadcastVtrans(instruction));
    if (done) return OkStatus();
  }
  if (instruction.shape().element_type != hlo::PrimitiveType::F32) {
    return Unimplemented("broadcast " + instruction.name() + " of " + instruction.shape().ToString() +
                         " does not fit the VMEM for VTRANS");
  }
  const HloInstruction& source = *instruction.operand(0);
  const bool scalar = source.shape().rank() == 0;
  const uint32_t lanes = L();
  const DeviceLayout out = MakeDeviceLayout(instruction.shape(), lanes);
  const uint32_t R = static_cast<uint32_t>(out.rows), C = static_cast<uint32_t>(out.cols);
  if (R == 0 || C == 0) return OkStatus();
  const uint32_t tiles = static_cast<uint32_t>(out.column_tiles(lanes));
  const uint32_t full_tiles = C / lanes, rest = C % lanes;
  // VMEM: weights [0, LANES), identity or e_0 copies [LANES, LANES + rows), results after them.
  const uint32_t weights = 0, lhs = lanes;
  const uint32_t max_rows = scalar ? (options_.vmem_lines - lanes) / 2 : lanes;
  if (options_.vmem_lines < 3 * lanes || max_rows == 0) return VmemOverflow(instruction, 3 * lanes);
  const uint32_t chunk = std::min(R, max_rows);
  const uint32_t result = lhs + chunk;
  const int32_t identity_region = IdentityRegion();

  TPU_ASSIGN_OR_RETURN(ScopedReg weights_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg lhs_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg result_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg source_hbm, NewReg());
  asm_.Li(weights_reg, weights);
  asm_.Li(lhs_reg, lhs);
  asm_.Li(result_reg, result);
  {
    TPU_ASSIGN_OR_RETURN(ScopedReg identity_hbm, NewReg());
    asm_.LoadAddress(identity_hbm, RegionKind::kConstant, static_cast<uint32_t>(identity_region), 0);
    // Scalar: `chunk` copies of e_0; otherwise the identity.
    asm_.Li(count, scalar ? chunk : lanes);
    asm_.DmaLoad(identity_hbm, lhs_reg, count, scalar ? 0 : 1);
  }
  LoadAddress(source_hbm, &source, 0);

  // Weights from the source line at source_hbm: `columns` copies, the other weight lines zero.
  auto load_weights = [&](uint32_t columns) {
    if (columns < lanes) {
      asm_.Li(count, lanes);
      asm_.Vsplat(weights_reg, count, 0);
      asm_.Sync(kSyncVpu);
    }
    asm_.Li(count, columns);
    asm_.DmaLoad(source_hbm, weights_reg, count, 0);
    asm_.Sync(kSyncDma);
    asm_.MxuLoadWeights(weights_reg, /*transpose=*/true);
  };
  // One result for the full tiles, one for the partial last tile; each stored into its tiles for the
  // rows `rows` starting at out_hbm.
  auto emit_rows = [&](Reg out_hbm, uint32_t rows) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg rows_reg, NewReg());
    asm_.Li(rows_reg, rows);
    if (full_tiles > 0) {
      load_weights(lanes);
      asm_.MxuMatmul(lhs_reg, result_reg, rows_reg, /*accumulate=*/false, /*swap=*/true);
      asm_.Sync(kSyncMxu);
      TPU_RETURN_IF_ERROR(StoreColumnTiles(result_reg, rows_reg, out_hbm, 0, full_tiles, tiles));
    }
    if (rest > 0) {
      asm_.Sync(kSyncDma);  // the stores above read the result lines the next matmul writes
      load_weights(rest);
      asm_.MxuMatmul(lhs_reg, result_reg, rows_reg, /*accumulate=*/false, /*swap=*/true);
      asm_.Sync(kSyncMxu);
      TPU_RETURN_IF_ERROR(StoreColumnTiles(result_reg, rows_reg, out_hbm, full_tiles, 1, tiles));
    }
    asm_.Sync(kSyncDma);
    return OkStatus();
  };
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  LoadAddress(out_hbm, &instruction, 0);
  if (scalar) {
    for (uint32_t r0 = 0; r0 < R; r0 += chunk) {
      TPU_RETURN_IF_ERROR(emit_rows(out_hbm, std::min(chunk, R - r0)));
      asm_.Addi(out_hbm, out_hbm, chunk * tiles);
    }
    return OkStatus();
  }
  // Column broadcast: block b of rows takes line b of the source.
  for (uint32_t b = 0; b * lanes < R; ++b) {
    TPU_RETURN_IF_ERROR(emit_rows(out_hbm, std::min(lanes, R - b * lanes)));
    asm_.Addi(out_hbm, out_hbm, lanes * tiles);
    asm_.Addi(source_hbm, source_hbm, 1);
  }
  return OkStatus();
}

// Rank-2 transpose with VTRANS: a block of LANES operand rows is gathered tile-major (tile t of row i
// at line t*LANES + i, rows past the operand zero), VTRANS turns every tile around, and line c of the
// result is output row c of the block's column tile: one strided store for the whole block.
Status CodeGenerator::StoreColumnTiles(Reg from_vmem, Reg rows, Reg row_hbm, uint32_t first_tile,
                                       uint32_t tile_count, uint32_t row_tiles) {
  TPU_ASSIGN_OR_RETURN(ScopedReg tile_hbm, NewReg());
  asm_.Addi(tile_hbm, row_hbm, first_tile);
  if (tile_count == 1) {
    asm_.DmaStore(tile_hbm, from_vmem, rows, row_tiles);
    return OkStatus();
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg tile_end, NewReg());
  asm_.Addi(tile_end, row_hbm, first_tile + tile_count);
  Assembler::Label loop = asm_.NewLabel();
  asm_.Bind(loop);
  asm_.DmaStore(tile_hbm, from_vmem, rows, row_tiles);
  asm_.Addi(tile_hbm, tile_hbm, 1);
  asm_.Bne(tile_hbm, tile_end, loop);
  return OkStatus();
}

Status CodeGenerator::ForRowBlocks(const HloInstruction& output, uint32_t rows, Reg out_hbm,
                                   const std::function<Status(uint32_t block_rows)>& emit_block) {
  const uint32_t lanes = L();
  const uint32_t full_blocks = rows / lanes, rest_rows = rows % lanes;
  if (full_blocks == 1) {
    TPU_RETURN_IF_ERROR(emit_block(lanes));
  } else if (full_blocks >= 2) {
    TPU_ASSIGN_OR_RETURN(ScopedReg out_end, NewReg());
    LoadAddress(out_end, &output, full_blocks);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(emit_block(lanes));
    asm_.Bne(out_hbm, out_end, loop);
  }
  if (rest_rows != 0) TPU_RETURN_IF_ERROR(emit_block(rest_rows));
  return OkStatus();
}

StatusOr<bool> CodeGenerator::EmitTransposeVtrans(const HloInstruction& instruction) {
  if (!HasOpcode("VTRANS")) return false;
  const HloInstruction& operand = *instruction.operand(0);
  const uint32_t lanes = L();
  const DeviceLayout in = MakeDeviceLayout(operand.shape(), lanes);
  const uint32_t R = static_cast<uint32_t>(in.rows), C = static_cast<uint32_t>(in.cols);
  const uint32_t in_tiles = static_cast<uint32_t>(in.column_tiles(lanes));
  const uint32_t out_tiles = (R + lanes - 1) / lanes;
  const uint32_t block_lines = lanes * in_tiles;
  const uint32_t source = 0, target = block_lines;
  if (uint64_t{2} * block_lines > options_.vmem_lines) return false;
  TPU_ASSIGN_OR_RETURN(ScopedReg source_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg target_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg tiles_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg columns_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  asm_.Li(source_reg, source);
  asm_.Li(target_reg, target);
  asm_.Li(tiles_reg, in_tiles);
  asm_.Li(columns_reg, C);
  LoadAddress(in_hbm, &operand, 0);
  LoadAddress(out_hbm, &instruction, 0);
  auto emit_block = [&](uint32_t rows) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg rows_reg, NewReg());
    if (rows < lanes) {
      asm_.Li(rows_reg, block_lines);
      asm_.Vsplat(source_reg, rows_reg, 0);  // rows past the operand become +0 padded lanes
      asm_.Sync(kSyncVpu);
    }
    asm_.Li(rows_reg, rows);
    asm_.Addi(from, in_hbm, 0);
    asm_.Li(to, source);
    asm_.Li(end, source + block_lines);
    Assembler::Label gather = asm_.NewLabel();
    asm_.Bind(gather);
    asm_.DmaLoad(from, to, rows_reg, in_tiles);
    asm_.Addi(from, from, 1);
    asm_.Addi(to, to, lanes);
    asm_.Bne(to, end, gather);
    asm_.Sync(kSyncDma);  // also the previous block's store, which read the target lines
    asm_.Emit(isa::Opcode::VTRANS, {target_reg, source_reg, {}, tiles_reg, 0, 0});
    asm_.Sync(kSyncVpu);
    asm_.DmaStore(out_hbm, target_reg, columns_reg, out_tiles);
    asm_.Addi(in_hbm, in_hbm, lanes * in_tiles);
    asm_.Addi(out_hbm, out_hbm, 1);
    return OkStatus();
  };
  TPU_RETURN_IF_ERROR(ForRowBlocks(instruction, R, out_hbm, emit_block));
  return true;
}

// Lane broadcasts with VTRANS: `copies` copies of a source line (DMA stride 0) in the first lines of a
// zeroed block turn, transposed, into lines that hold lane j of the source in their first `copies`
// lanes and +0 in the rest.
//  - dimensions={0} of a rank-2 result: block b of rows takes line b of the source; one transpose for
//    the full column tiles, one for the partial last tile, each stored into its tiles (strided DMA);
//  - scalar: line 0 of the transposed block is the output row's tile; it is copied into a chunk of
//    lines with VOR (broadcast operand, zero lines) and stored into every row, tile by tile.
StatusOr<bool> CodeGenerator::EmitLaneBroadcastVtrans(const HloInstruction& instruction) {
  if (!HasOpcode("VTRANS") || !HasOpcode("VOR")) return false;
  const HloInstruction& source = *instruction.operand(0);
  const bool scalar = source.shape().rank() == 0;
  const uint32_t lanes = L();
  const DeviceLayout out = MakeDeviceLayout(instruction.shape(), lanes);
  const uint32_t R = static_cast<uint32_t>(out.rows), C = static_cast<uint32_t>(out.cols);
  if (R == 0 || C == 0) return true;
  const uint32_t tiles = static_cast<uint32_t>(out.column_tiles(lanes));
  const uint32_t full_tiles = C / lanes, rest = C % lanes;
  // VMEM: block [0, LANES), transposed [LANES, 2*LANES), then (scalar) rows of copies.
  const uint32_t block = 0, transposed = lanes, copies_base = 2 * lanes;
  if (options_.vmem_lines <= copies_base) return false;
  const uint32_t chunk = scalar ? std::min(R, options_.vmem_lines - copies_base) : 0;
  TPU_ASSIGN_OR_RETURN(ScopedReg block_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg transposed_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg one, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg source_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  asm_.Li(block_reg, block);
  asm_.Li(transposed_reg, transposed);
  asm_.Li(one, 1);
  LoadAddress(source_hbm, &source, 0);
  LoadAddress(out_hbm, &instruction, 0);
  // The transposed block for tiles of `columns` logical columns.
  auto transpose_copies = [&](uint32_t columns) {
    asm_.Sync(kSyncDma);  // earlier stores read the transposed lines; the block is rewritten below
    if (columns < lanes) {
      asm_.Li(count, lanes);
      asm_.Vsplat(block_reg, count, 0);
      asm_.Sync(kSyncVpu);
    }
    asm_.Li(count, columns);
    asm_.DmaLoad(source_hbm, block_reg, count, 0);
    asm_.Sync(kSyncDma);
    asm_.Emit(isa::Opcode::VTRANS, {transposed_reg, block_reg, {}, one, 0, 0});
    asm_.Sync(kSyncVpu);
  };
  if (!scalar) {
    TPU_ASSIGN_OR_RETURN(ScopedReg rows_reg, NewReg());
    for (uint32_t b = 0; b * lanes < R; ++b) {
      asm_.Li(rows_reg, std::min(lanes, R - b * lanes));
      if (full_tiles > 0) {
        transpose_copies(lanes);
        TPU_RETURN_IF_ERROR(StoreColumnTiles(transposed_reg, rows_reg, out_hbm, 0, full_tiles, tiles));
      }
      if (rest > 0) {
        transpose_copies(rest);
        TPU_RETURN_IF_ERROR(StoreColumnTiles(transposed_reg, rows_reg, out_hbm, full_tiles, 1, tiles));
      }
      asm_.Addi(out_hbm, out_hbm, lanes * tiles);
      asm_.Addi(source_hbm, source_hbm, 1);
    }
    asm_.Sync(kSyncDma);
    return true;
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg copies_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg chunk_reg, NewReg());
  asm_.Li(copies_reg, copies_base);
  auto emit_kind = [&](uint32_t columns, uint32_t first_tile, uint32_t tile_count) -> Status {
    transpose_copies(columns);
    asm_.Li(chunk_reg, chunk);
    asm_.Vsplat(copies_reg, chunk_reg, 0);
    asm_.Emit(isa::Opcode::VOR, {copies_reg, copies_reg, transposed_reg, chunk_reg, isa::flag::VOR_SRC2_BCAST, 0});
    asm_.Sync(kSyncVpu);
    TPU_ASSIGN_OR_RETURN(ScopedReg row_hbm, NewReg());
    asm_.Addi(row_hbm, out_hbm, 0);
    for (uint32_t r0 = 0; r0 < R; r0 += chunk) {
      const uint32_t rows = std::min(chunk, R - r0);
      if (rows != chunk) asm_.Li(chunk_reg, rows);
      TPU_RETURN_IF_ERROR(StoreColumnTiles(copies_reg, chunk_reg, row_hbm, first_tile, tile_count, tiles));
      asm_.Addi(row_hbm, row_hbm, chunk * tiles);
    }
    return OkStatus();
  };
  if (full_tiles > 0) TPU_RETURN_IF_ERROR(emit_kind(lanes, 0, full_tiles));
  if (rest > 0) TPU_RETURN_IF_ERROR(emit_kind(rest, full_tiles, 1));
  asm_.Sync(kSyncDma);
  return true;
}

// Rank-2 transpose on the MXU that keeps every f32 bit. The MXU moves values exactly only when they are
// bf16, so each block of LANES operand rows is first split into three bf16 pieces, x = hi + mid + lo:
// streaming x through the weights -I gives -hi = -bf16(x) (exact products), VADD gives x - hi exactly,
// and the same once more gives -mid and lo, which has at most 8 significant bits. Each piece is then
// transposed (weights loaded with TRANSPOSE, identity rows streamed, -I for the negated pieces) and the
// three results are accumulated in that order: hi + mid is exact and adding lo gives x. Exceptions:
// values whose bf16 rounding overflows (|x| > 3.39e38) or whose pieces fall below the normal range
// (flushed to zero, docs/numerics.md); infinities and NaN become NaN.
// VMEM: identity, -identity, result (LANES lines each), then the block and two pieces, LANES lines per
// operand column tile each, the block stored tile-major (line t*LANES + n holds tile t of row n).
StatusOr<bool> CodeGenerator::EmitExactTranspose(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  const uint32_t lanes = L();
  const DeviceLayout in = MakeDeviceLayout(operand.shape(), lanes);
  const uint32_t R = static_cast<uint32_t>(in.rows), C = static_cast<uint32_t>(in.cols);
  const uint32_t in_tiles = static_cast<uint32_t>(in.column_tiles(lanes));
  const uint32_t out_tiles = (R + lanes - 1) / lanes;
  const uint32_t block_lines = lanes * in_tiles;
  const uint32_t identity = 0, negated = lanes, result = 2 * lanes;
  const uint32_t block = 3 * lanes, hi = block + block_lines, mid = hi + block_lines;
  if (uint64_t{mid} + block_lines > options_.vmem_lines) return false;
  const int32_t identity_region = IdentityRegion(1.0f);
  const int32_t negated_region = IdentityRegion(-1.0f);

  TPU_ASSIGN_OR_RETURN(ScopedReg identity_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg negated_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg result_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg block_lines_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg cols_valid, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());   // first line of the current block
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());  // output line of (row 0, column tile of the block)
  asm_.Li(identity_reg, identity);
  asm_.Li(negated_reg, negated);
  asm_.Li(result_reg, result);
  asm_.Li(block_lines_reg, block_lines);
  {
    TPU_ASSIGN_OR_RETURN(ScopedReg address, NewReg());
    asm_.Li(cols_valid, lanes);
    asm_.LoadAddress(address, RegionKind::kConstant, static_cast<uint32_t>(identity_region), 0);
    asm_.DmaLoad(address, identity_reg, cols_valid, 1);
    asm_.LoadAddress(address, RegionKind::kConstant, static_cast<uint32_t>(negated_region), 0);
    asm_.DmaLoad(address, negated_reg, cols_valid, 1);
  }
  LoadAddress(in_hbm, &operand, 0);
  LoadAddress(out_hbm, &instruction, 0);

  auto emit_block = [&](uint32_t rows) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg a, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg b, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg c, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
    if (rows < lanes) {
      // Rows past the operand's last row become padded output lanes: +0.
      asm_.Li(a, block);
      asm_.Vsplat(a, block_lines_reg, 0);
      asm_.Sync(kSyncVpu);
    }
    // Gather: tile t of the block's rows into lines block + t*LANES.
    TPU_ASSIGN_OR_RETURN(ScopedReg rows_reg, NewReg());
    asm_.Li(rows_reg, rows);
    asm_.Addi(a, in_hbm, 0);
    asm_.Li(b, block);
    asm_.Li(end, block + block_lines);
    Assembler::Label gather = asm_.NewLabel();
    asm_.Bind(gather);
    asm_.DmaLoad(a, b, rows_reg, in_tiles);
    asm_.Addi(a, a, 1);
    asm_.Addi(b, b, lanes);
    asm_.Bne(b, end, gather);
    asm_.Sync(kSyncDma);
    // Split: hi <- -bf16(x); x <- x + hi; mid <- -bf16(x); x <- x + mid (now the low piece).
    asm_.Li(a, block);
    asm_.Li(b, hi);
    asm_.Li(c, mid);
    asm_.MxuLoadWeights(negated_reg, /*transpose=*/false);
    asm_.MxuMatmul(a, b, block_lines_reg, /*accumulate=*/false, /*swap=*/true);
    asm_.Sync(kSyncMxu);
    asm_.Vadd(a, a, b, block_lines_reg);
    asm_.Sync(kSyncVpu);
    asm_.MxuMatmul(a, c, block_lines_reg, /*accumulate=*/false, /*swap=*/false);
    asm_.Sync(kSyncMxu);
    asm_.Vadd(a, a, c, block_lines_reg);
    asm_.Sync(kSyncVpu);
    // Transpose tile by tile, the three pieces accumulated in the result.
    TPU_ASSIGN_OR_RETURN(ScopedReg out_tile, NewReg());
    asm_.Addi(out_tile, out_hbm, 0);
    auto emit_tile = [&]() {
      asm_.MxuLoadWeights(b, /*transpose=*/true);
      asm_.MxuMatmul(negated_reg, result_reg, cols_valid, /*accumulate=*/false, /*swap=*/true);
      asm_.MxuLoadWeights(c, /*transpose=*/true);
      asm_.MxuMatmul(negated_reg, result_reg, cols_valid, /*accumulate=*/true, /*swap=*/true);
      asm_.MxuLoadWeights(a, /*transpose=*/true);
      asm_.MxuMatmul(identity_reg, result_reg, cols_valid, /*accumulate=*/true, /*swap=*/true);
      asm_.Sync(kSyncMxu);
      asm_.DmaStore(out_tile, result_reg, cols_valid, out_tiles);
      asm_.Sync(kSyncDma);  // the next tile's matmul overwrites the result lines
      asm_.Addi(a, a, lanes);
      asm_.Addi(b, b, lanes);
      asm_.Addi(c, c, lanes);
      asm_.Addi(out_tile, out_tile, lanes * out_tiles);
    };
    const uint32_t full_tiles = C / lanes, rest = C % lanes;
    asm_.Li(cols_valid, lanes);
    if (full_tiles == 1) {
      emit_tile();
    } else if (full_tiles >= 2) {
      asm_.Li(end, block + full_tiles * lanes);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      emit_tile();
      asm_.Bne(a, end, loop);
    }
    if (rest != 0) {
      asm_.Li(cols_valid, rest);
      emit_tile();
    }
    asm_.Addi(in_hbm, in_hbm, lanes * in_tiles);
    asm_.Addi(out_hbm, out_hbm, 1);
    return OkStatus();
  };
  TPU_RETURN_IF_ERROR(ForRowBlocks(instruction, R, out_hbm, emit_block));
  return true;
}

// Rank-2 transpose on the MXU: a LANES x LANES block of the operand is loaded as weights with
// TRANSPOSE, and streaming the identity through them yields the block transposed, one output row per
// identity row. The MXU rounds its inputs to bf16, so the values are bf16-rounded (relative error up to
// 2^-9, inside the tolerance of docs/numerics.md; a transpose that feeds a dot loses nothing more, as
// the dot rounds its inputs to bf16 anyway).
Status CodeGenerator::EmitTranspose(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  if (instruction.shape().rank() != 2 || instruction.dimensions() != std::vector<int64_t>{1, 0}) {
    return EmitCopy(&operand, locations_.at(&instruction));  // identity permutation
  }
  const uint32_t lanes = L();
  const DeviceLayout in = MakeDeviceLayout(operand.shape(), lanes);
  const uint32_t R = static_cast<uint32_t>(in.rows), C = static_cast<uint32_t>(in.cols);
  if (R == 0 || C == 0) return OkStatus();
  const uint32_t in_tiles = static_cast<uint32_t>(in.column_tiles(lanes));  // column tiles of the operand
  const uint32_t out_tiles = (R + lanes - 1) / lanes;                        // column tiles of the result
  {
    TPU_ASSIGN_OR_RETURN(bool done, EmitTransposeVtrans(instruction));
    if (done) return OkStatus();
  }
  if (instruction.shape().element_type != hlo::PrimitiveType::F32) {
    return Unimplemented("transpose " + instruction.name() + " of " + operand.shape().ToString() +
                         " does not fit the VMEM for VTRANS");
  }
  // A transpose that only feeds dots may round to bf16: the dot rounds its inputs to bf16 anyway.
  bool only_dots = !instruction.users().empty();
  for (const HloInstruction* user : instruction.users()) only_dots = only_dots && user->opcode() == HloOpcode::kDot;
  if (!only_dots) {
    TPU_ASSIGN_OR_RETURN(bool done, EmitExactTranspose(instruction));
    if (done) return OkStatus();
  }
  const uint32_t identity = 0, weights = lanes, result = 2 * lanes;
  if (options_.vmem_lines < 3 * lanes) return VmemOverflow(instruction, 3 * lanes);

  const int32_t identity_region = IdentityRegion();

  TPU_ASSIGN_OR_RETURN(ScopedReg identity_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg weights_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg result_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg rows_valid, NewReg());  // operand rows in this block
  TPU_ASSIGN_OR_RETURN(ScopedReg cols_valid, NewReg());  // operand columns in this tile
  {
    TPU_ASSIGN_OR_RETURN(ScopedReg identity_hbm, NewReg());
    asm_.LoadAddress(identity_hbm, RegionKind::kConstant, static_cast<uint32_t>(identity_region), 0);
    asm_.Li(identity_reg, identity);
    asm_.Li(cols_valid, lanes);
    asm_.DmaLoad(identity_hbm, identity_reg, cols_valid, 1);  // waited for by the first tile's SYNC
  }
  asm_.Li(weights_reg, weights);
  asm_.Li(result_reg, result);

  // One block of rows: every column tile, the last one partial.
  auto emit_block = [&](uint32_t block, uint32_t rows) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
    LoadAddress(in_hbm, &operand, block * lanes * in_tiles);
    LoadAddress(out_hbm, &instruction, block);
    asm_.Li(rows_valid, rows);
    if (rows < lanes) {
      // Weight rows past the operand's last row become padded output lanes: they must be +0.
      TPU_ASSIGN_OR_RETURN(ScopedReg zero_count, NewReg());
      asm_.Li(zero_count, lanes);
      asm_.Vsplat(weights_reg, zero_count, 0);
      asm_.Sync(kSyncVpu);
    }
    auto emit_tile = [&]() {
      asm_.DmaLoad(in_hbm, weights_reg, rows_valid, in_tiles);
      asm_.Sync(kSyncDma);
      asm_.MxuLoadWeights(weights_reg, /*transpose=*/true);
      asm_.MxuMatmul(identity_reg, result_reg, cols_valid, /*accumulate=*/false, /*swap=*/true);
      asm_.Sync(kSyncMxu);
      asm_.DmaStore(out_hbm, result_reg, cols_valid, out_tiles);
      asm_.Addi(in_hbm, in_hbm, 1);
      asm_.Addi(out_hbm, out_hbm, lanes * out_tiles);
    };
    const uint32_t full_tiles = C / lanes, rest = C % lanes;
    asm_.Li(cols_valid, lanes);
    if (full_tiles == 1) {
      emit_tile();
    } else if (full_tiles >= 2) {
      TPU_ASSIGN_OR_RETURN(ScopedReg in_end, NewReg());
      LoadAddress(in_end, &operand, block * lanes * in_tiles + full_tiles);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      emit_tile();
      asm_.Bne(in_hbm, in_end, loop);
    }
    if (rest != 0) {
      asm_.Li(cols_valid, rest);
      emit_tile();
    }
    return OkStatus();
  };
  const uint32_t full_blocks = R / lanes, rest_rows = R % lanes;
  // Blocks of full rows share one code body in a loop when there are several.
  if (full_blocks == 1) {
    TPU_RETURN_IF_ERROR(emit_block(0, lanes));
  } else if (full_blocks >= 2) {
    // The block loop advances the two base addresses held in registers of emit_block; emit it once with
    // a register-relative form instead: in = base + b*lanes*in_tiles, out = base + b.
    TPU_ASSIGN_OR_RETURN(ScopedReg block_in, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg block_out, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg block_end, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg in_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg in_end, NewReg());
    LoadAddress(block_in, &operand, 0);
    LoadAddress(block_out, &instruction, 0);
    LoadAddress(block_end, &instruction, full_blocks);
    asm_.Li(rows_valid, lanes);
    const uint32_t full_tiles = C / lanes, rest = C % lanes;
    auto emit_tile = [&]() {
      asm_.DmaLoad(in_hbm, weights_reg, rows_valid, in_tiles);
      asm_.Sync(kSyncDma);
      asm_.MxuLoadWeights(weights_reg, /*transpose=*/true);
      asm_.MxuMatmul(identity_reg, result_reg, cols_valid, /*accumulate=*/false, /*swap=*/true);
      asm_.Sync(kSyncMxu);
      asm_.DmaStore(out_hbm, result_reg, cols_valid, out_tiles);
      asm_.Addi(in_hbm, in_hbm, 1);
      asm_.Addi(out_hbm, out_hbm, lanes * out_tiles);
    };
    Assembler::Label block_loop = asm_.NewLabel();
    asm_.Bind(block_loop);
    asm_.Addi(in_hbm, block_in, 0);
    asm_.Addi(out_hbm, block_out, 0);
    asm_.Li(cols_valid, lanes);
    if (full_tiles == 1) {
      emit_tile();
    } else if (full_tiles >= 2) {
      asm_.Addi(in_end, block_in, full_tiles);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      emit_tile();
      asm_.Bne(in_hbm, in_end, loop);
    }
    if (rest != 0) {
      asm_.Li(cols_valid, rest);
      emit_tile();
    }
    asm_.Addi(block_in, block_in, lanes * in_tiles);
    asm_.Addi(block_out, block_out, 1);
    asm_.Bne(block_out, block_end, block_loop);
  }
  if (rest_rows != 0) TPU_RETURN_IF_ERROR(emit_block(full_blocks, rest_rows));
  return OkStatus();
}

Status CodeGenerator::EmitDot(const HloInstruction& instruction) {
  const hlo::DotDimensionNumbers& dnums = instruction.dot_dimension_numbers();
  const HloInstruction* lhs = instruction.operand(0);
  const HloInstruction* rhs = instruction.operand(1);
  if (lhs->shape().rank() != 2 || rhs->shape().rank() != 2 || !dnums.lhs_batch_dimensions.empty() ||
      !dnums.rhs_batch_dimensions.empty() || dnums.lhs_contracting_dimensions.size() != 1 ||
      dnums.rhs_contracting_dimensions.size() != 1) {
    return Unimplemented("dot " + instruction.name() + ": only rank-2 dots without batch dimensions are supported");
  }
  if (dnums.lhs_contracting_dimensions[0] != 1) {
    return Unimplemented("dot " + instruction.name() + ": the lhs must contract its dimension 1");
  }
  const bool transposed = dnums.rhs_contracting_dimensions[0] == 1;
  const int64_t M = lhs->shape().dimensions[0];
  const int64_t K = lhs->shape().dimensions[1];
  const int64_t N = transposed ? rhs->shape().dimensions[0] : rhs->shape().dimensions[1];
  const uint32_t lanes = L();
  const uint32_t k_tiles = static_cast<uint32_t>((K + lanes - 1) / lanes);
  const uint32_t n_tiles = static_cast<uint32_t>((N + lanes - 1) / lanes);
  const uint32_t k_rest = static_cast<uint32_t>(K % lanes);
  const uint32_t n_rest = static_cast<uint32_t>(N % lanes);

  DotPaddingReport report;
  report.name = instruction.name();
  report.m = M;
  report.k = K;
  report.n = N;
  report.logical_macs = static_cast<uint64_t>(M * K * N);
  report.padded_macs = static_cast<uint64_t>(M) * k_tiles * lanes * n_tiles * lanes;
  dots_.push_back(report);
  program_.mxu_macs += report.padded_macs;
  program_.logical_macs += report.logical_macs;
  if (M == 0 || N == 0) return OkStatus();
  if (K == 0) {
    return Unimplemented("dot " + instruction.name() + " with an empty contracting dimension");
  }

  // VMEM: two weight buffers, a buffer for the partial last K tile whose missing rows stay zero, the
  // accumulator (one line per row) and the lhs (one slice of rows per K tile, slice t at t*rows).
  const uint32_t weight0 = 0, weight1 = lanes, weight_last = 2 * lanes, acc = 3 * lanes;
  if (options_.vmem_lines <= acc + k_tiles) return VmemOverflow(instruction, acc + k_tiles + 1);
  const uint32_t max_rows = (options_.vmem_lines - acc) / (k_tiles + 1);
  const uint32_t rows_per_chunk = static_cast<uint32_t>(std::min<int64_t>(M, max_rows));
  const uint32_t lhs_tiles = k_tiles;                  // lines per lhs row
  const uint32_t out_tiles = n_tiles;                  // lines per output row
  const uint32_t rhs_row_lines = transposed ? k_tiles : n_tiles;
  const bool partial_k = !transposed && k_rest != 0;   // last K tile has fewer than LANES weight rows
  const bool partial_n = transposed && n_rest != 0;    // last N tile has fewer than LANES weight rows

  TPU_ASSIGN_OR_RETURN(ScopedReg weight_sum, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg weight_buf, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg lane_count, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg acc_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg rows_reg, NewReg());
  asm_.Li(weight_sum, weight0 + weight1);
  asm_.Li(weight_buf, weight0);
  asm_.Li(lane_count, lanes);
  asm_.Li(acc_reg, acc);

  ScopedReg weight_last_reg, rest_count;
  if (partial_k) {
    TPU_ASSIGN_OR_RETURN(weight_last_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(rest_count, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg zero_from, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg zero_count, NewReg());
    asm_.Li(weight_last_reg, weight_last);
    asm_.Li(rest_count, k_rest);
    // Rows K..end of the last weight tile multiply the lhs padding; they must be zero, not stale data.
    asm_.Li(zero_from, weight_last + k_rest);
    asm_.Li(zero_count, lanes - k_rest);
    asm_.Vsplat(zero_from, zero_count, 0);
    asm_.Sync(kSyncVpu);
  } else if (partial_n) {
    TPU_ASSIGN_OR_RETURN(rest_count, NewReg());
    asm_.Li(rest_count, n_rest);
  }

  const uint32_t kt_step = transposed ? 1 : lanes * rhs_row_lines;  // HBM lines from tile k to k+1
  const uint32_t nt_step = transposed ? lanes * rhs_row_lines : 1;  // HBM lines from tile n to n+1

  for (uint32_t m0 = 0; m0 < M; m0 += rows_per_chunk) {
    const uint32_t rows = static_cast<uint32_t>(std::min<int64_t>(rows_per_chunk, M - m0));
    const uint32_t lhs_base = acc + rows;
    asm_.Li(rows_reg, rows);
    {
      // The lhs rows of this chunk, K tile t gathered into lines lhs_base + t*rows (stride: a row's lines).
      TPU_ASSIGN_OR_RETURN(ScopedReg src, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg dst, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg dst_end, NewReg());
      LoadAddress(src, lhs, m0 * lhs_tiles);
      asm_.Li(dst, lhs_base);
      asm_.Li(dst_end, lhs_base + k_tiles * rows);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      asm_.DmaLoad(src, dst, rows_reg, lhs_tiles);
      asm_.Addi(src, src, 1);
      asm_.Addi(dst, dst, rows);
      asm_.Bne(dst, dst_end, loop);
    }
    TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg rhs_tile_n, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg rhs_tile, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg lhs_slice, NewReg());
    LoadAddress(out_hbm, &instruction, m0 * out_tiles);
    LoadAddress(rhs_tile_n, rhs, 0);

    // One weight tile: load it, wait for the DMA (which also covers the lhs loads and the previous
    // store of the accumulator), push it into the MXU's back buffer, stream the lhs slice through it.
    auto emit_tile = [&](bool first, bool last_k_partial, Reg weight_rows) {
      Reg buffer = last_k_partial ? weight_last_reg.get() : weight_buf.get();
      asm_.DmaLoad(rhs_tile, buffer, weight_rows, rhs_row_lines);
      asm_.Sync(kSyncDma);
      asm_.MxuLoadWeights(buffer, transposed);
      asm_.MxuMatmul(lhs_slice, acc_reg, rows_reg, /*accumulate=*/!first, /*swap=*/true);
      asm_.Addi(rhs_tile, rhs_tile, kt_step);
      asm_.Addi(lhs_slice, lhs_slice, rows);
      // Alternate weight buffers so the next tile's DMA never overwrites lines the MXU may still read.
      if (!last_k_partial) asm_.Sub(weight_buf, weight_sum, weight_buf);
    };
    // All K tiles for one N tile, then the accumulator goes to HBM.
    auto emit_n_tile = [&](Reg weight_rows) -> Status {
      asm_.Addi(rhs_tile, rhs_tile_n, 0);
      asm_.Li(lhs_slice, lhs_base);
      const uint32_t full_k_tiles = partial_k ? k_tiles - 1 : k_tiles;
      if (full_k_tiles == 0) {
        emit_tile(/*first=*/true, /*last_k_partial=*/true, rest_count);
      } else {
        emit_tile(/*first=*/true, false, weight_rows);
        if (full_k_tiles >= 2) {
          TPU_ASSIGN_OR_RETURN(ScopedReg lhs_end, NewReg());
          asm_.Li(lhs_end, lhs_base + full_k_tiles * rows);
          Assembler::Label loop = asm_.NewLabel();
          asm_.Bind(loop);
          emit_tile(false, false, weight_rows);
          asm_.Bne(lhs_slice, lhs_end, loop);
        }
        if (partial_k) emit_tile(false, true, rest_count);
      }
      asm_.Sync(kSyncMxu);
      asm_.DmaStore(out_hbm, acc_reg, rows_reg, out_tiles);
      asm_.Addi(out_hbm, out_hbm, 1);
      asm_.Addi(rhs_tile_n, rhs_tile_n, nt_step);
      return OkStatus();
    };

    const uint32_t full_n_tiles = partial_n ? n_tiles - 1 : n_tiles;
    if (full_n_tiles == 1) {
      TPU_RETURN_IF_ERROR(emit_n_tile(lane_count));
    } else if (full_n_tiles >= 2) {
      TPU_ASSIGN_OR_RETURN(ScopedReg out_end, NewReg());
      LoadAddress(out_end, &instruction, m0 * out_tiles + full_n_tiles);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      TPU_RETURN_IF_ERROR(emit_n_tile(lane_count));
      asm_.Bne(out_hbm, out_end, loop);
    }
    if (partial_n) {
      // Transposed weights of the last N tile: lines N..end of both weight buffers become output
      // columns beyond N and must be zero. The MXU is idle (SYNC above) and every DMA into them is done.
      TPU_ASSIGN_OR_RETURN(ScopedReg zero_count, NewReg());
      asm_.Li(zero_count, 2 * lanes);
      asm_.Vsplat(kZeroReg, zero_count, 0);  // weight buffers 0 and 1 are lines [0, 2*LANES)
      asm_.Sync(kSyncVpu);
      TPU_RETURN_IF_ERROR(emit_n_tile(rest_count));
    }
  }
  return OkStatus();
}

Status CodeGenerator::EmitInstruction(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kDot:
      return EmitDot(instruction);
    case HloOpcode::kBroadcast:
      return EmitBroadcast(instruction);
    case HloOpcode::kReduce:
      return EmitReduce(instruction);
    case HloOpcode::kCompare:
      return EmitCompare(instruction);
    case HloOpcode::kSelect:
      return EmitSelect(instruction);
    case HloOpcode::kConvert:
      return EmitConvert(instruction);
    case HloOpcode::kTranspose:
      return EmitTranspose(instruction);
    case HloOpcode::kFusion: {
      // ReLU fusion: maximum with a zero immediate.
      const HloInstruction* root = instruction.called_computations()[0]->root_instruction();
      const HloInstruction* zero = root->operand(0)->opcode() == HloOpcode::kBroadcast ? root->operand(0)
                                                                                      : root->operand(1);
      Src2 b;
      b.kind = Src2::kImmediate;
      b.imm = FloatBits(zero->operand(0)->literal().Get<float>(0));
      return EmitElementwise(instruction, HloOpcode::kMaximum, instruction.operand(0), b);
    }
    case HloOpcode::kReducePrecision:
      return EmitRoundToBf16(instruction);
    case HloOpcode::kExp:
      return EmitMath(instruction, MathKind::kExp);
    case HloOpcode::kLog:
      return EmitMath(instruction, MathKind::kLog);
    case HloOpcode::kRsqrt:
      return EmitMath(instruction, MathKind::kRsqrt);
    case HloOpcode::kSqrt:
      return EmitMath(instruction, MathKind::kSqrt);
    case HloOpcode::kDivide: {
      if (!ScalarConstantValue(*instruction.operand(1))) return EmitMath(instruction, MathKind::kDivide);
      const uint32_t bits = FloatBits(1.0f / *ScalarConstantValue(*instruction.operand(1)));
      const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
      Src2 b;
      if (layout.cols % L() == 0 || ImmediateKeepsPaddingZero(HloOpcode::kMultiply, bits)) {
        b.kind = Src2::kImmediate;
        b.imm = bits;
      } else {
        b.kind = Src2::kRow;
        TPU_ASSIGN_OR_RETURN(b.constant_row, ConstantRow(bits, layout.cols));
      }
      return EmitElementwise(instruction, HloOpcode::kMultiply, instruction.operand(0), b);
    }
    case HloOpcode::kNegate: {
      Src2 b;
      b.kind = Src2::kImmediate;
      b.imm = IsIntegerValue(instruction.shape()) ? 0xffffffffu : FloatBits(-1.0f);
      return EmitElementwise(instruction, HloOpcode::kMultiply, instruction.operand(0), b);
    }
    case HloOpcode::kSubtract:
    case HloOpcode::kMultiply:
    case HloOpcode::kMinimum:
    case HloOpcode::kAdd:
    case HloOpcode::kMaximum: {
      const HloInstruction* a = instruction.operand(0);
      const HloInstruction* bcast = instruction.operand(1);
      if (IsCommutative(instruction.opcode()) && !FoldableBroadcast(instruction, *bcast) &&
          FoldableBroadcast(instruction, *a)) {
        std::swap(a, bcast);
      }
      Src2 b;
      if (!FoldableBroadcast(instruction, *bcast)) {
        b.kind = Src2::kTensor;
        b.value = bcast;
        return EmitElementwise(instruction, instruction.opcode(), a, b);
      }
      const HloInstruction& source = *bcast->operand(0);
      const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
      if (IsScalarF32Constant(source)) {
        const uint32_t bits = FloatBits(source.literal().Get<float>(0));
        if (layout.cols % L() == 0 || ImmediateKeepsPaddingZero(instruction.opcode(), bits)) {
          b.kind = Src2::kImmediate;
          b.imm = bits;
        } else {
          b.kind = Src2::kRow;
          TPU_ASSIGN_OR_RETURN(b.constant_row, ConstantRow(bits, layout.cols));
        }
      } else {
        b.kind = Src2::kRow;
        b.value = &source;
      }
      return EmitElementwise(instruction, instruction.opcode(), a, b);
    }
    default:
      return Internal("no emitter for " + instruction.name());
  }
}

StatusOr<Program> CodeGenerator::Run(CompileStats* stats) {
  const hlo::HloComputation* entry = module_.entry_computation();
  if (entry == nullptr || entry->root_instruction() == nullptr) {
    return InvalidArgument("module " + module_.name() + " has no entry computation");
  }
  if (L() == 0 || options_.vmem_lines == 0) return InvalidArgument("CompileOptions: lanes and vmem_lines must be > 0");
  program_.module_name = module_.name();
  program_.lanes = L();

  const std::vector<HloInstruction*> order = entry->MakeInstructionPostOrder();
  for (const HloInstruction* instruction : order) TPU_RETURN_IF_ERROR(CheckSupported(*instruction));

  // Parameters.
  for (int64_t i = 0; i < entry->num_parameters(); ++i) {
    const HloInstruction* parameter = entry->parameter_instruction(i);
    if (parameter == nullptr) return InvalidArgument("entry parameter " + std::to_string(i) + " is missing");
    program_.parameters.push_back(MakeDeviceLayout(parameter->shape(), L()));
    locations_[parameter] = Location{RegionKind::kParameter, static_cast<uint32_t>(i), 0};
  }

  // Which buffer-defining values must exist in HBM: read from memory by some user, or an output.
  std::vector<const HloInstruction*> outputs;
  FlattenOutputs(entry->root_instruction(), &outputs);
  std::set<const HloInstruction*> needed;
  for (const HloInstruction* instruction : order) {
    for (const HloInstruction* operand : instruction->operands()) {
      if (ReadsFromMemory(*instruction, *operand)) needed.insert(BufferOf(operand));
    }
  }
  for (const HloInstruction* output : outputs) needed.insert(BufferOf(output));

  // Outputs: a value computed here is written straight into its output region the first time it
  // appears; parameters, constants and repeated values are copied there at the end.
  std::vector<std::pair<const HloInstruction*, Location>> output_copies;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HloInstruction* buffer = BufferOf(outputs[i]);
    program_.outputs.push_back(MakeDeviceLayout(outputs[i]->shape(), L()));
    Location location{RegionKind::kOutput, static_cast<uint32_t>(i), 0};
    const bool computed = buffer->opcode() != HloOpcode::kParameter && buffer->opcode() != HloOpcode::kConstant;
    if (computed && locations_.count(buffer) == 0) {
      locations_[buffer] = location;
    } else {
      output_copies.push_back({outputs[i], location});
    }
  }

  // Constants that are read from memory get a region.
  for (const HloInstruction* instruction : order) {
    if (instruction->opcode() == HloOpcode::kConstant && needed.count(instruction) > 0) {
      locations_[instruction] = Location{RegionKind::kConstant, static_cast<uint32_t>(ConstantRegion(*instruction)), 0};
    }
  }

  // Temporaries: liveness-based offsets in the temp region.
  std::vector<BufferRequest> requests;
  std::map<const HloInstruction*, int64_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int64_t>(i);
  std::map<const HloInstruction*, int64_t> last_use;
  for (const HloInstruction* instruction : order) {
    for (const HloInstruction* operand : instruction->operands()) {
      const HloInstruction* buffer = BufferOf(operand);
      last_use[buffer] = std::max(last_use[buffer], position[instruction]);
      // A folded broadcast is read through its source when the user runs.
      if (operand->opcode() == HloOpcode::kBroadcast) {
        const HloInstruction* source = BufferOf(operand->operand(0));
        last_use[source] = std::max(last_use[source], position[instruction]);
      }
    }
  }
  for (const HloInstruction* instruction : order) {
    if (needed.count(instruction) == 0 || locations_.count(instruction) > 0) continue;
    if (BufferOf(instruction) != instruction) continue;
    BufferRequest request;
    request.id = position[instruction];
    request.lines = MakeDeviceLayout(instruction->shape(), L()).lines;
    request.defined_at = position[instruction];
    request.last_use = std::max(last_use[instruction], request.defined_at);
    requests.push_back(request);
  }
  BufferAssignment assignment = AssignBuffers(requests);
  for (const BufferRequest& request : requests) {
    locations_[order[request.id]] = Location{RegionKind::kTemp, 0, assignment.offsets.at(request.id)};
  }
  program_.temp_lines = assignment.peak_lines;

  // Code: one instruction after the other, separated by a full SYNC so that no unit of the previous
  // instruction still touches VMEM the next one reuses.
  bool first = true;
  for (const HloInstruction* instruction : order) {
    if (needed.count(instruction) == 0) continue;
    switch (instruction->opcode()) {
      case HloOpcode::kParameter:
      case HloOpcode::kConstant:
      case HloOpcode::kTuple:
      case HloOpcode::kGetTupleElement:
      case HloOpcode::kCopy:
      case HloOpcode::kReshape:
      case HloOpcode::kBitcast:
      case HloOpcode::kCustomCall:
        continue;  // no code: the value is an existing buffer
      default:
        break;
    }
    if (!first) asm_.Sync(kSyncAll);
    first = false;
    TPU_RETURN_IF_ERROR(EmitInstruction(*instruction));
  }
  for (const auto& [value, location] : output_copies) {
    if (!first) asm_.Sync(kSyncAll);
    first = false;
    TPU_RETURN_IF_ERROR(EmitCopy(value, location));
  }
  asm_.Halt();  // waits for every unit
  TPU_RETURN_IF_ERROR(asm_.Finish(&program_.code, &program_.relocations));

  if (options_.imem_words != 0 && program_.code.size() > options_.imem_words) {
    return ResourceExhausted("Ran out of memory in memory space imem; used: " + std::to_string(program_.code.size()) +
                             " words; limit: " + std::to_string(options_.imem_words) + " words");
  }
  TPU_RETURN_IF_ERROR(ValidateProgram(program_));
  if (stats != nullptr) {
    stats->instructions = static_cast<uint32_t>(program_.code.size());
    stats->peak_temp_lines = program_.temp_lines;
    stats->dots = dots_;
  }
  return std::move(program_);
}

}  // namespace

StatusOr<Program> Compile(const hlo::HloModule& module, const CompileOptions& options, CompileStats* stats) {
  if (module.entry_computation() == nullptr || module.entry_computation()->root_instruction() == nullptr) {
    return InvalidArgument("module " + module.name() + " has no entry computation");
  }
  auto compile = [&](int dot_passes) -> StatusOr<Program> {
    PrepareOptions prepare_options;
    prepare_options.dot_passes = dot_passes;
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> prepared, PrepareForCodegen(module, nullptr, prepare_options));
    CodeGenerator generator(*prepared, options);
    return generator.Run(stats);
  };
  if (options.dot_passes != 0) return compile(options.dot_passes);
  // Most precise first; fewer dot passes while the code does not fit the IMEM.
  for (int dot_passes : {3, 0}) {
    StatusOr<Program> program = compile(dot_passes);
    const bool imem_full = !program.ok() && program.status().code() == StatusCode::kResourceExhausted &&
                           program.status().message().find("imem") != std::string::npos;
    if (!imem_full) return program;
  }
  return compile(1);
}

}  // namespace tpu::compiler
