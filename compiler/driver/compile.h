// The one compile entry point of the compiler, used by `tpuc` and by the runtime's Client::Compile, so
// that what runs and what the dumps show are the same program:
//
//   parsed and verified module (the caller's)
//     -> the default pass pipeline (AddDefaultPasses, in place)
//     -> preparation for codegen (prepare.h, on a copy)
//     -> code generation (codegen.h): buffer assignment, input_output_alias, the HBM check
//
// With a dump directory, every step's module is written there as NN-stepname.hlo (00-input.hlo, one
// file per pass, one NN-prepare.<pass>.hlo per preparation pass, then NN-prepare-for-codegen.hlo, the
// module the code generator lowers) and the final disassembly as program.asm. When codegen prepares the
// module more than once (fewer dot passes to fit the IMEM), the preparation dumps are those of the
// program kept.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/program.h"
#include "compiler/hlo/hlo_ir.h"
#include "sw/base/status.h"

namespace tpu::compiler {

struct CompileModuleOptions {
  CompileOptions codegen;  // target (lanes, VMEM, IMEM, HBM) and dot precision
  std::string dump_dir;    // empty: no dumps; created if missing
  // Turns the program's code into text for program.asm; null writes one hex word per line.
  std::function<std::string(const std::vector<uint64_t>& code)> disassemble;
};

struct StepTiming {
  std::string name;  // pass name, "prepare-for-codegen" or "codegen"
  double ms = 0;
  bool changed = false;  // passes only
};

struct CompileModuleReport {
  std::vector<StepTiming> steps;  // in the order they ran
  double total_ms = 0;            // the whole CompileModule call
  CompileStats codegen;           // instructions, HBM need, VMEM peaks, dot padding
  std::vector<std::string> dumped_files;  // file names written to the dump directory, in order
};

// Compiles `module` (parsed and verified by the caller; the pass pipeline rewrites it in place).
StatusOr<Program> CompileModule(hlo::HloModule* module, const CompileModuleOptions& options,
                                CompileModuleReport* report = nullptr);

// program.asm: a header (module, instruction count, lanes, temp region and aliases), one line per
// relocation, then the disassembly (one line per word) with a "# ---" line naming the HLO instruction
// or copy each of its code ranges comes from.
std::string ProgramListing(const Program& program,
                           const std::function<std::string(const std::vector<uint64_t>&)>& disassemble);

}  // namespace tpu::compiler
