#include "compiler/driver/compile.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "compiler/hlo/printer.h"
#include "compiler/passes/pass.h"

namespace tpu::compiler {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Writes dump files into one directory, numbering the module dumps in the order they are written.
class DumpWriter {
 public:
  DumpWriter(std::string dir, CompileModuleReport* report) : dir_(std::move(dir)), report_(report) {}
  bool enabled() const { return !dir_.empty(); }

  Status Module(const std::string& step, const hlo::HloModule& module) {
    return enabled() ? ModuleText(step, hlo::PrintHloModule(module)) : OkStatus();
  }
  // NN-step.hlo, NN counting the module dumps from 00.
  Status ModuleText(const std::string& step, const std::string& text) {
    char prefix[16];
    std::snprintf(prefix, sizeof(prefix), "%02d-", next_index_++);
    return Text(prefix + step + ".hlo", text);
  }

  Status Text(const std::string& file_name, const std::string& text) {
    if (!enabled()) return OkStatus();
    std::error_code error;
    std::filesystem::create_directories(dir_, error);
    if (error) return InvalidArgument("cannot create dump directory '" + dir_ + "': " + error.message());
    const std::string path = dir_ + "/" + file_name;
    std::ofstream out(path, std::ios::trunc);
    out << text;
    if (!out) return InvalidArgument("cannot write '" + path + "'");
    report_->dumped_files.push_back(file_name);
    return OkStatus();
  }

 private:
  std::string dir_;
  CompileModuleReport* report_;
  int next_index_ = 0;
};

std::string HexListing(const std::vector<uint64_t>& code) {
  std::string out;
  char line[48];
  for (size_t i = 0; i < code.size(); ++i) {
    std::snprintf(line, sizeof(line), "%5zu: %016llx\n", i, static_cast<unsigned long long>(code[i]));
    out += line;
  }
  return out;
}

}  // namespace

std::string ProgramListing(const Program& program,
                           const std::function<std::string(const std::vector<uint64_t>&)>& disassemble) {
  const std::vector<CodeRange>& code_ranges = program.code_ranges;
  std::string out = "# " + program.module_name + ": " + std::to_string(program.code.size()) +
                    " instructions, lanes " + std::to_string(program.lanes) + ", temp " +
                    std::to_string(program.temp_lines) + " lines\n";
  for (size_t i = 0; i < program.output_aliases.size(); ++i) {
    if (program.output_aliases[i] >= 0) {
      out += "# output " + std::to_string(i) + " is written into parameter " +
             std::to_string(program.output_aliases[i]) + " (input_output_alias)\n";
    }
  }
  for (const Relocation& reloc : program.relocations) {
    out += "# reloc " + std::to_string(reloc.instr_index) + ": " + RegionKindName(reloc.kind) + " " +
           std::to_string(reloc.region_index) + " + " + std::to_string(reloc.line_offset) + "\n";
  }
  if (program.replicas * program.partitions > 1) {
    out += "# grid: " + std::to_string(program.replicas) + " replicas x " + std::to_string(program.partitions) +
           " partitions, receive region " + std::to_string(program.receive_lines) + " lines\n";
  }
  for (size_t r = 0; r < program.rings.size(); ++r) {
    std::string groups;
    for (const std::vector<uint32_t>& group : program.rings[r].groups) {
      std::string members;
      for (uint32_t position : group) members += (members.empty() ? "" : ",") + std::to_string(position);
      groups += "{" + members + "}";
    }
    out += "# ring " + std::to_string(r) + ": " + groups + "\n";
  }
  for (const DevicePatch& patch : program.device_patches) {
    out += "# device " + std::to_string(patch.instr_index) + ": " + DeviceValueName(patch.value);
    if (patch.value != DeviceValue::kReplicaId && patch.value != DeviceValue::kPartitionId) {
      out += ", ring " + std::to_string(patch.ring);
    }
    if (patch.value == DeviceValue::kChunkFirstLine || patch.value == DeviceValue::kChunkLines) {
      out += ", step " + std::to_string(patch.step) + ", chunks of " + std::to_string(patch.chunk) + " of " +
             std::to_string(patch.lines) + " lines";
    }
    if (patch.value == DeviceValue::kNextReceive || patch.value == DeviceValue::kChunkFirstLine) {
      out += " + " + std::to_string(patch.offset);
    }
    out += "\n";
  }
  std::istringstream words(disassemble ? disassemble(program.code) : HexListing(program.code));
  auto range = code_ranges.begin();
  std::string line;
  for (uint32_t word = 0; std::getline(words, line); ++word) {
    for (; range != code_ranges.end() && range->begin <= word; ++range) {
      if (range->begin == word) out += "# --- " + range->what + "\n";
    }
    out += line + "\n";
  }
  return out;
}

StatusOr<Program> CompileModule(hlo::HloModule* module, const CompileModuleOptions& options,
                                CompileModuleReport* report) {
  if (module == nullptr) return InvalidArgument("CompileModule: no module");
  CompileModuleReport local_report;
  if (report == nullptr) report = &local_report;
  *report = CompileModuleReport();
  const Clock::time_point start = Clock::now();
  DumpWriter dumps(options.dump_dir, report);
  TPU_RETURN_IF_ERROR(dumps.Module("input", *module));

  // The pass pipeline; each pass is timed without the dump that follows it.
  PassPipeline pipeline("default");
  AddDefaultPasses(&pipeline);
  Clock::time_point step_start = Clock::now();
  pipeline.set_after_pass_hook([&](int, std::string_view pass_name, bool changed,
                                   const hlo::HloModule& after) -> Status {
    report->steps.push_back(StepTiming{std::string(pass_name), MillisecondsSince(step_start), changed});
    TPU_RETURN_IF_ERROR(dumps.Module(std::string(pass_name), after));
    step_start = Clock::now();
    return OkStatus();
  });
  TPU_RETURN_IF_ERROR(pipeline.Run(module).status());

  // Preparation and code generation: codegen shows the module after each preparation pass and the
  // module it lowers through the hooks. The preparation may run more than once (fewer dot passes when
  // the code does not fit the IMEM): each run starts again at pass 0. The modules after each pass are
  // kept as copies and printed only for the run whose program is kept, since printing a large module
  // costs far more than copying it; a pass that changed nothing shares the copy before it.
  CompileOptions codegen_options = options.codegen;
  std::vector<std::pair<std::string, std::shared_ptr<const hlo::HloModule>>> prepare_steps;  // (step, module)
  codegen_options.after_prepare_pass = [&](int index, std::string_view pass_name, bool changed,
                                           const hlo::HloModule& after) -> Status {
    if (options.codegen.after_prepare_pass) {
      TPU_RETURN_IF_ERROR(options.codegen.after_prepare_pass(index, pass_name, changed, after));
    }
    if (index == 0) prepare_steps.clear();
    if (!dumps.enabled()) return OkStatus();
    std::shared_ptr<const hlo::HloModule> copy;
    if (!changed && !prepare_steps.empty()) {
      copy = prepare_steps.back().second;
    } else {
      TPU_ASSIGN_OR_RETURN(copy, hlo::CloneModule(after));
    }
    prepare_steps.emplace_back("prepare." + std::string(pass_name), std::move(copy));
    return OkStatus();
  };
  std::string prepared_text;
  codegen_options.after_prepare = [&](const hlo::HloModule& prepared) -> Status {
    if (options.codegen.after_prepare) TPU_RETURN_IF_ERROR(options.codegen.after_prepare(prepared));
    if (dumps.enabled()) prepared_text = hlo::PrintHloModule(prepared);
    return OkStatus();
  };
  StatusOr<Program> compiled = Compile(*module, codegen_options, &report->codegen);
  if (dumps.enabled()) {
    // Also when code generation fails: the prepared module is what its message is about.
    std::string text;
    const hlo::HloModule* printed = nullptr;
    for (const auto& [step, copy] : prepare_steps) {
      if (copy.get() != printed) text = hlo::PrintHloModule(*(printed = copy.get()));
      TPU_RETURN_IF_ERROR(dumps.ModuleText(step, text));
    }
  }
  TPU_ASSIGN_OR_RETURN(Program program, std::move(compiled));
  report->steps.push_back(StepTiming{"prepare-for-codegen", report->codegen.prepare_ms, true});
  report->steps.push_back(StepTiming{"codegen", report->codegen.codegen_ms, true});
  if (dumps.enabled()) {
    TPU_RETURN_IF_ERROR(dumps.ModuleText("prepare-for-codegen", prepared_text));
    TPU_RETURN_IF_ERROR(dumps.Text("program.asm", ProgramListing(program, options.disassemble)));
  }
  report->total_ms = MillisecondsSince(start);
  return program;
}

}  // namespace tpu::compiler
