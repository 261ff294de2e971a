// Pooling on the VPU: reduce-window (max, min and sum pooling; products: cumprod) and select-and-scatter (the gradient of
// max pooling) over windows on the non-minor dimensions, streamed with DMA like depthwise.cc.
//
// Geometry: the minor dimension (channels of NHWC) lies on the lanes and takes no window. Dimension
// rank-2 (W) is the "column" dimension: one strided DMA gathers a tap's input for a whole output row
// (Wo lines, HBM stride stride_w * tiles), so every tap is one VPU instruction over a row. The
// dimensions before it (batch, H, ...) are walked by code loops; their taps are decided at compile
// time: the output indices of a dimension are split into runs whose windows cover the same taps (the
// interior, and the rows that reach into the padding), one loop per run. Column tiles are the
// outermost loop. Taps and outputs outside the input are skipped, as the interpreter skips them.
//
// Exactness: both lowerings apply the interpreter's operations in its order (accumulator = init, then
// the window's taps in row-major order; select-and-scatter adds each window's source value in the
// order of the windows), so results are bit-identical except where DAZ/FTZ of docs/numerics.md
// differs from the interpreter's host arithmetic (subnormals).
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

namespace {

// The reducer of a reduce-window: add, maximum, minimum (ReducerOpcode) or multiply (cumprod), else
// kUnknown.
HloOpcode WindowReducerOpcode(const HloInstruction& reduce_window) {
  const HloOpcode op = ReducerOpcode(reduce_window);
  if (op != HloOpcode::kUnknown) return op;
  const hlo::HloComputation* reducer = reduce_window.to_apply();
  if (reducer == nullptr || reducer->num_parameters() != 2 || reducer->root_instruction() == nullptr) return op;
  const HloInstruction& root = *reducer->root_instruction();
  const bool multiply = root.opcode() == HloOpcode::kMultiply && root.operand(0)->opcode() == HloOpcode::kParameter &&
                        root.operand(1)->opcode() == HloOpcode::kParameter && root.operand(0) != root.operand(1);
  return multiply ? HloOpcode::kMultiply : HloOpcode::kUnknown;
}

struct Range {
  int64_t lo = 0, hi = 0;
  bool empty() const { return hi <= lo; }
  bool operator==(const Range& other) const { return lo == other.lo && hi == other.hi; }
};

// Taps k of window dimension `w` whose input index o*stride - padding_low + k lies in [0, size).
Range ValidTaps(const hlo::WindowDimension& w, int64_t size, int64_t o) {
  const int64_t start = o * w.stride - w.padding_low;
  return {std::max<int64_t>(0, -start), std::max<int64_t>(0, std::min<int64_t>(w.size, size - start))};
}

// Outputs o in [0, count) whose tap k lies inside the input (a contiguous range).
Range ValidOutputs(const hlo::WindowDimension& w, int64_t size, int64_t count, int64_t k) {
  Range range{0, 0};
  bool found = false;
  for (int64_t o = 0; o < count; ++o) {
    const int64_t position = o * w.stride - w.padding_low + k;
    if (position < 0 || position >= size) continue;
    if (!found) range.lo = o;
    found = true;
    range.hi = o + 1;
  }
  return range;
}

// Splits [0, count) into runs of consecutive indices with the same key: (first index, length).
template <typename Key>
std::vector<std::pair<int64_t, int64_t>> Runs(int64_t count, const std::function<Key(int64_t)>& key) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  Key current{};
  for (int64_t i = 0; i < count; ++i) {
    Key k = key(i);
    if (runs.empty() || !(k == current)) {
      runs.push_back({i, 0});
      current = std::move(k);
    }
    ++runs.back().second;
  }
  return runs;
}

// The shapes of a pooling instruction in the device layout.
struct PoolGeometry {
  int rank = 0;
  int col = 0;  // rank - 2: the dimension one strided DMA walks
  std::vector<hlo::WindowDimension> window;
  std::vector<int64_t> in_dims, out_dims;      // operand, and windows per dimension
  std::vector<int64_t> in_steps, out_steps;    // lines between consecutive indices (RowSteps)
  uint32_t tiles = 0;                          // column tiles of a row (lines per W index)
  uint32_t in_width = 0, out_width = 0;        // W and Wo

  // Row-major position of a tap in the window (dimensions 0 .. col).
  uint32_t TapIndex(const std::vector<int64_t>& outer_taps, int64_t kw) const {
    int64_t index = 0;
    for (int d = 0; d < col; ++d) index = index * window[d].size + outer_taps[d];
    return static_cast<uint32_t>(index * window[col].size + kw);
  }
};

// One tap of a window row: gathered from `in_offset` lines past the row's window origin (stride
// stride_w * tiles) for the outputs [lo, hi) of the row.
struct Tap {
  int64_t in_offset = 0;
  uint32_t lo = 0, hi = 0;
  uint32_t index = 0;
};

// The taps inside the input, in row-major window order, of a window row whose outer dimensions may use
// the taps `outer` (one range per dimension before col).
std::vector<Tap> RowTaps(const PoolGeometry& g, const std::vector<Range>& outer) {
  std::vector<Tap> taps;
  for (const Range& range : outer) {
    if (range.empty()) return taps;
  }
  const hlo::WindowDimension& w = g.window[g.col];
  std::vector<int64_t> k(static_cast<size_t>(g.col));
  for (int d = 0; d < g.col; ++d) k[d] = outer[d].lo;
  while (true) {
    int64_t row_offset = 0;
    for (int d = 0; d < g.col; ++d) row_offset += (k[d] - g.window[d].padding_low) * g.in_steps[d];
    for (int64_t kw = 0; kw < w.size; ++kw) {
      const Range outputs = ValidOutputs(w, g.in_width, g.out_width, kw);
      if (outputs.empty()) continue;
      Tap tap;
      tap.in_offset = row_offset + (outputs.lo * w.stride - w.padding_low + kw) * g.in_steps[g.col];
      tap.lo = static_cast<uint32_t>(outputs.lo);
      tap.hi = static_cast<uint32_t>(outputs.hi);
      tap.index = g.TapIndex(k, kw);
      taps.push_back(tap);
    }
    int d = g.col - 1;
    for (; d >= 0; --d) {
      if (++k[d] < outer[d].hi) break;
      k[d] = outer[d].lo;
    }
    if (d < 0) break;
  }
  return taps;
}

StatusOr<PoolGeometry> MakePoolGeometry(const HloInstruction& instruction, const hlo::Shape& in,
                                        const hlo::Shape& windows, uint32_t lanes) {
  const std::string what = instruction.opcode_name() + " " + instruction.name();
  PoolGeometry g;
  g.rank = in.rank();
  if (in.element_type != hlo::PrimitiveType::F32 || windows.element_type != hlo::PrimitiveType::F32) {
    return Unimplemented(what + ": only f32 values are supported");
  }
  if (g.rank < 2) {
    return Unimplemented(what + " of " + in.ToString() +
                         ": the window must lie on dimensions other than the minor one (rank 2 or more)");
  }
  g.window = instruction.window().dimensions;
  if (static_cast<int>(g.window.size()) != g.rank || windows.rank() != g.rank) {
    return InvalidArgument(what + ": the window has " + std::to_string(g.window.size()) + " dimensions for " +
                           in.ToString());
  }
  for (int d = 0; d < g.rank; ++d) {
    const hlo::WindowDimension& w = g.window[d];
    if (w.base_dilation != 1 || w.window_dilation != 1 || w.window_reversal) {
      return Unimplemented(what + " (window " + hlo::WindowToString(instruction.window()) +
                           "): base and window dilation other than 1 and window reversal are not supported");
    }
    if (w.size < 1 || w.stride < 1 || w.padding_low < 0 || w.padding_high < 0) {
      return Unimplemented(what + " (window " + hlo::WindowToString(instruction.window()) +
                           "): only positive sizes and strides and non-negative padding are supported");
    }
  }
  const hlo::WindowDimension& minor = g.window[g.rank - 1];
  if (minor.size != 1 || minor.stride != 1 || minor.padding_low != 0 || minor.padding_high != 0) {
    return Unimplemented(what + " (window " + hlo::WindowToString(instruction.window()) +
                         "): a window on the minor dimension (the lanes) is not supported; pool over the "
                         "dimensions before it (NHWC)");
  }
  g.col = g.rank - 2;
  g.in_dims = in.dimensions;
  g.out_dims = windows.dimensions;
  g.in_steps = RowSteps(in, lanes);
  g.out_steps = RowSteps(windows, lanes);
  g.tiles = static_cast<uint32_t>(MakeDeviceLayout(in, lanes).column_tiles(lanes));
  g.in_width = static_cast<uint32_t>(in.dimensions[g.col]);
  g.out_width = static_cast<uint32_t>(windows.dimensions[g.col]);
  return g;
}

// Code loops over runs of output rows with a pointer that moves by a fixed step per row.
class PoolLoops {
 public:
  PoolLoops(Assembler& assembler, ScalarRegisterAllocator* regs) : asm_(assembler), regs_(regs) {}

  void Move(Reg pointer, int64_t lines) {
    if (lines != 0) asm_.Addi(pointer, pointer, static_cast<uint32_t>(lines));
  }
  // body() `count` times; after each, every pointer advances by its step; they are restored afterwards.
  Status Loop(int64_t count, const std::vector<std::pair<Reg, int64_t>>& pointers, const std::function<Status()>& body) {
    if (count <= 0) return OkStatus();
    if (count == 1) return body();
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, AllocateScoped(regs_));
    asm_.Li(remaining, static_cast<uint32_t>(count));
    Assembler::Label top = asm_.NewLabel();
    asm_.Bind(top);
    TPU_RETURN_IF_ERROR(body());
    for (const auto& [pointer, step] : pointers) Move(pointer, step);
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, top);
    for (const auto& [pointer, step] : pointers) Move(pointer, -step * count);
    return OkStatus();
  }

 private:
  Assembler& asm_;
  ScalarRegisterAllocator* regs_;
};

// One strided DMA of a tap's input lines (from `offset` lines past `base`) into `buffer` + tap.lo, through
// the scratch registers a, b, c.
void LoadTap(Assembler& assembler, Reg base, int64_t offset, const Tap& tap, uint32_t buffer, uint32_t stride, Reg a,
             Reg b, Reg c) {
  assembler.Addi(a, base, static_cast<uint32_t>(offset + tap.in_offset));
  assembler.Li(b, buffer + tap.lo);
  assembler.Li(c, tap.hi - tap.lo);
  assembler.DmaLoad(a, b, c, stride);
}

// The f32 bits of a scalar f32 constant init value.
std::optional<uint32_t> ScalarInitBits(const HloInstruction& init) {
  if (!IsScalarF32Constant(init)) return std::nullopt;
  return FloatBits(init.literal().Get<float>(0));
}

// Whether some window of `g` lies entirely in the padding (its output is the init value alone).
bool HasEmptyWindow(const PoolGeometry& g) {
  for (int d = 0; d <= g.col; ++d) {
    for (int64_t o = 0; o < g.out_dims[d]; ++o) {
      if (ValidTaps(g.window[d], g.in_dims[d], o).empty()) return true;
    }
  }
  return false;
}

}  // namespace

// Per column tile and output row: the accumulator (Wo lines) is splat with the init value, then every
// tap inside the input is gathered by one strided DMA (double-buffered: the next tap loads while the VPU
// combines the current one) and combined into the accumulator's lines [lo, hi); one strided DMA stores
// the row. VMEM: accumulator [0, Wo), tap buffers [Wo, 3 Wo).
Status CodeGenerator::EmitReduceWindow(const HloInstruction& instruction) {
  const std::string what = "reduce-window " + instruction.name();
  if (instruction.operand_count() != 2 || instruction.shape().IsTuple()) {
    return Unimplemented(what + ": only single-operand reduce-window is supported");
  }
  const HloInstruction& operand = *instruction.operand(0);
  const HloOpcode op = WindowReducerOpcode(instruction);
  if (op == HloOpcode::kUnknown) {
    return Unimplemented(what + ": only add, multiply, maximum and minimum reducers are supported");
  }
  const isa::Opcode opcode = *VpuOpcodeFor(op);  // VADD, VMUL, VMAX or VMIN
  const std::optional<uint32_t> init = ScalarInitBits(*instruction.operand(1));
  if (!init) return Unimplemented(what + ": the init value must be a scalar f32 constant");
  TPU_ASSIGN_OR_RETURN(PoolGeometry g, MakePoolGeometry(instruction, operand.shape(), instruction.shape(), L()));
  const uint32_t width = g.out_width;
  for (int64_t size : g.out_dims) {
    if (size == 0) return OkStatus();  // nothing to write
  }
  const uint64_t vmem_needed = 3ull * width;
  if (vmem_needed > options_.vmem_lines) return VmemOverflow(instruction, vmem_needed);
  const uint32_t acc_vmem = 0, buffer_vmem[2] = {width, 2 * width};

  {  // the registers are free again for ClearPaddedLanes
    PoolLoops loops(asm_, &regs_);
    TPU_ASSIGN_OR_RETURN(ScopedReg x, NewReg());      // input: window origin of the current output row, tile t
    TPU_ASSIGN_OR_RETURN(ScopedReg y, NewReg());      // output: current row, tile t
    TPU_ASSIGN_OR_RETURN(ScopedReg width_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg a, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg b, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg c, NewReg());
    LoadAddress(x, &operand, 0);
    LoadAddress(y, &instruction, 0);
    asm_.Li(width_reg, width);
    const uint32_t gather_stride = static_cast<uint32_t>(g.window[g.col].stride * g.in_steps[g.col]);

    auto load_tap = [&](const Tap& tap, int buffer) {
      LoadTap(asm_, x, 0, tap, buffer_vmem[buffer], gather_stride, a, b, c);
    };
    auto emit_row = [&](const std::vector<Range>& outer) -> Status {
      const std::vector<Tap> taps = RowTaps(g, outer);
      asm_.Sync(kSyncDma);  // the previous row's store reads the accumulator
      asm_.Li(a, acc_vmem);
      asm_.Vsplat(a, width_reg, *init);
      if (!taps.empty()) load_tap(taps[0], 0);
      for (size_t i = 0; i < taps.size(); ++i) {
        asm_.Sync(kSyncDma);  // tap i is loaded
        if (i + 1 < taps.size()) {
          asm_.Sync(kSyncVpu);  // tap i - 1 has read the other buffer
          load_tap(taps[i + 1], static_cast<int>((i + 1) % 2));
        }
        asm_.Li(a, acc_vmem + taps[i].lo);
        asm_.Li(b, buffer_vmem[i % 2] + taps[i].lo);
        asm_.Li(c, taps[i].hi - taps[i].lo);
        asm_.Emit(opcode, {a, a, b, c, 0, 0});
      }
      asm_.Sync(kSyncVpu);
      asm_.Li(a, acc_vmem);
      asm_.DmaStore(y, a, width_reg, static_cast<uint32_t>(g.out_steps[g.col]));
      return OkStatus();
    };
    // Dimensions before col: runs of outputs whose windows cover the same taps, one loop per run.
    std::function<Status(int, std::vector<Range>)> rows = [&](int d, std::vector<Range> outer) -> Status {
      if (d == g.col) return emit_row(outer);
      const hlo::WindowDimension& w = g.window[d];
      const auto runs = Runs<Range>(g.out_dims[d], [&](int64_t o) { return ValidTaps(w, g.in_dims[d], o); });
      for (const auto& [first, count] : runs) {
        const int64_t x_step = w.stride * g.in_steps[d], y_step = g.out_steps[d];
        loops.Move(x, first * x_step);
        loops.Move(y, first * y_step);
        std::vector<Range> inner = outer;
        inner.push_back(ValidTaps(w, g.in_dims[d], first));
        TPU_RETURN_IF_ERROR(loops.Loop(count, {{x, x_step}, {y, y_step}}, [&]() { return rows(d + 1, inner); }));
        loops.Move(x, -first * x_step);
        loops.Move(y, -first * y_step);
      }
      return OkStatus();
    };
    TPU_RETURN_IF_ERROR(loops.Loop(g.tiles, {{x, 1}, {y, 1}}, [&]() { return rows(0, {}); }));
  }

  // Padded lanes hold op(init, +0, ...): +0 unless the init value wins over +0 or a window is empty.
  const DeviceLayout layout = MakeDeviceLayout(instruction.shape(), L());
  const bool padded_lanes = layout.cols % L() != 0;
  if (padded_lanes && *init != 0u && (!ImmediateKeepsPaddingZero(op, *init) || HasEmptyWindow(g))) {
    asm_.Sync(kSyncAll);
    return ClearPaddedLanes(instruction);
  }
  return OkStatus();
}

// The gradient of max pooling, computed per result row (gather form) so that every result element
// receives its windows' source values in the interpreter's order (windows in row-major order):
// for result row h, every window row ho whose taps reach h (ho ascending) first selects, per output
// column and lane, the window's tap as the interpreter does (the first tap inside the input, replaced
// by each later tap the select computation does not keep the current one over: VCMP, then VSEL of the
// value and of the tap index), then for every column tap kw (descending: window columns ascending) adds
// the source value where the selected tap is that one (VCMP EQ, VSEL with -0 elsewhere, VADD: adding -0
// changes nothing). Strided windows write every stride-th result column: the result row is kept
// phase-major in VMEM (columns r, r + s, r + 2s, ... together), so each tap's contribution is one
// contiguous VADD and every phase one strided store. Window rows reaching several result rows are selected
// once and kept in VMEM slots where the outer dimensions allow it (emit_cached_run), else once per result row.
//
// VMEM: result row [0, W); selected value and its next version, selected tap and its next version, two
// tap buffers, the source row and a contribution buffer (Wo lines each); then the slots (2 Wo lines each).
Status CodeGenerator::EmitSelectAndScatter(const HloInstruction& instruction) {
  const std::string what = "select-and-scatter " + instruction.name();
  const HloInstruction& operand = *instruction.operand(0);
  const HloInstruction& source = *instruction.operand(1);
  const hlo::HloComputation* select = nullptr;
  const hlo::HloComputation* scatter = nullptr;
  for (const auto& called : instruction.called_computation_attributes()) {
    if (called.attribute == "select") select = called.computation;
    if (called.attribute == "scatter") scatter = called.computation;
  }
  auto is_parameter = [](const HloInstruction* value, int64_t number) {
    return value->opcode() == HloOpcode::kParameter && value->parameter_number() == number;
  };
  const HloInstruction* select_root = select == nullptr ? nullptr : select->root_instruction();
  if (select_root == nullptr || select_root->opcode() != HloOpcode::kCompare || select_root->operand_count() != 2 ||
      !is_parameter(select_root->operand(0), 0) || !is_parameter(select_root->operand(1), 1)) {
    return Unimplemented(what + ": the select computation must be compare(parameter 0, parameter 1) (GE for max pooling)");
  }
  const HloInstruction* scatter_root = scatter == nullptr ? nullptr : scatter->root_instruction();
  if (scatter_root == nullptr || scatter_root->opcode() != HloOpcode::kAdd || scatter_root->operand_count() != 2 ||
      scatter_root->operand(0)->opcode() != HloOpcode::kParameter ||
      scatter_root->operand(1)->opcode() != HloOpcode::kParameter ||
      scatter_root->operand(0) == scatter_root->operand(1)) {
    return Unimplemented(what + ": only an add scatter computation is supported");
  }
  const std::optional<uint32_t> init = ScalarInitBits(*instruction.operand(2));
  if (!init) return Unimplemented(what + ": the init value must be a scalar f32 constant");
  TPU_ASSIGN_OR_RETURN(PoolGeometry g, MakePoolGeometry(instruction, operand.shape(), source.shape(), L()));
  const uint8_t keep_flags =
      static_cast<uint8_t>(VcmpDirection(select_root->comparison_direction()) << isa::flag::VCMP_DIR_LSB);
  const uint32_t width = g.out_width, in_width = g.in_width;
  for (int64_t size : g.in_dims) {
    if (size == 0) return OkStatus();  // nothing to write
  }

  // Phases of the result row: column w is line phase_start[w % s] + w / s.
  const uint32_t stride_w = static_cast<uint32_t>(g.window[g.col].stride);
  const uint32_t phases = std::min(stride_w, in_width);
  std::vector<uint32_t> phase_start(phases + 1, 0);
  for (uint32_t r = 0; r < phases; ++r) phase_start[r + 1] = phase_start[r] + (in_width - r + stride_w - 1) / stride_w;

  const uint64_t vmem_needed = uint64_t{in_width} + 8ull * width;
  if (vmem_needed > options_.vmem_lines) return VmemOverflow(instruction, vmem_needed);
  const uint32_t result_vmem = 0;
  const uint32_t value_vmem[2] = {in_width, in_width + width};
  const uint32_t index_vmem[2] = {in_width + 2 * width, in_width + 3 * width};
  const uint32_t buffer_vmem[2] = {in_width + 4 * width, in_width + 5 * width};
  const uint32_t source_vmem = in_width + 6 * width, contribution_vmem = in_width + 7 * width;
  constexpr uint32_t kNoTap = 0xffffffffu;  // selected tap of a window with no tap inside the input

  {  // the registers are free again for ClearPaddedLanes
    PoolLoops loops(asm_, &regs_);
    TPU_ASSIGN_OR_RETURN(ScopedReg r, NewReg());    // result: row of the current block, tile t
    TPU_ASSIGN_OR_RETURN(ScopedReg x, NewReg());    // operand: window origin of the block's window row, tile t
    TPU_ASSIGN_OR_RETURN(ScopedReg src, NewReg());  // source: the block's window row, tile t
    TPU_ASSIGN_OR_RETURN(ScopedReg width_reg, NewReg());
    // VMEM addresses of the selected value / tap and of their next versions (swapped after every tap).
    TPU_ASSIGN_OR_RETURN(ScopedReg value, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg next_value, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg index, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg next_index, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg a, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg b, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg c, NewReg());
    LoadAddress(r, &instruction, 0);
    LoadAddress(x, &operand, 0);
    LoadAddress(src, &source, 0);
    asm_.Li(width_reg, width);
    const uint32_t gather_stride = static_cast<uint32_t>(stride_w * g.in_steps[g.col]);

    // A window row reaching the result row: its taps on the outer dimensions, the tap that reaches the
    // row, and its offset (in window rows) from the block's window row.
    struct Contribution {
      int64_t tap = 0, delta = 0;
      Range taps;
      bool operator==(const Contribution& o) const { return tap == o.tap && delta == o.delta && taps == o.taps; }
    };
    struct Reach {  // per outer dimension
      std::vector<Contribution> contributions;
    };

    auto load_tap = [&](int64_t x_offset, const Tap& tap, int buffer) {
      LoadTap(asm_, x, x_offset, tap, buffer_vmem[buffer], gather_stride, a, b, c);
    };
    auto splat = [&](uint32_t vmem, uint32_t lines, uint32_t bits) {
      asm_.Li(a, vmem);
      asm_.Li(b, lines);
      asm_.Vsplat(a, b, bits);
    };

    // Where a window row (one contribution per outer dimension) starts, relative to the block's pointers.
    struct WindowRow {
      int64_t x_offset = 0, src_offset = 0;
      std::vector<Range> outer;      // its taps on the outer dimensions
      std::vector<int64_t> row_taps;  // the outer taps that reach the result row
    };
    auto window_row_of = [&](const std::vector<Contribution>& reach) {
      WindowRow row;
      for (int d = 0; d < g.col; ++d) {
        row.x_offset += reach[d].delta * g.window[d].stride * g.in_steps[d];
        row.src_offset += reach[d].delta * g.out_steps[d];
        row.outer.push_back(reach[d].taps);
        row.row_taps.push_back(reach[d].tap);
      }
      return row;
    };

    // The window row's source values into `source_dst` and its selection: afterwards `index` names the
    // buffer of the selected tap per column and lane. False (nothing emitted) when no tap is inside the input.
    auto emit_selection = [&](const WindowRow& row, uint32_t source_dst) -> StatusOr<bool> {
      const std::vector<Tap> taps = RowTaps(g, row.outer);
      if (taps.empty()) return false;
      asm_.Sync(kSyncVpu);  // the previous window row's instructions read every buffer
      asm_.Addi(a, src, static_cast<uint32_t>(row.src_offset));
      asm_.Li(b, source_dst);
      asm_.DmaLoad(a, b, width_reg, static_cast<uint32_t>(g.out_steps[g.col]));
      const int64_t x_offset = row.x_offset;
      asm_.Li(value, value_vmem[0]);
      asm_.Li(next_value, value_vmem[1]);
      asm_.Li(index, index_vmem[0]);
      asm_.Li(next_index, index_vmem[1]);
      asm_.Vsplat(index, width_reg, kNoTap);
      std::vector<bool> selected(width, false);  // the column has a tap inside the input so far
      load_tap(x_offset, taps[0], 0);
      for (size_t i = 0; i < taps.size(); ++i) {
        const Tap& tap = taps[i];
        asm_.Sync(kSyncDma);  // tap i (and the source row) are loaded
        if (i + 1 < taps.size()) {
          asm_.Sync(kSyncVpu);  // tap i - 1 has read the other buffer
          load_tap(x_offset, taps[i + 1], static_cast<int>((i + 1) % 2));
        }
        // keep = select(current, tap); forced to 1 outside [lo, hi) and to 0 where nothing is selected yet.
        asm_.Li(a, buffer_vmem[i % 2]);
        asm_.Emit(isa::Opcode::VCMP, {next_value, value, a, width_reg, keep_flags, 0});
        for (uint32_t line = 0; line < width;) {
          const bool inside = line >= tap.lo && line < tap.hi;
          const int forced = !inside ? 1 : (!selected[line] ? 0 : -1);
          uint32_t end = line + 1;
          while (end < width) {
            const bool end_inside = end >= tap.lo && end < tap.hi;
            const int end_forced = !end_inside ? 1 : (!selected[end] ? 0 : -1);
            if (end_forced != forced) break;
            ++end;
          }
          if (forced >= 0) {
            asm_.Addi(b, next_value, line);
            asm_.Li(c, end - line);
            asm_.Vsplat(b, c, static_cast<uint32_t>(forced));
          }
          line = end;
        }
        asm_.Emit(isa::Opcode::VOR, {next_index, next_value, kZeroReg, width_reg, isa::flag::VOR_SRC2_IMM, 0});
        asm_.Emit(isa::Opcode::VSEL, {next_value, value, a, width_reg, 0, 0});
        asm_.Emit(isa::Opcode::VSEL, {next_index, index, kZeroReg, width_reg, isa::flag::VSEL_SRC2_IMM, tap.index});
        std::swap(value, next_value);
        std::swap(index, next_index);
        for (uint32_t line = tap.lo; line < tap.hi; ++line) selected[line] = true;
      }
      return true;
    };

    // Adds the source values (at `source_base`) of the columns whose selected tap (at `index_base`) is
    // the one reaching the result row, window columns ascending (column taps descending).
    auto emit_contributions = [&](const std::vector<int64_t>& row_taps, Reg index_base, uint32_t source_base) {
      const hlo::WindowDimension& w = g.window[g.col];
      for (int64_t kw = w.size - 1; kw >= 0; --kw) {
        const Range outputs = ValidOutputs(w, in_width, width, kw);
        if (outputs.empty()) continue;
        const uint32_t lo = static_cast<uint32_t>(outputs.lo), count = static_cast<uint32_t>(outputs.hi - outputs.lo);
        const int64_t column = outputs.lo * w.stride - w.padding_low + kw;
        const uint32_t line = phase_start[column % stride_w] + static_cast<uint32_t>(column / stride_w);
        asm_.Li(a, contribution_vmem + lo);
        asm_.Addi(b, index_base, lo);
        asm_.Li(c, count);
        asm_.Emit(isa::Opcode::VCMP, {a, b, kZeroReg, c,
                                      static_cast<uint8_t>(isa::flag::VCMP_INT | isa::flag::VCMP_SRC2_IMM |
                                                           (VcmpDirection(hlo::ComparisonDirection::kEq)
                                                            << isa::flag::VCMP_DIR_LSB)),
                                      g.TapIndex(row_taps, kw)});
        asm_.Li(b, source_base + lo);
        asm_.Emit(isa::Opcode::VSEL, {a, b, kZeroReg, c, isa::flag::VSEL_SRC2_IMM, 0x80000000u});
        asm_.Li(b, result_vmem + line);
        asm_.Emit(isa::Opcode::VADD, {b, b, a, c, 0, 0});
      }
    };

    // Selection over one window row, then its contributions to the result row.
    auto emit_window_row = [&](const std::vector<Contribution>& reach) -> Status {
      const WindowRow row = window_row_of(reach);
      TPU_ASSIGN_OR_RETURN(bool selected, emit_selection(row, source_vmem));
      if (selected) emit_contributions(row.row_taps, index, source_vmem);
      return OkStatus();
    };

    // One result row: init, the window rows reaching it (every combination of the outer dimensions'
    // contributions, window rows ascending), then one strided store per phase.
    auto begin_result_row = [&]() {
      asm_.Sync(kSyncDma);  // the previous row's stores read the result row
      splat(result_vmem, in_width, *init);
    };
    auto store_result_row = [&](int64_t r_offset) {
      asm_.Sync(kSyncVpu);
      for (uint32_t phase = 0; phase < phases; ++phase) {
        asm_.Addi(a, r, static_cast<uint32_t>(r_offset + phase * g.in_steps[g.col]));
        asm_.Li(b, result_vmem + phase_start[phase]);
        asm_.Li(c, phase_start[phase + 1] - phase_start[phase]);
        asm_.DmaStore(a, b, c, gather_stride);
      }
    };
    auto emit_result_row = [&](int64_t r_offset, const std::vector<Reach>& reach) -> Status {
      begin_result_row();
      std::vector<size_t> choice(reach.size(), 0);
      bool any = true;
      for (const Reach& dim : reach) any = any && !dim.contributions.empty();
      while (any) {
        std::vector<Contribution> combination;
        for (size_t d = 0; d < reach.size(); ++d) combination.push_back(reach[d].contributions[choice[d]]);
        TPU_RETURN_IF_ERROR(emit_window_row(combination));
        int d = static_cast<int>(reach.size()) - 1;
        for (; d >= 0; --d) {
          if (++choice[d] < reach[d].contributions.size()) break;
          choice[d] = 0;
        }
        if (d < 0) break;
      }
      store_result_row(r_offset);
      return OkStatus();
    };

    // The blocks of a run on the last outer dimension with the window rows they reach kept in VMEM
    // slots (slot j: window row block + delta_min + j, its selected taps then its source values), when
    // the outer dimensions before it reach one window row each: every window row is selected once
    // instead of once per result row it reaches; after a block the slots shift down by one (VOR copies)
    // and the next block selects only its last window row. False (nothing emitted) when that does not
    // apply or saves nothing.
    auto emit_cached_run = [&](const std::vector<Reach>& reach, const std::vector<Reach>& per_row, int64_t r_offset,
                               int d, int64_t count) -> StatusOr<bool> {
      std::vector<Contribution> fixed;
      for (const Reach& outer : reach) {
        if (outer.contributions.size() != 1) return false;
        fixed.push_back(outer.contributions[0]);
      }
      std::map<int64_t, Range> taps_of;  // per delta, the window row's taps on dimension d
      int64_t uses = 0;
      for (const Reach& row : per_row) {
        for (const Contribution& contribution : row.contributions) {
          taps_of[contribution.delta] = contribution.taps;
          ++uses;
        }
      }
      if (taps_of.empty()) return false;
      const int64_t delta_min = taps_of.begin()->first;
      const int64_t slots = taps_of.rbegin()->first - delta_min + 1;
      if (static_cast<int64_t>(taps_of.size()) != slots || slots - 1 + count >= uses * count) return false;
      const uint64_t needed = vmem_needed + 2ull * static_cast<uint64_t>(slots) * width;
      if (needed > options_.vmem_lines) return false;
      auto slot_vmem = [&](int64_t j) { return in_width + 8 * width + 2 * static_cast<uint32_t>(j) * width; };
      std::vector<bool> has_taps(static_cast<size_t>(slots), false);
      auto fill_slot = [&](int64_t j) -> Status {
        std::vector<Contribution> combination = fixed;
        combination.push_back({0, delta_min + j, taps_of[delta_min + j]});
        TPU_ASSIGN_OR_RETURN(bool selected, emit_selection(window_row_of(combination), slot_vmem(j) + width));
        has_taps[j] = selected;
        if (selected) {
          asm_.Li(a, slot_vmem(j));
          asm_.Emit(isa::Opcode::VOR, {a, index, kZeroReg, width_reg, isa::flag::VOR_SRC2_IMM, 0});
        }
        return OkStatus();
      };
      for (int64_t j = 0; j + 1 < slots; ++j) TPU_RETURN_IF_ERROR(fill_slot(j));
      const int64_t row_step = g.window[d].stride * g.in_steps[d], src_step = g.out_steps[d];
      TPU_RETURN_IF_ERROR(loops.Loop(count, {{r, row_step}, {x, row_step}, {src, src_step}}, [&]() -> Status {
        TPU_RETURN_IF_ERROR(fill_slot(slots - 1));
        for (size_t p = 0; p < per_row.size(); ++p) {
          begin_result_row();
          for (const Contribution& contribution : per_row[p].contributions) {  // window rows ascending
            const int64_t j = contribution.delta - delta_min;
            if (!has_taps[j]) continue;
            std::vector<int64_t> row_taps;
            for (const Contribution& outer : fixed) row_taps.push_back(outer.tap);
            row_taps.push_back(contribution.tap);
            asm_.Li(next_index, slot_vmem(j));
            emit_contributions(row_taps, next_index, slot_vmem(j) + width);
          }
          store_result_row(r_offset + static_cast<int64_t>(p) * g.in_steps[d]);
        }
        asm_.Li(c, 2 * width);
        for (int64_t j = 0; j + 1 < slots; ++j) {
          if (!has_taps[j + 1]) continue;
          asm_.Li(a, slot_vmem(j));
          asm_.Li(b, slot_vmem(j + 1));
          asm_.Emit(isa::Opcode::VOR, {a, b, kZeroReg, c, isa::flag::VOR_SRC2_IMM, 0});
        }
        return OkStatus();
      }));
      return true;
    };

    // Dimensions before col: result rows in blocks of `stride` (one window row per block); the block's
    // rows reach window rows block + delta. Runs of blocks that reach the same taps share one loop.
    std::function<Status(int, int64_t, std::vector<Reach>)> rows = [&](int d, int64_t r_offset,
                                                                       std::vector<Reach> reach) -> Status {
      if (d == g.col) return emit_result_row(r_offset, reach);
      const hlo::WindowDimension& w = g.window[d];
      const int64_t s = w.stride, size = g.in_dims[d];
      const int64_t blocks = (size + s - 1) / s;
      auto block_reach = [&](int64_t block) {
        std::vector<Reach> per_row;
        for (int64_t p = 0; p < s && block * s + p < size; ++p) {
          Reach row;
          for (int64_t k = w.size - 1; k >= 0; --k) {
            const int64_t distance = p + w.padding_low - k;
            if (((distance % s) + s) % s != 0) continue;
            const int64_t delta = distance / s, window_row = block + delta;
            if (window_row < 0 || window_row >= g.out_dims[d]) continue;
            row.contributions.push_back({k, delta, ValidTaps(w, size, window_row)});
          }
          per_row.push_back(row);
        }
        return per_row;
      };
      struct BlockKey {
        std::vector<Reach> rows;
        bool operator==(const BlockKey& o) const {
          if (rows.size() != o.rows.size()) return false;
          for (size_t i = 0; i < rows.size(); ++i) {
            if (!(rows[i].contributions == o.rows[i].contributions)) return false;
          }
          return true;
        }
      };
      const auto runs = Runs<BlockKey>(blocks, [&](int64_t block) { return BlockKey{block_reach(block)}; });
      const int64_t row_step = s * g.in_steps[d], src_step = g.out_steps[d];
      for (const auto& [first, count] : runs) {
        loops.Move(r, first * row_step);
        loops.Move(x, first * row_step);
        loops.Move(src, first * src_step);
        const std::vector<Reach> per_row = block_reach(first);
        bool cached = false;
        if (d + 1 == g.col) {
          TPU_ASSIGN_OR_RETURN(cached, emit_cached_run(reach, per_row, r_offset, d, count));
        }
        auto block = [&]() -> Status {
          for (size_t p = 0; p < per_row.size(); ++p) {
            std::vector<Reach> inner = reach;
            inner.push_back(per_row[p]);
            TPU_RETURN_IF_ERROR(rows(d + 1, r_offset + static_cast<int64_t>(p) * g.in_steps[d], inner));
          }
          return OkStatus();
        };
        if (!cached) {
          TPU_RETURN_IF_ERROR(loops.Loop(count, {{r, row_step}, {x, row_step}, {src, src_step}}, block));
        }
        loops.Move(r, -first * row_step);
        loops.Move(x, -first * row_step);
        loops.Move(src, -first * src_step);
      }
      return OkStatus();
    };
    TPU_RETURN_IF_ERROR(loops.Loop(g.tiles, {{r, 1}, {x, 1}, {src, 1}}, [&]() { return rows(0, 0, {}); }));
  }

  // Padded lanes: init + (+0 or -0) terms; +0 unless the init value is not +0.
  if (MakeDeviceLayout(instruction.shape(), L()).cols % L() != 0 && *init != 0u) {
    asm_.Sync(kSyncAll);
    return ClearPaddedLanes(instruction);
  }
  return OkStatus();
}

void CodeGenerator::AddPoolHandlers(OpcodeHandlerTable& table) {
  // The lowerings check the window and the computations.
  OpcodeHandler reduce_window(HloOpcode::kReduceWindow);
  reduce_window.emit = [](CodeGenerator& g, const HloInstruction& instruction) {
    return g.EmitReduceWindow(instruction);
  };
  table.Add(std::move(reduce_window));

  OpcodeHandler select_and_scatter(HloOpcode::kSelectAndScatter);
  select_and_scatter.emit = [](CodeGenerator& g, const HloInstruction& instruction) {
    return g.EmitSelectAndScatter(instruction);
  };
  table.Add(std::move(select_and_scatter));
}

}  // namespace tpu::compiler::codegen_internal
