// model_bench: host-side speed of the reference model on an MXU-bound program (not a test).
//   model_bench [--config=v2] [--rows=1024] [--tiles=64] [--kernel=host|avx512|avx2|portable|numerics]
//               [--lhs-scale=1]
// Streams `rows` LHS rows through `tiles` weight tiles (64 tiles of 128x128 with 1024 rows = the MXU work
// of a 1024 x 1024 x 1024 GEMM on v2) and prints simulated cycles, MXU utilization and host MAC/s, then
// one line of key=value figures (speeds per second of process CPU time). `host` is the host-float kernel
// on the widest instruction set this host has; avx512/avx2/portable force one. LHS and weights are
// uniform in [-lhs-scale, lhs-scale] and [-1, 1]; a tiny scale (1e-30) puts every product below 2^-112,
// so the kernel takes its flushing path.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sim/model/chip_model.h"
#include "sim/model/disassembler.h"
#include "tpu_csr.h"

namespace {

using tpu::isa::Opcode;
using tpu::model::Assemble;

// Process CPU time: on the shared 2-core machine it moves far less with the load than wall time does
// (the model is single-threaded, so on an idle host the two agree).
double CpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

bool Flag(const char* arg, const char* name, std::string* value) {
  const size_t length = std::strlen(name);
  if (std::strncmp(arg, name, length) != 0 || arg[length] != '=') return false;
  *value = arg + length + 1;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_name = "v2", kernel = "host", value;
  uint32_t rows = 1024, tiles = 64;
  float lhs_scale = 1.0f;
  const auto known_kernel = [](const std::string& name) {
    return name == "host" || name == "avx512" || name == "avx2" || name == "portable" || name == "numerics";
  };
  for (int i = 1; i < argc; ++i) {
    if (Flag(argv[i], "--config", &value)) {
      config_name = value;
    } else if (Flag(argv[i], "--rows", &value)) {
      rows = static_cast<uint32_t>(std::stoul(value));
    } else if (Flag(argv[i], "--tiles", &value)) {
      tiles = static_cast<uint32_t>(std::stoul(value));
    } else if (Flag(argv[i], "--kernel", &value) && known_kernel(value)) {
      kernel = value;
    } else if (Flag(argv[i], "--lhs-scale", &value)) {
      lhs_scale = std::strtof(value.c_str(), nullptr);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--config=NAME] [--rows=N] [--tiles=N] [--kernel=host|avx512|avx2|portable|numerics] "
                   "[--lhs-scale=S]\n",
                   argv[0]);
      return 2;
    }
  }
  tpu::model::MxuIsa isa = tpu::model::BestMxuIsa();
  for (tpu::model::MxuIsa forced :
       {tpu::model::MxuIsa::kPortable, tpu::model::MxuIsa::kAvx2, tpu::model::MxuIsa::kAvx512}) {
    if (kernel != tpu::model::MxuIsaName(forced)) continue;
    if (!tpu::model::MxuIsaAvailable(forced)) {
      std::fprintf(stderr, "kernel %s is not available on this host\n", kernel.c_str());
      return 1;
    }
    isa = forced;
  }
  const std::string kernel_name = kernel == "numerics" ? kernel : std::string("host-") + tpu::model::MxuIsaName(isa);
  tpu::StatusOr<tpu::model::ChipConfig> config = tpu::model::ChipConfig::Named(config_name);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  const uint32_t n = config->lanes;
  if (rows == 0 || 2ull * rows + n > config->vmem_lines) {
    std::fprintf(stderr, "--rows must be 1..%u for %s\n", (config->vmem_lines - n) / 2, config_name.c_str());
    return 1;
  }
  tpu::model::ChipModel model(*config);
  model.set_mxu_kernel(kernel == "numerics" ? tpu::model::MxuKernel::kNumericsLibrary
                                            : tpu::model::MxuKernel::kHostFloat);
  model.set_mxu_isa(isa);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> data(static_cast<size_t>(n + rows) * n);
  for (size_t i = 0; i < data.size(); ++i) data[i] = dist(rng) * (i < size_t{n} * n ? 1.0f : lhs_scale);
  if (!model.WriteVmem(0, data.data(), n + rows).ok()) return 1;

  // s1 weights (line 0), s2 LHS, s3 rows, s4 results; loop `tiles` times: MXU_LW, MXU_MM SWAP.
  const std::vector<uint64_t> program = {
      Assemble(Opcode::LI, 2, 0, 0, 0, 0, n),
      Assemble(Opcode::LI, 3, 0, 0, 0, 0, rows),
      Assemble(Opcode::LI, 4, 0, 0, 0, 0, n + rows),
      Assemble(Opcode::LI, 5, 0, 0, 0, 0, tiles),
      Assemble(Opcode::MXU_LW, 0, 1),
      Assemble(Opcode::MXU_MM, 0, 2, 4, 3, tpu::isa::flag::MXU_MM_SWAP),
      Assemble(Opcode::ADDI, 6, 6, 0, 0, 0, 1),
      Assemble(Opcode::BNE, 0, 6, 5, 0, 0, 4),
      Assemble(Opcode::HALT),
  };
  for (size_t i = 0; i < program.size(); ++i) {
    model.MmioWrite(tpu::csr::IMEM_WINDOW + 8 * static_cast<uint32_t>(i), static_cast<uint32_t>(program[i]));
    model.MmioWrite(tpu::csr::IMEM_WINDOW + 8 * static_cast<uint32_t>(i) + 4, static_cast<uint32_t>(program[i] >> 32));
  }
  model.MmioWrite(tpu::csr::WATCHDOG_LIMIT, 0);
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  model.MmioWrite(tpu::csr::DOORBELL, 1);
  model.Run(UINT64_MAX / 2);
  const double seconds = CpuSeconds() - cpu_start;
  const double wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (model.MmioRead(tpu::csr::STATUS) != tpu::csr::STATUS_HALTED) {
    std::fprintf(stderr, "program did not halt: STATUS 0x%x\n", model.MmioRead(tpu::csr::STATUS));
    return 1;
  }
  const uint64_t cycles =
      model.MmioRead(tpu::csr::CYCLES_LO) | (uint64_t{model.MmioRead(tpu::csr::CYCLES_HI)} << 32);
  const uint64_t mxu_rows =
      model.MmioRead(tpu::csr::MXU_BUSY_LO) | (uint64_t{model.MmioRead(tpu::csr::MXU_BUSY_HI)} << 32);
  const double macs = static_cast<double>(mxu_rows) * n * n;
  std::printf("config %s, kernel %s: %u tiles x %u rows\n", config_name.c_str(), kernel_name.c_str(), tiles, rows);
  std::printf("simulated: %llu cycles, MXU busy %llu rows, utilization %.3f\n",
              static_cast<unsigned long long>(cycles), static_cast<unsigned long long>(mxu_rows),
              static_cast<double>(mxu_rows) / static_cast<double>(cycles));
  std::printf("host: %.3f s CPU (%.3f s wall), %.2f GMAC/s, %.2f M simulated cycles/s (per CPU second)\n",
              seconds, wall_seconds, macs / seconds / 1e9, static_cast<double>(cycles) / seconds / 1e6);
  std::printf("model_bench config=%s kernel=%s rows=%u tiles=%u lhs_scale=%g cpu_s=%.4f wall_s=%.4f "
              "mxu_gmacs=%.2f sim_cycles_per_s=%.0f\n",
              config_name.c_str(), kernel_name.c_str(), rows, tiles, lhs_scale, seconds, wall_seconds,
              macs / seconds / 1e9, static_cast<double>(cycles) / seconds);
  return 0;
}
