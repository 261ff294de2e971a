// make bench-allreduce: an f32 all-reduce (sum) of --bytes bytes over every core of the board, compiled
// and run as a replicated program (compiler/codegen/collectives.cc: a ring over RDMA), one line of
// figures:
//   allreduce config=v2 cores=8 bytes=4194304 cycles=C of_link_bound_pct=P link_bytes_per_cycle=L ...
// The bound is the ring's: 2(p-1)/p x bytes / (the bandwidth of the slowest link the ring crosses, one
// direction): an ICI link between chips (sim/model/ici.h), the core network (a line per cycle) on one
// chip. cycles are the slowest device's. Every device's result is checked against the sum on the host.
//
// Flags: --config=v2 --backend=model --bytes=4194304 --chips=0 (0: the configuration's board), --per-device=1
// (a line per device before: its cycles, stalls and semaphore waits).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "sim/model/ici.h"
#include "sw/runtime/client.h"

namespace {

std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
  }
  return fallback;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "allreduce_bench: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tpu;
  const std::string config = Flag(argc, argv, "config", "v2");
  const std::string backend = Flag(argc, argv, "backend", "model");
  const uint64_t bytes = std::strtoull(Flag(argc, argv, "bytes", "4194304").c_str(), nullptr, 10);
  runtime::ClientOptions options;
  options.chips = static_cast<uint32_t>(std::atoi(Flag(argc, argv, "chips", "0").c_str()));
  const bool per_device = Flag(argc, argv, "per-device", "0") == "1";
  StatusOr<std::unique_ptr<runtime::Client>> made = runtime::Client::Create(backend, config, options);
  if (!made.ok()) return Fail(made.status().ToString());
  runtime::Client& client = **made;
  const size_t cores = client.devices().size();
  const uint32_t lanes = client.device_info().lanes;
  const uint64_t elements = bytes / 4;
  if (elements == 0 || elements % lanes != 0) {
    return Fail("--bytes must be a positive multiple of a line (" + std::to_string(lanes * 4) + " bytes)");
  }
  const std::string shape = "f32[" + std::to_string(elements / lanes) + "," + std::to_string(lanes) + "]";
  const std::string text = "HloModule allreduce, replica_count=" + std::to_string(cores) +
                           "\n\n%sum (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] "
                           "parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\nENTRY %main (x: " + shape + ") -> " +
                           shape + " {\n  %x = " + shape + "{1,0} parameter(0)\n  ROOT %r = " + shape +
                           "{1,0} all-reduce(%x), replica_groups={}, to_apply=%sum\n}\n";
  StatusOr<std::unique_ptr<runtime::ReplicatedExecutable>> executable = client.CompileReplicated(text);
  if (!executable.ok()) return Fail(executable.status().ToString());

  // Small integers: every sum is exact whatever the order, so each device's result must equal the host's.
  std::mt19937 rng(7);
  std::vector<std::vector<float>> values(cores, std::vector<float>(elements));
  std::vector<float> sum(elements, 0.0f);
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  std::vector<std::vector<const runtime::Buffer*>> arguments(cores);
  const hlo::Shape array = hlo::Shape::Make(hlo::PrimitiveType::F32, {static_cast<int64_t>(elements / lanes), lanes});
  for (size_t d = 0; d < cores; ++d) {
    for (uint64_t i = 0; i < elements; ++i) {
      values[d][i] = static_cast<float>(static_cast<int>(rng() % 64) - 32);
      sum[i] += values[d][i];
    }
    StatusOr<std::unique_ptr<runtime::Buffer>> buffer =
        client.BufferFromHostLiteral(hlo::Literal(array, values[d]), (*executable)->device(d).id);
    if (!buffer.ok()) return Fail(buffer.status().ToString());
    arguments[d].push_back(buffer->get());
    buffers.push_back(std::move(buffer).value());
  }
  StatusOr<std::vector<runtime::ExecuteResult>> results = (*executable)->Execute(arguments);
  if (!results.ok()) return Fail(results.status().ToString());
  uint64_t cycles = 0;
  for (size_t d = 0; d < cores; ++d) {
    cycles = std::max(cycles, (*results)[d].counters.cycles);
    if (per_device) {
      const DeviceCounters& c = (*results)[d].counters;
      std::printf("allreduce_device device=%zu cycles=%llu stall_cycles=%llu semaphore_wait_cycles=%llu\n", d,
                  static_cast<unsigned long long>(c.cycles), static_cast<unsigned long long>(c.stall_cycles),
                  static_cast<unsigned long long>(c.feed_stall_cycles));
    }
    StatusOr<hlo::Literal> out = (*results)[d].outputs.at(0)->ToLiteral();
    if (!out.ok()) return Fail(out.status().ToString());
    for (uint64_t i = 0; i < elements; ++i) {
      const float got = out->Get<float>(static_cast<int64_t>(i));
      if (got != sum[i]) {
        return Fail("device " + std::to_string(d) + " element " + std::to_string(i) + " is " + std::to_string(got) +
                    ", the sum is " + std::to_string(sum[i]));
      }
    }
  }
  const uint32_t chips = client.devices().back().chip + 1;
  const double link = chips > 1 ? double(ici::LinkConfig{}.bytes_per_cycle) : double(lanes) * 4.0;
  const double p = double(cores);
  const double bound = 2.0 * (p - 1.0) / p * double(bytes) / link;
  std::printf("allreduce config=%s cores=%zu bytes=%llu cycles=%llu of_link_bound_pct=%.1f link_bytes_per_cycle=%.0f "
              "bound_cycles=%.0f chips=%u backend=%s\n",
              config.c_str(), cores, static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(cycles),
              100.0 * bound / double(cycles), link, bound, chips, backend.c_str());
  return 0;
}
