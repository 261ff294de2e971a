// runtime_stress: random sequences of the runtime's API on every device of a board, checking every byte.
//
//   runtime_stress [--ops=100000] [--seed=1] [--backend=model] [--config=tiny] [--chips=0]
//
// Each operation is drawn from the seed: upload a buffer of random bits (any 32-bit pattern, NaN payloads
// too) and random shape to a random device; read one back; free one; execute an elementwise program on
// buffers of its shape (outputs join the live buffers); execute one that donates its first argument
// (the handle must then refuse to read, the output must hold the result); execute with an argument of the
// wrong shape, or the same buffer donated twice (both refused, nothing changed); reset the devices (every
// buffer keeps its bytes). The host keeps what every live buffer must hold and compares whole buffers
// byte for byte at every read, after every reset and at the end; the HBM every device uses must be that
// of its live buffers, and nothing once they are freed. One line of figures:
//   runtime_stress ops=N seed=S backend=B config=C devices=D uploads=.. reads=.. executes=.. donations=..
//   refusals=.. resets=.. corrupted_bytes=0 leaked_bytes=0 host_s=..
// The exit status is 1 when a byte differs, HBM leaks or an operation fails that should not.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "sw/runtime/client.h"

namespace tpu::runtime {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;

std::string Flag(int argc, char** argv, const std::string& name, const std::string& fallback) {
  const std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
  }
  return fallback;
}

// A buffer the host knows the bytes of.
struct Live {
  std::unique_ptr<Buffer> buffer;
  Literal expected;
};

// The shapes programs run on: rows and columns that are and are not multiples of the lanes.
const char* const kExecShapes[] = {"f32[8,8]", "f32[17,130]", "s32[5,9]", "s32[64,3]"};

Shape ParseShape(const std::string& text) {
  const PrimitiveType type = text[0] == 'f' ? PrimitiveType::F32 : PrimitiveType::S32;
  const size_t open = text.find('['), comma = text.find(','), close = text.find(']');
  return Shape::Make(type, {std::stoll(text.substr(open + 1, comma - open - 1)),
                            std::stoll(text.substr(comma + 1, close - comma - 1))});
}

// (a + b), with `donate` in a's buffer (as an optimizer step updates its parameters in place).
std::string AddModule(const std::string& shape, bool donate) {
  const std::string layout = shape + "{1,0}";
  return std::string("HloModule stress_add") + (donate ? ", input_output_alias={ {0}: (0, {}, must-alias) }" : "") +
         "\nENTRY %main (a: " + shape + ", b: " + shape + ") -> (" + shape + ") {\n  %a = " + layout +
         " parameter(0)\n  %b = " + layout + " parameter(1)\n  %sum = " + layout + " add(" + layout + " %a, " +
         layout + " %b)\n  ROOT %out = (" + layout + ") tuple(" + layout + " %sum)\n}\n";
}

// Values whose sums are exact in f32 and never wrap in s32: the device's result must equal the host's.
Literal SmallValues(const Shape& shape, std::mt19937& rng) {
  Literal literal(shape);
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    const int value = static_cast<int>(rng() % 2001) - 1000;
    if (shape.element_type == PrimitiveType::F32) {
      literal.data<float>()[i] = static_cast<float>(value);
    } else {
      literal.data<int32_t>()[i] = value;
    }
  }
  return literal;
}

Literal Sum(const Literal& a, const Literal& b) {
  Literal sum(a.shape());
  for (int64_t i = 0; i < a.element_count(); ++i) {
    if (a.shape().element_type == PrimitiveType::F32) {
      sum.data<float>()[i] = a.data<float>()[i] + b.data<float>()[i];
    } else {
      sum.data<int32_t>()[i] = a.data<int32_t>()[i] + b.data<int32_t>()[i];
    }
  }
  return sum;
}

class Stress {
 public:
  Stress(Client& client, uint64_t seed) : client_(client), rng_(static_cast<uint32_t>(seed)) {
    live_.resize(client.devices().size());
  }

  // Runs `ops` operations; false at the first failure that should not happen (printed).
  bool Run(uint64_t ops) {
    for (uint64_t op = 0; op < ops; ++op) {
      op_ = op;
      const uint32_t kind = rng_() % 100;
      bool ok;
      if (kind < 25) ok = Upload();
      else if (kind < 45) ok = Read();
      else if (kind < 60) ok = Free();
      else if (kind < 82) ok = Execute(false);
      else if (kind < 90) ok = Execute(true);
      else if (kind < 97) ok = Refused();
      else ok = Reset();
      if (!ok || !CheckHbm()) return false;
    }
    return CheckAll("at the end") && FreeAll();
  }

  uint64_t uploads = 0, reads = 0, executes = 0, donations = 0, refusals = 0, resets = 0;
  uint64_t corrupted_bytes = 0, leaked_bytes = 0;

 private:
  bool Fail(const std::string& what) {
    std::fprintf(stderr, "runtime_stress: operation %llu: %s\n", static_cast<unsigned long long>(op_), what.c_str());
    return false;
  }
  int Device() { return static_cast<int>(rng_() % live_.size()); }

  // Compares a buffer with what the host expects; counts the bytes that differ.
  bool Check(const Live& live, const std::string& when) {
    StatusOr<Literal> got = live.buffer->ToLiteral();
    if (!got.ok()) return Fail("reading a buffer back " + when + ": " + got.status().ToString());
    const size_t bytes = live.expected.size_bytes();
    if (got->size_bytes() != bytes) return Fail("a buffer read back with another size " + when);
    uint64_t differ = 0;
    for (size_t i = 0; i < bytes; ++i) differ += got->untyped_data()[i] != live.expected.untyped_data()[i];
    corrupted_bytes += differ;
    if (differ != 0) {
      return Fail(std::to_string(differ) + " of " + std::to_string(bytes) + " bytes differ in a " +
                  live.expected.shape().ToString() + " buffer on TPU:" + std::to_string(live.buffer->device().id) +
                  " " + when);
    }
    return true;
  }
  bool CheckAll(const std::string& when) {
    for (const std::vector<Live>& device : live_) {
      for (const Live& live : device) {
        if (!Check(live, when)) return false;
      }
    }
    return true;
  }
  // Every device's HBM holds its live buffers and the constants of the programs loaded there.
  bool CheckHbm() {
    for (size_t d = 0; d < live_.size(); ++d) {
      uint64_t buffers = 0;
      for (const Live& live : live_[d]) buffers += live.buffer->hbm_lines() * client_.device_info().lanes * 4;
      const uint64_t used = client_.hbm_used_bytes(static_cast<int>(d));
      if (used < buffers) return Fail("TPU:" + std::to_string(d) + " uses less HBM than its live buffers hold");
    }
    return true;
  }

  bool Keep(int device, std::unique_ptr<Buffer> buffer, Literal expected) {
    live_[device].push_back({std::move(buffer), std::move(expected)});
    // A bounded working set: the oldest goes when there are too many.
    if (live_[device].size() > kMaxLive) {
      if (!Check(live_[device].front(), "before it is freed")) return false;
      live_[device].erase(live_[device].begin());
    }
    return true;
  }

  bool Upload() {
    const int device = Device();
    const PrimitiveType type = rng_() % 2 ? PrimitiveType::F32 : PrimitiveType::S32;
    const int64_t rows = 1 + static_cast<int64_t>(rng_() % 40), columns = 1 + static_cast<int64_t>(rng_() % 300);
    const Shape shape = Shape::Make(type, {rows, columns});
    Literal literal(shape);
    for (size_t i = 0; i < literal.size_bytes(); ++i) literal.untyped_data()[i] = static_cast<uint8_t>(rng_());
    StatusOr<std::unique_ptr<Buffer>> buffer = client_.BufferFromHostLiteral(literal, device);
    if (!buffer.ok()) return Fail("upload: " + buffer.status().ToString());
    ++uploads;
    return Keep(device, std::move(buffer).value(), std::move(literal));
  }

  bool Read() {
    const int device = Device();
    if (live_[device].empty()) return true;
    ++reads;
    return Check(live_[device][rng_() % live_[device].size()], "at a read");
  }

  bool Free() {
    const int device = Device();
    if (live_[device].empty()) return true;
    live_[device].erase(live_[device].begin() + static_cast<long>(rng_() % live_[device].size()));
    return true;
  }

  // The program of `shape` on `device` (donating its first argument or not), compiled once.
  StatusOr<LoadedExecutable*> Program(int device, const std::string& shape, bool donate) {
    std::unique_ptr<LoadedExecutable>& slot = programs_[{device, shape + (donate ? " donated" : "")}];
    if (slot == nullptr) {
      TPU_ASSIGN_OR_RETURN(slot, client_.Compile(AddModule(shape, donate), device));
    }
    return slot.get();
  }

  StatusOr<Live> UploadSmall(int device, const Shape& shape) {
    Literal values = SmallValues(shape, rng_);
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<Buffer> buffer, client_.BufferFromHostLiteral(values, device));
    return Live{std::move(buffer), std::move(values)};
  }

  bool Execute(bool donate) {
    const int device = Device();
    const std::string shape_text = kExecShapes[rng_() % (sizeof(kExecShapes) / sizeof(kExecShapes[0]))];
    const Shape shape = ParseShape(shape_text);
    StatusOr<LoadedExecutable*> program = Program(device, shape_text, donate);
    if (!program.ok()) return Fail("compile: " + program.status().ToString());
    StatusOr<Live> a = UploadSmall(device, shape), b = UploadSmall(device, shape);
    if (!a.ok() || !b.ok()) return Fail("upload: " + (a.ok() ? b.status() : a.status()).ToString());
    StatusOr<ExecuteResult> result = (*program)->Execute({a->buffer.get(), b->buffer.get()});
    if (!result.ok()) return Fail("execute: " + result.status().ToString());
    if (result->outputs.size() != 1) return Fail("execute gave " + std::to_string(result->outputs.size()) + " outputs");
    Literal sum = Sum(a->expected, b->expected);
    if (donate) {
      ++donations;
      if (!a->buffer->is_donated()) return Fail("the donated argument still holds its region");
      StatusOr<Literal> refused = a->buffer->ToLiteral();
      if (refused.ok() || refused.status().message().find("donated") == std::string::npos) {
        return Fail("reading a donated buffer was not refused by name");
      }
    } else {
      ++executes;
      if (!Keep(device, std::move(a->buffer), std::move(a->expected))) return false;
    }
    if (!Keep(device, std::move(b->buffer), std::move(b->expected))) return false;
    Live output{std::move(result->outputs[0]), std::move(sum)};
    if (!Check(output, "as an execution's output")) return false;
    return Keep(device, std::move(output.buffer), std::move(output.expected));
  }

  // Executions the runtime must refuse without touching anything: a live buffer of another shape, or one
  // buffer given to a donated parameter and to another one.
  bool Refused() {
    const int device = Device();
    const std::string shape_text = kExecShapes[0];
    const bool twice = rng_() % 2 == 0;
    StatusOr<LoadedExecutable*> program = Program(device, shape_text, twice);
    if (!program.ok()) return Fail("compile: " + program.status().ToString());
    StatusOr<Live> good = UploadSmall(device, ParseShape(shape_text));
    StatusOr<Live> other = UploadSmall(device, ParseShape(kExecShapes[1]));
    if (!good.ok() || !other.ok()) return Fail("upload failed");
    StatusOr<ExecuteResult> result = twice ? (*program)->Execute({good->buffer.get(), good->buffer.get()})
                                           : (*program)->Execute({good->buffer.get(), other->buffer.get()});
    if (result.ok() || result.status().code() != StatusCode::kInvalidArgument) {
      return Fail(std::string(twice ? "a buffer donated and passed again" : "an argument of another shape") +
                  " was not refused: " + result.status().ToString());
    }
    ++refusals;
    if (good->buffer->is_donated()) return Fail("a refused execution donated its argument");
    if (!Keep(device, std::move(good->buffer), std::move(good->expected))) return false;
    return Keep(device, std::move(other->buffer), std::move(other->expected));
  }

  bool Reset() {
    Status reset = client_.ResetDevice();
    if (!reset.ok()) return Fail("reset: " + reset.ToString());
    ++resets;
    return CheckAll("after a reset");
  }

  bool FreeAll() {
    for (std::vector<Live>& device : live_) device.clear();
    programs_.clear();
    for (size_t d = 0; d < live_.size(); ++d) {
      const uint64_t used = client_.hbm_used_bytes(static_cast<int>(d));
      leaked_bytes += used;
      if (used != 0) return Fail("TPU:" + std::to_string(d) + " still uses " + std::to_string(used) + " bytes of HBM");
    }
    return true;
  }

  static constexpr size_t kMaxLive = 48;
  Client& client_;
  std::mt19937 rng_;
  uint64_t op_ = 0;
  std::vector<std::vector<Live>> live_;  // per device
  std::map<std::pair<int, std::string>, std::unique_ptr<LoadedExecutable>> programs_;
};

int Main(int argc, char** argv) {
  const uint64_t ops = std::strtoull(Flag(argc, argv, "ops", "100000").c_str(), nullptr, 10);
  const uint64_t seed = std::strtoull(Flag(argc, argv, "seed", "1").c_str(), nullptr, 10);
  const std::string backend = Flag(argc, argv, "backend", "model");
  const std::string config = Flag(argc, argv, "config", "tiny");
  ClientOptions options;
  options.chips = static_cast<uint32_t>(std::atoi(Flag(argc, argv, "chips", "0").c_str()));
  StatusOr<std::unique_ptr<Client>> client = Client::Create(backend, config, options);
  if (!client.ok()) {
    std::fprintf(stderr, "runtime_stress: %s\n", client.status().ToString().c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  Stress stress(**client, seed);
  const bool ok = stress.Run(ops);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("runtime_stress ops=%llu seed=%llu backend=%s config=%s devices=%zu uploads=%llu reads=%llu "
              "executes=%llu donations=%llu refusals=%llu resets=%llu corrupted_bytes=%llu leaked_bytes=%llu "
              "host_s=%.1f status=%s\n",
              static_cast<unsigned long long>(ops), static_cast<unsigned long long>(seed), backend.c_str(),
              config.c_str(), (*client)->devices().size(), static_cast<unsigned long long>(stress.uploads),
              static_cast<unsigned long long>(stress.reads), static_cast<unsigned long long>(stress.executes),
              static_cast<unsigned long long>(stress.donations), static_cast<unsigned long long>(stress.refusals),
              static_cast<unsigned long long>(stress.resets), static_cast<unsigned long long>(stress.corrupted_bytes),
              static_cast<unsigned long long>(stress.leaked_bytes), seconds, ok ? "ok" : "FAILED");
  if (!ok) {
    std::fprintf(stderr, "runtime_stress: replay with --ops=%llu --seed=%llu --backend=%s --config=%s\n",
                 static_cast<unsigned long long>(ops), static_cast<unsigned long long>(seed), backend.c_str(),
                 config.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace tpu::runtime

int main(int argc, char** argv) { return tpu::runtime::Main(argc, argv); }
