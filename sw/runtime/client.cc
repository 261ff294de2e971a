#include "sw/runtime/client.h"

#include <deque>
#include <utility>

#include "compiler/codegen/codegen.h"
#include "compiler/driver/compile.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
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
  return name() + " (core " + std::to_string(core) + ", worker " + std::to_string(worker) + ", " + kind + ")";
}

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
                         " are not supported yet (only f32, bf16, s8, s16, s32, s64, u8, u16, u32 and pred): " + ShapeText(shape));
  }
  return OkStatus();
}

std::string ShapesText(const std::vector<hlo::Literal>& elements) {
  std::string text;
  for (const hlo::Literal& element : elements) text += (text.empty() ? "" : ", ") + element.shape().ToString();
  return "(" + text + ")";
}

// Runs a launched program that has infeeds or outfeeds to its end: between the device's semaphore posts
// the host writes the next queued infeed value into the infeed slot when the program has freed it, and
// moves a sent outfeed value from the outfeed slot into the outfeed queue (docs/csr.md, "Host semaphores").
class FeedService {
 public:
  FeedService(DeviceState& state, const compiler::Program& program, uint64_t infeed_base, uint64_t outfeed_base)
      : state_(state), program_(program), infeed_base_(infeed_base), outfeed_base_(outfeed_base) {}

  // Before the doorbell: no semaphore left from an earlier run; the outfeed slot is free.
  void Prepare() {
    state_.driver.ClearSemaphores();
    if (!program_.outfeed.empty()) state_.driver.PostSemaphore(csr::SEM_OUTFEED_FREE);
  }

  Status Run(uint64_t timeout_cycles, const Driver::Progress& progress, uint64_t progress_cycles) {
    Driver& driver = state_.driver;
    const uint64_t start = driver.transport().Cycles();
    while (true) {
      if (Status served = Service(/*running=*/true); !served.ok()) {
        Unfeed();
        return served;
      }
      const uint64_t elapsed = driver.transport().Cycles() - start;
      StatusOr<RunEvent> event = driver.WaitForRunEvent(timeout_cycles > elapsed ? timeout_cycles - elapsed : 0,
                                                         progress, progress_cycles);
      if (!event.ok() || *event == RunEvent::kCompleted) {
        // The last posts first (a value taken, the last outfeed value), then what the program never took.
        const Status served = Service(/*running=*/false);
        Unfeed();
        if (!event.ok()) return Explain(event.status());
        return served;
      }
    }
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

  Status Service(bool running) {
    Driver& driver = state_.driver;
    const std::vector<uint32_t> semaphores = driver.ReadSemaphores();
    if (semaphores[csr::SEM_INFEED_FREE] > 0) {
      driver.TakeSemaphore(csr::SEM_INFEED_FREE);
      slot_full_ = false;
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
    }
    return OkStatus();
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
  const compiler::Program& program = program_;
  if (arguments.size() != program.parameters.size()) {
    return InvalidArgument("executable " + program.module_name + " takes " +
                           std::to_string(program.parameters.size()) + " arguments, got " +
                           std::to_string(arguments.size()));
  }
  std::vector<uint64_t> parameter_bases;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Buffer* argument = arguments[i];
    if (argument == nullptr) return InvalidArgument("argument " + std::to_string(i) + " is null");
    if (Status usable = argument->CheckNotDonated(); !usable.ok()) {
      return Status(usable.code(), "argument " + std::to_string(i) + " of " + program.module_name + ": " + usable.message());
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

  // Outputs: aliased ones are written into their parameter's buffer (donated below), the others get
  // buffers of their own.
  auto alias_of = [&](size_t output) { return program.output_aliases.empty() ? -1 : program.output_aliases[output]; };
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const int32_t parameter = alias_of(i);
    if (parameter < 0) continue;
    for (size_t j = 0; j < arguments.size(); ++j) {
      if (j != static_cast<size_t>(parameter) && arguments[j] == arguments[parameter]) {
        return InvalidArgument("argument " + std::to_string(parameter) + " of " + program.module_name +
                               " is donated to output " + std::to_string(i) +
                               " (input_output_alias) and may not also be passed as argument " + std::to_string(j));
      }
    }
  }
  ExecuteResult result;
  result.outputs.resize(program.outputs.size());
  std::vector<uint64_t> output_bases(program.outputs.size(), 0);
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const int32_t parameter = alias_of(i);
    if (parameter >= 0) {
      output_bases[i] = parameter_bases[parameter];
      continue;
    }
    const compiler::DeviceLayout& layout = program.outputs[i];
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<HbmRegion> region, state_->Allocate(state_, layout.lines));
    output_bases[i] = region->first_line();
    result.outputs[i] = std::make_unique<Buffer>(state_, device_, layout, std::move(region));
  }
  std::unique_ptr<HbmRegion> temp;
  uint64_t temp_base = 0;
  if (program.temp_lines > 0) {
    TPU_ASSIGN_OR_RETURN(temp, state_->Allocate(state_, program.temp_lines));
    temp_base = temp->first_line();
  }
  std::vector<uint64_t> constant_bases;
  for (const auto& region : constants_) constant_bases.push_back(region->first_line());
  // The feed slots.
  std::unique_ptr<HbmRegion> infeed_slot, outfeed_slot;
  if (!program.infeed.empty()) {
    TPU_ASSIGN_OR_RETURN(infeed_slot, state_->Allocate(state_, compiler::FeedLines(program.infeed)));
  }
  if (!program.outfeed.empty()) {
    TPU_ASSIGN_OR_RETURN(outfeed_slot, state_->Allocate(state_, compiler::FeedLines(program.outfeed)));
  }
  const uint64_t infeed_base = infeed_slot ? infeed_slot->first_line() : 0;
  const uint64_t outfeed_base = outfeed_slot ? outfeed_slot->first_line() : 0;

  TPU_ASSIGN_OR_RETURN(std::vector<uint64_t> code,
                       compiler::RelocateCode(program, parameter_bases, output_bases, constant_bases, temp_base,
                                              infeed_base, outfeed_base));

  Status done;
  {
    // The lock must be released before any buffer of `result` is destroyed (HbmRegion takes it to free).
    std::lock_guard<std::mutex> lock(state_->mutex);
    Driver& driver = state_->driver;
    std::shared_ptr<ExecutionProfile> profile;
    if (options.profile) {
      profile = std::make_shared<ExecutionProfile>();
      if (!driver.transport().SetProfile(profile.get())) {
        return Unimplemented("the " + driver.transport().name() + " backend cannot profile (it has no issue trace)");
      }
    }
    const uint64_t start = driver.transport().Cycles();
    const bool feeds = !program.infeed.empty() || !program.outfeed.empty();
    FeedService feed(*state_, program, infeed_base, outfeed_base);
    done = driver.LoadProgram(code);
    if (done.ok() && feeds) feed.Prepare();
    if (done.ok()) done = driver.Launch(0);
    if (done.ok()) {
      TPU_LOG(INFO) << "Execute " << program.module_name << " on " << device_->name() << ": " << code.size()
                    << " instruction words";
      done = feeds ? feed.Run(timeout_cycles_, options.progress, options.progress_cycles)
                   : driver.WaitForCompletion(timeout_cycles_, options.progress, options.progress_cycles);
      result.counters = driver.ReadCounters();
      if (!done.ok() && feeds) {
        // The program may still run, waiting for a feed: stop it, leave the device usable.
        Status reset = driver.Reset();
        if (!reset.ok()) TPU_LOG(ERROR) << "reset after a failed run: " << reset.ToString();
      }
    }
    result.elapsed_cycles = driver.transport().Cycles() - start;
    result.infeed_values = feed.infeed_values();
    result.outfeed_values = feed.outfeed_values();
    if (profile != nullptr) {
      driver.transport().SetProfile(nullptr);
      result.profile = std::move(profile);
    }
  }
  if (!done.ok()) {
    TPU_LOG(ERROR) << "Execute " << program.module_name << " failed: " << done.ToString();
    return done;
  }
  // Donation: the aliased arguments' regions now hold the outputs.
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const int32_t parameter = alias_of(i);
    if (parameter < 0) continue;
    const Buffer& donated = *arguments[parameter];
    result.outputs[i] = std::make_unique<Buffer>(state_, device_, program.outputs[i], std::move(donated.region_));
    donated.donated_to_ = program.module_name;
  }
  TPU_LOG(INFO) << "Execute " << program.module_name << " done: cycles=" << result.counters.cycles
                << " mxu_busy_cycles=" << result.counters.mxu_busy_cycles
                << " instructions=" << result.counters.instructions;
  return result;
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
  return CompileOwned(std::move(module), device);
}

StatusOr<std::unique_ptr<LoadedExecutable>> Client::Compile(const hlo::HloModule& module, int device) {
  TPU_RETURN_IF_ERROR(hlo::VerifyHloModule(module));
  // The pass pipeline rewrites the module in place: compile a copy of the caller's.
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<hlo::HloModule> copy, hlo::CloneModule(module));
  return CompileOwned(std::move(copy), device);
}

StatusOr<std::unique_ptr<LoadedExecutable>> Client::CompileOwned(std::unique_ptr<hlo::HloModule> module, int device) {
  TPU_RETURN_IF_ERROR(GetDevice(device).status());
  const DeviceInfo& info = states_[device]->info;
  compiler::CompileModuleOptions options;
  options.codegen.lanes = info.lanes;
  options.codegen.vmem_lines = info.vmem_lines;
  options.codegen.imem_words = info.imem_words;
  options.codegen.hbm_lines = info.hbm_lines;
  options.codegen.dot_passes = options_.dot_passes;
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
  return Load(std::move(*program), device);
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
