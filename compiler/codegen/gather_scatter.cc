// gather and scatter of whole slabs at indices the device reads: embedding lookups and their gradients,
// and every form the `row-gathers` preparation pass rewrites into this one.
//
// The form lowered: a table [V, R...] of rank 2 or more (slab v: the table's lines of index v, contiguous),
// indices [..., 1] of s32 whose last dimension is the index vector (so that each index is lane 0 of a line
// of its own: SLD reads it), and
//  - gather: slice_sizes={1,R...}, collapsed_slice_dims={0}, start_index_map={0}, offset_dims the trailing
//    ones; result [..., R...], slab i the table's slab index[i], the index clamped to [0, V-1] as XLA
//    clamps a gather's starts;
//  - scatter: update_window_dims the trailing ones, inserted_window_dims={0},
//    scatter_dims_to_operand_dims={0}, updates [..., R...] and a combiner that adds, multiplies, takes the
//    maximum or minimum, or replaces; result the table with each update slab combined into slab index[i]
//    in update order, an index outside [0, V-1] skipped as XLA skips a window that does not fit.
// A chunk of index lines is loaded into VMEM, then per index: SLD, the bound checks (BLT), and one DMA of
// the slab (scatter: both slabs, the combining VPU op, a store). Other gathers and scatters are refused
// with their form.
#include "compiler/codegen/codegen_internal.h"
#include "compiler/hlo/attributes.h"

namespace tpu::compiler::codegen_internal {

namespace {

// Whether `indices` hold one s32 index per line: [..., 1] with the index vector as the last dimension.
bool IsIndexColumn(const hlo::Shape& indices, int64_t index_vector_dim) {
  return indices.element_type == hlo::PrimitiveType::S32 && indices.rank() >= 1 &&
         index_vector_dim == indices.rank() - 1 && indices.dimensions.back() == 1;
}

// {first, first+1, ..., first+count-1}
std::vector<int64_t> Run(int64_t first, int64_t count) {
  std::vector<int64_t> run(static_cast<size_t>(std::max<int64_t>(count, 0)));
  for (size_t i = 0; i < run.size(); ++i) run[i] = first + static_cast<int64_t>(i);
  return run;
}

// Whether `values` is [indices' leading dimensions..., table's dimensions but the first...].
bool IsSlabsShape(const hlo::Shape& values, const hlo::Shape& indices, const hlo::Shape& table) {
  std::vector<int64_t> expected(indices.dimensions.begin(), indices.dimensions.end() - 1);
  expected.insert(expected.end(), table.dimensions.begin() + 1, table.dimensions.end());
  return values.dimensions == expected;
}

// How a refused gather or scatter is named: its shapes and its attributes as written.
std::string FormOf(const HloInstruction& instruction) {
  std::string form = instruction.shape().ToString() + " " + std::string(hlo::HloOpcodeString(instruction.opcode())) + "(";
  for (int64_t i = 0; i < instruction.operand_count(); ++i) {
    form += (i == 0 ? "" : ", ") + instruction.operand(i)->shape().ToString();
  }
  form += ")";
  for (const auto& [name, value] : instruction.raw_attributes()) form += ", " + name + "=" + value;
  return form;
}

// The combiner of a scatter: the binary opcode it applies to its two parameters (kAdd, kMultiply,
// kMaximum, kMinimum), kParameter (the update replaces), else kUnknown.
HloOpcode ScatterCombiner(const HloInstruction& scatter) {
  const hlo::HloComputation* combiner = scatter.to_apply();
  if (combiner == nullptr || combiner->num_parameters() != 2 || combiner->root_instruction() == nullptr) {
    return HloOpcode::kUnknown;
  }
  const HloInstruction& root = *combiner->root_instruction();
  if (root.opcode() == HloOpcode::kParameter && root.parameter_number() == 1) return HloOpcode::kParameter;
  const HloOpcode op = root.opcode();
  const bool binary = op == HloOpcode::kAdd || op == HloOpcode::kMultiply || op == HloOpcode::kMaximum ||
                      op == HloOpcode::kMinimum;
  if (binary && root.operand(0)->opcode() == HloOpcode::kParameter &&
      root.operand(1)->opcode() == HloOpcode::kParameter &&
      root.operand(0)->parameter_number() != root.operand(1)->parameter_number()) {
    return op;
  }
  return HloOpcode::kUnknown;
}

Status CheckGather(const HloInstruction& gather) {
  TPU_ASSIGN_OR_RETURN(hlo::GatherDimensionNumbers d, hlo::GetGatherDimensionNumbers(gather));
  const hlo::Shape& table = gather.operand(0)->shape();
  const hlo::Shape& indices = gather.operand(1)->shape();
  std::vector<int64_t> slab = table.dimensions;
  if (!slab.empty()) slab[0] = 1;
  const bool rows = table.rank() >= 2 && d.collapsed_slice_dims == std::vector<int64_t>{0} &&
                    d.start_index_map == std::vector<int64_t>{0} && d.operand_batching_dims.empty() &&
                    d.slice_sizes == slab && IsIndexColumn(indices, d.index_vector_dim) &&
                    d.offset_dims == Run(indices.rank() - 1, table.rank() - 1) &&
                    IsSlabsShape(gather.shape(), indices, table);
  if (!rows) {
    return Unimplemented("gather " + gather.name() + " (" + FormOf(gather) +
                         "): only gathers of whole slabs of a [V,R...] table at s32 indices [...,1] are lowered "
                         "(row-gathers rewrites gathers of single positions per indexed dimension into those)");
  }
  return OkStatus();
}

Status CheckScatter(const HloInstruction& scatter) {
  TPU_ASSIGN_OR_RETURN(hlo::ScatterDimensionNumbers d, hlo::GetScatterDimensionNumbers(scatter));
  if (scatter.operand_count() != 3) {
    return Unimplemented("scatter " + scatter.name() + " (" + FormOf(scatter) + ") with several operands");
  }
  const hlo::Shape& table = scatter.operand(0)->shape();
  const hlo::Shape& indices = scatter.operand(1)->shape();
  const hlo::Shape& updates = scatter.operand(2)->shape();
  const bool rows = table.rank() >= 2 && d.inserted_window_dims == std::vector<int64_t>{0} &&
                    d.scatter_dims_to_operand_dims == std::vector<int64_t>{0} && d.input_batching_dims.empty() &&
                    IsIndexColumn(indices, d.index_vector_dim) &&
                    d.update_window_dims == Run(indices.rank() - 1, table.rank() - 1) &&
                    IsSlabsShape(updates, indices, table);
  if (!rows) {
    return Unimplemented("scatter " + scatter.name() + " (" + FormOf(scatter) +
                         "): only scatters of whole slabs into a [V,R...] table at s32 indices [...,1] are lowered "
                         "(row-gathers rewrites scatters of single positions per indexed dimension and whole "
                         "windows elsewhere into those)");
  }
  const HloOpcode combiner = ScatterCombiner(scatter);
  if (combiner == HloOpcode::kUnknown) {
    return Unimplemented("scatter " + scatter.name() +
                         ": only a combiner that adds, multiplies, takes the maximum or minimum, or replaces is lowered");
  }
  if ((combiner == HloOpcode::kMaximum || combiner == HloOpcode::kMinimum) &&
      table.element_type != hlo::PrimitiveType::F32 && table.element_type != hlo::PrimitiveType::S32) {
    return Unimplemented("scatter " + scatter.name() + ": a maximum or minimum combiner of " +
                         std::string(hlo::PrimitiveTypeName(table.element_type)) + " (only f32 and s32)");
  }
  return OkStatus();
}

}  // namespace

Status CodeGenerator::EmitRowGatherScatter(const HloInstruction& instruction) {
  const bool scatter = instruction.opcode() == HloOpcode::kScatter;
  const HloInstruction& table = *instruction.operand(0);
  const HloInstruction& indices = *instruction.operand(1);
  const DeviceLayout table_layout = MakeDeviceLayout(table.shape(), L());
  const uint32_t rows = static_cast<uint32_t>(table.shape().dimensions[0]);
  const uint32_t tiles = rows == 0 ? 0 : static_cast<uint32_t>(table_layout.lines / rows);  // lines per slab
  const uint32_t count = static_cast<uint32_t>(MakeDeviceLayout(indices.shape(), L()).lines);  // one per index
  const Location result = locations_.at(BufferOf(&instruction));
  if (scatter && BufferOf(&table) != BufferOf(&instruction)) TPU_RETURN_IF_ERROR(EmitCopy(&table, result));
  if (count == 0 || tiles == 0) return OkStatus();
  // VMEM: the chunk of index lines, then the row (scatter: the table's row and the update's).
  const uint32_t row_lines = scatter ? 2 * tiles : tiles;
  if (options_.vmem_lines < row_lines + 1) return VmemOverflow(instruction, row_lines + 1);
  const uint32_t chunk = std::min(count, options_.vmem_lines - row_lines);
  const uint32_t row_vmem = chunk;
  const HloOpcode combiner = scatter ? ScatterCombiner(instruction) : HloOpcode::kUnknown;
  const bool combine = scatter && combiner != HloOpcode::kParameter;

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
      if (combine) asm_.DmaLoad(row_hbm, row_buffer, tile_count, 1);
      asm_.Sync(kSyncDma);
      if (combine) {
        // combiner(table, update), as the interpreter applies it (the flag bit is shared by the VPU ops).
        const uint8_t integer = IsIntegerValue(instruction.shape()) ? isa::flag::VADD_INT : 0;
        asm_.Emit(*VpuOpcodeFor(combiner), {update_buffer, row_buffer, update_buffer, tile_count, integer, 0});
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
