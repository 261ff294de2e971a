// Dots on the MXU: a software pipeline (EmitDotPipelined) where the shape allows it, otherwise one
// weight tile at a time with a SYNC around every hand-over (EmitDotSerial).
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

DotGeometry::DotGeometry(const HloInstruction& dot, uint32_t lanes_in) : lanes(lanes_in) {
  const hlo::DotDimensionNumbers& dnums = dot.dot_dimension_numbers();
  const HloInstruction* lhs = dot.operand(0);
  const HloInstruction* rhs = dot.operand(1);
  transposed = dnums.rhs_contracting_dimensions[0] == 1;
  M = lhs->shape().dimensions[0];
  K = lhs->shape().dimensions[1];
  N = transposed ? rhs->shape().dimensions[0] : rhs->shape().dimensions[1];
  k_tiles = static_cast<uint32_t>((K + lanes - 1) / lanes);
  n_tiles = static_cast<uint32_t>((N + lanes - 1) / lanes);
  k_rest = static_cast<uint32_t>(K % lanes);
  n_rest = static_cast<uint32_t>(N % lanes);
  rhs_row_lines = transposed ? k_tiles : n_tiles;
  partial_k = !transposed && k_rest != 0;
  partial_n = transposed && n_rest != 0;
  kt_step = transposed ? 1 : lanes * rhs_row_lines;
  nt_step = transposed ? lanes * rhs_row_lines : 1;
}

uint32_t DotGeometry::WeightRows(uint32_t k, uint32_t n) const {
  if (partial_k && k == k_tiles - 1) return k_rest;
  if (partial_n && n == n_tiles - 1) return n_rest;
  return lanes;
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
  const DotGeometry g(instruction, L());

  DotPaddingReport report;
  report.name = instruction.name();
  report.m = g.M;
  report.k = g.K;
  report.n = g.N;
  report.logical_macs = static_cast<uint64_t>(g.M * g.K * g.N);
  report.padded_macs = static_cast<uint64_t>(g.M) * g.k_tiles * g.lanes * g.n_tiles * g.lanes;
  dots_.push_back(report);
  program_.mxu_macs += report.padded_macs;
  program_.logical_macs += report.logical_macs;
  if (g.M == 0 || g.N == 0) return OkStatus();
  if (g.K == 0) {
    return Unimplemented("dot " + instruction.name() + " with an empty contracting dimension");
  }
  TPU_ASSIGN_OR_RETURN(bool pipelined, EmitDotPipelined(instruction, g));
  if (!pipelined) TPU_RETURN_IF_ERROR(EmitDotSerial(instruction, g));
  if (instruction.shape().element_type == hlo::PrimitiveType::BF16) {
    // The MXU accumulates in f32; a bf16 result is rounded (RNE) in place afterwards. MXU results are
    // never subnormal and their NaNs are canonical, which the integer rounding needs.
    asm_.Sync(kSyncAll);
    return EmitBf16Rounding(&instruction, instruction, /*canonicalize=*/false);
  }
  return OkStatus();
}

// One weight tile at a time: load it, SYNC on the DMA, push it into the MXU, stream the lhs slice; the
// accumulator of an N tile is stored after a SYNC on the MXU.
Status CodeGenerator::EmitDotSerial(const HloInstruction& instruction, const DotGeometry& g) {
  const HloInstruction* lhs = instruction.operand(0);
  const HloInstruction* rhs = instruction.operand(1);
  const bool transposed = g.transposed;
  const int64_t M = g.M;
  const uint32_t lanes = g.lanes, k_tiles = g.k_tiles, n_tiles = g.n_tiles, k_rest = g.k_rest, n_rest = g.n_rest;
  // VMEM: two weight buffers, a buffer for the partial last K tile whose missing rows stay zero, the
  // accumulator (one line per row) and the lhs (one slice of rows per K tile, slice t at t*rows).
  const uint32_t weight0 = 0, weight1 = lanes, weight_last = 2 * lanes, acc = 3 * lanes;
  if (options_.vmem_lines <= acc + k_tiles) return VmemOverflow(instruction, acc + k_tiles + 1);
  const uint32_t max_rows = (options_.vmem_lines - acc) / (k_tiles + 1);
  const uint32_t rows_per_chunk = static_cast<uint32_t>(std::min<int64_t>(M, max_rows));
  const uint32_t lhs_tiles = k_tiles;                  // lines per lhs row
  const uint32_t out_tiles = n_tiles;                  // lines per output row
  const uint32_t rhs_row_lines = g.rhs_row_lines;
  const bool partial_k = g.partial_k;                  // last K tile has fewer than LANES weight rows
  const bool partial_n = g.partial_n;                  // last N tile has fewer than LANES weight rows

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

  const uint32_t kt_step = g.kt_step;  // HBM lines from tile k to k+1
  const uint32_t nt_step = g.nt_step;  // HBM lines from tile n to n+1

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


// The software pipeline. Rows are processed in chunks whose lhs (one VMEM slice of `rows` lines per K
// tile) stays in VMEM; a chunk runs its (K tile, N tile) steps on the MXU back to back:
//
//   step s:  MXU_MM  lhs slice k -> accumulator of n, SWAP (weights of step s), ACC unless k = 0
//            SYNC DMA; MXU_LW weight tile s+1 (fetched a step earlier; loaded while MXU_MM s streams)
//            DMA_LD  weight tile s+2 into the buffer tile s came from
//            and, beside the multiply: the next lhs slice (first N tiles) or the store of a finished
//            accumulator (one per step).
//
// The first group of N tiles (two when there are at least three K tiles) runs its K tiles in the
// outer loop so that each lhs slice is loaded while two multiplies run; the other N tiles run one at a
// time. Accumulators are double-buffered per group: the tiles of group g are stored during the first
// steps of group g+1, without a SYNC on the MXU: once an MXU_MM of at least 2*LANES+2 rows has streamed
// after a multiply and the next one issued, that multiply's results are written (sync_checker.h). The
// last group of a chunk is stored after a SYNC on the MXU. Between chunks the units drain.
StatusOr<bool> CodeGenerator::EmitDotPipelined(const HloInstruction& instruction, const DotGeometry& g) {
  const uint32_t lanes = g.lanes, KT = g.k_tiles, NT = g.n_tiles;
  const uint32_t min_rows = 2 * lanes + 2;  // the result latency the store hand-over relies on
  if (!pipelined_dots_ || KT < 2 || g.M < min_rows) return false;
  const uint32_t first_group = (NT >= 2 && KT >= 3) ? 2 : 1;
  // VMEM: full weight buffers [0, 2L), partial ones [2L, 4L), the lhs slices, two accumulator sets.
  const uint32_t weights = 0, partial_weights = 2 * lanes, lhs_base = 4 * lanes;
  if (options_.vmem_lines <= lhs_base) return false;
  const uint64_t max_rows = (options_.vmem_lines - lhs_base) / (KT + 2 * first_group);
  if (max_rows < min_rows) return false;
  const uint64_t chunks = (static_cast<uint64_t>(g.M) + max_rows - 1) / max_rows;
  const uint32_t R = static_cast<uint32_t>((static_cast<uint64_t>(g.M) + chunks - 1) / chunks);
  const uint32_t last_rows = static_cast<uint32_t>(g.M - (chunks - 1) * R);
  if (last_rows < min_rows) return false;
  const uint32_t acc0 = lhs_base + KT * R, acc1 = acc0 + first_group * R;

  const HloInstruction* lhs = instruction.operand(0);
  const HloInstruction* rhs = instruction.operand(1);
  const bool partial = g.partial_k || g.partial_n;
  const uint32_t rest = g.partial_k ? g.k_rest : g.n_rest;
  if (partial) {
    // Weight rows past K (or N) of a partial tile must be zero, not stale data (0 * NaN is NaN), and
    // rows past N become output columns past N. The DMA fills only the first `rest` lines of the
    // partial buffers, so their tails are cleared once here.
    TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
    asm_.Li(count, lanes - rest);
    for (uint32_t b = 0; b < 2; ++b) {
      asm_.Li(from, partial_weights + b * lanes + rest);
      asm_.Vsplat(from, count, 0);
    }
    asm_.Sync(kSyncVpu);
  }

  // The chunk's steps in order: (K tile, N tile) of each multiply, group by group.
  struct Tile {
    uint32_t k, n;
  };
  std::vector<Tile> tiles;
  std::vector<std::pair<uint32_t, uint32_t>> groups;  // (first N tile, tiles) per group
  groups.push_back({0, first_group});
  for (uint32_t n = first_group; n < NT; ++n) groups.push_back({n, 1});
  for (const auto& [n0, G] : groups) {
    for (uint32_t k = 0; k < KT; ++k) {
      for (uint32_t i = 0; i < G; ++i) tiles.push_back({k, n0 + i});
    }
  }
  auto offset = [&](size_t p) -> int64_t {  // HBM lines of step p's weight tile from the rhs base
    return p < tiles.size() ? int64_t{tiles[p].k} * g.kt_step + int64_t{tiles[p].n} * g.nt_step : 0;
  };
  auto weight_rows = [&](size_t p) { return p < tiles.size() ? g.WeightRows(tiles[p].k, tiles[p].n) : lanes; };

  for (uint64_t chunk = 0; chunk < chunks; ++chunk) {
    const uint32_t m0 = static_cast<uint32_t>(chunk * R);
    const uint32_t rows = chunk + 1 == chunks ? last_rows : R;
    TPU_ASSIGN_OR_RETURN(ScopedReg rows_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg lane_count, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg wbuf, NewReg());       // weight buffer of the next MXU_LW
    TPU_ASSIGN_OR_RETURN(ScopedReg wsum, NewReg());       // sum of the two buffer addresses (to toggle)
    TPU_ASSIGN_OR_RETURN(ScopedReg w_hbm, NewReg());      // HBM line of the next weight tile to load
    TPU_ASSIGN_OR_RETURN(ScopedReg lhs_slice, NewReg());  // lhs slice of the current K tile
    TPU_ASSIGN_OR_RETURN(ScopedReg acc_cur, NewReg());    // accumulator set of the current group
    TPU_ASSIGN_OR_RETURN(ScopedReg acc_sum, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg store_hbm, NewReg());  // output column of the next store
    TPU_ASSIGN_OR_RETURN(ScopedReg tmp, NewReg());
    ScopedReg rest_count;
    if (partial) {
      TPU_ASSIGN_OR_RETURN(rest_count, NewReg());
      asm_.Li(rest_count, rest);
    }
    asm_.Li(rows_reg, rows);
    asm_.Li(lane_count, lanes);
    asm_.Li(wbuf, weights);
    asm_.Li(wsum, 2 * weights + lanes);
    asm_.Li(acc_sum, acc0 + acc1);
    asm_.Li(acc_cur, acc1);  // every group starts by switching sets
    LoadAddress(w_hbm, rhs, 0);
    LoadAddress(store_hbm, &instruction, m0 * NT);

    // Weight tile t goes to buffer t % 2 (the partial twin for a partial tile). At step p the MXU loads
    // tile p+1 (loaded two steps earlier, so a DMA round trip never sits between two multiplies) and the
    // DMA fetches tile p+2 into the buffer tile p was loaded from: the MXU accepted multiply p, so that
    // load is complete.
    auto buffer_of = [&](size_t t, Reg base) -> Reg {  // `base` holds buffer t % 2's full address
      if (weight_rows(t) == lanes) return base;
      asm_.Addi(tmp, base, partial_weights - weights);
      return tmp;
    };
    auto fetch = [&](size_t t, Reg base) {  // DMA tile t (w_hbm points at it), then advance w_hbm
      if (t >= tiles.size()) return;
      const bool full = weight_rows(t) == lanes;
      asm_.DmaLoad(w_hbm, buffer_of(t, base), full ? lane_count.get() : rest_count.get(), g.rhs_row_lines);
      if (t + 1 < tiles.size()) asm_.Addi(w_hbm, w_hbm, static_cast<uint32_t>(offset(t + 1) - offset(t)));
    };
    auto load_next = [&](size_t p) {  // step p's weight work (after its MXU_MM)
      asm_.Sync(kSyncDma);
      if (p + 1 < tiles.size()) asm_.MxuLoadWeights(buffer_of(p + 1, wbuf), g.transposed);
      asm_.Sub(wbuf, wsum, wbuf);
      fetch(p + 2, wbuf);
    };
    // Stores accumulator `index` of a group's set (the other set unless `current`) to the next column.
    auto store = [&](uint32_t index, bool current) {
      if (current) {
        asm_.Addi(tmp, acc_cur, index * R);
      } else {
        asm_.Sub(tmp, acc_sum, acc_cur);
        if (index != 0) asm_.Addi(tmp, tmp, index * R);
      }
      asm_.DmaStore(store_hbm, tmp, rows_reg, NT);
      asm_.Addi(store_hbm, store_hbm, 1);
    };

    // Prologue: lhs slice 0 (all slices when the first group is a single tile) and weight tiles 0 and 1;
    // the MXU loads tile 0.
    {
      TPU_ASSIGN_OR_RETURN(ScopedReg src, NewReg());
      TPU_ASSIGN_OR_RETURN(ScopedReg dst, NewReg());
      LoadAddress(src, lhs, m0 * KT);
      asm_.Li(dst, lhs_base);
      const uint32_t slices = first_group == 2 ? 1 : KT;
      for (uint32_t t = 0; t < slices; ++t) {
        asm_.DmaLoad(src, dst, rows_reg, KT);
        if (t + 1 < slices) {
          asm_.Addi(src, src, 1);
          asm_.Addi(dst, dst, R);
        }
      }
      fetch(0, wbuf);
      asm_.Sub(dst, wsum, wbuf);
      fetch(1, dst);
      asm_.Sync(kSyncDma);
      asm_.MxuLoadWeights(buffer_of(0, wbuf), g.transposed);
      asm_.Sub(wbuf, wsum, wbuf);
    }

    // One group: `base` is the step of its first multiply, `stores` accumulators of the previous group
    // to store. A looped group is emitted once for its first instance; the instances must be alike.
    auto emit_group = [&](size_t base, uint32_t G, uint32_t stores, bool load_slices) -> Status {
      asm_.Sub(acc_cur, acc_sum, acc_cur);
      asm_.Li(lhs_slice, lhs_base);
      ScopedReg slice_src, slice_dst;
      if (load_slices) {
        TPU_ASSIGN_OR_RETURN(slice_src, NewReg());
        TPU_ASSIGN_OR_RETURN(slice_dst, NewReg());
        LoadAddress(slice_src, lhs, m0 * KT + 1);
        asm_.Li(slice_dst, lhs_base + R);
      }
      // The G multiplies of K tile k and what runs beside them.
      auto k_step = [&](uint32_t k) {
        for (uint32_t i = 0; i < G; ++i) {
          Reg acc = acc_cur;
          if (i != 0) {
            asm_.Addi(tmp, acc_cur, i * R);
            acc = tmp;
          }
          asm_.MxuMatmul(lhs_slice, acc, rows_reg, /*accumulate=*/k != 0, /*swap=*/true);
          load_next(base + size_t{k} * G + i);
          if (i == 0 && load_slices && k + 1 < KT) {
            asm_.DmaLoad(slice_src, slice_dst, rows_reg, KT);
            asm_.Addi(slice_src, slice_src, 1);
            asm_.Addi(slice_dst, slice_dst, R);
          }
          if (i == 0 && k >= 1 && k - 1 < stores) store(k - 1, /*current=*/false);
        }
        asm_.Addi(lhs_slice, lhs_slice, R);
      };
      // Steps with their own work come first; the uniform middle ones loop; the last three steps are
      // unrolled (the tiles they load may be a partial K tile or the next group's).
      const uint32_t first_uniform = std::min(KT, 1 + stores);
      for (uint32_t k = 0; k < first_uniform; ++k) k_step(k);
      const uint32_t tail_k = (3 + G - 1) / G;  // K tiles that hold the group's last three steps
      const uint32_t tail_start = std::max(first_uniform, KT > tail_k ? KT - tail_k : 0);
      if (tail_start > first_uniform + 1) {
        TPU_ASSIGN_OR_RETURN(ScopedReg end, NewReg());
        asm_.Li(end, lhs_base + tail_start * R);
        Assembler::Label loop = asm_.NewLabel();
        asm_.Bind(loop);
        k_step(first_uniform);
        asm_.Bne(lhs_slice, end, loop);
      } else {
        for (uint32_t k = first_uniform; k < tail_start; ++k) k_step(k);
      }
      for (uint32_t k = tail_start; k < KT; ++k) k_step(k);
      // A store issued in the last step has no SYNC on the DMA behind it before the next group's first
      // multiply overwrites the accumulator set it reads.
      if (stores != 0 && stores + 1 >= KT) asm_.Sync(kSyncDma);
      return OkStatus();
    };
    TPU_RETURN_IF_ERROR(emit_group(0, first_group, 0, first_group == 2));
    uint32_t pending = first_group;  // accumulators of the previous group still to store
    uint32_t n = first_group;
    auto step_of = [&](uint32_t tile) { return size_t{first_group} * KT + size_t{tile - first_group} * KT; };
    auto single = [&](uint32_t tile) -> Status {
      TPU_RETURN_IF_ERROR(emit_group(step_of(tile), 1, pending, false));
      pending = 1;
      return OkStatus();
    };
    // Single tiles: the one after a two-tile first group (it stores two accumulators), a loop over the
    // uniform ones, then the last three alone (the tiles their last steps load may be the partial last
    // N tile, or none).
    if (n < NT && pending != 1) TPU_RETURN_IF_ERROR(single(n++));
    const uint32_t uniform_end = NT >= 3 ? NT - 3 : 0;  // tiles [n, NT-3) are alike
    if (uniform_end > n + 1) {
      TPU_ASSIGN_OR_RETURN(ScopedReg left, NewReg());
      asm_.Li(left, uniform_end - n);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      TPU_RETURN_IF_ERROR(single(n));
      asm_.Addi(left, left, static_cast<uint32_t>(-1));
      asm_.Bne(left, kZeroReg, loop);
      n = uniform_end;
    }
    while (n < NT) TPU_RETURN_IF_ERROR(single(n++));
    // Epilogue: the last group's accumulators, once the MXU is done.
    asm_.Sync(kSyncMxu);
    for (uint32_t i = 0; i < pending; ++i) store(i, /*current=*/true);
  }
  return true;
}

}  // namespace tpu::compiler::codegen_internal
