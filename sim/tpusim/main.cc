// tpusim: runs an HLO module on a tpusim chip (verilated RTL or reference model) and checks it against
// the HLO interpreter.
//
//   tpusim run FILE.hlo --backend=rtl|model --config=tiny|v2 --seed=N [--outputs=DIR]
//                       [--trace=FILE.fst --trace-start=C --trace-stop=C --trace-depth=D]
//                       [--batch=N] [--fill-elided-constants] [--root=NAME] [--dump-dir=DIR]
//   tpusim info --backend=rtl|model --config=tiny|v2
//
// Exit status: 0 success, 1 bad input or a failed run (the message says which), 2 an output outside the
// tolerance of docs/numerics.md, 130 interrupted.
//
// Ctrl+C (SIGINT) works as on Cloud TPUs: the program running on the device finishes, then tpusim stops
// cleanly; a second Ctrl+C, or Ctrl+\ (SIGQUIT), ends it at once.
#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/rebatch.h"
#include "sim/tpusim/output_compare.h"
#include "sw/runtime/client.h"
#include "tpu_config.h"
#include "tpu_csr.h"

namespace tpu::tpusim {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitMismatch = 2;
constexpr int kExitInterrupted = 130;

volatile std::sig_atomic_t interrupted = 0;

void OnInterrupt(int) {
  interrupted = 1;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl+C ends the process at once
}

// True (after saying so) if Ctrl+C was pressed: the caller stops before its next step.
bool StopRequested() {
  if (!interrupted) return false;
  std::cerr << "tpusim: interrupted; the device finished its work, stopping\n";
  return true;
}

const char kUsage[] =
    "usage:\n"
    "  tpusim run FILE.hlo [--backend=rtl|model] [--config=NAME] [--seed=N] [--outputs=DIR]\n"
    "                      [--trace=FILE.fst] [--trace-start=CYCLE] [--trace-stop=CYCLE] [--trace-depth=D]\n"
    "                      [--timeout-cycles=N] [--batch=N] [--fill-elided-constants] [--root=NAME]\n"
    "                      [--dump-dir=DIR]\n"
    "  tpusim info [--backend=rtl|model] [--config=NAME]\n"
    "\n"
    "run     parses and verifies FILE.hlo, fills its parameters with seeded uniform values in [-1, 1),\n"
    "        runs it on the backend, prints the device counters and compares every output with the HLO\n"
    "        interpreter (|d - r| <= atol + rtol*|r|, rtol = 2^-6, atol = 2^-6 * max|r|; integers exactly).\n"
    "        --outputs=DIR writes DIR/out<i>.bin, the raw little-endian bytes of each output.\n"
    "        --trace* write an FST waveform of a cycle window (rtl backend only).\n"
    "        --perturb-output=X adds X to the first element of output 0 before the comparison (to check\n"
    "        that a wrong result is caught).\n"
    "        --batch=N re-specializes the module for batch N (the leading dimension of the entry\n"
    "        parameters, propagated through the shapes; compiler/passes/rebatch.h).\n"
    "        --fill-elided-constants gives constants the dump elided (`constant({...})`) seeded values\n"
    "        (from --seed) chosen by their use: positive where they feed rsqrt/log/a divisor, weights\n"
    "        scaled by 1/sqrt(fan-in); device and interpreter run the same values.\n"
    "        --root=NAME makes entry instruction NAME the root: its value is the one output compared.\n"
    "        --dump-dir=DIR writes the module after each compiler step and the program listing to DIR\n"
    "        (as tpuc --dump-dir).\n"
    "info    prints the devices and the configuration registers the driver discovers.\n"
    "defaults: --backend=model --config=<the configuration of this build> --seed=0\n";

struct Flags {
  std::string command;
  std::string file;
  std::map<std::string, std::string> values;
};

bool ParseFlags(int argc, char** argv, Flags* flags, std::string* error) {
  static const char* const kKnown[] = {"backend", "config",      "seed",        "outputs",        "trace",
                                       "trace-start", "trace-stop", "trace-depth", "timeout-cycles",
                                       "perturb-output", "batch", "root", "fill-elided-constants", "dump-dir"};
  // Flags that take no value.
  static const char* const kSwitches[] = {"fill-elided-constants"};
  if (argc < 2) {
    *error = "missing command";
    return false;
  }
  flags->command = argv[1];
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      *error = "";
      return false;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!flags->file.empty()) {
        *error = "unexpected argument '" + arg + "'";
        return false;
      }
      flags->file = arg;
      continue;
    }
    std::string name = arg.substr(2), value;
    const size_t equals = name.find('=');
    bool is_switch = false;
    for (const char* k : kSwitches) is_switch = is_switch || name == k;
    if (is_switch && equals == std::string::npos) {
      value = "1";
    } else if (equals != std::string::npos) {
      value = name.substr(equals + 1);
      name = name.substr(0, equals);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      *error = "flag --" + name + " needs a value";
      return false;
    }
    bool known = false;
    for (const char* k : kKnown) known = known || name == k;
    if (!known) {
      *error = "unknown flag --" + name;
      return false;
    }
    flags->values[name] = value;
  }
  return true;
}

std::string FlagOr(const Flags& flags, const std::string& name, const std::string& fallback) {
  auto it = flags.values.find(name);
  return it == flags.values.end() ? fallback : it->second;
}

bool ParseUnsigned(const Flags& flags, const std::string& name, uint64_t fallback, uint64_t* value) {
  auto it = flags.values.find(name);
  if (it == flags.values.end()) {
    *value = fallback;
    return true;
  }
  const std::string& text = it->second;
  char* end = nullptr;
  errno = 0;
  const unsigned long long parsed = std::strtoull(text.c_str(), &end, 0);
  if (text.empty() || text[0] == '-' || errno != 0 || *end != '\0') {
    std::cerr << "tpusim: --" << name << "=" << text << " is not a non-negative integer\n";
    return false;
  }
  *value = parsed;
  return true;
}

// Builds the client from --backend/--config and the trace flags.
StatusOr<std::unique_ptr<runtime::Client>> MakeClient(const Flags& flags) {
  runtime::ClientOptions options;
  uint64_t start = 0, stop = 0, depth = 0, timeout = options.execute_timeout_cycles;
  if (!ParseUnsigned(flags, "trace-start", 0, &start) || !ParseUnsigned(flags, "trace-stop", 0, &stop) ||
      !ParseUnsigned(flags, "trace-depth", 0, &depth) ||
      !ParseUnsigned(flags, "timeout-cycles", options.execute_timeout_cycles, &timeout)) {
    return InvalidArgument("bad flag value");
  }
  options.trace_file = FlagOr(flags, "trace", "");
  options.compile_dump_dir = FlagOr(flags, "dump-dir", "");
  options.trace_start_cycle = start;
  options.trace_stop_cycle = stop;
  options.trace_depth = static_cast<int>(depth);
  options.execute_timeout_cycles = timeout;
  const std::string backend = FlagOr(flags, "backend", "model");
  if (!options.trace_file.empty() && backend != "rtl") {
    return InvalidArgument("--trace needs --backend=rtl (the reference model has no waveform)");
  }
  return runtime::Client::Create(backend, FlagOr(flags, "config", cfg::kName), options);
}

bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream contents;
  contents << in.rdbuf();
  *text = contents.str();
  return true;
}

// mkdir -p.
bool MakeDirectories(const std::string& path) {
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

int Info(const Flags& flags) {
  StatusOr<std::unique_ptr<runtime::Client>> client = MakeClient(flags);
  if (!client.ok()) {
    std::cerr << "tpusim: " << client.status() << "\n";
    return kExitError;
  }
  runtime::Client& c = **client;
  std::cout << "backend: " << c.backend() << "\n";
  std::cout << "devices: " << c.devices().size() << "\n";
  for (const runtime::Device& device : c.devices()) {
    std::cout << "  " << device.ToString() << "  " << device.full_name() << "\n";
  }
  const DeviceInfo& info = c.device_info();
  std::cout << "hbm: " << runtime::HumanReadableBytes(info.hbm_bytes()) << " (" << info.hbm_lines << " lines of "
            << info.line_bytes << " bytes)\n";
  std::cout << "csr:\n";
  Transport& transport = c.driver().transport();
  for (const csr::CsrInfo& reg : csr::kCsrs) {
    const std::string name = reg.name;
    if (name != "ID" && name != "VERSION" && name.rfind("CFG_", 0) != 0 && name != "WATCHDOG_LIMIT" &&
        name != "IRQ_ENABLE" && name != "STATUS") {
      continue;
    }
    char line[96];
    std::snprintf(line, sizeof(line), "  %-16s 0x%03x = 0x%08x (%u)\n", reg.name, reg.offset,
                  transport.MmioRead(reg.offset), transport.MmioRead(reg.offset));
    std::cout << line;
  }
  return kExitOk;
}

int Run(const Flags& flags) {
  if (flags.file.empty()) {
    std::cerr << "tpusim: run needs an HLO file\n" << kUsage;
    return kExitError;
  }
  std::string text;
  if (!ReadFile(flags.file, &text)) {
    std::cerr << "tpusim: cannot read " << flags.file << ": " << std::strerror(errno) << "\n";
    return kExitError;
  }
  StatusOr<std::unique_ptr<hlo::HloModule>> parsed = hlo::ParseHloModule(text);
  if (!parsed.ok()) {
    std::cerr << flags.file << ": " << parsed.status() << "\n";
    return kExitError;
  }
  hlo::HloModule& module = **parsed;
  if (Status verified = hlo::VerifyHloModule(module); !verified.ok()) {
    std::cerr << flags.file << ": " << verified << "\n";
    return kExitError;
  }
  uint64_t seed = 0;
  if (!ParseUnsigned(flags, "seed", 0, &seed)) return kExitError;
  // Re-specialization for this run, before anything compiles or interprets the module.
  if (flags.values.count("batch")) {
    uint64_t batch = 0;
    if (!ParseUnsigned(flags, "batch", 0, &batch)) return kExitError;
    StatusOr<bool> rebatched = compiler::Rebatch(static_cast<int64_t>(batch)).Run(&module);
    if (!rebatched.ok()) {
      std::cerr << flags.file << ": --batch=" << batch << ": " << rebatched.status() << "\n";
      return kExitError;
    }
  }
  if (auto root = flags.values.find("root"); root != flags.values.end()) {
    const std::string name = !root->second.empty() && root->second[0] == '%' ? root->second.substr(1) : root->second;
    if (Status status = compiler::SetEntryRoot(&module, name); !status.ok()) {
      std::cerr << flags.file << ": --root: " << status << "\n";
      return kExitError;
    }
  }
  if (flags.values.count("fill-elided-constants")) {
    StatusOr<int> filled = compiler::FillElidedConstants(&module, seed ^ 0x5eed5eedu);
    if (!filled.ok()) {
      std::cerr << flags.file << ": --fill-elided-constants: " << filled.status() << "\n";
      return kExitError;
    }
  }
  if (Status verified = hlo::VerifyHloModule(module); !verified.ok()) {
    std::cerr << flags.file << ": after re-specialization: " << verified << "\n";
    return kExitError;
  }
  double perturbation = 0;
  if (auto it = flags.values.find("perturb-output"); it != flags.values.end()) {
    char* end = nullptr;
    perturbation = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0') {
      std::cerr << "tpusim: --perturb-output=" << it->second << " is not a number\n";
      return kExitError;
    }
  }

  StatusOr<std::unique_ptr<runtime::Client>> client_or = MakeClient(flags);
  if (!client_or.ok()) {
    std::cerr << "tpusim: " << client_or.status() << "\n";
    return kExitError;
  }
  runtime::Client& client = **client_or;

  // Seeded arguments, parameter by parameter.
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::vector<hlo::Literal> arguments;
  for (const hlo::HloInstruction* parameter : module.entry_computation()->parameter_instructions()) {
    arguments.push_back(hlo::Literal::Random(parameter->shape(), rng));
  }

  StatusOr<std::unique_ptr<runtime::LoadedExecutable>> executable = client.Compile(module);
  if (!executable.ok()) {
    std::cerr << flags.file << ": " << executable.status() << "\n";
    return kExitError;
  }
  if (StopRequested()) return kExitInterrupted;
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  std::vector<const runtime::Buffer*> argument_buffers;
  for (const hlo::Literal& argument : arguments) {
    StatusOr<std::unique_ptr<runtime::Buffer>> buffer = client.BufferFromHostLiteral(argument);
    if (!buffer.ok()) {
      std::cerr << "tpusim: " << buffer.status() << "\n";
      return kExitError;
    }
    argument_buffers.push_back(buffer->get());
    buffers.push_back(std::move(*buffer));
  }
  if (StopRequested()) return kExitInterrupted;
  StatusOr<runtime::ExecuteResult> result = (*executable)->Execute(argument_buffers);
  if (!result.ok()) {
    std::cerr << "tpusim: " << result.status() << "\n";
    return kExitError;
  }
  const DeviceCounters& counters = result->counters;
  std::cout << "cycles: " << counters.cycles << "\n";
  std::cout << "mxu_busy_cycles: " << counters.mxu_busy_cycles << "\n";
  std::cout << "instructions: " << counters.instructions << "\n";
  std::cout << "dma_lines: " << counters.dma_lines << "\n";
  std::cout << "vpu_busy_cycles: " << counters.vpu_busy_cycles << "\n";
  std::cout << "stall_cycles: " << counters.stall_cycles << "\n";
  if (counters.cycles > 0) {
    char utilization[64];
    std::snprintf(utilization, sizeof(utilization), "mxu_utilization: %.1f%%\n",
                  100.0 * double(counters.mxu_busy_cycles) / double(counters.cycles));
    std::cout << utilization;
  }
  {
    // MAC slots used over MAC slots available while the program ran: every busy MXU cycle streams one
    // row through all LANES x LANES cells, so the LANES^2 factors cancel to busy cycles / cycles.
    const double pct =
        counters.cycles > 0 ? 100.0 * double(counters.mxu_busy_cycles) / double(counters.cycles) : 0.0;
    char utilization[64];
    std::snprintf(utilization, sizeof(utilization), "mxu_utilization_pct: %.2f\n", pct);
    std::cout << utilization;
  }

  if (StopRequested()) return kExitInterrupted;
  StatusOr<std::vector<hlo::Literal>> reference = hlo::Interpret(module, arguments);
  if (!reference.ok()) {
    std::cerr << "tpusim: interpreter: " << reference.status() << "\n";
    return kExitError;
  }
  if (reference->size() != result->outputs.size()) {
    std::cerr << "tpusim: the device returned " << result->outputs.size() << " outputs, the interpreter "
              << reference->size() << "\n";
    return kExitError;
  }

  const std::string outputs_dir = FlagOr(flags, "outputs", "");
  if (!outputs_dir.empty() && !MakeDirectories(outputs_dir)) {
    std::cerr << "tpusim: cannot create " << outputs_dir << ": " << std::strerror(errno) << "\n";
    return kExitError;
  }
  bool all_ok = true;
  for (size_t i = 0; i < reference->size(); ++i) {
    StatusOr<hlo::Literal> device = result->outputs[i]->ToLiteral();
    if (!device.ok()) {
      std::cerr << "tpusim: reading output " << i << ": " << device.status() << "\n";
      return kExitError;
    }
    if (!outputs_dir.empty()) {
      const std::string path = outputs_dir + "/out" + std::to_string(i) + ".bin";
      std::ofstream out(path, std::ios::binary);
      out.write(reinterpret_cast<const char*>(device->untyped_data()), device->size_bytes());
      if (!out) {
        std::cerr << "tpusim: cannot write " << path << "\n";
        return kExitError;
      }
    }
    if (i == 0 && perturbation != 0 && device->element_count() > 0) {
      device->SetFromDouble(0, device->GetAsDouble(0) + perturbation);
    }
    const OutputComparison comparison = CompareOutput(*device, (*reference)[i]);
    std::cout << FormatComparison(static_cast<int>(i), (*reference)[i], comparison) << "\n";
    all_ok = all_ok && comparison.ok;
  }
  return all_ok ? kExitOk : kExitMismatch;
}

}  // namespace
}  // namespace tpu::tpusim

int main(int argc, char** argv) {
  using namespace tpu::tpusim;
  Flags flags;
  std::string error;
  if (!ParseFlags(argc, argv, &flags, &error)) {
    if (!error.empty()) std::cerr << "tpusim: " << error << "\n";
    std::cerr << kUsage;
    return error.empty() ? kExitOk : kExitError;
  }
  std::signal(SIGINT, OnInterrupt);
  if (flags.command == "run") return Run(flags);
  if (flags.command == "info") {
    if (!flags.file.empty()) {
      std::cerr << "tpusim: info takes no file\n" << kUsage;
      return kExitError;
    }
    return Info(flags);
  }
  std::cerr << "tpusim: unknown command '" << flags.command << "'\n" << kUsage;
  return kExitError;
}
