#include "compiler/codegen/loop_fusion.h"

#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler {
namespace {

using codegen_internal::CodeGenerator;
using hlo::HloInstruction;
using hlo::HloOpcode;

bool IsF32Array(const hlo::Shape& shape) { return shape.IsArray() && shape.element_type == hlo::PrimitiveType::F32; }

// A value of `user`'s shape: a chunk of it is a chunk of lines in VMEM.
bool IsTensorOf(const HloInstruction& user, const HloInstruction& value) {
  return IsF32Array(value.shape()) && value.shape().dimensions == user.shape().dimensions;
}

bool IsArithmetic(HloOpcode opcode) {
  return opcode == HloOpcode::kAdd || opcode == HloOpcode::kSubtract || opcode == HloOpcode::kMultiply ||
         opcode == HloOpcode::kMaximum || opcode == HloOpcode::kMinimum;
}

}  // namespace

// The positions EmitLoopFusion reads in place: the second operand of arithmetic (the first of a
// commutative op whose second is not foldable), a constant divisor or exponent. Operand 0 of anything
// else, and a broadcast a member reads twice, is a tensor in VMEM.
bool LoopFusionReadsBroadcast(const HloInstruction& user, const HloInstruction& operand) {
  if (!codegen_internal::FoldableBroadcast(user, operand) || !IsF32Array(operand.operand(0)->shape()) ||
      user.operand_count() != 2 || user.operand(0) == user.operand(1)) {
    return false;
  }
  const HloOpcode opcode = user.opcode();
  if (IsArithmetic(opcode)) {
    if (user.operand(1) == &operand) return true;
    return opcode != HloOpcode::kSubtract && !codegen_internal::FoldableBroadcast(user, *user.operand(1));
  }
  if (opcode == HloOpcode::kDivide || opcode == HloOpcode::kPower) {
    return user.operand(1) == &operand && codegen_internal::ScalarConstantValue(operand).has_value();
  }
  return false;
}

bool IsLoopFusible(const HloInstruction& instruction) {
  if (!IsF32Array(instruction.shape()) || instruction.shape().rank() == 0) return false;
  auto tensor = [&](int64_t i) { return IsTensorOf(instruction, *instruction.operand(i)); };
  auto read_in_place = [&](int64_t i) { return LoopFusionReadsBroadcast(instruction, *instruction.operand(i)); };
  const HloOpcode opcode = instruction.opcode();
  if (IsArithmetic(opcode) || opcode == HloOpcode::kDivide || opcode == HloOpcode::kPower) {
    return tensor(0) && !read_in_place(0) ? (tensor(1) || read_in_place(1)) : (read_in_place(0) && tensor(1));
  }
  return (opcode == HloOpcode::kNegate || CodeGenerator::MathKindOf(opcode).has_value()) &&
         instruction.operand_count() == 1 && tensor(0);
}

bool IsLoweredLoopFusion(const HloInstruction& fusion) {
  const std::string* kind = fusion.raw_attribute("kind");
  if (fusion.opcode() != HloOpcode::kFusion || kind == nullptr || *kind != "kLoop" ||
      fusion.called_computations().size() != 1 || !IsF32Array(fusion.shape())) {
    return false;
  }
  const hlo::HloComputation& body = *fusion.called_computations()[0];
  if (body.root_instruction() == nullptr || !IsLoopFusible(*body.root_instruction())) return false;
  for (const HloInstruction* instruction : body.instructions()) {
    switch (instruction->opcode()) {
      case HloOpcode::kParameter:
        if (instruction->parameter_number() >= fusion.operand_count()) return false;
        continue;
      case HloOpcode::kConstant:
        if (instruction->shape().rank() != 0) return false;
        continue;
      case HloOpcode::kBroadcast:
        for (const HloInstruction* user : instruction->users()) {
          if (!LoopFusionReadsBroadcast(*user, *instruction)) return false;
        }
        continue;
      default:
        if (!IsLoopFusible(*instruction)) return false;
    }
  }
  return true;
}

namespace codegen_internal {

// Where a fused step's second operand is: a region buffer (>= 0), VpuStep::kImmediate, VpuStep::kUnary, or
// row r of the shared buffers (kFirstRow - r).
constexpr int kFirstRow = -3;

// The fusion's computation becomes a list of VPU steps over region buffers: buffer i < (tensor operands)
// is loaded with tensor operand i every chunk; every fused value gets a buffer, handed out again once
// its last reader has run. Rows (splats, row broadcasts, the padding mask) are shared buffers built
// once, before the loop: one line read with SRC2_BCAST when a row is one line, otherwise the row repeated
// over the chunk. Padded lanes: every member keeps +0 at +0 but exp, log, ... and immediates that do
// not (ImmediateKeepsPaddingZero); if one of those is in the fusion, the root is ANDed with a row of
// ones in the logical lanes before it is stored.
Status CodeGenerator::EmitLoopFusion(const HloInstruction& fusion) {
  const hlo::HloComputation& body = *fusion.called_computations()[0];
  const HloInstruction* root = body.root_instruction();
  const uint32_t lanes = L();
  const DeviceLayout layout = MakeDeviceLayout(fusion.shape(), lanes);
  const uint32_t tiles = static_cast<uint32_t>(layout.column_tiles(lanes));

  std::vector<const HloInstruction*> loaded;     // fusion operands streamed into buffers 0..
  std::map<const HloInstruction*, int> buffer;   // value of the computation -> region buffer
  for (const HloInstruction* parameter : body.parameter_instructions()) {
    if (!IsTensorOf(*root, *parameter)) continue;
    buffer[parameter] = static_cast<int>(loaded.size());
    loaded.push_back(fusion.operand(parameter->parameter_number()));
  }
  int buffers = static_cast<int>(loaded.size());
  std::vector<int> free_buffers;
  auto allocate = [&] {
    if (free_buffers.empty()) return buffers++;
    const int b = free_buffers.back();
    free_buffers.pop_back();
    return b;
  };
  std::map<const HloInstruction*, int> reads_left;
  for (const HloInstruction* instruction : body.instructions()) {
    for (const HloInstruction* operand : instruction->operands()) ++reads_left[operand];
  }
  std::vector<Src2> rows;
  std::map<const HloInstruction*, int> row_of;
  auto row_index = [&](const HloInstruction& broadcast) {
    auto it = row_of.find(&broadcast);
    if (it != row_of.end()) return it->second;
    const HloInstruction& source = *broadcast.operand(0);
    Src2 row;
    row.kind = source.shape().rank() == 0 ? Src2::kSplat : Src2::kRow;
    row.value = fusion.operand(source.parameter_number());
    rows.push_back(row);
    return row_of[&broadcast] = static_cast<int>(rows.size()) - 1;
  };

  std::vector<VpuStep> steps;
  bool mask = false;
  for (const HloInstruction* instruction : body.MakeInstructionPostOrder()) {
    const HloOpcode op = instruction->opcode();
    if (op == HloOpcode::kParameter || op == HloOpcode::kConstant || op == HloOpcode::kBroadcast) continue;
    const HloInstruction* a = instruction->operand(0);
    int result = -1;
    std::vector<int> temps;
    auto immediate_step = [&](isa::Opcode opcode, HloOpcode keeps_zero_as, uint32_t bits) {
      result = allocate();
      steps.push_back({opcode, result, buffer.at(a), VpuStep::kImmediate, 0, bits});
      if (!ImmediateKeepsPaddingZero(keeps_zero_as, bits)) mask = true;
    };
    if (IsArithmetic(op)) {
      const HloInstruction* b = instruction->operand(1);
      if (!buffer.count(a)) std::swap(a, b);  // a folded operand goes second (IsLoopFusible)
      if (buffer.count(b)) {
        result = allocate();
        steps.push_back({*VpuOpcodeFor(op), result, buffer.at(a), buffer.at(b), 0, 0});
      } else if (const std::optional<float> value = ScalarConstantValue(*b)) {
        immediate_step(*VpuOpcodeFor(op), op, FloatBits(*value));
      } else {
        result = allocate();
        steps.push_back({*VpuOpcodeFor(op), result, buffer.at(a), kFirstRow - row_index(*b), 0, 0});
      }
    } else if (op == HloOpcode::kNegate) {
      // As EmitNegate: x * -1, then + 0 for the -0 of x = +0.
      immediate_step(isa::Opcode::VMUL, HloOpcode::kMultiply, FloatBits(-1.0f));
      steps.push_back({isa::Opcode::VADD, result, result, VpuStep::kImmediate, 0, 0});
    } else if (op == HloOpcode::kDivide && ScalarConstantValue(*instruction->operand(1))) {
      // As EmitDivide: x * (1/c).
      immediate_step(isa::Opcode::VMUL, HloOpcode::kMultiply, FloatBits(1.0f / *ScalarConstantValue(*instruction->operand(1))));
    } else {
      const MathKind kind = op == HloOpcode::kDivide ? MathKind::kDivide : *MathKindOf(op);
      TPU_ASSIGN_OR_RETURN(VpuSequence sequence, MathSequence(*instruction, kind));
      if (sequence.mask_padding) mask = true;
      // The sequence's buffer 0 (and 1) start as its operands; a buffer it writes gets a region buffer of
      // its own, so the operands' buffers are only read.
      std::vector<int> local(sequence.buffers, -1);
      std::vector<bool> written(sequence.buffers, false);
      local[0] = buffer.at(a);
      if (sequence.second_operand) local[1] = buffer.at(instruction->operand(1));
      for (VpuStep step : sequence.steps) {
        step.src1 = local[step.src1];
        if (step.src2 >= 0) step.src2 = local[step.src2];
        if (!written[step.dst]) {
          written[step.dst] = true;
          local[step.dst] = allocate();
          temps.push_back(local[step.dst]);
        }
        step.dst = local[step.dst];
        steps.push_back(step);
      }
      auto kept = std::find(temps.begin(), temps.end(), local[sequence.result]);
      if (kept == temps.end()) {
        // The result is an operand left as it is: a copy of its own (x | x = x).
        result = allocate();
        steps.push_back({isa::Opcode::VOR, result, local[sequence.result], local[sequence.result], 0, 0});
      } else {
        result = *kept;
        temps.erase(kept);
      }
    }
    buffer[instruction] = result;
    free_buffers.insert(free_buffers.end(), temps.begin(), temps.end());
    for (const HloInstruction* operand : instruction->operands()) {
      if (buffer.count(operand) && --reads_left[operand] == 0) free_buffers.push_back(buffer.at(operand));
    }
  }
  const int result = buffer.at(root);
  if (mask && layout.cols % lanes != 0) {
    Src2 ones;
    ones.kind = Src2::kRow;
    TPU_ASSIGN_OR_RETURN(ones.constant_row, ConstantRow(0xffffffffu, layout.cols));
    rows.push_back(ones);
    steps.push_back({isa::Opcode::VAND, result, result, kFirstRow - static_cast<int>(rows.size() - 1), 0, 0});
  }

  TPU_ASSIGN_OR_RETURN(ScopedReg load_offset, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg store_offset, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg address, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg vmem, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg src2, NewReg());
  asm_.Li(load_offset, 0);
  asm_.Li(store_offset, 0);
  uint32_t chunk = 0;
  ChunkPipeline pipeline;
  pipeline.buffers = static_cast<uint32_t>(buffers);
  pipeline.shared_buffers = static_cast<uint32_t>(rows.size());
  pipeline.set_base_only = true;
  if (!rows.empty() && tiles > 1) {
    // Chunks of whole rows, near kRepeatedRowLines (as EmitVpu) so the repeated rows stay small.
    constexpr uint32_t kRepeatedRowLines = 1024;
    pipeline.granule = tiles;
    pipeline.max_chunk = std::max(kRepeatedRowLines / tiles, 1u) * tiles;
  }
  pipeline.load_pointers = {{load_offset, 1}};
  pipeline.store_pointers = {{store_offset, 1}};
  pipeline.prologue = [&](uint32_t lines) -> Status {
    chunk = lines;
    for (size_t r = 0; r < rows.size(); ++r) {
      const uint32_t first = static_cast<uint32_t>(r) * chunk;
      if (rows[r].kind == Src2::kSplat && first + tiles + 2 * lanes > options_.vmem_lines) {
        return VmemOverflow(fusion, first + tiles + 2 * lanes);
      }
      asm_.Li(vmem, first);
      TPU_RETURN_IF_ERROR(LoadRow(fusion, rows[r], vmem, tiles));
    }
    if (rows.empty()) return OkStatus();
    asm_.Sync(kSyncDma);
    if (tiles == 1) return OkStatus();
    for (size_t r = 0; r < rows.size(); ++r) {
      asm_.Li(vmem, static_cast<uint32_t>(r) * chunk);
      TPU_RETURN_IF_ERROR(RepeatRow(vmem, tiles, chunk));
    }
    return OkStatus();
  };
  pipeline.load = [&](const std::vector<Reg>& set, Reg count) {
    for (size_t i = 0; i < loaded.size(); ++i) {
      LoadAddress(address, loaded[i], 0);
      asm_.Add(address, address, load_offset);
      asm_.Addi(vmem, set[0], static_cast<uint32_t>(i) * chunk);
      asm_.DmaLoad(address, vmem, count, 1);
    }
    return OkStatus();
  };
  pipeline.compute = [&](const std::vector<Reg>& set, Reg count) {
    for (const VpuStep& step : steps) {
      // address: the destination, vmem: the first source, src2: the second.
      uint8_t flags = step.flags;
      Reg second = kZeroReg;
      asm_.Addi(address, set[0], static_cast<uint32_t>(step.dst) * chunk);
      asm_.Addi(vmem, set[0], static_cast<uint32_t>(step.src1) * chunk);
      if (step.src2 == VpuStep::kImmediate) {
        flags |= isa::flag::VADD_SRC2_IMM;  // the same bit on every binary vector instruction
      } else if (step.src2 >= 0) {
        asm_.Addi(src2, set[0], static_cast<uint32_t>(step.src2) * chunk);
        second = src2;
      } else if (step.src2 <= kFirstRow) {
        asm_.Li(src2, static_cast<uint32_t>(kFirstRow - step.src2) * chunk);
        second = src2;
        if (tiles == 1) flags |= isa::flag::VADD_SRC2_BCAST;
      }
      asm_.Emit(step.opcode, {address, vmem, second, count, flags, step.imm});
    }
    return OkStatus();
  };
  pipeline.store = [&](const std::vector<Reg>& set, Reg count) {
    LoadAddress(address, &fusion, 0);
    asm_.Add(address, address, store_offset);
    asm_.Addi(vmem, set[0], static_cast<uint32_t>(result) * chunk);
    asm_.DmaStore(address, vmem, count, 1);
    return OkStatus();
  };
  return PipelineChunks(fusion, layout.lines, pipeline);
}

}  // namespace codegen_internal
}  // namespace tpu::compiler
