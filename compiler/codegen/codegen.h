// Code generation from an HLO module to a tpusim program (docs/isa.md, compiler/codegen/program.h).
//
// Model: every HLO array value lives in HBM in the device layout (program.h). Each instruction is
// compiled on its own: its code loads operand chunks into VMEM, computes with the MXU or VPU, stores the
// result back to HBM, and synchronizes every hand-over between units (DMA -> MXU/VPU -> DMA) with SYNC,
// because the units run concurrently on the RTL. Instructions are separated by a full SYNC.
//
// Padding invariant: the padded lanes of every stored tensor are +0. Parameters and constants are
// stored padded with zeros by the loader (ToDeviceBytes). Ops preserve it as follows:
//  - add, subtract, multiply, maximum, minimum (f32, or s32 lanes with INT) of two tensors or with a
//    broadcast row: op(+0, +0) = +0.
//  - the same with a scalar constant c: uses the immediate form only when op(+0, c) = +0 or the
//    minor dimension fills whole lines; otherwise c is broadcast from a constant row whose padded lanes
//    are zero. Negate is x * -1 + 0; division by a constant is a multiplication by its reciprocal.
//  - compare: padded lanes compare +0 with +0 (or the immediate); where that is true they are cleared
//    with VAND against a row of ones. select takes on-false from a tensor or a zero immediate.
//  - exp, log, division by a tensor (VPU sequences): padded lanes cleared the same way.
//  - broadcast: rows are copied from the zero-padded operand; a scalar constant is splatted only into
//    full lines, otherwise written from a zero-padded constant row; scalars and dimension-0 broadcasts
//    go through VTRANS with zero lines past the logical columns.
//  - transpose (VTRANS): rows past the operand are zeroed before the transpose.
//  - reduce: rows are combined line by line; padded lanes add or max +0s.
//  - dot: padded output lanes are sums of products with zero weights, +0 for finite lhs values (an inf
//    or NaN in the lhs makes them NaN, as 0 * inf = NaN; the logical values are unaffected).
//  - copy, reshape, get-tuple-element move whole lines.
// Before code generation the module is rewritten on a copy by a pipeline of passes (prepare.h): calls
// inlined, constants folded, transposed dot operands absorbed, minor-dimension reductions and column/row
// reshapes through transposes, f32 dots split into bf16 passes for precision.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/program.h"
#include "compiler/hlo/hlo_ir.h"
#include "compiler/passes/pass.h"
#include "sw/base/status.h"

namespace tpu::compiler {

struct CompileOptions {
  uint32_t lanes = 8;          // LANES of the target configuration (MXU size)
  uint32_t vmem_lines = 8192;  // VMEM lines codegen may use
  uint32_t imem_words = 0;     // instruction memory size; 0 = do not check
  // MXU passes per f32 dot (compiler/passes/split_dots.h). 0 (default): what each dot's precision_config
  // asks for, as XLA on a TPU: DEFAULT one pass (operands rounded to bf16), HIGH three (bf16_3x, about 16
  // significant bits), HIGHEST six (bf16_6x, about f32's 24); if the program does not fit the IMEM, more
  // than one pass only for the dots whose values reach a compare (a ReLU mask the rounding could flip) or
  // an exp or log (which amplify errors), else one. 1, 3 or 6: that many for every f32 dot.
  int dot_passes = 0;
  // HBM size of the target in lines. Non-zero: a program whose parameters, outputs, constants and temp
  // region together need more fails to compile with the runtime's out-of-memory message (buffer_assignment.h).
  uint64_t hbm_lines = 0;
  // The replicas a module whose header names no grid (replica_count, num_partitions) runs on: one
  // program for that many devices (Program::replicas). 0: the header's grid.
  int64_t replica_count = 0;
  // Chains of elementwise work as one VPU loop, their values kept in VMEM (loop_fusion.h); false: every
  // instruction its own loop through HBM.
  bool fuse_elementwise = true;
  // Called with the module the code generator lowers (after PrepareForCodegen), for dumps.
  std::function<Status(const hlo::HloModule& prepared)> after_prepare;
  // Called after each pass of PrepareForCodegen (PrepareOptions::after_pass). The preparation runs again
  // when a program does not fit the IMEM at the dots' passes (fewer passes; the dot schedules share one
  // run): each run starts with index 0, and the last run is the one whose module after_prepare sees.
  PassPipeline::AfterPassHook after_prepare_pass;
};

// What the padding of one dot costs: the MXU computes whole LANES x LANES tiles.
struct DotPaddingReport {
  std::string name;
  int64_t m = 0, k = 0, n = 0;
  uint64_t logical_macs = 0;  // m * k * n
  uint64_t padded_macs = 0;   // m * round_up(k, lanes) * round_up(n, lanes)
  double waste_percent() const {
    return padded_macs == 0 ? 0.0 : 100.0 * double(padded_macs - logical_macs) / double(padded_macs);
  }
};

struct CompileStats {
  uint32_t instructions = 0;
  uint32_t peak_temp_lines = 0;
  uint64_t hbm_lines = 0;            // parameters + outputs not aliased + constants + temp region
  uint32_t aliased_outputs = 0;      // outputs written into their parameter's buffer (input_output_alias)
  uint32_t alias_copies = 0;         // of those, outputs computed elsewhere and copied at the end
  std::vector<DotPaddingReport> dots;
  double prepare_ms = 0;  // PrepareForCodegen (every attempt)
  double codegen_ms = 0;  // code generation (every attempt)
  // How the dots' MXU passes were chosen: "operand_precision" (as each dot asks), "N passes (forced)", or
  // the reduction that made the program fit the IMEM.
  std::string dot_precision;
};

// An opcode the code generator lowers and the element types it takes, from the code generator's own
// handler table (compiler/codegen/opcode_handler.h): what `tpuc --list-ops` prints and docs/opcodes.md is.
struct SupportedOpcode {
  std::string name;           // HLO opcode name, e.g. "add"
  std::string element_types;  // e.g. "f32, s32, u32, s64"
};
// In opcode order.
std::vector<SupportedOpcode> SupportedOpcodes();

// Compiles the entry computation. Unsupported ops give
// NotFound("No registered '<op>' OpKernel for XLA_TPU_JIT devices compatible with node <name>");
// supported ops in a form this version cannot lower give Unimplemented; a program that does not fit the
// VMEM or IMEM gives ResourceExhausted, one that does not fit options.hbm_lines gives
// ResourceExhausted("Ran out of memory in memory space hbm; used: X; limit: Y") listing the largest
// allocations. input_output_alias entries of the module become Program::output_aliases.
StatusOr<Program> Compile(const hlo::HloModule& module, const CompileOptions& options, CompileStats* stats = nullptr);

}  // namespace tpu::compiler
