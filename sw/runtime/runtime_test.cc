// Runtime tests on the model backend: client and devices, buffers, the OOM message, compiling and running
// HLO (checked against the interpreter), argument checks, and recovery after errors.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "compiler/codegen/assembler.h"
#include "compiler/codegen/buffer_assignment.h"
#include "compiler/hlo/feed_loop_testdata.h"
#include "compiler/hlo/parser.h"
#include "compiler/interpreter/interpreter.h"
#include "sim/model/chip_config.h"
#include "sw/runtime/client.h"
#include "sw/runtime/logging.h"
#include "sw/runtime/transport_factory.h"
#include "tpu_config.h"
#include "tpu_csr.h"

namespace tpu::runtime {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;

std::unique_ptr<Client> MakeClient(const ClientOptions& options = {}) {
  StatusOr<std::unique_ptr<Client>> client = Client::Create("model", cfg::kName, options);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? std::move(client).value() : nullptr;
}

Literal RandomLiteral(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  return Literal::Random(shape, rng);
}

// Device results agree with the interpreter within docs/numerics.md's tolerance.
void ExpectClose(const Literal& device, const Literal& reference) {
  ASSERT_EQ(device.shape(), reference.shape());
  double max_reference = 0;
  for (int64_t i = 0; i < reference.element_count(); ++i) {
    max_reference = std::max(max_reference, std::fabs(reference.GetAsDouble(i)));
  }
  const double rtol = 1.0 / 64, atol = max_reference / 64;
  for (int64_t i = 0; i < reference.element_count(); ++i) {
    const double d = device.GetAsDouble(i), r = reference.GetAsDouble(i);
    ASSERT_LE(std::fabs(d - r), atol + rtol * std::fabs(r)) << "element " << i << ": device " << d << " reference " << r;
  }
}

const char kAddModule[] = R"(HloModule add_two
ENTRY %main (a: f32[3,20], b: f32[3,20]) -> f32[3,20] {
  %a = f32[3,20]{1,0} parameter(0)
  %b = f32[3,20]{1,0} parameter(1)
  ROOT %sum = f32[3,20]{1,0} add(f32[3,20]{1,0} %a, f32[3,20]{1,0} %b)
}
)";

const char kDotModule[] = R"(HloModule small_dot
ENTRY %main (x: f32[10,20], w: f32[20,12]) -> f32[10,12] {
  %x = f32[10,20]{1,0} parameter(0)
  %w = f32[20,12]{1,0} parameter(1)
  ROOT %dot = f32[10,12]{1,0} dot(f32[10,20]{1,0} %x, f32[20,12]{1,0} %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";

const char kConstantModule[] = R"(HloModule add_constant
ENTRY %main (a: f32[2,3]) -> f32[2,3] {
  %a = f32[2,3]{1,0} parameter(0)
  %c = f32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })
  ROOT %sum = f32[2,3]{1,0} add(f32[2,3]{1,0} %a, f32[2,3]{1,0} %c)
}
)";

// Compiles `text`, runs it on seeded arguments and compares with the interpreter.
void RunAndCheck(Client& client, const char* text, uint32_t seed, int device = 0) {
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  StatusOr<std::unique_ptr<LoadedExecutable>> executable = client.Compile(**module, device);
  ASSERT_TRUE(executable.ok()) << executable.status();
  std::mt19937 rng(seed);
  std::vector<Literal> arguments;
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<const Buffer*> pointers;
  for (const hlo::HloInstruction* parameter : (*module)->entry_computation()->parameter_instructions()) {
    arguments.push_back(Literal::Random(parameter->shape(), rng));
    StatusOr<std::unique_ptr<Buffer>> buffer = client.BufferFromHostLiteral(arguments.back(), device);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    EXPECT_EQ((*buffer)->device().id, device);
    pointers.push_back(buffer->get());
    buffers.push_back(std::move(*buffer));
  }
  StatusOr<ExecuteResult> result = (*executable)->Execute(pointers);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_GT(result->counters.cycles, 0u);
  EXPECT_GT(result->counters.instructions, 0u);
  StatusOr<std::vector<Literal>> reference = hlo::Interpret(**module, arguments);
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_EQ(result->outputs.size(), reference->size());
  for (size_t i = 0; i < reference->size(); ++i) {
    StatusOr<Literal> device = result->outputs[i]->ToLiteral();
    ASSERT_TRUE(device.ok()) << device.status();
    ExpectClose(*device, (*reference)[i]);
  }
}

TEST(ClientTest, ListsDevicesFromTheDiscoveredConfiguration) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->backend(), "model");
  ASSERT_EQ(client->devices().size(), client->device_info().num_cores);
  EXPECT_EQ(client->devices()[0].name(), "TPU:0");
  EXPECT_EQ(client->devices()[0].full_name(), "/job:worker/replica:0/task:0/device:TPU:0");
  EXPECT_EQ(client->device_info().lanes, cfg::kLanes);
  EXPECT_EQ(client->hbm_limit_bytes(), cfg::kHbmLines * cfg::kLanes * 4);
  EXPECT_EQ(client->hbm_used_bytes(), 0u);
}

TEST(ClientTest, ModelBackendTakesAnyConfigurationFile) {
  StatusOr<std::unique_ptr<Client>> v2 = Client::Create("model", "v2");
  ASSERT_TRUE(v2.ok()) << v2.status();
  StatusOr<model::ChipConfig> config = model::ChipConfig::Named("v2");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ((*v2)->device_info().lanes, config->lanes);
}

TEST(ClientTest, BadBackendOrConfigurationIsAnError) {
  StatusOr<std::unique_ptr<Client>> unknown = Client::Create("fpga", "tiny");
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument) << unknown.status();
  StatusOr<std::unique_ptr<Client>> missing = Client::Create("model", "no_such_config");
  EXPECT_FALSE(missing.ok());
  // The rtl backend only simulates the configuration the build was generated for.
  const std::string other = std::string(cfg::kName) == "v2" ? "tiny" : "v2";
  StatusOr<std::unique_ptr<Client>> rtl = Client::Create("rtl", other);
  EXPECT_EQ(rtl.status().code(), StatusCode::kInvalidArgument) << rtl.status();
  EXPECT_NE(rtl.status().message().find(other), std::string::npos) << rtl.status();
  EXPECT_NE(rtl.status().message().find(cfg::kName), std::string::npos) << rtl.status();
}

TEST(ClientTest, LogsTheDevicesLikeLibtpu) {
  char pattern[] = "/tmp/tpusim_runtime_log.XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  logging::LogOptions options;
  options.log_dir = pattern;
  logging::Logger::Get().Configure(options);
  std::unique_ptr<Client> client = MakeClient();
  const std::string file = logging::Logger::Get().current_file();
  logging::LogOptions off;
  off.log_dir = "disabled";
  logging::Logger::Get().Configure(off);
  ASSERT_FALSE(file.empty());
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  const std::string cores = std::to_string(cfg::kNumCores);
  EXPECT_NE(text.str().find("Num TPU Cores: " + cores + ", Num TPU Workers: 1, Num TPU Cores Per Worker: " + cores),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("/job:worker/replica:0/task:0/device:TPU:0"), std::string::npos) << text.str();
}

TEST(BufferTest, RoundTripsThroughHbm) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  // Shapes whose minor dimension is and is not a multiple of the lanes, and scalars.
  const std::vector<Shape> shapes = {Shape::Make(PrimitiveType::F32, {}), Shape::Make(PrimitiveType::F32, {7}),
                                     Shape::Make(PrimitiveType::F32, {5, 13}), Shape::Make(PrimitiveType::F32, {16, 8}),
                                     Shape::Make(PrimitiveType::F32, {2, 3, 9})};
  uint32_t seed = 1;
  for (const Shape& shape : shapes) {
    const Literal value = RandomLiteral(shape, seed++);
    StatusOr<std::unique_ptr<Buffer>> buffer = client->BufferFromHostLiteral(value);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    EXPECT_EQ((*buffer)->shape(), shape);
    EXPECT_EQ((*buffer)->device().name(), "TPU:0");
    StatusOr<Literal> back = (*buffer)->ToLiteral();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, value) << shape.ToString();
  }
}

TEST(BufferTest, HbmIsFreedWhenBuffersAreDestroyed) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  {
    auto a = client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::F32, {100, 100}));
    auto b = client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::F32, {3}));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_NE((*a)->hbm_line(), (*b)->hbm_line());
    EXPECT_EQ(client->hbm_used_bytes(), ((*a)->hbm_lines() + (*b)->hbm_lines()) * client->device_info().line_bytes);
  }
  EXPECT_EQ(client->hbm_used_bytes(), 0u);
}

TEST(BufferTest, BuffersMayOutliveTheClient) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  const Literal value = RandomLiteral(Shape::Make(PrimitiveType::F32, {4, 4}), 3);
  std::unique_ptr<Buffer> buffer = client->BufferFromHostLiteral(value).value();
  client.reset();
  StatusOr<Literal> back = buffer->ToLiteral();
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, value);
}

TEST(BufferTest, OutOfMemoryGivesTheTpuMessageAndLeavesTheClientUsable) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  auto small = client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::F32, {64}));
  ASSERT_TRUE(small.ok());
  // One more element than HBM holds.
  const int64_t elements = static_cast<int64_t>(client->hbm_limit_bytes() / 4);
  StatusOr<std::unique_ptr<Buffer>> huge = client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::F32, {elements}));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  const std::string message = huge.status().ToString();
  EXPECT_EQ(message.rfind("ResourceExhaustedError: Ran out of memory in memory space hbm; used: ", 0), 0u) << message;
  EXPECT_NE(message.find("; limit: " + HumanReadableBytes(client->hbm_limit_bytes())), std::string::npos) << message;
  const Literal value = RandomLiteral(Shape::Make(PrimitiveType::F32, {9, 9}), 4);
  StatusOr<std::unique_ptr<Buffer>> after = client->BufferFromHostLiteral(value);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ((*after)->ToLiteral().value(), value);
}

TEST(BufferTest, ShapesBeyond32BitLineCountsAreOutOfMemoryWithTheirTrueSize) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  // 10^11 rows: more than 2^32 lines on any configuration, 2.91T of f32 words even on 8 lanes.
  StatusOr<std::unique_ptr<Buffer>> huge =
      client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::F32, {100000000000, 8}));
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
  const uint64_t lanes = client->device_info().lanes;
  const std::string size = HumanReadableBytes(uint64_t{100000000000} * ((8 + lanes - 1) / lanes) * lanes * 4);
  EXPECT_NE(huge.status().message().find("used: " + size), std::string::npos) << huge.status();
  EXPECT_EQ(client->hbm_used_bytes(), 0u);
}

TEST(BufferTest, IntegerAndPredBuffersRoundTrip) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  std::mt19937 rng(8);
  for (PrimitiveType type : {PrimitiveType::S32, PrimitiveType::S64, PrimitiveType::PRED, PrimitiveType::S8,
                             PrimitiveType::U8, PrimitiveType::S16, PrimitiveType::U16}) {
    hlo::Literal value = hlo::Literal::Random(Shape::Make(type, {5, 11}), rng);
    if (type != PrimitiveType::S64 && type != PrimitiveType::PRED) {
      // The extremes of the type: sign- and zero-extension in the device word come back exactly.
      value.SetFromDouble(0, value.GetAsDouble(0) < 0 ? -1e9 : 1e9);
      value.SetFromDouble(1, -1e9);
    }
    StatusOr<std::unique_ptr<Buffer>> buffer = client->BufferFromHostLiteral(value);
    ASSERT_TRUE(buffer.ok()) << buffer.status();
    StatusOr<hlo::Literal> back = (*buffer)->ToLiteral();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape().element_type, type);
    for (int64_t i = 0; i < value.element_count(); ++i) EXPECT_EQ(back->GetAsDouble(i), value.GetAsDouble(i));
  }
}

TEST(BufferTest, UnsupportedShapesAreRejected) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  Shape dynamic = Shape::Make(PrimitiveType::F32, {hlo::kUnboundedDimension, 10});
  dynamic.dynamic_dimensions = {true, false};
  StatusOr<std::unique_ptr<Buffer>> d = client->CreateUninitializedBuffer(dynamic);
  EXPECT_EQ(d.status().code(), StatusCode::kValueError) << d.status();
  EXPECT_NE(d.status().message().find("must have a fixed size for dimension 0 that is known at graph construction time"),
            std::string::npos) << d.status();
  // An s64 value outside the s32 range is refused, not truncated.
  hlo::Literal wide(Shape::Make(PrimitiveType::S64, {3}));
  wide.Set<int64_t>(2, int64_t{1} << 32);
  StatusOr<std::unique_ptr<Buffer>> w = client->BufferFromHostLiteral(wide);
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument) << w.status();
  EXPECT_NE(w.status().message().find("s64 value 4294967296 (element 2 of s64[3]) does not fit the device's 32-bit "
                                      "integers"), std::string::npos) << w.status();
  // One 32-bit device word per element: f32, bf16, the integers up to 32 bits, s64 in the s32 range, pred.
  StatusOr<std::unique_ptr<Buffer>> s = client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::F64, {4}));
  EXPECT_EQ(s.status().code(), StatusCode::kUnimplemented) << s.status();
  EXPECT_TRUE(client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::S32, {4})).ok());
  EXPECT_TRUE(client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::PRED, {3, 9})).ok());
  StatusOr<std::unique_ptr<Buffer>> t =
      client->CreateUninitializedBuffer(Shape::MakeTuple({Shape::Make(PrimitiveType::F32, {4})}));
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(client->CreateUninitializedBuffer(Shape::Make(PrimitiveType::F32, {4}), 5).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ExecuteTest, RunsElementwiseAndDotModulesLikeTheInterpreter) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  RunAndCheck(*client, kAddModule, 1);
  RunAndCheck(*client, kDotModule, 2);
  EXPECT_EQ(client->hbm_used_bytes(), 0u);
}

TEST(ExecuteTest, EveryDeviceRunsProgramsWithItsOwnHbm) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  for (int device = 0; device < static_cast<int>(client->devices().size()); ++device) {
    RunAndCheck(*client, kDotModule, 10 + device, device);
    EXPECT_EQ(client->hbm_used_bytes(device), 0u);
  }
  // A buffer lives on one device: it is no argument for an executable on another.
  if (client->devices().size() < 2) GTEST_SKIP() << "one device";
  std::unique_ptr<LoadedExecutable> on_first = client->Compile(std::string(kAddModule), 0).value();
  auto on_second = client->BufferFromHostLiteral(RandomLiteral(Shape::Make(PrimitiveType::F32, {3, 20}), 6), 1).value();
  EXPECT_GT(client->hbm_used_bytes(1), 0u);
  EXPECT_EQ(client->hbm_used_bytes(0), 0u);
  StatusOr<ExecuteResult> wrong = on_first->Execute({on_second.get(), on_second.get()});
  ASSERT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("lives on TPU:1, the executable on TPU:0"), std::string::npos) << wrong.status();
  // Each device has its own infeed queue.
  ASSERT_TRUE(client->TransferToInfeed({RandomLiteral(Shape::Make(PrimitiveType::F32, {4}), 1)}, 1).ok());
  EXPECT_EQ(client->InfeedQueueSize(1), 1u);
  EXPECT_EQ(client->InfeedQueueSize(0), 0u);
}

TEST(ExecuteTest, RunsTheDenseLayer) {
  std::ifstream in(std::string(TPU_SOURCE_DIR) + "/sim/dense_layer.hlo");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  RunAndCheck(*client, text.str().c_str(), 3);
}

TEST(ExecuteTest, ConstantsAreUploadedOnceAndReused) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  StatusOr<std::unique_ptr<LoadedExecutable>> executable = client->Compile(std::string(kConstantModule));
  ASSERT_TRUE(executable.ok()) << executable.status();
  const uint64_t used_after_load = client->hbm_used_bytes();
  EXPECT_GT(used_after_load, 0u);  // the constant lives in HBM now
  const Literal a = RandomLiteral(Shape::Make(PrimitiveType::F32, {2, 3}), 5);
  std::unique_ptr<Buffer> buffer = client->BufferFromHostLiteral(a).value();
  for (int run = 0; run < 3; ++run) {
    StatusOr<ExecuteResult> result = (*executable)->Execute({buffer.get()});
    ASSERT_TRUE(result.ok()) << result.status();
    const Literal out = result->outputs[0]->ToLiteral().value();
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out.Get<float>(i), a.Get<float>(i) + float(i + 1)) << i;
  }
  buffer.reset();
  EXPECT_EQ(client->hbm_used_bytes(), used_after_load);
  executable->reset();
  EXPECT_EQ(client->hbm_used_bytes(), 0u);
}

TEST(ExecuteTest, BadArgumentsNameBothShapes) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  std::unique_ptr<LoadedExecutable> executable = client->Compile(std::string(kAddModule)).value();
  auto good = client->BufferFromHostLiteral(RandomLiteral(Shape::Make(PrimitiveType::F32, {3, 20}), 6)).value();
  auto bad = client->BufferFromHostLiteral(RandomLiteral(Shape::Make(PrimitiveType::F32, {3, 21}), 7)).value();
  StatusOr<ExecuteResult> wrong_shape = executable->Execute({good.get(), bad.get()});
  ASSERT_EQ(wrong_shape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_shape.status().message().find("f32[3,20]"), std::string::npos) << wrong_shape.status();
  EXPECT_NE(wrong_shape.status().message().find("f32[3,21]"), std::string::npos) << wrong_shape.status();
  EXPECT_NE(wrong_shape.status().message().find("argument 1"), std::string::npos) << wrong_shape.status();
  EXPECT_EQ(executable->Execute({good.get()}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(executable->Execute({good.get(), nullptr}).status().code(), StatusCode::kInvalidArgument);
  // Nothing leaked, and the right arguments work.
  StatusOr<ExecuteResult> ok = executable->Execute({good.get(), good.get()});
  ASSERT_TRUE(ok.ok()) << ok.status();
}

TEST(ExecuteTest, MalformedHloIsInvalidArgumentWithLineAndColumn) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  StatusOr<std::unique_ptr<LoadedExecutable>> executable = client->Compile(std::string("HloModule m\nENTRY %e {\n  %a = f32[2 parameter(0)\n}\n"));
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(executable.status().message().find("line 3"), std::string::npos) << executable.status();
}

// A hand-written program through Load: the device error comes back typed, and the device still works.
// With `output`, the program declares one output (so that an error path has buffers to free).
compiler::Program HandWritten(uint32_t lanes, bool illegal, bool loop_forever, bool output = false) {
  compiler::Assembler assembler;
  if (illegal) assembler.Emit(static_cast<isa::Opcode>(0x7f), {});
  if (loop_forever) {
    compiler::Assembler::Label top = assembler.NewLabel();
    assembler.Bind(top);
    assembler.Jmp(top);
  }
  assembler.Halt();
  compiler::Program program;
  program.module_name = "hand_written";
  program.lanes = lanes;
  if (output) program.outputs.push_back(compiler::MakeDeviceLayout(Shape::Make(PrimitiveType::F32, {4, 20}), lanes));
  Status finished = assembler.Finish(&program.code, &program.relocations);
  EXPECT_TRUE(finished.ok()) << finished;
  return program;
}

// The same runtime on every backend this build has.
std::vector<std::string> Backends() {
  std::vector<std::string> backends = {"model"};
  backends.push_back("rtl");
  return backends;
}

class BackendTest : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<Client> MakeBackendClient(const ClientOptions& options = {}) {
    StatusOr<std::unique_ptr<Client>> client = Client::Create(GetParam(), cfg::kName, options);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? std::move(client).value() : nullptr;
  }
};

TEST_P(BackendTest, RunsModulesLikeTheInterpreter) {
  std::unique_ptr<Client> client = MakeBackendClient();
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->backend(), GetParam());
  RunAndCheck(*client, kAddModule, 11);
  RunAndCheck(*client, kDotModule, 12);
  RunAndCheck(*client, kConstantModule, 13);
  EXPECT_EQ(client->hbm_used_bytes(), 0u);
}

TEST_P(BackendTest, DeviceErrorsAreTypedAndTheDeviceStaysUsable) {
  ClientOptions options;
  options.execute_timeout_cycles = 100'000;
  options.watchdog_limit_cycles = 0;
  std::unique_ptr<Client> client = MakeBackendClient(options);
  ASSERT_NE(client, nullptr);
  const uint32_t lanes = client->device_info().lanes;

  std::unique_ptr<LoadedExecutable> illegal = client->Load(HandWritten(lanes, true, false, true)).value();
  StatusOr<ExecuteResult> error = illegal->Execute({});
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kInternal);
  EXPECT_NE(error.status().message().find("ILLEGAL_INSTR"), std::string::npos) << error.status();
  RunAndCheck(*client, kAddModule, 8);

  std::unique_ptr<LoadedExecutable> forever = client->Load(HandWritten(lanes, false, true, true)).value();
  StatusOr<ExecuteResult> timeout = forever->Execute({});
  EXPECT_EQ(timeout.status().code(), StatusCode::kDeadlineExceeded) << timeout.status();
  RunAndCheck(*client, kDotModule, 9);
  EXPECT_EQ(client->hbm_used_bytes(), 0u);
}


// Three steps of a loop fed through the infeed (compiler/hlo/feed_loop_testdata.h).
const std::string kFeedLoopModule = hlo::testing::FeedLoopModule(20);

std::vector<Literal> FeedBatch(uint32_t seed) {
  Literal labels = RandomLiteral(Shape::Make(PrimitiveType::S32, {3}), seed + 1);
  return {RandomLiteral(Shape::Make(PrimitiveType::F32, {3, 20}), seed), labels};
}

TEST_P(BackendTest, InfeedAndOutfeedValuesCrossWhileTheProgramRuns) {
  std::unique_ptr<Client> client = MakeBackendClient();
  ASSERT_NE(client, nullptr);
  std::unique_ptr<LoadedExecutable> executable = client->Compile(kFeedLoopModule).value();
  EXPECT_EQ(executable->program().infeed.size(), 2u);
  EXPECT_EQ(executable->program().outfeed.size(), 2u);

  const Literal w = RandomLiteral(Shape::Make(PrimitiveType::F32, {20}), 40);
  std::deque<Literal> reference_infeed;
  for (uint32_t step = 0; step < 3; ++step) {
    ASSERT_TRUE(client->TransferToInfeed(FeedBatch(50 + step)).ok());
    reference_infeed.push_back(Literal::MakeTuple(FeedBatch(50 + step)));
  }
  // A fourth value is for a later program: it stays queued (the host may have written it into the slot).
  ASSERT_TRUE(client->TransferToInfeed(FeedBatch(90)).ok());
  std::vector<Literal> reference_outfeed;
  hlo::InterpreterOptions interpreter;
  interpreter.infeed = hlo::InfeedQueue(&reference_infeed);
  interpreter.outfeed = hlo::OutfeedQueue(&reference_outfeed);
  auto module = hlo::ParseHloModule(kFeedLoopModule);
  ASSERT_TRUE(module.ok());
  std::vector<Literal> reference = hlo::Interpret(**module, {w}, interpreter).value();

  std::unique_ptr<Buffer> argument = client->BufferFromHostLiteral(w).value();
  StatusOr<ExecuteResult> result = executable->Execute({argument.get()});
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectClose(result->outputs[0]->ToLiteral().value(), reference[0]);
  EXPECT_EQ(result->infeed_values, 3u);
  EXPECT_EQ(result->outfeed_values, 3u);
  EXPECT_EQ(client->InfeedQueueSize(), 1u);
  // The first batch crosses the host link after the launch: the program waits for it.
  EXPECT_GT(result->counters.feed_stall_cycles, 0u);
  EXPECT_GT(result->elapsed_cycles, result->counters.cycles);
  for (size_t k = 0; k < 3; ++k) {
    StatusOr<std::vector<Literal>> sent = client->TransferFromOutfeed();
    ASSERT_TRUE(sent.ok()) << sent.status();
    ASSERT_EQ(sent->size(), 2u);
    ExpectClose((*sent)[0], reference_outfeed[k].tuple_elements()[0]);
    EXPECT_EQ((*sent)[1], reference_outfeed[k].tuple_elements()[1]);  // labels pass through exactly
  }
  EXPECT_EQ(client->TransferFromOutfeed().status().code(), StatusCode::kNotFound);

  // The next run takes the value left over first, then two more: as the interpreter on that queue.
  std::deque<Literal> next_infeed;
  next_infeed.push_back(Literal::MakeTuple(FeedBatch(90)));
  for (uint32_t step = 0; step < 2; ++step) {
    ASSERT_TRUE(client->TransferToInfeed(FeedBatch(60 + step)).ok());
    next_infeed.push_back(Literal::MakeTuple(FeedBatch(60 + step)));
  }
  interpreter.infeed = hlo::InfeedQueue(&next_infeed);
  reference_outfeed.clear();
  const Literal next_reference = hlo::Interpret(**module, {w}, interpreter).value()[0];
  std::unique_ptr<Buffer> next_argument = client->BufferFromHostLiteral(w).value();
  StatusOr<ExecuteResult> next = executable->Execute({next_argument.get()});
  ASSERT_TRUE(next.ok()) << next.status();
  ExpectClose(next->outputs[0]->ToLiteral().value(), next_reference);
  EXPECT_EQ(client->InfeedQueueSize(), 0u);
}

TEST_P(BackendTest, AnEmptyInfeedQueueOrAWrongValueStopsTheRunAndTheDeviceStaysUsable) {
  ClientOptions options;
  options.watchdog_limit_cycles = 200'000;
  std::unique_ptr<Client> client = MakeBackendClient(options);
  ASSERT_NE(client, nullptr);
  std::unique_ptr<LoadedExecutable> executable = client->Compile(kFeedLoopModule).value();
  const Literal w = RandomLiteral(Shape::Make(PrimitiveType::F32, {20}), 41);
  std::unique_ptr<Buffer> argument = client->BufferFromHostLiteral(w).value();

  // Two values for three infeeds: the third waits until the watchdog.
  ASSERT_TRUE(client->TransferToInfeed(FeedBatch(1)).ok());
  ASSERT_TRUE(client->TransferToInfeed(FeedBatch(2)).ok());
  StatusOr<ExecuteResult> starved = executable->Execute({argument.get()});
  EXPECT_EQ(starved.status().code(), StatusCode::kDeadlineExceeded) << starved.status();
  EXPECT_NE(starved.status().message().find("waited for infeed value 2 but the infeed queue is empty"),
            std::string::npos) << starved.status();
  EXPECT_NE(starved.status().message().find("SEMWAIT"), std::string::npos) << starved.status();
  while (client->TransferFromOutfeed().ok()) {
  }

  // A value of another shape is refused before it reaches the device, and stays queued.
  ASSERT_TRUE(client->TransferToInfeed({RandomLiteral(Shape::Make(PrimitiveType::F32, {3, 21}), 3)}).ok());
  StatusOr<ExecuteResult> wrong = executable->Execute({argument.get()});
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status();
  EXPECT_NE(wrong.status().message().find("is (f32[3,21]) but the program's infeed takes (f32[3,20], s32[3])"),
            std::string::npos) << wrong.status();
  EXPECT_EQ(client->InfeedQueueSize(), 1u);

  // The seeds' infeed type rule, at the queue.
  Status u8 = client->TransferToInfeed({Literal(Shape::Make(PrimitiveType::U8, {4}))});
  EXPECT_EQ(u8.ToString(), "TypeError: DataType u8 is not a supported TPU infeed type.");

  // The device is usable.
  RunAndCheck(*client, kAddModule, 21);
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendTest, ::testing::ValuesIn(Backends()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(ExecuteTest, ProgramsForAnotherConfigurationAreRefused) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  compiler::Program program = HandWritten(client->device_info().lanes * 2, false, false);
  EXPECT_EQ(client->Load(std::move(program)).status().code(), StatusCode::kInvalidArgument);
}


// --- input_output_alias and the compile-time HBM check ---

std::string ReadSharedHlo(const std::string& name) {
  std::ifstream in(std::string(TPU_SOURCE_DIR) + "/../shared/hlo/" + name + ".hlo");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct StepRun {
  std::vector<std::unique_ptr<Buffer>> arguments;
  ExecuteResult result;
};

// Uploads `arguments` and runs `executable` on them.
StepRun RunOn(Client& client, LoadedExecutable& executable, const std::vector<Literal>& arguments) {
  StepRun run;
  std::vector<const Buffer*> pointers;
  for (const Literal& argument : arguments) {
    run.arguments.push_back(client.BufferFromHostLiteral(argument).value());
    pointers.push_back(run.arguments.back().get());
  }
  StatusOr<ExecuteResult> result = executable.Execute(pointers);
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) run.result = std::move(result).value();
  return run;
}

TEST(AliasTest, MnistStepUpdatesTheParametersInPlaceWithoutCopies) {
  const std::string text = ReadSharedHlo("pytorch_xla_mnist_mlp_train_step");
  if (text.empty()) GTEST_SKIP() << "shared/hlo/pytorch_xla_mnist_mlp_train_step.hlo is not there";
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  ASSERT_FALSE(module->input_output_aliases().empty());
  std::unique_ptr<hlo::HloModule> unaliased = hlo::ParseHloModule(text).value();
  unaliased->mutable_input_output_aliases().clear();

  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  std::unique_ptr<LoadedExecutable> aliased_executable = client->Compile(*module).value();
  std::unique_ptr<LoadedExecutable> plain_executable = client->Compile(*unaliased).value();
  const compiler::Program& program = aliased_executable->program();
  ASSERT_EQ(program.output_aliases.size(), program.outputs.size());
  for (const hlo::InputOutputAlias& alias : module->input_output_aliases()) {
    EXPECT_EQ(program.output_aliases[alias.output_index[0]], alias.parameter_number);
  }
  // Nothing in the aliased program writes an aliased output's own region.
  for (const compiler::Relocation& reloc : program.relocations) {
    if (reloc.kind == compiler::RegionKind::kOutput) EXPECT_LT(program.output_aliases[reloc.region_index], 0);
  }

  std::mt19937 rng(3);
  std::vector<Literal> arguments;
  for (const hlo::HloInstruction* parameter : module->entry_computation()->parameter_instructions()) {
    arguments.push_back(Literal::Random(parameter->shape(), rng));
  }
  StepRun plain = RunOn(*client, *plain_executable, arguments);
  StepRun aliased = RunOn(*client, *aliased_executable, arguments);
  ASSERT_EQ(aliased.result.outputs.size(), plain.result.outputs.size());

  // Fewer instructions and DMA lines (the parameters returned unchanged are not copied), same bytes.
  EXPECT_LT(aliased.result.counters.instructions, plain.result.counters.instructions);
  EXPECT_LT(aliased.result.counters.dma_lines, plain.result.counters.dma_lines);
  EXPECT_LT(program.code.size(), plain_executable->program().code.size());
  for (size_t i = 0; i < plain.result.outputs.size(); ++i) {
    EXPECT_EQ(aliased.result.outputs[i]->ToDeviceBytes().value(), plain.result.outputs[i]->ToDeviceBytes().value())
        << "output " << i;
  }
  // The updated parameters are the donated argument buffers; the argument handles hold no data.
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const int32_t parameter = program.output_aliases[i];
    if (parameter < 0) continue;
    const Buffer& argument = *aliased.arguments[parameter];
    EXPECT_TRUE(argument.is_donated()) << "parameter " << parameter;
    EXPECT_EQ(argument.ToLiteral().status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(argument.ToLiteral().status().message().find("donated"), std::string::npos);
  }
  for (const auto& argument : plain.arguments) EXPECT_FALSE(argument->is_donated());

  // The device and the process stay usable: a second training step on the first step's outputs (the
  // donated buffers), compared with the unaliased program on the same values.
  std::vector<const Buffer*> next;
  std::vector<Literal> next_values;
  for (size_t p = 0; p < arguments.size(); ++p) {
    const Buffer* source = aliased.arguments[p].get();
    for (size_t i = 0; i < program.outputs.size(); ++i) {
      if (program.output_aliases[i] == static_cast<int32_t>(p)) source = aliased.result.outputs[i].get();
    }
    next.push_back(source);
    next_values.push_back(source->ToLiteral().value());
  }
  // A donated handle is refused, naming the executable.
  std::vector<const Buffer*> stale = next;
  stale[2] = aliased.arguments[2].get();
  StatusOr<ExecuteResult> refused = aliased_executable->Execute(stale);
  ASSERT_EQ(refused.status().code(), StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find(program.module_name), std::string::npos) << refused.status();

  StatusOr<ExecuteResult> second = aliased_executable->Execute(next);
  ASSERT_TRUE(second.ok()) << second.status();
  StepRun second_plain = RunOn(*client, *plain_executable, next_values);
  for (size_t i = 0; i < second->outputs.size(); ++i) {
    EXPECT_EQ(second->outputs[i]->ToDeviceBytes().value(), second_plain.result.outputs[i]->ToDeviceBytes().value())
        << "output " << i;
  }
}

TEST(AliasTest, ParametersReadAfterTheirUpdateAndSwappedParametersMatchTheInterpreter) {
  // `updated` is computed before the dot reads w: it waits in a temp and is copied into w at the end.
  // The second module swaps two donated parameters: one goes through a temp.
  const char late_read[] = R"(HloModule late_read, input_output_alias={ {0}: (0, {}, must-alias) }
ENTRY %main (w: f32[12,20], g: f32[12,20]) -> (f32[12,20], f32[12,12]) {
  %w = f32[12,20]{1,0} parameter(0)
  %g = f32[12,20]{1,0} parameter(1)
  %updated = f32[12,20]{1,0} subtract(f32[12,20]{1,0} %w, f32[12,20]{1,0} %g)
  %product = f32[12,12]{1,0} dot(f32[12,20]{1,0} %w, f32[12,20]{1,0} %g), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %out = (f32[12,20]{1,0}, f32[12,12]{1,0}) tuple(f32[12,20]{1,0} %updated, f32[12,12]{1,0} %product)
}
)";
  const char swap[] = R"(HloModule swap, input_output_alias={ {0}: (0, {}, must-alias), {1}: (1, {}, must-alias) }
ENTRY %main (a: f32[5,9], b: f32[5,9]) -> (f32[5,9], f32[5,9], f32[5,9]) {
  %a = f32[5,9]{1,0} parameter(0)
  %b = f32[5,9]{1,0} parameter(1)
  %sum = f32[5,9]{1,0} add(f32[5,9]{1,0} %a, f32[5,9]{1,0} %b)
  ROOT %out = (f32[5,9]{1,0}, f32[5,9]{1,0}, f32[5,9]{1,0}) tuple(f32[5,9]{1,0} %b, f32[5,9]{1,0} %a, f32[5,9]{1,0} %sum)
}
)";
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  for (const char* text : {late_read, swap}) {
    std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
    std::unique_ptr<LoadedExecutable> executable = client->Compile(*module).value();
    EXPECT_GT(executable->program().temp_lines, 0u);  // the late update, the staged parameters
    std::mt19937 rng(21);
    std::vector<Literal> arguments;
    for (const hlo::HloInstruction* parameter : module->entry_computation()->parameter_instructions()) {
      arguments.push_back(Literal::Random(parameter->shape(), rng));
    }
    StepRun run = RunOn(*client, *executable, arguments);
    std::vector<Literal> reference = hlo::Interpret(*module, arguments).value();
    ASSERT_EQ(run.result.outputs.size(), reference.size());
    for (size_t i = 0; i < reference.size(); ++i) ExpectClose(run.result.outputs[i]->ToLiteral().value(), reference[i]);
  }
  EXPECT_EQ(client->hbm_used_bytes(), 0u);
}

TEST(AliasTest, ADonatedArgumentMayNotBePassedTwice) {
  const char text[] = R"(HloModule twice, input_output_alias={ {0}: (0, {}, must-alias) }
ENTRY %main (a: f32[4,8], b: f32[4,8]) -> (f32[4,8]) {
  %a = f32[4,8]{1,0} parameter(0)
  %b = f32[4,8]{1,0} parameter(1)
  %sum = f32[4,8]{1,0} add(f32[4,8]{1,0} %a, f32[4,8]{1,0} %b)
  ROOT %out = (f32[4,8]{1,0}) tuple(f32[4,8]{1,0} %sum)
}
)";
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  std::unique_ptr<LoadedExecutable> executable = client->Compile(std::string(text)).value();
  std::unique_ptr<Buffer> a = client->BufferFromHostLiteral(RandomLiteral(Shape::Make(PrimitiveType::F32, {4, 8}), 1)).value();
  StatusOr<ExecuteResult> result = executable->Execute({a.get(), a.get()});
  ASSERT_EQ(result.status().code(), StatusCode::kInvalidArgument) << result.status();
  EXPECT_NE(result.status().message().find("donated to output 0"), std::string::npos) << result.status();
  EXPECT_FALSE(a->is_donated());
}

TEST(HbmCheckTest, AProgramLargerThanHbmFailsAtCompileTimeAndTheClientStaysUsable) {
  std::unique_ptr<Client> client = MakeClient();
  ASSERT_NE(client, nullptr);
  // Four buffers of a third of HBM each (two parameters, the two outputs `sum` and `product`): too much.
  const int64_t rows = static_cast<int64_t>(client->hbm_limit_bytes() / 3 / (4 * 1024));
  const std::string shape = "f32[" + std::to_string(rows) + ",1024]";
  const std::string text = "HloModule too_big\nENTRY %main (x: " + shape + ", y: " + shape + ") -> (" + shape +
                           ", " + shape + ") {\n  %x = " + shape + "{1,0} parameter(0)\n  %y = " + shape +
                           "{1,0} parameter(1)\n  %sum = " + shape + "{1,0} add(" + shape + "{1,0} %x, " + shape +
                           "{1,0} %y)\n  %product = " + shape + "{1,0} multiply(" + shape + "{1,0} %sum, " +
                           shape + "{1,0} %x)\n  ROOT %out = (" + shape + ", " + shape + ") tuple(" + shape +
                           "{1,0} %sum, " + shape + "{1,0} %product)\n}\n";
  StatusOr<std::unique_ptr<LoadedExecutable>> executable = client->Compile(text);
  ASSERT_FALSE(executable.ok());
  EXPECT_EQ(executable.status().code(), StatusCode::kResourceExhausted);
  const std::string message = executable.status().message();
  const uint64_t buffer_bytes = static_cast<uint64_t>(rows) * 1024 * 4;
  EXPECT_EQ(message.rfind(compiler::OutOfMemoryMessage("hbm", 4 * buffer_bytes, client->hbm_limit_bytes()) +
                              "\nLargest allocations in hbm:\n  1. Size: " + HumanReadableBytes(buffer_bytes) +
                              ", parameter 0 x " + shape,
                          0),
            0u)
      << message;
  EXPECT_EQ(client->hbm_used_bytes(), 0u);  // nothing was allocated
  RunAndCheck(*client, kAddModule, 17);
}

// --- replicated execution (CompileReplicated, ReplicatedExecutable::Execute) ---

// Arguments uploaded to their devices: position d's list goes to the executable's device d.
struct Uploaded {
  std::vector<std::vector<std::unique_ptr<Buffer>>> buffers;
  std::vector<std::vector<const Buffer*>> handles;
};

Uploaded Upload(Client& client, const ReplicatedExecutable& executable,
                const std::vector<std::vector<Literal>>& lists) {
  Uploaded uploaded;
  for (size_t d = 0; d < lists.size(); ++d) {
    uploaded.buffers.emplace_back();
    uploaded.handles.emplace_back();
    for (const Literal& literal : lists[d]) {
      uploaded.buffers.back().push_back(client.BufferFromHostLiteral(literal, executable.device(d).id).value());
      uploaded.handles.back().push_back(uploaded.buffers.back().back().get());
    }
  }
  return uploaded;
}

// Random arguments for every entry parameter, one list per device, each device's from its own seed.
std::vector<std::vector<Literal>> RandomArgumentLists(const hlo::HloModule& module, size_t devices, uint32_t seed) {
  std::vector<std::vector<Literal>> lists(devices);
  for (size_t d = 0; d < devices; ++d) {
    std::mt19937 rng(seed + static_cast<uint32_t>(d));
    for (const hlo::HloInstruction* parameter : module.entry_computation()->parameter_instructions()) {
      lists[d].push_back(Literal::Random(parameter->shape(), rng));
    }
  }
  return lists;
}

// Runs `text` replicated on `devices` (empty: as its header says) and checks every device's outputs
// against hlo::InterpretReplicated on the same argument lists.
void RunReplicatedAndCheck(Client& client, const std::string& text, const std::vector<int>& devices, uint32_t seed) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(text).value();
  StatusOr<std::unique_ptr<ReplicatedExecutable>> replicated = client.CompileReplicated(*module, devices);
  ASSERT_TRUE(replicated.ok()) << replicated.status();
  const size_t count = (*replicated)->num_devices();
  const std::vector<std::vector<Literal>> lists = RandomArgumentLists(*module, count, seed);
  std::vector<std::vector<Literal>> reference = hlo::InterpretReplicated(*module, lists).value();
  ASSERT_EQ(reference.size(), count);
  Uploaded uploaded = Upload(client, **replicated, lists);
  StatusOr<std::vector<ExecuteResult>> results = (*replicated)->Execute(uploaded.handles);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), count);
  for (size_t d = 0; d < count; ++d) {
    const ExecuteResult& result = (*results)[d];
    EXPECT_GT(result.counters.instructions, 0u) << "device " << d;
    ASSERT_EQ(result.outputs.size(), reference[d].size());
    for (size_t i = 0; i < reference[d].size(); ++i) {
      EXPECT_EQ(&result.outputs[i]->device(), &(*replicated)->device(d));
      ExpectClose(result.outputs[i]->ToLiteral().value(), reference[d][i]);
    }
  }
  // The devices had other arguments: their results differ, so each holds its own device's.
  if (count > 1) {
    EXPECT_FALSE((*results)[0].outputs[0]->ToLiteral().value() == (*results)[1].outputs[0]->ToLiteral().value());
  }
}

std::unique_ptr<Client> MakeTwoDeviceClient(const ClientOptions& options = {}) {
  std::unique_ptr<Client> client = MakeClient(options);
  if (client != nullptr) EXPECT_GE(client->devices().size(), 2u) << "the " << cfg::kName << " chip has one core";
  return client != nullptr && client->devices().size() >= 2 ? std::move(client) : nullptr;
}

TEST(ReplicatedTest, EveryDeviceGetsTheInterpretersResultForItsArguments) {
  std::unique_ptr<Client> client = MakeTwoDeviceClient();
  ASSERT_NE(client, nullptr);
  std::unique_ptr<ReplicatedExecutable> replicated = client->CompileReplicated(std::string(kDotModule), {0, 1}).value();
  EXPECT_EQ(replicated->num_devices(), 2u);
  EXPECT_EQ(replicated->device(1).name(), "TPU:1");
  EXPECT_EQ(replicated->device_grid().replicas, 2);
  EXPECT_EQ(replicated->device_grid().partitions, 1);
  EXPECT_EQ(replicated->DeviceName(1), "replica 1 (TPU:1)");
  // Compiled once: the same code on both devices.
  EXPECT_EQ(replicated->executable(0).program().code, replicated->executable(1).program().code);
  replicated.reset();

  RunReplicatedAndCheck(*client, kDotModule, {0, 1}, 100);
  RunReplicatedAndCheck(*client, kConstantModule, {1, 0}, 110);  // any order of devices
  EXPECT_EQ(client->hbm_used_bytes(0), 0u);
  EXPECT_EQ(client->hbm_used_bytes(1), 0u);
  // A module whose header names no grid runs on one device unless told otherwise.
  EXPECT_EQ(client->CompileReplicated(std::string(kAddModule)).value()->num_devices(), 1u);
}

const char kPmapModule[] = R"(HloModule pmap_step, num_partitions=2
ENTRY %main (x: f32[4,8], w: f32[8,8]) -> (f32[4,8], f32[4]) {
  %x = f32[4,8]{1,0} parameter(0)
  %w = f32[8,8]{1,0} parameter(1)
  %y = f32[4,8]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %z = f32[4,8]{1,0} add(%y, %x)
  %zero = f32[] constant(0)
  %sum = f32[4]{0} reduce(%z, %zero), dimensions={1}, to_apply=%add
  ROOT %out = (f32[4,8]{1,0}, f32[4]{0}) tuple(%z, %sum)
}
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
)";

TEST(ReplicatedTest, APmapModuleRunsOnTheDevicesItsHeaderNames) {
  std::unique_ptr<Client> client = MakeTwoDeviceClient();
  ASSERT_NE(client, nullptr);
  std::unique_ptr<ReplicatedExecutable> replicated = client->CompileReplicated(std::string(kPmapModule)).value();
  ASSERT_EQ(replicated->num_devices(), 2u);
  EXPECT_EQ(replicated->device(0).id, 0);
  EXPECT_EQ(replicated->device(1).id, 1);
  EXPECT_EQ(replicated->device_grid().partitions, 2);
  EXPECT_EQ(replicated->DeviceName(1), "partition 1 (TPU:1)");
  replicated.reset();
  RunReplicatedAndCheck(*client, kPmapModule, {}, 200);

  // More devices than the client has, or than were listed; a device listed twice or missing.
  const std::string many = std::to_string(client->devices().size() + 1);
  std::string too_many = kPmapModule;
  too_many.replace(too_many.find("num_partitions=2"), 16, "num_partitions=" + many);
  StatusOr<std::unique_ptr<ReplicatedExecutable>> wrong = client->CompileReplicated(too_many);
  ASSERT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status();
  EXPECT_NE(wrong.status().message().find("runs on " + many + " devices (replica_count=1 x num_partitions=" + many +
                                          "), the client has " + std::to_string(client->devices().size())),
            std::string::npos) << wrong.status();
  wrong = client->CompileReplicated(std::string(kPmapModule), {0});
  ASSERT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status();
  EXPECT_NE(
      wrong.status().message().find("runs on 2 devices (replica_count=1 x num_partitions=2), 1 devices were given"),
      std::string::npos)
      << wrong.status();
  wrong = client->CompileReplicated(std::string(kPmapModule), {1, 1});
  EXPECT_NE(wrong.status().message().find("TPU:1 is listed twice"), std::string::npos) << wrong.status();
  wrong = client->CompileReplicated(std::string(kPmapModule), {0, 9});
  EXPECT_NE(wrong.status().message().find("no device TPU:9"), std::string::npos) << wrong.status();

  // Each device reads its own partition-id (patched in when it runs: the program is compiled once).
  std::string with_id = kPmapModule;
  with_id.replace(with_id.find("  %zero = f32[] constant(0)"), 27,
                  "  %id = u32[] partition-id()\n  %zero = f32[] convert(%id)");
  RunReplicatedAndCheck(*client, with_id, {}, 210);
  // A program compiled for two devices does not run on one.
  std::unique_ptr<LoadedExecutable> single = client->Compile(with_id).value();
  std::vector<std::unique_ptr<Buffer>> buffers;
  std::vector<const Buffer*> handles;
  for (const compiler::DeviceLayout& parameter : single->program().parameters) {
    buffers.push_back(client->CreateUninitializedBuffer(parameter.shape).value());
    handles.push_back(buffers.back().get());
  }
  StatusOr<ExecuteResult> alone = single->Execute(handles);
  ASSERT_EQ(alone.status().code(), StatusCode::kInvalidArgument) << alone.status();
  EXPECT_NE(alone.status().message().find("was compiled for 2 devices"), std::string::npos) << alone.status();
  buffers.clear();
  single.reset();
  EXPECT_EQ(client->hbm_used_bytes(0), 0u);
  EXPECT_EQ(client->hbm_used_bytes(1), 0u);
}

TEST(ReplicatedTest, ArgumentListsAreCheckedPerDevice) {
  std::unique_ptr<Client> client = MakeTwoDeviceClient();
  ASSERT_NE(client, nullptr);
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kDotModule).value();
  std::unique_ptr<ReplicatedExecutable> replicated = client->CompileReplicated(*module, {0, 1}).value();
  Uploaded uploaded = Upload(*client, *replicated, RandomArgumentLists(*module, 2, 300));
  const uint64_t used0 = client->hbm_used_bytes(0), used1 = client->hbm_used_bytes(1);
  const std::vector<const Buffer*>& on0 = uploaded.handles[0];
  const std::vector<const Buffer*>& on1 = uploaded.handles[1];

  StatusOr<std::vector<ExecuteResult>> wrong = replicated->Execute({on0});
  ASSERT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status();
  EXPECT_EQ(wrong.status().message(),
            "executable small_dot runs on 2 devices and takes one argument list per device, got 1");
  wrong = replicated->Execute({on0, {on1[0]}});
  ASSERT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status();
  EXPECT_EQ(wrong.status().message(), "replica 1 (TPU:1): executable small_dot takes 2 arguments, got 1");
  wrong = replicated->Execute({on0, on0});
  ASSERT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status();
  EXPECT_EQ(wrong.status().message(), "replica 1 (TPU:1): argument 0 lives on TPU:0, the executable on TPU:1");
  wrong = replicated->Execute({{on0[0], on1[1]}, on1});
  EXPECT_EQ(wrong.status().message(), "replica 0 (TPU:0): argument 1 lives on TPU:1, the executable on TPU:0");
  ExecuteOptions profile;
  profile.profile = true;
  EXPECT_EQ(replicated->Execute({on0, on1}, profile).status().code(), StatusCode::kUnimplemented);
  // What the first device's run had allocated is freed again.
  EXPECT_EQ(client->hbm_used_bytes(0), used0);
  EXPECT_EQ(client->hbm_used_bytes(1), used1);
  EXPECT_TRUE(replicated->Execute({on0, on1}).ok());
  EXPECT_EQ(client->hbm_used_bytes(0), used0);
  EXPECT_EQ(client->hbm_used_bytes(1), used1);
}

// A loop of `iterations` steps, then HALT (with an output, so that a run has a buffer to free); with
// `illegal`, an illegal instruction first.
std::unique_ptr<LoadedExecutable> LoadCountingProgram(Client& client, int device, uint32_t iterations,
                                                      bool illegal = false) {
  compiler::Program program = HandWritten(client.device_info().lanes, illegal, false, /*output=*/true);
  compiler::Assembler assembler;
  const compiler::Reg counter{1}, limit{2};
  assembler.Li(limit, iterations);
  assembler.Li(counter, 0);
  compiler::Assembler::Label top = assembler.NewLabel();
  assembler.Bind(top);
  assembler.Addi(counter, counter, 1);
  assembler.Bne(counter, limit, top);
  std::vector<uint64_t> loop;
  std::vector<compiler::Relocation> relocations;
  EXPECT_TRUE(assembler.Finish(&loop, &relocations).ok());
  program.code.insert(program.code.begin(), loop.begin(), loop.end());
  return client.Load(std::move(program), device).value();
}

TEST(ReplicatedTest, DevicesRunAtTheSameTimeAndOneThatFinishesLeavesTheOthersRunning) {
  std::unique_ptr<Client> client = MakeTwoDeviceClient();
  ASSERT_NE(client, nullptr);
  std::vector<std::unique_ptr<LoadedExecutable>> executables;
  executables.push_back(LoadCountingProgram(*client, 0, 200'000));
  executables.push_back(LoadCountingProgram(*client, 1, 400'000));
  ReplicatedExecutable replicated(hlo::DeviceGrid{2, 1}, std::move(executables));
  const uint64_t before = client->DeviceCycles();
  StatusOr<std::vector<ExecuteResult>> results = replicated.Execute({{}, {}});
  ASSERT_TRUE(results.ok()) << results.status();
  const uint64_t elapsed = client->DeviceCycles() - before;
  const uint64_t short_run = (*results)[0].counters.cycles, long_run = (*results)[1].counters.cycles;
  EXPECT_EQ((*results)[0].counters.instructions, 2 + 2 * 200'000 + 1u);
  EXPECT_EQ((*results)[1].counters.instructions, 2 + 2 * 400'000 + 1u);
  EXPECT_GT(long_run, short_run + short_run / 2);
  // Both ran at once: the execution took about the longer run, not both one after the other.
  EXPECT_LT(elapsed, long_run + short_run / 2) << "short " << short_run << ", long " << long_run;
  EXPECT_GE(elapsed, long_run);
}

TEST(ReplicatedTest, TheFirstFailureIsNamedStopsTheOtherDevicesAndLeavesEveryOneUsable) {
  ClientOptions options;
  options.execute_timeout_cycles = 1'000'000;
  options.watchdog_limit_cycles = 0;
  std::unique_ptr<Client> client = MakeTwoDeviceClient(options);
  ASSERT_NE(client, nullptr);
  const uint32_t lanes = client->device_info().lanes;
  {
    // TPU:0 would loop until the timeout; TPU:1 fails at once and ends the execution.
    std::vector<std::unique_ptr<LoadedExecutable>> executables;
    executables.push_back(client->Load(HandWritten(lanes, false, true, true), 0).value());
    executables.push_back(LoadCountingProgram(*client, 1, 1000, /*illegal=*/true));
    ReplicatedExecutable replicated(hlo::DeviceGrid{2, 1}, std::move(executables));
    const uint64_t before = client->DeviceCycles();
    StatusOr<std::vector<ExecuteResult>> failed = replicated.Execute({{}, {}});
    ASSERT_EQ(failed.status().code(), StatusCode::kInternal) << failed.status();
    EXPECT_EQ(failed.status().message().rfind("replica 1 (TPU:1): ", 0), 0u) << failed.status();
    EXPECT_NE(failed.status().message().find("ILLEGAL_INSTR"), std::string::npos) << failed.status();
    EXPECT_LT(client->DeviceCycles() - before, options.execute_timeout_cycles / 10);
    // No output was kept.
    EXPECT_EQ(client->hbm_used_bytes(0), 0u);
    EXPECT_EQ(client->hbm_used_bytes(1), 0u);
  }
  // TPU:0 was stopped: both devices take programs again.
  RunAndCheck(*client, kAddModule, 400, 0);
  RunAndCheck(*client, kAddModule, 401, 1);
  {
    // Nobody finishes: the timeout names the first device still running.
    std::vector<std::unique_ptr<LoadedExecutable>> executables;
    executables.push_back(client->Load(HandWritten(lanes, false, true, true), 0).value());
    executables.push_back(client->Load(HandWritten(lanes, false, true, true), 1).value());
    ReplicatedExecutable replicated(hlo::DeviceGrid{2, 1}, std::move(executables));
    StatusOr<std::vector<ExecuteResult>> timeout = replicated.Execute({{}, {}});
    ASSERT_EQ(timeout.status().code(), StatusCode::kDeadlineExceeded) << timeout.status();
    EXPECT_EQ(timeout.status().message(),
              "replica 0 (TPU:0): TPU program did not complete within 1000000 cycles; the device was reset");
  }
  RunAndCheck(*client, kDotModule, 402, 0);
  RunAndCheck(*client, kDotModule, 403, 1);
  EXPECT_EQ(client->hbm_used_bytes(0), 0u);
  EXPECT_EQ(client->hbm_used_bytes(1), 0u);
}

// Programs that meet: the receiver waits on a core semaphore that the sender's RDMA posts once it has
// written 2.5s into the receiver's output (at the same HBM line as its own: both devices allocate alike).
// Receiver first: a runtime that waited for it before launching the sender would end in its watchdog.
// Sender first, with a receiver whose code takes long to load: a runtime that cleared the receiver's
// semaphores after the sender had started could lose the post.
TEST_P(BackendTest, ReplicatedProgramsThatWaitForEachOtherRunBecauseEveryDeviceIsLoadedAndLaunchedFirst) {
  ClientOptions options;
  options.watchdog_limit_cycles = 200'000;
  std::unique_ptr<Client> client = MakeBackendClient(options);
  ASSERT_NE(client, nullptr);
  ASSERT_GE(client->devices().size(), 2u);
  const uint32_t lanes = client->device_info().lanes;
  const Shape shape = Shape::Make(PrimitiveType::F32, {4, 20});
  const uint32_t lines = compiler::MakeDeviceLayout(shape, lanes).lines;
  const uint32_t semaphore = csr::HOST_SEMS + 1;  // one of the cores' semaphores
  auto load = [&](int device, const std::function<void(compiler::Assembler&)>& body) {
    compiler::Program program;
    program.module_name = "meet";
    program.lanes = lanes;
    program.outputs.push_back(compiler::MakeDeviceLayout(shape, lanes));
    compiler::Assembler assembler;
    body(assembler);
    EXPECT_TRUE(assembler.Finish(&program.code, &program.relocations).ok());
    return client->Load(std::move(program), device).value();
  };
  auto receiver = [&](int device, uint32_t padding) {
    return load(device, [&](compiler::Assembler& a) {
      a.SemWait(semaphore);
      a.Halt();
      if (padding == 0) return;
      for (uint32_t i = 0; i < padding; ++i) a.Nop();  // never runs; only makes the code long to load
      a.Halt();
    });
  };
  auto sender = [&](int device, int to) {
    return load(device, [&](compiler::Assembler& a) {
      const compiler::Reg hbm{1}, vmem{2}, count{3}, core{4};
      a.Li(vmem, 0);
      a.Li(count, lines);
      a.Vsplat(vmem, count, 0x40200000u);  // 2.5f
      a.Sync(0);
      a.Li(core, static_cast<uint32_t>(client->devices()[to].core));
      a.LoadAddress(hbm, compiler::RegionKind::kOutput, 0, 0);
      a.Emit(isa::Opcode::RDMA, {core, hbm, vmem, count, isa::flag::RDMA_POST, semaphore});
      a.Sync(0);
      a.Halt();
    });
  };
  for (const int receiving : {0, 1}) {
    SCOPED_TRACE("receiver at position " + std::to_string(receiving));
    std::vector<std::unique_ptr<LoadedExecutable>> executables;
    if (receiving == 0) {
      executables.push_back(receiver(0, 0));
      executables.push_back(sender(1, 0));
    } else {
      executables.push_back(sender(0, 1));
      executables.push_back(receiver(1, 3000));
    }
    ReplicatedExecutable replicated(hlo::DeviceGrid{2, 1}, std::move(executables));
    StatusOr<std::vector<ExecuteResult>> results = replicated.Execute({{}, {}});
    ASSERT_TRUE(results.ok()) << results.status();
    const ExecuteResult& received = (*results)[receiving];
    ASSERT_EQ(received.outputs[0]->hbm_line(), (*results)[1 - receiving].outputs[0]->hbm_line());
    // Launched first, the receiver waits for the lines; launched second, it finds the post already there.
    if (receiving == 0) EXPECT_GT(received.counters.feed_stall_cycles, 0u) << "the receiver waited for the lines";
    const Literal landed = received.outputs[0]->ToLiteral().value();
    for (int64_t i = 0; i < landed.element_count(); ++i) ASSERT_EQ(landed.Get<float>(i), 2.5f) << i;
  }
}

// Both devices run the feed loop at once, each on its own infeed and outfeed queues.
TEST_P(BackendTest, ReplicatedFeedLoopsServeEveryDevicesQueues) {
  std::unique_ptr<Client> client = MakeBackendClient();
  ASSERT_NE(client, nullptr);
  ASSERT_GE(client->devices().size(), 2u);
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kFeedLoopModule).value();
  std::unique_ptr<ReplicatedExecutable> replicated = client->CompileReplicated(*module, {0, 1}).value();
  std::vector<std::deque<Literal>> reference_infeed(2);
  std::vector<std::vector<Literal>> reference_outfeed(2);
  std::vector<hlo::InterpreterOptions> interpreter(2);
  for (int d = 0; d < 2; ++d) {
    for (uint32_t step = 0; step < 3; ++step) {
      ASSERT_TRUE(client->TransferToInfeed(FeedBatch(500 + 10 * d + step), d).ok());
      reference_infeed[d].push_back(Literal::MakeTuple(FeedBatch(500 + 10 * d + step)));
    }
    interpreter[d].infeed = hlo::InfeedQueue(&reference_infeed[d]);
    interpreter[d].outfeed = hlo::OutfeedQueue(&reference_outfeed[d]);
  }
  const std::vector<std::vector<Literal>> lists = RandomArgumentLists(*module, 2, 510);
  const std::vector<std::vector<Literal>> reference = hlo::InterpretReplicated(*module, lists, interpreter).value();

  Uploaded uploaded = Upload(*client, *replicated, lists);
  StatusOr<std::vector<ExecuteResult>> results = replicated->Execute(uploaded.handles);
  ASSERT_TRUE(results.ok()) << results.status();
  for (int d = 0; d < 2; ++d) {
    const ExecuteResult& result = (*results)[d];
    ExpectClose(result.outputs[0]->ToLiteral().value(), reference[d][0]);
    EXPECT_EQ(result.infeed_values, 3u) << "device " << d;
    EXPECT_EQ(result.outfeed_values, 3u) << "device " << d;
    EXPECT_EQ(client->InfeedQueueSize(d), 0u);
    ASSERT_EQ(client->OutfeedQueueSize(d), 3u);
    for (size_t k = 0; k < 3; ++k) {
      const std::vector<Literal> sent = client->TransferFromOutfeed(d).value();
      ExpectClose(sent[0], reference_outfeed[d][k].tuple_elements()[0]);
      EXPECT_EQ(sent[1], reference_outfeed[d][k].tuple_elements()[1]) << "device " << d << " value " << k;
    }
  }
}

// One device's infeed runs dry: the execution fails naming it, and both devices stay usable.
TEST_P(BackendTest, AReplicaWaitingOnAnEmptyInfeedIsNamedAndEveryDeviceStaysUsable) {
  ClientOptions options;
  options.watchdog_limit_cycles = 200'000;
  std::unique_ptr<Client> client = MakeBackendClient(options);
  ASSERT_NE(client, nullptr);
  ASSERT_GE(client->devices().size(), 2u);
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(kFeedLoopModule).value();
  std::unique_ptr<ReplicatedExecutable> replicated = client->CompileReplicated(*module, {0, 1}).value();
  Uploaded uploaded = Upload(*client, *replicated, RandomArgumentLists(*module, 2, 600));
  const uint64_t used0 = client->hbm_used_bytes(0), used1 = client->hbm_used_bytes(1);

  for (uint32_t step = 0; step < 3; ++step) ASSERT_TRUE(client->TransferToInfeed(FeedBatch(610 + step), 0).ok());
  ASSERT_TRUE(client->TransferToInfeed(FeedBatch(620), 1).ok());
  StatusOr<std::vector<ExecuteResult>> starved = replicated->Execute(uploaded.handles);
  ASSERT_EQ(starved.status().code(), StatusCode::kDeadlineExceeded) << starved.status();
  EXPECT_EQ(starved.status().message().rfind(
                "replica 1 (TPU:1): feed_loop waited for infeed value 1 but the infeed queue is empty", 0),
            0u) << starved.status();
  EXPECT_EQ(client->hbm_used_bytes(0), used0);  // no output kept
  EXPECT_EQ(client->hbm_used_bytes(1), used1);
  while (client->TransferFromOutfeed(0).ok()) {
  }
  while (client->TransferFromOutfeed(1).ok()) {
  }

  // Both devices run the next execution.
  for (int d = 0; d < 2; ++d) {
    for (uint32_t step = 0; step < 3; ++step) ASSERT_TRUE(client->TransferToInfeed(FeedBatch(630 + step), d).ok());
  }
  StatusOr<std::vector<ExecuteResult>> next = replicated->Execute(uploaded.handles);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((*next)[0].infeed_values, 3u);
  EXPECT_EQ((*next)[1].infeed_values, 3u);
  // The same infeed values but other arguments: the devices' results differ.
  EXPECT_FALSE((*next)[0].outputs[0]->ToLiteral().value() == (*next)[1].outputs[0]->ToLiteral().value());
}

}  // namespace
}  // namespace tpu::runtime
