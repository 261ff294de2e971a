// Lane relayout: moves columns of device rows to other column positions (other lanes), exactly, for
// any 32-bit element type. A block of LANES rows is gathered tile-major and transposed with VTRANS, so
// that every column becomes one VMEM line (lane i = row i of the block); columns then move as whole
// lines with VOR, the assembled lines are transposed back and stored tile by tile (strided DMA).
#include "compiler/codegen/codegen_internal.h"

#include <numeric>

namespace tpu::compiler::codegen_internal {
namespace {

constexpr size_t kMaxBoxDimensions = 4;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
// floor(a / b) for b > 0 and any a.
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Drops box dimensions of one index and merges a dimension into the next inner one where every piece
// and the output step through them as through one longer dimension (fewer loops and registers).
void SimplifyBox(LaneRelayout* r) {
  auto drop = [&](size_t d) {
    r->counts.erase(r->counts.begin() + d);
    r->dst_steps.erase(r->dst_steps.begin() + d);
    for (auto& piece : r->pieces) piece.src_steps.erase(piece.src_steps.begin() + d);
  };
  for (size_t d = 0; d + 1 < r->counts.size();) {
    if (r->counts[d] == 1) {
      drop(d);
      continue;
    }
    const size_t e = d + 1;
    bool mergeable = r->dst_steps[d] == r->counts[e] * r->dst_steps[e];
    for (const auto& piece : r->pieces) mergeable = mergeable && piece.src_steps[d] == r->counts[e] * piece.src_steps[e];
    if (mergeable) {
      r->counts[e] *= r->counts[d];
      drop(d);
      continue;
    }
    ++d;
  }
}

}  // namespace

// VMEM: the gathered input tiles (G), their transpose (S, one line per input column), the output
// window's columns as lines (T) and its transpose (O, tile-major output rows). Per block of LANES rows
// and per window of output column tiles: T is filled (pad value) or its lines past the last column
// cleared, every piece's input columns are gathered, transposed and moved into T line by line, and T is
// transposed back and stored.
Status CodeGenerator::EmitLaneRelayout(LaneRelayout r, const HloInstruction& instruction) {
  const uint32_t lanes = L();
  if (r.dst_cols <= 0 || r.counts.empty()) return OkStatus();
  for (int64_t count : r.counts) {
    if (count <= 0) return OkStatus();
  }
  SimplifyBox(&r);
  const size_t dims = r.counts.size();
  if (dims > kMaxBoxDimensions) {
    return Unimplemented(instruction.name() + ": moving columns between lanes in rows indexed by " +
                         std::to_string(dims) + " dimensions (at most " + std::to_string(kMaxBoxDimensions) + ")");
  }
  const int64_t out_tiles = CeilDiv(r.dst_cols, lanes);
  asm_.Sync(kSyncDma | kSyncVpu);  // what the instruction emitted before may still use the VMEM

  // Input tiles one instance of `piece` gathers for an output window of `window` tiles.
  auto gather_tiles = [&](const ColumnPiece& piece, int64_t window) -> int64_t {
    if (piece.repeat > 1) return (piece.src_col % lanes + piece.count - 1) / lanes + 1;
    const int64_t columns = std::min(piece.count, CeilDiv(window * lanes, piece.dst_stride));
    return ((columns - 1) * std::abs(piece.src_stride)) / lanes + 2;
  };
  const bool split = r.out_repeat > 1;
  if (split && (r.pieces.size() != 1 || r.pieces[0].repeat > 1 || r.pieces[0].src_stride != 1 ||
                r.pieces[0].dst_stride != 1 || r.pieces[0].dst_col != 0 || r.pieces[0].count != r.dst_cols || r.fill)) {
    return Internal(instruction.name() + ": a repeated relayout takes one piece that writes every column");
  }
  // The widest window whose buffers fit the VMEM (a split: the whole row, and every time's input tiles).
  int64_t window = out_tiles;
  int64_t g_tiles = 1;
  if (split) {
    const ColumnPiece& piece = r.pieces[0];
    g_tiles = (piece.src_col + (r.out_repeat - 1) * r.out_repeat_cols + piece.count - 1) / lanes - piece.src_col / lanes + 1;
    if (uint64_t(2 * g_tiles + 2 * window) * lanes > options_.vmem_lines) {
      return VmemOverflow(instruction, uint64_t(2 * g_tiles + 2 * window) * lanes);
    }
  }
  while (!split) {
    g_tiles = 1;
    for (const ColumnPiece& piece : r.pieces) g_tiles = std::max(g_tiles, gather_tiles(piece, window));
    if (uint64_t(2 * g_tiles + 2 * window) * lanes <= options_.vmem_lines) break;
    if (window == 1) return VmemOverflow(instruction, uint64_t(2 * g_tiles + 2) * lanes);
    window = std::max<int64_t>(1, window / 2);
  }
  const uint32_t g_base = 0, s_base = static_cast<uint32_t>(g_tiles * lanes);
  const uint32_t t_base = 2 * s_base, o_base = t_base + static_cast<uint32_t>(window * lanes);

  std::vector<ScopedReg> index;  // per box dimension: the current index (the innermost: the block's first row)
  for (size_t d = 0; d < dims; ++d) {
    TPU_ASSIGN_OR_RETURN(ScopedReg reg, NewReg());
    index.push_back(std::move(reg));
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg rows, NewReg());

  // out = base + extra + sum(index_d * steps_d).
  auto row_address = [&](Reg out, Location base, int64_t extra, const std::vector<int64_t>& steps) -> Status {
    asm_.LoadAddress(out, base.kind, base.index, static_cast<uint32_t>(base.offset + extra));
    TPU_ASSIGN_OR_RETURN(ScopedReg step, NewReg());
    for (size_t d = 0; d < dims; ++d) {
      if (steps[d] == 0) continue;
      asm_.Li(step, static_cast<uint32_t>(steps[d]));
      asm_.Mul(step, step, index[d]);
      asm_.Add(out, out, step);
    }
    return OkStatus();
  };
  // VOR copies of `n` lines: S line src + k*src_stride to T line dst + k*dst_stride.
  auto move_lines = [&](uint32_t src, uint32_t dst, int64_t n, int64_t src_stride, int64_t dst_stride) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
    asm_.Li(from, src);
    asm_.Li(to, dst);
    if (src_stride == 1 && dst_stride == 1) {
      asm_.Li(count, static_cast<uint32_t>(n));
      asm_.Emit(isa::Opcode::VOR, {to, from, {}, count, isa::flag::VOR_SRC2_IMM, 0});
      return OkStatus();
    }
    TPU_ASSIGN_OR_RETURN(ScopedReg one, NewReg());
    asm_.Li(one, 1);
    asm_.Li(count, static_cast<uint32_t>(n));
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    asm_.Emit(isa::Opcode::VOR, {to, from, {}, one, isa::flag::VOR_SRC2_IMM, 0});
    asm_.Addi(from, from, static_cast<uint32_t>(src_stride));
    asm_.Addi(to, to, static_cast<uint32_t>(dst_stride));
    asm_.Addi(count, count, static_cast<uint32_t>(-1));
    asm_.Bne(count, kZeroReg, loop);
    return OkStatus();
  };
  // VTRANS of `tiles` blocks from VMEM line `source` to `target`.
  auto transpose = [&](uint32_t source, uint32_t target, int64_t tiles) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg blocks, NewReg());
    asm_.Li(from, source);
    asm_.Li(to, target);
    asm_.Li(blocks, static_cast<uint32_t>(tiles));
    asm_.Emit(isa::Opcode::VTRANS, {to, from, {}, blocks, 0, 0});
    return OkStatus();
  };
  // The column lines of a window of `tiles` tiles at VMEM line `window_base` (output columns from
  // win_lo on): the pad value, and +0 from output column valid_hi on (the padded lanes).
  auto prepare_window = [&](uint32_t window_base, int64_t tiles, int64_t win_lo, int64_t valid_hi) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg at, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
    const int64_t win_hi = win_lo + tiles * lanes;
    if (r.fill) {
      asm_.Li(at, window_base);
      asm_.Li(count, static_cast<uint32_t>(tiles * lanes));
      asm_.Vsplat(at, count, *r.fill);
    }
    if (valid_hi < win_hi) {
      asm_.Li(at, static_cast<uint32_t>(window_base + valid_hi - win_lo));
      asm_.Li(count, static_cast<uint32_t>(win_hi - valid_hi));
      asm_.Vsplat(at, count, 0);
    }
    return OkStatus();
  };
  // Gathers `tiles` input tiles of the block's rows from `row` and transposes them into S.
  auto gather_transposed = [&](Reg row, uint32_t src_row_step, int64_t tiles) -> Status {
    {
      TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
      MoveTileMajor(DmaDirection::kToVmem, row, rows, src_row_step, g_base, static_cast<uint32_t>(tiles * lanes),
                    from, to, end);
    }
    asm_.Sync(kSyncDma);
    return transpose(g_base, s_base, tiles);
  };
  // What an instance of a piece reads and writes for its columns k0..k1-1: `tiles` input tiles from
  // `first_tile` on, transposed, column k0 at S line s_line; it lands at output column t_column.
  struct Span {
    int64_t first_tile, tiles, s_line, t_column;
  };
  auto span_of = [&](const ColumnPiece& piece, int64_t dst_col, int64_t k0, int64_t k1) {
    const int64_t c_first = piece.src_col + k0 * piece.src_stride;
    const int64_t c_last = piece.src_col + (k1 - 1) * piece.src_stride;  // below c_first for a negative stride
    Span span;
    span.first_tile = std::min(c_first, c_last) / lanes;
    span.tiles = std::max(c_first, c_last) / lanes - span.first_tile + 1;
    span.s_line = c_first - span.first_tile * lanes;
    span.t_column = dst_col + k0 * piece.dst_stride;
    return span;
  };
  // One instance of a piece, columns k0..k1-1 of it, into the window starting at output column win_lo.
  auto emit_instance = [&](const ColumnPiece& piece, int64_t extra_lines, int64_t dst_col, int64_t k0, int64_t k1,
                           int64_t win_lo) -> Status {
    const Span span = span_of(piece, dst_col, k0, k1);
    TPU_ASSIGN_OR_RETURN(ScopedReg row, NewReg());
    TPU_RETURN_IF_ERROR(row_address(row, piece.src, extra_lines + span.first_tile, piece.src_steps));
    TPU_RETURN_IF_ERROR(gather_transposed(row, static_cast<uint32_t>(piece.src_steps.back()), span.tiles));
    TPU_RETURN_IF_ERROR(move_lines(static_cast<uint32_t>(s_base + span.s_line),
                                   static_cast<uint32_t>(t_base + span.t_column - win_lo), k1 - k0, piece.src_stride,
                                   piece.dst_stride));
    asm_.Sync(kSyncVpu);  // the next gather rewrites G, which VTRANS reads
    return OkStatus();
  };
  // Instances first..last-1 of a repeated piece, each whole inside the window, in a loop.
  auto emit_repeated = [&](const ColumnPiece& piece, int64_t first, int64_t last, int64_t win_lo) -> Status {
    const Span span = span_of(piece, piece.dst_col, 0, piece.count);
    TPU_ASSIGN_OR_RETURN(ScopedReg row, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg dst, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
    TPU_RETURN_IF_ERROR(row_address(row, piece.src, first * piece.repeat_lines + span.first_tile, piece.src_steps));
    asm_.Li(dst, static_cast<uint32_t>(t_base + piece.dst_col + first * piece.repeat_cols - win_lo));
    asm_.Li(remaining, static_cast<uint32_t>(last - first));
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(gather_transposed(row, static_cast<uint32_t>(piece.src_steps.back()), span.tiles));
    {
      TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
      asm_.Li(from, static_cast<uint32_t>(s_base + span.s_line));
      asm_.Li(count, static_cast<uint32_t>(piece.count));
      asm_.Emit(isa::Opcode::VOR, {dst, from, {}, count, isa::flag::VOR_SRC2_IMM, 0});
    }
    asm_.Sync(kSyncVpu);
    asm_.Addi(row, row, static_cast<uint32_t>(piece.repeat_lines));
    asm_.Addi(dst, dst, static_cast<uint32_t>(piece.repeat_cols));
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, loop);
    return OkStatus();
  };
  // Columns k of `piece` (at dst_col) that land in [lo, hi): [k0, k1).
  auto column_range = [](const ColumnPiece& piece, int64_t dst_col, int64_t lo, int64_t hi) {
    const int64_t k0 = std::max<int64_t>(0, -FloorDiv(dst_col - lo, piece.dst_stride));
    const int64_t k1 = std::min(piece.count, FloorDiv(hi - 1 - dst_col, piece.dst_stride) + 1);
    return std::make_pair(k0, k1);
  };

  // A split (one window): every time's input tiles transposed once, then per time a VOR of its columns,
  // the transpose back and the stores, in a loop.
  auto emit_split = [&]() -> Status {
    const ColumnPiece& piece = r.pieces[0];
    const int64_t first_tile = piece.src_col / lanes;
    TPU_ASSIGN_OR_RETURN(ScopedReg column, NewReg());   // S line of the time's first column
    TPU_ASSIGN_OR_RETURN(ScopedReg out_row, NewReg());  // the time's first output row
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
    {
      TPU_ASSIGN_OR_RETURN(ScopedReg row, NewReg());
      TPU_RETURN_IF_ERROR(row_address(row, piece.src, first_tile, piece.src_steps));
      TPU_RETURN_IF_ERROR(gather_transposed(row, static_cast<uint32_t>(piece.src_steps.back()), g_tiles));
    }
    TPU_RETURN_IF_ERROR(row_address(out_row, r.dst, 0, r.dst_steps));
    asm_.Li(column, static_cast<uint32_t>(s_base + piece.src_col - first_tile * lanes));
    asm_.Li(remaining, static_cast<uint32_t>(r.out_repeat));
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
    asm_.Li(to, t_base);
    asm_.Li(end, static_cast<uint32_t>(piece.count));
    asm_.Emit(isa::Opcode::VOR, {to, column, {}, end, isa::flag::VOR_SRC2_IMM, 0});
    asm_.Sync(kSyncDma);  // the previous time's stores read O
    TPU_RETURN_IF_ERROR(transpose(t_base, o_base, out_tiles));
    asm_.Sync(kSyncVpu);
    MoveTileMajor(DmaDirection::kToHbm, out_row, rows, static_cast<uint32_t>(r.dst_steps.back()), o_base,
                  static_cast<uint32_t>(out_tiles * lanes), to, from, end);
    asm_.Addi(column, column, static_cast<uint32_t>(r.out_repeat_cols));
    asm_.Addi(out_row, out_row, static_cast<uint32_t>(r.out_repeat_lines));
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, loop);
    return OkStatus();
  };
  auto emit_block = [&]() -> Status {
    for (int64_t t0 = 0; t0 < out_tiles; t0 += window) {
      const int64_t tiles = std::min(window, out_tiles - t0);
      const int64_t win_lo = t0 * lanes, valid_hi = std::min(r.dst_cols, win_lo + tiles * lanes);
      TPU_RETURN_IF_ERROR(prepare_window(t_base, tiles, win_lo, valid_hi));
      if (split) {
        TPU_RETURN_IF_ERROR(emit_split());
        continue;
      }
      for (const ColumnPiece& piece : r.pieces) {
        if (piece.repeat <= 1) {
          const auto [k0, k1] = column_range(piece, piece.dst_col, win_lo, valid_hi);
          if (k0 < k1) TPU_RETURN_IF_ERROR(emit_instance(piece, 0, piece.dst_col, k0, k1, win_lo));
          continue;
        }
        // Whole instances in a loop, the ones cut by the window's edges on their own.
        int64_t whole_first = -1, whole_last = -1;
        for (int64_t i = 0; i < piece.repeat; ++i) {
          const int64_t dst_col = piece.dst_col + i * piece.repeat_cols;
          const auto [k0, k1] = column_range(piece, dst_col, win_lo, valid_hi);
          if (k0 >= k1) continue;
          if (k0 == 0 && k1 == piece.count) {
            if (whole_first < 0) whole_first = i;
            whole_last = i + 1;
            continue;
          }
          TPU_RETURN_IF_ERROR(emit_instance(piece, i * piece.repeat_lines, dst_col, k0, k1, win_lo));
        }
        if (whole_last - whole_first == 1) {
          TPU_RETURN_IF_ERROR(emit_instance(piece, whole_first * piece.repeat_lines,
                                            piece.dst_col + whole_first * piece.repeat_cols, 0, piece.count, win_lo));
        } else if (whole_first >= 0) {
          TPU_RETURN_IF_ERROR(emit_repeated(piece, whole_first, whole_last, win_lo));
        }
      }
      // Transpose the window back and store it.
      asm_.Sync(kSyncDma);  // the previous window's stores read O
      TPU_RETURN_IF_ERROR(transpose(t_base, o_base, tiles));
      asm_.Sync(kSyncVpu);
      TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg out_row, NewReg());
      TPU_RETURN_IF_ERROR(row_address(out_row, r.dst, t0, r.dst_steps));
      MoveTileMajor(DmaDirection::kToHbm, out_row, rows, static_cast<uint32_t>(r.dst_steps.back()), o_base,
                    static_cast<uint32_t>(tiles * lanes), to, from, end);
    }
    return OkStatus();
  };

  // Software pipeline for one window and plain pieces over many rows: while the VPU transposes and
  // moves block j, the DMA stores block j-1 and gathers block j+1 (gathered tiles and transposed
  // output double-buffered). Iteration j handles the three blocks with row counts `prev`, (cur), `next`
  // (0 outside the box: those DMAs do nothing); the iterations run in pairs, one per buffer.
  struct PipelinedPiece {
    const ColumnPiece* piece;
    Span span;
    int64_t count;
    uint32_t g[2];  // the two gather buffers
  };
  std::vector<PipelinedPiece> staged;
  uint32_t p_s = 0, p_t = 0, p_o[2] = {0, 0};
  const bool pipelined = [&] {
    // Without pipelined dots (the compile retry for a program that overflows the IMEM) the relayouts
    // go without their pipeline too: less code.
    if (split || r.compact || !pipelined_dots_ || window != out_tiles || r.counts.back() < 4 * int64_t{lanes}) {
      return false;
    }
    uint32_t next = 0;
    int64_t s_tiles = 1;
    for (const ColumnPiece& piece : r.pieces) {
      if (piece.repeat > 1) return false;
      const auto [k0, k1] = column_range(piece, piece.dst_col, 0, r.dst_cols);
      if (k0 >= k1) continue;
      PipelinedPiece stage;
      stage.piece = &piece;
      stage.span = span_of(piece, piece.dst_col, k0, k1);
      stage.count = k1 - k0;
      for (uint32_t& g : stage.g) {
        g = next;
        next += static_cast<uint32_t>(stage.span.tiles * lanes);
      }
      s_tiles = std::max(s_tiles, stage.span.tiles);
      staged.push_back(stage);
      if (staged.size() > 4) return false;  // code size
    }
    p_s = next;
    p_t = p_s + static_cast<uint32_t>(s_tiles * lanes);
    p_o[0] = p_t + static_cast<uint32_t>(out_tiles * lanes);
    p_o[1] = p_o[0] + static_cast<uint32_t>(out_tiles * lanes);
    return uint64_t{p_o[1]} + out_tiles * lanes <= options_.vmem_lines;
  }();
  auto emit_pipelined_rows = [&](size_t d) -> Status {
    const int64_t count = r.counts[d];
    const int64_t step_out = r.dst_steps.back();
    TPU_ASSIGN_OR_RETURN(ScopedReg prev, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg cur, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg next, NewReg());
    // out = rows of the block `ahead` rows after index: min(LANES, max(0, count - index - ahead)).
    auto block_rows = [&](Reg out, int64_t ahead) -> Status {
      TPU_ASSIGN_OR_RETURN(ScopedReg limit, NewReg());
      Assembler::Label none = asm_.NewLabel(), done = asm_.NewLabel();
      asm_.Li(out, static_cast<uint32_t>(count - ahead));
      asm_.Sub(out, out, index[d]);
      asm_.Blt(out, kZeroReg, none);
      asm_.Li(limit, lanes);
      asm_.Blt(out, limit, done);
      asm_.Li(out, lanes);
      asm_.Jmp(done);
      asm_.Bind(none);
      asm_.Li(out, 0);
      asm_.Bind(done);
      return OkStatus();
    };
    auto gather = [&](int buffer) -> Status {  // the block after index, `next` rows
      for (const PipelinedPiece& stage : staged) {
        TPU_ASSIGN_OR_RETURN(ScopedReg row, NewReg());
        TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
        TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
        TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
        const int64_t step = stage.piece->src_steps.back();
        TPU_RETURN_IF_ERROR(row_address(row, stage.piece->src, stage.span.first_tile, stage.piece->src_steps));
        asm_.Addi(row, row, static_cast<uint32_t>(lanes * step));  // block j+1
        MoveTileMajor(DmaDirection::kToVmem, row, next, static_cast<uint32_t>(step), stage.g[buffer],
                      static_cast<uint32_t>(stage.span.tiles * lanes), from, to, end);
      }
      return OkStatus();
    };
    auto iteration = [&](int buffer) -> Status {
      asm_.Sync(kSyncDma | kSyncVpu);  // block j gathered, block j-2 stored, block j-1 transposed
      if (r.fill) TPU_RETURN_IF_ERROR(prepare_window(p_t, out_tiles, 0, r.dst_cols));
      for (const PipelinedPiece& stage : staged) {
        TPU_RETURN_IF_ERROR(transpose(stage.g[buffer], p_s, stage.span.tiles));
        TPU_RETURN_IF_ERROR(move_lines(static_cast<uint32_t>(p_s + stage.span.s_line),
                                       static_cast<uint32_t>(p_t + stage.span.t_column), stage.count,
                                       stage.piece->src_stride, stage.piece->dst_stride));
      }
      TPU_RETURN_IF_ERROR(transpose(p_t, p_o[buffer], out_tiles));
      {
        TPU_ASSIGN_OR_RETURN(ScopedReg out_row, NewReg());
        TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
        TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
        TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
        TPU_RETURN_IF_ERROR(row_address(out_row, r.dst, 0, r.dst_steps));
        asm_.Addi(out_row, out_row, static_cast<uint32_t>(-int64_t{lanes} * step_out));  // block j-1
        MoveTileMajor(DmaDirection::kToHbm, out_row, prev, static_cast<uint32_t>(step_out), p_o[1 - buffer],
                      static_cast<uint32_t>(out_tiles * lanes), to, from, end);
      }
      TPU_RETURN_IF_ERROR(gather(1 - buffer));
      asm_.Addi(index[d], index[d], lanes);
      asm_.Addi(prev, cur, 0);
      asm_.Addi(cur, next, 0);
      return block_rows(next, lanes);
    };
    asm_.Li(index[d], 0);
    if (!r.fill) TPU_RETURN_IF_ERROR(prepare_window(p_t, out_tiles, 0, r.dst_cols));  // once: never overwritten
    asm_.Li(prev, 0);
    TPU_RETURN_IF_ERROR(block_rows(cur, 0));
    // Block 0 is gathered as iteration -1 would gather it.
    asm_.Addi(next, cur, 0);
    asm_.Addi(index[d], index[d], static_cast<uint32_t>(-int64_t{lanes}));
    TPU_RETURN_IF_ERROR(gather(0));
    asm_.Addi(index[d], index[d], lanes);
    TPU_RETURN_IF_ERROR(block_rows(next, lanes));
    const int64_t blocks = CeilDiv(count, lanes);
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
    asm_.Li(remaining, static_cast<uint32_t>((blocks + 2) / 2));  // iterations 0..blocks, in pairs
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(iteration(0));
    TPU_RETURN_IF_ERROR(iteration(1));
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, loop);
    asm_.Sync(kSyncDma | kSyncVpu);
    return OkStatus();
  };

  // Rows: outer box dimensions in loops, the innermost in blocks of LANES rows.
  std::function<Status(size_t)> level = [&](size_t d) -> Status {
    const uint32_t count = static_cast<uint32_t>(r.counts[d]);
    asm_.Li(index[d], 0);
    if (d + 1 < dims) {
      if (count == 1) return level(d + 1);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      TPU_RETURN_IF_ERROR(level(d + 1));
      TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
      asm_.Addi(index[d], index[d], 1);
      asm_.Li(end, count);
      asm_.Bne(index[d], end, loop);
      return OkStatus();
    }
    if (pipelined) return emit_pipelined_rows(d);
    if (count <= lanes) {
      asm_.Li(rows, count);
      return emit_block();
    }
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    {
      // rows = min(LANES, count - index)
      TPU_ASSIGN_OR_RETURN(ScopedReg limit, NewReg());
      Assembler::Label partial = asm_.NewLabel();
      asm_.Li(rows, count);
      asm_.Sub(rows, rows, index[d]);
      asm_.Li(limit, lanes);
      asm_.Blt(rows, limit, partial);
      asm_.Li(rows, lanes);
      asm_.Bind(partial);
    }
    TPU_RETURN_IF_ERROR(emit_block());
    TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
    asm_.Addi(index[d], index[d], lanes);
    asm_.Li(end, static_cast<uint32_t>(CeilDiv(count, lanes) * lanes));
    asm_.Bne(index[d], end, loop);
    return OkStatus();
  };
  TPU_RETURN_IF_ERROR(level(0));
  asm_.Sync(kSyncDma);
  return OkStatus();
}

// A reshape between [R, C] and [R', C'] row layouts (C, C' the minor dimensions, the rows every other
// dimension): with g = lcm(C, C'), every g elements hold k1 = g/C whole operand rows and k2 = g/C'
// whole result rows. Result rows m, m + k2, m + 2*k2, ... form one relayout box (one row per group of g
// elements) whose pieces are the operand rows of the group that overlap result row m. When result rows
// are whole groups (k2 = 1), their k1 pieces are one repeated piece, and when operand rows are (k1 = 1),
// the k2 boxes are one repeated relayout: loops in the code. [N,1] <-> [N] go through a transpose before
// (prepare.h), which moves a column far faster than relayouts of single-column rows would.
Status CodeGenerator::EmitReshape(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  const DeviceLayout in = MakeDeviceLayout(operand.shape(), L());
  const DeviceLayout out = MakeDeviceLayout(instruction.shape(), L());
  const int64_t cols = in.cols, out_cols = out.cols;
  if (in.rows * cols == 0) return OkStatus();
  const int64_t group = std::lcm(cols, out_cols);
  const int64_t k1 = group / cols, k2 = group / out_cols, groups = in.rows * cols / group;
  const int64_t in_tiles = in.column_tiles(L()), out_tiles = out.column_tiles(L());
  const Location source = locations_.at(BufferOf(&operand));
  // A relayout box of `rows` result rows of `row_cols` columns, `row_step` lines apart from result line
  // `first_line` on.
  auto result_rows = [&](uint32_t first_line, int64_t rows, int64_t row_step, int64_t row_cols) {
    LaneRelayout relayout;
    relayout.dst = locations_.at(BufferOf(&instruction));
    relayout.dst.offset += first_line;
    relayout.counts = {rows};
    relayout.dst_steps = {row_step};
    relayout.dst_cols = row_cols;
    return relayout;
  };
  // Operand rows merged into whole result rows, `rows` result rows of `row_cols` columns from result line
  // `first_line` on: one repeated piece.
  auto merge = [&](int64_t first_row, int64_t rows, int64_t row_cols, int64_t row_tiles, uint32_t first_line) {
    LaneRelayout relayout = result_rows(first_line, rows, row_tiles, row_cols);
    ColumnPiece piece;
    piece.src = source;
    piece.src.offset += static_cast<uint32_t>(first_row * in_tiles);
    piece.src_steps = {row_cols / cols * in_tiles};
    piece.count = cols;
    piece.repeat = row_cols / cols;
    piece.repeat_lines = in_tiles;
    piece.repeat_cols = cols;
    relayout.pieces.push_back(piece);
    return EmitLaneRelayout(relayout, instruction);
  };
  // Operand rows of `row_cols` columns (from operand line `first_line` on, `row_tiles` lines each) split
  // into whole result rows from result row `first_row` on: one relayout repeated in a code loop; false
  // when a row does not fit the VMEM.
  auto split = [&](uint32_t first_line, int64_t rows, int64_t row_cols, int64_t row_tiles,
                   int64_t first_row) -> StatusOr<bool> {
    if (uint64_t(2 * row_tiles + 2 * out_tiles) * L() > options_.vmem_lines) return false;
    const int64_t parts = row_cols / out_cols;
    LaneRelayout relayout =
        result_rows(static_cast<uint32_t>(first_row * out_tiles), rows, parts * out_tiles, out_cols);
    relayout.out_repeat = parts;
    relayout.out_repeat_lines = out_tiles;
    relayout.out_repeat_cols = out_cols;
    ColumnPiece piece;
    piece.src = source;
    piece.src.offset += first_line;
    piece.src_steps = {row_tiles};
    piece.count = out_cols;
    relayout.pieces.push_back(piece);
    TPU_RETURN_IF_ERROR(EmitLaneRelayout(relayout, instruction));
    return true;
  };
  // Fewer rows than lanes on the side of the long rows leave lanes idle. Rows of whole lines, or a single
  // row, are also rows of h = lcm(short row, LANES) elements in the same lines (a single row's last
  // elements past a multiple of h go on their own).
  const int64_t elements = in.rows * cols;
  if (k2 == 1) {
    const int64_t dense = std::lcm(cols, int64_t{L()});
    if (groups < L() && dense < out_cols && (out_cols % L() == 0 || out.rows == 1)) {
      const int64_t dense_rows = elements / dense, rest = elements - dense_rows * dense;
      TPU_RETURN_IF_ERROR(merge(0, dense_rows, dense, dense / L(), 0));
      if (rest == 0) return OkStatus();
      return merge(dense_rows * dense / cols, 1, rest, CeilDiv(rest, L()), static_cast<uint32_t>(dense_rows * dense / L()));
    }
    return merge(0, groups, out_cols, out_tiles, 0);
  }
  if (k1 == 1) {
    const int64_t dense = std::lcm(out_cols, int64_t{L()});
    if (groups < L() && dense < cols && (cols % L() == 0 || in.rows == 1)) {
      const int64_t dense_rows = elements / dense, rest = elements - dense_rows * dense;
      TPU_ASSIGN_OR_RETURN(bool done, split(0, dense_rows, dense, dense / L(), 0));
      if (done && rest > 0) {
        TPU_ASSIGN_OR_RETURN(done, split(static_cast<uint32_t>(dense_rows * dense / L()), 1, rest, CeilDiv(rest, L()),
                                         dense_rows * dense / out_cols));
      }
      if (done) return OkStatus();
    } else {
      TPU_ASSIGN_OR_RETURN(bool done, split(0, groups, cols, in_tiles, 0));
      if (done) return OkStatus();
    }
  }
  constexpr int64_t kMaxPieces = 32;  // each piece is code of its own
  if (k1 + k2 > kMaxPieces) {
    return Unimplemented("reshape " + instruction.name() + " from " + operand.shape().ToString() + " to " +
                         instruction.shape().ToString() + ": rows of " + std::to_string(cols) + " and " +
                         std::to_string(out_cols) + " elements meet only every " + std::to_string(group) +
                         " elements (at most " + std::to_string(kMaxPieces) + " row pieces)");
  }
  for (int64_t m = 0; m < k2; ++m) {
    LaneRelayout relayout = result_rows(static_cast<uint32_t>(m * out_tiles), groups, k2 * out_tiles, out_cols);
    relayout.compact = true;  // one of k2 relayouts
    ColumnPiece piece;
    piece.src_steps = {k1 * in_tiles};
    const int64_t lo = m * out_cols, hi = lo + out_cols;  // the result row's elements in the group
    for (int64_t j = lo / cols; j * cols < hi; ++j) {
      const int64_t first = std::max(lo, j * cols), last = std::min(hi, (j + 1) * cols);
      piece.src = source;
      piece.src.offset += static_cast<uint32_t>(j * in_tiles);
      piece.src_col = first - j * cols;
      piece.dst_col = first - lo;
      piece.count = last - first;
      relayout.pieces.push_back(piece);
    }
    TPU_RETURN_IF_ERROR(EmitLaneRelayout(relayout, instruction));
  }
  return OkStatus();
}

void CodeGenerator::AddRelayoutHandlers(OpcodeHandlerTable& table) {
  // A reshape or bitcast that keeps every element in its line and lane is its operand's buffer; the
  // others are lane relayouts (EmitReshape).
  for (HloOpcode opcode : {HloOpcode::kReshape, HloOpcode::kBitcast}) {
    OpcodeHandler reshape(opcode);
    reshape.types = ElementTypes::kDeviceWord;
    // A bitcast may change the element count (the verifier allows it, as XLA does for layouts); this code
    // generator moves elements, so it takes only the bitcasts that are reshapes.
    reshape.check = [](const HloInstruction& instruction) -> Status {
      const hlo::Shape& from = instruction.operand(0)->shape();
      if (from.ElementCount() != instruction.shape().ElementCount()) {
        return Unimplemented(std::string(instruction.opcode_name()) + " " + instruction.name() + " from " +
                             from.ToString() + " to " + instruction.shape().ToString() +
                             " changes the element count: only bitcasts that are reshapes are supported");
      }
      return OkStatus();
    };
    reshape.same_buffer_as = [](const HloInstruction& instruction, uint32_t lanes) -> const HloInstruction* {
      return KeepsDeviceLayout(instruction, lanes) ? instruction.operand(0) : nullptr;
    };
    reshape.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitReshape(instruction); };
    table.Add(std::move(reshape));
  }
}

}  // namespace tpu::compiler::codegen_internal
