// replica-id, partition-id and all-reduce: a program that runs on every device of a grid (Program::replicas
// x partitions, the same code everywhere) asks which device it is and combines values with its peers.
//
// The ids are immediates patched when the program is placed on its device (program.h, DevicePatch).
//
// An all-reduce over groups of p devices runs as a ring over the cores' RDMA (docs/isa.md): the value's
// lines are cut into p chunks, and in 2(p-1) steps every device sends one chunk to the next device of
// its group. In steps 0..p-2 (reduce-scatter) a device sends chunk (place - step) mod p: its own lines
// at step 0, after that its own lines combined with what the device before it sent in the previous
// step; after step p-2 it holds one chunk combined over the whole group. In steps p-1..2p-3 (all-gather)
// it stores the finished chunk and sends it on, and at the end stores the last chunk it received. What a
// device sends at step s lands in slot s of the next device's receive region (RegionKind::kReceive, a
// slot per step and collective, so a peer that runs ahead never overwrites a slot not yet read), in
// pieces of at most kMaxPieces per chunk, each posting one of the receiver's peer semaphores; the
// receiver takes one post per piece before it reads the piece. A device's posts to one peer arrive in
// order (the DMA unit runs an RDMA alone), so counting semaphores keep pieces, steps and successive
// collectives apart; each device has a semaphore per distinct sender (program.h, PeerSemaphores).
//
// Reduction order: chunk j is combined around the ring starting at the device of place j, the same on
// every run and on both backends. It is the interpreter's left-to-right group order for groups of two
// and for max, min and integer or bitwise reductions (exact); an f32 sum over more than two devices is
// associated differently (docs/numerics.md).
#include "compiler/codegen/codegen_internal.h"
#include "compiler/hlo/collective_groups.h"

namespace tpu::compiler::codegen_internal {

namespace {

// At most this many pieces per chunk: the receiver's semaphore counts to 255, and a sender runs at most
// about two steps ahead of its receiver.
constexpr uint32_t kMaxPieces = 32;
// Lines of a piece when the chunk is long enough: each RDMA waits for the DMA unit, so longer pieces
// amortize that, shorter ones let the ring start sooner.
constexpr uint32_t kPieceLines = 512;

// The elementwise operation `all_reduce` combines with (its to_apply is `op(p0, p1)`), or kUnknown.
HloOpcode AllReduceOpcode(const HloInstruction& all_reduce) {
  const hlo::HloComputation* reducer = all_reduce.to_apply();
  if (reducer == nullptr || reducer->num_parameters() != 2 || reducer->root_instruction() == nullptr) {
    return HloOpcode::kUnknown;
  }
  const HloInstruction& root = *reducer->root_instruction();
  if (root.operand_count() != 2 || root.operand(0)->opcode() != HloOpcode::kParameter ||
      root.operand(1)->opcode() != HloOpcode::kParameter || root.operand(0) == root.operand(1)) {
    return HloOpcode::kUnknown;
  }
  return root.opcode();
}

// The VPU instruction and flags that combine two lines of `type` with `op`, or nullopt.
std::optional<std::pair<isa::Opcode, uint8_t>> CombineInstruction(HloOpcode op, hlo::PrimitiveType type) {
  using hlo::PrimitiveType;
  const bool is_float = type == PrimitiveType::F32;
  const bool is_signed = type == PrimitiveType::S32;
  const bool is_unsigned = type == PrimitiveType::U32;
  const bool is_pred = type == PrimitiveType::PRED;
  const uint8_t int_flag = isa::flag::VADD_INT;  // the same bit for VMUL, VMAX, VMIN
  switch (op) {
    case HloOpcode::kAdd:
      if (is_float) return std::make_pair(isa::Opcode::VADD, uint8_t{0});
      if (is_signed || is_unsigned) return std::make_pair(isa::Opcode::VADD, int_flag);
      if (is_pred) return std::make_pair(isa::Opcode::VOR, uint8_t{0});  // pred add is or
      return std::nullopt;
    case HloOpcode::kMultiply:
      if (is_float) return std::make_pair(isa::Opcode::VMUL, uint8_t{0});
      if (is_signed || is_unsigned) return std::make_pair(isa::Opcode::VMUL, int_flag);
      if (is_pred) return std::make_pair(isa::Opcode::VAND, uint8_t{0});
      return std::nullopt;
    case HloOpcode::kMaximum:
    case HloOpcode::kMinimum: {
      const isa::Opcode opcode = op == HloOpcode::kMaximum ? isa::Opcode::VMAX : isa::Opcode::VMIN;
      if (is_float) return std::make_pair(opcode, uint8_t{0});
      if (is_signed) return std::make_pair(opcode, int_flag);
      if (is_pred) return std::make_pair(op == HloOpcode::kMaximum ? isa::Opcode::VOR : isa::Opcode::VAND, uint8_t{0});
      return std::nullopt;  // u32: the VPU compares integers signed
    }
    case HloOpcode::kAnd:
    case HloOpcode::kOr:
    case HloOpcode::kXor:
      if (is_signed || is_unsigned || is_pred) return std::make_pair(*VpuOpcodeFor(op), uint8_t{0});
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

Status CheckAllReduce(const HloInstruction& all_reduce) {
  if (all_reduce.operand_count() != 1 || !all_reduce.shape().IsArray()) {
    return Unimplemented("all-reduce " + all_reduce.name() + " of " + std::to_string(all_reduce.operand_count()) +
                         " operands: one array per all-reduce (the compiler splits tuples)");
  }
  const HloOpcode op = AllReduceOpcode(all_reduce);
  const hlo::PrimitiveType type = all_reduce.shape().element_type;
  if (!CombineInstruction(op, type)) {
    return Unimplemented("all-reduce " + all_reduce.name() + " of " + all_reduce.shape().ToString() + " with " +
                         (op == HloOpcode::kUnknown ? std::string("a reducer that is not one binary operation")
                                                    : hlo::HloOpcodeString(op)) +
                         ": the device combines f32 and s32 with add, multiply, maximum and minimum, u32 with add "
                         "and multiply, s32, u32 and pred with and, or and xor (pred add as or)");
  }
  return OkStatus();
}

}  // namespace

void CodeGenerator::AddCollectiveHandlers(OpcodeHandlerTable& table) {
  for (HloOpcode opcode : {HloOpcode::kReplicaId, HloOpcode::kPartitionId}) {
    OpcodeHandler id(opcode);
    id.types = ElementTypes::kDeviceWord;
    id.emit = [](CodeGenerator& gen, const HloInstruction& instruction) { return gen.EmitDeviceId(instruction); };
    table.Add(std::move(id));
  }

  OpcodeHandler all_reduce(HloOpcode::kAllReduce);
  all_reduce.check = CheckAllReduce;
  all_reduce.types = ElementTypes::kDeviceWord;  // CheckAllReduce says which reductions of which types
  all_reduce.emit = [](CodeGenerator& gen, const HloInstruction& instruction) { return gen.EmitAllReduce(instruction); };
  table.Add(std::move(all_reduce));
}

uint32_t CodeGenerator::Patch(uint32_t instr_index, DevicePatch patch) {
  patch.instr_index = instr_index;
  program_.device_patches.push_back(patch);
  return instr_index;
}

Status CodeGenerator::EmitDeviceId(const HloInstruction& instruction) {
  // A line whose first lane is 1 (the others +0, the padding), times the id: the id in lane 0.
  TPU_ASSIGN_OR_RETURN(const int32_t one, ConstantRow(1u, 1));
  TPU_ASSIGN_OR_RETURN(ScopedReg hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg line, NewReg());
  asm_.LoadAddress(hbm, RegionKind::kConstant, static_cast<uint32_t>(one), 0);
  asm_.Li(line, 1);
  asm_.DmaLoad(hbm, kZeroReg, line, 1);
  asm_.Sync(kSyncDma);
  const DeviceValue value =
      instruction.opcode() == HloOpcode::kReplicaId ? DeviceValue::kReplicaId : DeviceValue::kPartitionId;
  Patch(asm_.Emit(isa::Opcode::VMUL, {kZeroReg, kZeroReg, kZeroReg, line,
                                      uint8_t(isa::flag::VMUL_INT | isa::flag::VMUL_SRC2_IMM), 0}),
        {0, value});
  asm_.Sync(kSyncVpu);
  LoadAddress(hbm, &instruction, 0);
  asm_.DmaStore(hbm, kZeroReg, line, 1);
  return OkStatus();
}

StatusOr<uint32_t> CodeGenerator::CollectiveRingOf(const HloInstruction& collective) {
  // The groups of every device of the grid, in the order the first of each names them.
  CollectiveRing ring;
  std::vector<bool> placed(static_cast<size_t>(grid_.devices()), false);
  for (int64_t device = 0; device < grid_.devices(); ++device) {
    if (placed[device]) continue;
    TPU_ASSIGN_OR_RETURN(std::vector<int64_t> group, hlo::CollectiveGroup(collective, grid_, device));
    std::vector<uint32_t> positions;
    for (int64_t member : group) {
      placed.at(static_cast<size_t>(member)) = true;
      positions.push_back(static_cast<uint32_t>(member));
    }
    if (!ring.groups.empty() && positions.size() != ring.size()) {
      return Unimplemented(collective.opcode_name() + " " + collective.name() +
                           ": groups of different sizes (every device runs the same code)");
    }
    ring.groups.push_back(std::move(positions));
  }
  if (ring.size() < 2) return kNoRing;
  for (size_t r = 0; r < program_.rings.size(); ++r) {
    if (program_.rings[r].groups == ring.groups) return static_cast<uint32_t>(r);
  }
  program_.rings.push_back(std::move(ring));
  const Status fits = ValidateRings(program_);
  if (!fits.ok()) {
    program_.rings.pop_back();
    return Unimplemented(collective.opcode_name() + " " + collective.name() + ": " + fits.message());
  }
  return static_cast<uint32_t>(program_.rings.size() - 1);
}

Status CodeGenerator::PlanCollectives(const std::vector<HloInstruction*>& order) {
  uint64_t receive_lines = 0;
  for (const HloInstruction* instruction : order) {
    if (instruction->opcode() != HloOpcode::kAllReduce) continue;
    CollectivePlan plan;
    TPU_ASSIGN_OR_RETURN(plan.ring, CollectiveRingOf(*instruction));
    if (plan.ring != kNoRing) {
      // A slot of a chunk per step.
      const uint64_t p = program_.rings[plan.ring].size();
      const uint64_t lines = MakeDeviceLayout(instruction->shape(), L()).lines;
      plan.slots = static_cast<uint32_t>(std::min<uint64_t>(receive_lines, UINT32_MAX));
      receive_lines += 2 * (p - 1) * ((lines + p - 1) / p);
    }
    collectives_[instruction] = plan;
  }
  // The HBM check that follows reports a region this large as out of memory.
  program_.receive_lines = static_cast<uint32_t>(std::min<uint64_t>(receive_lines, UINT32_MAX));
  return OkStatus();
}

Status CodeGenerator::EmitAllReduce(const HloInstruction& instruction) {
  const HloInstruction* operand = instruction.operand(0);
  const CollectivePlan& plan = collectives_.at(&instruction);
  const uint32_t ring = plan.ring, slots = plan.slots;
  const uint32_t lines = MakeDeviceLayout(instruction.shape(), L()).lines;
  if (ring == kNoRing || lines == 0) return EmitCopy(operand, locations_.at(BufferOf(&instruction)));
  const uint32_t p = program_.rings[ring].size();
  const uint32_t chunk = (lines + p - 1) / p;
  const uint32_t piece = std::min(chunk, std::max(kPieceLines, (chunk + kMaxPieces - 1) / kMaxPieces));
  if (2 * piece > options_.vmem_lines) return VmemOverflow(instruction, 2 * uint64_t{piece});
  const auto [combine, combine_flags] = *CombineInstruction(AllReduceOpcode(instruction), instruction.shape().element_type);
  const uint32_t steps = 2 * (p - 1);

  TPU_ASSIGN_OR_RETURN(ScopedReg own, NewReg());       // VMEM: this device's lines, then what it sends
  TPU_ASSIGN_OR_RETURN(ScopedReg received, NewReg());  // VMEM: what the device before it sent
  TPU_ASSIGN_OR_RETURN(ScopedReg next_core, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg x, NewReg());         // HBM cursors: the operand, the result, the slot read,
  TPU_ASSIGN_OR_RETURN(ScopedReg out, NewReg());       // the next device's slot written
  TPU_ASSIGN_OR_RETURN(ScopedReg slot, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg next_slot, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg left, NewReg());      // lines of the chunk still to do
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());     // lines of this piece
  TPU_ASSIGN_OR_RETURN(ScopedReg scratch, NewReg());
  asm_.Li(own, 0);
  asm_.Li(received, piece);
  Patch(asm_.Li(next_core, 0), {0, DeviceValue::kNextCore, ring});
  auto chunk_patch = [&](DeviceValue value, uint32_t step) {
    DevicePatch patch{0, value, ring};
    patch.step = step;
    patch.chunk = chunk;
    patch.lines = lines;
    return patch;
  };
  // Step `step` (0..steps; `steps` only stores the last chunk received) over the lines of its chunk.
  for (uint32_t step = 0; step <= steps; ++step) {
    const bool reads_own = step < p;               // combines this device's lines of the chunk
    const bool receives = step > 0;                // reads slot step-1
    const bool stores = step + 1 >= p;             // the chunk is finished: store it
    const bool sends = step < steps;
    Patch(asm_.Li(scratch, 0), chunk_patch(DeviceValue::kChunkFirstLine, step));
    Patch(asm_.Li(left, 0), chunk_patch(DeviceValue::kChunkLines, step));
    if (reads_own) {
      LoadAddress(x, operand, 0);
      asm_.Add(x, x, scratch);
    }
    if (stores) {
      LoadAddress(out, &instruction, 0);
      asm_.Add(out, out, scratch);
    }
    if (receives) asm_.LoadAddress(slot, RegionKind::kReceive, 0, slots + (step - 1) * chunk);
    if (sends) {
      DevicePatch next = chunk_patch(DeviceValue::kNextReceive, 0);
      next.offset = slots + step * chunk;
      Patch(asm_.Li(next_slot, 0), next);
    }
    Assembler::Label top = asm_.NewLabel(), full = asm_.NewLabel(), done = asm_.NewLabel();
    asm_.Bind(top);
    asm_.Beq(left, kZeroReg, done);
    asm_.Li(count, piece);
    asm_.Blt(count, left, full);
    asm_.Add(count, left, kZeroReg);
    asm_.Bind(full);
    // The previous piece's RDMA and store have read the buffers.
    asm_.Sync(kSyncDma);
    const Reg value = reads_own ? own.get() : received.get();  // where the piece to send ends up
    if (reads_own) asm_.DmaLoad(x, own, count, 1);
    if (receives) {
      Patch(asm_.SemWait(0), {0, DeviceValue::kWaitSemaphore, ring});
      asm_.DmaLoad(slot, received, count, 1);
    }
    asm_.Sync(kSyncDma);
    if (reads_own && receives) {
      asm_.Emit(combine, {own, own, received, count, combine_flags, 0});
      asm_.Sync(kSyncVpu);
    }
    if (sends) {
      Patch(asm_.Emit(isa::Opcode::RDMA, {next_core, next_slot, value, count, isa::flag::RDMA_POST, 0}),
            {0, DeviceValue::kPostSemaphore, ring});
      asm_.Add(next_slot, next_slot, count);
    }
    if (stores) {
      asm_.DmaStore(out, value, count, 1);
      asm_.Add(out, out, count);
    }
    if (reads_own) asm_.Add(x, x, count);
    if (receives) asm_.Add(slot, slot, count);
    asm_.Sub(left, left, count);
    asm_.Jmp(top);
    asm_.Bind(done);
  }
  return OkStatus();
}

}  // namespace tpu::compiler::codegen_internal
