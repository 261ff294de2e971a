// A small assembler for the tpusim ISA (docs/isa.md), used by codegen. Instructions are encoded only
// through the generated tpu::isa::Encode. Branch targets are labels that are backpatched when the code
// is finished; HBM addresses enter the code only through LoadAddress, which records a Relocation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/codegen/program.h"
#include "sw/base/status.h"
#include "tpu_isa.h"

namespace tpu::compiler {

// A scalar register number, 0..15. s0 always reads zero.
struct Reg {
  uint8_t index = 0;
  bool operator==(const Reg& other) const { return index == other.index; }
  bool operator!=(const Reg& other) const { return index != other.index; }
};
inline constexpr Reg kZeroReg{0};

// Named operands of one instruction; fields an opcode does not use stay zero.
struct Operands {
  Reg rd, rs1, rs2, rs3;
  uint8_t flags = 0;
  uint32_t imm = 0;
};

class Assembler {
 public:
  // A position in the code, bound once; branches to it may be emitted before it is bound.
  struct Label {
    int id = -1;
  };

  // Generic emission: returns the index of the emitted instruction word.
  uint32_t Emit(isa::Opcode opcode, const Operands& operands);

  // One helper per opcode, operands named as in docs/isa.md.
  uint32_t Nop() { return Emit(isa::Opcode::NOP, {}); }
  uint32_t Halt() { return Emit(isa::Opcode::HALT, {}); }
  uint32_t Li(Reg rd, uint32_t imm);
  uint32_t Addi(Reg rd, Reg rs1, uint32_t imm);
  uint32_t Add(Reg rd, Reg rs1, Reg rs2);
  uint32_t Sub(Reg rd, Reg rs1, Reg rs2);
  uint32_t Mul(Reg rd, Reg rs1, Reg rs2);
  uint32_t Bne(Reg rs1, Reg rs2, Label target);
  uint32_t Beq(Reg rs1, Reg rs2, Label target);
  uint32_t Blt(Reg rs1, Reg rs2, Label target);
  uint32_t Jmp(Label target);
  // s[rd] = lane 0 of VMEM[s[rs1] + line].
  uint32_t Sld(Reg rd, Reg rs1, uint32_t line);
  // units: isa::flag::SYNC_* bits; 0 waits for every unit.
  uint32_t Sync(uint8_t units);
  // Host semaphores (docs/csr.md): wait until `semaphore` is non-zero and take one; add one.
  uint32_t SemWait(uint32_t semaphore);
  uint32_t SemPost(uint32_t semaphore);
  // VMEM[vmem + i] = HBM[hbm + i*stride] for i < count.
  uint32_t DmaLoad(Reg hbm, Reg vmem, Reg count, uint32_t stride);
  // HBM[hbm + i*stride] = VMEM[vmem + i] for i < count.
  uint32_t DmaStore(Reg hbm, Reg vmem, Reg count, uint32_t stride);
  uint32_t MxuLoadWeights(Reg vmem, bool transpose);
  uint32_t MxuMatmul(Reg lhs, Reg out, Reg rows, bool accumulate, bool swap);
  // Elementwise VADD/VMAX: flags are isa::flag::VADD_SRC2_* (VMAX uses the same bit values).
  uint32_t Vadd(Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags = 0, uint32_t imm = 0);
  uint32_t Vmax(Reg dst, Reg src1, Reg src2, Reg count, uint8_t flags = 0, uint32_t imm = 0);
  uint32_t Vsplat(Reg dst, Reg count, uint32_t bits);

  // Appends instruction words encoded by another Assembler that hold no branch and no relocation
  // (straight-line code, e.g. loop bodies built ahead and compared).
  void AppendStraightLine(const std::vector<uint64_t>& words);
  // LI reg, <base line of the region> + line_offset, patched by the loader (see Relocation).
  uint32_t LoadAddress(Reg rd, RegionKind kind, uint32_t region_index, uint32_t line_offset);

  Label NewLabel();
  // Binds `label` to the next instruction emitted. Binding a label twice is an error reported by Finish.
  void Bind(Label label);

  uint32_t size() const { return static_cast<uint32_t>(code_.size()); }
  const std::vector<uint64_t>& code() const { return code_; }
  const std::vector<Relocation>& relocations() const { return relocations_; }

  // Patches every branch; fails if a label was used but never bound, bound twice, or an operand was
  // out of range. On success moves the code and relocations out.
  Status Finish(std::vector<uint64_t>* code, std::vector<Relocation>* relocations);

 private:
  uint32_t EmitBranch(isa::Opcode opcode, Reg rs1, Reg rs2, Label target);

  struct Fixup {
    uint32_t instr_index;
    int label_id;
  };
  std::vector<uint64_t> code_;
  std::vector<Relocation> relocations_;
  std::vector<int64_t> label_positions_;  // -1 while unbound
  std::vector<Fixup> fixups_;
  std::string first_error_;
};

// Hands out s1..s15. Registers are returned explicitly or by a ScopedReg going out of scope.
class ScalarRegisterAllocator {
 public:
  ScalarRegisterAllocator();
  // Fails with ResourceExhausted when all 15 registers are taken.
  StatusOr<Reg> Allocate();
  void Free(Reg reg);
  int free_count() const;
  bool is_free(Reg reg) const { return reg.index != 0 && free_[reg.index]; }

 private:
  bool free_[16];
};

// A register owned for a C++ scope.
class ScopedReg {
 public:
  ScopedReg() = default;
  ScopedReg(ScalarRegisterAllocator* allocator, Reg reg) : allocator_(allocator), reg_(reg) {}
  ScopedReg(ScopedReg&& other) noexcept : allocator_(other.allocator_), reg_(other.reg_) { other.allocator_ = nullptr; }
  ScopedReg& operator=(ScopedReg&& other) noexcept;
  ScopedReg(const ScopedReg&) = delete;
  ScopedReg& operator=(const ScopedReg&) = delete;
  ~ScopedReg();
  Reg get() const { return reg_; }
  operator Reg() const { return reg_; }  // NOLINT: used where a Reg is expected

 private:
  ScalarRegisterAllocator* allocator_ = nullptr;
  Reg reg_;
};

// Allocates a register owned by the returned scope, or returns ResourceExhausted from the caller.
StatusOr<ScopedReg> AllocateScoped(ScalarRegisterAllocator* allocator);

}  // namespace tpu::compiler
