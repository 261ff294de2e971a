// Data movement between device rows: slice, pad and concatenate as copies of boxes of rows with strided
// DMAs (the VPU only clears lanes of a minor-dimension prefix and fills pad values); what moves columns
// to other lanes goes through a lane relayout (relayout.cc).
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {

namespace {

// Whether a slice copies whole column tiles of its operand (no lane moves): stride 1 on the minor
// dimension, from a tile boundary to a tile boundary or to the operand's last column.
bool CopiesWholeTiles(const HloInstruction& slice, uint32_t lanes) {
  const int rank = slice.shape().rank();
  if (rank == 0) return false;
  const int64_t start = slice.slice_starts()[rank - 1], limit = slice.slice_limits()[rank - 1];
  return slice.slice_strides()[rank - 1] == 1 && start % lanes == 0 &&
         (limit % lanes == 0 || limit == slice.operand(0)->shape().dimensions[rank - 1]);
}

// Whether a concatenate along the minor dimension has every operand start and end on a lane tile (the
// last one may end anywhere): its rows are copies of whole tiles (EmitRowBoxCopy), no lane relayout.
bool ConcatenatesWholeTiles(const HloInstruction& concatenate, uint32_t lanes) {
  const int rank = concatenate.shape().rank();
  if (rank < 2 || concatenate.concatenate_dimension() != rank - 1) return false;
  int64_t offset = 0;
  for (const HloInstruction* operand : concatenate.operands()) {
    const int64_t size = operand->shape().dimensions[rank - 1];
    if (offset % lanes != 0 || (size % lanes != 0 && operand != concatenate.operands().back())) return false;
    offset += size;
  }
  return true;
}

}  // namespace

const HloInstruction* SliceReadThrough(const HloInstruction& concatenate, const HloInstruction& operand,
                                       uint32_t lanes) {
  if (!ConcatenatesWholeTiles(concatenate, lanes)) return nullptr;
  const HloInstruction* slice = BufferSource(&operand, lanes);
  if (slice->opcode() != HloOpcode::kSlice || slice->shape().rank() < 2 || !CopiesWholeTiles(*slice, lanes)) {
    return nullptr;
  }
  return slice;
}

void CodeGenerator::SliceRows(const HloInstruction& slice, RowBox* box) const {
  const HloInstruction& operand = *slice.operand(0);
  const std::vector<int64_t> in_steps = RowSteps(operand.shape(), L());
  box->src = locations_.at(BufferOf(&operand));
  for (int d = 0; d + 1 < slice.shape().rank(); ++d) {
    box->src.offset += static_cast<uint32_t>(slice.slice_starts()[d] * in_steps[d]);
    box->counts.push_back(slice.shape().dimensions[d]);
    box->src_steps.push_back(in_steps[d] * slice.slice_strides()[d]);
  }
}

// Nested loops over box.counts (outer dimensions in code loops, each restoring the pointers it
// advanced); the innermost dimension moves with one DMA pair per column tile (strided) or, when both
// sides hold whole consecutive rows, with one DMA pair per chunk of lines.
Status CodeGenerator::EmitRowBoxCopy(const RowBox& box) {
  const size_t dims = box.counts.size();
  if (dims == 0 || box.tiles == 0) return OkStatus();
  for (int64_t count : box.counts) {
    if (count <= 0) return OkStatus();
  }
  const uint32_t reserved = box.mask_region >= 0 ? 1 : 0;
  if (options_.vmem_lines <= reserved + 1) return Unimplemented("no VMEM for a row copy");
  const uint32_t budget = options_.vmem_lines - reserved;
  const uint32_t mask_line = budget;  // the lane mask of a prefix slice's last tile
  TPU_ASSIGN_OR_RETURN(ScopedReg src, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg dst, NewReg());
  asm_.LoadAddress(src, box.src.kind, box.src.index, box.src.offset);
  asm_.LoadAddress(dst, box.dst.kind, box.dst.index, box.dst.offset);
  if (box.src_extra != kZeroReg) asm_.Add(src, src, box.src_extra);
  if (box.dst_extra != kZeroReg) asm_.Add(dst, dst, box.dst_extra);
  if (box.mask_region >= 0) {
    TPU_ASSIGN_OR_RETURN(ScopedReg mask_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg mask_vmem, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg one, NewReg());
    asm_.LoadAddress(mask_hbm, RegionKind::kConstant, static_cast<uint32_t>(box.mask_region), box.mask_line);
    asm_.Li(mask_vmem, mask_line);
    asm_.Li(one, 1);
    asm_.DmaLoad(mask_hbm, mask_vmem, one, 1);
  }

  // The innermost dimension: pointers are restored before returning.
  auto inner = [&]() -> Status {
    const uint32_t rows = static_cast<uint32_t>(box.counts.back());
    const int64_t src_step = box.src_steps.back(), dst_step = box.dst_steps.back();
    TPU_ASSIGN_OR_RETURN(ScopedReg from, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
    asm_.Li(buffer, 0);
    if (box.mask_region < 0 && src_step == box.tiles && dst_step == box.tiles) {
      asm_.Addi(from, src, 0);
      asm_.Addi(to, dst, 0);
      return ForChunks(rows * box.tiles, budget, {{from, 1}, {to, 1}}, [&](Reg count, uint32_t) {
        asm_.DmaLoad(from, buffer, count, 1);
        asm_.DmaStore(to, buffer, count, 1);  // same unit, in order: no SYNC between
        return OkStatus();
      });
    }
    // One column tile of every row: strided DMAs; the last tile of a prefix slice is masked.
    auto tile = [&](Reg tile_src, Reg tile_dst, bool masked) -> Status {
      asm_.Addi(from, tile_src, 0);
      asm_.Addi(to, tile_dst, 0);
      return ForChunks(rows, budget, {{from, static_cast<uint32_t>(src_step)}, {to, static_cast<uint32_t>(dst_step)}},
                       [&](Reg count, uint32_t) -> Status {
                         asm_.DmaLoad(from, buffer, count, static_cast<uint32_t>(src_step));
                         if (masked) {
                           TPU_ASSIGN_OR_RETURN(ScopedReg mask_vmem, NewReg());
                           asm_.Li(mask_vmem, mask_line);
                           asm_.Sync(kSyncDma);
                           asm_.Emit(isa::Opcode::VAND,
                                     {buffer, buffer, mask_vmem, count, isa::flag::VAND_SRC2_BCAST, 0});
                           asm_.Sync(kSyncVpu);
                         }
                         asm_.DmaStore(to, buffer, count, static_cast<uint32_t>(dst_step));
                         return OkStatus();
                       });
    };
    const uint32_t plain_tiles = box.tiles - (box.mask_region >= 0 ? 1 : 0);
    TPU_ASSIGN_OR_RETURN(ScopedReg tile_src, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg tile_dst, NewReg());
    asm_.Addi(tile_src, src, 0);
    asm_.Addi(tile_dst, dst, 0);
    if (plain_tiles == 1) {
      TPU_RETURN_IF_ERROR(tile(tile_src, tile_dst, false));
    } else if (plain_tiles > 1) {
      TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
      asm_.Li(remaining, plain_tiles);
      Assembler::Label loop = asm_.NewLabel();
      asm_.Bind(loop);
      TPU_RETURN_IF_ERROR(tile(tile_src, tile_dst, false));
      asm_.Addi(tile_src, tile_src, 1);
      asm_.Addi(tile_dst, tile_dst, 1);
      asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
      asm_.Bne(remaining, kZeroReg, loop);
    }
    if (box.mask_region >= 0) {
      if (plain_tiles == 1) {
        asm_.Addi(tile_src, tile_src, 1);
        asm_.Addi(tile_dst, tile_dst, 1);
      }
      TPU_RETURN_IF_ERROR(tile(tile_src, tile_dst, true));
    }
    return OkStatus();
  };

  std::function<Status(size_t)> level = [&](size_t d) -> Status {
    if (d + 1 == dims) return inner();
    const uint32_t count = static_cast<uint32_t>(box.counts[d]);
    if (count == 1) return level(d + 1);
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
    asm_.Li(remaining, count);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(level(d + 1));
    asm_.Addi(src, src, static_cast<uint32_t>(box.src_steps[d]));
    asm_.Addi(dst, dst, static_cast<uint32_t>(box.dst_steps[d]));
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, loop);
    asm_.Addi(src, src, static_cast<uint32_t>(-box.src_steps[d] * count));
    asm_.Addi(dst, dst, static_cast<uint32_t>(-box.dst_steps[d] * count));
    return OkStatus();
  };
  return level(0);
}

// slice: every non-minor dimension any start, limit and stride; the minor dimension a prefix [0:k]
// (whole tiles copied, the lanes past k of the last tile cleared), a range that starts and ends on tile
// boundaries, or otherwise any range and stride through a lane relayout (relayout.cc).
Status CodeGenerator::EmitSlice(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  const hlo::Shape& in = operand.shape();
  const int rank = in.rank();
  const DeviceLayout in_layout = MakeDeviceLayout(in, L());
  const DeviceLayout out_layout = MakeDeviceLayout(instruction.shape(), L());
  if (rank == 0 || out_layout.lines == 0) return OkStatus();
  const int64_t start = instruction.slice_starts()[rank - 1];
  const int64_t limit = instruction.slice_limits()[rank - 1];
  const int64_t stride = instruction.slice_strides()[rank - 1];
  const bool prefix = start == 0 && stride == 1;
  const bool aligned = stride == 1 && start % L() == 0 && (limit % L() == 0 || limit == in_layout.cols);
  RowBox box;
  box.dst = locations_.at(BufferOf(&instruction));
  box.tiles = static_cast<uint32_t>(out_layout.column_tiles(L()));
  if (rank == 1) {
    box.src = locations_.at(BufferOf(&operand));
    box.counts = {1};
    box.src_steps = {in_layout.column_tiles(L())};
    box.dst_steps = {out_layout.column_tiles(L())};
  } else {
    SliceRows(instruction, &box);
    box.dst_steps = RowSteps(instruction.shape(), L());
  }
  if (!prefix && !aligned) {
    LaneRelayout relayout;
    relayout.dst = box.dst;
    relayout.counts = box.counts;
    relayout.dst_steps = box.dst_steps;
    relayout.dst_cols = out_layout.cols;
    ColumnPiece piece;
    piece.src = box.src;
    piece.src_steps = box.src_steps;
    piece.src_col = start;
    piece.count = out_layout.cols;
    piece.src_stride = stride;
    relayout.pieces.push_back(piece);
    return EmitLaneRelayout(relayout, instruction);
  }
  box.src.offset += static_cast<uint32_t>(start / L());
  const int64_t cols = out_layout.cols;
  if (prefix && cols % L() != 0) {
    TPU_ASSIGN_OR_RETURN(box.mask_region, ConstantRow(0xffffffffu, cols));
    box.mask_line = box.tiles - 1;
  }
  return EmitRowBoxCopy(box);
}

// Fills the output with the pad value, then copies the operand's rows into place: edge (negative:
// cropping) and interior padding of every dimension. Rows move as whole tiles when the minor dimension
// is not padded, otherwise through a lane relayout that also writes the padding columns.
Status CodeGenerator::EmitPad(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  const HloInstruction& value = *instruction.operand(1);
  const hlo::Shape& in = operand.shape();
  const int rank = in.rank();
  const hlo::PaddingConfig& config = instruction.padding_config();
  if (value.opcode() != HloOpcode::kConstant || !value.has_literal() || value.shape().rank() != 0) {
    return Unimplemented("pad " + instruction.name() + ": the padding value must be a scalar constant");
  }
  for (int d = 0; d < rank; ++d) {
    if (config.dimensions[d].interior_padding < 0) {
      return InvalidArgument("pad " + instruction.name() + ": negative interior padding");
    }
  }
  uint32_t bits = 0;
  std::memcpy(&bits, value.literal().untyped_data(), std::min<size_t>(4, value.literal().size_bytes()));
  if (value.shape().element_type == hlo::PrimitiveType::PRED) bits = bits & 0xffu ? 1u : 0u;
  const DeviceLayout out = MakeDeviceLayout(instruction.shape(), L());
  const uint32_t tiles = static_cast<uint32_t>(out.column_tiles(L()));
  const Location dst = locations_.at(BufferOf(&instruction));

  // Fill: VSPLAT of the value where padded lanes stay +0 (zero, or a minor dimension of whole tiles),
  // otherwise copies of a constant row holding the value in its columns only.
  if (bits != 0 && out.cols % L() != 0) {
    Src2 row;
    row.kind = Src2::kRow;
    TPU_ASSIGN_OR_RETURN(row.constant_row, ConstantRow(bits, out.cols));
    TPU_RETURN_IF_ERROR(EmitRowBroadcastInto(instruction, row));
    asm_.Sync(kSyncDma);
  } else {
    TPU_ASSIGN_OR_RETURN(ScopedReg to, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
    const uint32_t block = std::min<uint32_t>(options_.vmem_lines, out.lines);
    asm_.Li(buffer, 0);
    asm_.Li(count, block);
    asm_.Vsplat(buffer, count, bits);
    asm_.Sync(kSyncVpu);
    asm_.Sync(kSyncDma);
    asm_.LoadAddress(to, dst.kind, dst.index, dst.offset);
    TPU_RETURN_IF_ERROR(ForChunks(out.lines, block, {{to, 1}}, [&](Reg lines, uint32_t) {
      asm_.DmaStore(to, buffer, lines, 1);
      return OkStatus();
    }));
    asm_.Sync(kSyncDma);
  }

  if (MakeDeviceLayout(in, L()).lines == 0) return OkStatus();
  // Operand index i of a dimension lands at low + i * (interior + 1); [first, first + count) stay inside.
  struct Placement {
    int64_t first = 0, count = 0, at = 0, step = 1;
  };
  auto place = [&](int d) {
    const hlo::PaddingDimension& p = config.dimensions[d];
    Placement placement;
    placement.step = p.interior_padding + 1;
    const int64_t low = p.edge_padding_low;
    placement.first = low >= 0 ? 0 : (-low + placement.step - 1) / placement.step;
    const int64_t out_dim = instruction.shape().dimensions[d];
    const int64_t last = out_dim - 1 - low < 0 ? -1 : (out_dim - 1 - low) / placement.step;  // last index inside
    placement.count = std::min(in.dimensions[d] - 1, last) - placement.first + 1;
    placement.at = low + placement.first * placement.step;
    return placement;
  };
  RowBox box;
  box.src = locations_.at(BufferOf(&operand));
  box.dst = dst;
  box.tiles = tiles;
  const std::vector<int64_t> in_steps = RowSteps(in, L());
  const std::vector<int64_t> out_steps = RowSteps(instruction.shape(), L());
  if (rank <= 1) {
    box.counts = {1};
    box.src_steps = {tiles};
    box.dst_steps = {tiles};
  }
  for (int d = 0; d + 1 < rank; ++d) {
    const Placement placement = place(d);
    if (placement.count <= 0) return OkStatus();
    box.src.offset += static_cast<uint32_t>(placement.first * in_steps[d]);
    box.dst.offset += static_cast<uint32_t>(placement.at * out_steps[d]);
    box.counts.push_back(placement.count);
    box.src_steps.push_back(in_steps[d]);
    box.dst_steps.push_back(out_steps[d] * placement.step);
  }
  const bool minor_padded = rank >= 1 && (config.dimensions[rank - 1].edge_padding_low != 0 ||
                                          config.dimensions[rank - 1].edge_padding_high != 0 ||
                                          config.dimensions[rank - 1].interior_padding != 0);
  if (!minor_padded) return EmitRowBoxCopy(box);
  const Placement minor = place(rank - 1);
  if (minor.count <= 0) return OkStatus();
  LaneRelayout relayout;
  relayout.dst = box.dst;
  relayout.counts = box.counts;
  relayout.dst_steps = box.dst_steps;
  relayout.dst_cols = out.cols;
  relayout.fill = bits;
  ColumnPiece piece;
  piece.src = box.src;
  piece.src_steps = box.src_steps;
  if (rank == 1) piece.src_steps = {MakeDeviceLayout(in, L()).column_tiles(L())};
  piece.src_col = minor.first;
  piece.dst_col = minor.at;
  piece.count = minor.count;
  piece.dst_stride = minor.step;
  relayout.pieces.push_back(piece);
  return EmitLaneRelayout(relayout, instruction);
}

// concatenate along a non-minor dimension (each operand's rows copied to their offset), or along the
// minor dimension: operands that start on a tile boundary and fill whole tiles as row copies, the rest
// from the first other one on through one lane relayout.
Status CodeGenerator::EmitConcatenate(const HloInstruction& instruction) {
  const int rank = instruction.shape().rank();
  const int64_t dimension = instruction.concatenate_dimension();
  const std::vector<int64_t> out_steps = RowSteps(instruction.shape(), L());
  const DeviceLayout out_layout = MakeDeviceLayout(instruction.shape(), L());
  const uint32_t out_tiles = static_cast<uint32_t>(out_layout.column_tiles(L()));
  const bool minor = dimension == rank - 1;
  LaneRelayout relayout;  // the minor-dimension operands from the first unaligned one on
  relayout.dst = locations_.at(BufferOf(&instruction));
  int64_t offset = 0;  // along `dimension`
  for (const HloInstruction* operand : instruction.operands()) {
    const hlo::Shape& in = operand->shape();
    const DeviceLayout in_layout = MakeDeviceLayout(in, L());
    RowBox box;
    box.dst = locations_.at(BufferOf(&instruction));
    box.tiles = static_cast<uint32_t>(in_layout.column_tiles(L()));
    const int64_t size = in.dimensions[dimension];
    if (const HloInstruction* slice = SliceReadThrough(instruction, *operand, L())) {
      // The slice's rows straight from its source into the columns of the result, in the operand's row
      // order (the result's rows): the slice is never written (its own code is not emitted).
      SliceRows(*slice, &box);
      box.src.offset += static_cast<uint32_t>(slice->slice_starts().back() / L());
      box.dst.offset += static_cast<uint32_t>(offset / L());
      box.dst_steps.resize(box.counts.size());
      int64_t rows_after = 1;
      for (size_t d = box.counts.size(); d-- > 0;) {
        box.dst_steps[d] = rows_after * out_tiles;
        rows_after *= box.counts[d];
      }
      if (in_layout.lines > 0) TPU_RETURN_IF_ERROR(EmitRowBoxCopy(box));
      offset += size;
      continue;
    }
    box.src = locations_.at(BufferOf(operand));
    const std::vector<int64_t> in_steps = RowSteps(in, L());
    if (rank <= 1) {
      box.counts = {1};
      box.src_steps = {box.tiles};
      box.dst_steps = {out_tiles};
    } else {
      for (int d = 0; d + 1 < rank; ++d) {
        box.counts.push_back(in.dimensions[d]);
        box.src_steps.push_back(in_steps[d]);
        box.dst_steps.push_back(out_steps[d]);
      }
    }
    const bool whole_tiles = offset % L() == 0 && (size % L() == 0 || operand == instruction.operands().back());
    if (minor && (!relayout.pieces.empty() || !whole_tiles)) {
      if (relayout.pieces.empty()) {
        // Output columns from the tile of `offset` on.
        relayout.dst.offset += static_cast<uint32_t>(offset / L());
        relayout.counts = box.counts;
        relayout.dst_steps = box.dst_steps;
        relayout.dst_cols = out_layout.cols - offset / L() * L();
      }
      ColumnPiece piece;
      piece.src = box.src;
      piece.src_steps = box.src_steps;
      piece.dst_col = offset - (out_layout.cols - relayout.dst_cols);
      piece.count = size;
      if (size > 0) relayout.pieces.push_back(piece);
      offset += size;
      continue;
    }
    if (minor) {
      box.dst.offset += static_cast<uint32_t>(offset / L());
    } else {
      box.dst.offset += static_cast<uint32_t>(offset * out_steps[dimension]);
    }
    if (in_layout.lines > 0) TPU_RETURN_IF_ERROR(EmitRowBoxCopy(box));
    offset += size;
  }
  if (!relayout.pieces.empty()) TPU_RETURN_IF_ERROR(EmitLaneRelayout(relayout, instruction));
  return OkStatus();
}

void CodeGenerator::AddSlicePadHandlers(OpcodeHandlerTable& table) {
  OpcodeHandler slice(HloOpcode::kSlice);
  slice.types = ElementTypes::kDeviceWord;
  slice.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitSlice(instruction); };
  table.Add(std::move(slice));

  OpcodeHandler pad(HloOpcode::kPad);
  pad.types = ElementTypes::kDeviceWord;
  pad.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitPad(instruction); };
  table.Add(std::move(pad));

  // Slices on whole tiles that only feed a concatenate of whole tiles (the windows of an im2col matrix,
  // compiler/passes/convolution_lowering.h) are read from their source: the slice is never written.
  OpcodeHandler concatenate(HloOpcode::kConcatenate);
  concatenate.types = ElementTypes::kDeviceWord;
  concatenate.reads_operand = [](const HloInstruction& instruction, const HloInstruction& operand, uint32_t lanes) {
    return SliceReadThrough(instruction, operand, lanes) == nullptr;
  };
  concatenate.reads_through = [](const HloInstruction& instruction, const HloInstruction& operand, uint32_t lanes) {
    const HloInstruction* slice = SliceReadThrough(instruction, operand, lanes);
    return slice != nullptr ? slice->operand(0) : nullptr;
  };
  concatenate.emit = [](CodeGenerator& g, const HloInstruction& instruction) {
    return g.EmitConcatenate(instruction);
  };
  table.Add(std::move(concatenate));
}

}  // namespace tpu::compiler::codegen_internal
