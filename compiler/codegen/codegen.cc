#include "compiler/codegen/codegen.h"

#include "compiler/codegen/codegen_internal.h"

#include <chrono>
#include <limits>

namespace tpu::compiler {
namespace codegen_internal {

const HloInstruction* CodeGenerator::BufferOf(const HloInstruction* instruction) const {
  const HloInstruction* buffer = BufferSource(instruction, L());
  // A conditional's branch reads what the conditional passes it where it is.
  for (auto input = branch_inputs_.find(buffer); input != branch_inputs_.end(); input = branch_inputs_.find(buffer)) {
    buffer = BufferSource(input->second, L());
  }
  return buffer;
}

void CodeGenerator::FlattenOutputs(const HloInstruction* value, std::vector<const HloInstruction*>* outputs) const {
  if (value->opcode() == HloOpcode::kTuple) {
    for (const HloInstruction* element : value->operands()) FlattenOutputs(element, outputs);
    return;
  }
  if (value->opcode() == HloOpcode::kGetTupleElement && value->operand(0)->opcode() == HloOpcode::kTuple) {
    FlattenOutputs(value->operand(0)->operand(value->tuple_index()), outputs);
    return;
  }
  outputs->push_back(value);
}

// Values that are buffers as they stand: no code.
void CodeGenerator::AddBufferHandlers(OpcodeHandlerTable& table) {
  // The runtime's buffers.
  OpcodeHandler parameter(HloOpcode::kParameter);
  parameter.check = [](const HloInstruction& instruction) -> Status {
    if (instruction.shape().IsTuple() && (instruction.parent() == nullptr || instruction.parent()->IsEntryComputation())) {
      return Unimplemented("tuple-shaped parameter " + instruction.name() + " is not supported; pass its elements");
    }
    return OkStatus();
  };
  parameter.types = ElementTypes::kDeviceWord;
  table.Add(std::move(parameter));

  // Constant regions, loaded with the program (those read from HBM).
  OpcodeHandler constant(HloOpcode::kConstant);
  constant.types = ElementTypes::kDeviceWord;
  constant.check_value = [](const HloInstruction& instruction) -> Status {
    if (!instruction.has_literal()) {
      return FailedPrecondition("constant " + instruction.name() + " has no values (the dump elided them)");
    }
    return OkStatus();
  };
  table.Add(std::move(constant));

  // A tuple only groups the root's values (FlattenOutputs); get-tuple-element is the element's buffer.
  auto reads_nothing = [](const HloInstruction&, const HloInstruction&, uint32_t) { return false; };
  OpcodeHandler tuple(HloOpcode::kTuple);
  tuple.types = ElementTypes::kTupleOfValues;
  tuple.reads_operand = reads_nothing;
  table.Add(std::move(tuple));

  OpcodeHandler get_tuple_element(HloOpcode::kGetTupleElement);
  get_tuple_element.types = ElementTypes::kDeviceWord;
  get_tuple_element.check_value = [](const HloInstruction& instruction) -> Status {
    // Of a loop, or of the parameter of its condition or body: a state buffer; of a conditional: a result
    // buffer; of a branch's parameter: what the conditional passes the branch (control_flow.cc).
    // Of an infeed or its data tuple: a value the infeed writes (feeds.cc).
    const HloOpcode tuple = instruction.operand(0)->opcode();
    const bool of_infeed = tuple == HloOpcode::kInfeed || (tuple == HloOpcode::kGetTupleElement &&
                                                           instruction.operand(0)->operand(0)->opcode() == HloOpcode::kInfeed);
    if (tuple != HloOpcode::kTuple && tuple != HloOpcode::kWhile && tuple != HloOpcode::kParameter &&
        tuple != HloOpcode::kConditional && !of_infeed) {
      return Unimplemented("get-tuple-element " + instruction.name() + " of a non-tuple instruction");
    }
    return OkStatus();
  };
  get_tuple_element.same_buffer_as = [](const HloInstruction& instruction, uint32_t) -> const HloInstruction* {
    const HloInstruction* tuple = instruction.operand(0);
    return tuple->opcode() == HloOpcode::kTuple ? tuple->operand(instruction.tuple_index()) : nullptr;
  };
  get_tuple_element.reads_operand = reads_nothing;
  table.Add(std::move(get_tuple_element));

  // Copies and identity custom-calls are their operand's buffer.
  OpcodeHandler copy(HloOpcode::kCopy);
  copy.types = ElementTypes::kDeviceWord;
  copy.same_buffer_as = [](const HloInstruction& instruction, uint32_t) { return instruction.operand(0); };
  table.Add(std::move(copy));

  // A bitcast-convert between 32-bit types reads the same words as another type.
  OpcodeHandler bitcast_convert(HloOpcode::kBitcastConvert);
  bitcast_convert.check = [](const HloInstruction& instruction) -> Status {
    auto word = [](hlo::PrimitiveType type) {
      return type == hlo::PrimitiveType::F32 || type == hlo::PrimitiveType::S32 || type == hlo::PrimitiveType::U32;
    };
    const hlo::PrimitiveType from = instruction.operand(0)->shape().element_type;
    if (!word(from) || !word(instruction.shape().element_type)) {
      return Unimplemented("bitcast-convert " + instruction.name() + " from " + hlo::PrimitiveTypeName(from) + " to " +
                           hlo::PrimitiveTypeName(instruction.shape().element_type) +
                           ": only between the 32-bit types f32, s32 and u32");
    }
    return OkStatus();
  };
  bitcast_convert.types = ElementTypes::kDeviceWord;
  bitcast_convert.same_buffer_as = [](const HloInstruction& instruction, uint32_t) { return instruction.operand(0); };
  table.Add(std::move(bitcast_convert));

  // Identity custom-calls, and the f16 of f32 words that hold f16 values (f16-rounding-expansion): an f16 is
  // held in the f32 word of its value, so both are their operand's buffer.
  OpcodeHandler custom_call(HloOpcode::kCustomCall);
  auto same_words = [](const HloInstruction& instruction) {
    return hlo::IsIdentityCustomCallTarget(instruction.custom_call_target()) ||
           instruction.custom_call_target() == hlo::kExactF16Target;
  };
  custom_call.check = [same_words](const HloInstruction& instruction) -> Status {
    if (!same_words(instruction)) return UnsupportedOp(instruction);
    return OkStatus();
  };
  custom_call.types = ElementTypes::kDeviceWord;
  custom_call.same_buffer_as = [same_words](const HloInstruction& instruction, uint32_t) -> const HloInstruction* {
    return same_words(instruction) ? instruction.operand(0) : nullptr;
  };
  table.Add(std::move(custom_call));
}

void CodeGenerator::LoadAddress(Reg reg, const HloInstruction* value, uint32_t extra_lines) {
  const Location& location = locations_.at(BufferOf(value));
  asm_.LoadAddress(reg, location.kind, location.index, location.offset + extra_lines);
}

Status CodeGenerator::LoadScalar(Reg rd, const HloInstruction* value) {
  TPU_ASSIGN_OR_RETURN(ScopedReg hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg one, NewReg());
  LoadAddress(hbm, value, 0);
  asm_.Li(one, 1);
  asm_.DmaLoad(hbm, kZeroReg, one, 1);
  asm_.Sync(kSyncDma);
  asm_.Sld(rd, kZeroReg, 0);
  return OkStatus();
}

void CodeGenerator::ClampScalar(Reg index, Reg bound, uint32_t limit) {
  Assembler::Label not_negative = asm_.NewLabel(), in_range = asm_.NewLabel();
  asm_.Li(bound, limit);
  asm_.Blt(kZeroReg, index, not_negative);
  asm_.Li(index, 0);
  asm_.Bind(not_negative);
  asm_.Blt(index, bound, in_range);
  asm_.Addi(index, bound, 0);
  asm_.Bind(in_range);
}

int32_t CodeGenerator::ConstantRegion(const HloInstruction& constant) {
  auto it = constant_regions_.find(&constant);
  if (it != constant_regions_.end()) return it->second;
  DeviceLayout layout = MakeDeviceLayout(constant.shape(), L());
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(ToDeviceBytes(constant.literal(), layout));
  int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_regions_[&constant] = index;
  return index;
}

StatusOr<int32_t> CodeGenerator::ConstantRow(uint32_t bits, int64_t cols) {
  auto key = std::make_pair(bits, cols);
  auto it = constant_rows_.find(key);
  if (it != constant_rows_.end()) return it->second;
  float value;
  std::memcpy(&value, &bits, 4);
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F32, {cols});
  DeviceLayout layout = MakeDeviceLayout(shape, L());
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(
      ToDeviceBytes(hlo::Literal(shape, std::vector<float>(static_cast<size_t>(cols), value)), layout));
  int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_rows_[key] = index;
  return index;
}

int32_t CodeGenerator::IdentityRegion(float diagonal) {
  const uint32_t lanes = L();
  // Negative column counts: never the key of a constant row.
  auto key = std::make_pair(FloatBits(diagonal), -static_cast<int64_t>(lanes));
  if (auto it = constant_rows_.find(key); it != constant_rows_.end()) return it->second;
  std::vector<float> eye(size_t{lanes} * lanes, 0.0f);
  for (uint32_t i = 0; i < lanes; ++i) eye[size_t{i} * lanes + i] = diagonal;
  hlo::Shape shape = hlo::Shape::Make(hlo::PrimitiveType::F32, {int64_t{lanes}, int64_t{lanes}});
  DeviceLayout layout = MakeDeviceLayout(shape, lanes);
  program_.constants.push_back(layout);
  program_.constant_bytes.push_back(ToDeviceBytes(hlo::Literal(shape, eye), layout));
  const int32_t index = static_cast<int32_t>(program_.constants.size() - 1);
  constant_rows_[key] = index;
  return index;
}

Status CodeGenerator::ForChunks(uint32_t total, uint32_t chunk,
                                const std::vector<std::pair<Reg, uint32_t>>& pointers,
                                const std::function<Status(Reg count, uint32_t count_value)>& body) {
  if (total == 0) return OkStatus();
  chunk = std::min(chunk, total);
  const uint32_t full = total / chunk;
  const uint32_t rest = total % chunk;
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  auto advance = [&](uint32_t items) {
    for (const auto& [reg, step] : pointers) asm_.Addi(reg, reg, items * step);
  };
  asm_.Li(count, chunk);
  if (full >= 2) {
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
    asm_.Li(remaining, full);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(body(count, chunk));
    advance(chunk);
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, loop);
  } else {
    TPU_RETURN_IF_ERROR(body(count, chunk));
    if (rest > 0) advance(chunk);
  }
  if (rest > 0) {
    asm_.Li(count, rest);
    TPU_RETURN_IF_ERROR(body(count, rest));
  }
  return OkStatus();
}

uint32_t CodeGenerator::PipelineChunk(uint32_t total, const ChunkPipeline& pipeline, bool* pipelined) const {
  *pipelined = false;
  const uint32_t granule = std::max(pipeline.granule, 1u);
  const uint32_t available = options_.vmem_lines > pipeline.first_set ? options_.vmem_lines - pipeline.first_set : 0;
  const uint32_t cap = std::min(pipeline.max_chunk, std::max(total, 1u));
  auto fit = [&](uint32_t lines) { return std::min(lines, cap) / granule * granule; };
  if (total >= min_pipelined_lines_) {
    // Enough chunks for the stages to overlap, none so short that the memory latency dominates it.
    constexpr uint32_t kChunks = 4, kMinChunk = 128;
    const uint32_t chunk = fit(std::min(std::max(kMinChunk, (total + kChunks - 1) / kChunks),
                                        available / (3 * pipeline.buffers + pipeline.shared_buffers)));
    if (chunk > 0 && total / chunk >= 2) {
      *pipelined = true;
      return chunk;
    }
  }
  return fit(available / (pipeline.buffers + pipeline.shared_buffers));
}

Status CodeGenerator::PipelineChunks(const HloInstruction& instruction, uint32_t total, const ChunkPipeline& pipeline) {
  if (total == 0) return OkStatus();
  bool pipelined = false;
  const uint32_t chunk = PipelineChunk(total, pipeline, &pipelined);
  if (chunk == 0) {
    return VmemOverflow(instruction, pipeline.first_set + (pipeline.buffers + pipeline.shared_buffers) *
                                                              std::max(pipeline.granule, 1u));
  }
  const uint32_t full_chunks = total / chunk, rest = total % chunk;
  auto advance = [&](const std::vector<std::pair<Reg, uint32_t>>& pointers, Reg lines) {
    for (const auto& pointer : pointers) asm_.Add(pointer.first, pointer.first, lines);
  };
  if (pipeline.prologue) TPU_RETURN_IF_ERROR(pipeline.prologue(chunk));
  const uint32_t first_set = pipeline.first_set + pipeline.shared_buffers * chunk;
  std::vector<ScopedReg> buffer_regs;
  std::vector<Reg> buffer;
  const uint32_t addressed = pipeline.set_base_only ? 1 : pipeline.buffers;
  for (uint32_t i = 0; i < addressed; ++i) {
    TPU_ASSIGN_OR_RETURN(ScopedReg reg, NewReg());
    buffer.push_back(reg);
    buffer_regs.push_back(std::move(reg));
  }
  if (!pipelined) {
    // One set at fixed lines.
    for (uint32_t i = 0; i < addressed; ++i) asm_.Li(buffer[i], first_set + i * chunk);
    std::vector<std::pair<Reg, uint32_t>> pointers = pipeline.load_pointers;
    pointers.insert(pointers.end(), pipeline.store_pointers.begin(), pipeline.store_pointers.end());
    return ForChunks(total, chunk, pointers, [&](Reg count, uint32_t) -> Status {
      TPU_RETURN_IF_ERROR(pipeline.load(buffer, count));
      asm_.Sync(kSyncDma);
      TPU_RETURN_IF_ERROR(pipeline.compute(buffer, count));
      asm_.Sync(kSyncVpu);
      return pipeline.store(buffer, count);
    });
  }
  // The sets of chunk k-1 (being stored), k (being computed) and k+1 (being loaded), rotated after each
  // iteration. The first iteration stores and the last loads zero lines, so that one code body serves
  // every iteration.
  const uint32_t set_lines = pipeline.buffers * chunk;
  TPU_ASSIGN_OR_RETURN(ScopedReg previous, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg current, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg next, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg full_count, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg store_count, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg load_count, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
  asm_.Li(current, first_set);
  asm_.Li(next, first_set + set_lines);
  asm_.Li(previous, first_set + 2 * set_lines);
  asm_.Li(full_count, chunk);
  asm_.Li(store_count, 0);
  asm_.Li(load_count, chunk);
  asm_.Li(remaining, full_chunks);
  // The buffers of `set`, then a stage on them.
  auto stage = [&](const ChunkPipeline::Stage& run, Reg set, Reg count) -> Status {
    for (uint32_t i = 0; i < addressed; ++i) asm_.Addi(buffer[i], set, i * chunk);
    return run(buffer, count);
  };
  TPU_RETURN_IF_ERROR(stage(pipeline.load, current, full_count));
  advance(pipeline.load_pointers, full_count);
  // Iteration k: compute chunk k while the DMA unit stores chunk k-1 and loads chunk k+1. The SYNC at its
  // start waits for chunk k's load, chunk k-1's computation and chunk k-2's store (whose set is loaded
  // next); the VPU and the DMA unit each run their instructions in order.
  Assembler::Label loop = asm_.NewLabel();
  asm_.Bind(loop);
  asm_.Sync(kSyncDma | kSyncVpu);
  TPU_RETURN_IF_ERROR(stage(pipeline.compute, current, full_count));
  TPU_RETURN_IF_ERROR(stage(pipeline.store, previous, store_count));
  advance(pipeline.store_pointers, store_count);
  asm_.Addi(store_count, full_count, 0);
  asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
  Assembler::Label not_last = asm_.NewLabel();
  asm_.Bne(remaining, kZeroReg, not_last);
  asm_.Li(load_count, 0);
  asm_.Bind(not_last);
  TPU_RETURN_IF_ERROR(stage(pipeline.load, next, load_count));
  advance(pipeline.load_pointers, load_count);
  {
    TPU_ASSIGN_OR_RETURN(ScopedReg freed, NewReg());
    asm_.Addi(freed, previous, 0);
    asm_.Addi(previous, current, 0);
    asm_.Addi(current, next, 0);
    asm_.Addi(next, freed, 0);
  }
  asm_.Bne(remaining, kZeroReg, loop);
  // The last full chunk, then the shorter rest in the set that the last iteration did not fill.
  asm_.Sync(kSyncVpu);
  TPU_RETURN_IF_ERROR(stage(pipeline.store, previous, full_count));
  advance(pipeline.store_pointers, full_count);
  if (rest == 0) return OkStatus();
  asm_.Li(load_count, rest);
  TPU_RETURN_IF_ERROR(stage(pipeline.load, current, load_count));
  asm_.Sync(kSyncDma);
  TPU_RETURN_IF_ERROR(pipeline.compute(buffer, load_count));
  asm_.Sync(kSyncVpu);
  return pipeline.store(buffer, load_count);
}

Status CodeGenerator::EmitCopy(const HloInstruction* from, Location to) {
  return EmitCopyLines(locations_.at(BufferOf(from)), to, MakeDeviceLayout(from->shape(), L()).lines);
}

Status CodeGenerator::EmitCopyLines(Location from, Location to, uint32_t lines) {
  TPU_ASSIGN_OR_RETURN(ScopedReg src, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg dst, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg buffer, NewReg());
  asm_.LoadAddress(src, from.kind, from.index, from.offset);
  asm_.LoadAddress(dst, to.kind, to.index, to.offset);
  asm_.Li(buffer, 0);
  // One unit moves both ways and completes in order, so no SYNC is needed between load and store.
  return ForChunks(lines, options_.vmem_lines, {{src, 1}, {dst, 1}}, [&](Reg count, uint32_t) {
    asm_.DmaLoad(src, buffer, count, 1);
    asm_.DmaStore(dst, buffer, count, 1);
    return OkStatus();
  });
}

// Rank-2 transpose with VTRANS: a block of LANES operand rows is gathered tile-major (tile t of row i
// at line t*LANES + i, rows past the operand zero), VTRANS turns every tile around, and line c of the
// result is output row c of the block's column tile: one strided store for the whole block.
Status CodeGenerator::StoreColumnTiles(Reg from_vmem, Reg rows, Reg row_hbm, uint32_t first_tile,
                                       uint32_t tile_count, uint32_t row_tiles) {
  TPU_ASSIGN_OR_RETURN(ScopedReg tile_hbm, NewReg());
  asm_.Addi(tile_hbm, row_hbm, first_tile);
  if (tile_count == 1) {
    asm_.DmaStore(tile_hbm, from_vmem, rows, row_tiles);
    return OkStatus();
  }
  TPU_ASSIGN_OR_RETURN(ScopedReg tile_end, NewReg());
  asm_.Addi(tile_end, row_hbm, first_tile + tile_count);
  Assembler::Label loop = asm_.NewLabel();
  asm_.Bind(loop);
  asm_.DmaStore(tile_hbm, from_vmem, rows, row_tiles);
  asm_.Addi(tile_hbm, tile_hbm, 1);
  asm_.Bne(tile_hbm, tile_end, loop);
  return OkStatus();
}

Status CodeGenerator::ForRowBlocks(const HloInstruction& output, uint32_t rows, Reg out_hbm,
                                   const std::function<Status(uint32_t block_rows)>& emit_block) {
  const uint32_t lanes = L();
  const uint32_t full_blocks = rows / lanes, rest_rows = rows % lanes;
  if (full_blocks == 1) {
    TPU_RETURN_IF_ERROR(emit_block(lanes));
  } else if (full_blocks >= 2) {
    TPU_ASSIGN_OR_RETURN(ScopedReg out_end, NewReg());
    LoadAddress(out_end, &output, full_blocks);
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    TPU_RETURN_IF_ERROR(emit_block(lanes));
    asm_.Bne(out_hbm, out_end, loop);
  }
  if (rest_rows != 0) TPU_RETURN_IF_ERROR(emit_block(rest_rows));
  return OkStatus();
}

void CodeGenerator::MoveTileMajor(DmaDirection direction, Reg hbm, Reg rows, uint32_t row_step, uint32_t vmem_block,
                                  uint32_t block_lines, Reg hbm_cursor, Reg vmem_cursor, Reg end) {
  asm_.Addi(hbm_cursor, hbm, 0);
  asm_.Li(vmem_cursor, vmem_block);
  asm_.Li(end, vmem_block + block_lines);
  Assembler::Label tile_line = asm_.NewLabel();
  asm_.Bind(tile_line);
  if (direction == DmaDirection::kToVmem) {
    asm_.DmaLoad(hbm_cursor, vmem_cursor, rows, row_step);
  } else {
    asm_.DmaStore(hbm_cursor, vmem_cursor, rows, row_step);
  }
  asm_.Addi(hbm_cursor, hbm_cursor, 1);
  asm_.Addi(vmem_cursor, vmem_cursor, L());
  asm_.Bne(vmem_cursor, end, tile_line);
}

void CodeGenerator::ForColumnTiles(uint32_t full_tiles, uint32_t rest, Reg cols_valid, Reg counter, Reg end,
                                   const std::function<void()>& set_end, const std::function<void()>& emit_tile) {
  asm_.Li(cols_valid, L());
  if (full_tiles == 1) {
    emit_tile();
  } else if (full_tiles >= 2) {
    set_end();
    Assembler::Label loop = asm_.NewLabel();
    asm_.Bind(loop);
    emit_tile();
    asm_.Bne(counter, end, loop);
  }
  if (rest != 0) {
    asm_.Li(cols_valid, rest);
    emit_tile();
  }
}

namespace {

// Arrays in `shape`, depth first (the order FlattenOutputs lists the root's values in).
int64_t ArrayCount(const hlo::Shape& shape) {
  if (!shape.IsTuple()) return 1;
  int64_t count = 0;
  for (const hlo::Shape& element : shape.tuple_shapes) count += ArrayCount(element);
  return count;
}

// The flattened output number of the array at `index` in `shape`, or -1 if `index` names no array.
int64_t FlatOutputIndex(const hlo::Shape& shape, const std::vector<int64_t>& index) {
  int64_t flat = 0;
  const hlo::Shape* current = &shape;
  for (int64_t i : index) {
    if (!current->IsTuple() || i < 0 || i >= static_cast<int64_t>(current->tuple_shapes.size())) return -1;
    for (int64_t j = 0; j < i; ++j) flat += ArrayCount(current->tuple_shapes[j]);
    current = &current->tuple_shapes[i];
  }
  return current->IsTuple() ? -1 : flat;
}

}  // namespace

StatusOr<std::vector<int32_t>> CodeGenerator::OutputAliases(const std::vector<const HloInstruction*>& outputs) const {
  const hlo::HloComputation& entry = *module_.entry_computation();
  std::vector<int32_t> aliases;
  for (const hlo::InputOutputAlias& alias : module_.input_output_aliases()) {
    if (aliases.empty()) aliases.assign(outputs.size(), -1);
    const int64_t output = FlatOutputIndex(entry.root_instruction()->shape(), alias.output_index);
    const int64_t parameter = alias.parameter_number;
    const std::string text = "input_output_alias of output {" + [&] {
      std::string index;
      for (int64_t i : alias.output_index) index += (index.empty() ? "" : ",") + std::to_string(i);
      return index;
    }() + "} to parameter " + std::to_string(parameter);
    if (output < 0 || output >= static_cast<int64_t>(outputs.size())) {
      return InvalidArgument(text + ": the output index names no array of the result");
    }
    if (parameter < 0 || parameter >= entry.num_parameters()) return InvalidArgument(text + ": no such parameter");
    if (!alias.parameter_index.empty()) {
      return Unimplemented(text + ": aliasing an element of a tuple parameter is not supported");
    }
    if (aliases[output] >= 0) return InvalidArgument(text + ": the output already aliases a parameter");
    if (std::count(aliases.begin(), aliases.end(), parameter) > 0) {
      return InvalidArgument(text + ": the parameter is already aliased by another output");
    }
    const hlo::Shape& parameter_shape = entry.parameter_instruction(parameter)->shape();
    if (!(MakeDeviceLayout(parameter_shape, L()) == MakeDeviceLayout(outputs[output]->shape(), L()))) {
      return InvalidArgument(text + ": the output is " + outputs[output]->shape().ToString() + ", the parameter " +
                             parameter_shape.ToString());
    }
    aliases[output] = static_cast<int32_t>(parameter);
  }
  return aliases;
}

bool CodeGenerator::InPlaceAfterLastRead(const HloInstruction& value, const HloInstruction& parameter,
                                         const std::map<const HloInstruction*, int64_t>& position,
                                         const std::map<const HloInstruction*, int64_t>& last_use) const {
  const auto read = last_use.find(&parameter);
  const int64_t defined_at = position.at(&value);
  if (read == last_use.end() || read->second < defined_at) return true;
  if (read->second > defined_at) return false;
  // The value's own instruction is the last reader: its lowering may overwrite an operand of the same
  // shape when it works chunk by chunk (OpcodeHandler::in_place); a broadcast of the parameter is read
  // whole at other offsets, so it may not be overwritten.
  const OpcodeHandler* handler = OpcodeHandlers().Find(value.opcode());
  if (handler == nullptr || !handler->InPlace(value)) return false;
  for (const HloInstruction* operand : value.operands()) {
    if (BufferOf(operand) == &parameter && operand->shape().dimensions != value.shape().dimensions) return false;
    if (operand->opcode() == HloOpcode::kBroadcast && BufferOf(operand->operand(0)) == &parameter) return false;
  }
  return true;
}

StatusOr<uint64_t> CodeGenerator::CheckHbm(const std::vector<HloInstruction*>& order,
                                           const BufferAssignment& temps) const {
  const hlo::HloComputation& entry = *module_.entry_computation();
  std::vector<HbmAllocation> allocations;
  auto describe = [](const std::string& what, const HloInstruction& instruction) {
    return what + " " + instruction.name() + " " + instruction.shape().ToString();
  };
  for (size_t i = 0; i < program_.parameters.size(); ++i) {
    allocations.push_back({describe("parameter " + std::to_string(i), *entry.parameter_instruction(i)),
                           program_.parameters[i].lines});
  }
  std::vector<const HloInstruction*> outputs;
  FlattenOutputs(entry.root_instruction(), &outputs);
  for (size_t i = 0; i < program_.outputs.size(); ++i) {
    if (!program_.output_aliases.empty() && program_.output_aliases[i] >= 0) continue;  // a parameter's buffer
    allocations.push_back({describe("output " + std::to_string(i), *outputs[i]), program_.outputs[i].lines});
  }
  for (size_t i = 0; i < program_.constants.size(); ++i) {
    allocations.push_back({"constant " + std::to_string(i) + " " + program_.constants[i].shape.ToString(),
                           program_.constants[i].lines});
  }
  if (program_.temp_lines > 0) {
    // The largest values that occupy the region at its peak.
    std::vector<const HloInstruction*> live;
    for (int64_t id : temps.live_at_peak) {
      if (id < static_cast<int64_t>(order.size())) live.push_back(order[id]);  // else a staged parameter copy
    }
    auto lines = [&](const HloInstruction* value) { return MakeDeviceLayout(value->shape(), L()).lines; };
    std::stable_sort(live.begin(), live.end(), [&](auto* a, auto* b) { return lines(a) > lines(b); });
    std::string text;
    for (size_t i = 0; i < live.size() && i < 3; ++i) {
      text += (i == 0 ? "" : ", ") + live[i]->name() + " " + live[i]->shape().ToString();
    }
    if (live.size() > 3) text += ", " + std::to_string(live.size() - 3) + " more";
    allocations.push_back({"temp region (largest values live at its peak: " + text + ")", program_.temp_lines});
  }
  if (program_.receive_lines > 0) {
    allocations.push_back({"receive region (the collectives' slots)", program_.receive_lines});
  }
  const uint64_t limit = options_.hbm_lines == 0 ? std::numeric_limits<uint64_t>::max() : options_.hbm_lines;
  return CheckHbmFits(allocations, limit, LineBytes(L()));
}

namespace {

// DeviceLayout::lines is 32 bits: a module with a parameter total or a value beyond 2^32 lines is reported
// here, with 64-bit sizes, before any layout truncates them (smaller modules get CheckHbm's full account).
Status CheckSizesBeforeLayout(const hlo::HloComputation& entry, const std::vector<HloInstruction*>& order,
                              const std::set<const HloInstruction*>& needed, uint32_t lanes, uint64_t hbm_lines) {
  const uint64_t kAddressableLines = std::numeric_limits<uint32_t>::max();
  const uint64_t limit = hbm_lines == 0 ? kAddressableLines : std::min(hbm_lines, kAddressableLines);
  auto describe = [](const std::string& what, const HloInstruction& value) {
    return what + " " + value.name() + " " + value.shape().ToString();
  };
  std::vector<HbmAllocation> parameters;
  uint64_t parameter_lines = 0;
  for (const HloInstruction* parameter : entry.parameter_instructions()) {
    const uint64_t lines = DeviceLines(parameter->shape(), lanes);
    parameters.push_back({describe("parameter " + std::to_string(parameter->parameter_number()), *parameter), lines});
    parameter_lines = std::min(parameter_lines + std::min(lines, kAddressableLines + 1), kAddressableLines + 1);
  }
  if (parameter_lines > kAddressableLines) return CheckHbmFits(parameters, limit, LineBytes(lanes)).status();
  for (const HloInstruction* value : order) {
    if (value->opcode() == HloOpcode::kParameter || needed.count(value) == 0) continue;
    const uint64_t lines = DeviceLines(value->shape(), lanes);
    if (lines > kAddressableLines) {
      return CheckHbmFits({HbmAllocation{describe("value", *value), lines}}, limit, LineBytes(lanes)).status();
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<Program> CodeGenerator::Run(CompileStats* stats) {
  const hlo::HloComputation* entry = module_.entry_computation();
  if (entry == nullptr || entry->root_instruction() == nullptr) {
    return InvalidArgument("module " + module_.name() + " has no entry computation");
  }
  if (L() == 0 || options_.vmem_lines == 0) return InvalidArgument("CompileOptions: lanes and vmem_lines must be > 0");
  program_.module_name = module_.name();
  program_.lanes = L();
  TPU_ASSIGN_OR_RETURN(grid_, hlo::ModuleDeviceGrid(module_));
  if (options_.replica_count > 0 && grid_.devices() == 1) grid_.replicas = options_.replica_count;
  program_.replicas = static_cast<uint32_t>(grid_.replicas);
  program_.partitions = static_cast<uint32_t>(grid_.partitions);

  // Program order: the entry's instructions, each while loop's condition and body and each conditional's
  // branches in line (control_flow.cc).
  std::vector<HloInstruction*> order;
  TPU_RETURN_IF_ERROR(AppendProgramOrder(*entry, 0, &order));
  for (const HloInstruction* instruction : order) TPU_RETURN_IF_ERROR(CheckSupported(*instruction));
  TPU_RETURN_IF_ERROR(CollectFeeds(order));

  // Parameters.
  for (int64_t i = 0; i < entry->num_parameters(); ++i) {
    const HloInstruction* parameter = entry->parameter_instruction(i);
    if (parameter == nullptr) return InvalidArgument("entry parameter " + std::to_string(i) + " is missing");
    program_.parameters.push_back(MakeDeviceLayout(parameter->shape(), L()));
    locations_[parameter] = Location{RegionKind::kParameter, static_cast<uint32_t>(i), 0};
  }

  // Which buffer-defining values must exist in HBM: read from memory by some user, or an output.
  std::vector<const HloInstruction*> outputs;
  FlattenOutputs(entry->root_instruction(), &outputs);
  std::set<const HloInstruction*> needed;
  for (const HloInstruction* instruction : order) {
    const OpcodeHandler& handler = *OpcodeHandlers().Find(instruction->opcode());  // CheckSupported above
    // A value that is another's buffer reads nothing: its readers count for that buffer.
    if (handler.SameBufferAs(*instruction, L()) != nullptr) continue;
    for (const HloInstruction* operand : instruction->operands()) {
      if (handler.ReadsOperand(*instruction, *operand, L())) needed.insert(BufferOf(operand));
      if (const HloInstruction* source = handler.ReadsThrough(*instruction, *operand, L())) {
        needed.insert(BufferOf(source));
      }
    }
  }
  for (const HloInstruction* output : outputs) needed.insert(BufferOf(output));
  // Loops copy their initial values and results into the state buffers and test their predicate.
  for (const Loop& loop : loops_) {
    for (const HloInstruction* initial : loop.instruction->operand(0)->operands()) needed.insert(BufferOf(initial));
    for (size_t i = 0; i < loop.instruction->shape().tuple_shapes.size(); ++i) needed.insert(BufferOf(LoopResult(loop, i)));
    if (!loop.scalar_test) needed.insert(BufferOf(LoopPredicate(loop)));
  }
  // Outfeeds copy their elements into the outfeed slot.
  std::vector<const HloInstruction*> feeds;
  for (const HloInstruction* instruction : order) {
    if (instruction->opcode() == HloOpcode::kInfeed || instruction->opcode() == HloOpcode::kOutfeed) {
      feeds.push_back(instruction);
    }
    if (instruction->opcode() != HloOpcode::kOutfeed) continue;
    for (const HloInstruction* element : OutfeedElements(*instruction)) needed.insert(BufferOf(element));
  }
  // Conditionals read their selector and copy their branches' results into the result buffers.
  for (const Conditional& conditional : conditionals_) {
    needed.insert(BufferOf(conditional.instruction->operand(0)));
    for (size_t k = 0; k < conditional.branches.size(); ++k) {
      for (size_t i = 0; i < ResultCount(conditional); ++i) needed.insert(BufferOf(BranchResult(conditional, k, i)));
    }
  }
  TPU_RETURN_IF_ERROR(CheckSizesBeforeLayout(*entry, order, needed, L(), options_.hbm_lines));

  // Positions in program order and the last position that reads each buffer (end_position: read by a
  // copy at the end of the program).
  const int64_t end_position = static_cast<int64_t>(order.size());
  std::map<const HloInstruction*, int64_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = static_cast<int64_t>(i);
  std::map<const HloInstruction*, int64_t> last_use;
  for (const HloInstruction* instruction : order) {
    const OpcodeHandler& handler = *OpcodeHandlers().Find(instruction->opcode());
    for (const HloInstruction* operand : instruction->operands()) {
      const HloInstruction* buffer = BufferOf(operand);
      last_use[buffer] = std::max(last_use[buffer], position[instruction]);
      // A folded broadcast is read through its source when the user runs.
      if (operand->opcode() == HloOpcode::kBroadcast) {
        const HloInstruction* source = BufferOf(operand->operand(0));
        last_use[source] = std::max(last_use[source], position[instruction]);
      }
      if (const HloInstruction* source = handler.ReadsThrough(*instruction, *operand, L())) {
        const HloInstruction* source_buffer = BufferOf(source);
        last_use[source_buffer] = std::max(last_use[source_buffer], position[instruction]);
      }
    }
  }

  auto read_at = [&](const HloInstruction* value, int64_t at) {
    const HloInstruction* buffer = BufferOf(value);
    last_use[buffer] = std::max(last_use[buffer], at);
  };
  for (const Loop& loop : loops_) {
    for (const HloInstruction* initial : loop.instruction->operand(0)->operands()) read_at(initial, loop.begin);
    for (size_t i = 0; i < loop.instruction->shape().tuple_shapes.size(); ++i) read_at(LoopResult(loop, i), loop.end);
    if (loop.scalar_test) {
      for (const HloInstruction* side : LoopPredicate(loop)->operands()) read_at(side, loop.test);
    } else {
      read_at(LoopPredicate(loop), loop.test);
    }
  }
  for (const HloInstruction* feed : feeds) {
    if (feed->opcode() != HloOpcode::kOutfeed) continue;
    for (const HloInstruction* element : OutfeedElements(*feed)) read_at(element, position[feed]);
  }
  for (const Conditional& conditional : conditionals_) {
    const size_t branches = conditional.branches.size();
    // The selector at the dispatch, branch k's results where the next branch (or the exit) begins.
    read_at(conditional.instruction->operand(0), conditional.branch_begin[0]);
    for (size_t k = 0; k < branches; ++k) {
      const int64_t branch_end = k + 1 < branches ? conditional.branch_begin[k + 1] : conditional.end;
      for (size_t i = 0; i < ResultCount(conditional); ++i) read_at(BranchResult(conditional, k, i), branch_end);
    }
  }
  // The state and result buffers are placed with the temporaries below; until then a placeholder keeps an
  // output that is a loop's or a conditional's result from being computed into its output region (it is
  // copied there at the end).
  for (const Loop& loop : loops_) {
    for (size_t i = 0; i < loop.instruction->shape().tuple_shapes.size(); ++i) {
      for (const HloInstruction* element : StateElements(loop, i)) locations_[element] = Location{};
    }
  }
  for (const Conditional& conditional : conditionals_) {
    for (size_t i = 0; i < ResultCount(conditional); ++i) {
      for (const HloInstruction* element : ResultElements(conditional, i)) locations_[element] = Location{};
    }
  }

  // input_output_alias: output -> parameter whose buffer receives it.
  TPU_ASSIGN_OR_RETURN(std::vector<int32_t> aliases, OutputAliases(outputs));
  if (!aliases.empty()) program_.output_aliases = aliases;
  auto alias_of = [&](size_t output) { return aliases.empty() ? -1 : aliases[output]; };
  // A loop of the entry whose state element starts as a donated parameter that nothing reads after the
  // loop starts, and ends as the output aliased to that parameter, keeps the element in the parameter's
  // buffer: no copy into the state before the loop, none into the parameter after it (a training loop's
  // weights stay where they are from execution to execution).
  std::map<std::pair<size_t, size_t>, int32_t> state_parameter;  // (loop, element) -> parameter
  std::map<const HloInstruction*, int32_t> state_in_parameter;    // its state buffers -> parameter
  std::set<int32_t> parameters_holding_state;
  for (size_t l = 0; l < loops_.size(); ++l) {
    const Loop& loop = loops_[l];
    if (loop.instruction->parent() != entry) continue;
    for (size_t i = 0; i < loop.instruction->shape().tuple_shapes.size(); ++i) {
      const HloInstruction* initial = BufferOf(loop.instruction->operand(0)->operand(static_cast<int64_t>(i)));
      if (initial->opcode() != HloOpcode::kParameter || initial->parent() != entry) continue;
      const int32_t parameter = static_cast<int32_t>(initial->parameter_number());
      if (parameters_holding_state.count(parameter) > 0 || last_use[initial] > loop.begin) continue;
      const std::vector<const HloInstruction*> elements = StateElements(loop, i);
      for (size_t j = 0; j < outputs.size(); ++j) {
        if (alias_of(j) != parameter) continue;
        if (std::find(elements.begin(), elements.end(), BufferOf(outputs[j])) == elements.end()) continue;
        state_parameter[{l, i}] = parameter;
        for (const HloInstruction* element : elements) state_in_parameter[element] = parameter;
        parameters_holding_state.insert(parameter);
        break;
      }
    }
  }
  auto holds_state = [&](const HloInstruction* buffer, int32_t parameter) {
    const auto holder = state_in_parameter.find(buffer);
    return holder != state_in_parameter.end() && holder->second == parameter;
  };
  for (size_t i = 0; i < outputs.size(); ++i) program_.outputs.push_back(MakeDeviceLayout(outputs[i]->shape(), L()));
  // Outputs that are copied at the end read their value then.
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HloInstruction* buffer = BufferOf(outputs[i]);
    const bool computed = buffer->opcode() != HloOpcode::kParameter && buffer->opcode() != HloOpcode::kConstant;
    if (!computed && !(buffer->opcode() == HloOpcode::kParameter && buffer->parameter_number() == alias_of(i))) {
      last_use[buffer] = end_position;
    }
  }

  // Outputs. An output aliased to parameter p is written into p's buffer: nothing to do when it is p
  // itself; a value computed here is written there directly when nothing reads p's old contents later
  // (InPlaceAfterLastRead); otherwise it is computed into a temp and copied into p at the end. Other
  // outputs: a value computed here is written straight into its output region the first time it
  // appears; parameters, constants and repeated values are copied there at the end.
  std::vector<std::pair<const HloInstruction*, Location>> output_copies;  // into output regions
  std::vector<std::pair<const HloInstruction*, Location>> alias_copies;   // into parameter buffers
  for (bool aliased_pass : {true, false}) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const int32_t parameter = alias_of(i);
      if ((parameter >= 0) != aliased_pass) continue;
      const HloInstruction* buffer = BufferOf(outputs[i]);
      const bool computed = buffer->opcode() != HloOpcode::kParameter && buffer->opcode() != HloOpcode::kConstant;
      if (parameter < 0) {
        Location location{RegionKind::kOutput, static_cast<uint32_t>(i), 0};
        if (computed && locations_.count(buffer) == 0) {
          locations_[buffer] = location;
        } else {
          output_copies.push_back({outputs[i], location});
        }
        continue;
      }
      ++aliased_outputs_;
      if (buffer == entry->parameter_instruction(parameter) || holds_state(buffer, parameter)) continue;  // already there
      const HloInstruction* param = entry->parameter_instruction(parameter);
      const Location location{RegionKind::kParameter, static_cast<uint32_t>(parameter), 0};
      if (computed && locations_.count(buffer) == 0 && InPlaceAfterLastRead(*buffer, *param, position, last_use)) {
        locations_[buffer] = location;
      } else {
        alias_copies.push_back({outputs[i], location});
      }
    }
  }
  alias_copies_ = static_cast<uint32_t>(alias_copies.size());
  for (const auto& [value, location] : alias_copies) last_use[BufferOf(value)] = end_position;
  for (const auto& [value, location] : output_copies) last_use[BufferOf(value)] = end_position;

  // Constants that are read from memory get a region.
  for (const HloInstruction* instruction : order) {
    if (instruction->opcode() == HloOpcode::kConstant && needed.count(instruction) > 0) {
      locations_[instruction] = Location{RegionKind::kConstant, static_cast<uint32_t>(ConstantRegion(*instruction)), 0};
    }
  }

  // A copy into a parameter buffer whose source is another parameter's old contents that a copy
  // overwrites too (a permutation of donated parameters) goes through a temp first.
  std::set<uint32_t> overwritten_at_end;
  for (const auto& [value, location] : alias_copies) overwritten_at_end.insert(location.index);
  std::vector<std::pair<const HloInstruction*, int64_t>> staged;  // parameter, temp id
  std::vector<BufferRequest> requests;
  for (const auto& [value, location] : alias_copies) {
    const HloInstruction* source = BufferOf(value);
    if (source->opcode() == HloOpcode::kParameter &&
        overwritten_at_end.count(static_cast<uint32_t>(source->parameter_number())) > 0) {
      BufferRequest request;
      request.id = end_position + static_cast<int64_t>(staged.size());
      request.lines = MakeDeviceLayout(source->shape(), L()).lines;
      request.defined_at = request.last_use = end_position;
      requests.push_back(request);
      staged.push_back({source, request.id});
    }
  }

  // A loop body's result for an element whose old value the body no longer reads by then is computed
  // straight into the element's state buffer: the state stays in place, the back edge copies nothing.
  std::map<const HloInstruction*, std::pair<size_t, size_t>> in_state;  // result -> (loop, element)
  for (size_t l = 0; l < loops_.size(); ++l) {
    const Loop& loop = loops_[l];
    const hlo::HloComputation* body = loop.instruction->called_computation("body");
    for (size_t i = 0; i < loop.instruction->shape().tuple_shapes.size(); ++i) {
      const HloInstruction* result = BufferOf(LoopResult(loop, i));
      if (result->parent() != body || needed.count(result) == 0 || locations_.count(result) > 0 ||
          in_state.count(result) > 0 || !OpcodeHandlers().Find(result->opcode())->emit) {
        continue;
      }
      bool reads_done = true;
      for (const HloInstruction* old : StateElements(loop, i)) {
        if (old->parent() == body) reads_done = reads_done && InPlaceAfterLastRead(*result, *old, position, last_use);
      }
      if (reads_done) in_state[result] = {l, i};
    }
  }

  // Temporaries: liveness-based offsets in the temp region. What an infeed receives is written at the
  // infeed.
  std::map<const HloInstruction*, int64_t> written_at;
  for (const HloInstruction* feed : feeds) {
    if (feed->opcode() != HloOpcode::kInfeed) continue;
    for (const HloInstruction* element : InfeedElements(*feed)) {
      if (element != nullptr) written_at[element] = position[feed];
    }
  }
  for (const HloInstruction* instruction : order) {
    if (needed.count(instruction) == 0 || locations_.count(instruction) > 0 || in_state.count(instruction) > 0) continue;
    if (BufferOf(instruction) != instruction) continue;
    BufferRequest request;
    request.id = position[instruction];
    request.lines = MakeDeviceLayout(instruction->shape(), L()).lines;
    const auto written = written_at.find(instruction);
    request.defined_at = written != written_at.end() ? written->second : position[instruction];
    request.last_use = std::max(last_use[instruction], request.defined_at);
    requests.push_back(request);
  }
  // Loop state: one buffer per element from the initial copies to the last read of any of its
  // get-tuple-elements (the loop's end at least); results that are another element's old value are
  // staged through a temp at the back edge.
  int64_t next_id = end_position + static_cast<int64_t>(staged.size());
  std::vector<std::vector<int64_t>> state_ids(loops_.size());
  for (size_t l = 0; l < loops_.size(); ++l) {
    Loop& loop = loops_[l];
    const size_t elements = loop.instruction->shape().tuple_shapes.size();
    std::set<const HloInstruction*> state_buffers;
    for (size_t i = 0; i < elements; ++i) {
      for (const HloInstruction* element : StateElements(loop, i)) state_buffers.insert(element);
    }
    loop.staged.assign(elements, -1);
    for (size_t i = 0; i < elements; ++i) {
      BufferRequest request;
      request.id = next_id++;
      request.lines = MakeDeviceLayout(loop.instruction->shape().tuple_shapes[i], L()).lines;
      if (state_parameter.count({l, i}) > 0) request.lines = 0;  // in the parameter's buffer
      request.defined_at = loop.begin;
      request.last_use = loop.end;
      for (const HloInstruction* element : StateElements(loop, i)) {
        if (auto it = last_use.find(element); it != last_use.end()) request.last_use = std::max(request.last_use, it->second);
      }
      requests.push_back(request);
      state_ids[l].push_back(request.id);
      const HloInstruction* result = BufferOf(LoopResult(loop, i));
      const std::vector<const HloInstruction*> own = StateElements(loop, i);
      if (state_buffers.count(result) > 0 && std::find(own.begin(), own.end(), result) == own.end()) {
        BufferRequest stage;
        stage.id = next_id++;
        stage.lines = request.lines;
        stage.defined_at = stage.last_use = loop.end;
        requests.push_back(stage);
        loop.staged[i] = stage.id;
      }
    }
  }
  // Conditional results: one buffer per element from the dispatch (a branch's copies write it) to the last
  // read of the element.
  std::vector<std::vector<int64_t>> result_ids(conditionals_.size());
  for (size_t c = 0; c < conditionals_.size(); ++c) {
    const Conditional& conditional = conditionals_[c];
    const hlo::Shape& shape = conditional.instruction->shape();
    for (size_t i = 0; i < ResultCount(conditional); ++i) {
      BufferRequest request;
      request.id = next_id++;
      request.lines = MakeDeviceLayout(shape.IsTuple() ? shape.tuple_shapes[i] : shape, L()).lines;
      request.defined_at = conditional.branch_begin[0];
      request.last_use = conditional.end;
      for (const HloInstruction* element : ResultElements(conditional, i)) {
        if (auto it = last_use.find(element); it != last_use.end()) request.last_use = std::max(request.last_use, it->second);
      }
      requests.push_back(request);
      result_ids[c].push_back(request.id);
    }
  }
  BufferAssignment assignment = AssignBuffers(requests);
  for (size_t c = 0; c < conditionals_.size(); ++c) {
    Conditional& conditional = conditionals_[c];
    conditional.results.clear();
    for (size_t i = 0; i < result_ids[c].size(); ++i) {
      const Location result{RegionKind::kTemp, 0, assignment.offsets.at(result_ids[c][i])};
      conditional.results.push_back(result);
      for (const HloInstruction* element : ResultElements(conditional, i)) locations_[element] = result;
    }
  }
  for (size_t l = 0; l < loops_.size(); ++l) {
    Loop& loop = loops_[l];
    loop.state.clear();
    loop.staged_offsets.assign(loop.staged.size(), 0);
    for (size_t i = 0; i < state_ids[l].size(); ++i) {
      const auto holder = state_parameter.find({l, i});
      const Location state = holder != state_parameter.end()
                                 ? Location{RegionKind::kParameter, static_cast<uint32_t>(holder->second), 0}
                                 : Location{RegionKind::kTemp, 0, assignment.offsets.at(state_ids[l][i])};
      loop.state.push_back(state);
      for (const HloInstruction* element : StateElements(loop, i)) locations_[element] = state;
      if (loop.staged[i] >= 0) loop.staged_offsets[i] = assignment.offsets.at(loop.staged[i]);
    }
  }
  for (const auto& [result, element] : in_state) locations_[result] = loops_[element.first].state[element.second];
  for (const BufferRequest& request : requests) {
    if (request.id < end_position) {
      locations_[order[request.id]] = Location{RegionKind::kTemp, 0, assignment.offsets.at(request.id)};
    }
  }
  program_.temp_lines = assignment.peak_lines;
  TPU_RETURN_IF_ERROR(PlanCollectives(order));
  // A module far too large for the HBM fails here, before its code is generated (the check runs again
  // at the end with the constant rows the lowerings add).
  TPU_RETURN_IF_ERROR(CheckHbm(order, assignment).status());

  // Code: one instruction after the other, separated by a full SYNC so that no unit of the previous
  // instruction still touches VMEM the next one reuses.
  // Each step's code is recorded as a range of words (Program::code_ranges: program.asm, profiles).
  bool first = true;
  std::vector<CodeRange> code_ranges;
  auto emit = [&](std::string what, const std::function<Status()>& body) -> Status {
    if (!first) asm_.Sync(kSyncAll);
    first = false;
    const uint32_t begin = asm_.size();
    TPU_RETURN_IF_ERROR(body());
    code_ranges.push_back(CodeRange{std::move(what), begin, asm_.size()});
    return OkStatus();
  };
  // What starts before a position: a loop's initial copies and top before its condition, a conditional's
  // dispatch before its first branch, the previous branch's end before each other branch. Outer first:
  // the one that ends later.
  struct Opening {
    int64_t end;
    std::function<Status()> emit;
  };
  std::map<int64_t, std::vector<Opening>> openings;
  for (const Loop& loop : loops_) {
    openings[loop.begin].push_back({loop.end, [&] {
      TPU_RETURN_IF_ERROR(emit("while " + loop.instruction->name() + ": initial state", [&] { return EmitLoopEntry(loop); }));
      asm_.Bind(loop.top);
      return OkStatus();
    }});
  }
  for (const Conditional& conditional : conditionals_) {
    const std::string name = "conditional " + conditional.instruction->name();
    for (size_t k = 0; k < conditional.branches.size(); ++k) {
      openings[conditional.branch_begin[k]].push_back({conditional.end, [&, name, k] {
        TPU_RETURN_IF_ERROR(k == 0 ? emit(name + ": dispatch", [&] { return EmitDispatch(conditional); })
                                   : emit(name + ": results of branch " + std::to_string(k - 1),
                                          [&] { return EmitBranchEnd(conditional, k - 1); }));
        asm_.Bind(conditional.branches[k]);
        return OkStatus();
      }});
    }
  }
  for (auto& [position, list] : openings) {
    std::stable_sort(list.begin(), list.end(), [](const Opening& a, const Opening& b) { return a.end > b.end; });
  }
  for (size_t p = 0; p < order.size(); ++p) {
    const HloInstruction* instruction = order[p];
    const int64_t position = static_cast<int64_t>(p);
    if (auto opening = openings.find(position); opening != openings.end()) {
      for (const Opening& open : opening->second) TPU_RETURN_IF_ERROR(open.emit());
    }
    if (instruction->opcode() == HloOpcode::kWhile) {
      for (const Loop& loop : loops_) {
        if (loop.end != position) continue;
        TPU_RETURN_IF_ERROR(emit("while " + instruction->name() + ": next iteration", [&] { return EmitLoopBack(loop); }));
        asm_.Bind(loop.exit);
      }
      continue;
    }
    if (instruction->opcode() == HloOpcode::kConditional) {
      for (const Conditional& conditional : conditionals_) {
        if (conditional.end != position) continue;
        const size_t last = conditional.branches.size() - 1;
        TPU_RETURN_IF_ERROR(emit("conditional " + instruction->name() + ": results of branch " + std::to_string(last),
                                 [&] { return EmitBranchEnd(conditional, last); }));
        asm_.Bind(conditional.exit);
      }
      continue;
    }
    const bool side_effect = instruction->opcode() == HloOpcode::kInfeed || instruction->opcode() == HloOpcode::kOutfeed;
    if (needed.count(instruction) > 0 || side_effect) {
      // No code for parameters, constants and values that are another instruction's buffer.
      const OpcodeHandler& handler = *OpcodeHandlers().Find(instruction->opcode());
      if (handler.emit && BufferOf(instruction) == instruction) {
        const std::string name = instruction->name().empty() ? "(unnamed)" : instruction->name();
        TPU_RETURN_IF_ERROR(emit(name + " = " + instruction->shape().ToString() + " " + instruction->opcode_name(),
                                 [&] { return handler.emit(*this, *instruction); }));
      }
    }
    for (const Loop& loop : loops_) {
      if (loop.test != position) continue;
      TPU_RETURN_IF_ERROR(emit("while " + loop.instruction->name() + ": condition", [&] { return EmitLoopTest(loop); }));
    }
  }
  // Copies at the end: into output regions first (they may read parameters' old contents), then the
  // staged parameters into temps, then into the parameter buffers.
  for (const auto& copy : output_copies) {
    const HloInstruction* value = copy.first;
    const Location location = copy.second;
    TPU_RETURN_IF_ERROR(emit("copy " + value->name() + " to output " + std::to_string(location.index),
                             [&] { return EmitCopy(value, location); }));
  }
  std::map<const HloInstruction*, Location> staged_at;
  for (const auto& stage : staged) {
    const HloInstruction* parameter = stage.first;
    const Location temp{RegionKind::kTemp, 0, assignment.offsets.at(stage.second)};
    staged_at[parameter] = temp;
    TPU_RETURN_IF_ERROR(emit("copy " + parameter->name() + " to a temp (it is overwritten below)", [&] {
      return EmitCopyLines(locations_.at(parameter), temp, MakeDeviceLayout(parameter->shape(), L()).lines);
    }));
  }
  for (const auto& copy : alias_copies) {
    const HloInstruction* value = copy.first;
    const Location location = copy.second;
    const HloInstruction* source = BufferOf(value);
    const auto staged_source = staged_at.find(source);
    const Location from = staged_source != staged_at.end() ? staged_source->second : locations_.at(source);
    TPU_RETURN_IF_ERROR(emit("copy " + value->name() + " into parameter " + std::to_string(location.index) +
                                 " (input_output_alias)",
                             [&] { return EmitCopyLines(from, location, MakeDeviceLayout(value->shape(), L()).lines); }));
  }
  asm_.Halt();  // waits for every unit
  TPU_RETURN_IF_ERROR(asm_.Finish(&program_.code, &program_.relocations));

  if (options_.imem_words != 0 && program_.code.size() > options_.imem_words) {
    // As for the HBM, the message names what takes the space: the largest code ranges.
    std::vector<const CodeRange*> largest;
    for (const CodeRange& range : code_ranges) largest.push_back(&range);
    std::stable_sort(largest.begin(), largest.end(), [](const CodeRange* a, const CodeRange* b) {
      return a->end - a->begin > b->end - b->begin;
    });
    largest.resize(std::min<size_t>(largest.size(), 5));
    std::string message = "Ran out of memory in memory space imem; used: " + std::to_string(program_.code.size()) +
                          " words; limit: " + std::to_string(options_.imem_words) + " words\nLargest code in imem:";
    for (size_t i = 0; i < largest.size(); ++i) {
      message += "\n  " + std::to_string(i + 1) + ". Size: " + std::to_string(largest[i]->end - largest[i]->begin) +
                 " words, " + largest[i]->what;
    }
    return ResourceExhausted(message);
  }
  program_.code_ranges = std::move(code_ranges);
  TPU_RETURN_IF_ERROR(ValidateProgram(program_));
  TPU_ASSIGN_OR_RETURN(const uint64_t hbm_lines, CheckHbm(order, assignment));
  if (stats != nullptr) {
    stats->instructions = static_cast<uint32_t>(program_.code.size());
    stats->peak_temp_lines = program_.temp_lines;
    stats->hbm_lines = hbm_lines;
    stats->aliased_outputs = aliased_outputs_;
    stats->alias_copies = alias_copies_;
    stats->dots = dots_;
  }
  return std::move(program_);
}

}  // namespace codegen_internal

using codegen_internal::CodeGenerator;

StatusOr<Program> Compile(const hlo::HloModule& module, const CompileOptions& options, CompileStats* stats) {
  if (module.entry_computation() == nullptr || module.entry_computation()->root_instruction() == nullptr) {
    return InvalidArgument("module " + module.name() + " has no entry computation");
  }
  using Clock = std::chrono::steady_clock;
  auto milliseconds = [](Clock::time_point since) {
    return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
  };
  double prepare_ms = 0, codegen_ms = 0;
  // The passes the dots ask for (or dot_passes); while the code does not fit the IMEM, elementwise loops
  // without their pipeline, dots with a compact pipeline, then without the software pipeline (less code,
  // dot.cc), then -- for the precision
  // the HLO asks for, not for a forced count -- more than one pass only for the dots that reach a compare,
  // exp or log, then one pass everywhere (CompileStats::dot_precision says which).
  std::vector<std::pair<SplitDotsOptions, std::string>> attempts = {
      {SplitDotsOptions{options.dot_passes, false},
       options.dot_passes == 0 ? "operand_precision" : std::to_string(options.dot_passes) + " passes (forced)"}};
  if (options.dot_passes == 0) {
    attempts.push_back({SplitDotsOptions{0, true}, "operand_precision for dots reaching a compare, exp or log only "
                                                    "(the program did not fit the IMEM)"});
    attempts.push_back({SplitDotsOptions{1, false}, "one pass (the program did not fit the IMEM)"});
  }
  StatusOr<Program> program = InvalidArgument("nothing compiled");
  for (const auto& [dots, description] : attempts) {
    // The prepared module depends on the dots' passes only: every dot schedule lowers the same one.
    PrepareOptions prepare_options;
    prepare_options.dots = dots;
    prepare_options.lanes = static_cast<int>(options.lanes);
    prepare_options.fuse_elementwise = options.fuse_elementwise;
    prepare_options.after_pass = options.after_prepare_pass;
    Clock::time_point start = Clock::now();
    StatusOr<std::unique_ptr<hlo::HloModule>> prepared = PrepareForCodegen(module, prepare_options);
    prepare_ms += milliseconds(start);
    TPU_RETURN_IF_ERROR(prepared.status());
    // Code schedules from the fastest to the smallest: elementwise loops pipelined (all, the large ones,
    // none), then dots with less code.
    using Schedule = CodeGenerator::DotSchedule;
    constexpr uint32_t kNone = CodeGenerator::kNoPipelinedChunks;
    for (const auto& [dot_schedule, min_pipelined_lines] :
         {std::pair{Schedule::kBalanced, 0u}, std::pair{Schedule::kBalanced, 8192u}, std::pair{Schedule::kBalanced, kNone},
          std::pair{Schedule::kCompact, kNone}, std::pair{Schedule::kSerial, kNone}}) {
      start = Clock::now();
      CodeGenerator generator(**prepared, options);
      generator.set_dot_schedule(dot_schedule);
      generator.set_min_pipelined_lines(min_pipelined_lines);
      program = generator.Run(stats);
      codegen_ms += milliseconds(start);
      if (stats != nullptr) {
        stats->prepare_ms = prepare_ms;
        stats->codegen_ms = codegen_ms;
      }
      const bool imem_full = !program.ok() && program.status().code() == StatusCode::kResourceExhausted &&
                             program.status().message().find("imem") != std::string::npos;
      if (imem_full) continue;
      if (stats != nullptr) stats->dot_precision = description;
      if (program.ok() && options.after_prepare) TPU_RETURN_IF_ERROR(options.after_prepare(**prepared));
      return program;
    }
  }
  return program;
}

}  // namespace tpu::compiler
