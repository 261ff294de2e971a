#include "sw/runtime/client.h"

#include <algorithm>

#include "sim/model/ici.h"

#include <deque>
#include <optional>
#include <utility>

#include "compiler/codegen/codegen.h"
#include "compiler/driver/compile.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "sim/model/ici.h"
#include "sw/runtime/logging.h"
#include "sw/runtime/transport_factory.h"
#include "tpu_csr.h"

namespace tpu::runtime {

// The board behind a client: the transport every device talks through, and the lock that lets one host
// thread at a time use it.
struct BoardState {
  std::unique_ptr<Transport> owned_transport;  // null when the caller owns the transport
  std::mutex mutex;
};

// One device (a core) of the board: its driver and HBM allocator, its infeed and outfeed queues. Buffers
// and executables share it, so they may outlive the Client object.
class DeviceState {
 public:
  DeviceState(std::shared_ptr<BoardState> board, Transport& transport, uint32_t core)
      : board(std::move(board)), mutex(this->board->mutex), driver(transport, core) {}

  std::shared_ptr<BoardState> board;
  std::mutex& mutex;  // the board's: one host thread talks to the chips at a time
  Driver driver;
  DeviceInfo info;
  std::unique_ptr<HbmAllocator> allocator;
  // The host side of infeed and outfeed: values waiting for the device, values the device sent.
  std::deque<std::vector<hlo::Literal>> infeed_queue;
  std::deque<std::vector<hlo::Literal>> outfeed_queue;

  StatusOr<std::unique_ptr<HbmRegion>> Allocate(const std::shared_ptr<DeviceState>& self, uint64_t lines) {
    std::lock_guard<std::mutex> lock(mutex);
    StatusOr<uint64_t> first = allocator->Allocate(lines);
    if (!first.ok()) {
      TPU_LOG(ERROR) << first.status().ToString();
      return first.status();
    }
    return std::make_unique<HbmRegion>(self, *first, std::max<uint64_t>(lines, 1));
  }
};

HbmRegion::~HbmRegion() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  Status freed = state_->allocator->Free(first_line_);
  if (!freed.ok()) TPU_LOG(ERROR) << "freeing HBM: " << freed.ToString();
}

std::string Device::full_name() const {
  return "/job:worker/replica:0/task:" + std::to_string(worker) + "/device:" + name();
}

std::string Device::ToString() const {
  return name() + " (core " + std::to_string(core) + ", worker " + std::to_string(worker) + ", chip " +
         std::to_string(chip) + ", " + kind + ")";
}

namespace {

// The first `count` devices of the board in the order of its ring (sim/model/ici.h: chips by ring
// position, cores of a chip together): consecutive positions of a replicated program are neighbours,
// so a collective's ring crosses each chip-to-chip link once.
std::vector<int> RingOrder(const std::vector<Device>& board, size_t count) {
  std::vector<int> order;
  for (const Device& device : board) order.push_back(device.id);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return ici::RingPosition(static_cast<uint32_t>(board[a].chip)) <
           ici::RingPosition(static_cast<uint32_t>(board[b].chip));
  });
  order.resize(std::min(order.size(), count));
  return order;
}

}  // namespace

namespace {

std::string ShapeText(const hlo::Shape& shape) { return shape.ToString(); }

// The runtime holds arrays of static shape in 32-bit device words; everything else gets the error users know from TPUs.
Status CheckBufferShape(const hlo::Shape& shape) {
  if (!shape.IsArray()) {
    return InvalidArgument("a device buffer holds one array; got " + ShapeText(shape));
  }
  for (int d = 0; d < shape.rank(); ++d) {
    if (shape.is_dynamic_dimension(d) || shape.dimensions[d] < 0) {
      return ValueError("shape " + ShapeText(shape) + " must have a fixed size for dimension " + std::to_string(d) +
                        " that is known at graph construction time.");
    }
  }
  // One 32-bit device word per element (compiler/codegen/program.h).
  if (!compiler::IsDeviceElementType(shape.element_type)) {
    return Unimplemented("device buffers of element type " +
                         std::string(hlo::PrimitiveTypeName(shape.element_type)) +
                         " are not supported yet (only f32, bf16, f16, s8, s16, s32, s64, u8, u16, u32 and pred): " + ShapeText(shape));
  }
  return OkStatus();
}

std::string ShapesText(const std::vector<hlo::Literal>& elements) {
  std::string text;
  for (const hlo::Literal& element : elements) text += (text.empty() ? "" : ", ") + element.shape().ToString();
  return "(" + text + ")";
}

// The host side of a running program's infeeds and outfeeds: between the device's semaphore posts the
// host writes the next queued infeed value into the infeed slot when the program has freed it, and moves
// a sent outfeed value from the outfeed slot into the outfeed queue (docs/csr.md, "Host semaphores").
class FeedService {
 public:
  FeedService(DeviceState& state, const compiler::Program& program, uint64_t infeed_base, uint64_t outfeed_base)
      : state_(state), program_(program), infeed_base_(infeed_base), outfeed_base_(outfeed_base) {}

  // Before the doorbell: no semaphore left from an earlier run; the outfeed slot is free (when the program
  // has outfeeds).
  void Prepare() {
    state_.driver.ClearSemaphores();
    if (!program_.outfeed.empty()) state_.driver.PostSemaphore(csr::SEM_OUTFEED_FREE);
  }

  // While the program runs: one pass over the semaphores; true if it moved something (then another pass
  // may find more).
  StatusOr<bool> Serve() { return Service(/*running=*/true); }

  // Once the program has stopped (`run`: how): the last posts (a value taken, the last outfeed value),
  // then what the program never took goes back to the queue.
  Status Finish(const Status& run) {
    const StatusOr<bool> served = Service(/*running=*/false);
    Unfeed();
    if (!run.ok()) return Explain(run);
    return served.status();
  }

  uint64_t infeed_values() const { return infeed_values_; }
  uint64_t outfeed_values() const { return outfeed_values_; }

 private:
  // A value written into the slot that the program never took goes back to the front of the queue: it
  // belongs to the next program that runs.
  void Unfeed() {
    if (!slot_full_) return;
    state_.infeed_queue.push_front(std::move(in_slot_));
    slot_full_ = false;
    --infeed_values_;
  }

  StatusOr<bool> Service(bool running) {
    Driver& driver = state_.driver;
    bool moved = false;
    const std::vector<uint32_t> semaphores = driver.ReadSemaphores();
    if (semaphores[csr::SEM_INFEED_FREE] > 0) {
      driver.TakeSemaphore(csr::SEM_INFEED_FREE);
      slot_full_ = false;
      moved = true;
    }
    if (semaphores[csr::SEM_OUTFEED_FULL] > 0) {
      driver.TakeSemaphore(csr::SEM_OUTFEED_FULL);
      const uint32_t line_bytes = compiler::LineBytes(program_.lanes);
      TPU_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, driver.CopyFromHbm(static_cast<uint32_t>(outfeed_base_),
                                                                          compiler::FeedLines(program_.outfeed)));
      const std::vector<uint32_t> offsets = compiler::FeedOffsets(program_.outfeed);
      std::vector<hlo::Literal> value;
      for (size_t i = 0; i < program_.outfeed.size(); ++i) {
        value.push_back(compiler::FromDeviceBytes(bytes.data() + uint64_t{offsets[i]} * line_bytes, program_.outfeed[i]));
      }
      state_.outfeed_queue.push_back(std::move(value));
      ++outfeed_values_;
      driver.PostSemaphore(csr::SEM_OUTFEED_FREE);
      moved = true;
    }
    if (running && !program_.infeed.empty() && !slot_full_ && !state_.infeed_queue.empty()) {
      const std::vector<hlo::Literal>& value = state_.infeed_queue.front();
      bool matches = value.size() == program_.infeed.size();
      for (size_t i = 0; matches && i < value.size(); ++i) matches = value[i].shape() == program_.infeed[i].shape;
      if (!matches) {
        return InvalidArgument("infeed value " + std::to_string(infeed_values_) + " of " + program_.module_name +
                               " is " + ShapesText(value) + " but the program's infeed takes " +
                               compiler::ShapesText(program_.infeed) + "; the value stays queued");
      }
      std::vector<uint8_t> bytes;
      for (size_t i = 0; i < value.size(); ++i) {
        const std::vector<uint8_t> element = compiler::ToDeviceBytes(value[i], program_.infeed[i]);
        bytes.insert(bytes.end(), element.begin(), element.end());
      }
      TPU_RETURN_IF_ERROR(driver.CopyToHbm(bytes, static_cast<uint32_t>(infeed_base_)));
      in_slot_ = std::move(state_.infeed_queue.front());
      state_.infeed_queue.pop_front();
      ++infeed_values_;
      slot_full_ = true;
      driver.PostSemaphore(csr::SEM_INFEED_FULL);
      moved = true;
    }
    return moved;
  }

  // A program stopped by the watchdog while its infeed had nothing to give: say so.
  Status Explain(const Status& error) const {
    if (error.code() == StatusCode::kDeadlineExceeded && !program_.infeed.empty() && !slot_full_ &&
        state_.infeed_queue.empty()) {
      return DeadlineExceeded(program_.module_name + " waited for infeed value " + std::to_string(infeed_values_) +
                              " but the infeed queue is empty (TransferToInfeed queues one value per infeed the "
                              "program runs): " + error.message());
    }
    return error;
  }

  DeviceState& state_;
  const compiler::Program& program_;
  uint64_t infeed_base_, outfeed_base_;
  bool slot_full_ = false;  // the infeed slot holds a value the program has not taken yet: in_slot_
  std::vector<hlo::Literal> in_slot_;
  uint64_t infeed_values_ = 0, outfeed_values_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// DeviceRun: one device's part of an execution, shared by LoadedExecutable::Execute and
// ReplicatedExecutable::Execute. Create checks the arguments and allocates what the run writes;
// RunOnDevices launches the runs and waits for them together; TakeResult hands the outputs over.

class DeviceRun {
 public:
  // `name` prefixes the run's errors ("replica 1 (TPU:1): "; empty for a single execution).
  static StatusOr<std::unique_ptr<DeviceRun>> Create(const LoadedExecutable& executable,
                                                     const std::vector<const Buffer*>& arguments, std::string name) {
    std::unique_ptr<DeviceRun> run(new DeviceRun(executable, arguments, std::move(name)));
    Status prepared = run->Prepare();
    if (!prepared.ok()) return Status(prepared.code(), run->name_ + prepared.message());
    return run;
  }

  const std::string& name() const { return name_; }
  const std::string& module_name() const { return program_.module_name; }
  Driver& driver() { return state_->driver; }
  std::mutex& board_mutex() { return state_->mutex; }
  bool running() const { return running_; }
  // Feed values may be waiting to move: serve the device again before sleeping.
  bool wants_service() const { return serve_; }
  uint64_t irq_line() const { return uint64_t{1} << state_->driver.core(); }
  void set_profile(std::shared_ptr<const ExecutionProfile> profile) { result_.profile = std::move(profile); }
  uint32_t board_core() const { return state_->driver.core(); }
  uint64_t receive_base() const { return receive_ ? receive_->first_line() : 0; }
  // Patches what differs between the devices of an execution (compiler::PlaceOnDevice).
  Status Place(const compiler::DevicePlacement& placement) {
    Status placed = compiler::PlaceOnDevice(program_, placement, &code_);
    if (!placed.ok()) return Status(placed.code(), name_ + placed.message());
    return OkStatus();
  }

  // The rest runs with the board lock held (TakeResult excepted).

  // Loads the code and readies the semaphores. Every device of an execution is loaded before any is
  // launched: a running peer may post this core's semaphores (RDMA), and the clearing must not lose that.
  Status Load() {
    start_ = state_->driver.transport().Cycles();
    TPU_RETURN_IF_ERROR(state_->driver.LoadProgram(code_));
    feed_->Prepare();
    return OkStatus();
  }

  // Rings the doorbell; `first` of an execution's devices pays the host link's launch latency for all.
  Status Launch(bool first) {
    Driver& driver = state_->driver;
    TPU_RETURN_IF_ERROR(driver.Launch(0, first));
    TPU_LOG(INFO) << "Execute " << program_.module_name << " on " << device_->name() << ": " << code_.size()
                  << " instruction words";
    running_ = true;
    serve_ = feeds_;  // the first infeed value goes in at once
    return OkStatus();
  }

  // Handles what the device has to say, if anything: an interrupt on its line, feed values to move.
  // Returns the run's error when it ended with one.
  Status Poll(uint64_t timeout_cycles) {
    Driver& driver = state_->driver;
    if (driver.transport().WaitForInterruptOn(irq_line(), 0)) {
      StatusOr<RunEvent> event = driver.WaitForRunEvent(timeout_cycles);  // pending: returns at once
      if (!event.ok() || *event == RunEvent::kCompleted) return End(event.status());
      serve_ = feeds_;
    }
    if (!serve_) return OkStatus();
    StatusOr<bool> moved = feed_->Serve();
    if (!moved.ok()) return End(moved.status());
    // Until a pass moves nothing: a post that came during a host transfer raised no interrupt (the driver
    // keeps the core's interrupts while it waits for its transfer), only the semaphores show it.
    serve_ = *moved;
    // For the same reason a core that stopped meanwhile left its line low: its driver holds the completion.
    if (!serve_ && !driver.CoreBusy()) return End(driver.WaitForCompletion(timeout_cycles));
    return OkStatus();
  }

  // The program stopped (`run`: how) or is given up: its counters, the feeds' last moves.
  Status End(const Status& run) {
    Driver& driver = state_->driver;
    running_ = serve_ = false;
    result_.counters = driver.ReadCounters();
    const Status status = feeds_ ? feed_->Finish(run) : run;
    result_.elapsed_cycles = driver.transport().Cycles() - start_;
    result_.infeed_values = feed_->infeed_values();
    result_.outfeed_values = feed_->outfeed_values();
    return status;
  }

  // After a successful run: the aliased arguments' regions now hold the outputs (donation).
  ExecuteResult TakeResult() {
    for (size_t i = 0; i < program_.outputs.size(); ++i) {
      const int32_t parameter = AliasOf(i);
      if (parameter < 0) continue;
      const Buffer& donated = *arguments_[parameter];
      result_.outputs[i] = std::make_unique<Buffer>(state_, device_, program_.outputs[i], std::move(donated.region_));
      donated.donated_to_ = program_.module_name;
    }
    TPU_LOG(INFO) << "Execute " << program_.module_name << " on " << device_->name()
                  << " done: cycles=" << result_.counters.cycles
                  << " mxu_busy_cycles=" << result_.counters.mxu_busy_cycles
                  << " instructions=" << result_.counters.instructions;
    return std::move(result_);
  }

 private:
  DeviceRun(const LoadedExecutable& executable, const std::vector<const Buffer*>& arguments, std::string name)
      : state_(executable.state_),
        device_(executable.device_),
        program_(executable.program_),
        constants_(executable.constants_),
        arguments_(arguments),
        name_(std::move(name)),
        feeds_(!program_.infeed.empty() || !program_.outfeed.empty()) {}

  int32_t AliasOf(size_t output) const {
    return program_.output_aliases.empty() ? -1 : program_.output_aliases[output];
  }

  // Checks the arguments, allocates the outputs, the temps and the feed slots, relocates the code.
  Status Prepare() {
    const compiler::Program& program = program_;
    if (arguments_.size() != program.parameters.size()) {
      return InvalidArgument("executable " + program.module_name + " takes " +
                             std::to_string(program.parameters.size()) + " arguments, got " +
                             std::to_string(arguments_.size()));
    }
    std::vector<uint64_t> parameter_bases;
    for (size_t i = 0; i < arguments_.size(); ++i) {
      const Buffer* argument = arguments_[i];
      if (argument == nullptr) return InvalidArgument("argument " + std::to_string(i) + " is null");
      if (Status usable = argument->CheckNotDonated(); !usable.ok()) {
        return Status(usable.code(),
                      "argument " + std::to_string(i) + " of " + program.module_name + ": " + usable.message());
      }
      const hlo::Shape& expected = program.parameters[i].shape;
      if (argument->shape() != expected) {
        return InvalidArgument("argument " + std::to_string(i) + " of " + program.module_name + ": expected shape " +
                               ShapeText(expected) + ", got " + ShapeText(argument->shape()));
      }
      if (!(argument->layout() == program.parameters[i])) {
        return InvalidArgument("argument " + std::to_string(i) + " of " + program.module_name +
                               " has a device layout of another configuration");
      }
      if (&argument->device() != device_) {
        return InvalidArgument("argument " + std::to_string(i) + " lives on " + argument->device().name() +
                               ", the executable on " + device_->name());
      }
      parameter_bases.push_back(argument->hbm_line());
    }

    // Outputs: aliased ones are written into their parameter's buffer (donated by TakeResult), the others
    // get buffers of their own.
    for (size_t i = 0; i < program.outputs.size(); ++i) {
      const int32_t parameter = AliasOf(i);
      if (parameter < 0) continue;
      for (size_t j = 0; j < arguments_.size(); ++j) {
        if (j != static_cast<size_t>(parameter) && arguments_[j] == arguments_[parameter]) {
          return InvalidArgument("argument " + std::to_string(parameter) + " of " + program.module_name +
                                 " is donated to output " + std::to_string(i) +
                                 " (input_output_alias) and may not also be passed as argument " + std::to_string(j));
        }
      }
    }
    result_.outputs.resize(program.outputs.size());
    std::vector<uint64_t> output_bases(program.outputs.size(), 0);
    for (size_t i = 0; i < program.outputs.size(); ++i) {
      const int32_t parameter = AliasOf(i);
      if (parameter >= 0) {
        output_bases[i] = parameter_bases[parameter];
        continue;
      }
      const compiler::DeviceLayout& layout = program.outputs[i];
      TPU_ASSIGN_OR_RETURN(std::unique_ptr<HbmRegion> region, state_->Allocate(state_, layout.lines));
      output_bases[i] = region->first_line();
      result_.outputs[i] = std::make_unique<Buffer>(state_, device_, layout, std::move(region));
    }
    uint64_t temp_base = 0;
    if (program.temp_lines > 0) {
      TPU_ASSIGN_OR_RETURN(temp_, state_->Allocate(state_, program.temp_lines));
      temp_base = temp_->first_line();
    }
    std::vector<uint64_t> constant_bases;
    for (const auto& region : constants_) constant_bases.push_back(region->first_line());
    if (!program.infeed.empty()) {
      TPU_ASSIGN_OR_RETURN(infeed_slot_, state_->Allocate(state_, compiler::FeedLines(program.infeed)));
    }
    if (!program.outfeed.empty()) {
      TPU_ASSIGN_OR_RETURN(outfeed_slot_, state_->Allocate(state_, compiler::FeedLines(program.outfeed)));
    }
    const uint64_t infeed_base = infeed_slot_ ? infeed_slot_->first_line() : 0;
    const uint64_t outfeed_base = outfeed_slot_ ? outfeed_slot_->first_line() : 0;
    if (program.receive_lines > 0) {
      TPU_ASSIGN_OR_RETURN(receive_, state_->Allocate(state_, program.receive_lines));
    }
    feed_.emplace(*state_, program, infeed_base, outfeed_base);
    TPU_ASSIGN_OR_RETURN(code_, compiler::RelocateCode(program, parameter_bases, output_bases, constant_bases,
                                                       temp_base, infeed_base, outfeed_base, receive_base()));
    return OkStatus();
  }

  std::shared_ptr<DeviceState> state_;
  const Device* device_;
  const compiler::Program& program_;
  const std::vector<std::unique_ptr<HbmRegion>>& constants_;
  const std::vector<const Buffer*> arguments_;
  const std::string name_;
  const bool feeds_;  // the program has infeeds or outfeeds
  ExecuteResult result_;
  std::unique_ptr<HbmRegion> temp_, infeed_slot_, outfeed_slot_, receive_;
  std::optional<FeedService> feed_;
  std::vector<uint64_t> code_;
  bool running_ = false;
  bool serve_ = false;
  uint64_t start_ = 0;
};

namespace {

// Loads every run, launches every run, then waits for all of them together: one wait on all their
// interrupt lines, each device's events handled as they come and its feeds served while it runs; a device
// that finishes leaves the others running. All are launched before the first wait because programs that
// meet at a collective need every core running. The first failure stops the others and resets every
// device of the execution (a device waiting for a failed peer would otherwise run on until its watchdog);
// it comes back with the failed run's name. The board lock is held throughout; the caller destroys the
// runs after it is released.
Status RunOnDevices(const std::vector<DeviceRun*>& runs, uint64_t timeout_cycles, const ExecuteOptions& options) {
  std::lock_guard<std::mutex> lock(runs.front()->board_mutex());
  Transport& transport = runs.front()->driver().transport();
  std::shared_ptr<ExecutionProfile> profile;
  if (options.profile) {
    if (runs.size() != 1) return Unimplemented("profiling an execution on " + std::to_string(runs.size()) + " devices");
    profile = std::make_shared<ExecutionProfile>();
    if (!transport.SetProfile(profile.get())) {
      return Unimplemented("the " + transport.name() + " backend cannot profile (it has no issue trace)");
    }
  }
  DeviceRun* failed = nullptr;
  Status status;
  for (DeviceRun* run : runs) {
    if (failed == nullptr && !(status = run->Load()).ok()) failed = run;
  }
  for (DeviceRun* run : runs) {
    if (failed == nullptr && !(status = run->Launch(run == runs.front())).ok()) failed = run;
  }
  const uint64_t start = transport.Cycles();
  auto remaining = [&] {
    const uint64_t elapsed = transport.Cycles() - start;
    return timeout_cycles > elapsed ? timeout_cycles - elapsed : 0;
  };
  while (failed == nullptr) {
    uint64_t lines = 0;
    bool serve = false;
    for (DeviceRun* run : runs) {
      if (!run->running()) continue;
      status = run->Poll(remaining());
      if (!status.ok()) {
        failed = run;
        break;
      }
      if (run->running()) lines |= run->irq_line();
      serve = serve || run->wants_service();
    }
    if (failed != nullptr || lines == 0) break;
    if (remaining() == 0) {
      for (DeviceRun* run : runs) {
        if (!run->running()) continue;
        status = run->End(DeadlineExceeded("TPU program did not complete within " + std::to_string(timeout_cycles) +
                                           " cycles; the device was reset"));
        failed = run;
        break;
      }
      break;
    }
    if (serve) continue;  // every device gets its turn before one is served again
    uint64_t slice = remaining();
    if (options.progress && options.progress_cycles > 0) slice = std::min(slice, options.progress_cycles);
    const uint64_t before = transport.Cycles();
    const bool raised = transport.WaitForInterruptOn(lines, slice);
    if (!raised && transport.Cycles() == before) {
      status = Internal("the " + transport.name() + " transport did not advance time while waiting for an interrupt");
      for (DeviceRun* run : runs) {
        if (run->running()) failed = run;
      }
      break;
    }
    if (options.progress && !raised) options.progress(transport.Cycles() - start);
  }
  if (failed != nullptr) {
    // Stop the others (their feeds give back what they hold), then leave every device usable.
    for (DeviceRun* run : runs) {
      if (run->running()) (void)run->End(Aborted("stopped: another device of the execution failed"));
    }
    for (DeviceRun* run : runs) {
      const Status reset = run->driver().Reset();
      if (!reset.ok()) TPU_LOG(ERROR) << "reset after a failed run: " << reset.ToString();
    }
    status = Status(status.code(), failed->name() + status.message());
    TPU_LOG(ERROR) << "Execute " << failed->module_name() << " failed: " << status.ToString();
  }
  if (profile != nullptr) {
    transport.SetProfile(nullptr);
    runs.front()->set_profile(std::move(profile));
  }
  return status;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Buffer

Status Buffer::CheckNotDonated() const {
  if (region_) return OkStatus();
  return FailedPrecondition("the " + ShapeText(layout_.shape) + " buffer was donated to an execution of " + donated_to_ +
                            " (input_output_alias) and holds no data any more; use that execution's output");
}

StatusOr<std::vector<uint8_t>> Buffer::ToDeviceBytes() const {
  TPU_RETURN_IF_ERROR(CheckNotDonated());
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->driver.CopyFromHbm(static_cast<uint32_t>(hbm_line()), layout_.lines);
}

StatusOr<hlo::Literal> Buffer::ToLiteral() const {
  TPU_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ToDeviceBytes());
  return compiler::FromDeviceBytes(bytes.data(), layout_);
}

// ---------------------------------------------------------------------------------------------------------
// LoadedExecutable

const DeviceInfo& LoadedExecutable::device_info() const { return state_->info; }

StatusOr<ExecuteResult> LoadedExecutable::Execute(const std::vector<const Buffer*>& arguments,
                                                  const ExecuteOptions& options) {
  if (program_.replicas * program_.partitions != 1 && !program_.device_patches.empty()) {
    return InvalidArgument("executable " + name() + " was compiled for " +
                           std::to_string(program_.replicas * program_.partitions) +
                           " devices; run it on all of them (Client::CompileReplicated)");
  }
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<DeviceRun> run, DeviceRun::Create(*this, arguments, ""));
  TPU_RETURN_IF_ERROR(run->Place({0, {run->board_core()}, {run->receive_base()}}));
  TPU_RETURN_IF_ERROR(RunOnDevices({run.get()}, timeout_cycles_, options));
  return run->TakeResult();
}

// ---------------------------------------------------------------------------------------------------------
// ReplicatedExecutable

std::string ReplicatedExecutable::DeviceName(size_t i) const {
  const int64_t replica = grid_.replica_of(static_cast<int64_t>(i));
  const int64_t partition = grid_.partition_of(static_cast<int64_t>(i));
  std::string name;
  if (grid_.partitions == 1) {
    name = "replica " + std::to_string(replica);
  } else if (grid_.replicas == 1) {
    name = "partition " + std::to_string(partition);
  } else {
    name = "replica " + std::to_string(replica) + " partition " + std::to_string(partition);
  }
  return name + " (" + device(i).name() + ")";
}

StatusOr<std::vector<ExecuteResult>> ReplicatedExecutable::Execute(
    const std::vector<std::vector<const Buffer*>>& arguments, const ExecuteOptions& options) {
  if (arguments.size() != executables_.size()) {
    return InvalidArgument("executable " + name() + " runs on " + std::to_string(executables_.size()) +
                           " devices and takes one argument list per device, got " + std::to_string(arguments.size()));
  }
  // Declared before the board lock is taken (in RunOnDevices): their regions are freed without it.
  std::vector<std::unique_ptr<DeviceRun>> runs;
  std::vector<DeviceRun*> pointers;
  for (size_t i = 0; i < executables_.size(); ++i) {
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<DeviceRun> run,
                         DeviceRun::Create(*executables_[i], arguments[i], DeviceName(i) + ": "));
    pointers.push_back(run.get());
    runs.push_back(std::move(run));
  }
  // Every device learns where its peers are: their cores and receive regions.
  compiler::DevicePlacement placement;
  for (const DeviceRun* run : pointers) {
    placement.cores.push_back(run->board_core());
    placement.receive_bases.push_back(run->receive_base());
  }
  for (size_t i = 0; i < pointers.size(); ++i) {
    placement.position = static_cast<uint32_t>(i);
    TPU_RETURN_IF_ERROR(pointers[i]->Place(placement));
  }
  TPU_RETURN_IF_ERROR(RunOnDevices(pointers, executables_.front()->timeout_cycles_, options));
  std::vector<ExecuteResult> results;
  for (auto& run : runs) results.push_back(run->TakeResult());
  return results;
}

// ---------------------------------------------------------------------------------------------------------
// Client

StatusOr<std::unique_ptr<Client>> Client::Create(const std::string& backend, const std::string& config,
                                                 const ClientOptions& options) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport, CreateTransport(backend, config, options));
  Transport& reference = *transport;
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<Client> client, CreateWithTransport(reference, options));
  client->states_.front()->board->owned_transport = std::move(transport);
  client->backend_ = backend;
  return client;
}

StatusOr<std::unique_ptr<Client>> Client::CreateWithTransport(Transport& transport, const ClientOptions& options) {
  std::unique_ptr<Client> client(new Client());
  client->backend_ = transport.name();
  client->options_ = options;
  auto board = std::make_shared<BoardState>();
  for (uint32_t core = 0; core < transport.Cores(); ++core) {
    auto state = std::make_shared<DeviceState>(board, transport, core);
    TPU_ASSIGN_OR_RETURN(state->info, state->driver.Discover());
    TPU_RETURN_IF_ERROR(state->driver.Reset());
    TPU_RETURN_IF_ERROR(state->driver.SetWatchdogLimit(options.watchdog_limit_cycles));
    state->driver.set_host_link(options.host_link);
    state->allocator = std::make_unique<HbmAllocator>(state->info.hbm_lines, state->info.line_bytes);
    Device device;
    device.id = static_cast<int>(core);
    device.core = static_cast<int>(core);
    device.chip = static_cast<int>(core / transport.CoresPerChip());
    device.worker = 0;
    device.kind = "tpusim " + std::to_string(state->info.lanes) + "x" + std::to_string(state->info.lanes);
    client->devices_.push_back(device);
    client->states_.push_back(std::move(state));
  }
  const DeviceState& state = *client->states_.front();
  TPU_LOG(INFO) << "tpusim " << transport.name() << " backend: " << ToString(state.info);
  TPU_LOG(INFO) << "Num TPU Cores: " << client->devices_.size() << ", Num TPU Workers: 1, Num TPU Cores Per Worker: "
                << client->devices_.size();
  for (const Device& device : client->devices_) {
    TPU_LOG(INFO) << "Available Device: " << device.full_name() << " " << device.ToString()
                  << ", HBM " << HumanReadableBytes(client->states_[device.id]->allocator->limit_bytes());
  }
  return client;
}

Client::~Client() = default;

Status Client::TransferToInfeed(std::vector<hlo::Literal> elements, int device) {
  TPU_RETURN_IF_ERROR(GetDevice(device).status());
  for (const hlo::Literal& element : elements) {
    TPU_RETURN_IF_ERROR(hlo::CheckTpuInfeedTypes(element.shape()));
    TPU_RETURN_IF_ERROR(CheckBufferShape(element.shape()));
  }
  DeviceState& state = *states_[device];
  std::lock_guard<std::mutex> lock(state.mutex);
  state.infeed_queue.push_back(std::move(elements));
  return OkStatus();
}

StatusOr<std::vector<hlo::Literal>> Client::TransferFromOutfeed(int device) {
  TPU_RETURN_IF_ERROR(GetDevice(device).status());
  DeviceState& state = *states_[device];
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.outfeed_queue.empty()) return NotFound("the outfeed queue of TPU:" + std::to_string(device) + " is empty");
  std::vector<hlo::Literal> value = std::move(state.outfeed_queue.front());
  state.outfeed_queue.pop_front();
  return value;
}

size_t Client::InfeedQueueSize(int device) const {
  if (!GetDevice(device).ok()) return 0;
  std::lock_guard<std::mutex> lock(states_[device]->mutex);
  return states_[device]->infeed_queue.size();
}

size_t Client::OutfeedQueueSize(int device) const {
  if (!GetDevice(device).ok()) return 0;
  std::lock_guard<std::mutex> lock(states_[device]->mutex);
  return states_[device]->outfeed_queue.size();
}

uint64_t Client::DeviceCycles() const {
  std::lock_guard<std::mutex> lock(states_.front()->mutex);
  return states_.front()->driver.transport().Cycles();
}

const DeviceInfo& Client::device_info() const { return states_.front()->info; }
Driver& Client::driver(int device) { return states_.at(device)->driver; }
uint64_t Client::hbm_used_bytes(int device) const {
  std::lock_guard<std::mutex> lock(states_.at(device)->mutex);
  return states_.at(device)->allocator->used_bytes();
}
uint64_t Client::hbm_limit_bytes(int device) const { return states_.at(device)->allocator->limit_bytes(); }

StatusOr<const Device*> Client::GetDevice(int device) const {
  if (device < 0 || device >= static_cast<int>(devices_.size())) {
    return InvalidArgument("no device TPU:" + std::to_string(device) + " (the client has " +
                           std::to_string(devices_.size()) + ")");
  }
  return &devices_[device];
}

StatusOr<std::unique_ptr<Buffer>> Client::CreateUninitializedBuffer(const hlo::Shape& shape, int device) {
  TPU_ASSIGN_OR_RETURN(const Device* target, GetDevice(device));
  TPU_RETURN_IF_ERROR(CheckBufferShape(shape));
  // Sized in 64 bits before the layout: a shape of more than 2^32 lines must fail as out of memory with
  // its true size, not wrap around in the layout's 32-bit line count.
  const std::shared_ptr<DeviceState>& state = states_[device];
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<HbmRegion> region,
                       state->Allocate(state, compiler::DeviceLines(shape, state->info.lanes)));
  compiler::DeviceLayout layout = compiler::MakeDeviceLayout(shape, state->info.lanes);
  return std::make_unique<Buffer>(state, target, std::move(layout), std::move(region));
}

StatusOr<std::unique_ptr<Buffer>> Client::BufferFromHostLiteral(const hlo::Literal& literal, int device) {
  TPU_RETURN_IF_ERROR(compiler::CheckDeviceValues(literal));
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer, CreateUninitializedBuffer(literal.shape(), device));
  const std::vector<uint8_t> bytes = compiler::ToDeviceBytes(literal, buffer->layout());
  DeviceState& state = *states_[device];
  std::lock_guard<std::mutex> lock(state.mutex);
  TPU_RETURN_IF_ERROR(state.driver.CopyToHbm(bytes, static_cast<uint32_t>(buffer->hbm_line())));
  return buffer;
}

StatusOr<std::unique_ptr<LoadedExecutable>> Client::Compile(const std::string& hlo_text, int device) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(hlo_text));
  TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
  TPU_ASSIGN_OR_RETURN(compiler::Program program, CompileProgram(std::move(module), device));
  return Load(std::move(program), device);
}

StatusOr<std::unique_ptr<LoadedExecutable>> Client::Compile(const hlo::HloModule& module, int device) {
  TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(module));
  // The pass pipeline rewrites the module in place: compile a copy of the caller's.
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> copy, hlo::CloneModule(module));
  TPU_ASSIGN_OR_RETURN(compiler::Program program, CompileProgram(std::move(copy), device));
  return Load(std::move(program), device);
}

StatusOr<compiler::Program> Client::CompileProgram(std::unique_ptr<hlo::HloModule> module, int device,
                                                   int64_t replica_count) {
  TPU_RETURN_IF_ERROR(GetDevice(device).status());
  const DeviceInfo& info = states_[device]->info;
  compiler::CompileModuleOptions options;
  options.codegen.lanes = info.lanes;
  options.codegen.vmem_lines = info.vmem_lines;
  options.codegen.imem_words = info.imem_words;
  options.codegen.hbm_lines = info.hbm_lines;
  options.codegen.dot_passes = options_.dot_passes;
  options.codegen.replica_count = replica_count;
  options.dump_dir = options_.compile_dump_dir;
  compiler::CompileModuleReport report;
  StatusOr<compiler::Program> program = compiler::CompileModule(module.get(), options, &report);
  if (!program.ok()) {
    TPU_LOG(ERROR) << "Compiling " << module->name() << ": " << program.status().ToString();
    return program.status();
  }
  TPU_LOG(INFO) << "Compiled " << module->name() << " in " << report.total_ms << " ms: " << program->code.size()
                << " instruction words, " << program->temp_lines << " temp lines, HBM "
                << HumanReadableBytes(report.codegen.hbm_lines * compiler::LineBytes(program->lanes))
                << ", " << report.codegen.aliased_outputs << " outputs aliased to parameters, dot passes: "
                << report.codegen.dot_precision;
  return program;
}

StatusOr<std::unique_ptr<ReplicatedExecutable>> Client::CompileReplicated(const std::string& hlo_text,
                                                                          const std::vector<int>& devices) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> module, hlo::ParseHloModule(hlo_text));
  TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(*module));
  return CompileReplicatedOwned(std::move(module), devices);
}

StatusOr<std::unique_ptr<ReplicatedExecutable>> Client::CompileReplicated(const hlo::HloModule& module,
                                                                          const std::vector<int>& devices) {
  TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(module));
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> copy, hlo::CloneModule(module));
  return CompileReplicatedOwned(std::move(copy), devices);
}

StatusOr<std::unique_ptr<ReplicatedExecutable>> Client::CompileReplicatedOwned(std::unique_ptr<hlo::HloModule> module,
                                                                               std::vector<int> devices) {
  TPU_ASSIGN_OR_RETURN(hlo::DeviceGrid grid, hlo::ModuleDeviceGrid(*module));
  const std::string grid_text = std::to_string(grid.devices()) + " devices (replica_count=" +
                                std::to_string(grid.replicas) + " x num_partitions=" +
                                std::to_string(grid.partitions) + ")";
  if (devices.empty()) {
    if (grid.devices() > static_cast<int64_t>(devices_.size())) {
      return InvalidArgument("module " + module->name() + " runs on " + grid_text + ", the client has " +
                             std::to_string(devices_.size()));
    }
    devices = RingOrder(devices_, static_cast<size_t>(grid.devices()));
  } else if (grid.devices() == 1) {
    grid.replicas = static_cast<int64_t>(devices.size());  // no grid in the header: one replica per device
  } else if (grid.devices() != static_cast<int64_t>(devices.size())) {
    return InvalidArgument("module " + module->name() + " runs on " + grid_text + ", " +
                           std::to_string(devices.size()) + " devices were given");
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    TPU_RETURN_IF_ERROR(GetDevice(devices[i]).status());
    for (size_t j = 0; j < i; ++j) {
      if (devices[j] == devices[i]) {
        return InvalidArgument("device TPU:" + std::to_string(devices[i]) + " is listed twice (positions " +
                               std::to_string(j) + " and " + std::to_string(i) + ")");
      }
    }
  }
  const std::string name = module->name();
  TPU_ASSIGN_OR_RETURN(compiler::Program program,
                       CompileProgram(std::move(module), devices.front(), grid.replicas));
  std::vector<std::unique_ptr<LoadedExecutable>> executables;
  std::string loaded;
  for (int device : devices) {
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<LoadedExecutable> executable, Load(program, device));
    executables.push_back(std::move(executable));
    loaded += (loaded.empty() ? "" : ", ") + devices_[device].name();
  }
  TPU_LOG(INFO) << "Loaded " << name << " on " << loaded << " (" << grid.replicas << " replicas x "
                << grid.partitions << " partitions)";
  return std::make_unique<ReplicatedExecutable>(grid, std::move(executables));
}

StatusOr<std::unique_ptr<LoadedExecutable>> Client::Load(compiler::Program program, int device) {
  TPU_ASSIGN_OR_RETURN(const Device* target, GetDevice(device));
  const std::shared_ptr<DeviceState>& state = states_[device];
  if (program.lanes != state->info.lanes) {
    return InvalidArgument("program " + program.module_name + " was compiled for " + std::to_string(program.lanes) +
                           " lanes, the device has " + std::to_string(state->info.lanes));
  }
  TPU_RETURN_IF_ERROR(compiler::ValidateProgram(program));
  if (program.code.size() > state->info.imem_words) {
    return ResourceExhausted("program " + program.module_name + " has " + std::to_string(program.code.size()) +
                             " instruction words; IMEM holds " + std::to_string(state->info.imem_words));
  }
  std::vector<std::unique_ptr<HbmRegion>> constants;
  for (size_t i = 0; i < program.constants.size(); ++i) {
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<HbmRegion> region, state->Allocate(state, program.constants[i].lines));
    std::lock_guard<std::mutex> lock(state->mutex);
    TPU_RETURN_IF_ERROR(state->driver.CopyToHbm(program.constant_bytes[i], static_cast<uint32_t>(region->first_line())));
    constants.push_back(std::move(region));
  }
  return std::make_unique<LoadedExecutable>(state, target, std::move(program), std::move(constants),
                                            options_.execute_timeout_cycles);
}

Status Client::ResetDevice() {
  // The seeds' "stop/start the TPU": every core of the board.
  for (const auto& state : states_) {
    std::lock_guard<std::mutex> lock(state->mutex);
    TPU_RETURN_IF_ERROR(state->driver.Reset());
    TPU_RETURN_IF_ERROR(state->driver.SetWatchdogLimit(options_.watchdog_limit_cycles));
  }
  return OkStatus();
}

}  // namespace tpu::runtime
