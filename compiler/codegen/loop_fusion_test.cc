// Loop fusions (loop_fusion.h): each module is compiled with and without elementwise-fusion. The fused
// program must hold the expected number of fusions, pass the sync checker, give the unfused program's
// bytes exactly (padded lanes included) on arguments with zeros of both signs, infinities and NaNs, on
// the reference model and the verilated chip (and the v2 model for 128 lanes), and match the
// interpreter within the tolerance of the VPU's sequences on ordinary values.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/device_test_util.h"
#include "compiler/codegen/loop_fusion.h"

namespace tpu::compiler {
namespace {

using device_test::Backends;
using device_test::DeviceOptions;

struct FusionCase {
  std::string name;
  std::string text;  // `S` stands for the array shape, `R` for its row (minor dimension) shape
  int fusions;
};

void PrintTo(const FusionCase& c, std::ostream* os) { *os << c.name; }

std::string Instantiate(std::string text, const std::string& shape, const std::string& row) {
  for (size_t at; (at = text.find("$S")) != std::string::npos;) text.replace(at, 2, shape);
  for (size_t at; (at = text.find("$R")) != std::string::npos;) text.replace(at, 2, row);
  return text;
}

const std::vector<FusionCase>& Cases() {
  static const std::vector<FusionCase> cases = {
      // SGD: p - lr * g with a learning rate the program reads (a splat row).
      {"sgd", R"(HloModule sgd
ENTRY %e (p: $S, g: $S, lr: f32[]) -> $S {
  %p = $S parameter(0)
  %g = $S parameter(1)
  %lr = f32[] parameter(2)
  %b = $S broadcast(f32[] %lr), dimensions={}
  %m = $S multiply($S %g, $S %b)
  ROOT %s = $S subtract($S %p, $S %m)
})",
       1},
      // Bias (a row broadcast, first operand of the add) and ReLU.
      {"bias_relu", R"(HloModule bias_relu
ENTRY %e (x: $S, bias: $R) -> $S {
  %x = $S parameter(0)
  %bias = $R parameter(1)
  %b = $S broadcast($R %bias), dimensions={1}
  %a = $S add($S %b, $S %x)
  %zero = f32[] constant(0)
  %z = $S broadcast(f32[] %zero), dimensions={}
  ROOT %r = $S maximum($S %a, $S %z)
})",
       1},
      // Math sequences whose padded lanes do not stay +0 (exp, logistic), a constant divisor, a power,
      // a negation, a division by a tensor and an immediate that is not +0 at +0.
      {"math", R"(HloModule math
ENTRY %e (x: $S, y: $S) -> $S {
  %x = $S parameter(0)
  %y = $S parameter(1)
  %ex = $S exponential($S %x)
  %t = $S tanh($S %y)
  %m = $S multiply($S %ex, $S %t)
  %three = f32[] constant(3)
  %b3 = $S broadcast(f32[] %three), dimensions={}
  %d = $S divide($S %m, $S %b3)
  %l = $S logistic($S %d)
  %two = f32[] constant(2)
  %b2 = $S broadcast(f32[] %two), dimensions={}
  %pw = $S power($S %l, $S %b2)
  %n = $S negate($S %pw)
  %one = f32[] constant(1)
  %b1 = $S broadcast(f32[] %one), dimensions={}
  %a = $S add($S %n, $S %b1)
  %ay = $S abs($S %y)
  %q = $S divide($S %a, $S %ay)
  ROOT %s = $S sqrt($S %q)
})",
       1},
      // Adam's update: two state outputs and the parameter; g*g and the moments feed more than one
      // fusion where they are outputs, so those stay values of their own.
      {"adam", R"(HloModule adam
ENTRY %e (p: $S, g: $S, m: $S, v: $S) -> ($S, $S, $S) {
  %p = $S parameter(0)
  %g = $S parameter(1)
  %m = $S parameter(2)
  %v = $S parameter(3)
  %b1c = f32[] constant(0.9)
  %b1 = $S broadcast(f32[] %b1c), dimensions={}
  %c1c = f32[] constant(0.1)
  %c1 = $S broadcast(f32[] %c1c), dimensions={}
  %b2c = f32[] constant(0.999)
  %b2 = $S broadcast(f32[] %b2c), dimensions={}
  %c2c = f32[] constant(0.001)
  %c2 = $S broadcast(f32[] %c2c), dimensions={}
  %mb = $S multiply($S %m, $S %b1)
  %gc = $S multiply($S %g, $S %c1)
  %m2 = $S add($S %mb, $S %gc)
  %vb = $S multiply($S %v, $S %b2)
  %gg = $S multiply($S %g, $S %g)
  %ggc = $S multiply($S %gg, $S %c2)
  %v2 = $S add($S %vb, $S %ggc)
  %sv = $S sqrt($S %v2)
  %epsc = f32[] constant(1e-8)
  %eps = $S broadcast(f32[] %epsc), dimensions={}
  %den = $S add($S %sv, $S %eps)
  %step = $S divide($S %m2, $S %den)
  %lrc = f32[] constant(0.001)
  %lr = $S broadcast(f32[] %lrc), dimensions={}
  %u = $S multiply($S %step, $S %lr)
  %p2 = $S subtract($S %p, $S %u)
  ROOT %t = ($S, $S, $S) tuple($S %p2, $S %m2, $S %v2)
})",
       3},
  };
  return cases;
}

int CountFusions(const hlo::HloModule& module) {
  int fusions = 0;
  for (const hlo::HloInstruction* instruction : module.entry_computation()->instructions()) {
    if (instruction->opcode() == hlo::HloOpcode::kFusion && IsLoweredLoopFusion(*instruction)) ++fusions;
  }
  return fusions;
}

hlo::Literal UniformValues(const hlo::Shape& shape, std::mt19937& rng) {
  hlo::Literal literal(shape);
  std::uniform_real_distribution<float> value(0.25f, 2.0f);
  for (int64_t i = 0; i < literal.element_count(); ++i) literal.Set<float>(i, value(rng));
  return literal;
}

std::vector<std::vector<uint8_t>> Run(runtime::Client& client, const Program& program,
                                      const std::vector<hlo::Literal>& arguments) {
  std::vector<std::vector<uint8_t>> bytes;
  StatusOr<std::unique_ptr<runtime::LoadedExecutable>> executable = client.Load(program);
  EXPECT_TRUE(executable.ok()) << executable.status();
  if (!executable.ok()) return bytes;
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  std::vector<const runtime::Buffer*> pointers;
  for (const hlo::Literal& argument : arguments) {
    StatusOr<std::unique_ptr<runtime::Buffer>> buffer = client.BufferFromHostLiteral(argument);
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    if (!buffer.ok()) return bytes;
    pointers.push_back(buffer->get());
    buffers.push_back(std::move(buffer).value());
  }
  StatusOr<runtime::ExecuteResult> result = (*executable)->Execute(pointers);
  EXPECT_TRUE(result.ok()) << result.status();
  if (!result.ok()) return bytes;
  for (const auto& output : result->outputs) {
    StatusOr<std::vector<uint8_t>> output_bytes = output->ToDeviceBytes();
    EXPECT_TRUE(output_bytes.ok()) << output_bytes.status();
    bytes.push_back(output_bytes.ok() ? *output_bytes : std::vector<uint8_t>{});
  }
  return bytes;
}

void ExpectFusedAsUnfused(const FusionCase& c, const std::string& shape, const std::string& row,
                          const CompileOptions& options, const std::vector<runtime::Client*>& clients) {
  const std::string text = Instantiate(c.text, shape, row);
  SCOPED_TRACE(text);
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  int fusions = -1;
  CompileOptions fused_options = options;
  fused_options.after_prepare = [&](const hlo::HloModule& prepared) {
    fusions = CountFusions(prepared);
    return OkStatus();
  };
  CompileOptions unfused_options = options;
  unfused_options.fuse_elementwise = false;
  StatusOr<Program> fused = Compile(**module, fused_options);
  ASSERT_TRUE(fused.ok()) << fused.status();
  StatusOr<Program> unfused = Compile(**module, unfused_options);
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_EQ(fusions, c.fusions);
  Status synchronized = CheckUnitSynchronization(fused->code, SyncCheckOptions{options.lanes});
  ASSERT_TRUE(synchronized.ok()) << synchronized;

  const hlo::HloComputation& entry = *(*module)->entry_computation();
  std::mt19937 rng(11);
  std::vector<hlo::Literal> words, values;
  for (int64_t i = 0; i < entry.num_parameters(); ++i) {
    words.push_back(device_test::RandomWords(entry.parameter_instruction(i)->shape(), rng));
    values.push_back(UniformValues(entry.parameter_instruction(i)->shape(), rng));
  }
  StatusOr<std::vector<hlo::Literal>> expected = Interpret(**module, values);
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (runtime::Client* client : clients) {
    SCOPED_TRACE(client->backend());
    const std::vector<std::vector<uint8_t>> fused_bytes = Run(*client, *fused, words);
    const std::vector<std::vector<uint8_t>> unfused_bytes = Run(*client, *unfused, words);
    ASSERT_EQ(fused_bytes.size(), unfused_bytes.size());
    for (size_t i = 0; i < fused_bytes.size(); ++i) EXPECT_TRUE(fused_bytes[i] == unfused_bytes[i]) << "output " << i;
    StatusOr<std::unique_ptr<runtime::LoadedExecutable>> executable = client->Load(*fused);
    ASSERT_TRUE(executable.ok()) << executable.status();
    device_test::ExpectRunMatches(*client, **executable, values, *expected, /*exact=*/false);
  }
}

class LoopFusionTest : public testing::TestWithParam<FusionCase> {};

// Tiny: [13,20] has three lines per row, the last padded; [6,8] one whole line; [5,3] one padded line.
TEST_P(LoopFusionTest, FusedMatchesUnfusedAndTheInterpreter) {
  for (const auto& [shape, row] : {std::pair{"f32[13,20]", "f32[20]"}, std::pair{"f32[6,8]", "f32[8]"},
                                   std::pair{"f32[5,3]", "f32[3]"}}) {
    ExpectFusedAsUnfused(GetParam(), shape, row, DeviceOptions(), Backends());
  }
}

// v2 (128 lanes): rows of three lines (the last padded), of one padded line, and enough lines for the
// software-pipelined loop.
TEST_P(LoopFusionTest, FusedMatchesUnfusedOnV2) {
  for (const auto& [shape, row] : {std::pair{"f32[13,300]", "f32[300]"}, std::pair{"f32[9,100]", "f32[100]"},
                                   std::pair{"f32[700,128]", "f32[128]"}}) {
    ExpectFusedAsUnfused(GetParam(), shape, row, device_test::V2Options(), {device_test::V2Model()});
  }
}

INSTANTIATE_TEST_SUITE_P(Chains, LoopFusionTest, testing::ValuesIn(Cases()),
                         [](const testing::TestParamInfo<FusionCase>& info) { return info.param.name; });

// What stays out: an elementwise op on a value of another shape, integers, and a chain of one.
TEST(LoopFusionPredicateTest, TakesOnlyWhatTheLoopLowers) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(R"(HloModule p
ENTRY %e (x: f32[4,8], i: s32[4,8], c: f32[4,1]) -> (f32[4,8], s32[4,8]) {
  %x = f32[4,8] parameter(0)
  %i = s32[4,8] parameter(1)
  %c = f32[4,1] parameter(2)
  %e = f32[4,8] exponential(f32[4,8] %x)
  %j = s32[4,8] add(s32[4,8] %i, s32[4,8] %i)
  %cb = f32[4,8] broadcast(f32[4,1] %c), dimensions={0,1}
  %m = f32[4,8] multiply(f32[4,8] %e, f32[4,8] %cb)
  ROOT %t = (f32[4,8], s32[4,8]) tuple(f32[4,8] %m, s32[4,8] %j)
})");
  ASSERT_TRUE(module.ok()) << module.status();
  const hlo::HloComputation& entry = *(*module)->entry_computation();
  auto find = [&](const std::string& name) -> const hlo::HloInstruction& {
    for (const hlo::HloInstruction* instruction : entry.instructions()) {
      if (instruction->name() == name) return *instruction;
    }
    ADD_FAILURE() << name;
    return *entry.root_instruction();
  };
  EXPECT_TRUE(IsLoopFusible(find("e")));
  EXPECT_FALSE(IsLoopFusible(find("j")));  // s32
  EXPECT_TRUE(IsLoopFusible(find("m")));   // the column broadcast is a tensor of the shape, read from HBM
  EXPECT_FALSE(LoopFusionReadsBroadcast(find("m"), find("cb")));  // not a row along the minor dimension
  EXPECT_FALSE(IsLoopFusible(find("cb")));
}

}  // namespace
}  // namespace tpu::compiler
