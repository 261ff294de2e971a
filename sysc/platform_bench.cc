// Simulation speed of the SystemC platform: simulated device cycles per host second for long-running
// programs, without and with FST tracing. Prints one line per run; not a test.
//
//   sysc_bench [--iterations=N] [--trace=FILE.fst] [--depth=D] [--chips=1|2|4]
// With --chips, a board of that many chips runs the program on every core at once (cycles/s are the
// board's: every chip simulates each cycle).
// The traced run dumps every cycle of its program into FILE (default: a temporary file, removed).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "sw/driver/test_instructions.h"
#include "sysc/rtl_transport.h"
#include "tpu_config.h"
#include "tpu_csr.h"
#include "tpu_isa.h"

namespace tpu {
namespace {

using isa::Opcode;

using testing::Assemble;

// A scalar countdown loop: the sequencer issues every cycle, the other units idle.
std::vector<uint64_t> ScalarLoop(uint32_t iterations) {
  return {Assemble(Opcode::LI, 1, 0, 0, 0, 0, iterations),
          Assemble(Opcode::ADDI, 1, 1, 0, 0, 0, 0xffffffffu),  // pc 1
          Assemble(Opcode::BNE, 0, 1, 0, 0, 0, 1),
          Assemble(Opcode::HALT, 0, 0, 0, 0, 0, 0)};
}

// A loop that keeps DMA, MXU and VPU busy: load 16 lines from HBM, load weights, a 16-row matmul and a
// 16-line vector add, then store 16 lines back.
std::vector<uint64_t> UnitLoop(uint32_t iterations) {
  const uint8_t kDma = isa::flag::SYNC_DMA, kAll = 0;
  return {Assemble(Opcode::LI, 1, 0, 0, 0, 0, iterations),
          Assemble(Opcode::LI, 2, 0, 0, 0, 0, 1000),  // HBM line
          Assemble(Opcode::LI, 3, 0, 0, 0, 0, 0),     // VMEM: inputs
          Assemble(Opcode::LI, 4, 0, 0, 0, 0, 16),    // count
          Assemble(Opcode::LI, 5, 0, 0, 0, 0, 64),    // VMEM: results
          Assemble(Opcode::DMA_LD, 0, 2, 3, 4, 0, 1),  // pc 5
          Assemble(Opcode::SYNC, 0, 0, 0, 0, kDma, 0),
          Assemble(Opcode::MXU_LW, 0, 3, 0, 0, 0, 0),
          Assemble(Opcode::MXU_MM, 0, 3, 5, 4, isa::flag::MXU_MM_SWAP, 0),
          Assemble(Opcode::VADD, 3, 3, 3, 4, 0, 0),
          Assemble(Opcode::SYNC, 0, 0, 0, 0, kAll, 0),
          Assemble(Opcode::DMA_ST, 0, 2, 5, 4, 0, 1),
          Assemble(Opcode::ADDI, 1, 1, 0, 0, 0, 0xffffffffu),
          Assemble(Opcode::BNE, 0, 1, 0, 0, 0, 5),
          Assemble(Opcode::SYNC, 0, 0, 0, 0, kAll, 0),
          Assemble(Opcode::HALT, 0, 0, 0, 0, 0, 0)};
}

// Loads one program into every core of the board, runs them together; returns false if one did not halt
// cleanly.
bool RunOnce(RtlTransport& transport, const std::vector<uint64_t>& program, const char* label,
             const char* tracing) {
  const uint32_t cores = transport.Cores();
  for (uint32_t core = 0; core < cores; ++core) {
    for (size_t i = 0; i < program.size(); ++i) {
      transport.MmioWrite(transport.MmioOffset(core, csr::IMEM_WINDOW + 8 * i), static_cast<uint32_t>(program[i]));
      transport.MmioWrite(transport.MmioOffset(core, csr::IMEM_WINDOW + 8 * i + 4),
                          static_cast<uint32_t>(program[i] >> 32));
    }
    transport.MmioWrite(transport.MmioOffset(core, csr::WATCHDOG_LIMIT), 0);
    transport.MmioWrite(transport.MmioOffset(core, csr::START_PC), 0);
  }
  const uint64_t start_cycles = transport.Cycles();
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t start_cpu = std::clock();
  for (uint32_t core = 0; core < cores; ++core) transport.MmioWrite(transport.MmioOffset(core, csr::DOORBELL), 1);
  // Every core's interrupt line: each stays high until cleared below.
  const uint64_t all = cores >= 64 ? ~uint64_t{0} : (uint64_t{1} << cores) - 1;
  uint64_t raised = 0;
  for (uint32_t core = 0; core < cores; ++core) {
    if (transport.WaitForInterruptOn(uint64_t{1} << core, uint64_t{1} << 40)) raised |= uint64_t{1} << core;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // CPU time too: on a shared machine it is the steadier measure.
  const double cpu_seconds = static_cast<double>(std::clock() - start_cpu) / CLOCKS_PER_SEC;
  const uint64_t cycles = transport.Cycles() - start_cycles;
  bool halted = raised == all;
  for (uint32_t core = 0; core < cores; ++core) {
    const uint32_t status = transport.MmioRead(transport.MmioOffset(core, csr::STATUS));
    transport.MmioWrite(transport.MmioOffset(core, csr::IRQ_STATUS), 0xf);
    halted = halted && (status & csr::STATUS_HALTED) && !(status & csr::STATUS_ERROR);
  }
  std::printf("%-12s %-16s %9llu cycles %7.3f s wall %9.0f cycles/s  %7.3f s CPU %9.0f cycles/CPU-s%s\n",
              label, tracing, static_cast<unsigned long long>(cycles), seconds, cycles / seconds, cpu_seconds,
              cycles / cpu_seconds,
              halted ? "" : "  (did not halt cleanly: check the program against the chip)");
  return halted;
}

int Main(int argc, char** argv) {
  uint32_t iterations = 200000, chips = 1;
  std::string trace_file;
  int depth = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--iterations=", 13) == 0) {
      iterations = static_cast<uint32_t>(std::strtoul(argv[i] + 13, nullptr, 10));
    } else if (std::strncmp(argv[i], "--trace=", 8) == 0) {
      trace_file = argv[i] + 8;
    } else if (std::strncmp(argv[i], "--depth=", 8) == 0) {
      depth = std::atoi(argv[i] + 8);
    } else if (std::strncmp(argv[i], "--chips=", 8) == 0) {
      chips = static_cast<uint32_t>(std::strtoul(argv[i] + 8, nullptr, 10));
    } else {
      std::fprintf(stderr, "usage: %s [--iterations=N] [--trace=FILE.fst] [--depth=D] [--chips=1|2|4]\n", argv[0]);
      return 2;
    }
  }
  if (iterations == 0) {
    std::fprintf(stderr, "--iterations must be a positive number\n");
    return 2;
  }
  bool ok = true;
  std::printf("board of %u chip(s), %u cores\n", chips, chips * static_cast<uint32_t>(cfg::kNumCores));
  {
    auto transport = RtlTransport::Create({}, chips);
    if (!transport.ok()) {
      std::fprintf(stderr, "%s\n", transport.status().ToString().c_str());
      return 1;
    }
    ok &= RunOnce(**transport, ScalarLoop(iterations), "scalar-loop", "no trace");
    ok &= RunOnce(**transport, UnitLoop(std::max(1u, iterations / 50)), "unit-loop", "no trace");
  }
  const bool temporary = trace_file.empty();
  if (temporary) trace_file = (std::filesystem::temp_directory_path() / "sysc_bench.fst").string();
  {
    RtlTraceOptions trace;
    trace.file = trace_file;
    trace.depth = depth;
    auto transport = RtlTransport::Create(trace, chips);
    if (!transport.ok()) {
      std::fprintf(stderr, "%s\n", transport.status().ToString().c_str());
      return 1;
    }
    const std::string label = "FST depth " + (depth == 0 ? std::string("all") : std::to_string(depth));
    ok &= RunOnce(**transport, ScalarLoop(std::max(1u, iterations / 10)), "scalar-loop", label.c_str());
    ok &= RunOnce(**transport, UnitLoop(std::max(1u, iterations / 500)), "unit-loop", label.c_str());
  }
  std::printf("trace: %s (%llu bytes)\n", trace_file.c_str(),
              static_cast<unsigned long long>(std::filesystem::file_size(trace_file)));
  if (temporary) std::filesystem::remove(trace_file);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tpu

int main(int argc, char** argv) { return tpu::Main(argc, argv); }
