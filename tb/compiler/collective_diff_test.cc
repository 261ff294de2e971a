// Randomized differential tests of the collectives (all-reduce alone, of a tuple, twice, in a loop, after
// a replica-id; all-gather; reduce-scatter; collective-permute): seeded random modules that run on every
// device of the board (replica_count = the devices, random replica groups and permutations, shapes such
// as 1, 7, 9, 13 and 130 that are not multiples of the lanes, every reduction each element type takes),
// run by hlo::InterpretReplicated and by the runtime's replicated execution on the reference model and, when it
// is built, on the verilated chip:
//  - every device's outputs match the interpreter's bit for bit, except an f32 sum or product over more
//    than two devices, which the ring associates differently (docs/numerics.md): within tolerance;
//  - the rtl devices return exactly the model's bytes.
//
// TPU_DIFF_ITERATIONS=N runs N cases per kind (default 6), TPU_DIFF_SEED=S changes the base seed,
// TPU_DIFF_CASE=I runs only case I, TPU_DIFF_CHIPS=C runs on a board of C chips (default 4) and
// TPU_DIFF_RTL=0 leaves the rtl out; a failure prints the module
// and the line that reproduces it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "sim/tpusim/output_compare.h"
#include "sw/runtime/client.h"
#include "sw/runtime/transport_factory.h"
#include "tpu_config.h"

namespace tpu {
namespace {

using hlo::Literal;
using Rng = std::mt19937;

int EnvInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  return text == nullptr || *text == '\0' ? fallback : std::atoi(text);
}

// The board: four chips (eight cores on tiny, a v2-8's shape) unless TPU_DIFF_CHIPS says otherwise.
runtime::ClientOptions BoardOptions() {
  runtime::ClientOptions options;
  options.chips = static_cast<uint32_t>(EnvInt("TPU_DIFF_CHIPS", 4));
  return options;
}

// SystemC simulates one platform per process: the clients live as long as the process.
runtime::Client* ModelClient() {
  static runtime::Client* client = [] {
    StatusOr<std::unique_ptr<runtime::Client>> made = runtime::Client::Create("model", cfg::kName, BoardOptions());
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? std::move(made).value().release() : nullptr;
  }();
  return client;
}

runtime::Client* RtlClient() {
  static runtime::Client* client = []() -> runtime::Client* {
    if (EnvInt("TPU_DIFF_RTL", 1) == 0) return nullptr;
    StatusOr<std::unique_ptr<runtime::Client>> made = runtime::Client::Create("rtl", cfg::kName, BoardOptions());
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? std::move(made).value().release() : nullptr;
  }();
  return client;
}

int Devices() { return ModelClient() == nullptr ? 0 : static_cast<int>(ModelClient()->devices().size()); }

// A module and whether every device's result must equal the interpreter's bit for bit.
struct CollectiveCase {
  std::string hlo;
  bool exact = true;
};

std::string ShapeText(const std::string& type, const std::vector<int64_t>& dims) {
  std::string text = type + "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  text += "]";
  if (dims.size() > 1) {
    text += "{";
    for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims.size() - 1 - i);
    text += "}";
  }
  return text;
}

std::vector<int64_t> RandomDims(Rng& rng) {
  static const int64_t kSizes[] = {1, 2, 7, 9, 13, 16, 130};
  const int rank = 1 + static_cast<int>(rng() % 3);
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) dims.push_back(kSizes[rng() % 7]);
  return dims;
}

// Groups of the devices: all in one, or a random split into groups of one size, in a random order.
std::vector<std::vector<int>> RandomGroups(Rng& rng, int devices) {
  std::vector<int> order(devices);
  for (int d = 0; d < devices; ++d) order[d] = d;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<int> sizes;
  for (int size = 1; size <= devices; ++size) {
    if (devices % size == 0) sizes.push_back(size);
  }
  const int size = rng() % 2 == 0 ? devices : sizes[rng() % sizes.size()];
  std::vector<std::vector<int>> groups;
  for (int d = 0; d < devices; d += size) groups.emplace_back(order.begin() + d, order.begin() + d + size);
  return groups;
}

std::string GroupsText(const std::vector<std::vector<int>>& groups) {
  std::string text = "{";
  for (size_t g = 0; g < groups.size(); ++g) {
    text += g ? ",{" : "{";
    for (size_t i = 0; i < groups[g].size(); ++i) text += (i ? "," : "") + std::to_string(groups[g][i]);
    text += "}";
  }
  return text + "}";
}

struct Reduction {
  const char* type;
  const char* op;
};

// One all-reduce (or, with `kind`, several: in a loop, two in a row, after a replica-id) of a random
// reduction, shape and grouping.
CollectiveCase AllReduceCase(Rng& rng, int devices, const std::string& kind) {
  static const Reduction kReductions[] = {
      {"f32", "add"}, {"f32", "maximum"}, {"f32", "minimum"}, {"f32", "multiply"}, {"s32", "add"},
      {"s32", "maximum"}, {"s32", "minimum"}, {"s32", "multiply"}, {"s32", "and"}, {"s32", "or"},
      {"s32", "xor"}, {"u32", "add"}, {"pred", "and"}, {"pred", "or"}};
  const Reduction reduction = kReductions[rng() % (sizeof(kReductions) / sizeof(kReductions[0]))];
  const std::string type = reduction.type, op = reduction.op;
  const std::vector<std::vector<int>> groups = RandomGroups(rng, devices);
  const std::string shape = ShapeText(type, RandomDims(rng));
  const std::string attributes = ", replica_groups=" + GroupsText(groups) + ", to_apply=%combine";
  CollectiveCase c;
  c.exact = !(type == "f32" && (op == "add" || op == "multiply") && groups.front().size() > 2);
  std::string text = "HloModule all_reduce_" + kind + ", replica_count=" + std::to_string(devices) + "\n\n";
  text += "%combine (a: " + type + "[], b: " + type + "[]) -> " + type + "[] {\n  %a = " + type +
          "[] parameter(0)\n  %b = " + type + "[] parameter(1)\n  ROOT %c = " + type + "[] " + op + "(%a, %b)\n}\n\n";
  if (kind == "loop") {
    // Three iterations of x = all-reduce(x): the slots are reused while the peers run ahead.
    text += "%cond (s: (s32[], " + shape + ")) -> pred[] {\n  %s = (s32[], " + shape +
            ") parameter(0)\n  %i = s32[] get-tuple-element(%s), index=0\n  %n = s32[] constant(3)\n"
            "  ROOT %lt = pred[] compare(%i, %n), direction=LT\n}\n\n";
    text += "%body (s: (s32[], " + shape + ")) -> (s32[], " + shape + ") {\n  %s = (s32[], " + shape +
            ") parameter(0)\n  %i = s32[] get-tuple-element(%s), index=0\n  %one = s32[] constant(1)\n"
            "  %j = s32[] add(%i, %one)\n  %x = " + shape + " get-tuple-element(%s), index=1\n  %r = " + shape +
            " all-reduce(%x)" + attributes + "\n  ROOT %t = (s32[], " + shape + ") tuple(%j, %r)\n}\n\n";
    text += "ENTRY %main (x: " + shape + ") -> " + shape + " {\n  %x = " + shape +
            " parameter(0)\n  %zero = s32[] constant(0)\n  %init = (s32[], " + shape + ") tuple(%zero, %x)\n"
            "  %w = (s32[], " + shape + ") while(%init), condition=%cond, body=%body\n  ROOT %out = " + shape +
            " get-tuple-element(%w), index=1\n}\n";
  } else if (kind == "twice") {
    // Two all-reduces over other groups, one after the other: a peer may run into the second while
    // this device still reads the first.
    const std::vector<std::vector<int>> other = RandomGroups(rng, devices);
    c.exact = c.exact && !(type == "f32" && (op == "add" || op == "multiply") && other.front().size() > 2);
    text += "ENTRY %main (x: " + shape + ", y: " + shape + ") -> (" + shape + ", " + shape + ") {\n  %x = " + shape +
            " parameter(0)\n  %y = " + shape + " parameter(1)\n  %r = " + shape + " all-reduce(%x)" + attributes +
            "\n  %s = " + shape + " all-reduce(%y), replica_groups=" + GroupsText(other) +
            ", to_apply=%combine\n  ROOT %t = (" + shape + ", " + shape + ") tuple(%r, %s)\n}\n";
  } else if (kind == "tuple") {
    // One all-reduce of two arrays (lax.psum of a pytree, XLA's combined all-reduce).
    const std::string other = ShapeText(type, RandomDims(rng));
    text += "ENTRY %main (x: " + shape + ", y: " + other + ") -> (" + shape + ", " + other + ") {\n  %x = " + shape +
            " parameter(0)\n  %y = " + other + " parameter(1)\n  ROOT %r = (" + shape + ", " + other +
            ") all-reduce(%x, %y)" + attributes + "\n}\n";
  } else if (kind == "replica_id" && type != "pred") {
    // Each device adds its own id first.
    const std::string convert = type == "u32" ? "%id" : "%cid";
    text += "ENTRY %main (x: " + shape + ") -> " + shape + " {\n  %x = " + shape +
            " parameter(0)\n  %id = u32[] replica-id()\n" +
            (type == "u32" ? std::string() : "  %cid = " + type + "[] convert(%id)\n") + "  %b = " + shape +
            " broadcast(" + convert + "), dimensions={}\n  %y = " + shape + " add(%x, %b)\n  ROOT %r = " + shape +
            " all-reduce(%y)" + attributes + "\n}\n";
  } else {
    text += "ENTRY %main (x: " + shape + ") -> " + shape + " {\n  %x = " + shape + " parameter(0)\n  ROOT %r = " +
            shape + " all-reduce(%x)" + attributes + "\n}\n";
  }
  c.hlo = text;
  return c;
}

// An all-gather or a reduce-scatter along a leading dimension of a random shape, reduction and grouping.
CollectiveCase GatherScatterCase(Rng& rng, int devices, bool gather) {
  static const Reduction kReductions[] = {{"f32", "add"}, {"f32", "maximum"}, {"s32", "add"}, {"s32", "minimum"},
                                          {"u32", "multiply"}, {"pred", "or"}};
  const Reduction reduction = kReductions[rng() % (sizeof(kReductions) / sizeof(kReductions[0]))];
  const std::string type = reduction.type, op = reduction.op;
  const std::vector<std::vector<int>> groups = RandomGroups(rng, devices);
  const int64_t p = static_cast<int64_t>(groups.front().size());
  std::vector<int64_t> part = RandomDims(rng);
  if (part.size() == 1) part.insert(part.begin(), 1 + static_cast<int64_t>(rng() % 3));
  // Along dimension 0, or along dimension 1 after a leading 1.
  const int64_t d = part.size() == 3 && rng() % 2 == 0 ? 1 : 0;
  if (d == 1) part[0] = 1;
  std::vector<int64_t> whole = part;
  whole[d] *= p;
  const std::string small = ShapeText(type, part), large = ShapeText(type, whole);
  CollectiveCase c;
  c.exact = !(type == "f32" && op == "add" && p > 2);
  std::string text = std::string("HloModule ") + (gather ? "all_gather" : "reduce_scatter") +
                     ", replica_count=" + std::to_string(devices) + "\n\n";
  text += "%combine (a: " + type + "[], b: " + type + "[]) -> " + type + "[] {\n  %a = " + type +
          "[] parameter(0)\n  %b = " + type + "[] parameter(1)\n  ROOT %c = " + type + "[] " + op + "(%a, %b)\n}\n\n";
  const std::string in = gather ? small : large, out = gather ? large : small;
  text += "ENTRY %main (x: " + in + ") -> " + out + " {\n  %x = " + in + " parameter(0)\n  ROOT %r = " + out +
          (gather ? " all-gather(%x)" : " reduce-scatter(%x)") + ", dimensions={" + std::to_string(d) +
          "}, replica_groups=" + GroupsText(groups) + (gather ? "" : ", to_apply=%combine") + "\n}\n";
  c.hlo = text;
  return c;
}

// A collective-permute of a random shape: a random permutation of the devices, each pair kept with
// probability 3/4 (chains, cycles, devices that receive nothing and get zeros).
CollectiveCase PermuteCase(Rng& rng, int devices) {
  static const char* kTypes[] = {"f32", "s32", "pred"};
  const std::string type = kTypes[rng() % 3];
  const std::string shape = ShapeText(type, RandomDims(rng));
  std::vector<int> targets(devices);
  for (int d = 0; d < devices; ++d) targets[d] = d;
  std::shuffle(targets.begin(), targets.end(), rng);
  std::string pairs;
  for (int d = 0; d < devices; ++d) {
    if (rng() % 4 == 0) continue;
    pairs += (pairs.empty() ? "{" : ",{") + std::to_string(d) + "," + std::to_string(targets[d]) + "}";
  }
  CollectiveCase c;
  c.hlo = "HloModule collective_permute, replica_count=" + std::to_string(devices) + "\n\nENTRY %main (x: " + shape +
          ") -> " + shape + " {\n  %x = " + shape + " parameter(0)\n  ROOT %r = " + shape +
          " collective-permute(%x), source_target_pairs={" + pairs + "}\n}\n";
  return c;
}

// Every device's outputs of one replicated execution on `client`, or the error.
StatusOr<std::vector<std::vector<Literal>>> RunReplicated(runtime::Client& client, const hlo::HloModule& module,
                                                          const std::vector<std::vector<Literal>>& arguments) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::ReplicatedExecutable> executable, client.CompileReplicated(module));
  std::vector<std::vector<std::unique_ptr<runtime::Buffer>>> buffers(arguments.size());
  std::vector<std::vector<const runtime::Buffer*>> handles(arguments.size());
  for (size_t d = 0; d < arguments.size(); ++d) {
    for (const Literal& literal : arguments[d]) {
      TPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Buffer> buffer,
                           client.BufferFromHostLiteral(literal, executable->device(d).id));
      handles[d].push_back(buffer.get());
      buffers[d].push_back(std::move(buffer));
    }
  }
  TPU_ASSIGN_OR_RETURN(std::vector<runtime::ExecuteResult> results, executable->Execute(handles));
  std::vector<std::vector<Literal>> outputs(results.size());
  for (size_t d = 0; d < results.size(); ++d) {
    for (const auto& output : results[d].outputs) {
      TPU_ASSIGN_OR_RETURN(Literal literal, output->ToLiteral());
      outputs[d].push_back(std::move(literal));
    }
  }
  return outputs;
}

void CheckCase(const CollectiveCase& c, uint32_t seed, const std::string& reproduce) {
  std::unique_ptr<hlo::HloModule> module = hlo::ParseHloModule(c.hlo).value();
  ASSERT_TRUE(hlo::VerifyHloModule(*module).ok()) << reproduce;
  const int devices = Devices();
  std::vector<std::vector<Literal>> arguments(devices);
  for (int d = 0; d < devices; ++d) {
    Rng rng(seed * 31u + static_cast<uint32_t>(d));
    for (const hlo::HloInstruction* parameter : module->entry_computation()->parameter_instructions()) {
      arguments[d].push_back(Literal::Random(parameter->shape(), rng));
    }
  }
  StatusOr<std::vector<std::vector<Literal>>> reference = hlo::InterpretReplicated(*module, arguments);
  ASSERT_TRUE(reference.ok()) << reference.status() << reproduce;
  StatusOr<std::vector<std::vector<Literal>>> model = RunReplicated(*ModelClient(), *module, arguments);
  ASSERT_TRUE(model.ok()) << model.status() << reproduce;
  for (int d = 0; d < devices; ++d) {
    ASSERT_EQ((*model)[d].size(), (*reference)[d].size()) << reproduce;
    for (size_t i = 0; i < (*reference)[d].size(); ++i) {
      const Literal& want = (*reference)[d][i];
      const Literal& got = (*model)[d][i];
      if (c.exact) {
        EXPECT_TRUE(got == want) << "device " << d << " output " << i << ": model differs from the interpreter"
                                 << reproduce;
      } else {
        const tpusim::OutputComparison comparison = tpusim::CompareOutput(got, want);
        EXPECT_TRUE(comparison.ok) << "device " << d << ": "
                                   << tpusim::FormatComparison("output " + std::to_string(i), want, comparison)
                                   << reproduce;
      }
    }
  }
  if (runtime::Client* rtl_client = RtlClient()) {
    StatusOr<std::vector<std::vector<Literal>>> rtl = RunReplicated(*rtl_client, *module, arguments);
    ASSERT_TRUE(rtl.ok()) << rtl.status() << reproduce;
    for (int d = 0; d < devices; ++d) {
      for (size_t i = 0; i < (*model)[d].size(); ++i) {
        EXPECT_TRUE((*rtl)[d][i] == (*model)[d][i])
            << "device " << d << " output " << i << ": rtl differs from the model" << reproduce;
      }
    }
  }
}

class CollectiveDiffTest : public ::testing::TestWithParam<std::string> {};

TEST_P(CollectiveDiffTest, InterpreterModelAndRtlAgree) {
  ASSERT_GE(Devices(), 2) << "the " << cfg::kName << " board has one device";
  const std::string kind = GetParam();
  const uint32_t base_seed = static_cast<uint32_t>(EnvInt("TPU_DIFF_SEED", 1));
  const int iterations = EnvInt("TPU_DIFF_ITERATIONS", 6);
  const int only_case = EnvInt("TPU_DIFF_CASE", -1);
  int ran = 0;
  for (int index = 0; index < iterations; ++index) {
    if (only_case >= 0 && index != only_case) continue;
    const uint32_t seed = base_seed * 1000003u + static_cast<uint32_t>(index) * 7919u +
                          static_cast<uint32_t>(std::hash<std::string>()(kind) & 0xffff);
    Rng rng(seed);
    const CollectiveCase c = kind == "collective_permute" ? PermuteCase(rng, Devices())
                             : kind == "all_gather" || kind == "reduce_scatter"
                                 ? GatherScatterCase(rng, Devices(), kind == "all_gather")
                                 : AllReduceCase(rng, Devices(), kind);
    const std::string reproduce = "\nreproduce: TPU_DIFF_SEED=" + std::to_string(base_seed) + " TPU_DIFF_CASE=" +
                                  std::to_string(index) + " collective_diff_test --gtest_filter='*/" + kind +
                                  "'\nmodule:\n" + c.hlo;
    CheckCase(c, seed, reproduce);
    ++ran;
    if (HasFailure()) break;
  }
  std::printf("%s: %d cases on %d devices (model%s)\n", kind.c_str(), ran, Devices(), RtlClient() ? " and rtl" : "");
}

INSTANTIATE_TEST_SUITE_P(Collectives, CollectiveDiffTest,
                         ::testing::Values("single", "tuple", "twice", "loop", "replica_id", "all_gather",
                                           "reduce_scatter", "collective_permute"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace tpu

int main(int argc, char** argv) {
  setenv("TPU_LOG_DIR", "disabled", /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
