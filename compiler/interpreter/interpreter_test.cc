#include "compiler/interpreter/interpreter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <random>

#include "compiler/hlo/parser.h"
#include "compiler/hlo/feed_loop_testdata.h"
#include "compiler/hlo/test_util.h"
#include "compiler/hlo/verifier.h"

namespace tpu::hlo {
namespace {

// Parses, verifies and runs `text`; returns the flattened outputs.
std::vector<Literal> RunAll(const std::string& text, const std::vector<Literal>& arguments) {
  auto module = ParseHloModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  Status verified = VerifyHloModule(**module);
  EXPECT_TRUE(verified.ok()) << verified;
  auto outputs = Interpret(**module, arguments);
  EXPECT_TRUE(outputs.ok()) << outputs.status();
  return outputs.ok() ? std::move(outputs).value() : std::vector<Literal>{};
}

Literal RunOne(const std::string& text, const std::vector<Literal>& arguments) {
  std::vector<Literal> outputs = RunAll(text, arguments);
  EXPECT_EQ(outputs.size(), 1u);
  return outputs.empty() ? Literal() : outputs[0];
}

std::string Module(const std::string& entry, const std::string& extra = "") {
  return "HloModule test\n\n" + extra + "ENTRY %main {\n" + entry + "}\n";
}

const char* kAddComputation = "%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                              "  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n";
const char* kMaxComputation = "%max (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                              "  %b = f32[] parameter(1)\n  ROOT %s = f32[] maximum(%a, %b)\n}\n\n";

TEST(InterpreterTest, ParameterConstantAndBroadcast) {
  Literal out = RunOne(Module("  %p = f32[2]{0} parameter(0)\n  %c = f32[] constant(1.5)\n"
                              "  %b = f32[3,2]{1,0} broadcast(%p), dimensions={1}\n"
                              "  %s = f32[3,2]{1,0} broadcast(%c), dimensions={}\n"
                              "  ROOT %r = f32[3,2]{1,0} add(%b, %s)\n"),
                       {Literal::CreateR1<float>({10, 20})});
  EXPECT_EQ(out.ToFloatVector(), (std::vector<float>{11.5, 21.5, 11.5, 21.5, 11.5, 21.5}));
  Literal column = RunOne(Module("  %p = f32[2]{0} parameter(0)\n  ROOT %b = f32[2,3]{1,0} broadcast(%p), dimensions={0}\n"),
                          {Literal::CreateR1<float>({1, 2})});
  EXPECT_EQ(column.ToFloatVector(), (std::vector<float>{1, 1, 1, 2, 2, 2}));
}

TEST(InterpreterTest, MatrixDot) {
  Literal out = RunOne(Module("  %a = f32[2,3]{1,0} parameter(0)\n  %b = f32[3,2]{1,0} parameter(1)\n"
                              "  ROOT %d = f32[2,2]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"),
                       {Literal::CreateR2<float>({{1, 2, 3}, {4, 5, 6}}), Literal::CreateR2<float>({{7, 8}, {9, 10}, {11, 12}})});
  EXPECT_EQ(out.ToFloatVector(), (std::vector<float>{58, 64, 139, 154}));
}

TEST(InterpreterTest, BatchedDotWithTransposedOperands) {
  // out[b,i,j] = sum_k a[b,k,i] * c[j,b,k]
  std::mt19937 rng(3);
  Literal a = Literal::Random(Shape::Make(PrimitiveType::F32, {2, 4, 3}), rng);
  Literal c = Literal::Random(Shape::Make(PrimitiveType::F32, {5, 2, 4}), rng);
  Literal out = RunOne(Module("  %a = f32[2,4,3]{2,1,0} parameter(0)\n  %c = f32[5,2,4]{2,1,0} parameter(1)\n"
                              "  ROOT %d = f32[2,3,5]{2,1,0} dot(%a, %c), lhs_batch_dims={0}, lhs_contracting_dims={1}, "
                              "rhs_batch_dims={1}, rhs_contracting_dims={2}\n"),
                       {a, c});
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        float expected = 0;
        for (int k = 0; k < 4; ++k) expected += a.Get<float>(b * 12 + k * 3 + i) * c.Get<float>(j * 8 + b * 4 + k);
        EXPECT_FLOAT_EQ(out.Get<float>(b * 15 + i * 5 + j), expected);
      }
}

TEST(InterpreterTest, ElementwiseArithmeticMatchesTheHostFpu) {
  std::vector<float> x = {0.5f, -1.25f, 2.0f, 3.75f};
  std::vector<float> y = {4.0f, 0.5f, -3.0f, 1.5f};
  std::vector<Literal> outputs = RunAll(
      Module("  %x = f32[4]{0} parameter(0)\n  %y = f32[4]{0} parameter(1)\n"
             "  %add = f32[4]{0} add(%x, %y)\n  %sub = f32[4]{0} subtract(%x, %y)\n  %mul = f32[4]{0} multiply(%x, %y)\n"
             "  %div = f32[4]{0} divide(%x, %y)\n  %max = f32[4]{0} maximum(%x, %y)\n  %min = f32[4]{0} minimum(%x, %y)\n"
             "  %neg = f32[4]{0} negate(%x)\n  %exp = f32[4]{0} exponential(%x)\n  %abs = f32[4]{0} abs(%x)\n"
             "  %log = f32[4]{0} log(%abs)\n  %sqrt = f32[4]{0} sqrt(%abs)\n  %rsqrt = f32[4]{0} rsqrt(%abs)\n"
             "  %tanh = f32[4]{0} tanh(%x)\n  %pow = f32[4]{0} power(%abs, %y)\n"
             "  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, "
             "f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%add, %sub, %mul, %div, %max, "
             "%min, %neg, %exp, %abs, %log, %sqrt, %rsqrt, %tanh, %pow)\n"),
      {Literal::CreateR1<float>(x), Literal::CreateR1<float>(y)});
  ASSERT_EQ(outputs.size(), 14u);
  for (int i = 0; i < 4; ++i) {
    float a = x[i], b = y[i], m = std::fabs(a);
    float expected[] = {a + b, a - b, a * b, a / b, std::max(a, b), std::min(a, b), -a, std::exp(a), m, std::log(m),
                        std::sqrt(m), 1.0f / std::sqrt(m), std::tanh(a), std::pow(m, b)};
    for (int o = 0; o < 14; ++o) EXPECT_EQ(outputs[o].Get<float>(i), expected[o]) << "output " << o << " element " << i;
  }
}

TEST(InterpreterTest, MaximumPropagatesNaN) {
  Literal out = RunOne(Module("  %x = f32[2]{0} parameter(0)\n  %y = f32[2]{0} parameter(1)\n"
                              "  ROOT %m = f32[2]{0} maximum(%x, %y)\n"),
                       {Literal::CreateR1<float>({NAN, 1}), Literal::CreateR1<float>({1, NAN})});
  EXPECT_TRUE(std::isnan(out.Get<float>(0)));
  EXPECT_TRUE(std::isnan(out.Get<float>(1)));
}

TEST(InterpreterTest, CompareSelectAndClamp) {
  std::vector<Literal> outputs =
      RunAll(Module("  %x = f32[4]{0} parameter(0)\n  %zero = f32[] constant(0)\n"
                 "  %z = f32[4]{0} broadcast(%zero), dimensions={}\n  %gt = pred[4]{0} compare(%x, %z), direction=GT\n"
                 "  %relu = f32[4]{0} select(%gt, %x, %z)\n  %lo = f32[] constant(-1)\n  %hi = f32[] constant(1)\n"
                 "  %c = f32[4]{0} clamp(%lo, %x, %hi)\n  ROOT %t = (pred[4]{0}, f32[4]{0}, f32[4]{0}) tuple(%gt, %relu, %c)\n"),
          {Literal::CreateR1<float>({-2, 0.5, 0, 3})});
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs[0], Literal::CreateR1<bool>({false, true, false, true}));
  EXPECT_EQ(outputs[1].ToFloatVector(), (std::vector<float>{0, 0.5, 0, 3}));
  EXPECT_EQ(outputs[2].ToFloatVector(), (std::vector<float>{-1, 0.5, 0, 1}));
}

TEST(InterpreterTest, ClampPropagatesNaNBoundsLikeXla) {
  // min(max(x, lo), hi) with NaN-propagating maximum and minimum: a NaN bound makes every element NaN.
  std::vector<Literal> outputs =
      RunAll(Module("  %x = f32[3]{0} parameter(0)\n  %lo = f32[3]{0} parameter(1)\n  %hi = f32[3]{0} parameter(2)\n"
                    "  %nan = f32[] constant(nan)\n  %one = f32[] constant(1)\n"
                    "  %c = f32[3]{0} clamp(%lo, %x, %hi)\n  %s = f32[3]{0} clamp(%nan, %x, %one)\n"
                    "  %h = f32[3]{0} clamp(%one, %x, %nan)\n"
                    "  ROOT %t = (f32[3]{0}, f32[3]{0}, f32[3]{0}) tuple(%c, %s, %h)\n"),
             {Literal::CreateR1<float>({5, NAN, -5}), Literal::CreateR1<float>({NAN, 0, 0}),
              Literal::CreateR1<float>({1, 1, NAN})});
  ASSERT_EQ(outputs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isnan(outputs[0].Get<float>(i))) << i;
    EXPECT_TRUE(std::isnan(outputs[1].Get<float>(i))) << i;
    EXPECT_TRUE(std::isnan(outputs[2].Get<float>(i))) << i;
  }
}

TEST(InterpreterTest, ReshapeTransposeSliceConcatenatePadReverse) {
  std::vector<Literal> outputs = RunAll(
      Module("  %x = f32[6]{0} parameter(0)\n  %r = f32[2,3]{1,0} reshape(%x)\n"
             "  %t = f32[3,2]{0,1} transpose(%r), dimensions={1,0}\n"
             "  %s = f32[1,2]{1,0} slice(%r), slice={[1:2], [0:3:2]}\n"
             "  %c = f32[2,5]{1,0} concatenate(%r, %t2), dimensions={1}\n  %t2 = f32[2,2]{1,0} slice(%r), slice={[0:2], [1:3]}\n"
             "  %zero = f32[] constant(0)\n  %p = f32[3,5]{1,0} pad(%r, %zero), padding=1_0x0_0_1\n"
             "  %v = f32[2,3]{1,0} reverse(%r), dimensions={1}\n"
             "  ROOT %out = (f32[3,2]{0,1}, f32[1,2]{1,0}, f32[2,5]{1,0}, f32[3,5]{1,0}, f32[2,3]{1,0}) tuple(%t, %s, %c, %p, %v)\n"),
      {Literal::CreateR1<float>({1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(outputs.size(), 5u);
  EXPECT_EQ(outputs[0].ToFloatVector(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(outputs[1].ToFloatVector(), (std::vector<float>{4, 6}));
  EXPECT_EQ(outputs[2].ToFloatVector(), (std::vector<float>{1, 2, 3, 2, 3, 4, 5, 6, 5, 6}));
  EXPECT_EQ(outputs[3].ToFloatVector(), (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 2, 0, 3, 4, 0, 5, 0, 6}));
  EXPECT_EQ(outputs[4].ToFloatVector(), (std::vector<float>{3, 2, 1, 6, 5, 4}));
}

TEST(InterpreterTest, IotaAndConvert) {
  std::vector<Literal> outputs =
      RunAll(Module("  %i = s32[2,3]{1,0} iota(), iota_dimension=1\n  %f = f32[2,3]{1,0} convert(%i)\n"
                 "  %h = f32[] constant(2.7)\n  %n = s32[] convert(%h)\n  %b = bf16[] convert(%h)\n"
                 "  ROOT %t = (s32[2,3]{1,0}, f32[2,3]{1,0}, s32[], bf16[]) tuple(%i, %f, %n, %b)\n"),
          {});
  ASSERT_EQ(outputs.size(), 4u);
  EXPECT_EQ(outputs[0], Literal::CreateR2<int32_t>({{0, 1, 2}, {0, 1, 2}}));
  EXPECT_EQ(outputs[1].ToFloatVector(), (std::vector<float>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(outputs[2].Get<int32_t>(0), 2);
  EXPECT_EQ(outputs[3].GetAsDouble(0), Bfloat16ToFloat(FloatToBfloat16(2.7f)));
}

// reduce-precision to bf16 rounds to nearest even as a convert to bf16 does (1 + 2^-8 is a tie: down
// to 1; 1 + 3*2^-8 up to 1 + 2^-6); to fp16's 5 exponent bits, 70000 overflows to inf and 2^-20 (below
// fp16's smallest normal) flushes to zero; NaN stays NaN.
TEST(InterpreterTest, ReducePrecisionRoundsLikeTheNarrowerType) {
  const float inputs[] = {2.7f, 1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8), -70000.0f,
                          std::ldexp(1.0f, -20), NAN};
  Literal x(Shape::Make(PrimitiveType::F32, {6}), std::vector<float>(std::begin(inputs), std::end(inputs)));
  std::vector<Literal> outputs = RunAll(
      Module("  %x = f32[6]{0} parameter(0)\n"
             "  %bf16 = f32[6]{0} reduce-precision(%x), exponent_bits=8, mantissa_bits=7\n"
             "  %fp16 = f32[6]{0} reduce-precision(%x), exponent_bits=5, mantissa_bits=10\n"
             "  ROOT %t = (f32[6]{0}, f32[6]{0}) tuple(%bf16, %fp16)\n"),
      {x});
  ASSERT_EQ(outputs.size(), 2u);
  const std::vector<float> bf16 = outputs[0].ToFloatVector(), fp16 = outputs[1].ToFloatVector();
  EXPECT_EQ(bf16[0], Bfloat16ToFloat(FloatToBfloat16(2.7f)));
  EXPECT_EQ(bf16[1], 1.0f);
  EXPECT_EQ(bf16[2], 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(bf16[3], -70144.0f);  // 0x478900 rounded to 8 bits of mantissa
  EXPECT_EQ(bf16[4], std::ldexp(1.0f, -20));
  EXPECT_TRUE(std::isnan(bf16[5]));
  EXPECT_EQ(fp16[3], -INFINITY);
  EXPECT_EQ(fp16[4], 0.0f);
  EXPECT_TRUE(std::isnan(fp16[5]));
}

TEST(InterpreterTest, ReduceOverAnyDimensions) {
  std::string text = Module(
      "  %x = f32[2,3]{1,0} parameter(0)\n  %zero = f32[] constant(0)\n  %ninf = f32[] constant(-inf)\n"
      "  %rows = f32[2]{0} reduce(%x, %zero), dimensions={1}, to_apply=%add\n"
      "  %cols = f32[3]{0} reduce(%x, %ninf), dimensions={0}, to_apply=%max\n"
      "  %all = f32[] reduce(%x, %zero), dimensions={0,1}, to_apply=%add\n"
      "  ROOT %t = (f32[2]{0}, f32[3]{0}, f32[]) tuple(%rows, %cols, %all)\n",
      std::string(kAddComputation) + kMaxComputation);
  std::vector<Literal> outputs = RunAll(text, {Literal::CreateR2<float>({{1, 5, 3}, {4, 2, 6}})});
  ASSERT_EQ(outputs.size(), 3u);
  EXPECT_EQ(outputs[0].ToFloatVector(), (std::vector<float>{9, 12}));
  EXPECT_EQ(outputs[1].ToFloatVector(), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(outputs[2].ToFloatVector(), (std::vector<float>{21}));
}

TEST(InterpreterTest, ReduceWithAGeneralComputation) {
  // Sum of squares through a reducer that is not a single op: acc + x*x.
  std::string reducer = "%sumsq (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                        "  %sq = f32[] multiply(%b, %b)\n  ROOT %s = f32[] add(%a, %sq)\n}\n\n";
  Literal out = RunOne(Module("  %x = f32[3]{0} parameter(0)\n  %zero = f32[] constant(0)\n"
                              "  ROOT %r = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%sumsq\n",
                              reducer),
                       {Literal::CreateR1<float>({1, 2, 3})});
  EXPECT_EQ(out.Get<float>(0), 14.0f);
}

TEST(InterpreterTest, CallTupleAndGetTupleElement) {
  std::string callee = "%pair (p: f32[2]) -> (f32[2], f32[2]) {\n  %p = f32[2]{0} parameter(0)\n"
                       "  %n = f32[2]{0} negate(%p)\n  ROOT %t = (f32[2]{0}, f32[2]{0}) tuple(%p, %n)\n}\n\n";
  Literal out = RunOne(Module("  %x = f32[2]{0} parameter(0)\n"
                              "  %c = (f32[2]{0}, f32[2]{0}) call(%x), to_apply=%pair\n"
                              "  ROOT %g = f32[2]{0} get-tuple-element(%c), index=1\n",
                              callee),
                       {Literal::CreateR1<float>({1, -2})});
  EXPECT_EQ(out.ToFloatVector(), (std::vector<float>{-1, 2}));
}

TEST(InterpreterTest, IdentityCustomCallAndUnsupportedOnes) {
  Literal out = RunOne(Module("  %x = f32[2]{0} parameter(0)\n  ROOT %c = f32[2]{0} custom-call(%x), "
                              "custom_call_target=\"AwsNeuronTransferWithStaticRing\"\n"),
                       {Literal::CreateR1<float>({3, 4})});
  EXPECT_EQ(out.ToFloatVector(), (std::vector<float>{3, 4}));
  auto module = ParseHloModule(Module("  %x = f32[2]{0} parameter(0)\n  ROOT %c = f32[2]{0} custom-call(%x), "
                                      "custom_call_target=\"Mystery\"\n"));
  ASSERT_TRUE(module.ok());
  auto result = Interpret(**module, {Literal::CreateR1<float>({3, 4})});
  EXPECT_EQ(result.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(result.status().message().find("Mystery"), std::string::npos);
  auto rng = ParseHloModule(Module("  %lo = f32[] constant(0)\n  %hi = f32[] constant(1)\n"
                                   "  ROOT %r = f32[2]{0} rng(%lo, %hi), distribution=rng_uniform\n"));
  ASSERT_TRUE(rng.ok()) << rng.status();
  auto rng_result = Interpret(**rng, {});
  EXPECT_EQ(rng_result.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(rng_result.status().message().find("rng"), std::string::npos);
}

// The state as JAX passes it (u32[4] -> u32[2,2] -> u64[2]) and back: a change of width adds or drops the
// minor dimension, the little-endian words of each u64, low first.
TEST(InterpreterTest, BitcastConvertBetweenWidths) {
  std::vector<Literal> out = RunAll(Module("  %k = u32[2,2]{1,0} parameter(0)\n"
                                           "  %s = u64[2]{0} bitcast-convert(%k)\n"
                                           "  %w = u32[2,2]{1,0} bitcast-convert(%s)\n"
                                           "  ROOT %t = (u64[2]{0}, u32[2,2]{1,0}) tuple(%s, %w)\n"),
                                    {Literal::CreateR2<uint32_t>({{1, 2}, {0xffffffffu, 7}})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], Literal::CreateR1<uint64_t>({0x200000001ull, 0x7ffffffffull}));
  EXPECT_EQ(out[1], Literal::CreateR2<uint32_t>({{1, 2}, {0xffffffffu, 7}}));
  auto bad = ParseHloModule(Module("  %k = u32[2,3]{1,0} parameter(0)\n  ROOT %s = u64[2]{0} bitcast-convert(%k)\n"));
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(VerifyHloModule(**bad).ok());
}

// (state', bits) of one rng-bit-generator of `state`.
std::vector<Literal> RngBits(const std::string& algorithm, const std::string& bits, const Literal& state) {
  const std::string state_shape = state.shape().ToString();
  return RunAll(Module("  %s = " + state_shape + " parameter(0)\n  ROOT %r = (" + state_shape + ", " + bits +
                       ") rng-bit-generator(%s), algorithm=" + algorithm + "\n"),
                {state});
}

// Values of XLA on the CPU (jax.lax.rng_bit_generator; sw/frontend/tests/rng_test.py checks many more
// against jax.jit directly): counters that wrap, the u32 three-fry split in halves, philox blocks of four
// words, narrow bits as the low bits of u32 ones. The three-word philox state (JAX does not make one) is
// the same algorithm with the counter's high half in state[2].
TEST(InterpreterTest, RngBitGeneratorMatchesXlaOnTheCpu) {
  const Literal state = Literal::CreateR1<uint64_t>({0x0123456789abcdefull, 0xfffffffffffffffeull});
  std::vector<Literal> out = RngBits("rng_three_fry", "u32[3]", state);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], Literal::CreateR1<uint64_t>({0x0123456789abcdefull, 0}));
  EXPECT_EQ(out[1], Literal::CreateR1<uint32_t>({0xb0f4215bu, 0xe19a60b4u, 0x0b3d7494u}));
  out = RngBits("rng_three_fry", "u64[2]", Literal::CreateR1<uint64_t>({7, 42}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], Literal::CreateR1<uint64_t>({7, 44}));
  EXPECT_EQ(out[1], Literal::CreateR1<uint64_t>({0x60f46ce26db8c8e3ull, 0x63097c9b6a8c57ebull}));
  for (const char* algorithm : {"rng_philox", "rng_default"}) {
    out = RngBits(algorithm, "u32[5]", state);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0], Literal::CreateR1<uint64_t>({0x0123456789abcdefull, 0}));
    EXPECT_EQ(out[1], Literal::CreateR1<uint32_t>({0x0a485194u, 0x41c5f806u, 0xd6822feeu, 0x3885a3d4u, 0x41eb59f3u}));
  }
  out = RngBits("rng_philox", "u64[3]", Literal::CreateR1<uint64_t>({3, UINT64_MAX, 5}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], Literal::CreateR1<uint64_t>({3, 1, 6}));
  EXPECT_EQ(out[1], Literal::CreateR1<uint64_t>({0x2917f32373b23e9full, 0x598891d990de4baaull, 0x88877d48feec574bull}));
  out = RngBits("rng_philox", "u8[3]", Literal::CreateR1<uint64_t>({1, 2}));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], Literal::CreateR1<uint64_t>({1, 3}));
  EXPECT_EQ(out[1], Literal::CreateR1<uint8_t>({0x49, 0xe8, 0xd7}));
}

TEST(InterpreterTest, RngBitGeneratorRefusesWhatXlaDoesNotDefine) {
  auto run = [](const std::string& entry) {
    auto module = ParseHloModule(Module(entry));
    EXPECT_TRUE(module.ok()) << module.status();
    return Interpret(**module, {Literal::CreateR1<uint64_t>({1, 2, 3})}).status();
  };
  Status three_fry = run("  %s = u64[3]{0} parameter(0)\n"
                         "  ROOT %r = (u64[3]{0}, u32[4]{0}) rng-bit-generator(%s), algorithm=rng_three_fry\n");
  EXPECT_EQ(three_fry.code(), StatusCode::kUnimplemented);
  EXPECT_NE(three_fry.message().find("%r"), std::string::npos) << three_fry;
  Status floats = run("  %s = u64[3]{0} parameter(0)\n"
                      "  ROOT %r = (u64[3]{0}, f32[4]{0}) rng-bit-generator(%s), algorithm=rng_philox\n");
  EXPECT_EQ(floats.code(), StatusCode::kUnimplemented);
  EXPECT_NE(floats.message().find("f32 bits"), std::string::npos) << floats;
  Status name = run("  %s = u64[3]{0} parameter(0)\n"
                    "  ROOT %r = (u64[3]{0}, u32[4]{0}) rng-bit-generator(%s), algorithm=rng_mystery\n");
  EXPECT_EQ(name.code(), StatusCode::kInvalidArgument);
}

TEST(InterpreterTest, ErrorsForBadArgumentsAndElidedConstants) {
  auto module = ParseHloModule(Module("  %x = f32[2]{0} parameter(0)\n  ROOT %n = f32[2]{0} negate(%x)\n"));
  ASSERT_TRUE(module.ok());
  EXPECT_EQ(Interpret(**module, {Literal::CreateR1<float>({1, 2, 3})}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Interpret(**module, {}).status().code(), StatusCode::kInvalidArgument);
  auto elided = ParseHloModule(Module("  ROOT %c = f32[4]{0} constant({...})\n"));
  ASSERT_TRUE(elided.ok());
  EXPECT_EQ(Interpret(**elided, {}).status().code(), StatusCode::kFailedPrecondition);
}

TEST(InterpreterTest, MalformedIrGivesAnError) {
  // Built in code, never verified: a transpose whose permutation is out of range.
  HloModule module("bad");
  auto entry = std::make_unique<HloComputation>("main");
  HloInstruction* x = entry->AddInstruction(HloInstruction::CreateParameter(0, Shape::Make(PrimitiveType::F32, {2, 3})));
  entry->set_root_instruction(entry->AddInstruction(
      HloInstruction::CreateTranspose(Shape::Make(PrimitiveType::F32, {3, 2}), x, {1, 7})));
  module.AddComputation(std::move(entry), true);
  auto result = Interpret(module, {Literal(Shape::Make(PrimitiveType::F32, {2, 3}))});
  EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("permutation"), std::string::npos) << result.status();
}

TEST(InterpreterTest, ConvolutionMatchesADirectLoop) {
  // NHWC input, HWIO kernel, stride 2, padding 1, two feature groups.
  std::mt19937 rng(11);
  Literal x = Literal::Random(Shape::Make(PrimitiveType::F32, {2, 5, 5, 4}), rng);
  Literal k = Literal::Random(Shape::Make(PrimitiveType::F32, {3, 3, 2, 6}), rng);
  Literal out = RunOne(Module("  %x = f32[2,5,5,4]{3,2,1,0} parameter(0)\n  %k = f32[3,3,2,6]{3,2,1,0} parameter(1)\n"
                              "  ROOT %c = f32[2,3,3,6]{3,2,1,0} convolution(%x, %k), window={size=3x3 stride=2x2 "
                              "pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=2\n"),
                       {x, k});
  for (int b = 0; b < 2; ++b)
    for (int oh = 0; oh < 3; ++oh)
      for (int ow = 0; ow < 3; ++ow)
        for (int o = 0; o < 6; ++o) {
          int group = o / 3;
          float expected = 0;
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int h = oh * 2 - 1 + kh, w = ow * 2 - 1 + kw;
              if (h < 0 || h >= 5 || w < 0 || w >= 5) continue;
              for (int i = 0; i < 2; ++i)
                expected += x.Get<float>(((b * 5 + h) * 5 + w) * 4 + group * 2 + i) * k.Get<float>(((kh * 3 + kw) * 2 + i) * 6 + o);
            }
          EXPECT_NEAR(out.Get<float>(((b * 3 + oh) * 3 + ow) * 6 + o), expected, 1e-5f);
        }
}

TEST(InterpreterTest, ReduceWindowMaxPool) {
  Literal x = Literal::CreateR2<float>({{1, 2, 3, 4}, {5, 6, 7, 8}, {9, 10, 11, 12}, {13, 14, 15, 16}});
  Literal out = RunOne(Module("  %x = f32[4,4]{1,0} parameter(0)\n  %ninf = f32[] constant(-inf)\n"
                              "  ROOT %p = f32[2,2]{1,0} reduce-window(%x, %ninf), window={size=2x2 stride=2x2}, to_apply=%max\n",
                              kMaxComputation),
                       {x});
  EXPECT_EQ(out.ToFloatVector(), (std::vector<float>{6, 8, 14, 16}));
}

TEST(InterpreterTest, SortWithIndices) {
  std::string comparator = "%gt (a: f32[], b: f32[], i: s32[], j: s32[]) -> pred[] {\n  %a = f32[] parameter(0)\n"
                           "  %b = f32[] parameter(1)\n  %i = s32[] parameter(2)\n  %j = s32[] parameter(3)\n"
                           "  ROOT %c = pred[] compare(%a, %b), direction=GT, type=TOTALORDER\n}\n\n";
  std::vector<Literal> outputs =
      RunAll(Module("  %x = f32[2,4]{1,0} parameter(0)\n  %i = s32[2,4]{1,0} iota(), iota_dimension=1\n"
                 "  ROOT %s = (f32[2,4]{1,0}, s32[2,4]{1,0}) sort(%x, %i), dimensions={1}, is_stable=true, to_apply=%gt\n",
                 comparator),
          {Literal::CreateR2<float>({{3, 1, 4, 1}, {-1, 5, 9, 2}})});
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].ToFloatVector(), (std::vector<float>{4, 3, 1, 1, 9, 5, 2, -1}));
  EXPECT_EQ(outputs[1], Literal::CreateR2<int32_t>({{2, 0, 1, 3}, {2, 1, 3, 0}}));
}

TEST(InterpreterTest, IntegerArithmeticWrapsLikeHardware) {
  Literal out = RunOne(Module("  %x = s32[3]{0} parameter(0)\n  %y = s32[3]{0} parameter(1)\n"
                              "  ROOT %d = s32[3]{0} divide(%x, %y)\n"),
                       {Literal::CreateR1<int32_t>({7, -7, 5}), Literal::CreateR1<int32_t>({2, 2, 0})});
  EXPECT_EQ(out, Literal::CreateR1<int32_t>({3, -3, -1}));
}


// ---------------------------------------------------------------------------------------------------
// Fusion, control flow, gather/scatter, select-and-scatter, single-replica collectives.

TEST(InterpreterTest, LoopFusionGivesTheSameBitsAsTheUnfusedOps) {
  std::string fused = "HloModule f\n\n%fused (p0: f32[4], p1: f32[4]) -> f32[4] {\n  %p0 = f32[4]{0} parameter(0)\n"
                      "  %p1 = f32[4]{0} parameter(1)\n  %m = f32[4]{0} multiply(%p0, %p1)\n"
                      "  %e = f32[4]{0} exponential(%m)\n  ROOT %a = f32[4]{0} add(%e, %p0)\n}\n\n"
                      "ENTRY %main {\n  %x = f32[4]{0} parameter(0)\n  %y = f32[4]{0} parameter(1)\n"
                      "  ROOT %f = f32[4]{0} fusion(%x, %y), kind=kLoop, calls=%fused\n}\n";
  std::string plain = Module("  %x = f32[4]{0} parameter(0)\n  %y = f32[4]{0} parameter(1)\n"
                             "  %m = f32[4]{0} multiply(%x, %y)\n  %e = f32[4]{0} exponential(%m)\n"
                             "  ROOT %a = f32[4]{0} add(%e, %x)\n");
  std::mt19937 rng(3);
  std::vector<Literal> arguments = {Literal::Random(Shape::Make(PrimitiveType::F32, {4}), rng),
                                    Literal::Random(Shape::Make(PrimitiveType::F32, {4}), rng)};
  EXPECT_EQ(RunOne(fused, arguments), RunOne(plain, arguments));
}

TEST(InterpreterTest, FusionWithoutKindIsRejected) {
  auto module = ParseHloModule("HloModule f\n\n%fused (p0: f32[2]) -> f32[2] {\n  ROOT %p0 = f32[2]{0} parameter(0)\n}\n\n"
                               "ENTRY %main {\n  %x = f32[2]{0} parameter(0)\n  ROOT %f = f32[2]{0} fusion(%x), calls=%fused\n}\n");
  ASSERT_TRUE(module.ok());
  Status status = VerifyHloModule(**module);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("kind=kLoop"), std::string::npos) << status;
}

const char* kCounterLoop = R"(HloModule loop

%cond (s: (s32[], f32[])) -> pred[] {
  %s = (s32[], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[])) -> (s32[], f32[]) {
  %s = (s32[], f32[]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[] get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %two = f32[] constant(2)
  %double = f32[] multiply(%x, %two)
  ROOT %t = (s32[], f32[]) tuple(%next, %double)
}

ENTRY %main {
  %x = f32[] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[]) tuple(%zero, %x)
  ROOT %w = (s32[], f32[]) while(%init), condition=%cond, body=%body
}
)";

TEST(InterpreterTest, WhileRunsTheBodyUntilTheConditionIsFalse) {
  std::vector<Literal> out = RunAll(kCounterLoop, {Literal::CreateR0<float>(1.5f)});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].Get<int32_t>(0), 5);
  EXPECT_EQ(out[1].Get<float>(0), 1.5f * 32);
}

TEST(InterpreterTest, ANonTerminatingWhileIsAnErrorNotAHang) {
  std::string text = kCounterLoop;
  text.replace(text.find("direction=LT"), 12, "direction=GE");
  text.replace(text.find("%next = s32[] add"), 17, "%next = s32[] subtract");
  // i starts at 0 >= 5 is false: make the loop endless with a condition that is always true.
  text.replace(text.find("direction=GE"), 12, "direction=NE");
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  InterpreterOptions options;
  options.max_while_iterations = 1000;
  auto outputs = Interpret(**module, {Literal::CreateR0<float>(1.0f)}, options);
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), StatusCode::kFailedPrecondition) << outputs.status();
}

TEST(InterpreterTest, ConditionalPicksTheBranch) {
  std::string extra = "%neg (a: f32[2]) -> f32[2] {\n  %a = f32[2]{0} parameter(0)\n  ROOT %n = f32[2]{0} negate(%a)\n}\n\n"
                      "%id (b: f32[2]) -> f32[2] {\n  ROOT %b = f32[2]{0} parameter(0)\n}\n\n";
  std::string pred_form = Module("  %p = pred[] parameter(0)\n  %x = f32[2]{0} parameter(1)\n"
                                 "  ROOT %c = f32[2]{0} conditional(%p, %x, %x), true_computation=%neg, false_computation=%id\n",
                                 extra);
  Literal x = Literal::CreateR1<float>({1, -2});
  EXPECT_EQ(RunOne(pred_form, {Literal::CreateR0<bool>(true), x}), Literal::CreateR1<float>({-1, 2}));
  EXPECT_EQ(RunOne(pred_form, {Literal::CreateR0<bool>(false), x}), x);
  std::string index_form = Module("  %i = s32[] parameter(0)\n  %x = f32[2]{0} parameter(1)\n"
                                  "  ROOT %c = f32[2]{0} conditional(%i, %x, %x), branch_computations={%neg, %id}\n",
                                  extra);
  EXPECT_EQ(RunOne(index_form, {Literal::CreateR0<int32_t>(0), x}), Literal::CreateR1<float>({-1, 2}));
  EXPECT_EQ(RunOne(index_form, {Literal::CreateR0<int32_t>(1), x}), x);
  EXPECT_EQ(RunOne(index_form, {Literal::CreateR0<int32_t>(7), x}), x);  // out of range: the last branch
}

TEST(InterpreterTest, GatherRowsMatchesIndexingTheTable) {
  // An embedding lookup: rows of a [5,3] table picked by s32 ids, clamped into range.
  std::string text = Module("  %table = f32[5,3]{1,0} parameter(0)\n  %ids = s32[4]{0} parameter(1)\n"
                            "  ROOT %g = f32[4,3]{1,0} gather(%table, %ids), offset_dims={1}, collapsed_slice_dims={0}, "
                            "start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n");
  std::mt19937 rng(11);
  Literal table = Literal::Random(Shape::Make(PrimitiveType::F32, {5, 3}), rng);
  std::vector<int32_t> ids = {4, 0, 2, 9};
  Literal out = RunOne(text, {table, Literal::CreateR1<int32_t>(ids)});
  ASSERT_EQ(out.shape(), Shape::Make(PrimitiveType::F32, {4, 3}));
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(out.Get<float>(r * 3 + c), table.Get<float>(std::min(ids[r], 4) * 3 + c)) << r;
}

TEST(InterpreterTest, GatherWindowsWithTwoDimensionalStarts) {
  // 2x2 windows of a [4,4] matrix at (row, col) starts given as index vectors.
  std::string text = Module("  %m = s32[4,4]{1,0} parameter(0)\n  %starts = s32[2,2]{1,0} parameter(1)\n"
                            "  ROOT %g = s32[2,2,2]{2,1,0} gather(%m, %starts), offset_dims={1,2}, collapsed_slice_dims={}, "
                            "start_index_map={0,1}, index_vector_dim=1, slice_sizes={2,2}\n");
  std::vector<std::vector<int32_t>> rows;
  for (int r = 0; r < 4; ++r) rows.push_back({r * 4, r * 4 + 1, r * 4 + 2, r * 4 + 3});
  Literal out = RunOne(text, {Literal::CreateR2<int32_t>(rows), Literal::CreateR2<int32_t>({{1, 2}, {3, 0}})});
  // Second start (3,0) is clamped to (2,0).
  std::vector<int32_t> expected;
  for (auto [r0, c0] : {std::pair{1, 2}, std::pair{2, 0}})
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 2; ++c) expected.push_back((r0 + r) * 4 + c0 + c);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(out.Get<int32_t>(static_cast<int64_t>(i)), expected[i]) << i;
}

TEST(InterpreterTest, ScatterAddAccumulatesRowUpdates) {
  std::string text = Module("  %acc = f32[3,2]{1,0} parameter(0)\n  %ids = s32[3]{0} parameter(1)\n"
                            "  %upd = f32[3,2]{1,0} parameter(2)\n"
                            "  ROOT %s = f32[3,2]{1,0} scatter(%acc, %ids, %upd), update_window_dims={1}, "
                            "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=%add\n",
                            kAddComputation);
  Literal acc = Literal::CreateR2<float>({{1, 1}, {2, 2}, {3, 3}});
  Literal upd = Literal::CreateR2<float>({{10, 20}, {30, 40}, {50, 60}});
  // Row 2 gets two updates; id 5 is out of range and skipped.
  Literal out = RunOne(text, {acc, Literal::CreateR1<int32_t>({2, 2, 5}), upd});
  EXPECT_EQ(out.ToFloatVector(), (std::vector<float>{1, 1, 2, 2, 3 + 10 + 30, 3 + 20 + 40}));
}

TEST(InterpreterTest, SelectAndScatterRoutesToTheWindowMaximum) {
  // Max-pool gradient: each source value goes to the position of its window's maximum.
  std::string extra = std::string(kAddComputation) +
                      "%ge (a: f32[], b: f32[]) -> pred[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
                      "  ROOT %c = pred[] compare(%a, %b), direction=GE\n}\n\n";
  std::string text = Module("  %x = f32[4]{0} parameter(0)\n  %g = f32[2]{0} parameter(1)\n  %zero = f32[] constant(0)\n"
                            "  ROOT %s = f32[4]{0} select-and-scatter(%x, %g, %zero), window={size=2 stride=2}, "
                            "select=%ge, scatter=%add\n",
                            extra);
  Literal x = Literal::CreateR1<float>({1, 5, 7, 7});
  Literal out = RunOne(text, {x, Literal::CreateR1<float>({0.5f, 2})});
  // Ties keep the first element (GE prefers the current choice).
  EXPECT_EQ(out.ToFloatVector(), (std::vector<float>{0, 0.5f, 2, 0}));
}

TEST(InterpreterTest, SingleReplicaAllReduceIsTheIdentity) {
  std::string text = Module("  %x = f32[3]{0} parameter(0)\n"
                            "  ROOT %r = f32[3]{0} all-reduce(%x), replica_groups={{0}}, to_apply=%add\n",
                            kAddComputation);
  Literal x = Literal::CreateR1<float>({1, 2, 3});
  EXPECT_EQ(RunOne(text, {x}), x);
  std::string no_groups = Module("  %x = f32[3]{0} parameter(0)\n  ROOT %r = f32[3]{0} all-reduce(%x), replica_groups={}, to_apply=%add\n",
                                 kAddComputation);
  EXPECT_EQ(RunOne(no_groups, {x}), x);
  // Two replicas cannot be run on one: a module without a grid in its header has one device, ...
  std::string two = Module("  %x = f32[3]{0} parameter(0)\n  ROOT %r = f32[3]{0} all-reduce(%x), replica_groups={{0,1}}, to_apply=%add\n",
                           kAddComputation);
  auto module = ParseHloModule(two);
  ASSERT_TRUE(module.ok());
  EXPECT_TRUE(VerifyHloModule(**module).ok());
  auto outputs = Interpret(**module, {x});
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(outputs.status().message().find("replica 1 in replica_groups, but the module has 1"), std::string::npos)
      << outputs.status();
  // ... and one that says it has two needs InterpretReplicated.
  module = ParseHloModule("HloModule test, replica_count=2" + two.substr(std::string("HloModule test").size()));
  ASSERT_TRUE(module.ok()) << module.status();
  outputs = Interpret(**module, {x});
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(outputs.status().message().find("meets 2 devices, but this interpretation runs a single device"),
            std::string::npos)
      << outputs.status();
}

// ---------------------------------------------------------------------------------------------------
// Several devices: InterpretReplicated.

// Parses, verifies and runs `text` on one argument list per device; returns each device's outputs.
StatusOr<std::vector<std::vector<Literal>>> RunReplicated(const std::string& text,
                                                          const std::vector<std::vector<Literal>>& arguments,
                                                          const std::vector<InterpreterOptions>& options = {}) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<HloModule> module, ParseHloModule(text));
  TPU_RETURN_IF_ERROR(VerifyHloModule(*module));
  return InterpretReplicated(*module, arguments, options);
}

// Device d's argument: f32[n] holding d*100 + i.
std::vector<std::vector<Literal>> Ramps(int devices, int n) {
  std::vector<std::vector<Literal>> arguments(static_cast<size_t>(devices));
  for (int d = 0; d < devices; ++d) {
    std::vector<float> values;
    for (int i = 0; i < n; ++i) values.push_back(static_cast<float>(d * 100 + i));
    arguments[static_cast<size_t>(d)].push_back(Literal::CreateR1<float>(values));
  }
  return arguments;
}

TEST(InterpreterReplicatedTest, AllReduceWithinReplicaGroups) {
  std::string text = Module("  %x = f32[2]{0} parameter(0)\n"
                            "  ROOT %r = f32[2]{0} all-reduce(%x), replica_groups={{0,1},{2,3}}, to_apply=%add\n",
                            kAddComputation);
  auto outputs = RunReplicated(text, Ramps(4, 2));
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 4u);
  EXPECT_EQ((*outputs)[0][0], Literal::CreateR1<float>({100, 102}));
  EXPECT_EQ((*outputs)[1][0], Literal::CreateR1<float>({100, 102}));
  EXPECT_EQ((*outputs)[2][0], Literal::CreateR1<float>({500, 502}));
  EXPECT_EQ((*outputs)[3][0], Literal::CreateR1<float>({500, 502}));
}

// What JAX's pmap over eight devices compiles to (jax 0.10, XLA on the CPU): partitions, channel ids,
// flattened device ids.
const char* kPmapCollectives = R"(HloModule jit__fun, is_scheduled=true, num_partitions=8

%region_0.0 (psum.0: f32[], psum.1: f32[]) -> f32[] {
  %psum.0 = f32[] parameter(0)
  %psum.1 = f32[] parameter(1)
  ROOT %add.0 = f32[] add(%psum.0, %psum.1)
}

%region_1.0 (pmax.0: f32[], pmax.1: f32[]) -> f32[] {
  %pmax.0 = f32[] parameter(0)
  %pmax.1 = f32[] parameter(1)
  ROOT %max.0 = f32[] maximum(%pmax.0, %pmax.1)
}

ENTRY %main.0_spmd (param.1: f32[1,8]) -> (f32[8], f32[8], f32[8,8], f32[1], f32[8], s32[]) {
  %param.1 = f32[1,8]{1,0} parameter(0)
  %axis_index.12 = u32[] partition-id()
  %bitcast = f32[8]{0} bitcast(%param.1)
  %all_gather.3 = f32[8,8]{1,0} all-gather(%param.1), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, dimensions={0}, use_global_device_ids=true
  %psum.7 = f32[8]{0} all-reduce(%bitcast), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%region_0.0
  %pmax.7 = f32[8]{0} all-reduce(%bitcast), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, to_apply=%region_1.0
  %reduce_scatter.7 = f32[1]{0} reduce-scatter(%bitcast), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7}}, use_global_device_ids=true, dimensions={0}, to_apply=%region_0.0
  %ppermute.3 = f32[8]{0} collective-permute(%bitcast), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,4},{4,5},{5,6},{6,7},{7,0}}
  %index = s32[] convert(%axis_index.12)
  ROOT %tuple.5 = (f32[8]{0}, f32[8]{0}, f32[8,8]{1,0}, f32[1]{0}, f32[8]{0}, s32[]) tuple(%psum.7, %pmax.7, %all_gather.3, %reduce_scatter.7, %ppermute.3, %index)
}
)";

TEST(InterpreterReplicatedTest, PmapCollectivesOnEightDevices) {
  std::vector<std::vector<Literal>> arguments(8);
  for (int d = 0; d < 8; ++d) {
    std::vector<std::vector<float>> row(1);
    for (int i = 0; i < 8; ++i) row[0].push_back(static_cast<float>(d * 8 + i));
    arguments[static_cast<size_t>(d)].push_back(Literal::CreateR2<float>(row));
  }
  auto outputs = RunReplicated(kPmapCollectives, arguments);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 8u);
  for (int d = 0; d < 8; ++d) {
    const std::vector<Literal>& out = (*outputs)[static_cast<size_t>(d)];
    ASSERT_EQ(out.size(), 6u);
    std::vector<float> sum, max, gathered, permuted;
    for (int i = 0; i < 8; ++i) {
      sum.push_back(static_cast<float>(8 * 28 + 8 * i));  // sum over e of (8e + i)
      max.push_back(static_cast<float>(56 + i));
      permuted.push_back(static_cast<float>(((d + 7) % 8) * 8 + i));
    }
    for (int i = 0; i < 64; ++i) gathered.push_back(static_cast<float>(i));
    EXPECT_EQ(out[0].ToFloatVector(), sum) << d;
    EXPECT_EQ(out[1].ToFloatVector(), max) << d;
    EXPECT_EQ(out[2].ToFloatVector(), gathered) << d;
    EXPECT_EQ(out[3].ToFloatVector(), std::vector<float>{sum[static_cast<size_t>(d)]}) << d;
    EXPECT_EQ(out[4].ToFloatVector(), permuted) << d;
    EXPECT_EQ(out[5], Literal::CreateR0<int32_t>(d));
  }
}

TEST(InterpreterReplicatedTest, ReplicaAndPartitionIds) {
  std::string text = "HloModule m, replica_count=2, num_partitions=3\n\nENTRY %e {\n"
                     "  %r = u32[] replica-id()\n  %p = u32[] partition-id()\n  ROOT %t = (u32[], u32[]) tuple(%r, %p)\n}\n";
  auto outputs = RunReplicated(text, std::vector<std::vector<Literal>>(6));
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  for (uint32_t d = 0; d < 6; ++d) {
    EXPECT_EQ((*outputs)[d][0], Literal::CreateR0<uint32_t>(d / 3));
    EXPECT_EQ((*outputs)[d][1], Literal::CreateR0<uint32_t>(d % 3));
  }
  // The grid of the header must match the argument lists.
  auto wrong = RunReplicated(text, std::vector<std::vector<Literal>>(4));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("runs on 6 devices (2 replicas x 3 partitions), given arguments for 4"),
            std::string::npos)
      << wrong.status();
}

TEST(InterpreterReplicatedTest, CollectivesInALoopMeetTheirOwnIteration) {
  // Three iterations of x = all-reduce(x) * 0.5 on four replicas; the replicas agree every time.
  std::string text = Module(R"(  %x = f32[2]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[2]{0}) tuple(%zero, %x)
  %loop = (s32[], f32[2]{0}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[2]{0} get-tuple-element(%loop), index=1
)",
                            std::string(kAddComputation) + R"(%cond (s: (s32[], f32[2])) -> pred[] {
  %s = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (s: (s32[], f32[2])) -> (s32[], f32[2]) {
  %s = (s32[], f32[2]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = f32[2]{0} get-tuple-element(%s), index=1
  %sum = f32[2]{0} all-reduce(%v), replica_groups={}, to_apply=%add
  %half = f32[] constant(0.5)
  %halves = f32[2]{0} broadcast(%half), dimensions={}
  %next = f32[2]{0} multiply(%sum, %halves)
  %one = s32[] constant(1)
  %j = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[2]{0}) tuple(%j, %next)
}

)");
  auto outputs = RunReplicated(text, Ramps(4, 2));
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  // Sum of d*100+i over d is 600+4i; then *0.5*4 twice more: (600+4i)*0.5*2*2 = 2*(600+4i).
  for (int d = 0; d < 4; ++d) EXPECT_EQ((*outputs)[static_cast<size_t>(d)][0], Literal::CreateR1<float>({1200, 1208})) << d;
}

TEST(InterpreterReplicatedTest, AGeneralReducerCombinesInGroupOrder) {
  // a*2 + b is not commutative: the result shows the order, ((x0*2 + x1)*2 + x2).
  const std::string reducer = "%weighted (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
                              "  %b = f32[] parameter(1)\n  %two = f32[] constant(2)\n  %m = f32[] multiply(%a, %two)\n"
                              "  ROOT %s = f32[] add(%m, %b)\n}\n\n";
  std::string text = Module("  %x = f32[1]{0} parameter(0)\n"
                            "  ROOT %r = f32[1]{0} all-reduce(%x), replica_groups={{2,0,1}}, to_apply=%weighted\n",
                            reducer);
  std::vector<std::vector<Literal>> arguments(3);
  for (int d = 0; d < 3; ++d) arguments[static_cast<size_t>(d)].push_back(Literal::CreateR1<float>({float(d + 1)}));
  auto outputs = RunReplicated(text, arguments);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  // Group order 2, 0, 1: values 3, 1, 2 -> (3*2 + 1)*2 + 2 = 16 on every device.
  for (int d = 0; d < 3; ++d) EXPECT_EQ((*outputs)[static_cast<size_t>(d)][0], Literal::CreateR1<float>({16})) << d;
}

TEST(InterpreterReplicatedTest, AllToAll) {
  // Array form: device d splits [4] into pieces of one and gets piece d of everybody.
  std::string array = Module("  %x = f32[4]{0} parameter(0)\n"
                             "  ROOT %a = f32[4]{0} all-to-all(%x), replica_groups={}, dimensions={0}\n");
  auto outputs = RunReplicated(array, Ramps(4, 4));
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  EXPECT_EQ((*outputs)[1][0], Literal::CreateR1<float>({1, 101, 201, 301}));
  EXPECT_EQ((*outputs)[3][0], Literal::CreateR1<float>({3, 103, 203, 303}));
  // Tuple form: the i-th result is what device i sends to this one (its operand numbered by this device).
  std::string tuple = Module("  %x = f32[2]{0} parameter(0)\n  %y = f32[2]{0} negate(%x)\n"
                             "  ROOT %a = (f32[2]{0}, f32[2]{0}) all-to-all(%x, %y), replica_groups={{0,1}}\n");
  outputs = RunReplicated(tuple, Ramps(2, 2));
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  EXPECT_EQ((*outputs)[0][0], Literal::CreateR1<float>({0, 1}));
  EXPECT_EQ((*outputs)[0][1], Literal::CreateR1<float>({100, 101}));
  EXPECT_EQ((*outputs)[1][0], Literal::CreateR1<float>({-0.0f, -1}));
  EXPECT_EQ((*outputs)[1][1], Literal::CreateR1<float>({-100, -101}));
}

TEST(InterpreterReplicatedTest, AFailingDeviceStopsTheOthersWithItsError) {
  // Device 2 has no infeed; the others wait for it at the all-reduce and must not hang.
  std::string text = Module(R"(  %token = token[] after-all()
  %in = (f32[2]{0}, token[]) infeed(%token)
  %x = f32[2]{0} get-tuple-element(%in), index=0
  ROOT %r = f32[2]{0} all-reduce(%x), replica_groups={}, to_apply=%add
)",
                            kAddComputation);
  std::vector<std::deque<Literal>> queues(4);
  std::vector<InterpreterOptions> options(4);
  for (int d = 0; d < 4; ++d) {
    if (d != 2) queues[static_cast<size_t>(d)].push_back(Literal::CreateR1<float>({1, 2}));
    options[static_cast<size_t>(d)].infeed = InfeedQueue(&queues[static_cast<size_t>(d)]);
  }
  auto outputs = RunReplicated(text, std::vector<std::vector<Literal>>(4), options);
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(outputs.status().message().find("device 2: infeed %in of f32[2]: the infeed queue is empty"),
            std::string::npos)
      << outputs.status();
  // With every queue filled the same module runs.
  for (auto& queue : queues) queue.assign(1, Literal::CreateR1<float>({1, 2}));
  outputs = RunReplicated(text, std::vector<std::vector<Literal>>(4), options);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  EXPECT_EQ((*outputs)[3][0], Literal::CreateR1<float>({4, 8}));
}

TEST(InterpreterReplicatedTest, DevicesWaitingOnDifferentCollectivesFailInsteadOfHanging) {
  // Replica 0 takes the true branch (an all-reduce), replica 1 the false one (an all-gather).
  std::string text = Module(R"(  %x = f32[2]{0} parameter(0)
  %id = u32[] replica-id()
  %zero = u32[] constant(0)
  %first = pred[] compare(%id, %zero), direction=EQ
  ROOT %c = f32[2]{0} conditional(%first, %x, %x), true_computation=%reduce, false_computation=%gather
)",
                            std::string(kAddComputation) + R"(%reduce (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  ROOT %r = f32[2]{0} all-reduce(%a), replica_groups={}, to_apply=%add
}

%gather (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %s = f32[1]{0} slice(%a), slice={[0:1]}
  ROOT %g = f32[2]{0} all-gather(%s), replica_groups={}, dimensions={0}
}

)");
  auto outputs = RunReplicated(text, Ramps(2, 2));
  ASSERT_FALSE(outputs.ok());
  EXPECT_EQ(outputs.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(outputs.status().message().find("wait on each other's collectives"), std::string::npos) << outputs.status();
  EXPECT_NE(outputs.status().message().find("all-reduce %r"), std::string::npos) << outputs.status();
  EXPECT_NE(outputs.status().message().find("all-gather %g"), std::string::npos) << outputs.status();
}

TEST(InterpreterTest, OtherCollectivesOnOneReplica) {
  Literal x = Literal::CreateR1<float>({1, 2, 3, 4});
  EXPECT_EQ(RunOne(Module("  %x = f32[4]{0} parameter(0)\n"
                          "  ROOT %g = f32[4]{0} all-gather(%x), replica_groups={{0}}, dimensions={0}\n"), {x}), x);
  EXPECT_EQ(RunOne(Module("  %x = f32[4]{0} parameter(0)\n"
                          "  ROOT %s = f32[4]{0} reduce-scatter(%x), replica_groups={{0}}, dimensions={0}, to_apply=%add\n",
                          kAddComputation), {x}), x);
  EXPECT_EQ(RunOne(Module("  %x = f32[4]{0} parameter(0)\n"
                          "  ROOT %p = f32[4]{0} collective-permute(%x), source_target_pairs={{0,0}}\n"), {x}), x);
  // Nobody sends to replica 0: it receives zeros.
  EXPECT_EQ(RunOne(Module("  %x = f32[4]{0} parameter(0)\n"
                          "  ROOT %p = f32[4]{0} collective-permute(%x), source_target_pairs={}\n"), {x}),
            Literal(Shape::Make(PrimitiveType::F32, {4})));
  // Two operands give a tuple.
  std::vector<Literal> both = RunAll(Module("  %x = f32[4]{0} parameter(0)\n  %y = f32[4]{0} negate(%x)\n"
                                            "  ROOT %r = (f32[4]{0}, f32[4]{0}) all-reduce(%x, %y), replica_groups={}, to_apply=%add\n",
                                            kAddComputation), {x});
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[0], x);
  EXPECT_EQ(both[1], Literal::CreateR1<float>({-1, -2, -3, -4}));
}

TEST(InterpreterTest, GatherWithImplicitIndexVectorDimension) {
  // index_vector_dim equal to the indices' rank: each scalar index is a one-element start vector.
  std::string text = Module("  %v = s32[6]{0} parameter(0)\n  %i = s32[2,2]{1,0} parameter(1)\n"
                            "  ROOT %g = s32[2,2]{1,0} gather(%v, %i), offset_dims={}, collapsed_slice_dims={0}, "
                            "start_index_map={0}, index_vector_dim=2, slice_sizes={1}\n");
  Literal values = Literal::CreateR1<int32_t>({10, 11, 12, 13, 14, 15});
  Literal out = RunOne(text, {values, Literal::CreateR2<int32_t>({{5, 0}, {2, -3}})});
  EXPECT_EQ(out, Literal::CreateR2<int32_t>({{15, 10}, {12, 10}}));
}

// ---------------------------------------------------------------------------------------------------
// The shared real training steps, end to end.

TEST(InterpreterTest, MamlTrainStep) {
  std::string text = testing::ReadSharedHlo("maml_flax_train_step.hlo");
  if (text.empty()) GTEST_SKIP() << "no ../shared/hlo";
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const HloComputation* entry = (*module)->entry_computation();
  std::mt19937 rng(42);
  std::vector<Literal> arguments;
  for (const HloInstruction* parameter : entry->parameter_instructions())
    arguments.push_back(Literal::Random(parameter->shape(), rng));
  arguments[0] = Literal::CreateR0<int32_t>(41);
  auto outputs = Interpret(**module, arguments);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  const Shape& root = entry->root_instruction()->shape();
  ASSERT_EQ(outputs->size(), root.tuple_shapes.size());
  for (size_t i = 0; i < outputs->size(); ++i) {
    EXPECT_EQ((*outputs)[i].shape(), root.tuple_shapes[i]) << i;
    for (float v : (*outputs)[i].ToFloatVector()) ASSERT_TRUE(std::isfinite(v)) << "output " << i;
  }
  EXPECT_EQ((*outputs)[0].Get<int32_t>(0), 42);  // step counter
  // SGD with momentum 0.9 and learning rate 0.01: outputs 1..6 are the new momenta, 7..12 the new params,
  // and param_new = param_old - fl(momentum_new * 0.01) exactly in fp32.
  for (int j = 0; j < 6; ++j) {
    const Literal& momentum = (*outputs)[1 + j];
    const Literal& param_new = (*outputs)[7 + j];
    const Literal& param_old = arguments[7 + j];
    for (int64_t e = 0; e < momentum.element_count(); ++e)
      EXPECT_EQ(param_new.Get<float>(e), param_old.Get<float>(e) - momentum.Get<float>(e) * 0.01f) << j << "," << e;
  }
  float loss = (*outputs)[13].Get<float>(0);
  EXPECT_GT(loss, 0.0f);
  // The reference is deterministic: a second run gives the same bits.
  auto again = Interpret(**module, arguments);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[13], (*outputs)[13]);
}

TEST(InterpreterTest, PytorchMnistTrainStep) {
  std::string text = testing::ReadSharedHlo("pytorch_xla_mnist_mlp_train_step.hlo");
  if (text.empty()) GTEST_SKIP() << "no ../shared/hlo";
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const HloComputation* entry = (*module)->entry_computation();
  std::mt19937 rng(7);
  std::vector<Literal> arguments;
  for (const HloInstruction* parameter : entry->parameter_instructions())
    arguments.push_back(Literal::Random(parameter->shape(), rng));
  arguments[0] = Literal::CreateR0<float>(-0.05f);  // p0: the SGD step, -lr
  std::vector<int64_t> labels;
  for (int i = 0; i < 32; ++i) labels.push_back(static_cast<int64_t>(rng() % 10));
  arguments[8] = Literal::CreateR1<int64_t>(labels);
  auto outputs = Interpret(**module, arguments);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  const Shape& root = entry->root_instruction()->shape();
  ASSERT_EQ(outputs->size(), 16u);
  for (size_t i = 0; i < outputs->size(); ++i) {
    EXPECT_EQ((*outputs)[i].shape(), root.tuple_shapes[i]) << i;
    if ((*outputs)[i].shape().element_type == PrimitiveType::F32) {
      for (float v : (*outputs)[i].ToFloatVector()) ASSERT_TRUE(std::isfinite(v)) << "output " << i;
    }
  }
  // Output 8 is log_softmax: every row's probabilities sum to 1.
  const Literal& log_probs = (*outputs)[8];
  double nll = 0;
  for (int row = 0; row < 32; ++row) {
    double total = 0;
    for (int c = 0; c < 10; ++c) total += std::exp(static_cast<double>(log_probs.Get<float>(row * 10 + c)));
    EXPECT_NEAR(total, 1.0, 1e-5) << row;
    nll -= log_probs.Get<float>(row * 10 + static_cast<int>(labels[row]));
  }
  // Output 9 is the mean NLL loss of those log-probabilities.
  EXPECT_NEAR((*outputs)[9].Get<float>(0), nll / 32, 1e-4);
  // Passthroughs and the SGD update: w1_new = w1 + grad * p0 exactly (output 15 is the gradient).
  EXPECT_EQ((*outputs)[6], arguments[3]);
  EXPECT_EQ((*outputs)[7], arguments[8]);
  const Literal& w1_new = (*outputs)[0];
  const Literal& grad = (*outputs)[15];
  for (int64_t e = 0; e < w1_new.element_count(); e += 97)
    EXPECT_EQ(w1_new.Get<float>(e), arguments[2].Get<float>(e) + grad.Get<float>(e) * -0.05f) << e;
}


TEST(InterpreterTest, InfeedAndOutfeedInALoopUseTheQueuesInOrder) {
  auto module = ParseHloModule(testing::FeedLoopModule(4));
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_TRUE(VerifyHloModule(**module).ok());
  std::deque<Literal> infeed;
  for (int step = 0; step < 3; ++step) {
    std::vector<Literal> batch;
    batch.push_back(Literal(Shape::Make(PrimitiveType::F32, {3, 4}), std::vector<float>(12, float(step + 1))));
    Literal labels(Shape::Make(PrimitiveType::S32, {3}));
    labels.Set<int32_t>(0, step);
    labels.Set<int32_t>(1, -step);
    batch.push_back(labels);
    infeed.push_back(Literal::MakeTuple(std::move(batch)));
  }
  std::vector<Literal> outfeed;
  InterpreterOptions options;
  options.infeed = InfeedQueue(&infeed);
  options.outfeed = OutfeedQueue(&outfeed);
  auto outputs = Interpret(**module, {Literal(Shape::Make(PrimitiveType::F32, {4}), {0, 0, 0, 0})}, options);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  // Each step adds 3 * (step + 1) to every element.
  EXPECT_EQ((*outputs)[0].Get<float>(3), 3.0f + 6.0f + 9.0f);
  EXPECT_TRUE(infeed.empty());
  ASSERT_EQ(outfeed.size(), 3u);
  EXPECT_EQ(outfeed[0].tuple_elements()[0].Get<float>(0), 12.0f);
  EXPECT_EQ(outfeed[2].tuple_elements()[0].Get<float>(0), 72.0f);
  EXPECT_EQ(outfeed[2].tuple_elements()[1].Get<int32_t>(1), -2);

  // One batch short: the third infeed finds the queue empty; a batch of the wrong shape is named.
  infeed.clear();
  outfeed.clear();
  infeed.push_back(Literal::MakeTuple({Literal(Shape::Make(PrimitiveType::F32, {3, 4})), Literal(Shape::Make(PrimitiveType::S32, {3}))}));
  infeed.push_back(Literal(Shape::Make(PrimitiveType::F32, {3, 4})));
  auto wrong = Interpret(**module, {Literal(Shape::Make(PrimitiveType::F32, {4}))}, options);
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument) << wrong.status();
  EXPECT_NE(wrong.status().message().find("was given f32[3,4]"), std::string::npos) << wrong.status();
  infeed.clear();
  auto empty = Interpret(**module, {Literal(Shape::Make(PrimitiveType::F32, {4}))}, options);
  EXPECT_EQ(empty.status().code(), StatusCode::kFailedPrecondition) << empty.status();
  EXPECT_NE(empty.status().message().find("infeed queue is empty"), std::string::npos) << empty.status();
}

}  // namespace
}  // namespace tpu::hlo
