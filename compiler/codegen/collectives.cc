// replica-id, partition-id, all-reduce, all-gather, reduce-scatter and collective-permute: a program that
// runs on every device of a grid (Program::replicas x partitions, the same code everywhere) asks which
// device it is and combines values with its peers.
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
// order (its link engine sends one RDMA after the other), so counting semaphores keep pieces, steps and
// successive collectives apart; each device has a semaphore per distinct sender (program.h,
// PeerSemaphores). Over more than two devices half the lines go round the reversed ring, the two halves'
// steps alternating, so that every link carries both directions (docs/interconnect.md).
//
// The pieces alternate between two pairs of VMEM buffers, so that a piece's RDMA streams on the link
// engine while the DMA unit loads and the VPU combines the next piece; the link engine takes an RDMA
// only when the one before it has read its lines, which frees the pair the piece after next uses.
//
// all-gather is the second half of that ring (a block per device, stored where it belongs in the result
// and sent on), reduce-scatter the first half with the steps shifted by one, so that each device ends
// with its own shard (the k-th device of the group the k-th block).
//
// collective-permute: every device sends its operand to its target and takes what its source sent; the
// permutation's chains and cycles are the ring's groups (program.h, CollectiveRing::open), a device
// without a source stores zeros.
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
// Lines of a piece when the chunk is long enough: an RDMA to another core than the one before it waits
// for every acknowledgement of that one (a link round trip), so longer pieces amortize that, shorter
// ones let the ring start sooner.
constexpr uint32_t kPieceLines = 512;

// One step of a ring collective: the chunk is (place - chunk_step) mod p of the ring's chunks.
struct RingStep {
  uint32_t chunk_step = 0;
  bool own = false;      // reads the operand's lines of the chunk
  bool receive = false;  // takes what the device before it sent in the previous step (slot step-1)
  bool store = false;    // stores the piece (combined when own and receive) as the result's
  bool send = false;     // sends it to the next device (its slot `step`)
};

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

// all-reduce and reduce-scatter: one array, and a reduction the VPU has for its type.
Status CheckReduction(const HloInstruction& collective) {
  if (collective.operand_count() != 1 || !collective.shape().IsArray()) {
    return Unimplemented(collective.opcode_name() + " " + collective.name() + " of " +
                         std::to_string(collective.operand_count()) +
                         " operands: one array each (tuple-all-reduces takes an all-reduce of several apart)");
  }
  const HloOpcode op = AllReduceOpcode(collective);
  const hlo::PrimitiveType type = collective.shape().element_type;
  if (!CombineInstruction(op, type)) {
    return Unimplemented(collective.opcode_name() + " " + collective.name() + " of " + collective.shape().ToString() +
                         " with " +
                         (op == HloOpcode::kUnknown ? std::string("a reducer that is not one binary operation")
                                                    : hlo::HloOpcodeString(op)) +
                         ": the device combines f32 and s32 with add, multiply, maximum and minimum, u32 with add "
                         "and multiply, s32, u32 and pred with and, or and xor (pred add as or)");
  }
  return OkStatus();
}

// all-gather and reduce-scatter: each device's block along the dimension is a run of whole lines of the
// gathered array `whole` -- the dimensions before it are 1 and it is not the minor one.
Status CheckBlocksAreLines(const HloInstruction& collective, const hlo::Shape& whole) {
  if (collective.operand_count() != 1 || !collective.shape().IsArray() || collective.dimensions().size() != 1) {
    return Unimplemented(collective.opcode_name() + " " + collective.name() + ": one array along one dimension");
  }
  const int64_t d = collective.dimensions(0);
  bool leading = d + 1 < whole.rank();
  for (int64_t k = 0; k < d; ++k) leading = leading && whole.dimensions[k] == 1;
  if (!leading) {
    return Unimplemented(collective.opcode_name() + " " + collective.name() + " along dimension " + std::to_string(d) +
                         " of " + whole.ToString() +
                         ": the device moves whole lines, so the dimension must lead (the dimensions before it 1) and "
                         "not be the minor one");
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

  auto emit_ring = [](CodeGenerator& gen, const HloInstruction& instruction) {
    return gen.EmitRingCollective(instruction);
  };
  OpcodeHandler all_reduce(HloOpcode::kAllReduce);
  all_reduce.check = CheckReduction;
  all_reduce.types = ElementTypes::kDeviceWord;  // CheckReduction says which reductions of which types
  all_reduce.emit = emit_ring;
  table.Add(std::move(all_reduce));

  OpcodeHandler reduce_scatter(HloOpcode::kReduceScatter);
  reduce_scatter.check = [](const HloInstruction& instruction) {
    TPU_RETURN_IF_ERROR(CheckReduction(instruction));
    return CheckBlocksAreLines(instruction, instruction.operand(0)->shape());
  };
  reduce_scatter.types = ElementTypes::kDeviceWord;
  reduce_scatter.emit = emit_ring;
  table.Add(std::move(reduce_scatter));

  OpcodeHandler permute(HloOpcode::kCollectivePermute);
  permute.check = [](const HloInstruction& instruction) -> Status {
    if (instruction.operand_count() != 1 || !instruction.shape().IsArray()) {
      return Unimplemented("collective-permute " + instruction.name() + ": one array");
    }
    return OkStatus();
  };
  permute.types = ElementTypes::kDeviceWord;
  permute.emit = [](CodeGenerator& gen, const HloInstruction& instruction) {
    return gen.EmitCollectivePermute(instruction);
  };
  table.Add(std::move(permute));

  OpcodeHandler all_gather(HloOpcode::kAllGather);
  all_gather.check = [](const HloInstruction& instruction) {
    return CheckBlocksAreLines(instruction, instruction.shape());
  };
  all_gather.types = ElementTypes::kDeviceWord;
  all_gather.emit = emit_ring;
  table.Add(std::move(all_gather));
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
  return AddRing(collective, std::move(ring));
}

StatusOr<uint32_t> CodeGenerator::AddRing(const HloInstruction& collective, CollectiveRing ring) {
  for (size_t r = 0; r < program_.rings.size(); ++r) {
    if (program_.rings[r].groups == ring.groups && program_.rings[r].open == ring.open) {
      return static_cast<uint32_t>(r);
    }
  }
  program_.rings.push_back(std::move(ring));
  const Status fits = ValidateRings(program_);
  if (!fits.ok()) {
    program_.rings.pop_back();
    return Unimplemented(collective.opcode_name() + " " + collective.name() + ": " + fits.message());
  }
  return static_cast<uint32_t>(program_.rings.size() - 1);
}

namespace {

// What a ring collective reads, combines, stores and sends (RingStep per step); every line count is
// the same on every device of a ring, so each piece one device sends is a piece the next one takes.
struct RingCollective {
  uint32_t chunk = 0;         // lines of a chunk (DevicePatch::chunk)
  uint32_t lines = 0;         // lines the chunks cut (DevicePatch::lines): p chunks, the last shorter or empty
  bool own_at_chunk = true;   // the operand holds every chunk (else one, from its line 0)
  bool store_at_chunk = true; // the result holds every chunk (else one, from its line 0)
  uint32_t slots = 0;         // receive slots, one chunk each
  std::vector<RingStep> steps;
};

// The ring schedules (collectives.cc's header): all-reduce, all-gather and reduce-scatter of `lines`
// lines (the operand's for all-reduce and all-gather, the result's for reduce-scatter) over p devices.
RingCollective AllReduceRing(uint32_t lines, uint32_t p) {
  RingCollective ring;
  ring.chunk = (lines + p - 1) / p;
  ring.lines = lines;
  ring.slots = 2 * (p - 1);
  for (uint32_t s = 0; s <= 2 * (p - 1); ++s) {
    RingStep step;
    step.chunk_step = s;
    step.own = s < p;
    step.receive = s > 0;
    step.store = s + 1 >= p;
    step.send = s < 2 * (p - 1);
    ring.steps.push_back(step);
  }
  return ring;
}

RingCollective AllGatherRing(uint32_t lines, uint32_t p) {
  RingCollective ring;
  ring.chunk = lines;
  ring.lines = lines * p;
  ring.own_at_chunk = false;
  ring.slots = p - 1;
  for (uint32_t s = 0; s < p; ++s) {
    RingStep step;
    step.chunk_step = s;  // its own block at step 0, then the one the device before it had
    step.own = s == 0;
    step.receive = s > 0;
    step.store = true;
    step.send = s + 1 < p;
    ring.steps.push_back(step);
  }
  return ring;
}

RingCollective ReduceScatterRing(uint32_t lines, uint32_t p) {
  RingCollective ring;
  ring.chunk = lines;
  ring.lines = lines * p;
  ring.store_at_chunk = false;
  ring.slots = p - 1;
  for (uint32_t s = 0; s < p; ++s) {
    RingStep step;
    step.chunk_step = s + 1;  // ends with chunk `place`, its own shard
    step.own = true;
    step.receive = s > 0;
    step.store = s + 1 == p;
    step.send = s + 1 < p;
    ring.steps.push_back(step);
  }
  return ring;
}

// The ring schedule of a collective of `opcode` over `lines` lines (the operand's for all-reduce and
// all-gather, the result's for reduce-scatter) and groups of p devices.
RingCollective RingSchedule(HloOpcode opcode, uint32_t lines, uint32_t p) {
  switch (opcode) {
    case HloOpcode::kAllGather: return AllGatherRing(lines, p);
    case HloOpcode::kReduceScatter: return ReduceScatterRing(lines, p);
    default: return AllReduceRing(lines, p);
  }
}

bool IsRingCollective(HloOpcode opcode) {
  return opcode == HloOpcode::kAllReduce || opcode == HloOpcode::kAllGather || opcode == HloOpcode::kReduceScatter;
}

}  // namespace

Status CodeGenerator::PlanCollectives(const std::vector<HloInstruction*>& order) {
  uint64_t receive_lines = 0;
  auto slots_at = [&](uint64_t lines) {
    const uint32_t first = static_cast<uint32_t>(std::min<uint64_t>(receive_lines, UINT32_MAX));
    receive_lines += lines;
    return first;
  };
  for (const HloInstruction* instruction : order) {
    CollectivePlan plan;
    if (instruction->opcode() == HloOpcode::kCollectivePermute) {
      const uint32_t lines = MakeDeviceLayout(instruction->shape(), L()).lines;
      TPU_ASSIGN_OR_RETURN(const uint32_t ring, PermuteRingOf(*instruction));
      plan.parts.push_back({ring, slots_at(lines), 0, lines});
      collectives_[instruction] = plan;
      continue;
    }
    if (!IsRingCollective(instruction->opcode())) continue;
    TPU_ASSIGN_OR_RETURN(const uint32_t ring, CollectiveRingOf(*instruction));
    if (ring != kNoRing) {
      const uint32_t p = program_.rings[ring].size();
      // RingSchedule's lines: all-gather's operand, the result of the others.
      const hlo::Shape& value =
          instruction->opcode() == HloOpcode::kAllGather ? instruction->operand(0)->shape() : instruction->shape();
      const uint32_t lines = MakeDeviceLayout(value, L()).lines;
      std::vector<std::pair<uint32_t, uint32_t>> halves = {{0, lines}};  // (first line, lines) per ring
      std::vector<uint32_t> rings = {ring};
      if (instruction->opcode() == HloOpcode::kAllReduce && p > 2 && lines >= 2) {
        // Half of the lines go round the other way: every link carries both directions, and a core's
        // two sends go to both neighbours (on a board, one over the chip's network, one over a link).
        CollectiveRing reversed = program_.rings[ring];
        for (std::vector<uint32_t>& group : reversed.groups) std::reverse(group.begin(), group.end());
        TPU_ASSIGN_OR_RETURN(const uint32_t back, AddRing(*instruction, std::move(reversed)));
        const uint32_t first_half = (lines + 1) / 2;
        halves = {{0, first_half}, {first_half, lines - first_half}};
        rings.push_back(back);
      }
      for (size_t k = 0; k < halves.size(); ++k) {
        const RingCollective schedule = RingSchedule(instruction->opcode(), halves[k].second, p);
        plan.parts.push_back({rings[k], slots_at(uint64_t{schedule.slots} * schedule.chunk), halves[k].first,
                              halves[k].second});
      }
    }
    collectives_[instruction] = plan;
  }
  // The HBM check that follows reports a region this large as out of memory.
  program_.receive_lines = static_cast<uint32_t>(std::min<uint64_t>(receive_lines, UINT32_MAX));
  return OkStatus();
}

Status CodeGenerator::EmitRingCollective(const HloInstruction& instruction) {
  const HloInstruction* operand = instruction.operand(0);
  const CollectivePlan& plan = collectives_.at(&instruction);
  if (plan.parts.empty() || MakeDeviceLayout(instruction.shape(), L()).lines == 0) {
    return EmitCopy(operand, locations_.at(BufferOf(&instruction)));  // every group is one device
  }
  struct Part {
    const CollectivePart* plan;
    RingCollective schedule;
    uint32_t piece;
  };
  std::vector<Part> parts;
  uint32_t piece_lines = 0;
  for (const CollectivePart& part : plan.parts) {
    Part emitted{&part, RingSchedule(instruction.opcode(), part.lines, program_.rings[part.ring].size()), 0};
    const uint32_t chunk = emitted.schedule.chunk;
    emitted.piece = std::max(1u, std::min(chunk, std::max(kPieceLines, (chunk + kMaxPieces - 1) / kMaxPieces)));
    piece_lines = std::max(piece_lines, emitted.piece);
    parts.push_back(std::move(emitted));
  }
  // Two pairs of buffers (this device's lines and what arrived), used by turns.
  if (4 * piece_lines > options_.vmem_lines) return VmemOverflow(instruction, 4 * uint64_t{piece_lines});
  std::optional<std::pair<isa::Opcode, uint8_t>> combine;
  if (instruction.opcode() != HloOpcode::kAllGather) {
    combine = CombineInstruction(AllReduceOpcode(instruction), instruction.shape().element_type);
  }

  TPU_ASSIGN_OR_RETURN(ScopedReg own, NewReg());       // VMEM: this device's lines, then what it sends
  TPU_ASSIGN_OR_RETURN(ScopedReg received, NewReg());  // VMEM: what the device before it sent
  TPU_ASSIGN_OR_RETURN(ScopedReg next_core, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg x, NewReg());         // HBM cursors: the operand, the result, the slot read,
  TPU_ASSIGN_OR_RETURN(ScopedReg out, NewReg());       // the next device's slot written
  TPU_ASSIGN_OR_RETURN(ScopedReg slot, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg next_slot, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg left, NewReg());      // lines of the chunk still to do
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());     // lines of this piece
  TPU_ASSIGN_OR_RETURN(ScopedReg first, NewReg());     // the chunk's first line
  TPU_ASSIGN_OR_RETURN(ScopedReg pairs, NewReg());     // 2 x piece_lines: own = pairs - own takes turns
  asm_.Li(own, 0);
  asm_.Li(received, piece_lines);
  asm_.Li(pairs, 2 * piece_lines);
  // Step by step, each part's (both directions of an all-reduce: their sends alternate).
  for (uint32_t s = 0; s < parts.front().schedule.steps.size(); ++s) {
    for (const Part& part : parts) {
      const uint32_t ring = part.plan->ring, chunk = part.schedule.chunk, slots = part.plan->slots;
      const RingStep& step = part.schedule.steps[s];
      auto chunk_patch = [&](DeviceValue value, uint32_t chunk_step, uint32_t offset) {
        DevicePatch patch{0, value, ring};
        patch.step = chunk_step;
        patch.chunk = chunk;
        patch.lines = part.schedule.lines;
        patch.offset = offset;
        return patch;
      };
      Patch(asm_.Li(first, 0), chunk_patch(DeviceValue::kChunkFirstLine, step.chunk_step, 0));
      Patch(asm_.Li(left, 0), chunk_patch(DeviceValue::kChunkLines, step.chunk_step, 0));
      if (step.own) {
        LoadAddress(x, operand, part.plan->first_line);
        if (part.schedule.own_at_chunk) asm_.Add(x, x, first);
      }
      if (step.store) {
        LoadAddress(out, &instruction, part.plan->first_line);
        if (part.schedule.store_at_chunk) asm_.Add(out, out, first);
      }
      // Step s reads slot s-1 and fills slot s of the next device.
      if (step.receive) asm_.LoadAddress(slot, RegionKind::kReceive, 0, slots + (s - 1) * chunk);
      if (step.send) {
        Patch(asm_.Li(next_core, 0), {0, DeviceValue::kNextCore, ring});
        Patch(asm_.Li(next_slot, 0), chunk_patch(DeviceValue::kNextReceive, 0, slots + s * chunk));
      }
      // A piece that sends nothing does not make the link engine take the next RDMA, so the one before
      // it may still read the pair this piece loads.
      ForPieces(left, count, part.piece, step.send ? 0 : kSyncIci, [&] {
        if (step.own) asm_.DmaLoad(x, own, count, 1);
        if (step.receive) {
          Patch(asm_.SemWait(0), {0, DeviceValue::kWaitSemaphore, ring});
          asm_.DmaLoad(slot, received, count, 1);
        }
        asm_.Sync(kSyncDma);
        if (step.own && step.receive) {
          asm_.Emit(combine->first, {own, own, received, count, combine->second, 0});
          asm_.Sync(kSyncVpu);
        }
        const Reg value = step.own ? own.get() : received.get();  // the piece as it is sent and stored
        if (step.send) {
          Patch(asm_.Emit(isa::Opcode::RDMA, {next_core, next_slot, value, count, isa::flag::RDMA_POST, 0}),
                {0, DeviceValue::kPostSemaphore, ring});
          asm_.Add(next_slot, next_slot, count);
        }
        if (step.store) {
          asm_.DmaStore(out, value, count, 1);
          asm_.Add(out, out, count);
        }
        if (step.own) asm_.Add(x, x, count);
        if (step.receive) asm_.Add(slot, slot, count);
        asm_.Sub(own, pairs, own);
        asm_.Addi(received, own, piece_lines);
      });
    }
  }
  return OkStatus();
}

void CodeGenerator::ForPieces(Reg left, Reg count, uint32_t piece, uint8_t sync,
                              const std::function<void()>& body) {
  Assembler::Label top = asm_.NewLabel(), full = asm_.NewLabel(), done = asm_.NewLabel();
  asm_.Bind(top);
  asm_.Beq(left, kZeroReg, done);
  asm_.Li(count, piece);
  asm_.Blt(count, left, full);
  asm_.Add(count, left, kZeroReg);
  asm_.Bind(full);
  if (sync != 0) asm_.Sync(sync);
  body();
  asm_.Sub(left, left, count);
  asm_.Jmp(top);
  asm_.Bind(done);
}

StatusOr<uint32_t> CodeGenerator::PermuteRingOf(const HloInstruction& permute) {
  // Every device's source and target; the chains (from a device nothing is sent to) and then the cycles
  // of the permutation become the ring's groups, a chain's last device an open link.
  const size_t devices = static_cast<size_t>(grid_.devices());
  std::vector<int64_t> source(devices), target(devices);
  for (size_t d = 0; d < devices; ++d) {
    TPU_ASSIGN_OR_RETURN(hlo::PermutePeers peers, hlo::CollectivePermutePeers(permute, grid_, static_cast<int64_t>(d)));
    source[d] = peers.source;
    target[d] = peers.target;
  }
  CollectiveRing ring;
  std::vector<bool> placed(devices, false);
  auto follow = [&](size_t start) {
    std::vector<uint32_t> group;
    for (int64_t d = static_cast<int64_t>(start); d >= 0 && !placed[d]; d = target[d]) {
      placed[d] = true;
      group.push_back(static_cast<uint32_t>(d));
      if (target[d] < 0) ring.open.push_back(static_cast<uint32_t>(d));
    }
    ring.groups.push_back(std::move(group));
  };
  for (size_t d = 0; d < devices; ++d) {
    if (source[d] < 0) follow(d);
  }
  for (size_t d = 0; d < devices; ++d) {
    if (!placed[d]) follow(d);
  }
  std::sort(ring.open.begin(), ring.open.end());
  return AddRing(permute, std::move(ring));
}

Status CodeGenerator::EmitCollectivePermute(const HloInstruction& instruction) {
  const HloInstruction* operand = instruction.operand(0);
  const CollectivePart& plan = collectives_.at(&instruction).parts.at(0);
  const uint32_t ring = plan.ring;
  const uint32_t lines = MakeDeviceLayout(instruction.shape(), L()).lines;
  const uint32_t piece = std::min(lines, std::max(kPieceLines, (lines + kMaxPieces - 1) / kMaxPieces));
  if (lines == 0) return OkStatus();
  if (2 * piece > options_.vmem_lines) return VmemOverflow(instruction, 2 * uint64_t{piece});
  TPU_ASSIGN_OR_RETURN(ScopedReg own, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg received, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg hbm, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg remote, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg next_core, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg left, NewReg());
  TPU_ASSIGN_OR_RETURN(ScopedReg count, NewReg());
  asm_.Li(own, 0);
  asm_.Li(received, piece);
  DevicePatch patch{0, DeviceValue::kZeroLines, ring};
  patch.lines = lines;
  // A device nothing is sent to gets zeros.
  Patch(asm_.Li(left, 0), patch);
  LoadAddress(hbm, &instruction, 0);
  asm_.Li(count, piece);
  asm_.Vsplat(received, count, 0);
  asm_.Sync(kSyncVpu);
  ForPieces(left, count, piece, kSyncDma, [&] {
    asm_.DmaStore(hbm, received, count, 1);
    asm_.Add(hbm, hbm, count);
  });
  // Its operand to the next device of its chain or cycle.
  patch.value = DeviceValue::kSendLines;
  Patch(asm_.Li(left, 0), patch);
  Patch(asm_.Li(next_core, 0), {0, DeviceValue::kNextCore, ring});
  DevicePatch next{0, DeviceValue::kNextReceive, ring};
  next.offset = plan.slots;
  Patch(asm_.Li(remote, 0), next);
  LoadAddress(hbm, operand, 0);
  // The previous piece's RDMA has read `own`.
  ForPieces(left, count, piece, kSyncIci, [&] {
    asm_.DmaLoad(hbm, own, count, 1);
    asm_.Sync(kSyncDma);
    Patch(asm_.Emit(isa::Opcode::RDMA, {next_core, remote, own, count, isa::flag::RDMA_POST, 0}),
          {0, DeviceValue::kPostSemaphore, ring});
    asm_.Add(hbm, hbm, count);
    asm_.Add(remote, remote, count);
  });
  // What the device before it sent.
  patch.value = DeviceValue::kReceiveLines;
  Patch(asm_.Li(left, 0), patch);
  asm_.LoadAddress(remote, RegionKind::kReceive, 0, plan.slots);
  LoadAddress(hbm, &instruction, 0);
  ForPieces(left, count, piece, kSyncDma, [&] {
    Patch(asm_.SemWait(0), {0, DeviceValue::kWaitSemaphore, ring});
    asm_.DmaLoad(remote, received, count, 1);
    asm_.Sync(kSyncDma);
    asm_.DmaStore(hbm, received, count, 1);
    asm_.Add(hbm, hbm, count);
    asm_.Add(remote, remote, count);
  });
  return OkStatus();
}

}  // namespace tpu::compiler::codegen_internal
