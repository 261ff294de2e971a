// Test helper for lowerings that must be bit-exact: a module is compiled, checked by the sync checker,
// run on the reference model (and the verilated chip when the build has it) through the runtime and
// compared word for word with the HLO interpreter; the padded lanes of every output must be +0. The
// run-and-compare steps also serve tests that compile and make arguments their own way.
// For GoogleTest programs linked with tpusim_runtime, tpusim_codegen and tpusim_interpreter.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/sync_checker.h"
#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "sw/runtime/client.h"
#include "sw/runtime/transport_factory.h"
#include "tpu_config.h"

namespace tpu::compiler::device_test {

// The options of this build's configuration; `vmem_lines` below the device's gives narrower windows.
inline CompileOptions DeviceOptions(uint32_t vmem_lines = cfg::kVmemLines) {
  CompileOptions options;
  options.lanes = cfg::kLanes;
  options.vmem_lines = vmem_lines;
  options.imem_words = cfg::kImemWords;
  return options;
}

// The reference model, and the verilated chip when this build has it (its units run concurrently, so a
// missing SYNC shows there). Never destroyed, the list no more than the clients in it: a list freed at
// exit would leave them unreachable, a leak.
inline const std::vector<runtime::Client*>& Backends() {
  static const std::vector<runtime::Client*>* const clients = [] {
    auto* made = new std::vector<runtime::Client*>{runtime::Client::Create("model", cfg::kName).value().release()};
    made->push_back(runtime::Client::Create("rtl", cfg::kName).value().release());
    return made;
  }();
  return *clients;
}

// Distinct random words that show any misplaced element, with zeros of both signs, infinities and NaNs
// among f32 values.
inline hlo::Literal RandomWords(const hlo::Shape& shape, std::mt19937& rng) {
  hlo::Literal literal(shape);
  std::vector<uint32_t> words(static_cast<size_t>(literal.element_count()));
  std::uniform_real_distribution<float> value(-100.0f, 100.0f);
  for (uint32_t& word : words) {
    float f = value(rng);
    switch (rng() % 16) {
      case 0: f = -0.0f; break;
      case 1: f = INFINITY; break;
      case 2: f = std::nanf(""); break;
      default: break;
    }
    std::memcpy(&word, &f, 4);
    if (shape.element_type == hlo::PrimitiveType::S32) word = static_cast<uint32_t>(rng());
  }
  std::memcpy(literal.untyped_data(), words.data(), literal.size_bytes());
  return literal;
}

// The reference model of the v2 configuration (128 lanes) and the options to compile for it.
inline runtime::Client* V2Model() {
  static runtime::Client* const client = runtime::Client::Create("model", "v2").value().release();
  return client;
}
inline CompileOptions V2Options() {
  CompileOptions options;
  options.lanes = 128;
  options.vmem_lines = 32768;
  options.imem_words = 16384;
  return options;
}

// Checks the outputs of one run against the interpreter's `expected`: word for word, or when `exact` is
// false, f32 elements within max|expected| / 64 + |expected| / 64 (rounding of operations the device
// computes differently, such as a divide as a multiply by the reciprocal); other element types stay
// exact. The padded lanes of every output must be +0. Reports up to five mismatches per output.
inline void ExpectOutputsMatch(const std::vector<std::unique_ptr<runtime::Buffer>>& outputs,
                               const std::vector<hlo::Literal>& expected, bool exact = true) {
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const runtime::Buffer& output = *outputs[i];
    StatusOr<hlo::Literal> device = output.ToLiteral();
    ASSERT_TRUE(device.ok()) << device.status();
    const hlo::Literal& reference = expected[i];
    ASSERT_EQ(device->shape(), reference.shape());
    const bool tolerant = !exact && reference.shape().element_type == hlo::PrimitiveType::F32;
    double max_reference = 0;
    if (tolerant) {
      for (int64_t e = 0; e < reference.element_count(); ++e) {
        max_reference = std::max(max_reference, std::fabs(reference.GetAsDouble(e)));
      }
    }
    const auto* d = static_cast<const uint8_t*>(device->untyped_data());
    const auto* r = static_cast<const uint8_t*>(reference.untyped_data());
    int mismatches = 0;
    for (size_t byte = 0; byte < static_cast<size_t>(reference.size_bytes()) && mismatches < 5; byte += 4) {
      uint32_t dw, rw;
      std::memcpy(&dw, d + byte, 4);
      std::memcpy(&rw, r + byte, 4);
      float df, rf;
      std::memcpy(&df, &dw, 4);
      std::memcpy(&rf, &rw, 4);
      const bool ok = tolerant ? std::fabs(df - rf) <= max_reference / 64 + std::fabs(rf) / 64 : dw == rw;
      if (!ok) {
        ++mismatches;
        ADD_FAILURE() << "output " << i << " element " << byte / 4 << ": device 0x" << std::hex << dw
                      << " interpreter 0x" << rw << std::dec << " (as f32: " << df << ", " << rf << ")";
      }
    }
    StatusOr<std::vector<uint8_t>> bytes = output.ToDeviceBytes();
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    const DeviceLayout& layout = output.layout();
    for (int64_t row = 0; row < layout.rows; ++row) {
      for (int64_t c = layout.cols; c < layout.padded_cols; ++c) {
        uint32_t word;
        std::memcpy(&word, &(*bytes)[static_cast<size_t>((row * layout.padded_cols + c) * 4)], 4);
        ASSERT_EQ(word, 0u) << "output " << i << " row " << row << " padded column " << c;
      }
    }
  }
}

// Runs `executable` (loaded on `client`) with `arguments` and checks its outputs as ExpectOutputsMatch.
inline void ExpectRunMatches(runtime::Client& client, runtime::LoadedExecutable& executable,
                             const std::vector<hlo::Literal>& arguments, const std::vector<hlo::Literal>& expected,
                             bool exact = true) {
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  std::vector<const runtime::Buffer*> pointers;
  for (const hlo::Literal& argument : arguments) {
    StatusOr<std::unique_ptr<runtime::Buffer>> buffer = client.BufferFromHostLiteral(argument);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    pointers.push_back(buffer->get());
    buffers.push_back(std::move(buffer).value());
  }
  StatusOr<runtime::ExecuteResult> result = executable.Execute(pointers);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectOutputsMatch(result->outputs, expected, exact);
}

// Compiles `text` with `options`, checks its unit synchronization and runs it on `clients` (default:
// Backends(), which must run programs compiled with `options`) with RandomWords arguments.
inline void ExpectBitExactOnDevices(const std::string& text, const CompileOptions& options = DeviceOptions(),
                                    const std::vector<runtime::Client*>& clients = Backends()) {
  SCOPED_TRACE(text);
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<Program> program = Compile(**module, options);
  ASSERT_TRUE(program.ok()) << program.status();
  Status synchronized = CheckUnitSynchronization(program->code, SyncCheckOptions{options.lanes});
  ASSERT_TRUE(synchronized.ok()) << synchronized;

  std::mt19937 rng(7);
  std::vector<hlo::Literal> arguments;
  const hlo::HloComputation& entry = *(*module)->entry_computation();
  for (int64_t i = 0; i < entry.num_parameters(); ++i) {
    arguments.push_back(RandomWords(entry.parameter_instruction(i)->shape(), rng));
  }
  StatusOr<std::vector<hlo::Literal>> expected = Interpret(**module, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status();

  for (runtime::Client* client : clients) {
    SCOPED_TRACE(client->backend());
    StatusOr<std::unique_ptr<runtime::LoadedExecutable>> executable = client->Load(*program);
    ASSERT_TRUE(executable.ok()) << executable.status();
    ExpectRunMatches(*client, **executable, arguments, *expected);
  }
}

}  // namespace tpu::compiler::device_test
