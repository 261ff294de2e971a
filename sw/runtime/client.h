// The tpusim runtime, in the spirit of PJRT/libtpu: a Client owns one chip (through the driver and a
// transport), lists its devices, allocates HBM buffers, compiles HLO into loaded executables and runs
// them.
//
//   auto client = Client::Create("model", "tiny").value();
//   auto x = client->BufferFromHostLiteral(literal).value();
//   auto executable = client->Compile(hlo_text).value();
//   auto result = executable->Execute({x.get()}).value();   // result.outputs, result.counters
//   hlo::Literal y = result.outputs[0]->ToLiteral().value();
//
// One program on several devices at once (PJRT's Execute with one argument list per device):
//
//   auto replicated = client->CompileReplicated(hlo_text, {0, 1}).value();
//   auto results = replicated->Execute({{x0.get()}, {x1.get()}}).value();   // results[i]: device i's
//
// Nothing here knows which backend runs underneath except Client::Create, which builds the transport.
// Every error is a Status with an XLA-style code; after an error the client and its device stay usable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "compiler/codegen/program.h"
#include "compiler/hlo/collective_groups.h"
#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/literal.h"
#include "compiler/hlo/shape.h"
#include "compiler/passes/per_device_program.h"
#include "sw/base/status.h"
#include "sw/driver/driver.h"
#include "sw/driver/transport.h"
#include "sw/runtime/hbm_allocator.h"

namespace tpu::runtime {

struct ClientOptions {
  // Device cycles an Execute may take before it is abandoned (DeadlineExceeded; the device is reset).
  uint64_t execute_timeout_cycles = 4'000'000'000ull;
  // WATCHDOG_LIMIT written at start-up: cycles without an issued instruction before the core stops with
  // WATCHDOG. 0 disables the watchdog.
  uint32_t watchdog_limit_cycles = 1'000'000;
  // Waveform of the RTL backend (ignored by the model): FST file, window in cycles (stop 0: to the end),
  // hierarchy depth (0: all).
  std::string trace_file;
  uint64_t trace_start_cycle = 0;
  uint64_t trace_stop_cycle = 0;
  int trace_depth = 0;
  // Compile writes the module after every compiler step and program.asm here (compiler/driver/compile.h);
  // empty: no dumps.
  std::string compile_dump_dir;
  // MXU passes per f32 dot for Compile (compiler::CompileOptions::dot_passes): 0 what each dot's
  // operand_precision asks for (DEFAULT 1, HIGH 3, HIGHEST 6, as on a TPU); 1, 3 or 6 for every dot.
  int dot_passes = 0;
  // What host transfers and launches cost in device time (sw/driver/driver.h; docs/architecture.md,
  // "Host link"). HostLinkModel{} turns the link model off.
  HostLinkModel host_link = HostLinkModel::PcieGen3x16();
  // Chips on the board (1, 2 or 4; sim/model/ici.h): a device per core of every chip. 0: the
  // configuration's BOARD_CHIPS (tiny: 1, v2: 4, a v2-8).
  uint32_t chips = 0;
  // The model backend's HBM timing (sim/model/chip_config.h, hbm_timing): true, the twin of the HBM
  // subsystem (sim/hbm/hbm_twin.h); false, the fixed HBM_LATENCY of the configuration.
  bool model_hbm_timing = true;
};

// One TPU core as the runtime exposes it ("TPU:0").
struct Device {
  int id = 0;
  int core = 0;     // core index on the board (RDMA's s[rd]): chip * cores per chip + core on the chip
  int worker = 0;   // host (task) the chip is attached to
  int chip = 0;     // chip index on the board
  std::string kind;  // "tpusim tiny"
  std::string name() const { return "TPU:" + std::to_string(id); }
  // As libtpu/TensorFlow print devices: /job:worker/replica:0/task:0/device:TPU:0
  std::string full_name() const;
  std::string ToString() const;  // "TPU:0 (core 0, worker 0, chip 0, tpusim 8x8)"
};

class DeviceState;  // the chip behind a client, shared by its buffers and executables
class ShardedBuffer;      // sw/runtime/sharded.h
class ShardedExecutable;  // sw/runtime/sharded.h
class DeviceRun;    // one device's part of an execution (client.cc)

// A contiguous HBM region, freed when the last owner drops it.
class HbmRegion {
 public:
  HbmRegion(std::shared_ptr<DeviceState> state, uint64_t first_line, uint64_t lines)
      : state_(std::move(state)), first_line_(first_line), lines_(lines) {}
  ~HbmRegion();
  HbmRegion(const HbmRegion&) = delete;
  HbmRegion& operator=(const HbmRegion&) = delete;
  uint64_t first_line() const { return first_line_; }
  uint64_t lines() const { return lines_; }

 private:
  std::shared_ptr<DeviceState> state_;
  uint64_t first_line_;
  uint64_t lines_;
};

// An f32 array in device HBM, in the device layout of compiler/codegen/program.h.
//
// Donation (input_output_alias): when an executable writes an output into the buffer of a parameter
// (Program::output_aliases), Execute donates that argument, as PJRT does for donated buffers: its HBM
// region becomes the output buffer's, and the caller's argument handle no longer holds data
// (is_donated(); ToLiteral and passing it to another Execute fail with FailedPrecondition naming the
// executable). The handle itself stays valid and may be destroyed as usual.
class Buffer {
 public:
  Buffer(std::shared_ptr<DeviceState> state, const Device* device, compiler::DeviceLayout layout,
         std::unique_ptr<HbmRegion> region)
      : state_(std::move(state)), device_(device), layout_(std::move(layout)), region_(std::move(region)) {}

  const hlo::Shape& shape() const { return layout_.shape; }
  const compiler::DeviceLayout& layout() const { return layout_; }
  const Device& device() const { return *device_; }
  // The region's first line and size (0 once donated).
  uint64_t hbm_line() const { return region_ ? region_->first_line() : 0; }
  uint64_t hbm_lines() const { return region_ ? region_->lines() : 0; }
  bool is_donated() const { return region_ == nullptr; }
  // OK, or FailedPrecondition when the buffer was donated to an execution.
  Status CheckNotDonated() const;

  // Copies the value back to the host (host DMA), dropping the layout's padding.
  StatusOr<hlo::Literal> ToLiteral() const;
  // Raw device bytes (padded layout).
  StatusOr<std::vector<uint8_t>> ToDeviceBytes() const;

 private:
  friend class DeviceRun;  // donates argument buffers

  std::shared_ptr<DeviceState> state_;
  const Device* device_;
  compiler::DeviceLayout layout_;
  // Mutable: a donated argument is passed as `const Buffer*` (PJRT-style handle) and gives its region
  // to the output.
  mutable std::unique_ptr<HbmRegion> region_;
  mutable std::string donated_to_;  // the executable that received the region
};

struct ExecuteOptions {
  // Record the chip's issue trace of this run (ExecuteResult::profile; sw/profiler reads it).
  // Unimplemented when the backend cannot trace.
  bool profile = false;
  // Called while the program runs with the device cycles so far, every `progress_cycles` cycles (for a
  // progress line on a terminal; it runs on the calling thread between slices of simulation).
  std::function<void(uint64_t cycles)> progress;
  uint64_t progress_cycles = uint64_t{1} << 20;
};

struct ExecuteResult {
  std::vector<std::unique_ptr<Buffer>> outputs;  // the root value, tuple flattened
  DeviceCounters counters;                        // the device's performance counters of this run
  // Device cycles from the call to its return: the launch and the host link's transfers of infeed and
  // outfeed values as well as the run itself (counters.cycles is the run alone).
  uint64_t elapsed_cycles = 0;
  uint64_t infeed_values = 0, outfeed_values = 0;  // values the run took from the infeed / gave the outfeed
  std::shared_ptr<const ExecutionProfile> profile;  // with ExecuteOptions::profile, else null
};

class LoadedExecutable {
 public:
  LoadedExecutable(std::shared_ptr<DeviceState> state, const Device* device, compiler::Program program,
                   std::vector<std::unique_ptr<HbmRegion>> constants, uint64_t timeout_cycles)
      : state_(std::move(state)),
        device_(device),
        program_(std::move(program)),
        constants_(std::move(constants)),
        timeout_cycles_(timeout_cycles) {}

  const compiler::Program& program() const { return program_; }
  const std::string& name() const { return program_.module_name; }
  const Device& device() const { return *device_; }
  const DeviceInfo& device_info() const;  // of the chip the executable runs on

  // Runs the program once on `arguments` (one buffer per entry parameter, of the parameter's shape).
  // A program with infeeds takes their values from the device's infeed queue (Client::TransferToInfeed)
  // while it runs, the host writing each into the infeed slot as the program frees it; its outfeeds'
  // values go to the outfeed queue (Client::TransferFromOutfeed). A program that waits for an infeed value
  // the queue does not have stops with the watchdog (DeadlineExceeded, naming the empty queue); a queued
  // value of the wrong shape is InvalidArgument; the queue keeps what is left. A failed run resets the device.
  // InvalidArgument naming both shapes when an argument does not match. An output the program aliases to
  // a parameter is written into that argument's buffer, which is donated (see Buffer): result.outputs[i]
  // then owns the region and the argument handle no longer holds data. A donated argument may not be
  // passed twice. If the execution fails, nothing is donated but a donated argument's contents are
  // undefined.
  StatusOr<ExecuteResult> Execute(const std::vector<const Buffer*>& arguments, const ExecuteOptions& options = {});

 private:
  friend class DeviceRun;
  friend class ReplicatedExecutable;

  std::shared_ptr<DeviceState> state_;
  const Device* device_;
  compiler::Program program_;
  std::vector<std::unique_ptr<HbmRegion>> constants_;  // uploaded once, at load time
  uint64_t timeout_cycles_;
};

// One program loaded on several devices and run on all of them at once, as PJRT runs an executable
// compiled for num_replicas x num_partitions devices. Position i is device i of the module's grid
// (compiler/hlo/collective_groups.h: replica i / partitions, partition i % partitions).
class ReplicatedExecutable {
 public:
  ReplicatedExecutable(hlo::DeviceGrid grid, std::vector<std::unique_ptr<LoadedExecutable>> executables)
      : grid_(grid), executables_(std::move(executables)) {}

  const std::string& name() const { return executables_.front()->name(); }
  const hlo::DeviceGrid& device_grid() const { return grid_; }
  size_t num_devices() const { return executables_.size(); }
  // The program as loaded on position i, and that position's device.
  LoadedExecutable& executable(size_t i) const { return *executables_.at(i); }
  const Device& device(size_t i) const { return executables_.at(i)->device(); }
  // How errors name position i: "replica 1 (TPU:1)", "partition 1 (TPU:1)" or "replica 0 partition 1 (TPU:1)".
  std::string DeviceName(size_t i) const;

  // Runs the program once on every device, position i on arguments[i] (PJRT's argument_handles[device]
  // [argument]; each list as LoadedExecutable::Execute takes it, its buffers on device(i)). Every device
  // is launched before the host waits for any (programs that meet at a collective need all of them
  // running), then the host waits for all of them together, serving each device's infeed and outfeed
  // queues as a single execution does. Returns one ExecuteResult per position. When a device fails (an
  // error, the watchdog, the timeout) the error is that device's, named ("replica 1 (TPU:1): ..."): the
  // other devices are stopped, every device of the execution is reset, nothing is donated and no output
  // kept. ExecuteOptions::profile is Unimplemented here.
  StatusOr<std::vector<ExecuteResult>> Execute(const std::vector<std::vector<const Buffer*>>& arguments,
                                               const ExecuteOptions& options = {});

 private:
  hlo::DeviceGrid grid_;
  std::vector<std::unique_ptr<LoadedExecutable>> executables_;
};

class Client {
 public:
  // backend: "model" (C++ reference model, any configuration file rtl/config/<config>.cfg) or "rtl"
  // (verilated chip; only the configuration this build was generated for).
  static StatusOr<std::unique_ptr<Client>> Create(const std::string& backend, const std::string& config,
                                                  const ClientOptions& options = {});
  // A client over a transport the caller built (it must outlive the client).
  static StatusOr<std::unique_ptr<Client>> CreateWithTransport(Transport& transport, const ClientOptions& options = {});
  ~Client();

  const std::string& backend() const { return backend_; }
  const std::vector<Device>& devices() const { return devices_; }
  // The configuration every device has (read from device 0).
  const DeviceInfo& device_info() const;
  const ClientOptions& options() const { return options_; }
  // The register-level driver of `device` (for diagnostics such as `tpusim info`).
  Driver& driver(int device = 0);

  // HBM of `device` in use and its size, in bytes.
  uint64_t hbm_used_bytes(int device = 0) const;
  uint64_t hbm_limit_bytes(int device = 0) const;

  // Allocates HBM for `shape` and copies `literal` there. `device` indexes devices().
  StatusOr<std::unique_ptr<Buffer>> BufferFromHostLiteral(const hlo::Literal& literal, int device = 0);
  // Allocates an uninitialised buffer.
  StatusOr<std::unique_ptr<Buffer>> CreateUninitializedBuffer(const hlo::Shape& shape, int device = 0);

  // Parses, verifies and compiles HLO text with compiler::CompileModule (the pass pipeline, codegen
  // preparation and codegen, as tpuc), then loads the program (uploads its constants). A program that
  // needs more HBM than the device has fails here with the out-of-memory message, before anything runs.
  StatusOr<std::unique_ptr<LoadedExecutable>> Compile(const std::string& hlo_text, int device = 0);
  StatusOr<std::unique_ptr<LoadedExecutable>> Compile(const hlo::HloModule& module, int device = 0);
  // Loads an already compiled program.
  StatusOr<std::unique_ptr<LoadedExecutable>> Load(compiler::Program program, int device = 0);

  // Compiles a module once and loads it on several devices (PJRT's Compile for num_replicas x
  // num_partitions devices). `devices` indexes devices(); position i runs device i of the module's grid
  // (replica_count x num_partitions of its header). Empty: as many devices as the grid has, in the order
  // of the board's ring (chips by ring position, 0-1-3-2 on four: TPU:0,1,2,3,6,7,4,5), so that
  // neighbouring positions are neighbouring cores and a collective's ring crosses each link once; a module whose header names no grid runs as one replica per listed device.
  // InvalidArgument naming both counts when the grid needs more devices than the client has or than
  // `devices` lists; InvalidArgument for a device listed twice. Every device runs the same code; its ids
  // and its peers in the collectives are patched in when it runs (compiler::PlaceOnDevice).
  StatusOr<std::unique_ptr<ReplicatedExecutable>> CompileReplicated(const std::string& hlo_text,
                                                                    const std::vector<int>& devices = {});
  StatusOr<std::unique_ptr<ReplicatedExecutable>> CompileReplicated(const hlo::HloModule& module,
                                                                    const std::vector<int>& devices = {});

  // Global arrays over the devices of a mesh (sw/runtime/sharded.h). CompileSharded takes the global view
  // JAX lowers jax.shard_map (every mesh axis manual) and jax.pmap to, makes the program every device runs
  // with the per-device-program pass, compiles it once and loads it on the mesh's devices (`devices` as
  // CompileReplicated). InvalidArgument for a module with no manual computation; the pass's own errors for
  // what it does not handle. BufferFromGlobalLiteral cuts `global` by `layout` and copies device d's part
  // to devices[d] (empty: devices 0, 1, ...).
  StatusOr<std::unique_ptr<ShardedExecutable>> CompileSharded(const std::string& hlo_text,
                                                              const std::vector<int>& devices = {});
  StatusOr<std::unique_ptr<ShardedBuffer>> BufferFromGlobalLiteral(const hlo::Literal& global,
                                                                   const compiler::ShardLayout& layout,
                                                                   const std::vector<int>& devices = {});

  // Stops whatever the devices are doing and resets every one (the seeds' "stop/start the TPU"). Buffers
  // keep their contents.
  Status ResetDevice();

  // libtpu's TransferToInfeed: queues one infeed value for `device` (its elements, a tuple flattened);
  // the infeeds of the programs that run there take the values in order. The TPU infeed takes f32, s32,
  // bf16 and pred only: other element types are the seeds' TypeError, and nothing is queued.
  Status TransferToInfeed(std::vector<hlo::Literal> elements, int device = 0);
  // TransferFromOutfeed: the oldest value an outfeed of a program on `device` sent (its elements);
  // NotFound when none is waiting.
  StatusOr<std::vector<hlo::Literal>> TransferFromOutfeed(int device = 0);
  size_t InfeedQueueSize(int device = 0) const;
  size_t OutfeedQueueSize(int device = 0) const;
  // Device cycles since the client was created (the backend's clock, host link time included).
  uint64_t DeviceCycles() const;

 private:
  Client() = default;
  StatusOr<const Device*> GetDevice(int device) const;
  // Compiles a verified module the client owns (compiler::CompileModule rewrites it) for the
  // configuration of `device`.
  // `replica_count`: CompileOptions::replica_count.
  StatusOr<compiler::Program> CompileProgram(std::unique_ptr<hlo::HloModule> module, int device,
                                             int64_t replica_count = 0);
  StatusOr<std::unique_ptr<ReplicatedExecutable>> CompileReplicatedOwned(std::unique_ptr<hlo::HloModule> module,
                                                                         std::vector<int> devices);

  std::string backend_;
  ClientOptions options_;
  std::vector<std::shared_ptr<DeviceState>> states_;  // per device, as devices_
  std::vector<Device> devices_;
};

}  // namespace tpu::runtime
