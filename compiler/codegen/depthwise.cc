// Depthwise convolution on the VPU, for the unpadded form compiler/passes/convolution_lowering.h leaves
// (input already padded, feature_group_count == features, one input feature per group).
//
// For every column tile t of the features (loop), the KH*KW kernel lines of that tile are loaded once;
// then for every output row (batch, spatial dims but the last) the accumulator (Wo lines) is zeroed and,
// for every tap, one strided DMA gathers the tap's window (Wo lines of tile t, HBM stride
// stride_w * tiles) and the VPU multiplies it by the tap's kernel line (SRC2_BCAST) and adds it to the
// accumulator (the next tap's window loads into a second buffer meanwhile); one strided DMA stores the
// accumulator. No HBM temporaries; every input line is read
// KH*KW/(stride_h*stride_w) times. The taps run in kernel order with products added to +0 first, the
// order the interpreter sums them in. Padded lanes: 0 * 0 terms keep them +0.
#include "compiler/codegen/codegen_internal.h"
#include "compiler/passes/convolution_lowering.h"

namespace tpu::compiler::codegen_internal {

Status CodeGenerator::EmitDepthwiseConvolution(const HloInstruction& instruction) {
  const HloInstruction& input = *instruction.operand(0);
  const HloInstruction& kernel = *instruction.operand(1);
  const hlo::Shape& in = input.shape();
  const hlo::Shape& out = instruction.shape();
  const int rank = in.rank();
  if (!IsUnpaddedDepthwiseConvolution(instruction) || rank < 3 || out.element_type != hlo::PrimitiveType::F32) {
    return Unimplemented("convolution " + instruction.name() +
                         ": only the unpadded f32 depthwise form of compiler/passes/convolution_lowering.h is lowered "
                         "here (other convolutions are rewritten before code generation)");
  }
  const int spatial = rank - 2;
  const std::vector<hlo::WindowDimension>& window = instruction.window().dimensions;
  const uint32_t tiles = static_cast<uint32_t>(MakeDeviceLayout(in, L()).column_tiles(L()));
  const uint32_t out_width = static_cast<uint32_t>(out.dimensions[rank - 2]);
  uint32_t taps = 1;
  for (const hlo::WindowDimension& w : window) taps *= static_cast<uint32_t>(w.size);
  // VMEM: accumulator [0, Wo), two window buffers [Wo, 3 Wo) (the next tap's window loads while the VPU
  // works on the current one), kernel lines [3 Wo, 3 Wo + taps).
  const uint64_t vmem_needed = 3ull * out_width + taps;
  if (vmem_needed > options_.vmem_lines) return VmemOverflow(instruction, vmem_needed);
  const uint32_t window_vmem = out_width, kernel_vmem = 3 * out_width;

  const std::vector<int64_t> in_steps = RowSteps(in, L()), out_steps = RowSteps(out, L());

  TPU_ASSIGN_OR_RETURN(ScopedReg x, NewReg());       // input line of the current output row's first tap, tile t
  TPU_ASSIGN_OR_RETURN(ScopedReg y, NewReg());       // output line of the current row, tile t
  TPU_ASSIGN_OR_RETURN(ScopedReg width, NewReg());   // Wo
  TPU_ASSIGN_OR_RETURN(ScopedReg acc, NewReg());     // VMEM accumulator (line 0 is s0, but VSPLAT needs rd)
  LoadAddress(x, &input, 0);
  LoadAddress(y, &instruction, 0);
  asm_.Li(width, out_width);
  asm_.Li(acc, 0);

  // One code loop over `count` iterations whose body leaves the pointers where it found them; after each
  // iteration x and y advance by the given steps, and they are restored at the end.
  auto loop = [&](uint32_t count, int64_t x_step, int64_t y_step, const std::function<Status()>& body) -> Status {
    if (count == 1) return body();
    TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
    asm_.Li(remaining, count);
    Assembler::Label top = asm_.NewLabel();
    asm_.Bind(top);
    TPU_RETURN_IF_ERROR(body());
    asm_.Addi(x, x, static_cast<uint32_t>(x_step));
    asm_.Addi(y, y, static_cast<uint32_t>(y_step));
    asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
    asm_.Bne(remaining, kZeroReg, top);
    asm_.Addi(x, x, static_cast<uint32_t>(-x_step * count));
    asm_.Addi(y, y, static_cast<uint32_t>(-y_step * count));
    return OkStatus();
  };

  // The taps of one output row: loops over all window dimensions but the last, the last unrolled.
  auto emit_taps = [&]() -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg tap_x, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg kernel_line, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg window0, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg window1, NewReg());
    asm_.Li(window0, window_vmem);
    asm_.Li(window1, window_vmem + out_width);
    asm_.Li(kernel_line, kernel_vmem);
    asm_.Addi(tap_x, x, 0);
    const hlo::WindowDimension& last = window[spatial - 1];
    const uint32_t gather_stride = static_cast<uint32_t>(last.stride * in_steps[rank - 2]);
    std::function<Status(int)> over = [&](int s) -> Status {
      if (s + 1 < spatial) {
        const uint32_t size = static_cast<uint32_t>(window[s].size);
        TPU_ASSIGN_OR_RETURN(ScopedReg remaining, NewReg());
        TPU_ASSIGN_OR_RETURN(ScopedReg start, NewReg());
        asm_.Addi(start, tap_x, 0);
        asm_.Li(remaining, size);
        Assembler::Label top = asm_.NewLabel();
        asm_.Bind(top);
        TPU_RETURN_IF_ERROR(over(s + 1));
        asm_.Addi(start, start, static_cast<uint32_t>(in_steps[s + 1]));
        asm_.Addi(tap_x, start, 0);
        asm_.Addi(remaining, remaining, static_cast<uint32_t>(-1));
        asm_.Bne(remaining, kZeroReg, top);
        return OkStatus();
      }
      // Tap k multiplies window k % 2 while window (k + 1) % 2 loads.
      const uint32_t tap_step = static_cast<uint32_t>(in_steps[rank - 2]);
      asm_.Sync(kSyncVpu);  // the previous row of taps may still read window 0
      asm_.DmaLoad(tap_x, window0, width, gather_stride);
      for (int64_t k = 0; k < last.size; ++k) {
        const Reg current = k % 2 == 0 ? window0.get() : window1.get();
        const Reg next = k % 2 == 0 ? window1.get() : window0.get();
        asm_.Sync(kSyncDma);  // tap k's window is loaded
        if (k + 1 < last.size) {
          asm_.Sync(kSyncVpu);  // tap k - 1 has read `next`
          asm_.Addi(tap_x, tap_x, tap_step);
          asm_.DmaLoad(tap_x, next, width, gather_stride);
        }
        asm_.Emit(isa::Opcode::VMUL, {current, current, kernel_line, width, isa::flag::VMUL_SRC2_BCAST, 0});
        asm_.Emit(isa::Opcode::VADD, {acc, acc, current, width, 0, 0});
        asm_.Addi(kernel_line, kernel_line, 1);
      }
      asm_.Addi(tap_x, tap_x, tap_step);
      return OkStatus();
    };
    return over(0);
  };

  // Output rows: every index of the dimensions 0 .. rank-3 (batch and the spatial dims but the last).
  std::function<Status(int)> rows = [&](int d) -> Status {
    if (d == rank - 2) {
      asm_.Sync(kSyncDma);  // the previous row's store reads the accumulator
      asm_.Vsplat(acc, width, 0);
      TPU_RETURN_IF_ERROR(emit_taps());
      asm_.Sync(kSyncVpu);  // the last tap's add
      asm_.DmaStore(y, acc, width, static_cast<uint32_t>(out_steps[rank - 2]));
      return OkStatus();
    }
    // Dimension 0 is the batch (stride 1 in windows); dimension d >= 1 is spatial dimension d - 1.
    const int64_t stride = d == 0 ? 1 : window[d - 1].stride;
    return loop(static_cast<uint32_t>(out.dimensions[d]), in_steps[d] * stride, out_steps[d],
                [&]() { return rows(d + 1); });
  };

  auto load_kernel_tile = [&]() -> Status {
    TPU_ASSIGN_OR_RETURN(ScopedReg kernel_hbm, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg kernel_vmem_reg, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg tap_count, NewReg());
    TPU_ASSIGN_OR_RETURN(ScopedReg tile, NewReg());
    // x - (input base) is the tile index here: the kernel's tile line is kernel base + tile.
    LoadAddress(tile, &input, 0);
    asm_.Sub(tile, x, tile);
    LoadAddress(kernel_hbm, &kernel, 0);
    asm_.Add(kernel_hbm, kernel_hbm, tile);
    asm_.Li(kernel_vmem_reg, kernel_vmem);
    asm_.Li(tap_count, taps);
    asm_.Sync(kSyncVpu);  // the previous tile's last multiply reads the kernel lines
    asm_.DmaLoad(kernel_hbm, kernel_vmem_reg, tap_count, tiles);
    return OkStatus();
  };

  // Feature tiles: the tile's kernel lines (one per tap, HBM stride `tiles`), then every output row.
  return loop(tiles, 1, 1, [&]() -> Status {
    TPU_RETURN_IF_ERROR(load_kernel_tile());
    return rows(0);
  });
}

void CodeGenerator::AddDepthwiseHandlers(OpcodeHandlerTable& table) {
  // The depthwise form prepare.h leaves; EmitDepthwiseConvolution checks it.
  OpcodeHandler convolution(HloOpcode::kConvolution);
  convolution.emit = [](CodeGenerator& g, const HloInstruction& instruction) {
    return g.EmitDepthwiseConvolution(instruction);
  };
  table.Add(std::move(convolution));
}

}  // namespace tpu::compiler::codegen_internal
