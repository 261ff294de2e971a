// gather and scatter of whole rows at indices the device reads: embedding lookups and their gradients.
//
// The form lowered: a table [V, D] (rows), indices [..., 1] of s32 whose last dimension is the index
// vector (so that each index is lane 0 of a line of its own: SLD reads it), and
//  - gather: slice_sizes={1,D}, collapsed_slice_dims={0}, start_index_map={0}; result [..., D], row i the
//    table's row index[i], the index clamped to [0, V-1] as XLA clamps a gather's starts;
//  - scatter: update_window_dims={last}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0},
//    updates [..., D] and a combiner that adds (embedding gradients) or replaces; result the table with
//    each update row combined into row index[i] in update order, an index outside [0, V-1] skipped as
//    XLA skips a window that does not fit.
// A chunk of index lines is loaded into VMEM, then per index: SLD, the bound checks (BLT), and one DMA of
// the row (scatter: both rows, VADD, a store). Other gathers and scatters are refused.
#include "compiler/codegen/codegen_internal.h"
#include "compiler/hlo/attributes.h"

namespace tpu::compiler::codegen_internal {

namespace {

// Whether `indices` hold one s32 index per line: [..., 1] with the index vector as the last dimension.
bool IsIndexColumn(const hlo::Shape& indices, int64_t index_vector_dim) {
  return indices.element_type == hlo::PrimitiveType::S32 && indices.rank() >= 1 &&
         index_vector_dim == indices.rank() - 1 && indices.dimensions.back() == 1;
}

// The combiner of a scatter: kAdd (add of its two parameters), kParameter (the update replaces), else kUnknown.
HloOpcode ScatterCombiner(const HloInstruction& scatter) {
  const hlo::HloComputation* combiner = scatter.to_apply();
  if (combiner == nullptr || combiner->num_parameters() != 2 || combiner->root_instruction() == nullptr) {
    return HloOpcode::kUnknown;
  }
  const HloInstruction& root = *combiner->root_instruction();
  if (root.opcode() == HloOpcode::kParameter && root.parameter_number() == 1) return HloOpcode::kParameter;
  if (root.opcode() == HloOpcode::kAdd && root.operand(0)->opcode() == HloOpcode::kParameter &&
      root.operand(1)->opcode() == HloOpcode::kParameter &&
      root.operand(0)->parameter_number() != root.operand(1)->parameter_number()) {
    return HloOpcode::kAdd;
  }
  return HloOpcode::kUnknown;
}

Status CheckGather(const HloInstruction& gather) {
  TPU_ASSIGN_OR_RETURN(hlo::GatherDimensionNumbers d, hlo::GetGatherDimensionNumbers(gather));
  const hlo::Shape& table = gather.operand(0)->shape();
  const bool rows = table.rank() == 2 && d.collapsed_slice_dims == std::vector<int64_t>{0} &&
                    d.start_index_map == std::vector<int64_t>{0} &&
                    d.slice_sizes == std::vector<int64_t>{1, table.dimensions[1]} &&
                    d.offset_dims == std::vector<int64_t>{gather.shape().rank() - 1} &&
                    IsIndexColumn(gather.operand(1)->shape(), d.index_vector_dim);
  if (!rows) {
    return Unimplemented("gather " + gather.name() + ": only gathers of whole rows of a [V,D] table at s32 indices "
                         "[...,1] (embedding lookups) are lowered");
  }
  return OkStatus();
}

Status CheckScatter(const HloInstruction& scatter) {
  TPU_ASSIGN_OR_RETURN(hlo::ScatterDimensionNumbers d, hlo::GetScatterDimensionNumbers(scatter));
  if (scatter.operand_count() != 3) return Unimplemented("scatter " + scatter.name() + " with several operands");
  const hlo::Shape& table = scatter.operand(0)->shape();
  const hlo::Shape& updates = scatter.operand(2)->shape();
  const bool rows = table.rank() == 2 && d.inserted_window_dims == std::vector<int64_t>{0} &&
                    d.scatter_dims_to_operand_dims == std::vector<int64_t>{0} &&
                    d.update_window_dims == std::vector<int64_t>{updates.rank() - 1} &&
                    updates.dimensions.back() == table.dimensions[1] &&
                    IsIndexColumn(scatter.operand(1)->shape(), d.index_vector_dim) &&
                    updates.rank() == scatter.operand(1)->shape().rank() &&
                    std::equal(updates.dimensions.begin(), updates.dimensions.end() - 1,
                               scatter.operand(1)->shape().dimensions.begin());
  if (!rows) {
    return Unimplemented("scatter " + scatter.name() + ": only scatters of whole rows into a [V,D] table at s32 "
                         "indices [...,1] (embedding gradients) are lowered");
  }
  if (ScatterCombiner(scatter) == HloOpcode::kUnknown) {
    return Unimplemented("scatter " + scatter.name() + ": only a combiner that adds or replaces is lowered");
  }
  return OkStatus();
}

}  // namespace

Status CodeGenerator::EmitRowGatherScatter(const HloInstruction& instruction) {
  const bool scatter = instruction.opcode() == HloOpcode::kScatter;
  const HloInstruction& table = *instruction.operand(0);
  const HloInstruction& indices = *instruction.operand(1);
  const DeviceLayout table_layout = MakeDeviceLayout(table.shape(), L());
  const uint32_t tiles = static_cast<uint32_t>(table_layout.column_tiles(L()));  // lines per row
  const uint32_t rows = static_cast<uint32_t>(table.shape().dimensions[0]);
  const uint32_t count = static_cast<uint32_t>(MakeDeviceLayout(indices.shape(), L()).lines);  // one per index
  const Location result = locations_.at(BufferOf(&instruction));
  if (scatter && BufferOf(&table) != BufferOf(&instruction)) TPU_RETURN_IF_ERROR(EmitCopy(&table, result));
  if (count == 0 || tiles == 0) return OkStatus();
  // VMEM: the chunk of index lines, then the row (scatter: the table's row and the update's).
  const uint32_t row_lines = scatter ? 2 * tiles : tiles;
  if (options_.vmem_lines < row_lines + 1) return VmemOverflow(instruction, row_lines + 1);
  const uint32_t chunk = std::min(count, options_.vmem_lines - row_lines);
  const uint32_t row_vmem = chunk;
  const bool add = scatter && ScatterCombiner(instruction) == HloOpcode::kAdd;

  TPU_ASSIGN_OR_RETURN(ScopedReg index_hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg source_hbm, NewReg());  // gather: the result rows; scatter: the update rows
  TPU_ASSIGN_OR_RETURN(ScopedReg table_base, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg row_buffer, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg tile_count, NewReg());
  LoadAddress(index_hbm, &indices, 0);
  LoadAddress(source_hbm, scatter ? instruction.operand(2) : &instruction, 0);
  const Location table_at = scatter ? result : locations_.at(BufferOf(&table));  // scatter: into the copy
  asm_.LoadAddress(table_base, table_at.kind, table_at.index, table_at.offset);
  asm_.Li(row_buffer, row_vmem);
  asm_.Li(tile_count, tiles);
  return ForChunks(count, chunk, {{index_hbm, 1}}, [&](Reg lines, uint32_t) -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg line, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg index, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg bound, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg row_hbm, NewReg());
    asm_.DmaLoad(index_hbm, kZeroReg, lines, 1);  // index lines to VMEM [0, lines)
    asm_.Sync(kSyncDma);
    asm_.Li(line, 0);
    Assembler::Label next = asm_.NewLabel(), done = asm_.NewLabel();
    asm_.Bind(next);
    asm_.Sld(index, line, 0);
    Assembler::Label skip = asm_.NewLabel();
    if (scatter) {
      // A window outside the table is skipped.
      Assembler::Label in_range = asm_.NewLabel();
      asm_.Li(bound, rows);
      asm_.Blt(index, kZeroReg, skip);
      asm_.Blt(index, bound, in_range);
      asm_.Jmp(skip);
      asm_.Bind(in_range);
    } else {
      ClampScalar(index, bound, rows - 1);
    }
    asm_.Mul(row_hbm, index, tile_count);
    asm_.Add(row_hbm, row_hbm, table_base);
    if (!scatter) {
      asm_.DmaLoad(row_hbm, row_buffer, tile_count, 1);
      asm_.DmaStore(source_hbm, row_buffer, tile_count, 1);  // same unit, in order: no SYNC between
      asm_.Sync(kSyncDma);  // the buffer is loaded again for the next index
    } else {
      TPU_ASSIGN_OR_RETURN(ScopedReg update_buffer, NewReg());
      asm_.Addi(update_buffer, row_buffer, tiles);
      asm_.DmaLoad(source_hbm, update_buffer, tile_count, 1);
      if (add) asm_.DmaLoad(row_hbm, row_buffer, tile_count, 1);
      asm_.Sync(kSyncDma);
      if (add) {
        const uint8_t integer = IsIntegerValue(instruction.shape()) ? isa::flag::VADD_INT : 0;
        asm_.Vadd(update_buffer, row_buffer, update_buffer, tile_count, integer);
        asm_.Sync(kSyncVpu);
      }
      asm_.DmaStore(row_hbm, update_buffer, tile_count, 1);
      asm_.Sync(kSyncDma);  // a later index may be the same row
    }
    asm_.Bind(skip);
    asm_.Addi(source_hbm, source_hbm, tiles);
    asm_.Addi(line, line, 1);
    asm_.Beq(line, lines, done);
    asm_.Jmp(next);
    asm_.Bind(done);
    return OkStatus();
  });
}

void CodeGenerator::AddGatherScatterHandlers(OpcodeHandlerTable& table) {
  OpcodeHandler gather(HloOpcode::kGather);
  gather.check = CheckGather;
  gather.types = ElementTypes::kDeviceWord;
  gather.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitRowGatherScatter(instruction); };
  table.Add(std::move(gather));

  OpcodeHandler scatter(HloOpcode::kScatter);
  scatter.check = CheckScatter;
  scatter.types = ElementTypes::kF32OrInteger;
  scatter.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitRowGatherScatter(instruction); };
  table.Add(std::move(scatter));
}

}  // namespace tpu::compiler::codegen_internal
