// tpusim: runs an HLO module on a tpusim chip (verilated RTL or reference model) and checks it against
// the HLO interpreter.
//
//   tpusim run FILE.hlo --backend=rtl|model --config=tiny|v2 --seed=N [--outputs=DIR]
//                       [--trace=FILE.fst --trace-start=C --trace-stop=C --trace-depth=D]
//                       [--batch=N] [--fill-elided-constants] [--root=NAME] [--dump-dir=DIR]
//   tpusim profile FILE.hlo [the flags of run] --trace=OUT.json --report=OUT.html [--top=N]
//   tpusim info --backend=rtl|model --config=tiny|v2
//   tpusim --help                       (the usage, on stdout)
//
// Exit status: 0 success, 1 bad input or a failed run (the message says which, on stderr and in the
// TPU_LOG_DIR log), 2 an output outside the tolerance of docs/numerics.md, 130 interrupted.
//
// Ctrl+C (SIGINT) works as on Cloud TPUs: the program running on the device finishes, then tpusim stops
// cleanly; a second Ctrl+C, or Ctrl+\ (SIGQUIT), ends it at once.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <new>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/buffer_assignment.h"
#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "compiler/passes/one_pass_dot_rounding.h"
#include "compiler/passes/rebatch.h"
#include "sim/tpusim/output_compare.h"
#include "sw/base/file.h"
#include "sw/profiler/html_report.h"
#include "sw/profiler/op_profile.h"
#include "sw/profiler/trace_writer.h"
#include "sw/runtime/client.h"
#include "sw/runtime/logging.h"
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
  // Said at once (write is async-signal-safe): the device may need a while to finish its program.
  static const char kAck[] =
      "\ntpusim: interrupted: the device finishes the program it is running, then tpusim stops "
      "(Ctrl+C again quits at once)\n";
  (void)!write(STDERR_FILENO, kAck, sizeof(kAck) - 1);
}

// A progress line on stderr while the device runs, on a terminal only: simulated cycles and the host's
// simulation speed, refreshed at most twice a second; cleared when the run ends.
class ProgressLine {
 public:
  ProgressLine() : enabled_(isatty(STDERR_FILENO) != 0), start_(Clock::now()), last_(start_) {}
  ~ProgressLine() {
    if (shown_) std::cerr << "\r" << std::string(78, ' ') << "\r" << std::flush;
  }
  void operator()(uint64_t cycles) {
    const Clock::time_point now = Clock::now();
    if (!enabled_ || now - last_ < std::chrono::milliseconds(500)) return;
    last_ = now;
    shown_ = true;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    char line[96];
    std::snprintf(line, sizeof(line), "\r  device running: %.3g M cycles simulated, %.3g M cycles/s   ",
                  double(cycles) / 1e6, seconds > 0 ? double(cycles) / 1e6 / seconds : 0.0);
    std::cerr << line << std::flush;
  }

 private:
  using Clock = std::chrono::steady_clock;
  const bool enabled_;
  const Clock::time_point start_;
  Clock::time_point last_;
  bool shown_ = false;
};

// Every error goes to stderr and to the TPU_LOG_DIR log (where the runtime's own messages are), so that a
// log shows why a run ended. Returns the exit status for errors.
int Fail(const std::string& message) {
  std::cerr << message << "\n";
  TPU_LOG(ERROR) << message;
  return kExitError;
}

// True (after saying so) if Ctrl+C was pressed: the caller stops before its next step.
bool StopRequested() {
  if (!interrupted) return false;
  std::cerr << "tpusim: interrupted; the running step finished, stopping\n";
  return true;
}

const char kUsage[] =
    "usage:\n"
    "  tpusim run FILE.hlo [--backend=rtl|model] [--config=NAME] [--chips=1|2|4] [--seed=N] [--outputs=DIR]\n"
    "                      [--trace=FILE.fst] [--trace-start=CYCLE] [--trace-stop=CYCLE] [--trace-depth=D]\n"
    "                      [--timeout-cycles=N] [--batch=N] [--fill-elided-constants] [--root=NAME]\n"
    "                      [--dump-dir=DIR] [--dot-passes=0|1|3|6] [--hbm-timing=on|off]\n"
    "  tpusim profile FILE.hlo [the flags of run but --trace*] [--trace=OUT.json] [--report=OUT.html]\n"
    "                      [--top=N]\n"
    "  tpusim info [--backend=rtl|model] [--config=NAME] [--chips=1|2|4]\n"
    "  tpusim --help\n"
    "\n"
    "run     parses and verifies FILE.hlo, fills its parameters with seeded uniform values in [-1, 1),\n"
    "        runs it on the backend, prints the device counters and compares every output with the HLO\n"
    "        interpreter (|d - r| <= atol + rtol*|r|, rtol = 2^-6, atol = 2^-6 * max|r|; integers exactly).\n"
    "        The interpreter's dots read their f32 operands rounded to bf16 where the device runs them in\n"
    "        one MXU pass, as a TPU does (compiler/passes/one_pass_dot_rounding.h).\n"
    "        --dot-passes=N MXU passes per f32 dot: 0 (default) what each dot's operand_precision asks\n"
    "        for (DEFAULT or none 1, HIGH 3, HIGHEST 6, as XLA on a TPU); 1, 3 or 6 for every dot.\n"
    "        --outputs=DIR writes DIR/out<i>.bin, the raw little-endian bytes of each output.\n"
    "        --trace* write an FST waveform of a cycle window (rtl backend only); --trace-start and\n"
    "        --trace-stop count the program's cycles from its doorbell (a start past its end is an error).\n"
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
    "profile runs as `run` does with the chip's issue trace on and prints the op profile (cycles, stalls\n"
    "        and MXU/VPU/HBM use of each HLO operation, the --top=N slowest, default 20) and the findings of\n"
    "        the performance guide's checks (padding to the MXU tiles, batch, stalls).\n"
    "        --trace=OUT.json writes the timeline in the Chrome trace format (Perfetto, chrome://tracing):\n"
    "        a track of HLO operations and one per unit in device time, the host's steps in host time.\n"
    "        --report=OUT.html writes a page with the utilization timeline, the findings and the op table.\n"
    "        --hbm-timing=on|off (model backend): on (default) times HBM with the twin of the chip's HBM\n"
    "        subsystem (controllers, banks, refresh; docs/hbm.md), off with the fixed HBM_LATENCY.\n"
    "        --chips=N runs a board of N chips joined by ICI links (docs/interconnect.md): a device per\n"
    "        core of every chip.\n"
    "info    prints the devices and the configuration registers the driver discovers.\n"
    "defaults: --backend=model --config=<the configuration of this build> --chips=<the configuration's\n"
    "          BOARD_CHIPS: tiny 1, v2 4> --seed=0\n";

int FailWithUsage(const std::string& message) {
  const int status = Fail(message);
  std::cerr << kUsage;
  return status;
}

struct Flags {
  std::string command;
  std::string file;
  std::map<std::string, std::string> values;
};

bool ParseFlags(int argc, char** argv, Flags* flags, std::string* error) {
  static const char* const kKnown[] = {"backend", "config",      "seed",        "outputs",        "trace",
                                       "trace-start", "trace-stop", "trace-depth", "timeout-cycles",
                                       "perturb-output", "batch", "root", "fill-elided-constants", "dump-dir",
                                       "dot-passes",  "report",     "top",         "chips",       "hbm-timing"};
  // Flags that take no value.
  static const char* const kSwitches[] = {"fill-elided-constants"};
  if (argc < 2) {
    *error = "missing command";
    return false;
  }
  flags->command = argv[1];
  if (flags->command == "-h" || flags->command == "--help" || flags->command == "help") {
    *error = "";
    return false;
  }
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
    Fail("tpusim: --" + name + "=" + text + " is not a non-negative integer");
    return false;
  }
  *value = parsed;
  return true;
}

// --dot-passes: 0 (each dot's precision), 1, 3 or 6.
StatusOr<int> DotPasses(const Flags& flags) {
  const std::string value = FlagOr(flags, "dot-passes", "0");
  if (value != "0" && value != "1" && value != "3" && value != "6") {
    return InvalidArgument("--dot-passes must be 0 (each dot's precision), 1, 3 or 6, not '" + value + "'");
  }
  return std::stoi(value);
}

// Builds the client from --backend/--config and, with `waveform`, the --trace* flags of the FST waveform.
StatusOr<std::unique_ptr<runtime::Client>> MakeClient(const Flags& flags, bool waveform = true) {
  runtime::ClientOptions options;
  uint64_t start = 0, stop = 0, depth = 0, timeout = options.execute_timeout_cycles, chips = 0;
  if (!ParseUnsigned(flags, "trace-start", 0, &start) || !ParseUnsigned(flags, "trace-stop", 0, &stop) ||
      !ParseUnsigned(flags, "chips", 0, &chips) ||
      !ParseUnsigned(flags, "trace-depth", 0, &depth) ||
      !ParseUnsigned(flags, "timeout-cycles", options.execute_timeout_cycles, &timeout)) {
    return InvalidArgument("bad flag value");
  }
  options.trace_file = waveform ? FlagOr(flags, "trace", "") : "";
  options.compile_dump_dir = FlagOr(flags, "dump-dir", "");
  TPU_ASSIGN_OR_RETURN(options.dot_passes, DotPasses(flags));
  options.trace_start_cycle = start;
  options.trace_stop_cycle = stop;
  options.trace_depth = static_cast<int>(depth);
  options.execute_timeout_cycles = timeout;
  if (flags.values.count("chips") != 0 && chips != 1 && chips != 2 && chips != 4) {
    return InvalidArgument("--chips must be 1, 2 or 4 (a board of that many chips), not " + std::to_string(chips));
  }
  options.chips = static_cast<uint32_t>(chips);
  const std::string hbm_timing = FlagOr(flags, "hbm-timing", "on");
  if (hbm_timing != "on" && hbm_timing != "off") {
    return InvalidArgument("--hbm-timing must be on or off, not '" + hbm_timing + "'");
  }
  options.model_hbm_timing = hbm_timing == "on";
  const std::string backend = FlagOr(flags, "backend", "model");
  if (!options.trace_file.empty() && backend != "rtl") {
    return InvalidArgument("--trace needs --backend=rtl (the reference model has no waveform)");
  }
  return runtime::Client::Create(backend, FlagOr(flags, "config", cfg::kName), options);
}

// The HLO text of `path`; a directory or a missing file is said as such (not as a parse error).
Status ReadHloFile(const std::string& path, std::string* text) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    const int error = errno;
    if (error == ENOENT) return NotFound(path + ": no such file");
    return InvalidArgument("cannot read " + path + ": " + std::strerror(error));
  }
  if (S_ISDIR(info.st_mode)) return InvalidArgument(path + " is a directory, not an HLO file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  *text = contents.str();
  return OkStatus();
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

// --outputs=DIR is created and probed with a file before anything runs: a run may take minutes, and its
// results must not be lost to a typo or a read-only place at the end.
Status PrepareOutputsDirectory(const std::string& dir) {
  if (!MakeDirectories(dir)) {
    return InvalidArgument("--outputs=" + dir + ": cannot create the directory: " + std::strerror(errno));
  }
  const std::string probe = dir + "/.tpusim_probe." + std::to_string(getpid());
  std::ofstream out(probe, std::ios::binary);
  const int error = errno;
  const bool writable = static_cast<bool>(out);
  out.close();
  std::remove(probe.c_str());
  if (!writable) return InvalidArgument("--outputs=" + dir + ": cannot write there: " + std::strerror(error));
  return OkStatus();
}

// Writes an output's or an outfeed value's bytes as DIR/NAME.bin (the rtl = model byte comparisons read them).
Status WriteOutputFile(const std::string& dir, const std::string& name, const hlo::Literal& value) {
  const std::string path = dir + "/" + name + ".bin";
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(value.untyped_data()), value.size_bytes());
  if (!out) return InvalidArgument("cannot write " + path + ": " + std::strerror(errno));
  return OkStatus();
}

// The arrays of a value that is one array or a tuple of arrays (infeed and outfeed values).
std::vector<hlo::Literal> ValueElements(const hlo::Literal& value) {
  return value.IsTuple() ? value.tuple_elements() : std::vector<hlo::Literal>{value};
}

// Physical memory of this host in bytes (0 if unknown).
uint64_t HostMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
}

// The host holds the seeded arguments and the interpreter at least as much again (their copies and the
// outputs): half the physical memory is the most the arguments may take, checked before they exist.
Status CheckHostMemory(const hlo::HloComputation& entry) {
  uint64_t argument_bytes = 0;
  for (const hlo::HloInstruction* parameter : entry.parameter_instructions()) {
    const uint64_t bytes = static_cast<uint64_t>(parameter->shape().ByteSize());
    argument_bytes = argument_bytes > UINT64_MAX - bytes ? UINT64_MAX : argument_bytes + bytes;
  }
  const uint64_t limit = HostMemoryBytes() / 2;
  if (limit == 0 || argument_bytes <= limit) return OkStatus();
  return ResourceExhausted(compiler::OutOfMemoryMessage("host", argument_bytes, limit) +
                           " (the seeded arguments; the interpreter needs as much again)");
}

int Info(const Flags& flags) {
  StatusOr<std::unique_ptr<runtime::Client>> client = MakeClient(flags);
  if (!client.ok()) return Fail("tpusim: " + client.status().ToString());
  runtime::Client& c = **client;
  std::cout << "backend: " << c.backend() << "\n";
  // The lines TPUStrategy prints when it finds the TPU system.
  const size_t cores = c.devices().size();
  std::cout << "*** Num TPU Cores: " << cores << "\n*** Num TPU Workers: 1\n*** Num TPU Cores Per Worker: " << cores
            << "\n";
  std::cout << "devices: " << cores << "\n";
  for (const runtime::Device& device : c.devices()) {
    std::cout << "  " << device.ToString() << "  " << device.full_name() << "\n";
  }
  const DeviceInfo& info = c.device_info();
  std::cout << "hbm: " << runtime::HumanReadableBytes(info.hbm_bytes()) << " per core (" << info.hbm_lines
            << " lines of " << info.line_bytes << " bytes)\n";
  for (const runtime::Device& device : c.devices()) {
    std::cout << "csr of " << device.name() << ":\n";
    Transport& transport = c.driver(device.id).transport();
    for (const csr::CsrInfo& reg : csr::kCsrs) {
      const std::string name = reg.name;
      if (name != "ID" && name != "VERSION" && name.rfind("CFG_", 0) != 0 && name != "WATCHDOG_LIMIT" &&
          name != "IRQ_ENABLE" && name != "STATUS") {
        continue;
      }
      const uint32_t offset = transport.MmioOffset(static_cast<uint32_t>(device.id), reg.offset);
      const uint32_t value = transport.MmioRead(offset);
      char line[96];
      std::snprintf(line, sizeof(line), "  %-16s 0x%06x = 0x%08x (%u)\n", reg.name, offset, value, value);
      std::cout << line;
    }
  }
  return kExitOk;
}

// A file the run will write, created (empty) now: a typo or a read-only place must not lose a long run.
Status PrepareOutputFile(const std::string& flag, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgument("--" + flag + "=" + path + ": cannot write there: " + std::strerror(errno));
  return OkStatus();
}

// `profile`'s part after the run: the op profile and findings on stdout, the trace and the report files.
int ReportProfile(const Flags& flags, const hlo::HloModule& module, const DeviceInfo& device,
                  const runtime::LoadedExecutable& executable, const ExecutionProfile& execution,
                  const std::vector<profiler::HostEvent>& host) {
  const profiler::ChipPeaks peaks = profiler::PeaksOf(device);
  StatusOr<profiler::OpProfile> ops = profiler::BuildOpProfile(executable.program(), execution, peaks);
  if (!ops.ok()) return Fail("tpusim: profile: " + ops.status().ToString());
  uint64_t top = 20;
  if (!ParseUnsigned(flags, "top", 20, &top)) return kExitError;
  const std::vector<profiler::Finding> findings = profiler::PerformanceFindings(module, *ops);
  std::cout << profiler::FormatOpProfile(*ops, static_cast<size_t>(top)) << profiler::FormatFindings(findings);
  if (const std::string path = FlagOr(flags, "trace", ""); !path.empty()) {
    profiler::TraceOptions options;
    options.device_name = executable.device().name();
    if (Status written = WriteTextFile(path, profiler::ChromeTraceJson(*ops, execution, host, options)); !written.ok()) {
      return Fail("tpusim: " + written.ToString());
    }
    std::cout << "trace: " << path << "\n";
  }
  if (const std::string path = FlagOr(flags, "report", ""); !path.empty()) {
    profiler::HtmlReportOptions options;
    options.title = flags.file;
    options.subtitle = FlagOr(flags, "backend", "model") + " backend, configuration " +
                       FlagOr(flags, "config", cfg::kName) + ", seed " + FlagOr(flags, "seed", "0") + ", " +
                       std::to_string(ops->cycles) + " cycles at 1 GHz";
    if (Status written = WriteTextFile(path, profiler::HtmlReport(*ops, execution, findings, options)); !written.ok()) {
      return Fail("tpusim: " + written.ToString());
    }
    std::cout << "report: " << path << "\n";
  }
  return kExitOk;
}

int Run(const Flags& flags, bool profile) {
  const char* const command = profile ? "profile" : "run";
  if (flags.file.empty()) return FailWithUsage(std::string("tpusim: ") + command + " needs an HLO file");
  if (profile) {
    for (const char* waveform : {"trace-start", "trace-stop", "trace-depth"}) {
      if (flags.values.count(waveform)) {
        return FailWithUsage(std::string("tpusim: --") + waveform +
                             " belongs to the waveform of `run`; `profile --trace` writes a Chrome trace");
      }
    }
    for (const char* file : {"trace", "report"}) {
      if (const std::string path = FlagOr(flags, file, ""); !path.empty()) {
        if (Status prepared = PrepareOutputFile(file, path); !prepared.ok()) return Fail("tpusim: " + prepared.ToString());
      }
    }
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point begin = Clock::now();
  std::vector<profiler::HostEvent> host_events;
  auto host_step = [&](const std::string& name, Clock::time_point start) {
    const auto us = [&](Clock::time_point t) { return std::chrono::duration<double, std::micro>(t - begin).count(); };
    host_events.push_back(profiler::HostEvent{name, us(start), us(Clock::now()) - us(start)});
  };
  std::string text;
  if (Status read = ReadHloFile(flags.file, &text); !read.ok()) return Fail("tpusim: " + read.ToString());
  // Checked before the run, which may take long, rather than when the outputs are written.
  const std::string outputs_dir = FlagOr(flags, "outputs", "");
  if (!outputs_dir.empty()) {
    if (Status prepared = PrepareOutputsDirectory(outputs_dir); !prepared.ok()) {
      return Fail("tpusim: " + prepared.ToString());
    }
  }
  StatusOr<std::unique_ptr<hlo::HloModule>> parsed = hlo::ParseHloModule(text);
  if (!parsed.ok()) return Fail(flags.file + ": " + parsed.status().ToString());
  hlo::HloModule& module = **parsed;
  if (Status verified = hlo::VerifyHloModule(module); !verified.ok()) {
    return Fail(flags.file + ": " + verified.ToString());
  }
  uint64_t seed = 0;
  if (!ParseUnsigned(flags, "seed", 0, &seed)) return kExitError;
  // Re-specialization for this run, before anything compiles or interprets the module.
  if (flags.values.count("batch")) {
    uint64_t batch = 0;
    if (!ParseUnsigned(flags, "batch", 0, &batch)) return kExitError;
    StatusOr<bool> rebatched = compiler::Rebatch(static_cast<int64_t>(batch)).Run(&module);
    if (!rebatched.ok()) {
      return Fail(flags.file + ": --batch=" + std::to_string(batch) + ": " + rebatched.status().ToString());
    }
  }
  if (auto root = flags.values.find("root"); root != flags.values.end()) {
    const std::string name = !root->second.empty() && root->second[0] == '%' ? root->second.substr(1) : root->second;
    if (Status status = compiler::SetEntryRoot(&module, name); !status.ok()) {
      return Fail(flags.file + ": --root: " + status.ToString());
    }
  }
  if (flags.values.count("fill-elided-constants")) {
    StatusOr<int> filled = compiler::FillElidedConstants(&module, seed ^ 0x5eed5eedu);
    if (!filled.ok()) return Fail(flags.file + ": --fill-elided-constants: " + filled.status().ToString());
  }
  if (Status verified = hlo::VerifyHloModule(module); !verified.ok()) {
    return Fail(flags.file + ": after re-specialization: " + verified.ToString());
  }
  double perturbation = 0;
  if (auto it = flags.values.find("perturb-output"); it != flags.values.end()) {
    char* end = nullptr;
    perturbation = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0') return Fail("tpusim: --perturb-output=" + it->second + " is not a number");
  }

  StatusOr<std::unique_ptr<runtime::Client>> client_or = MakeClient(flags, !profile);
  if (!client_or.ok()) return Fail("tpusim: " + client_or.status().ToString());
  runtime::Client& client = **client_or;

  // Compiled first: the compiler checks the HBM need (64-bit sizes) before anything is allocated, on the
  // host or the device.
  Clock::time_point step = Clock::now();
  StatusOr<std::unique_ptr<runtime::LoadedExecutable>> executable = client.Compile(module);
  host_step("compile", step);
  if (!executable.ok()) {
    // The runtime has logged the compile error already ("Compiling <module>: ..."); stderr only.
    std::cerr << flags.file << ": " << executable.status() << "\n";
    return kExitError;
  }
  if (StopRequested()) return kExitInterrupted;
  if (Status host = CheckHostMemory(*module.entry_computation()); !host.ok()) {
    return Fail(flags.file + ": " + host.ToString());
  }

  // Seeded arguments, parameter by parameter.
  std::mt19937 rng(static_cast<uint32_t>(seed));
  std::vector<hlo::Literal> arguments;
  for (const hlo::HloInstruction* parameter : module.entry_computation()->parameter_instructions()) {
    arguments.push_back(hlo::Literal::Random(parameter->shape(), rng));
  }
  if (StopRequested()) return kExitInterrupted;
  step = Clock::now();
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  std::vector<const runtime::Buffer*> argument_buffers;
  for (const hlo::Literal& argument : arguments) {
    StatusOr<std::unique_ptr<runtime::Buffer>> buffer = client.BufferFromHostLiteral(argument);
    if (!buffer.ok()) return Fail("tpusim: " + buffer.status().ToString());
    argument_buffers.push_back(buffer->get());
    buffers.push_back(std::move(*buffer));
  }
  host_step("transfer arguments to the device", step);
  if (StopRequested()) return kExitInterrupted;

  // The reference multiplies as the device does: bf16 operands where a dot runs in one MXU pass.
  StatusOr<int> dot_passes = DotPasses(flags);
  if (!dot_passes.ok()) return Fail("tpusim: " + dot_passes.status().ToString());
  // Infeed values are drawn from the seed as the interpreter's infeeds ask for them, and the device gets
  // the same values: a program with infeeds is interpreted first, to know them.
  std::mt19937 feed_rng(static_cast<uint32_t>(seed) ^ 0xfeedu);
  std::vector<hlo::Literal> infeed_values, reference_outfeed;
  hlo::InterpreterOptions interpreter_options;
  interpreter_options.infeed = [&](const hlo::Shape& data) -> StatusOr<hlo::Literal> {
    std::vector<hlo::Literal> elements;
    for (const hlo::Shape& element : data.IsTuple() ? data.tuple_shapes : std::vector<hlo::Shape>{data}) {
      elements.push_back(hlo::Literal::Random(element, feed_rng));
    }
    hlo::Literal value = data.IsTuple() ? hlo::Literal::MakeTuple(elements) : elements[0];
    infeed_values.push_back(value);
    return value;
  };
  interpreter_options.outfeed = hlo::OutfeedQueue(&reference_outfeed);
  StatusOr<std::vector<hlo::Literal>> reference = std::vector<hlo::Literal>{};
  auto interpret = [&]() -> Status {
    TPU_RETURN_IF_ERROR(compiler::OnePassDotRounding(*dot_passes).Run(&module).status());
    reference = hlo::Interpret(module, arguments, interpreter_options);
    if (!reference.ok()) return Status(reference.status().code(), "interpreter: " + reference.status().message());
    return OkStatus();
  };
  const compiler::Program& program = (*executable)->program();
  const bool feeds = !program.infeed.empty() || !program.outfeed.empty();
  if (feeds) {
    if (Status interpreted = interpret(); !interpreted.ok()) return Fail("tpusim: " + interpreted.ToString());
    for (const hlo::Literal& value : infeed_values) {
      Status queued = client.TransferToInfeed(ValueElements(value));
      if (!queued.ok()) return Fail("tpusim: " + queued.ToString());
    }
  }
  runtime::ExecuteOptions execute_options;
  execute_options.profile = profile;
  step = Clock::now();
  StatusOr<runtime::ExecuteResult> result = [&] {
    ProgressLine progress;
    execute_options.progress = [&progress](uint64_t cycles) { progress(cycles); };
    return (*executable)->Execute(argument_buffers, execute_options);
  }();
  host_step("execute", step);
  if (!result.ok()) return Fail("tpusim: " + result.status().ToString());
  const DeviceCounters& counters = result->counters;
  if (!profile && flags.values.count("trace")) {
    // The window counts the program's cycles: one that starts after the program ended holds nothing.
    uint64_t trace_start = 0;
    if (!ParseUnsigned(flags, "trace-start", 0, &trace_start)) return kExitError;
    if (trace_start >= counters.cycles) {
      std::remove(FlagOr(flags, "trace", "").c_str());
      return Fail("tpusim: --trace-start=" + std::to_string(trace_start) + " is past the end of the program (" +
                  std::to_string(counters.cycles) + " cycles): the waveform would hold nothing; start it below " +
                  std::to_string(counters.cycles));
    }
  }
  std::cout << "cycles: " << counters.cycles << "\n";
  std::cout << "mxu_busy_cycles: " << counters.mxu_busy_cycles << "\n";
  std::cout << "instructions: " << counters.instructions << "\n";
  std::cout << "dma_lines: " << counters.dma_lines << "\n";
  std::cout << "vpu_busy_cycles: " << counters.vpu_busy_cycles << "\n";
  std::cout << "stall_cycles: " << counters.stall_cycles << "\n";
  if (feeds) {
    // Waits for the host (an infeed not filled yet, an outfeed slot not read yet), and the run with the
    // host link's transfers around it.
    std::cout << "feed_stall_cycles: " << counters.feed_stall_cycles << "\n";
    std::cout << "elapsed_cycles: " << result->elapsed_cycles << "\n";
  }
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
  if (profile) {
    if (const int status = ReportProfile(flags, module, client.device_info(), **executable, *result->profile, host_events); status != kExitOk) {
      return status;
    }
  }

  if (StopRequested()) return kExitInterrupted;
  if (!feeds) {
    if (Status interpreted = interpret(); !interpreted.ok()) return Fail("tpusim: " + interpreted.ToString());
  }
  if (reference->size() != result->outputs.size()) {
    return Fail("tpusim: the device returned " + std::to_string(result->outputs.size()) +
                " outputs, the interpreter " + std::to_string(reference->size()));
  }

  bool all_ok = true;
  for (size_t i = 0; i < reference->size(); ++i) {
    if (StopRequested()) return kExitInterrupted;
    StatusOr<hlo::Literal> device = result->outputs[i]->ToLiteral();
    if (!device.ok()) return Fail("tpusim: reading output " + std::to_string(i) + ": " + device.status().ToString());
    if (!outputs_dir.empty()) {
      if (Status written = WriteOutputFile(outputs_dir, "out" + std::to_string(i), *device); !written.ok()) {
        return Fail("tpusim: " + written.message());
      }
    }
    if (i == 0 && perturbation != 0 && device->element_count() > 0) {
      device->SetFromDouble(0, device->GetAsDouble(0) + perturbation);
    }
    const OutputComparison comparison = CompareOutput(*device, (*reference)[i]);
    std::cout << FormatComparison("output " + std::to_string(i), (*reference)[i], comparison) << "\n";
    all_ok = all_ok && comparison.ok;
  }
  // What the outfeeds sent, value by value, element by element.
  if (feeds) {
    std::cout << "infeed_values: " << result->infeed_values << "\noutfeed_values: " << result->outfeed_values << "\n";
  }
  for (size_t k = 0; k < reference_outfeed.size(); ++k) {
    StatusOr<std::vector<hlo::Literal>> sent = client.TransferFromOutfeed();
    if (!sent.ok()) {
      std::cout << "outfeed " << k << ": FAIL (the device sent " << k << " values, the interpreter "
                << reference_outfeed.size() << ")\n";
      all_ok = false;
      break;
    }
    const std::vector<hlo::Literal> wanted = ValueElements(reference_outfeed[k]);
    for (size_t e = 0; e < wanted.size() && e < sent->size(); ++e) {
      if (!outputs_dir.empty()) {
        const std::string name = "outfeed" + std::to_string(k) + "." + std::to_string(e);
        if (Status written = WriteOutputFile(outputs_dir, name, (*sent)[e]); !written.ok()) {
          return Fail("tpusim: " + written.message());
        }
      }
      const OutputComparison comparison = CompareOutput((*sent)[e], wanted[e]);
      std::cout << FormatComparison("outfeed " + std::to_string(k) + "." + std::to_string(e), wanted[e], comparison) << "\n";
      all_ok = all_ok && comparison.ok;
    }
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
    if (error.empty()) {  // --help: the usage is the output asked for
      std::cout << kUsage;
      return kExitOk;
    }
    return FailWithUsage("tpusim: " + error);
  }
  std::signal(SIGINT, OnInterrupt);
  // Bad input is an error message and exit status 1, never an abort: an exception that escapes a check
  // (host memory exhausted while filling a huge constant, say) ends the run the same way.
  try {
    if (flags.command == "run") return Run(flags, /*profile=*/false);
    if (flags.command == "profile") return Run(flags, /*profile=*/true);
    if (flags.command == "info") {
      if (!flags.file.empty()) return FailWithUsage("tpusim: info takes no file");
      return Info(flags);
    }
  } catch (const std::bad_alloc&) {
    return Fail("tpusim: ResourceExhaustedError: out of host memory");
  } catch (const std::exception& exception) {
    return Fail(std::string("tpusim: InternalError: ") + exception.what());
  }
  return FailWithUsage("tpusim: unknown command '" + flags.command + "'");
}
