// Lowerings that move elements between lanes and rows: broadcast and transpose (VTRANS, DMA, MXU).
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

// The row repeated over a chunk of output rows in VMEM (RepeatRow), stored chunk after chunk: a DMA per
// output row would pay the memory latency once per row.
Status CodeGenerator::EmitRowBroadcastInto(const HloInstruction& out, const Src2& row) {
  const DeviceLayout layout = MakeDeviceLayout(out.shape(), L());
  const uint32_t tiles = static_cast<uint32_t>(layout.column_tiles(L()));
  const uint32_t rows = static_cast<uint32_t>(layout.rows);
  if (rows == 0 || tiles == 0) return OkStatus();
  if (options_.vmem_lines < tiles) return VmemOverflow(out, tiles);
  const uint32_t chunk_lines = std::min(rows, options_.vmem_lines / tiles) * tiles;
  TPU_ASSIGN_OR_RETURN(ScopedReg row_vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  asm_.Li(row_vmem, 0);
  TPU_RETURN_IF_ERROR(LoadRow(out, row, row_vmem, tiles));
  asm_.Sync(kSyncDma);
  TPU_RETURN_IF_ERROR(RepeatRow(row_vmem, tiles, chunk_lines));
  LoadAddress(out_hbm, &out, 0);
  return ForChunks(layout.lines, chunk_lines, {{out_hbm, 1}}, [&](Reg count, uint32_t) {
    asm_.DmaStore(out_hbm, row_vmem, count, 1);
    return OkStatus();
  });
}

namespace {

// A broadcast that only adds leading dimensions ([2,8] -> [4,8,2,8], dimensions={2,3}): the operand's
// lines repeated, one copy after the other.
bool IsLeadingBroadcast(const HloInstruction& broadcast) {
  const int rank = broadcast.shape().rank(), source_rank = broadcast.operand(0)->shape().rank();
  if (source_rank == 0 || source_rank >= rank) return false;
  for (int i = 0; i < source_rank; ++i) {
    if (broadcast.dimensions(i) != rank - source_rank + i) return false;
  }
  return true;
}

}  // namespace

Status CodeGenerator::EmitRepeatedLines(const HloInstruction& instruction) {
  const HloInstruction& source = *instruction.operand(0);
  const uint32_t lines = MakeDeviceLayout(source.shape(), L()).lines;
  const uint32_t copies = MakeDeviceLayout(instruction.shape(), L()).lines / std::max<uint32_t>(lines, 1);
  if (lines == 0 || copies == 0) return OkStatus();
  const uint32_t chunk = std::min(lines, options_.vmem_lines);
  TPU_ASSIGN_OR_RETURN(ScopedReg source_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg out_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
  LoadAddress(source_hbm, &source, 0);
  LoadAddress(out_hbm, &instruction, 0);
  // Each chunk of the operand is loaded once and stored into every copy.
  return ForChunks(lines, chunk, {{source_hbm, 1}, {out_hbm, 1}}, [&](Reg count, uint32_t) {
    asm_.DmaLoad(source_hbm, kZeroReg, count, 1);
    asm_.Addi(to, out_hbm, 0);
    asm_.Li(remaining, copies);
    Assembler::Label next = asm_.NewLabel();
    asm_.Bind(next);
    asm_.DmaStore(to, kZeroReg, count, 1);  // same unit, in order: after the load
    asm_.Addi(to, to, lines);
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, next);
    asm_.Sync(kSyncDma);  // the next chunk reuses the lines
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
  if (IsLeadingBroadcast(instruction)) return EmitRepeatedLines(instruction);
  if (source.shape().rank() == 1 && rank == 2 && instruction.dimensions() == std::vector<int64_t>{0}) {
    return EmitLaneBroadcast(instruction);
  }
  return Unimplemented("broadcast " + instruction.name() + " from " + source.shape().ToString() + " to " +
                       instruction.shape().ToString() + " with dimensions other than the minor one");
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
    if (scalar) {
      TPU_RETURN_IF_ERROR(LoadLineCopies(identity_hbm, lhs_reg, chunk));
    } else {
      asm_.Li(count, lanes);
      asm_.DmaLoad(identity_hbm, lhs_reg, count, 1);
    }
  }
  LoadAddress(source_hbm, &source, 0);

  // Weights from the source line at source_hbm: `columns` copies, the other weight lines zero.
  auto load_weights = [&](uint32_t columns) -> Status {
    if (columns < lanes) {
      asm_.Li(count, lanes);
      asm_.Vsplat(weights_reg, count, 0);
      asm_.Sync(kSyncVpu);
    }
    TPU_RETURN_IF_ERROR(LoadLineCopies(source_hbm, weights_reg, columns));
    asm_.MxuLoadWeights(weights_reg, /*transpose=*/true);
    return OkStatus();
  };
  // One result for the full tiles, one for the partial last tile; each stored into its tiles for the
  // rows `rows` starting at out_hbm.
  auto emit_rows = [&](Reg out_hbm, uint32_t rows) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg rows_reg, NewReg());
    asm_.Li(rows_reg, rows);
    if (full_tiles > 0) {
      TPU_RETURN_IF_ERROR(load_weights(lanes));
      asm_.MxuMatmul(lhs_reg, result_reg, rows_reg, /*accumulate=*/false, /*swap=*/true);
      asm_.Sync(kSyncMxu);
      TPU_RETURN_IF_ERROR(StoreColumnTiles(result_reg, rows_reg, out_hbm, 0, full_tiles, tiles));
    }
    if (rest > 0) {
      asm_.Sync(kSyncDma);  // the stores above read the result lines the next matmul writes
      TPU_RETURN_IF_ERROR(load_weights(rest));
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

StatusOr<bool> CodeGenerator::EmitTransposeVtrans(const HloInstruction& instruction) {
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
    MoveTileMajor(DmaDirection::kToVmem, in_hbm, rows_reg, in_tiles, source, block_lines, from, to, end);
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
  auto transpose_copies = [&](uint32_t columns) -> Status {
    asm_.Sync(kSyncDma);  // earlier stores read the transposed lines; the block is rewritten below
    if (columns < lanes) {
      asm_.Li(count, lanes);
      asm_.Vsplat(block_reg, count, 0);
      asm_.Sync(kSyncVpu);
    }
    TPU_RETURN_IF_ERROR(LoadLineCopies(source_hbm, block_reg, columns));
    asm_.Emit(isa::Opcode::VTRANS, {transposed_reg, block_reg, {}, one, 0, 0});
    asm_.Sync(kSyncVpu);
    return OkStatus();
  };
  if (!scalar) {
    // Block b of LANES output rows from source line b, the full blocks in a loop (the code does not grow
    // with the rows), then the partial last block.
    TPU_RETURN_IF_ERROR(ForChunks(R, lanes, {{out_hbm, tiles}}, [&](Reg rows_reg, uint32_t) -> Status {
      if (full_tiles > 0) {
        TPU_RETURN_IF_ERROR(transpose_copies(lanes));
        TPU_RETURN_IF_ERROR(StoreColumnTiles(transposed_reg, rows_reg, out_hbm, 0, full_tiles, tiles));
      }
      if (rest > 0) {
        TPU_RETURN_IF_ERROR(transpose_copies(rest));
        TPU_RETURN_IF_ERROR(StoreColumnTiles(transposed_reg, rows_reg, out_hbm, full_tiles, 1, tiles));
      }
      asm_.Addi(source_hbm, source_hbm, 1);
      return OkStatus();
    }));
    asm_.Sync(kSyncDma);
    return true;
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg copies_reg, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg chunk_reg, NewReg());
  asm_.Li(copies_reg, copies_base);
  auto emit_kind = [&](uint32_t columns, uint32_t first_tile, uint32_t tile_count) -> Status {
    TPU_RETURN_IF_ERROR(transpose_copies(columns));
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
    MoveTileMajor(DmaDirection::kToVmem, in_hbm, rows_reg, in_tiles, block, block_lines, a, b, end);
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
    ForColumnTiles(full_tiles, rest, cols_valid, a, end, [&] { asm_.Li(end, block + full_tiles * lanes); }, emit_tile);
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
  const int rank = instruction.shape().rank();
  if (rank > 2 && instruction.dimensions().back() == rank - 1) return EmitRowTranspose(instruction);  // reverse.cc
  if (rank != 2 || instruction.dimensions() != std::vector<int64_t>{1, 0}) {
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
    ForColumnTiles(full_tiles, rest, cols_valid, in_hbm, in_end, [&] { asm_.Addi(in_end, block_in, full_tiles); },
                   emit_tile);
    asm_.Addi(block_in, block_in, lanes * in_tiles);
    asm_.Addi(block_out, block_out, 1);
    asm_.Bne(block_out, block_end, block_loop);
  }
  if (rest_rows != 0) TPU_RETURN_IF_ERROR(emit_block(full_blocks, rest_rows));
  return OkStatus();
}

void CodeGenerator::AddBroadcastTransposeHandlers(OpcodeHandlerTable& table) {
  // A broadcast of a scalar constant is splatted or written from a constant row, not read.
  OpcodeHandler broadcast(HloOpcode::kBroadcast);
  broadcast.types = ElementTypes::kDeviceWord;
  broadcast.reads_operand = [](const HloInstruction&, const HloInstruction& operand, uint32_t) {
    return !IsScalarF32Constant(operand);
  };
  broadcast.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitBroadcast(instruction); };
  table.Add(std::move(broadcast));

  OpcodeHandler transpose(HloOpcode::kTranspose);
  transpose.check = [](const HloInstruction& instruction) -> Status {
    const std::vector<int64_t>& dims = instruction.dimensions();
    bool identity = true;
    for (size_t i = 0; i < dims.size(); ++i) identity = identity && dims[i] == static_cast<int64_t>(i);
    const bool keeps_minor = !dims.empty() && dims.back() == static_cast<int64_t>(dims.size()) - 1;
    if (!identity && !keeps_minor && !(instruction.shape().rank() == 2 && dims == std::vector<int64_t>{1, 0})) {
      // Codegen preparation splits the others (compiler/passes/codegen_legalization.h).
      return Unimplemented("transpose " + instruction.name() + " of " + instruction.operand(0)->shape().ToString() +
                           ": only rank-2 transposes and row permutations (the minor dimension stays) are supported");
    }
    return OkStatus();
  };
  transpose.types = ElementTypes::kDeviceWord;
  transpose.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitTranspose(instruction); };
  table.Add(std::move(transpose));
}

}  // namespace tpu::compiler::codegen_internal
