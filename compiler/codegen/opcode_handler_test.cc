#include "compiler/codegen/opcode_handler.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/hlo/parser.h"

namespace tpu::compiler::codegen_internal {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

// The opcodes the code generator lowers (README.md, "Lowerings").
const std::set<HloOpcode> kLowered = {
    HloOpcode::kAbs,                  HloOpcode::kAdd,                  HloOpcode::kAfterAll,
    HloOpcode::kAnd,                  HloOpcode::kInfeed,               HloOpcode::kOutfeed,
    HloOpcode::kAllReduce,            HloOpcode::kReplicaId,            HloOpcode::kPartitionId,
    HloOpcode::kAllGather,            HloOpcode::kReduceScatter,        HloOpcode::kCollectivePermute,
    HloOpcode::kBitcast,              HloOpcode::kBitcastConvert,       HloOpcode::kBroadcast,
    HloOpcode::kCeil,                 HloOpcode::kClamp,                HloOpcode::kCompare,
    HloOpcode::kConcatenate,          HloOpcode::kConditional,          HloOpcode::kConstant,
    HloOpcode::kConvert,              HloOpcode::kConvolution,          HloOpcode::kCopy,
    HloOpcode::kCustomCall,           HloOpcode::kDivide,               HloOpcode::kDot,
    HloOpcode::kDynamicSlice,         HloOpcode::kDynamicUpdateSlice,   HloOpcode::kExp,
    HloOpcode::kExpm1,                HloOpcode::kFloor,                HloOpcode::kFusion,
    HloOpcode::kGather,               HloOpcode::kGetTupleElement,      HloOpcode::kLog,
    HloOpcode::kLog1p,                HloOpcode::kLogistic,             HloOpcode::kMaximum,
    HloOpcode::kMinimum,              HloOpcode::kMultiply,             HloOpcode::kNegate,
    HloOpcode::kNot,                  HloOpcode::kOr,                   HloOpcode::kPad,
    HloOpcode::kParameter,            HloOpcode::kPower,                HloOpcode::kReduce,
    HloOpcode::kReducePrecision,      HloOpcode::kReduceWindow,         HloOpcode::kReshape,
    HloOpcode::kReverse,              HloOpcode::kRoundNearestAfz,      HloOpcode::kRoundNearestEven,
    HloOpcode::kRsqrt,                HloOpcode::kScatter,              HloOpcode::kSelect,
    HloOpcode::kSelectAndScatter,     HloOpcode::kShiftLeft,            HloOpcode::kShiftRightArithmetic,
    HloOpcode::kShiftRightLogical,    HloOpcode::kSign,                 HloOpcode::kSlice,
    HloOpcode::kSqrt,                 HloOpcode::kSubtract,             HloOpcode::kTanh,
    HloOpcode::kTranspose,            HloOpcode::kTuple,                HloOpcode::kWhile,
    HloOpcode::kXor,
};

// Opcode names, for readable failures.
std::set<std::string> Names(const std::set<HloOpcode>& opcodes) {
  std::set<std::string> names;
  for (HloOpcode opcode : opcodes) names.insert(hlo::HloOpcodeString(opcode));
  return names;
}

std::string NotFoundMessage(const std::string& op, const std::string& node) {
  return "No registered '" + op + "' OpKernel for XLA_TPU_JIT devices compatible with node " + node;
}

// The entry instruction `name` of a parsed module (kept alive by the fixture).
class OpcodeHandlerTest : public ::testing::Test {
 protected:
  const HloInstruction& Parse(const std::string& text, const std::string& name) {
    StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text);
    EXPECT_TRUE(module.ok()) << module.status();
    modules_.push_back(std::move(module).value());
    const HloInstruction* instruction = modules_.back()->entry_computation()->GetInstructionWithName(name);
    EXPECT_NE(instruction, nullptr) << name;
    return *instruction;
  }
  // CheckSupported of `op` applied to parameters of `operand_shape` (as many as its arity), with result
  // `shape`.
  Status CheckOp(const std::string& op, const std::string& shape, const std::string& operand_shape, int operands) {
    std::string signature, parameters, arguments;
    for (int i = 0; i < operands; ++i) {
      const std::string p = "p" + std::to_string(i);
      signature += (i ? ", " : "") + p + ": " + operand_shape;
      parameters += "  %" + p + " = " + operand_shape + " parameter(" + std::to_string(i) + ")\n";
      arguments += (i ? ", " : "") + operand_shape + " %" + p;
    }
    const std::string text = "HloModule m\nENTRY %main (" + signature + ") -> " + shape + " {\n" + parameters +
                             "  ROOT %r = " + shape + " " + op + "(" + arguments + ")\n}\n";
    return CheckSupported(Parse(text, "r"));
  }

 private:
  std::vector<std::unique_ptr<hlo::HloModule>> modules_;
};

// Every opcode the parser knows (the interpreter's are among them) has a handler when the code
// generator lowers it, and gets the NotFound of the TensorFlow bridge otherwise.
TEST_F(OpcodeHandlerTest, EveryOpcodeHasAHandlerOrIsNotFound) {
  for (int i = 0; i <= static_cast<int>(HloOpcode::kUnknown); ++i) {
    const HloOpcode opcode = static_cast<HloOpcode>(i);
    const std::string name = hlo::HloOpcodeString(opcode);
    if (opcode != HloOpcode::kUnknown) ASSERT_EQ(hlo::StringToHloOpcode(name), opcode) << name;
    const OpcodeHandler* handler = OpcodeHandlers().Find(opcode);
    EXPECT_EQ(handler != nullptr, kLowered.count(opcode) > 0) << name;
    if (handler != nullptr) {
      EXPECT_EQ(handler->opcode, opcode) << name;
      continue;
    }
    std::unique_ptr<HloInstruction> instruction =
        HloInstruction::Create(opcode, hlo::Shape::Make(hlo::PrimitiveType::F32, {4, 8}), {}, "node.7");
    if (opcode == HloOpcode::kUnknown) instruction->set_unknown_opcode_name("frobnicate");
    const Status status = CheckSupported(*instruction);
    EXPECT_EQ(status.code(), StatusCode::kNotFound) << name;
    EXPECT_EQ(status.message(), NotFoundMessage(opcode == HloOpcode::kUnknown ? "frobnicate" : name, "node.7"));
  }
}

TEST_F(OpcodeHandlerTest, ExactlyOneHandlerPerOpcode) {
  OpcodeHandlerTable table;
  AddOpcodeHandlers(table);
  EXPECT_TRUE(table.duplicates().empty());
  std::set<HloOpcode> opcodes;
  for (const OpcodeHandler* handler : table.handlers()) {
    EXPECT_TRUE(opcodes.insert(handler->opcode).second) << hlo::HloOpcodeString(handler->opcode);
    EXPECT_EQ(table.Find(handler->opcode), handler);
  }
  EXPECT_EQ(Names(opcodes), Names(kLowered));

  // A second handler for an opcode is kept out and reported.
  OpcodeHandlerTable twice;
  twice.Add(OpcodeHandler(HloOpcode::kAdd));
  OpcodeHandler second(HloOpcode::kAdd);
  second.types = ElementTypes::kDeviceWord;
  twice.Add(std::move(second));
  EXPECT_EQ(twice.duplicates(), std::vector<HloOpcode>{HloOpcode::kAdd});
  EXPECT_EQ(twice.Find(HloOpcode::kAdd)->types, ElementTypes::kF32);
  EXPECT_EQ(twice.handlers().size(), 1u);
}

TEST_F(OpcodeHandlerTest, F32OnlyOpsRejectIntegers) {
  for (const char* op : {"exponential", "log", "rsqrt", "sqrt", "tanh", "logistic", "floor", "ceil",
                         "round-nearest-even", "round-nearest-afz", "exponential-minus-one", "log-plus-one"}) {
    EXPECT_TRUE(CheckOp(op, "f32[4,8]", "f32[4,8]", 1).ok()) << op;
    const Status status = CheckOp(op, "s32[4,8]", "s32[4,8]", 1);
    EXPECT_EQ(status.code(), StatusCode::kUnimplemented) << op;
    EXPECT_EQ(status.message(), std::string("r has element type s32; this code generator lowers ") + op +
                                    " for f32 only (docs/opcodes.md)");
  }
  for (const char* op : {"divide", "power"}) {
    EXPECT_TRUE(CheckOp(op, "f32[4,8]", "f32[4,8]", 2).ok()) << op;
    EXPECT_EQ(CheckOp(op, "s32[4,8]", "s32[4,8]", 2).message(),
              std::string("r has element type s32; this code generator lowers ") + op + " for f32 only (docs/opcodes.md)");
  }
  EXPECT_EQ(CheckOp("dot", "s32[4,4]", "s32[4,4]", 2).message(),
            "r has element type s32; this code generator lowers dot for f32 or bf16 result and operands (bf16 exact "
            "on the MXU) only (docs/opcodes.md)");
}

TEST_F(OpcodeHandlerTest, IntegerLanes) {
  for (const char* op : {"add", "subtract", "multiply"}) {
    for (const char* type : {"f32", "s32", "u32", "s64"}) {
      const std::string shape = std::string(type) + "[4,8]";
      EXPECT_TRUE(CheckOp(op, shape, shape, 2).ok()) << op << " " << type;
    }
    EXPECT_EQ(CheckOp(op, "bf16[4,8]", "bf16[4,8]", 2).message(),
              std::string("r has element type bf16; this code generator lowers ") + op +
                  " for f32, s32, u32, s64 (in the s32 range) only (docs/opcodes.md)");
  }
  // The VPU orders integers as s32: no u32 maximum or minimum (they would be wrong above 2^31).
  for (const char* op : {"maximum", "minimum"}) {
    EXPECT_TRUE(CheckOp(op, "s32[4,8]", "s32[4,8]", 2).ok()) << op;
    EXPECT_EQ(CheckOp(op, "u32[4,8]", "u32[4,8]", 2).message(),
              std::string("r has element type u32; this code generator lowers ") + op +
                  " for f32, s32, s64 (in the s32 range) only (docs/opcodes.md)");
  }
  // bitcast-convert: the same words as another 32-bit type.
  EXPECT_TRUE(CheckOp("bitcast-convert", "f32[4,8]", "u32[4,8]", 1).ok());
  EXPECT_EQ(CheckOp("bitcast-convert", "s32[4,8]", "f32[4,8]", 1).ok(), true);
  EXPECT_EQ(CheckOp("bitcast-convert", "f32[4,8]", "pred[4,8]", 1).message(),
            "bitcast-convert r from pred to f32: only between the 32-bit types f32, s32 and u32");
  // Shifts of s32 and u32 words.
  for (const char* op : {"shift-left", "shift-right-logical", "shift-right-arithmetic"}) {
    EXPECT_TRUE(CheckOp(op, "u32[4,8]", "u32[4,8]", 2).ok()) << op;
    EXPECT_EQ(CheckOp(op, "pred[4,8]", "pred[4,8]", 2).message(),
              std::string("r has element type pred; this code generator lowers ") + op + " for s32, u32 only (docs/opcodes.md)");
  }
  // Bitwise ops on the raw words of pred, s32 and u32.
  for (const char* op : {"and", "or", "xor", "not"}) {
    const int operands = std::string(op) == "not" ? 1 : 2;
    for (const char* type : {"pred", "s32", "u32"}) {
      const std::string shape = std::string(type) + "[4,8]";
      EXPECT_TRUE(CheckOp(op, shape, shape, operands).ok()) << op << " " << type;
    }
    EXPECT_EQ(CheckOp(op, "f32[4,8]", "f32[4,8]", operands).message(),
              std::string("r has element type f32; this code generator lowers ") + op +
                  " for pred, s32, u32 only (docs/opcodes.md)");
  }
  EXPECT_TRUE(CheckOp("negate", "s64[4,8]", "s64[4,8]", 1).ok());
  // Signed compares on the INT lanes: no u32.
  for (const char* op : {"abs", "sign"}) {
    EXPECT_TRUE(CheckOp(op, "s32[4,8]", "s32[4,8]", 1).ok()) << op;
    EXPECT_EQ(CheckOp(op, "u32[4,8]", "u32[4,8]", 1).message(),
              std::string("r has element type u32; this code generator lowers ") + op +
                  " for f32, s32, s64 (in the s32 range) only (docs/opcodes.md)");
  }
  EXPECT_TRUE(CheckOp("clamp", "s32[4,8]", "s32[4,8]", 3).ok());
  // Data movement takes any device word, not f64.
  EXPECT_TRUE(CheckOp("reverse", "pred[4,8]", "pred[4,8]", 1).ok());
  EXPECT_EQ(CheckOp("copy", "f64[4,8]", "f64[4,8]", 1).message(),
            "r has element type f64; this code generator lowers copy for f32, bf16, f16, s8, s16, s32, u8, u16, u32, pred, "
            "s64 (in the s32 range) only (docs/opcodes.md)");
  // The narrow integers move as words; their arithmetic is s32's after integer-normalization.
  EXPECT_TRUE(CheckOp("copy", "u8[4,8]", "u8[4,8]", 1).ok());
  EXPECT_FALSE(CheckOp("add", "s8[4,8]", "s8[4,8]", 2).ok());
  // f16 moves as words and widens to f32 as a copy; its arithmetic is f32's after f16-normalization, and
  // the converts into f16 are f16-rounding-expansion's arithmetic.
  EXPECT_TRUE(CheckOp("copy", "f16[4,8]", "f16[4,8]", 1).ok());
  EXPECT_TRUE(CheckOp("convert", "f32[4,8]", "f16[4,8]", 1).ok());
  EXPECT_FALSE(CheckOp("add", "f16[4,8]", "f16[4,8]", 2).ok());
  for (const char* from : {"f32", "s32", "bf16"}) {
    EXPECT_EQ(CheckOp("convert", "f16[4,8]", std::string(from) + "[4,8]", 1).message(),
              std::string("convert r from ") + from +
                  " to f16: f16 converts run as f32 arithmetic written by codegen preparation (f16-normalization, "
                  "f16-rounding-expansion); this one was not rewritten");
  }
}

// Windows of whole rows at s32 (or constant) starts; the rest is refused with what is lowered.
TEST_F(OpcodeHandlerTest, DynamicSlicesOfWholeRows) {
  const std::string text = R"(HloModule m
ENTRY %main (a: f32[6,4], i: s32[], j: s64[]) -> f32[2,4] {
  %a = f32[6,4]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %j = s64[] parameter(2)
  %zero = s32[] constant(0)
  %rows = f32[2,4]{1,0} dynamic-slice(%a, %i, %i), dynamic_slice_sizes={2,4}
  %lanes = f32[2,3]{1,0} dynamic-slice(%a, %i, %zero), dynamic_slice_sizes={2,3}
  ROOT %wide = f32[2,4]{1,0} dynamic-slice(%a, %j, %zero), dynamic_slice_sizes={2,4}
}
)";
  EXPECT_TRUE(CheckSupported(Parse(text, "rows")).ok());
  EXPECT_EQ(CheckSupported(Parse(text, "lanes")).message(),
            "dynamic-slice lanes: a window of 3 of the 4 elements of the minor dimension (lanes) is not lowered; only "
            "windows of whole rows");
  EXPECT_EQ(CheckSupported(Parse(text, "wide")).message(),
            "dynamic-slice wide: start index j is s64; the device reads s32 start indices (constants of any type)");
}

// Found by the HLO fuzzer (a division by zero in EmitReshape): a bitcast that changes the element count
// passes the verifier, as in XLA, and is refused here.
TEST_F(OpcodeHandlerTest, BitcastThatChangesTheElementCountIsRefused) {
  const std::string text = R"(HloModule row_to_column
ENTRY %main (x: f32[8]) -> f32[8,1] {
  %x = f32[8]{0} parameter(0)
  %same = f32[8,1]{1,0} bitcast(f32[8]{0} %x)
  ROOT %column = f32[8,0]{1,0} bitcast(f32[8]{0} %x)
}
)";
  EXPECT_TRUE(CheckSupported(Parse(text, "same")).ok());
  const Status status = CheckSupported(Parse(text, "column"));
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(status.message(), "bitcast column from f32[8] to f32[8,0] changes the element count: only bitcasts that "
                              "are reshapes are supported");
}

TEST_F(OpcodeHandlerTest, CompareTakesPredResultsOfDeviceOperands) {
  const std::string text = R"(HloModule m
ENTRY %main (a: f32[4,8], b: f32[4,8], c: f64[4,8], d: f64[4,8]) -> pred[4,8] {
  %a = f32[4,8]{1,0} parameter(0)
  %b = f32[4,8]{1,0} parameter(1)
  %c = f64[4,8]{1,0} parameter(2)
  %d = f64[4,8]{1,0} parameter(3)
  %lt = pred[4,8]{1,0} compare(f32[4,8]{1,0} %a, f32[4,8]{1,0} %b), direction=LT
  ROOT %wide = pred[4,8]{1,0} compare(f64[4,8]{1,0} %c, f64[4,8]{1,0} %d), direction=LT
}
)";
  EXPECT_TRUE(CheckSupported(Parse(text, "lt")).ok());
  // u32 operands: equality only (the VPU orders integers as s32).
  const std::string unsigned_text = R"(HloModule m
ENTRY %main (a: u32[4], b: u32[4]) -> pred[4] {
  %a = u32[4]{0} parameter(0)
  %b = u32[4]{0} parameter(1)
  %eq = pred[4]{0} compare(u32[4]{0} %a, u32[4]{0} %b), direction=EQ
  ROOT %lt = pred[4]{0} compare(u32[4]{0} %a, u32[4]{0} %b), direction=LT
}
)";
  EXPECT_TRUE(CheckSupported(Parse(unsigned_text, "eq")).ok());
  EXPECT_EQ(CheckSupported(Parse(unsigned_text, "lt")).message(),
            "compare lt: the VPU orders integers as s32; direction=LT of u32 values is not lowered (EQ and NE are)");
  EXPECT_EQ(CheckSupported(Parse(text, "wide")).message(),
            "wide has element type pred; this code generator lowers compare for pred result of f32, s32, u32, s64 or "
            "pred operands only (docs/opcodes.md)");
}

// Attributes are checked before the value's shape: a variadic reduce is reported as such, not as a tuple.
TEST_F(OpcodeHandlerTest, AttributesTheLoweringsDoNotTake) {
  const std::string text = R"(HloModule m
%product (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %m = f32[] multiply(f32[] %x, f32[] %y)
}
%argmax (x: f32[], i: s32[], y: f32[], j: s32[]) -> (f32[], s32[]) {
  %x = f32[] parameter(0)
  %i = s32[] parameter(1)
  %y = f32[] parameter(2)
  %j = s32[] parameter(3)
  %m = f32[] maximum(f32[] %x, f32[] %y)
  %k = s32[] maximum(s32[] %i, s32[] %j)
  ROOT %t = (f32[], s32[]) tuple(f32[] %m, s32[] %k)
}
ENTRY %main (a: f32[2,4,8], b: s32[2,4,8]) -> f32[4,2,8] {
  %a = f32[2,4,8]{2,1,0} parameter(0)
  %b = s32[2,4,8]{2,1,0} parameter(1)
  %zero = f32[] constant(0)
  %izero = s32[] constant(0)
  %rotate = f32[4,8,2]{2,1,0} transpose(f32[2,4,8]{2,1,0} %a), dimensions={1,2,0}
  %rows = f32[4,2,8]{2,1,0} transpose(f32[2,4,8]{2,1,0} %a), dimensions={1,0,2}
  %prod = f32[4,8]{1,0} reduce(f32[2,4,8]{2,1,0} %a, f32[] %zero), dimensions={0}, to_apply=%product
  %pair = (f32[4,8], s32[4,8]) reduce(f32[2,4,8]{2,1,0} %a, s32[2,4,8]{2,1,0} %b, f32[] %zero, s32[] %izero), dimensions={0}, to_apply=%argmax
  %host = f32[2,4,8]{2,1,0} custom-call(f32[2,4,8]{2,1,0} %a), custom_call_target="SomeHostCallback"
  %ring = f32[2,4,8]{2,1,0} custom-call(f32[2,4,8]{2,1,0} %a), custom_call_target="AwsNeuronTransferWithStaticRing"
  %f16 = f32[2,4,8]{2,1,0} reduce-precision(f32[2,4,8]{2,1,0} %a), exponent_bits=5, mantissa_bits=10
  %bf16 = f32[2,4,8]{2,1,0} reduce-precision(f32[2,4,8]{2,1,0} %a), exponent_bits=8, mantissa_bits=7
  %exact = f16[2,4,8]{2,1,0} custom-call(f32[2,4,8]{2,1,0} %a), custom_call_target="tpusim.ExactF16"
  ROOT %out = f32[4,2,8]{2,1,0} copy(f32[4,2,8]{2,1,0} %rows)
}
)";
  EXPECT_EQ(CheckSupported(Parse(text, "rotate")).message(),
            "transpose rotate of f32[2,4,8]: only rank-2 transposes and row permutations (the minor dimension "
            "stays) are supported");
  EXPECT_TRUE(CheckSupported(Parse(text, "rows")).ok());
  EXPECT_EQ(CheckSupported(Parse(text, "prod")).message(),
            "reduce prod: only a single-operand add, maximum or minimum reduction is supported");
  EXPECT_EQ(CheckSupported(Parse(text, "pair")).message(),
            "reduce pair: only a single-operand add, maximum or minimum reduction is supported");
  EXPECT_EQ(CheckSupported(Parse(text, "host")).message(), NotFoundMessage("custom-call", "host"));
  EXPECT_TRUE(CheckSupported(Parse(text, "ring")).ok());
  EXPECT_EQ(CheckSupported(Parse(text, "f16")).message(), NotFoundMessage("reduce-precision", "f16"));
  EXPECT_TRUE(CheckSupported(Parse(text, "bf16")).ok());
  const hlo::HloInstruction& exact = Parse(text, "exact");
  EXPECT_TRUE(CheckSupported(exact).ok());
  EXPECT_EQ(OpcodeHandlers().Find(HloOpcode::kCustomCall)->SameBufferAs(exact, 8), exact.operand(0));
}

TEST_F(OpcodeHandlerTest, ValuesTheCodeGeneratorCannotHold) {
  const std::string text = R"(HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %x, f32[] %y)
}
ENTRY %main (t: (f32[4], f32[4]), a: f32[4,8]) -> f32[4,8] {
  %t = (f32[4], f32[4]) parameter(0)
  %a = f32[4,8]{1,0} parameter(1)
  %elided = f32[4,8]{1,0} constant({...})
  %known = f32[2]{0} constant({1, 2})
  %pair = (f32[4,8], f32[4,8]) fusion(f32[4,8]{1,0} %a), kind=kLoop, calls=%add
  ROOT %sum = f32[4,8]{1,0} add(f32[4,8]{1,0} %a, f32[4,8]{1,0} %elided)
}
)";
  EXPECT_EQ(CheckSupported(Parse(text, "t")).message(),
            "tuple-shaped parameter t is not supported; pass its elements");
  EXPECT_EQ(CheckSupported(Parse(text, "elided")).message(), "constant elided has no values (the dump elided them)");
  EXPECT_TRUE(CheckSupported(Parse(text, "known")).ok());
  EXPECT_EQ(CheckSupported(Parse(text, "pair")).message(),
            "fusion pair is not a fusion this code generator can lower");
}

// Where values live: no code for parameters, constants and values that are another one's buffer.
TEST_F(OpcodeHandlerTest, BuffersAndCode) {
  const std::string text = R"(HloModule m
ENTRY %main (a: f32[4,8], b: f32[6,10]) -> (f32[32], f32[60]) {
  %a = f32[4,8]{1,0} parameter(0)
  %b = f32[6,10]{1,0} parameter(1)
  %copy = f32[4,8]{1,0} copy(f32[4,8]{1,0} %a)
  %ring = f32[4,8]{1,0} custom-call(f32[4,8]{1,0} %copy), custom_call_target="AwsNeuronTransferWithStaticRing"
  %lines = f32[32]{0} reshape(f32[4,8]{1,0} %ring)
  %lanes = f32[60]{0} reshape(f32[6,10]{1,0} %b)
  %t = (f32[32], f32[60]) tuple(f32[32]{0} %lines, f32[60]{0} %lanes)
  ROOT %first = f32[32]{0} get-tuple-element((f32[32], f32[60]) %t), index=0
}
)";
  const HloInstruction& copy = Parse(text, "copy");
  EXPECT_EQ(OpcodeHandlers().Find(HloOpcode::kCopy)->SameBufferAs(copy, 8), copy.operand(0));
  const HloInstruction& ring = Parse(text, "ring");
  EXPECT_EQ(OpcodeHandlers().Find(HloOpcode::kCustomCall)->SameBufferAs(ring, 8), ring.operand(0));
  const HloInstruction& lines = Parse(text, "lines");  // rows of whole lines: the same lines
  EXPECT_EQ(OpcodeHandlers().Find(HloOpcode::kReshape)->SameBufferAs(lines, 8), lines.operand(0));
  const HloInstruction& lanes = Parse(text, "lanes");  // rows of 10 -> one row of 60: a lane relayout
  EXPECT_EQ(OpcodeHandlers().Find(HloOpcode::kReshape)->SameBufferAs(lanes, 8), nullptr);
  const HloInstruction& first = Parse(text, "first");
  EXPECT_EQ(OpcodeHandlers().Find(HloOpcode::kGetTupleElement)->SameBufferAs(first, 8),
            first.operand(0)->operand(0));

  std::set<HloOpcode> without_code;
  for (const OpcodeHandler* handler : OpcodeHandlers().handlers()) {
    if (!handler->emit) without_code.insert(handler->opcode);
  }
  // A while's and a conditional's code is the driver's: condition, body and branches in line (control_flow.cc).
  // after-all only orders side effects (feeds.cc).
  EXPECT_EQ(Names(without_code), (std::set<std::string>{"after-all", "parameter", "constant", "tuple", "get-tuple-element", "copy",
                                                        "bitcast-convert", "custom-call", "while", "conditional"}));
}

// Results computed over a donated operand: only the chunk-by-chunk elementwise lowerings.
TEST_F(OpcodeHandlerTest, InPlaceOverAnOperand) {
  const std::string text = R"(HloModule m
%fused_relu (param_0: f32[4,8]) -> f32[4,8] {
  %param_0 = f32[4,8]{1,0} parameter(0)
  %constant = f32[] constant(0)
  %broadcast = f32[4,8]{1,0} broadcast(f32[] %constant), dimensions={}
  ROOT %maximum = f32[4,8]{1,0} maximum(f32[4,8]{1,0} %param_0, f32[4,8]{1,0} %broadcast)
}
ENTRY %main (a: f32[4,8], b: f32[4,8]) -> f32[4,8] {
  %a = f32[4,8]{1,0} parameter(0)
  %b = f32[4,8]{1,0} parameter(1)
  %two = f32[] constant(2)
  %sub = f32[4,8]{1,0} subtract(f32[4,8]{1,0} %a, f32[4,8]{1,0} %b)
  %neg = f32[4,8]{1,0} negate(f32[4,8]{1,0} %sub)
  %half = f32[4,8]{1,0} divide(f32[4,8]{1,0} %neg, f32[] %two)
  %ratio = f32[4,8]{1,0} divide(f32[4,8]{1,0} %half, f32[4,8]{1,0} %b)
  %exp = f32[4,8]{1,0} exponential(f32[4,8]{1,0} %ratio)
  %relu = f32[4,8]{1,0} fusion(f32[4,8]{1,0} %exp), kind=kLoop, calls=%fused_relu
  ROOT %bigger = f32[4,8]{1,0} maximum(f32[4,8]{1,0} %relu, f32[4,8]{1,0} %a)
}
)";
  for (const char* name : {"sub", "neg", "half", "relu", "bigger"}) {
    const HloInstruction& instruction = Parse(text, name);
    EXPECT_TRUE(OpcodeHandlers().Find(instruction.opcode())->InPlace(instruction)) << name;
  }
  for (const char* name : {"ratio", "exp"}) {
    const HloInstruction& instruction = Parse(text, name);
    EXPECT_FALSE(OpcodeHandlers().Find(instruction.opcode())->InPlace(instruction)) << name;
  }
}

// Operands folded into instructions are not read from HBM.
TEST_F(OpcodeHandlerTest, FoldedOperands) {
  const std::string text = R"(HloModule m
ENTRY %main (a: f32[4,8], v: f32[8]) -> f32[4,8] {
  %a = f32[4,8]{1,0} parameter(0)
  %v = f32[8]{0} parameter(1)
  %two = f32[] constant(2)
  %row = f32[4,8]{1,0} broadcast(f32[8]{0} %v), dimensions={1}
  %twos = f32[4,8]{1,0} broadcast(f32[] %two), dimensions={}
  %plus = f32[4,8]{1,0} add(f32[4,8]{1,0} %row, f32[4,8]{1,0} %a)
  %minus = f32[4,8]{1,0} subtract(f32[4,8]{1,0} %row, f32[4,8]{1,0} %a)
  %half = f32[4,8]{1,0} divide(f32[4,8]{1,0} %plus, f32[] %two)
  ROOT %scaled = f32[4,8]{1,0} multiply(f32[4,8]{1,0} %half, f32[4,8]{1,0} %twos)
}
)";
  auto reads = [&](const char* user_name, int operand) {
    const HloInstruction& user = Parse(text, user_name);
    return OpcodeHandlers().Find(user.opcode())->ReadsOperand(user, *user.operand(operand), 8);
  };
  EXPECT_FALSE(reads("plus", 0));   // a row broadcast: the VPU takes its row (commutative: swapped second)
  EXPECT_TRUE(reads("plus", 1));
  EXPECT_TRUE(reads("minus", 0));   // operand 0 of a subtraction is always materialized
  EXPECT_FALSE(reads("half", 1));   // a constant divisor: the immediate of a multiplication
  EXPECT_FALSE(reads("scaled", 1)); // a scalar constant's broadcast: an immediate
  EXPECT_FALSE(reads("twos", 0));   // a scalar constant is splatted
  EXPECT_TRUE(reads("row", 0));
}

}  // namespace
}  // namespace tpu::compiler::codegen_internal
