#include "compiler/codegen/assembler.h"

#include <gtest/gtest.h>

#include <set>

namespace tpu::compiler {
namespace {

TEST(AssemblerTest, EncodesNamedOperandsThroughTheIsaEncoder) {
  Assembler a;
  a.DmaLoad(Reg{1}, Reg{2}, Reg{3}, 16);
  a.MxuMatmul(Reg{4}, Reg{5}, Reg{6}, /*accumulate=*/true, /*swap=*/true);
  a.Vmax(Reg{7}, Reg{7}, kZeroReg, Reg{8}, isa::flag::VMAX_SRC2_IMM, 0x3f800000u);
  a.Halt();
  std::vector<uint64_t> code;
  std::vector<Relocation> relocs;
  ASSERT_TRUE(a.Finish(&code, &relocs).ok());
  ASSERT_EQ(code.size(), 4u);
  isa::Instr dma = isa::Decode(code[0]);
  EXPECT_EQ(dma.opcode, static_cast<uint8_t>(isa::Opcode::DMA_LD));
  EXPECT_EQ(dma.rs1, 1);
  EXPECT_EQ(dma.rs2, 2);
  EXPECT_EQ(dma.rs3, 3);
  EXPECT_EQ(dma.imm, 16u);
  isa::Instr mm = isa::Decode(code[1]);
  EXPECT_EQ(mm.flags, isa::flag::MXU_MM_ACC | isa::flag::MXU_MM_SWAP);
  EXPECT_EQ(mm.rs1, 4);
  EXPECT_EQ(mm.rs2, 5);
  EXPECT_EQ(mm.rs3, 6);
  isa::Instr vmax = isa::Decode(code[2]);
  EXPECT_EQ(vmax.opcode, static_cast<uint8_t>(isa::Opcode::VMAX));
  EXPECT_EQ(vmax.rd, 7);
  EXPECT_EQ(vmax.imm, 0x3f800000u);
  EXPECT_TRUE(relocs.empty());
}

TEST(AssemblerTest, BackpatchesForwardAndBackwardBranches) {
  Assembler a;
  Assembler::Label loop = a.NewLabel();
  Assembler::Label done = a.NewLabel();
  a.Li(Reg{1}, 3);
  a.Bind(loop);
  a.Beq(Reg{1}, kZeroReg, done);   // index 1, forward
  a.Addi(Reg{1}, Reg{1}, static_cast<uint32_t>(-1));
  a.Jmp(loop);                      // index 3, backward
  a.Bind(done);
  a.Halt();                         // index 4
  std::vector<uint64_t> code;
  std::vector<Relocation> relocs;
  ASSERT_TRUE(a.Finish(&code, &relocs).ok());
  EXPECT_EQ(isa::Decode(code[1]).imm, 4u);
  EXPECT_EQ(isa::Decode(code[3]).imm, 1u);
}

TEST(AssemblerTest, UnboundOrDoublyBoundLabelsAreErrors) {
  Assembler a;
  Assembler::Label never = a.NewLabel();
  a.Jmp(never);
  std::vector<uint64_t> code;
  std::vector<Relocation> relocs;
  EXPECT_FALSE(a.Finish(&code, &relocs).ok());

  Assembler b;
  Assembler::Label twice = b.NewLabel();
  b.Bind(twice);
  b.Nop();
  b.Bind(twice);
  EXPECT_FALSE(b.Finish(&code, &relocs).ok());

  Assembler c;
  c.Jmp(Assembler::Label{});
  EXPECT_FALSE(c.Finish(&code, &relocs).ok());
}

TEST(AssemblerTest, LoadAddressRecordsARelocation) {
  Assembler a;
  a.Nop();
  a.LoadAddress(Reg{9}, RegionKind::kConstant, 2, 40);
  a.LoadAddress(Reg{10}, RegionKind::kTemp, 7, 5);
  std::vector<uint64_t> code;
  std::vector<Relocation> relocs;
  ASSERT_TRUE(a.Finish(&code, &relocs).ok());
  ASSERT_EQ(relocs.size(), 2u);
  EXPECT_EQ(relocs[0].instr_index, 1u);
  EXPECT_EQ(relocs[0].kind, RegionKind::kConstant);
  EXPECT_EQ(relocs[0].region_index, 2u);
  EXPECT_EQ(relocs[0].line_offset, 40u);
  EXPECT_EQ(relocs[1].region_index, 0u);  // unused for temp
  isa::Instr li = isa::Decode(code[1]);
  EXPECT_EQ(li.opcode, static_cast<uint8_t>(isa::Opcode::LI));
  EXPECT_EQ(li.rd, 9);
}

TEST(ScalarRegisterAllocatorTest, HandsOutFifteenDistinctRegistersAndNeverS0) {
  ScalarRegisterAllocator allocator;
  std::set<int> seen;
  for (int i = 0; i < 15; ++i) {
    StatusOr<Reg> reg = allocator.Allocate();
    ASSERT_TRUE(reg.ok());
    EXPECT_NE(reg->index, 0);
    EXPECT_TRUE(seen.insert(reg->index).second);
  }
  StatusOr<Reg> none = allocator.Allocate();
  EXPECT_EQ(none.status().code(), StatusCode::kResourceExhausted);
  allocator.Free(Reg{4});
  StatusOr<Reg> again = allocator.Allocate();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->index, 4);
}

TEST(ScalarRegisterAllocatorTest, ScopedRegistersReturnOnScopeExit) {
  ScalarRegisterAllocator allocator;
  {
    StatusOr<ScopedReg> a = AllocateScoped(&allocator);
    StatusOr<ScopedReg> b = AllocateScoped(&allocator);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(allocator.free_count(), 13);
    ScopedReg moved = std::move(*a);
    EXPECT_EQ(allocator.free_count(), 13);
  }
  EXPECT_EQ(allocator.free_count(), 15);
}

}  // namespace
}  // namespace tpu::compiler
