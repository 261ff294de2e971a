// tpuc: compiles an HLO text module for a tpusim configuration.
//
//   tpuc FILE.hlo --config=tiny|v2|PATH.cfg [--dump-dir=DIR] [--dot-passes=0|1|3|6] [--batch=N]
//        [--fill-elided-constants] [-o PROGRAM]
//   tpuc --list-ops
//
// Parses and verifies the module and compiles it with CompileModule (compiler/driver/compile.h), the
// entry point the runtime uses too: pass pipeline, codegen preparation, codegen. With --dump-dir, the
// module after each step is written as DIR/NN-stepname.hlo (00-input.hlo, one file per pass,
// NN-prepare.<pass>.hlo per preparation pass, NN-prepare-for-codegen.hlo) and the disassembly as
// DIR/program.asm; with -o, the program file the
// runtime loads. Prints the program's sizes and HBM need, the time of each step, the padding report and
// compile_ms (parse to program). --dot-passes sets CompileOptions::dot_passes (MXU passes per f32 dot;
// 0: each dot's operand_precision, as on a TPU). --help prints the usage on stdout; errors exit with status 1.
#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/buffer_assignment.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/program.h"
#include "compiler/driver/compile.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/padding_report.h"
#include "compiler/passes/rebatch.h"
#include "tpu_isa.h"
#include "sim/model/disassembler.h"

namespace tpu::compiler {
namespace {

struct Flags {
  std::string input;
  std::string config = "tiny";
  std::string dump_dir;
  std::string output;
  int dot_passes = 0;  // CompileOptions::dot_passes
  int64_t batch = 0;   // --batch: re-specialize for this batch size (compiler/passes/rebatch.h); 0 = as written
  bool fill_elided_constants = false;  // --fill-elided-constants: seeded values for `constant({...})`
  bool help = false;                   // -h, --help: print the usage and stop
  bool list_ops = false;               // --list-ops: print the supported opcodes and stop
};

constexpr const char* kUsage =
    "usage: tpuc FILE.hlo --config=tiny|v2|PATH.cfg [--dump-dir=DIR] [--dot-passes=0|1|3|6] [--batch=N] [--fill-elided-constants] [-o PROGRAM]\n"
    "       tpuc --list-ops   (the supported opcodes and their element types, as docs/opcodes.md)";

StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--config=", 0) == 0) {
      flags.config = arg.substr(9);
    } else if (arg.rfind("--dot-passes=", 0) == 0) {
      const std::string value = arg.substr(13);
      if (value != "0" && value != "1" && value != "3" && value != "6") {
        return InvalidArgument("--dot-passes must be 0 (each dot's precision), 1, 3 or 6");
      }
      flags.dot_passes = std::stoi(value);
    } else if (arg.rfind("--batch=", 0) == 0) {
      const std::string value = arg.substr(8);
      if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos || std::stoll(value) <= 0) {
        return InvalidArgument("--batch must be a positive integer");
      }
      flags.batch = std::stoll(value);
    } else if (arg == "--fill-elided-constants") {
      flags.fill_elided_constants = true;
    } else if (arg.rfind("--dump-dir=", 0) == 0) {
      flags.dump_dir = arg.substr(11);
    } else if (arg == "-o") {
      if (i + 1 >= argc) return InvalidArgument("-o needs a file name");
      flags.output = argv[++i];
    } else if (arg.rfind("-o", 0) == 0 && arg.size() > 2) {
      flags.output = arg.substr(2);
    } else if (arg == "-h" || arg == "--help") {
      flags.help = true;
      return flags;
    } else if (arg == "--list-ops") {
      flags.list_ops = true;
      return flags;
    } else if (!arg.empty() && arg[0] == '-') {
      return InvalidArgument("unknown flag " + arg + "\n" + kUsage);
    } else if (flags.input.empty()) {
      flags.input = arg;
    } else {
      return InvalidArgument("more than one input file\n" + std::string(kUsage));
    }
  }
  if (flags.input.empty()) return InvalidArgument(std::string("no input file\n") + kUsage);
  return flags;
}

// The HLO text of `path`; a directory or a missing file is said as such (not as a parse error).
StatusOr<std::string> ReadFile(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT) return NotFound("'" + path + "': no such file");
    return InvalidArgument("cannot open '" + path + "': " + std::strerror(error));
  }
  if (S_ISDIR(info.st_mode)) return InvalidArgument("'" + path + "' is a directory, not an HLO file");
  std::ifstream in(path);
  if (!in) return NotFound("cannot open '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Reads LANES, VMEM_LINES, IMEM_WORDS and HBM_LINES from rtl/config/<name>.cfg ("param NAME VALUE # comment").
StatusOr<CompileOptions> ReadConfig(const std::string& config) {
  std::string path = config;
  if (config.find('/') == std::string::npos && config.find(".cfg") == std::string::npos) {
    path = std::string(TPU_SOURCE_DIR) + "/rtl/config/" + config + ".cfg";
  }
  std::ifstream in(path);
  if (!in) return NotFound("unknown configuration '" + config + "': cannot read " + path);
  CompileOptions options;
  options.lanes = options.vmem_lines = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line.substr(0, line.find('#')));
    std::string keyword, name;
    uint64_t value = 0;
    if (!(words >> keyword >> name >> value) || keyword != "param") continue;
    if (name == "LANES") options.lanes = static_cast<uint32_t>(value);
    if (name == "VMEM_LINES") options.vmem_lines = static_cast<uint32_t>(value);
    if (name == "IMEM_WORDS") options.imem_words = static_cast<uint32_t>(value);
    if (name == "HBM_LINES") options.hbm_lines = value;
  }
  if (options.lanes == 0 || options.vmem_lines == 0) {
    return InvalidArgument(path + " does not define LANES and VMEM_LINES");
  }
  return options;
}

std::string Disassemble(const std::vector<uint64_t>& code) { return model::DisassembleProgram(code); }

Status Main(int argc, char** argv) {
  TPU_ASSIGN_OR_RETURN(Flags flags, ParseFlags(argc, argv));
  if (flags.help) {
    std::printf("%s\n", kUsage);
    return OkStatus();
  }
  if (flags.list_ops) {
    // docs/opcodes.md is this output (a test compares them).
    std::printf("# Supported HLO opcodes\n\nGenerated by `tpuc --list-ops` from the code generator's handler table "
                "(compiler/codegen/opcode_handler.h);\nany other opcode stops compilation with `No registered "
                "'<op>' OpKernel for XLA_TPU_JIT devices`.\nLimits of each lowering: compiler/codegen/README.md.\n"
                "Before code generation, bf16 arithmetic and compares become f32 operations rounded back to bf16\n"
                "(compiler/passes/bf16_normalization.h), f16 arithmetic, compares, converts, dots, convolutions and\n"
                "add/max/min reductions f32 ones rounded back to f16 by VPU word arithmetic (f16_normalization.h,\n"
                "f16_rounding_expansion.h), s8/s16/u8/u16 arithmetic s32 operations wrapped back\n"
                "(integer_normalization.h), f32 remainder and atan2 f32 arithmetic (remainder_expansion.h,\n"
                "atan2_expansion.h), sine, cosine, tan, erf and cbrt f32 arithmetic and count-leading-zeros\n"
                "and popcnt integer arithmetic (elementwise_expansion.h), integer divide and remainder a\n"
                "long-division loop "
                "(integer_division_expansion.h), sort a bitonic sorting network in a loop (sort_expansion.h),\n"
                "rng-bit-generator of a key in u32 words u32 arithmetic with u8/u16/u32 bits\n"
                "(rng_bit_generator_expansion.h; of a constant key its folded values), and dots of any rank\n"
                "rank-2 dots (matrix_dots.h).\n\n"
                "| opcode | element types |\n|---|---|\n");
    for (const SupportedOpcode& opcode : SupportedOpcodes()) {
      std::printf("| %s | %s |\n", opcode.name.c_str(), opcode.element_types.c_str());
    }
    return OkStatus();
  }
  TPU_ASSIGN_OR_RETURN(CompileOptions options, ReadConfig(flags.config));
  options.dot_passes = flags.dot_passes;
  TPU_ASSIGN_OR_RETURN(std::string text, ReadFile(flags.input));
  auto start = std::chrono::steady_clock::now();
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(text));
  TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
  if (flags.batch > 0) TPU_RETURN_IF_ERROR(Rebatch(flags.batch).Run(module.get()).status());
  if (flags.fill_elided_constants) TPU_RETURN_IF_ERROR(FillElidedConstants(module.get(), 0).status());

  CompileModuleOptions compile_options;
  compile_options.codegen = options;
  compile_options.dump_dir = flags.dump_dir;
  compile_options.disassemble = Disassemble;
  CompileModuleReport report;
  TPU_ASSIGN_OR_RETURN(Program program, CompileModule(module.get(), compile_options, &report));
  auto end = std::chrono::steady_clock::now();
  long long compile_ms = std::chrono::duration_cast<std::chrono::milliseconds>(end - start).count();
  if (!flags.output.empty()) TPU_RETURN_IF_ERROR(SaveProgram(program, flags.output));

  const CompileStats& stats = report.codegen;
  const uint32_t line_bytes = LineBytes(program.lanes);
  std::printf("module: %s\n", program.module_name.c_str());
  std::printf("instructions: %zu\n", program.code.size());
  std::printf("temp_lines: %u (peak)\n", program.temp_lines);
  std::printf("constants: %zu\n", program.constants.size());
  std::printf("hbm: %s (%llu lines; parameters, outputs, constants and temps)\n",
              HumanReadableBytes(stats.hbm_lines * line_bytes).c_str(), static_cast<unsigned long long>(stats.hbm_lines));
  std::printf("aliased_outputs: %u (copied at the end: %u)\n", stats.aliased_outputs, stats.alias_copies);
  std::printf("dot_precision: %s\n", stats.dot_precision.c_str());
  for (const StepTiming& step : report.steps) {
    std::printf("step: %-22s %8.2f ms%s\n", step.name.c_str(), step.ms, step.changed ? "" : " (no change)");
  }
  // The padding report of the module the pipeline produced, with the target's MXU size.
  PaddingReportOptions padding_options;
  padding_options.feature_multiple = options.lanes;
  std::printf("%s", FormatPaddingReport(ComputePaddingReport(*module, padding_options), padding_options).c_str());
  std::printf("compile_ms: %lld\n", compile_ms);
  return OkStatus();
}

}  // namespace
}  // namespace tpu::compiler

int main(int argc, char** argv) {
  tpu::Status status;
  // Bad input is an error message and exit status 1, never an abort.
  try {
    status = tpu::compiler::Main(argc, argv);
  } catch (const std::bad_alloc&) {
    status = tpu::ResourceExhausted("out of host memory");
  } catch (const std::exception& exception) {
    status = tpu::Internal(exception.what());
  }
  if (!status.ok()) {
    std::fprintf(stderr, "tpuc: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
