// Dots on the MXU.
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

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

}  // namespace tpu::compiler::codegen_internal
