// Dots on the MXU: a software pipeline (EmitDotPipelined) where the shape allows it, otherwise one
// weight tile at a time with a SYNC around every hand-over (EmitDotSerial).
#include <algorithm>
#include <set>

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


namespace {

// N tiles per group of the pipeline (see EmitDotPipelined). The first group runs its K tiles in the
// outer loop so that each lhs slice, loaded while the group's multiplies stream, is spread over several
// steps; each later group stores the accumulators of the group before it, so the groups shrink (the
// stores of a wide group need a group with as many steps to hide in) down to single tiles, which keep
// the final store (after the last multiply) to one accumulator.
std::vector<uint32_t> DotGroupSizes(uint32_t n_tiles) {
  switch (n_tiles) {
    case 1: return {1};
    case 2: return {2};
    case 3: return {2, 1};
    case 4: return {2, 1, 1};
    case 5: return {3, 1, 1};
    default: break;
  }
  std::vector<uint32_t> sizes = {4, 2};
  sizes.resize(n_tiles - 4, 1);
  return sizes;
}

// A scalar register whose value codegen tracks at compile time and moves with ADDI, so that steps doing
// the same work emit the same words (and can become a loop).
struct Stream {
  Reg reg;
  int64_t value = 0;
  void MoveTo(Assembler& a, int64_t target) {
    if (target != value) a.Addi(reg, reg, static_cast<uint32_t>(target - value));
    value = target;
  }
};

// Runs of repeated blocks of up to 64 steps in `bodies` (straight-line code per step), found greedily:
// each segment is emitted once, as a counted loop when reps > 1.
struct RolledSegment {
  size_t first, period, reps;
};
std::vector<RolledSegment> RollSteps(const std::vector<std::vector<uint64_t>>& bodies) {
  const size_t steps = bodies.size();
  auto same = [&](size_t x, size_t y, size_t period) {
    for (size_t q = 0; q < period; ++q) {
      if (bodies[x + q] != bodies[y + q]) return false;
    }
    return true;
  };
  std::vector<RolledSegment> segments;
  size_t i = 0;
  while (i < steps) {
    RolledSegment best{i, 1, 1};
    int64_t best_saving = 0;
    for (size_t period = 1; period <= 64 && i + 2 * period <= steps; ++period) {
      size_t reps = 1;
      while (i + (reps + 1) * period <= steps && same(i, i + reps * period, period)) ++reps;
      if (reps < 2) continue;
      int64_t words = 0;
      for (size_t q = 0; q < period; ++q) words += static_cast<int64_t>(bodies[i + q].size());
      const int64_t saving = static_cast<int64_t>(reps - 1) * words - 4;  // LI, ADDI, BNE and a margin
      if (saving > best_saving) {
        best_saving = saving;
        best = {i, period, reps};
      }
    }
    segments.push_back(best);
    i += best.period * best.reps;
  }
  return segments;
}

// Emits `bodies` rolled into counted loops on `counter`.
void EmitRolled(Assembler& a, const std::vector<std::vector<uint64_t>>& bodies, Reg counter) {
  for (const RolledSegment& segment : RollSteps(bodies)) {
    if (segment.reps == 1) {
      a.AppendStraightLine(bodies[segment.first]);
      continue;
    }
    a.Li(counter, static_cast<uint32_t>(segment.reps));
    Assembler::Label loop = a.NewLabel();
    a.Bind(loop);
    for (size_t q = 0; q < segment.period; ++q) a.AppendStraightLine(bodies[segment.first + q]);
    a.Addi(counter, counter, static_cast<uint32_t>(-1));
    a.Bne(counter, kZeroReg, loop);
  }
}

}  // namespace

// The software pipeline. Rows are processed in chunks whose lhs (one VMEM slice of R lines per K tile)
// stays in VMEM; a chunk runs its steps (one MXU_MM each: K tile, N tile, rows) back to back:
//
//   step p:  MXU_MM  lhs slice k -> accumulator of n, SWAP (weights of step p), ACC unless k = 0
//            SYNC DMA; MXU_LW weights of step p+1 (fetched a step earlier; loaded while MXU_MM p streams)
//            DMA_LD  weight tile of step p+2 unless it is already in VMEM
//            and beside the multiply, spread evenly over the steps: pieces of the lhs slices and of
//            finished accumulators (stores).
//
// DMA work issued in step p is complete at the SYNC of step p+1, before multiply p+2, so each lhs piece
// is loaded in the steps between the previous piece's window and two steps before its first use, and a
// multiply's results are stored once MXU_MMs of at least 2*LANES+2 rows have streamed after it and
// another one issued (its results are written then, sync_checker.h), without a SYNC on the MXU.
//
// The order of the steps keeps the DMA's share of the work even:
//  - K tile 0 runs first over every N tile, in two row blocks (the N tiles inner, their weights kept in
//    VMEM): the multiplies start after a weight tile and half a slice, and the other lhs slices load
//    while each of them is used by all N tiles;
//  - the other K tiles run in groups of N tiles (DotGroupSizes), K tiles outer within a group: a group's
//    accumulators are stored during the next group;
//  - a last group of one N tile runs in two row blocks (K tiles inner, weights kept in VMEM): the first
//    three quarters of its rows are stored while the last quarter multiplies, and only that quarter is
//    left after the last multiply.
// Every N tile has its own accumulator when VMEM holds them all beside the lhs without splitting the rows
// into more chunks; otherwise K tile 0 runs inside the groups and two accumulator sets alternate between
// groups (a store is then never left for the last step of a group when the group after it writes the same
// accumulator). Steps that emit the same code are rolled into loops. Between chunks the units drain.
StatusOr<bool> CodeGenerator::EmitDotPipelined(const HloInstruction& instruction, const DotGeometry& g) {
  const uint32_t lanes = g.lanes, KT = g.k_tiles, NT = g.n_tiles;
  const uint32_t min_rows = 2 * lanes + 2;  // the result latency the store hand-over relies on
  if (!pipelined_dots_ || KT < 2 || g.M < min_rows) return false;
  const std::vector<uint32_t> group_sizes = DotGroupSizes(NT);
  const uint32_t max_group = *std::max_element(group_sizes.begin(), group_sizes.end());
  const bool compact = dot_schedule_ == DotSchedule::kCompact;
  const bool blocked_tail = !compact && NT >= 3 && group_sizes.back() == 1;
  // VMEM: rotating weight buffers [0, 2L) and their partial twins [2L, 4L), then the weights kept in
  // VMEM (K tile 0 of every N tile when accumulators are resident, the tail's K tiles), the lhs slices,
  // the accumulators.
  const uint32_t weights = 0, partial_weights = 2 * lanes, kept_weights = 4 * lanes;
  auto rows_for = [&](uint32_t weight_lines, uint64_t lines_per_row) -> uint64_t {
    return options_.vmem_lines > weight_lines ? (options_.vmem_lines - weight_lines) / lines_per_row : 0;
  };
  const uint32_t tail_weights = blocked_tail ? KT * lanes : 0;
  const uint64_t set_rows = rows_for(kept_weights + tail_weights, KT + 2 * max_group);
  const uint64_t resident_rows = rows_for(kept_weights + tail_weights + NT * lanes, KT + NT);
  if (std::max(set_rows, resident_rows) < min_rows) return false;
  auto chunk_count = [&](uint64_t max_rows) { return max_rows == 0 ? UINT64_MAX : (static_cast<uint64_t>(g.M) + max_rows - 1) / max_rows; };
  const bool resident_accumulators =
      !compact && resident_rows >= min_rows && chunk_count(resident_rows) <= chunk_count(set_rows);
  const uint64_t max_rows = resident_accumulators ? resident_rows : set_rows;
  const uint64_t chunks = chunk_count(max_rows);
  const uint32_t R = static_cast<uint32_t>((static_cast<uint64_t>(g.M) + chunks - 1) / chunks);
  const uint32_t last_rows = static_cast<uint32_t>(g.M - (chunks - 1) * R);
  if (last_rows < min_rows) return false;
  const uint32_t first_k_weights = kept_weights + tail_weights;  // resident: K tile 0 of N tile n at + n*L
  const uint32_t lhs_base = first_k_weights + (resident_accumulators ? NT * lanes : 0);
  const uint32_t acc_base = lhs_base + KT * R;

  struct Group {
    uint32_t first_n, size;
    size_t first_step;
  };
  std::vector<Group> groups;
  std::vector<uint32_t> group_of_n(NT);
  for (uint32_t n0 = 0, gi = 0; gi < group_sizes.size(); n0 += group_sizes[gi++]) {
    groups.push_back({n0, group_sizes[gi], 0});
    for (uint32_t i = 0; i < group_sizes[gi]; ++i) group_of_n[n0 + i] = gi;
  }
  auto accumulator = [&](uint32_t n) -> int64_t {
    if (resident_accumulators) return acc_base + int64_t{n} * R;
    const Group& group = groups[group_of_n[n]];
    return acc_base + int64_t{group_of_n[n] % 2} * max_group * R + int64_t{n - group.first_n} * R;
  };

  const HloInstruction* lhs = instruction.operand(0);
  const HloInstruction* rhs = instruction.operand(1);
  const bool partial = g.partial_k || g.partial_n;
  const uint32_t rest = g.partial_k ? g.k_rest : g.n_rest;
  if (partial) {
    // Weight rows past K (or N) of a partial tile must be zero, not stale data (0 * NaN is NaN), and
    // rows past N become output columns past N. The DMA fills only the first `rest` lines of a partial
    // tile's buffer (the partial twins or a kept buffer), so every weight buffer is cleared here.
    TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
    asm_.Li(count, lhs_base);
    asm_.Vsplat(kZeroReg, count, 0);
    asm_.Sync(kSyncVpu);
  }

  for (uint64_t chunk = 0; chunk < chunks; ++chunk) {
    const uint32_t m0 = static_cast<uint32_t>(chunk * R);
    const uint32_t rows = chunk + 1 == chunks ? last_rows : R;
    struct Step {
      uint32_t k, n, row0, rows;
      int64_t kept_buffer;  // VMEM line of the weights when they stay in VMEM, else -1
    };
    std::vector<Step> plan;
    const uint32_t first_k = resident_accumulators ? 1 : 0;
    if (resident_accumulators) {
      // Two row blocks [0, half) and [half, rows) (one when half a chunk is less than a line of rows).
      const uint32_t half = rows / 2 >= lanes ? rows / 2 : rows;
      for (const uint32_t row0 : {0u, half}) {
        if (row0 == rows) break;
        const uint32_t block_rows = row0 == 0 ? half : rows - half;
        for (uint32_t n = 0; n < NT; ++n) plan.push_back({0, n, row0, block_rows, first_k_weights + int64_t{n} * lanes});
      }
    }
    // The tail's second block stores the first at a quarter of a line per MXU cycle: rows / (1 + steps / 4)
    // rows.
    const uint32_t tail_steps = KT - first_k;
    const uint32_t tail_split = rows - static_cast<uint32_t>((uint64_t{rows} * 4 + tail_steps + 3) / (tail_steps + 4));
    const bool blocked = blocked_tail && rows - tail_split >= lanes && tail_split >= lanes;
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      Group& group = groups[gi];
      group.first_step = plan.size();
      if (blocked && gi + 1 == groups.size()) {
        for (uint32_t row0 : {0u, tail_split}) {
          for (uint32_t k = first_k; k < KT; ++k) {
            plan.push_back({k, group.first_n, row0, row0 == 0 ? tail_split : rows - tail_split, kept_weights + int64_t{k} * lanes});
          }
        }
        continue;
      }
      for (uint32_t k = first_k; k < KT; ++k) {
        for (uint32_t i = 0; i < group.size; ++i) plan.push_back({k, group.first_n + i, 0, rows, -1});
      }
    }
    const size_t steps = plan.size();
    auto weight_rows = [&](size_t p) { return g.WeightRows(plan[p].k, plan[p].n); };
    // Rotating buffers alternate with the step's parity: the steps using them are consecutive.
    auto buffer = [&](size_t p) -> int64_t {
      if (plan[p].kept_buffer >= 0) return plan[p].kept_buffer;
      return (weight_rows(p) == lanes ? weights : partial_weights) + int64_t(p % 2) * lanes;
    };
    // A step fetches its weights unless an earlier step already loaded them into the same kept buffer.
    std::vector<bool> needs_fetch(steps, true);
    std::set<int64_t> kept_loaded;
    for (size_t p = 0; p < steps; ++p) {
      if (plan[p].kept_buffer >= 0 && !kept_loaded.insert(plan[p].kept_buffer).second) needs_fetch[p] = false;
    }
    // The first step whose MXU_MM guarantees that step p's results are written.
    auto complete_at = [&](size_t p) {
      size_t q = p + 1;
      for (uint64_t streamed = 0; q < steps && streamed < min_rows; ++q) streamed += plan[q].rows;
      return q;
    };

    // DMA pieces per step: lhs slices (slice, first row, rows) and stores (N tile, first row, rows).
    struct Piece {
      uint32_t index, row0, rows;
    };
    std::vector<std::vector<Piece>> slice_pieces(steps), store_pieces(steps);
    std::vector<Piece> prologue_slices, epilogue_stores;
    // Each run of lhs rows first read by a step is loaded before it (units in order of first use).
    std::vector<std::pair<size_t, Piece>> units;  // (first use, rows)
    for (size_t p = 0; p < steps; ++p) {
      bool fresh = true;
      for (size_t q = 0; q < p; ++q) {
        fresh = fresh && !(plan[q].k == plan[p].k && plan[q].row0 <= plan[p].row0 &&
                           plan[p].row0 + plan[p].rows <= plan[q].row0 + plan[q].rows);
      }
      if (fresh) units.push_back({p, {plan[p].k, plan[p].row0, plan[p].rows}});
    }
    // The tiles whose stores spread over the steps: (tile, first row, rows, first step, end step).
    struct StoreRun {
      uint32_t n, row0, rows;
      size_t begin, end;
    };
    std::vector<StoreRun> store_runs;
    bool placeable = true;  // every store lands in a step where its accumulator is complete
    auto last_multiply = [&](uint32_t n, uint32_t row0) {
      size_t last = 0;
      for (size_t p = 0; p < steps; ++p) {
        if (plan[p].n == n && plan[p].k == KT - 1 && plan[p].row0 <= row0 && row0 < plan[p].row0 + plan[p].rows) last = p;
      }
      return last;
    };
    if (resident_accumulators) {
      // Every accumulator has its own VMEM: a tile's stores may go anywhere after its last multiply.
      for (uint32_t n = 0; n < groups.back().first_n; ++n) {
        store_runs.push_back({n, 0, rows, complete_at(last_multiply(n, 0)), steps});
      }
    } else {
      for (size_t gi = 0; gi + 1 < groups.size(); ++gi) {
        const Group& done = groups[gi];
        const Group& next = groups[gi + 1];
        size_t end = (gi + 2 < groups.size() ? groups[gi + 2].first_step : steps);
        // The group after `next` writes the same accumulator set: nothing may be left for its last step.
        if (gi + 2 < groups.size() && groups[gi + 2].size >= done.size) --end;
        // Before a blocked tail, stores go beside its first block (the second one stores the first).
        if (blocked && gi + 2 == groups.size()) end = next.first_step + tail_steps;
        for (uint32_t i = 0; i < done.size; ++i) {
          const uint32_t n = done.first_n + i;
          store_runs.push_back({n, 0, rows, std::max(next.first_step, complete_at(last_multiply(n, 0))), end});
        }
      }
    }
    if (blocked) {
      const uint32_t n = groups.back().first_n;
      store_runs.push_back({n, 0, tail_split, complete_at(last_multiply(n, 0)), steps});
    }
    // DMA lines a step may take beside its multiply: 0.38 per MXU row (what the v2 HBM sustains for
    // strided lines with reads and writes mixed, docs/performance.md), less the weight tile it fetches.
    // Pieces are whole 64ths of the rows, so that steps alike emit the same code. The compact schedule
    // moves each lhs run and each store with one DMA, one store per step (fewer distinct steps).
    const uint32_t grain = std::max<uint32_t>(1, rows / 64);
    {
      std::vector<int64_t> budget(steps);
      for (size_t p = 0; p < steps; ++p) {
        budget[p] = static_cast<int64_t>(plan[p].rows) * 19 / 50;
        if (p + 2 < steps && needs_fetch[p + 2]) budget[p] -= weight_rows(p + 2);
      }
      // Places rows [row0, row0 + count) of `index` in steps [from, last], as early as the budgets
      // allow; what does not fit goes to step `last` (or, with `overflow`, there).
      auto place = [&](std::vector<std::vector<Piece>>& out, uint32_t index, uint32_t row0, uint32_t count, size_t from,
                       size_t last, std::vector<Piece>* overflow) {
        uint32_t done = 0;
        for (size_t p = from; p <= last && p < steps && done < count; ++p) {
          const int64_t grains = budget[p] / grain;
          if (!compact && grains <= 0) continue;
          const uint32_t take = compact ? count : std::min<uint32_t>(count - done, static_cast<uint32_t>(grains * grain));
          out[p].push_back({index, row0 + done, take});
          budget[p] -= take;
          done += take;
        }
        if (done == count) return;
        if (overflow != nullptr) {
          overflow->push_back({index, row0 + done, count - done});
        } else {
          out[last].push_back({index, row0 + done, count - done});
          budget[last] -= count - done;
        }
      };
      size_t load_cursor = 0;  // lhs units load in order
      for (const auto& [use, unit] : units) {
        if (use < 2) {
          prologue_slices.push_back(unit);
          continue;
        }
        place(slice_pieces, unit.index, unit.row0, unit.rows, std::min(load_cursor, use - 2), use - 2, nullptr);
        if (compact) {
          load_cursor = use - 1;
        } else {
          while (load_cursor < use - 2 && budget[load_cursor] < static_cast<int64_t>(grain)) ++load_cursor;
        }
      }
      size_t next_store = 0;  // compact: one store per step
      for (const StoreRun& run : store_runs) {
        const size_t begin = compact ? std::max(run.begin, next_store) : run.begin;
        if (begin >= run.end) {
          placeable = placeable && run.end == steps;
          epilogue_stores.push_back({run.n, run.row0, run.rows});
          continue;
        }
        place(store_pieces, run.n, run.row0, run.rows, begin, run.end - 1, run.end == steps ? &epilogue_stores : nullptr);
        next_store = begin + 1;
      }
    }
    if (!placeable) {
      if (chunk == 0) return false;  // nothing of this dot emitted yet but the weight clearing
      return Internal("dot " + instruction.name() + ": a store cannot follow its multiply in this schedule");
    }

    TPU_ASSIGN_OR_RETURN(ScopedReg rows_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg counter, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg lw_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg fetch_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg w_hbm_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg lhs_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg acc_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg slice_src_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg slice_dst_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg store_src_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg store_dst_reg, NewReg());
    Stream lw_buf{lw_reg, weights}, fetch_buf{fetch_reg, weights}, w_hbm{w_hbm_reg, 0};
    Stream lhs_slice{lhs_reg, lhs_base}, acc{acc_reg, accumulator(0)};
    Stream slice_src{slice_src_reg, int64_t{m0} * KT}, slice_dst{slice_dst_reg, lhs_base};
    Stream store_src{store_src_reg, accumulator(0)}, store_dst{store_dst_reg, int64_t{m0} * NT};
    uint32_t rows_value = rows;
    asm_.Li(rows_reg, rows);
    asm_.Li(lw_reg, weights);
    asm_.Li(fetch_reg, weights);
    asm_.Li(lhs_reg, lhs_base);
    asm_.Li(acc_reg, static_cast<uint32_t>(accumulator(0)));
    asm_.Li(store_src_reg, static_cast<uint32_t>(accumulator(0)));
    asm_.Li(slice_dst_reg, lhs_base);
    LoadAddress(w_hbm_reg, rhs, 0);
    LoadAddress(slice_src_reg, lhs, m0 * KT);
    LoadAddress(store_dst_reg, &instruction, m0 * NT);

    auto fetch = [&](Assembler& a, size_t p) {  // the weight tile of step p into its buffer
      w_hbm.MoveTo(a, int64_t{plan[p].k} * g.kt_step + int64_t{plan[p].n} * g.nt_step);
      fetch_buf.MoveTo(a, buffer(p));
      a.Li(count, weight_rows(p));
      a.DmaLoad(w_hbm.reg, fetch_buf.reg, count, g.rhs_row_lines);
    };
    auto load_weights = [&](Assembler& a, size_t p) {  // MXU_LW of step p's buffer
      lw_buf.MoveTo(a, buffer(p));
      a.MxuLoadWeights(lw_buf.reg, g.transposed);
    };
    auto load_slice = [&](Assembler& a, const Piece& piece) {
      slice_src.MoveTo(a, int64_t{m0 + piece.row0} * KT + piece.index);
      slice_dst.MoveTo(a, lhs_base + int64_t{piece.index} * R + piece.row0);
      a.Li(count, piece.rows);
      a.DmaLoad(slice_src.reg, slice_dst.reg, count, KT);
    };
    auto store = [&](Assembler& a, const Piece& piece) {
      store_src.MoveTo(a, accumulator(piece.index) + piece.row0);
      store_dst.MoveTo(a, int64_t{m0 + piece.row0} * NT + piece.index);
      a.Li(count, piece.rows);
      a.DmaStore(store_dst.reg, store_src.reg, count, NT);
    };

    // Prologue: the lhs rows of the first steps, weights of step 0 in the MXU.
    for (const Piece& piece : prologue_slices) load_slice(asm_, piece);
    fetch(asm_, 0);
    asm_.Sync(kSyncDma);
    load_weights(asm_, 0);
    if (steps > 1 && needs_fetch[1]) fetch(asm_, 1);

    std::vector<std::vector<uint64_t>> bodies(steps);
    for (size_t p = 0; p < steps; ++p) {
      Assembler a;
      const Step& step = plan[p];
      acc.MoveTo(a, accumulator(step.n) + step.row0);
      lhs_slice.MoveTo(a, lhs_base + int64_t{step.k} * R + step.row0);
      if (step.rows != rows_value) a.Li(rows_reg, step.rows);
      rows_value = step.rows;
      a.MxuMatmul(lhs_slice.reg, acc.reg, rows_reg, /*accumulate=*/step.k != 0, /*swap=*/true);
      a.Sync(kSyncDma);
      if (p + 1 < steps) load_weights(a, p + 1);
      if (p + 2 < steps && needs_fetch[p + 2]) fetch(a, p + 2);
      for (const Piece& piece : slice_pieces[p]) load_slice(a, piece);
      for (const Piece& piece : store_pieces[p]) store(a, piece);
      bodies[p] = a.code();
    }
    EmitRolled(asm_, bodies, counter);

    // Epilogue: what is left of the last group, once the MXU is done.
    asm_.Sync(kSyncMxu);
    for (const Piece& piece : epilogue_stores) store(asm_, piece);
    for (uint32_t i = 0; i < groups.back().size; ++i) {
      const uint32_t row0 = blocked ? tail_split : 0;
      store(asm_, {groups.back().first_n + i, row0, rows - row0});
    }
    if (chunk + 1 < chunks) asm_.Sync(kSyncDma);  // the next chunk reloads the slices and accumulators
  }
  return true;
}

void CodeGenerator::AddDotHandlers(OpcodeHandlerTable& table) {
  // bf16 operands reach the MXU exactly; a bf16 result is rounded from the f32 accumulators.
  OpcodeHandler dot(HloOpcode::kDot);
  dot.types = ElementTypes::kMxu;
  dot.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitDot(instruction); };
  table.Add(std::move(dot));
}

}  // namespace tpu::compiler::codegen_internal
