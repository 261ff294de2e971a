// Data movement between device rows: slice, pad and concatenate, all as copies of boxes of rows with
// strided DMAs (the VPU only clears lanes of a minor-dimension prefix and fills pad values).
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {
namespace {

std::string DimsText(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ",") + std::to_string(v);
  return "{" + text + "}";
}

}  // namespace

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
// (whole tiles copied, the lanes past k of the last tile cleared), or any range that starts and ends
// on tile boundaries.
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
  if (!prefix && !aligned) {
    return Unimplemented("slice " + instruction.name() + " of the minor dimension [" + std::to_string(start) + ":" +
                         std::to_string(limit) + ":" + std::to_string(stride) +
                         "]: only prefixes [0:k] and ranges on tile boundaries are supported");
  }
  RowBox box;
  box.src = locations_.at(BufferOf(&operand));
  box.dst = locations_.at(BufferOf(&instruction));
  box.tiles = static_cast<uint32_t>(out_layout.column_tiles(L()));
  box.src.offset += static_cast<uint32_t>(start / L());
  const std::vector<int64_t> in_steps = RowSteps(in, L());
  const std::vector<int64_t> out_steps = RowSteps(instruction.shape(), L());
  if (rank == 1) {
    box.counts = {1};
    box.src_steps = {in_layout.column_tiles(L())};
    box.dst_steps = {out_layout.column_tiles(L())};
  } else {
    for (int d = 0; d + 1 < rank; ++d) {
      box.src.offset += static_cast<uint32_t>(instruction.slice_starts()[d] * in_steps[d]);
      box.counts.push_back(instruction.shape().dimensions[d]);
      box.src_steps.push_back(in_steps[d] * instruction.slice_strides()[d]);
      box.dst_steps.push_back(out_steps[d]);
    }
  }
  const int64_t cols = out_layout.cols;
  if (prefix && cols % L() != 0) {
    TPU_ASSIGN_OR_RETURN(box.mask_region, ConstantRow(0xffffffffu, cols));
    box.mask_line = box.tiles - 1;
  }
  return EmitRowBoxCopy(box);
}

// Fills the output with the pad value, then copies the operand's rows into place. Edge padding of the
// non-minor dimensions (negative: cropped), no interior padding, no padding of the minor dimension.
Status CodeGenerator::EmitPad(const HloInstruction& instruction) {
  const HloInstruction& operand = *instruction.operand(0);
  const HloInstruction& value = *instruction.operand(1);
  const hlo::Shape& in = operand.shape();
  const int rank = in.rank();
  const hlo::PaddingConfig& config = instruction.padding_config();
  for (int d = 0; d < rank; ++d) {
    const hlo::PaddingDimension& p = config.dimensions[d];
    if (p.interior_padding != 0 || (d == rank - 1 && (p.edge_padding_low != 0 || p.edge_padding_high != 0))) {
      return Unimplemented("pad " + instruction.name() + " with padding " + hlo::PaddingConfigToString(config) +
                           ": only edge padding of the non-minor dimensions is supported");
    }
  }
  if (value.opcode() != HloOpcode::kConstant || !value.has_literal() || value.shape().rank() != 0) {
    return Unimplemented("pad " + instruction.name() + ": the padding value must be a scalar constant");
  }
  uint32_t bits = 0;
  std::memcpy(&bits, value.literal().untyped_data(), std::min<size_t>(4, value.literal().size_bytes()));
  if (value.shape().element_type == hlo::PrimitiveType::PRED) bits = bits & 0xffu ? 1u : 0u;
  const DeviceLayout out = MakeDeviceLayout(instruction.shape(), L());
  const uint32_t tiles = static_cast<uint32_t>(out.column_tiles(L()));
  const Location dst = locations_.at(BufferOf(&instruction));

  // Fill: VSPLAT of the value, which must leave padded lanes +0: zero, or a minor dimension of whole tiles.
  if (bits != 0 && out.cols % L() != 0) {
    return Unimplemented("pad " + instruction.name() + ": a non-zero padding value needs a minor dimension that is a "
                         "multiple of " + std::to_string(L()));
  }
  {
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
    return EmitRowBoxCopy(box);
  }
  for (int d = 0; d + 1 < rank; ++d) {
    const hlo::PaddingDimension& p = config.dimensions[d];
    // Negative low padding crops the operand's first rows; negative high padding its last ones.
    const int64_t skip = std::max<int64_t>(-p.edge_padding_low, 0);
    const int64_t count = in.dimensions[d] - skip - std::max<int64_t>(-p.edge_padding_high, 0);
    if (count <= 0) return OkStatus();
    box.src.offset += static_cast<uint32_t>(skip * in_steps[d]);
    box.dst.offset += static_cast<uint32_t>(std::max<int64_t>(p.edge_padding_low, 0) * out_steps[d]);
    box.counts.push_back(count);
    box.src_steps.push_back(in_steps[d]);
    box.dst_steps.push_back(out_steps[d]);
  }
  return EmitRowBoxCopy(box);
}

// concatenate along a non-minor dimension (each operand's rows copied to their offset), or along the
// minor dimension when every operand but the last fills whole tiles.
Status CodeGenerator::EmitConcatenate(const HloInstruction& instruction) {
  const int rank = instruction.shape().rank();
  const int64_t dimension = instruction.concatenate_dimension();
  const std::vector<int64_t> out_steps = RowSteps(instruction.shape(), L());
  const uint32_t out_tiles = static_cast<uint32_t>(MakeDeviceLayout(instruction.shape(), L()).column_tiles(L()));
  int64_t offset = 0;  // along `dimension`
  for (const HloInstruction* operand : instruction.operands()) {
    const hlo::Shape& in = operand->shape();
    const DeviceLayout in_layout = MakeDeviceLayout(in, L());
    if (dimension == rank - 1 && operand != instruction.operands().back() && in.dimensions.back() % L() != 0) {
      return Unimplemented("concatenate " + instruction.name() + " along the minor dimension of operands " +
                           DimsText(in.dimensions) + " that do not fill whole tiles");
    }
    RowBox box;
    box.src = locations_.at(BufferOf(operand));
    box.dst = locations_.at(BufferOf(&instruction));
    box.tiles = static_cast<uint32_t>(in_layout.column_tiles(L()));
    const std::vector<int64_t> in_steps = RowSteps(in, L());
    if (dimension == rank - 1) {
      box.dst.offset += static_cast<uint32_t>(offset / L());
    } else {
      box.dst.offset += static_cast<uint32_t>(offset * out_steps[dimension]);
    }
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
    if (in_layout.lines > 0) TPU_RETURN_IF_ERROR(EmitRowBoxCopy(box));
    offset += in.dimensions[dimension];
  }
  return OkStatus();
}

}  // namespace tpu::compiler::codegen_internal
