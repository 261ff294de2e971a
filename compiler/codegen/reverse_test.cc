// Row permutations (reverse.cc): reverse over every subset of dimensions of ranks 1-4 and transposes
// that keep the minor dimension, on sizes that are not multiples of the lane count. Each module is
// compiled, checked by the sync checker, run on the reference model (and the verilated chip when this
// build has it) and compared bit for bit with the HLO interpreter; padded lanes must stay +0.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/sync_checker.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "sw/runtime/client.h"
#include "sw/runtime/transport_factory.h"
#include "tpu_config.h"

namespace tpu::compiler {
namespace {

using Dims = std::vector<int64_t>;

CompileOptions DeviceOptions() {
  CompileOptions options;
  options.lanes = cfg::kLanes;
  options.vmem_lines = cfg::kVmemLines;
  options.imem_words = cfg::kImemWords;
  return options;
}

std::vector<runtime::Client*> Backends() {
  static const std::vector<runtime::Client*> clients = [] {
    std::vector<runtime::Client*> made{runtime::Client::Create("model", cfg::kName).value().release()};
    if (runtime::RtlBackendAvailable()) made.push_back(runtime::Client::Create("rtl", cfg::kName).value().release());
    return made;
  }();
  return clients;
}

// Distinct random words: any misplaced element shows.
hlo::Literal RandomArgument(const hlo::Shape& shape, std::mt19937& rng) {
  hlo::Literal literal(shape);
  std::vector<uint32_t> words(static_cast<size_t>(literal.element_count()));
  std::uniform_real_distribution<float> value(-100.0f, 100.0f);
  for (uint32_t& word : words) {
    const float f = value(rng);
    std::memcpy(&word, &f, 4);
  }
  std::memcpy(literal.untyped_data(), words.data(), literal.size_bytes());
  return literal;
}

void ExpectExactOnDevice(const std::string& text) {
  SCOPED_TRACE(text);
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<Program> program = Compile(**module, DeviceOptions());
  ASSERT_TRUE(program.ok()) << program.status();
  Status synchronized = CheckUnitSynchronization(program->code, SyncCheckOptions{cfg::kLanes});
  ASSERT_TRUE(synchronized.ok()) << synchronized;

  std::mt19937 rng(11);
  std::vector<hlo::Literal> arguments;
  const hlo::HloComputation& entry = *(*module)->entry_computation();
  for (int64_t i = 0; i < entry.num_parameters(); ++i) {
    arguments.push_back(RandomArgument(entry.parameter_instruction(i)->shape(), rng));
  }
  StatusOr<std::vector<hlo::Literal>> expected = Interpret(**module, arguments);
  ASSERT_TRUE(expected.ok()) << expected.status();

  for (runtime::Client* client : Backends()) {
    SCOPED_TRACE(client->backend());
    StatusOr<std::unique_ptr<runtime::LoadedExecutable>> executable = client->Load(*program);
    ASSERT_TRUE(executable.ok()) << executable.status();
    std::vector<std::unique_ptr<runtime::Buffer>> buffers;
    std::vector<const runtime::Buffer*> pointers;
    for (const hlo::Literal& argument : arguments) {
      buffers.push_back(client->BufferFromHostLiteral(argument).value());
      pointers.push_back(buffers.back().get());
    }
    StatusOr<runtime::ExecuteResult> result = (*executable)->Execute(pointers);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(result->outputs.size(), expected->size());
    for (size_t i = 0; i < expected->size(); ++i) {
      const hlo::Literal device = result->outputs[i]->ToLiteral().value();
      const hlo::Literal& reference = (*expected)[i];
      ASSERT_EQ(device.shape(), reference.shape());
      ASSERT_EQ(std::memcmp(device.untyped_data(), reference.untyped_data(), reference.size_bytes()), 0)
          << "output " << i;
      const DeviceLayout layout = result->outputs[i]->layout();
      const std::vector<uint8_t> bytes = result->outputs[i]->ToDeviceBytes().value();
      for (int64_t row = 0; row < layout.rows; ++row) {
        for (int64_t c = layout.cols; c < layout.padded_cols; ++c) {
          uint32_t word;
          std::memcpy(&word, &bytes[static_cast<size_t>((row * layout.padded_cols + c) * 4)], 4);
          ASSERT_EQ(word, 0u) << "output " << i << " row " << row << " padded column " << c;
        }
      }
    }
  }
}

std::string ShapeText(const std::string& type, const Dims& dims) {
  std::string text = type + "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

std::string ListText(const Dims& values) {
  std::string text = "{";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? "," : "") + std::to_string(values[i]);
  return text + "}";
}

// One module whose outputs are `op` of parameter x with each attribute list in `variants`.
std::string ModuleOfVariants(const std::string& type, const Dims& in, const std::string& op,
                             const std::vector<Dims>& variants, const std::vector<Dims>& out_dims) {
  const std::string x = ShapeText(type, in);
  std::string body, types, values;
  for (size_t i = 0; i < variants.size(); ++i) {
    const std::string out = ShapeText(type, out_dims[i]);
    const std::string name = "%r" + std::to_string(i);
    body += "  " + name + " = " + out + " " + op + "(" + x + " %x), dimensions=" + ListText(variants[i]) + "\n";
    types += (i ? ", " : "") + out;
    values += std::string(i ? ", " : "") + out + " " + name;
  }
  return "HloModule m\nENTRY %main (x: " + x + ") -> (" + types + ") {\n  %x = " + x + " parameter(0)\n" + body +
         "  ROOT %t = (" + types + ") tuple(" + values + ")\n}\n";
}

// reverse of `in` over every subset of its dimensions, all in one module.
void ExpectEveryReverse(const std::string& type, const Dims& in) {
  std::vector<Dims> subsets, shapes;
  const int rank = static_cast<int>(in.size());
  for (int mask = 0; mask < (1 << rank); ++mask) {
    Dims dims;
    for (int d = 0; d < rank; ++d) {
      if (mask & (1 << d)) dims.push_back(d);
    }
    subsets.push_back(dims);
    shapes.push_back(in);
  }
  ExpectExactOnDevice(ModuleOfVariants(type, in, "reverse", subsets, shapes));
}

TEST(CodegenReverseTest, EverySubsetOfDimensionsOfRanks1And2) {
  ExpectEveryReverse("f32", {13});
  ExpectEveryReverse("f32", {1});
  ExpectEveryReverse("f32", {130});
  ExpectEveryReverse("f32", {7, 11});
  ExpectEveryReverse("s32", {19, 5});
  ExpectEveryReverse("f32", {3, 130});
  ExpectEveryReverse("f32", {45, 9});  // more rows than lanes
}

TEST(CodegenReverseTest, EverySubsetOfDimensionsOfRanks3And4) {
  ExpectEveryReverse("f32", {3, 5, 7});
  ExpectEveryReverse("f32", {2, 1, 9});
  ExpectEveryReverse("f32", {3, 3, 5, 6});  // a convolution kernel (HWIO)
  ExpectEveryReverse("s32", {2, 3, 4, 9});
}

// Transposes that keep the minor dimension: one row permutation each (no slices).
TEST(CodegenReverseTest, TransposesThatKeepTheMinorDimension) {
  auto every_permutation = [](const std::string& type, const Dims& in) {
    const size_t leading = in.size() - 1;
    Dims perm(leading);
    for (size_t i = 0; i < leading; ++i) perm[i] = static_cast<int64_t>(i);
    std::vector<Dims> perms, shapes;
    do {
      Dims full = perm, out;
      full.push_back(static_cast<int64_t>(leading));
      for (int64_t d : full) out.push_back(in[static_cast<size_t>(d)]);
      perms.push_back(full);
      shapes.push_back(out);
    } while (std::next_permutation(perm.begin(), perm.end()));
    ExpectExactOnDevice(ModuleOfVariants(type, in, "transpose", perms, shapes));
  };
  every_permutation("f32", {3, 5, 7});
  every_permutation("f32", {41, 43, 3});  // more slices than the legalization's limit would allow
  every_permutation("f32", {2, 3, 4, 9});
  every_permutation("s32", {3, 1, 4, 20});
}

// Dimensions out of range or repeated: the verifier says so, and codegen does not crash on them.
TEST(CodegenReverseTest, RejectsBadDimensions) {
  for (const std::string& dims : {"{2}", "{-1}", "{0,0}"}) {
    const std::string text = "HloModule m\nENTRY %main (x: f32[3,4]) -> f32[3,4] {\n  %x = f32[3,4] parameter(0)\n"
                             "  ROOT %r = f32[3,4] reverse(f32[3,4] %x), dimensions=" + dims + "\n}\n";
    StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
    if (!module.ok()) continue;  // refused by the parser already
    Status verified = hlo::VerifyHloModule(**module);
    EXPECT_FALSE(verified.ok()) << text;
    EXPECT_NE(verified.message().find("dimensions="), std::string::npos) << verified;
    if (dims != "{0,0}") EXPECT_FALSE(Compile(**module, DeviceOptions()).ok()) << text;
  }
}

}  // namespace
}  // namespace tpu::compiler
