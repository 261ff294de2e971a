// tpuc: compiles an HLO text module for a tpusim configuration.
//
//   tpuc FILE.hlo --config=tiny|v2|PATH.cfg [--dump-dir=DIR] [--dot-passes=0|1|3] [-o PROGRAM]
//
// Parses and verifies the module, runs the pass pipeline (with --dump-dir, the module after each pass
// is written as DIR/NN-passname.hlo), generates code, writes DIR/program.asm, and with -o the program
// file the runtime loads. Prints compile_ms and a padding report per dot. --dot-passes sets
// CompileOptions::dot_passes (MXU passes per f32 dot; 0 chooses).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/program.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/passes/pass.h"
#include "tpu_isa.h"
#ifdef TPUC_HAVE_DISASSEMBLER
#include "sim/model/disassembler.h"
#endif

namespace tpu::compiler {
namespace {

struct Flags {
  std::string input;
  std::string config = "tiny";
  std::string dump_dir;
  std::string output;
  int dot_passes = 0;  // CompileOptions::dot_passes
};

constexpr const char* kUsage =
    "usage: tpuc FILE.hlo --config=tiny|v2|PATH.cfg [--dump-dir=DIR] [--dot-passes=0|1|3] [-o PROGRAM]";

StatusOr<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--config=", 0) == 0) {
      flags.config = arg.substr(9);
    } else if (arg.rfind("--dot-passes=", 0) == 0) {
      const std::string value = arg.substr(13);
      if (value != "0" && value != "1" && value != "3") return InvalidArgument("--dot-passes must be 0, 1 or 3");
      flags.dot_passes = std::stoi(value);
    } else if (arg.rfind("--dump-dir=", 0) == 0) {
      flags.dump_dir = arg.substr(11);
    } else if (arg == "-o") {
      if (i + 1 >= argc) return InvalidArgument("-o needs a file name");
      flags.output = argv[++i];
    } else if (arg.rfind("-o", 0) == 0 && arg.size() > 2) {
      flags.output = arg.substr(2);
    } else if (arg == "-h" || arg == "--help") {
      return InvalidArgument(kUsage);
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

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Reads LANES, VMEM_LINES and IMEM_WORDS from rtl/config/<name>.cfg ("param NAME VALUE # comment").
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
  }
  if (options.lanes == 0 || options.vmem_lines == 0) {
    return InvalidArgument(path + " does not define LANES and VMEM_LINES");
  }
  return options;
}

std::string Disassembly(const Program& program) {
#ifdef TPUC_HAVE_DISASSEMBLER
  return model::DisassembleProgram(program.code);
#else
  std::string out;
  char line[64];
  for (size_t i = 0; i < program.code.size(); ++i) {
    std::snprintf(line, sizeof(line), "%5zu: %016llx\n", i, static_cast<unsigned long long>(program.code[i]));
    out += line;
  }
  return out;
#endif
}

Status Main(int argc, char** argv) {
  TPU_ASSIGN_OR_RETURN(Flags flags, ParseFlags(argc, argv));
  TPU_ASSIGN_OR_RETURN(CompileOptions options, ReadConfig(flags.config));
  options.dot_passes = flags.dot_passes;
  TPU_ASSIGN_OR_RETURN(std::string text, ReadFile(flags.input));
  auto start = std::chrono::steady_clock::now();
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(text));
  TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));

  PassPipeline pipeline("tpuc");
  AddDefaultPasses(&pipeline);
  if (!flags.dump_dir.empty()) pipeline.DumpTo(flags.dump_dir);
  TPU_ASSIGN_OR_RETURN(bool changed, pipeline.Run(module.get()));
  (void)changed;

  CompileStats stats;
  TPU_ASSIGN_OR_RETURN(Program program, Compile(*module, options, &stats));
  auto end = std::chrono::steady_clock::now();
  long long compile_ms = std::chrono::duration_cast<std::chrono::milliseconds>(end - start).count();

  if (!flags.dump_dir.empty()) {
    std::string path = flags.dump_dir + "/program.asm";
    std::ofstream out(path, std::ios::trunc);
    if (!out) return InvalidArgument("cannot write '" + path + "'");
    out << "# " << program.module_name << ": " << program.code.size() << " instructions, lanes " << program.lanes
        << ", temp " << program.temp_lines << " lines\n";
    for (const Relocation& reloc : program.relocations) {
      out << "# reloc " << reloc.instr_index << ": " << RegionKindName(reloc.kind) << " " << reloc.region_index
          << " + " << reloc.line_offset << "\n";
    }
    out << Disassembly(program);
  }
  if (!flags.output.empty()) TPU_RETURN_IF_ERROR(SaveProgram(program, flags.output));

  std::printf("module: %s\n", program.module_name.c_str());
  std::printf("instructions: %zu\n", program.code.size());
  std::printf("temp_lines: %u (peak)\n", program.temp_lines);
  std::printf("constants: %zu\n", program.constants.size());
  for (const DotPaddingReport& dot : stats.dots) {
    std::printf("padding: %s [%lld,%lld]x[%lld,%lld]: logical MACs %llu, padded MACs %llu, waste %.1f%%\n",
                dot.name.c_str(), static_cast<long long>(dot.m), static_cast<long long>(dot.k),
                static_cast<long long>(dot.k), static_cast<long long>(dot.n),
                static_cast<unsigned long long>(dot.logical_macs), static_cast<unsigned long long>(dot.padded_macs),
                dot.waste_percent());
  }
  std::printf("compile_ms: %lld\n", compile_ms);
  return OkStatus();
}

}  // namespace
}  // namespace tpu::compiler

int main(int argc, char** argv) {
  tpu::Status status = tpu::compiler::Main(argc, argv);
  if (!status.ok()) {
    std::fprintf(stderr, "tpuc: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
