// Internals of the code generator shared by its source files: the CodeGenerator class, how a
// second VPU operand is encoded, and small helpers. Not part of the compiler's interface.
#pragma once

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
#include "compiler/codegen/loop_fusion.h"
#include "compiler/codegen/opcode_handler.h"
#include "compiler/codegen/prepare.h"
#include "compiler/hlo/collective_groups.h"
#include "compiler/hlo/hlo_opcode.h"
#include "compiler/passes/codegen_legalization.h"
#include "compiler/passes/relu_fusion.h"
#include "compiler/passes/split_dots.h"

namespace tpu::compiler::codegen_internal {

using hlo::HloInstruction;
using hlo::HloOpcode;

constexpr uint8_t kSyncDma = isa::flag::SYNC_DMA;
constexpr uint8_t kSyncMxu = isa::flag::SYNC_MXU;
constexpr uint8_t kSyncVpu = isa::flag::SYNC_VPU;
constexpr uint8_t kSyncIci = isa::flag::SYNC_ICI;
constexpr uint8_t kSyncAll = 0;

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

inline bool IsScalarF32Constant(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kConstant && instruction.has_literal() &&
         instruction.literal().shape().element_type == hlo::PrimitiveType::F32 && instruction.shape().rank() == 0;
}

// op(+0, c) == +0 bit for bit: the immediate form then keeps padded lanes zero.
inline bool ImmediateKeepsPaddingZero(HloOpcode op, uint32_t c) {
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

// The VPU instruction that computes an elementwise HLO binary op; nullopt for other ops. Every such
// instruction takes the operands of VADD (rd, rs1, rs2, rs3=count) and its SRC2_BCAST and SRC2_IMM flag
// bits (docs/isa.md).
inline std::optional<isa::Opcode> VpuOpcodeFor(HloOpcode op) {
  switch (op) {
    case HloOpcode::kAdd: return isa::Opcode::VADD;
    case HloOpcode::kMaximum: return isa::Opcode::VMAX;
    case HloOpcode::kSubtract: return isa::Opcode::VSUB;
    case HloOpcode::kMultiply: return isa::Opcode::VMUL;
    case HloOpcode::kMinimum: return isa::Opcode::VMIN;
    case HloOpcode::kAnd: return isa::Opcode::VAND;
    case HloOpcode::kOr: return isa::Opcode::VOR;
    case HloOpcode::kXor: return isa::Opcode::VXOR;
    case HloOpcode::kShiftLeft: return isa::Opcode::VSHL;
    case HloOpcode::kShiftRightLogical: return isa::Opcode::VSHRL;
    case HloOpcode::kShiftRightArithmetic: return isa::Opcode::VSHRA;
    default: return std::nullopt;
  }
}

inline std::optional<float> ScalarConstantValue(const HloInstruction& value);

// The raw bits of select's on-false operand when it can be VSEL's immediate: a scalar f32 constant or
// its broadcast, zero unless the result has no padded lanes.
inline std::optional<uint32_t> SelectImmediate(const HloInstruction& select, uint32_t lanes) {
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
inline uint8_t VcmpDirection(hlo::ComparisonDirection direction) {
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
inline bool CompareTrueOnPadding(hlo::ComparisonDirection direction, bool has_immediate, uint32_t immediate_bits) {
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

inline bool IsShift(HloOpcode op) {
  return op == HloOpcode::kShiftLeft || op == HloOpcode::kShiftRightLogical || op == HloOpcode::kShiftRightArithmetic;
}
inline bool IsCommutative(HloOpcode op) { return op != HloOpcode::kSubtract && !IsShift(op); }

// Bitwise ops and shifts work on the raw words: the same for pred (0/1), s32 and u32 lanes (no INT flag).
inline bool IsBitwise(HloOpcode op) {
  return op == HloOpcode::kAnd || op == HloOpcode::kOr || op == HloOpcode::kXor || IsShift(op);
}

// Values the VPU computes on as s32 lanes (INT flag): s32, and s64 through its low 32 bits.
inline bool IsIntegerValue(const hlo::Shape& shape) {
  return shape.element_type == hlo::PrimitiveType::S32 || shape.element_type == hlo::PrimitiveType::S64 ||
         shape.element_type == hlo::PrimitiveType::U32;
}

// The value of a scalar f32 constant, or of a broadcast of one.
inline std::optional<float> ScalarConstantValue(const HloInstruction& value) {
  if (IsScalarF32Constant(value)) return value.literal().Get<float>(0);
  if (value.opcode() == HloOpcode::kBroadcast && IsScalarF32Constant(*value.operand(0))) {
    return value.operand(0)->literal().Get<float>(0);
  }
  return std::nullopt;
}

// kAdd, kMaximum or kMinimum when `reduce` applies that op to the two parameters of its computation; kUnknown otherwise.
inline HloOpcode ReducerOpcode(const HloInstruction& reduce) { return ReductionOpcode(reduce); }

// The slice a concatenate of whole tiles reads from its source in place of `operand` (a slice on whole
// tiles, or a value that is its buffer), or nullptr: slice_pad.cc.
const HloInstruction* SliceReadThrough(const HloInstruction& concatenate, const HloInstruction& operand,
                                       uint32_t lanes);

// Lines between consecutive indices of each non-minor dimension of `shape` in the device layout (the
// last entry is the column tiles of a row); empty for rank 0 and 1.
inline std::vector<int64_t> RowSteps(const hlo::Shape& shape, uint32_t lanes) {
  const int rank = shape.rank();
  std::vector<int64_t> steps(rank > 1 ? rank - 1 : 0, 0);
  int64_t step = MakeDeviceLayout(shape, lanes).column_tiles(lanes);
  for (int d = rank - 2; d >= 0; --d) {
    steps[d] = step;
    step *= shape.dimensions[d];
  }
  return steps;
}

// Whether `operand` of elementwise `op` reaches the VPU as a row or an immediate instead of a tensor (a
// folded broadcast): a broadcast of a scalar f32 constant, of a row [N] along the minor dimension, or of a
// scalar the program reads or computes (splat into a row on the device, Src2::kSplat).
inline bool FoldableBroadcast(const HloInstruction& op, const HloInstruction& operand) {
  if (operand.opcode() != HloOpcode::kBroadcast) return false;
  const HloInstruction& source = *operand.operand(0);
  if (IsScalarF32Constant(source)) return true;
  const hlo::PrimitiveType type = source.shape().element_type;
  if (source.shape().rank() == 0 && op.shape().rank() >= 1 &&
      (type == hlo::PrimitiveType::F32 || type == hlo::PrimitiveType::S32 || type == hlo::PrimitiveType::U32)) {
    return true;
  }
  // A row [N] broadcast along the minor dimension of the output.
  const int rank = op.shape().rank();
  return source.shape().rank() == 1 && rank >= 1 && operand.dimensions().size() == 1 &&
         operand.dimensions(0) == rank - 1 && source.shape().dimensions[0] == op.shape().dimensions.back();
}

// Whether a reshape or bitcast leaves every element in its line and lane (then it is its operand's
// buffer): the same rows, or rows of whole lines and the same number of lines.
inline bool KeepsDeviceLayout(const HloInstruction& reshape, uint32_t lanes) {
  const DeviceLayout in = MakeDeviceLayout(reshape.operand(0)->shape(), lanes);
  const DeviceLayout out = MakeDeviceLayout(reshape.shape(), lanes);
  const bool same_lines = in.rows == out.rows && in.cols == out.cols;
  const bool unpadded = in.cols % lanes == 0 && out.cols % lanes == 0 && in.lines == out.lines;
  return same_lines || unpadded;
}

// How the second operand of an elementwise op reaches the VPU.
struct Src2 {
  enum Kind { kTensor, kImmediate, kRow, kSplat } kind = kTensor;
  // kTensor: the tensor; kRow: the rank-1 row (or null: constant row); kSplat: the rank-0 value whose
  // copies in every logical lane form the row
  const HloInstruction* value = nullptr;
  uint32_t imm = 0;                       // kImmediate
  int32_t constant_row = -1;              // kRow from a scalar constant: index of the constant region
};

// One step of a VpuSequence: `opcode` on chunk buffers (`src2` a buffer, kImmediate or kUnary).
struct VpuStep {
  static constexpr int kImmediate = -1;  // second operand is `imm` (SRC2_IMM)
  static constexpr int kUnary = -2;      // no second operand (VEXP, VLOG, VRSQRT, VRCP, VCVT)
  isa::Opcode opcode = isa::Opcode::VADD;
  int dst = 0, src1 = 0, src2 = kUnary;
  uint8_t flags = 0;  // INT, VCMP direction, VCVT_F32_TO_S32
  uint32_t imm = 0;
};
// Buffer 0 is loaded with operand 0, buffer 1 with operand 1 when there is a second tensor operand;
// the steps run in order on every chunk and buffer `result` is stored.
struct VpuSequence {
  uint32_t buffers = 1;
  uint32_t result = 0;
  bool second_operand = false;  // operand 1 is loaded into buffer 1
  bool mask_padding = false;    // f(+0) is not +0: padded lanes are cleared afterwards
  std::vector<VpuStep> steps;
};

// The tiling of a rank-2 dot lhs[M,K] x rhs -> [M,N] (rhs [K,N], or [N,K] when `transposed`) on the
// MXU: K and N in tiles of LANES; the weight tile (k, n) starts k*kt_step + n*nt_step lines into the
// rhs and has WeightRows(k, n) lines of rhs_row_lines stride.
struct DotGeometry {
  DotGeometry(const HloInstruction& dot, uint32_t lanes);
  uint32_t WeightRows(uint32_t k, uint32_t n) const;  // LANES, or the rows of a partial K or N tile
  uint32_t lanes = 0;
  bool transposed = false;
  int64_t M = 0, K = 0, N = 0;
  uint32_t k_tiles = 0, n_tiles = 0, k_rest = 0, n_rest = 0, rhs_row_lines = 0, kt_step = 0, nt_step = 0;
  bool partial_k = false;  // the last K tile has fewer than LANES weight rows (rhs [K,N])
  bool partial_n = false;  // the last N tile has fewer than LANES weight rows (rhs [N,K])
};

// A lane relayout (relayout.cc): every output row of a box (rows indexed like RowBox) is assembled from
// pieces of input rows, each moving columns src_col + k*src_stride (a stride of -1 reads backwards) to
// dst_col + k*dst_stride (k < count);
// a piece with repeat > 1 stands for `repeat` instances, instance i reading repeat_lines*i lines further
// into the input and writing repeat_cols*i columns further on (both strides 1).
struct ColumnPiece {
  Location src;                    // the input row of the box's first output row
  std::vector<int64_t> src_steps;  // input lines per index of each box dimension
  int64_t src_col = 0, dst_col = 0, count = 0;
  int64_t src_stride = 1, dst_stride = 1;
  int64_t repeat = 1, repeat_lines = 0, repeat_cols = 0;
};
struct LaneRelayout {
  Location dst;                                // the first output row of the box
  std::vector<int64_t> counts, dst_steps;      // box dimensions, the last innermost; output lines per index
  int64_t dst_cols = 0;                        // columns of an output row
  std::optional<uint32_t> fill;                // bits of the columns no piece writes (otherwise pieces write all)
  std::vector<ColumnPiece> pieces;             // applied in order
  // Splitting rows: the relayout runs `out_repeat` times, time i writing out_repeat_lines*i lines further
  // on and reading the (single, stride 1) piece out_repeat_cols*i columns further on; the input tiles of
  // a block are gathered and transposed once for all times, in a code loop.
  int64_t out_repeat = 1, out_repeat_lines = 0, out_repeat_cols = 0;
  bool compact = false;  // no software pipeline (less code: one of many relayouts of an instruction)
};

class CodeGenerator {
 public:
  CodeGenerator(const hlo::HloModule& module, const CompileOptions& options) : module_(module), options_(options) {}

  StatusOr<Program> Run(CompileStats* stats);

  // The handlers of the opcodes each file lowers (opcode_handler.h), collected by AddOpcodeHandlers.
  // Members, so that their emit functions reach the lowerings.
  static void AddBufferHandlers(OpcodeHandlerTable& table);              // codegen.cc
  static void AddElementwiseHandlers(OpcodeHandlerTable& table);         // elementwise.cc
  static void AddBroadcastTransposeHandlers(OpcodeHandlerTable& table);  // broadcast_transpose.cc
  static void AddReduceHandlers(OpcodeHandlerTable& table);              // reduce.cc
  static void AddDotHandlers(OpcodeHandlerTable& table);                 // dot.cc
  static void AddSlicePadHandlers(OpcodeHandlerTable& table);            // slice_pad.cc
  static void AddRelayoutHandlers(OpcodeHandlerTable& table);            // relayout.cc
  static void AddReverseHandlers(OpcodeHandlerTable& table);             // reverse.cc
  static void AddDepthwiseHandlers(OpcodeHandlerTable& table);           // depthwise.cc
  static void AddPoolHandlers(OpcodeHandlerTable& table);                // pool.cc
  static void AddControlFlowHandlers(OpcodeHandlerTable& table);         // control_flow.cc
  static void AddDynamicSliceHandlers(OpcodeHandlerTable& table);        // dynamic_slice.cc
  static void AddGatherScatterHandlers(OpcodeHandlerTable& table);       // gather_scatter.cc
  static void AddFeedHandlers(OpcodeHandlerTable& table);                // feeds.cc
  static void AddCollectiveHandlers(OpcodeHandlerTable& table);          // collectives.cc

  // How dots are scheduled (dot.cc): the balanced software pipeline (fastest, most code), a compact
  // one (fewer distinct steps) or one tile at a time (least code; no relayout pipelines either).
  enum class DotSchedule { kBalanced, kCompact, kSerial };
  void set_dot_schedule(DotSchedule schedule) {
    dot_schedule_ = schedule;
    pipelined_dots_ = schedule != DotSchedule::kSerial;
  }
  // Elementwise loops over at least this many lines overlap their DMA with the VPU (PipelineChunks; more
  // code); kNoPipelinedChunks: none.
  static constexpr uint32_t kNoPipelinedChunks = UINT32_MAX;
  void set_min_pipelined_lines(uint32_t lines) { min_pipelined_lines_ = lines; }

  // The unary math and tensor division lowered as fixed VPU sequences (MathSequence, elementwise.cc).
  enum class MathKind {
    kExp, kLog, kDivide, kRsqrt, kSqrt, kAbs, kSign, kTanh, kLogistic, kFloor, kCeil, kRoundEven, kRoundAfz, kPower,
    kExpm1, kLog1p
  };
  struct MathOp {
    HloOpcode opcode;
    MathKind kind;
    ElementTypes types;
  };
  static const std::vector<MathOp>& MathOps();  // the opcodes lowered by MathSequence (kDivide aside)
  static std::optional<MathKind> MathKindOf(HloOpcode opcode);

 private:
  uint32_t L() const { return options_.lanes; }

  // --- analysis ---
  // The instruction whose buffer holds the value of `instruction` (through copies, reshapes, GTEs: the
  // handlers' same_buffer_as).
  const HloInstruction* BufferOf(const HloInstruction* instruction) const;
  void FlattenOutputs(const HloInstruction* value, std::vector<const HloInstruction*>* outputs) const;

  // --- while loops (control_flow.cc) ---
  // A while lowered in line: positions in the program order (AppendProgramOrder) of its condition's first
  // instruction (the initial copies and the loop top come before it), of the condition's root (the test
  // follows it) and of the while itself (the back edge); the HBM buffer of each state element, and the
  // temp offset of the results staged at the back edge (staged[i] >= 0: the request id).
  struct Loop {
    const HloInstruction* instruction = nullptr;
    int64_t begin = 0, test = 0, end = 0;
    std::vector<Location> state;
    std::vector<int64_t> staged;
    std::vector<uint32_t> staged_offsets;
    Assembler::Label top, exit;
    // The condition compares two s32 scalars, each a constant or an element of the state (a counted
    // loop): the sequencer loads them with SLD and branches itself; the compare has no code.
    bool scalar_test = false;
  };
  static constexpr int kMaxLoopNesting = 64;
  // The instructions of `computation` in post order with, in place of each while, its condition's and
  // its body's (recursively), then the while, and in place of each conditional its branches' in turn, then
  // the conditional; records them in loops_ and conditionals_.
  Status AppendProgramOrder(const hlo::HloComputation& computation, int depth, std::vector<HloInstruction*>* order);
  // The get-tuple-elements of element `element` of the loop, of its condition's parameter and of its
  // body's parameter: all are the element's state buffer.
  std::vector<const HloInstruction*> StateElements(const Loop& loop, size_t element) const;
  const HloInstruction* LoopResult(const Loop& loop, size_t element) const;  // the body's result for it
  const HloInstruction* LoopPredicate(const Loop& loop) const;               // the condition's root
  Status EmitLoopEntry(const Loop& loop);
  Status EmitLoopTest(const Loop& loop);
  Status EmitScalarLoopTest(const Loop& loop);
  Status EmitLoopBack(const Loop& loop);

  // --- conditionals (control_flow.cc) ---
  // A conditional lowered in line: positions of each branch's first instruction (the dispatch comes
  // before branch 0's, the previous branch's result copies before the others') and of the conditional
  // (the last branch's result copies); the HBM buffer of each result element.
  struct Conditional {
    const HloInstruction* instruction = nullptr;
    std::vector<int64_t> branch_begin;
    int64_t end = 0;
    std::vector<Location> results;
    std::vector<Assembler::Label> branches;
    Assembler::Label exit;
  };
  // The values that are result element `element` of the conditional: the get-tuple-elements of a tuple
  // result, or the conditional itself.
  std::vector<const HloInstruction*> ResultElements(const Conditional& conditional, size_t element) const;
  size_t ResultCount(const Conditional& conditional) const;
  // Branch `branch`'s value for result element `element`.
  const HloInstruction* BranchResult(const Conditional& conditional, size_t branch, size_t element) const;
  Status EmitDispatch(const Conditional& conditional);
  // Copies branch `branch`'s results into the result buffers (and jumps to the exit but from the last).
  Status EmitBranchEnd(const Conditional& conditional, size_t branch);

  // --- infeed and outfeed (feeds.cc) ---
  // The values an infeed writes (its data, or the elements of a data tuple: get-tuple-elements, nullptr
  // where nothing reads one); they are written at the infeed, so their buffers live from there.
  std::vector<const HloInstruction*> InfeedElements(const HloInstruction& infeed) const;
  // The values an outfeed sends, in slot order.
  std::vector<const HloInstruction*> OutfeedElements(const HloInstruction& outfeed) const;
  // Records the program's infeed and outfeed layouts: every infeed (outfeed) of a program one shape.
  Status CollectFeeds(const std::vector<HloInstruction*>& order);
  // An infeed: SEMWAIT for a filled slot, copy the slot into the values' buffers, SEMPOST that the slot
  // is free (docs/csr.md, "Host semaphores"); an outfeed the other way round.
  Status EmitFeed(bool infeed, const std::vector<const HloInstruction*>& values);

  // --- buffers and input_output_alias (codegen.cc) ---
  // Per flattened output, the parameter its value is written into (-1: none); empty without aliases.
  StatusOr<std::vector<int32_t>> OutputAliases(const std::vector<const HloInstruction*>& outputs) const;
  // Whether `value` may be computed straight into `parameter`'s buffer: nothing reads the parameter
  // after `value` is defined, or only `value`'s own elementwise instruction reads it chunk by chunk.
  bool InPlaceAfterLastRead(const HloInstruction& value, const HloInstruction& parameter,
                            const std::map<const HloInstruction*, int64_t>& position,
                            const std::map<const HloInstruction*, int64_t>& last_use) const;
  // The program's HBM need in lines (CheckHbmFits against options_.hbm_lines).
  StatusOr<uint64_t> CheckHbm(const std::vector<HloInstruction*>& order, const BufferAssignment& temps) const;

  // --- collectives (collectives.cc) ---
  static constexpr uint32_t kNoRing = UINT32_MAX;
  // The ring (Program::rings) of `collective`'s groups over the grid, added when new; kNoRing when every
  // group is one device. Unimplemented when the groups differ in size or a device would have more peers
  // posting it than it has semaphores.
  StatusOr<uint32_t> CollectiveRingOf(const HloInstruction& collective);
  // The ring of a collective-permute: its chains and cycles (CollectiveRing::open).
  StatusOr<uint32_t> PermuteRingOf(const HloInstruction& permute);
  // `ring`'s index in Program::rings, added when new (Unimplemented as CollectiveRingOf).
  StatusOr<uint32_t> AddRing(const HloInstruction& collective, CollectiveRing ring);
  // Gives every collective of `order` its ring and its slots in the receive region (before the HBM check).
  Status PlanCollectives(const std::vector<HloInstruction*>& order);
  // The lines [first_line, first_line + lines) of a collective's value going round `ring`, its slots
  // from line `slots` of the receive region.
  struct CollectivePart {
    uint32_t ring = kNoRing;
    uint32_t slots = 0;
    uint32_t first_line = 0, lines = 0;
  };
  // No parts: every group is one device (a copy).
  struct CollectivePlan {
    std::vector<CollectivePart> parts;
  };
  std::map<const HloInstruction*, CollectivePlan> collectives_;
  // Records that code[instr_index]'s immediate is `patch` (its instr_index is set here); returns the index.
  uint32_t Patch(uint32_t instr_index, DevicePatch patch);
  Status EmitDeviceId(const HloInstruction& instruction);
  // all-reduce, all-gather, reduce-scatter: the ring of collectives.cc.
  Status EmitRingCollective(const HloInstruction& instruction);
  Status EmitCollectivePermute(const HloInstruction& instruction);
  // Runs `body` over the lines `left` counts down, in pieces of at most `piece` lines (`count`: this
  // piece's), each after a SYNC of `sync` (none: 0).
  void ForPieces(Reg left, Reg count, uint32_t piece, uint8_t sync, const std::function<void()>& body);

  // --- code ---
  StatusOr<ScopedReg> NewReg() { return AllocateScoped(&regs_); }
  void LoadAddress(Reg reg, const HloInstruction* value, uint32_t extra_lines);
  // s[rd] = lane 0 of the first line of `value` (a pred as 0/1, an s32 as it is): the line DMA'd into VMEM
  // line 0, then SLD. Loop tests, branch selectors, dynamic start indices.
  Status LoadScalar(Reg rd, const HloInstruction* value);
  // index = min(max(index, 0), limit) as s32; `bound` is scratch.
  void ClampScalar(Reg index, Reg bound, uint32_t limit);
  // elementwise.cc: add, subtract, multiply, maximum, minimum, and, or, xor (a folded broadcast or constant
  // second); negate as x * -1; not as x xor ones; divide by a constant as a multiplication, by a tensor with
  // EmitMath; the ReLU fusion.
  Status EmitBinary(const HloInstruction& instruction);
  Status EmitNegate(const HloInstruction& instruction);
  Status EmitNot(const HloInstruction& instruction);
  Status EmitDivide(const HloInstruction& instruction);
  Status EmitReluFusion(const HloInstruction& instruction);
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
  // exp, log, rsqrt, sqrt, division by a tensor, abs, sign, tanh, logistic, floor, ceil, rounding and power
  // as fixed VPU sequences (VpuSequence) over chunks of VMEM (see the definition).
  Status EmitMath(const HloInstruction& instruction, MathKind kind);
  StatusOr<VpuSequence> MathSequence(const HloInstruction& instruction, MathKind kind) const;
  // A loop fusion (loop_fusion.h): its computation as one chunked VPU loop.
  Status EmitLoopFusion(const HloInstruction& fusion);
  Status EmitVpuSequence(const HloInstruction& instruction, const VpuSequence& sequence);
  // Clears the padded lanes of a stored result whose operation maps +0 to something else.
  Status ClearPaddedLanes(const HloInstruction& instruction);
  // clamp(lo, x, hi) = min(max(x, lo), hi) with VMAX and VMIN.
  Status EmitClamp(const HloInstruction& instruction);
  // How `value`, the second operand of elementwise `op` in `instruction`, reaches the VPU: an immediate
  // (scalar constants that keep the padding zero, or any when rows fill whole lines), a constant row, a
  // folded row broadcast, or a tensor of the result's shape.
  StatusOr<Src2> SecondOperand(const HloInstruction& instruction, HloOpcode op, const HloInstruction& value);
  // The immediate `bits` when `keeps_zero` (op(+0, bits) is +0) or rows fill whole lines, else a constant row
  // of `bits` in the valid columns.
  StatusOr<Src2> ImmediateOrRow(const HloInstruction& instruction, uint32_t bits, bool keeps_zero);
  Status EmitSelect(const HloInstruction& instruction);
  Status EmitConvert(const HloInstruction& instruction);
  Status EmitBroadcast(const HloInstruction& instruction);
  // A broadcast that adds only leading dimensions: the operand's lines stored once per copy.
  Status EmitRepeatedLines(const HloInstruction& instruction);
  Status EmitRowBroadcastInto(const HloInstruction& out, const Src2& row);
  Status EmitDot(const HloInstruction& instruction);
  Status EmitDotSerial(const HloInstruction& instruction, const DotGeometry& geometry);
  // The overlapped schedule of dot.cc; false (nothing emitted) when the shape does not allow it.
  StatusOr<bool> EmitDotPipelined(const HloInstruction& instruction, const DotGeometry& geometry);
  // bf16 values (bf16.cc): f32 -> bf16 round to nearest even on the VPU from `from` into `to` (the same
  // buffer is allowed); `canonicalize` first turns NaNs into the canonical one (needed unless `from`
  // comes from the MXU). Converts from and to bf16.
  Status EmitBf16Rounding(const HloInstruction* from, const HloInstruction& to, bool canonicalize);
  Status EmitBf16Convert(const HloInstruction& instruction);
  Status EmitReduce(const HloInstruction& instruction);
  Status EmitTranspose(const HloInstruction& instruction);
  // slice_pad.cc: slice, pad and concatenate as copies of boxes of device rows.
  Status EmitSlice(const HloInstruction& instruction);
  Status EmitPad(const HloInstruction& instruction);
  Status EmitConcatenate(const HloInstruction& instruction);
  // Copies, for every index i < counts (one entry per non-minor dimension, the last innermost), the
  // first `tiles` lines of the row at src + sum(i_d * src_steps[d]) to dst + sum(i_d * dst_steps[d]).
  // With mask_region >= 0, the last tile is ANDed with line mask_line of that constant region.
  struct RowBox {
    Location src, dst;
    std::vector<int64_t> counts, src_steps, dst_steps;
    uint32_t tiles = 0;
    int32_t mask_region = -1;
    uint32_t mask_line = 0;
    Reg src_extra = kZeroReg, dst_extra = kZeroReg;  // lines added to src / dst at run time
  };
  Status EmitRowBoxCopy(const RowBox& box);
  // The rows a slice of rank >= 2 takes from its operand: box->src (the operand's buffer, moved to the
  // first row), counts and src_steps of every non-minor dimension; the minor dimension is the caller's.
  void SliceRows(const HloInstruction& slice, RowBox* box) const;
  // relayout.cc: moves columns between lanes with VTRANS and VOR (see the definition); exact for every
  // 32-bit element type.
  Status EmitLaneRelayout(LaneRelayout relayout, const HloInstruction& instruction);
  // A reshape or bitcast that changes the device layout (rows of other lengths), through lane relayouts.
  Status EmitReshape(const HloInstruction& instruction);
  // reverse.cc: output row i over the leading dimensions copies input row src_first_line + sum(i_d *
  // src_steps[d]) (steps may be negative), with DMAs, or through a lane relayout that also reverses the
  // minor dimension. reverse, and transposes that keep the minor dimension.
  Status EmitRowPermutation(const HloInstruction& instruction, int64_t src_first_line,
                            const std::vector<int64_t>& src_steps, bool reverse_minor);
  Status EmitReverse(const HloInstruction& instruction);
  // dynamic_slice.cc: dynamic-slice and dynamic-update-slice of whole rows at start indices read on the
  // device. EmitDynamicRowOffset puts the clamped run-time starts' line offset into `offset` and returns
  // the constant starts' part.
  Status EmitDynamicSlice(const HloInstruction& instruction);
  // gather_scatter.cc: gathers and scatters of whole rows of a [V,D] table at indices read on the device.
  Status EmitRowGatherScatter(const HloInstruction& instruction);
  StatusOr<uint32_t> EmitDynamicRowOffset(const HloInstruction& instruction, Reg offset);
  Status EmitRowTranspose(const HloInstruction& instruction);
  // depthwise.cc: the unpadded depthwise convolution of compiler/passes/convolution_lowering.h.
  Status EmitDepthwiseConvolution(const HloInstruction& instruction);
  // pool.cc: reduce-window (max/min/sum pooling) and select-and-scatter (max-pool gradient) over
  // windows on the non-minor dimensions.
  Status EmitReduceWindow(const HloInstruction& instruction);
  Status EmitSelectAndScatter(const HloInstruction& instruction);
  Status EmitCopy(const HloInstruction* from, Location to);
  Status EmitCopyLines(Location from, Location to, uint32_t lines);
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
  // Builds, at row_vmem, the `tiles` row lines of `instruction`'s layout that hold rank-0 `scalar` in
  // every logical lane (Src2::kSplat, elementwise.cc).
  Status EmitSplatRow(const HloInstruction& instruction, const HloInstruction& scalar, Reg row_vmem, uint32_t tiles);
  // Puts the `tiles` lines of a row operand (kRow: from HBM, its DMA not waited for; kSplat: built by
  // EmitSplatRow) at row_vmem (elementwise.cc).
  Status LoadRow(const HloInstruction& instruction, const Src2& row, Reg row_vmem, uint32_t tiles);
  // VMEM [first_line, +tiles) holds a row of a layout with `tiles` lines per row: fills [first_line, +lines)
  // (a whole number of rows) with copies of it, and waits for the VPU (elementwise.cc).
  Status RepeatRow(Reg first_line, uint32_t tiles, uint32_t lines);
  // VMEM [vmem, +copies) = `copies` copies of the HBM line at `hbm`; waits for the DMA unit and the VPU
  // (elementwise.cc).
  Status LoadLineCopies(Reg hbm, Reg vmem, uint32_t copies);
  // A loop over `total` lines in chunks, software-pipelined: while chunk k is computed, the DMA unit
  // stores chunk k-1 and loads chunk k+1, in three VMEM buffer sets used in rotation. Without
  // min_pipelined_lines_ lines, or when they make fewer than two chunks, one set and one stage after the other
  // (in larger chunks). A set holds `buffers` chunk-sized buffers. The callbacks get the first line of
  // each buffer of the set in registers (buffer[i]) and the chunk's count (it may be 0: the pipeline's
  // first store and last load); the load and store pointers advance by the lines each load and store
  // moved (pointers of step 1 only). Ends with every chunk stored or being stored.
  struct ChunkPipeline {
    uint32_t first_set = 0;  // VMEM line of the first set; the sets use the VMEM from there
    uint32_t buffers = 1;
    // Chunk-sized buffers the sets share, before them (from first_set); `prologue` fills them once the
    // chunk is known.
    uint32_t shared_buffers = 0;
    uint32_t granule = 1;    // chunks are multiples of this many lines (whole rows)
    uint32_t max_chunk = UINT32_MAX;
    std::vector<std::pair<Reg, uint32_t>> load_pointers, store_pointers;
    // Only buffer[0] holds a register (the set's first line): buffer i is i*chunk lines further, for
    // stages that address more buffers than there are registers.
    bool set_base_only = false;
    using Stage = std::function<Status(const std::vector<Reg>& buffer, Reg count)>;
    Stage load, compute, store;
    std::function<Status(uint32_t chunk)> prologue;
  };
  // The chunk PipelineChunks takes for `total` lines, and whether it pipelines (0: the VMEM is too small).
  uint32_t PipelineChunk(uint32_t total, const ChunkPipeline& pipeline, bool* pipelined) const;
  Status PipelineChunks(const HloInstruction& instruction, uint32_t total, const ChunkPipeline& pipeline);
  Status ForChunks(uint32_t total, uint32_t chunk, const std::vector<std::pair<Reg, uint32_t>>& pointers,
                   const std::function<Status(Reg count, uint32_t count_value)>& body);
  // Runs `emit_block(rows)` over `rows` rows in blocks of LANES: the full blocks in a loop when there are two
  // or more (each block advances `out_hbm` by one line of `output`), then the remaining rows.
  Status ForRowBlocks(const HloInstruction& output, uint32_t rows, Reg out_hbm,
                      const std::function<Status(uint32_t block_rows)>& emit_block);
  // DMA between `rows` HBM rows (from line `hbm`, `row_step` lines per row) and VMEM tile-major: column
  // tile t of row i is VMEM line vmem_block + t*LANES + i, for the block_lines / LANES tiles. kToVmem
  // gathers the rows, kToHbm scatters them back. `hbm_cursor`, `vmem_cursor` and `end` are scratch; the
  // caller SYNCs on the DMA.
  enum class DmaDirection { kToVmem, kToHbm };
  void MoveTileMajor(DmaDirection direction, Reg hbm, Reg rows, uint32_t row_step, uint32_t vmem_block,
                     uint32_t block_lines, Reg hbm_cursor, Reg vmem_cursor, Reg end);
  // Runs `emit_tile()` over the column tiles of a row: `full_tiles` with cols_valid = LANES (in a loop
  // while `counter`, advanced by emit_tile, differs from `end`, which `set_end` loads, when there are two
  // or more), then one of `rest` columns.
  void ForColumnTiles(uint32_t full_tiles, uint32_t rest, Reg cols_valid, Reg counter, Reg end,
                      const std::function<void()>& set_end, const std::function<void()>& emit_tile);
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
  hlo::DeviceGrid grid_;  // the devices the program runs on (Program::replicas x partitions)
  Assembler asm_;
  ScalarRegisterAllocator regs_;
  Program program_;
  std::map<const HloInstruction*, Location> locations_;
  std::map<const HloInstruction*, int32_t> constant_regions_;
  std::map<std::pair<uint32_t, int64_t>, int32_t> constant_rows_;
  std::vector<DotPaddingReport> dots_;
  DotSchedule dot_schedule_ = DotSchedule::kBalanced;
  bool pipelined_dots_ = true;
  uint32_t min_pipelined_lines_ = 0;
  uint32_t aliased_outputs_ = 0;  // outputs written into a parameter's buffer
  uint32_t alias_copies_ = 0;     // of those, copied there at the end
  std::vector<Loop> loops_;       // in the order their back edges are emitted (inner loops first)
  std::vector<Conditional> conditionals_;  // inner conditionals first
  // A branch's parameter, or a get-tuple-element of it, is the value the conditional passes it.
  std::map<const HloInstruction*, const HloInstruction*> branch_inputs_;
  std::set<const hlo::HloComputation*> inlined_computations_;  // each condition, body and branch once
};


}  // namespace tpu::compiler::codegen_internal
