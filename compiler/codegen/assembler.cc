#include "compiler/codegen/assembler.h"

#include <utility>

namespace tpu::compiler {

uint32_t Assembler::Emit(isa::Opcode opcode, const Operands& operands) {
  for (Reg reg : {operands.rd, operands.rs1, operands.rs2, operands.rs3}) {
    if (reg.index > 15 && first_error_.empty()) {
      first_error_ = "register s" + std::to_string(reg.index) + " does not exist (s0..s15)";
    }
  }
  isa::Instr instr;
  instr.opcode = static_cast<uint8_t>(opcode);
  instr.rd = operands.rd.index;
  instr.rs1 = operands.rs1.index;
  instr.rs2 = operands.rs2.index;
  instr.rs3 = operands.rs3.index;
  instr.flags = operands.flags;
  instr.imm = operands.imm;
  code_.push_back(isa::Encode(instr));
  return static_cast<uint32_t>(code_.size() - 1);
}

uint32_t Assembler::Li(Reg rd, uint32_t imm) { return Emit(isa::Opcode::LI, {rd, {}, {}, {}, 0, imm}); }
uint32_t Assembler::Addi(Reg rd, Reg rs1, uint32_t imm) {
  return Emit(isa::Opcode::ADDI, {rd, rs1, {}, {}, 0, imm});
}
uint32_t Assembler::Add(Reg rd, Reg rs1, Reg rs2) { return Emit(isa::Opcode::ADD, {rd, rs1, rs2, {}, 0, 0}); }
uint32_t Assembler::Sub(Reg rd, Reg rs1, Reg rs2) { return Emit(isa::Opcode::SUB, {rd, rs1, rs2, {}, 0, 0}); }
uint32_t Assembler::Mul(Reg rd, Reg rs1, Reg rs2) { return Emit(isa::Opcode::MUL, {rd, rs1, rs2, {}, 0, 0}); }

uint32_t Assembler::EmitBranch(isa::Opcode opcode, Reg rs1, Reg rs2, Label target) {
  uint32_t index = Emit(opcode, {{}, rs1, rs2, {}, 0, 0});
  if (target.id < 0 || target.id >= static_cast<int>(label_positions_.size())) {
    if (first_error_.empty()) first_error_ = "branch at " + std::to_string(index) + " to a label never created";
  } else {
    fixups_.push_back({index, target.id});
  }
  return index;
}
uint32_t Assembler::Bne(Reg rs1, Reg rs2, Label target) { return EmitBranch(isa::Opcode::BNE, rs1, rs2, target); }
uint32_t Assembler::Beq(Reg rs1, Reg rs2, Label target) { return EmitBranch(isa::Opcode::BEQ, rs1, rs2, target); }
uint32_t Assembler::Blt(Reg rs1, Reg rs2, Label target) { return EmitBranch(isa::Opcode::BLT, rs1, rs2, target); }
uint32_t Assembler::Jmp(Label target) { return EmitBranch(isa::Opcode::JMP, {}, {}, target); }
uint32_t Assembler::SemWait(uint32_t semaphore) { return Emit(isa::Opcode::SEMWAIT, {{}, {}, {}, {}, 0, semaphore}); }
uint32_t Assembler::SemPost(uint32_t semaphore) { return Emit(isa::Opcode::SEMPOST, {{}, {}, {}, {}, 0, semaphore}); }
uint32_t Assembler::Sld(Reg rd, Reg rs1, uint32_t line) { return Emit(isa::Opcode::SLD, {rd, rs1, {}, {}, 0, line}); }

void Assembler::AppendStraightLine(const std::vector<uint64_t>& words) {
  code_.insert(code_.end(), words.begin(), words.end());
}

uint32_t Assembler::Sync(uint8_t units) { return Emit(isa::Opcode::SYNC, {{}, {}, {}, {}, units, 0}); }

uint32_t Assembler::DmaLoad(Reg hbm, Reg vmem, Reg count, uint32_t stride) {
  return Emit(isa::Opcode::DMA_LD, {{}, hbm, vmem, count, 0, stride});
}
uint32_t Assembler::DmaStore(Reg hbm, Reg vmem, Reg count, uint32_t stride) {
  return Emit(isa::Opcode::DMA_ST, {{}, hbm, vmem, count, 0, stride});
}
uint32_t Assembler::MxuLoadWeights(Reg vmem, bool transpose) {
  return Emit(isa::Opcode::MXU_LW, {{}, vmem, {}, {}, transpose ? isa::flag::MXU_LW_TRANSPOSE : uint8_t{0}, 0});
}
uint32_t Assembler::MxuMatmul(Reg lhs, Reg out, Reg rows, bool accumulate, bool swap) {
  uint8_t flags = (accumulate ? isa::flag::MXU_MM_ACC : 0) | (swap ? isa::flag::MXU_MM_SWAP : 0);
  return Emit(isa::Opcode::MXU_MM, {{}, lhs, out, rows, flags, 0});
}
uint32_t Assembler::Vadd(Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags, uint32_t imm) {
  return Emit(isa::Opcode::VADD, {dst, src1, src2, count, flags, imm});
}
uint32_t Assembler::Vmax(Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags, uint32_t imm) {
  return Emit(isa::Opcode::VMAX, {dst, src1, src2, count, flags, imm});
}
uint32_t Assembler::Vsplat(Reg dst, Reg count, uint32_t bits) {
  return Emit(isa::Opcode::VSPLAT, {dst, {}, {}, count, 0, bits});
}

uint32_t Assembler::LoadAddress(Reg rd, RegionKind kind, uint32_t region_index, uint32_t line_offset) {
  // The immediate holds the offset alone until the loader adds the region's base line.
  uint32_t index = Li(rd, line_offset);
  relocations_.push_back({index, kind, kind == RegionKind::kTemp ? 0u : region_index, line_offset});
  return index;
}

Assembler::Label Assembler::NewLabel() {
  label_positions_.push_back(-1);
  return Label{static_cast<int>(label_positions_.size() - 1)};
}

void Assembler::Bind(Label label) {
  if (label.id < 0 || label.id >= static_cast<int>(label_positions_.size())) {
    if (first_error_.empty()) first_error_ = "binding a label never created";
    return;
  }
  if (label_positions_[label.id] >= 0) {
    if (first_error_.empty()) first_error_ = "label " + std::to_string(label.id) + " bound twice";
    return;
  }
  label_positions_[label.id] = static_cast<int64_t>(code_.size());
}

Status Assembler::Finish(std::vector<uint64_t>* code, std::vector<Relocation>* relocations) {
  if (!first_error_.empty()) return Internal("assembler: " + first_error_);
  for (const Fixup& fixup : fixups_) {
    int64_t position = label_positions_[fixup.label_id];
    if (position < 0) {
      return Internal("assembler: branch at " + std::to_string(fixup.instr_index) + " to label " +
                      std::to_string(fixup.label_id) + " that was never bound");
    }
    isa::Instr instr = isa::Decode(code_[fixup.instr_index]);
    instr.imm = static_cast<uint32_t>(position);
    code_[fixup.instr_index] = isa::Encode(instr);
  }
  fixups_.clear();
  *code = std::move(code_);
  *relocations = std::move(relocations_);
  code_.clear();
  relocations_.clear();
  return OkStatus();
}

ScalarRegisterAllocator::ScalarRegisterAllocator() {
  free_[0] = false;  // s0 is the constant zero
  for (int i = 1; i < 16; ++i) free_[i] = true;
}

StatusOr<Reg> ScalarRegisterAllocator::Allocate() {
  for (uint8_t i = 1; i < 16; ++i) {
    if (free_[i]) {
      free_[i] = false;
      return Reg{i};
    }
  }
  return ResourceExhausted("Ran out of scalar registers (s1..s15 all in use)");
}

void ScalarRegisterAllocator::Free(Reg reg) {
  if (reg.index > 0 && reg.index < 16) free_[reg.index] = true;
}

int ScalarRegisterAllocator::free_count() const {
  int count = 0;
  for (int i = 1; i < 16; ++i) count += free_[i] ? 1 : 0;
  return count;
}

ScopedReg& ScopedReg::operator=(ScopedReg&& other) noexcept {
  if (this != &other) {
    if (allocator_ != nullptr) allocator_->Free(reg_);
    allocator_ = other.allocator_;
    reg_ = other.reg_;
    other.allocator_ = nullptr;
  }
  return *this;
}

ScopedReg::~ScopedReg() {
  if (allocator_ != nullptr) allocator_->Free(reg_);
}

StatusOr<ScopedReg> AllocateScoped(ScalarRegisterAllocator* allocator) {
  StatusOr<Reg> reg = allocator->Allocate();
  if (!reg.ok()) return reg.status();
  return ScopedReg(allocator, *reg);
}

}  // namespace tpu::compiler
