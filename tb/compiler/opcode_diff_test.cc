// Randomized differential tests per opcode. For every opcode the compiler lowers, seeded random HLO
// modules (ranks 1 to 3, sizes such as 1, 7, 9, 13 and 130 that are not multiples of the lane count or the
// MXU size) run through the HLO interpreter, the reference model and the verilated chip:
//  - the model matches the interpreter bit for bit for the exact operations (data movement, integer and
//    fp32 add/sub/mul/max/min, compare, select, convert, abs, sign, floor/ceil/round; up to DAZ/FTZ and the
//    sign of zero), and within the tolerance of docs/numerics.md for the others (reductions, dots and
//    the transcendental sequences, whose ulp errors are printed);
//  - padded lanes of every output are +0 (the invariant of compiler/codegen/codegen.h);
//  - the rtl backend returns exactly the model's bytes.
// Opcodes the compiler does not lower yet (NotFound / Unimplemented) are skipped with a message.
//
// TPU_DIFF_ITERATIONS=N runs N cases per opcode (default 6), TPU_DIFF_SEED=S changes the base seed
// (default 1), TPU_DIFF_CASE=I runs only case I and TPU_DIFF_RTL=0 leaves the rtl backend out; a failure
// prints the module and the line that reproduces it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/program.h"
#include "compiler/hlo/literal.h"
#include "compiler/hlo/parser.h"
#include "compiler/hlo/shape.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/interpreter.h"
#include "sim/tpusim/output_compare.h"
#include "sw/runtime/client.h"
#include "sw/runtime/transport_factory.h"
#include "tpu_config.h"

namespace tpu {
namespace {

using hlo::Literal;
using hlo::PrimitiveType;
using hlo::Shape;
using Rng = std::mt19937;

constexpr PrimitiveType F32 = PrimitiveType::F32;
constexpr PrimitiveType S32 = PrimitiveType::S32;
constexpr PrimitiveType PRED = PrimitiveType::PRED;

// ---------------------------------------------------------------------------------------------------
// Random values and shapes

// Where the random arguments of a parameter come from.
enum class Domain {
  kUnit,      // [-1, 1)
  kSpecial,   // [-8, 8) mixed with +-0, ties such as 2.5, large integers, +-inf and NaN (exact ops only)
  kPositive,  // [1/16, 16)
  kNonZero,   // +-[1/4, 4)
  kExp,       // [-12, 12)
  kTanh,      // +-10^[-4, 1): both branches of the tanh sequence
  kLogistic,  // [-20, 20)
  kInteger,   // s32 [-1000, 1000) mixed with 0, +-1 and the extremes; pred fair
  kShift,     // integer shift amounts 0..39 (32 and more shift everything out)
  kHalf,      // f16's special domain: +-0, inf, NaN, f16 subnormals and the edges of their range, values at
              // and around 65504/65520 (overflow), exact halfway points between f16 values, any f32 in
              // f16's range (as an f16 parameter: rounded to it), f32 subnormals; else [-8, 8)
  kTrig,      // sine/cosine/tan: +-0, inf, NaN, +-102943 (the largest argument reduced), values next to
              // multiples of pi/2, magnitudes 2^[-20, 16.6) and [-8, 8)
  kErf,       // erf: +-0, inf, NaN, the saturation edge +-3.8325069 and its neighbours; else [-5, 5)
  kCbrt,      // cbrt: +-0, inf, NaN, the largest finite values; else signed magnitudes 2^[-126, 128)
  kWords,     // s32/u32: random words shifted right by 0..32 bits (every count of leading zeros), 0, -1
};

float RandomFloat(Rng& rng, Domain domain) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  switch (domain) {
    case Domain::kUnit: return unit(rng);
    case Domain::kSpecial: {
      static const float kSpecials[] = {0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -2.5f, 3.5f, 8388607.5f, 1e7f, -3e7f,
                                        1e30f, INFINITY, -INFINITY, NAN};
      if (rng() % 6 == 0) return kSpecials[rng() % (sizeof(kSpecials) / sizeof(kSpecials[0]))];
      return 8.0f * unit(rng);
    }
    case Domain::kPositive: return std::exp2(4.0f * unit(rng));
    case Domain::kNonZero: return (rng() % 2 ? 1.0f : -1.0f) * std::exp2(2.0f * unit(rng));
    case Domain::kExp: return 12.0f * unit(rng);
    case Domain::kTanh: return (rng() % 2 ? 1.0f : -1.0f) * std::pow(10.0f, 1.5f + 2.5f * unit(rng));
    case Domain::kLogistic: return 20.0f * unit(rng);
    case Domain::kInteger: return std::round(1000.0f * unit(rng));
    case Domain::kShift: return static_cast<float>(rng() % 40);
    case Domain::kHalf: {
      static const float kSpecials[] = {0.0f,      -0.0f,      INFINITY,   -INFINITY,          NAN,
                                        65504.0f,  -65504.0f,  65520.0f,   65519.99609375f,    -70000.0f,
                                        0x1p-24f,  -0x1p-24f,  0x1p-25f,   0x3p-25f,           0x1p-14f,
                                        0x3ffp-24f, -0x3ffp-24f, 1.0f + 0x1p-11f, 1.0f + 0x3p-11f, -2.0f - 0x1p-10f,
                                        1e-8f,     -1e-30f,    1e-40f};
      const float sign = rng() % 2 ? 1.0f : -1.0f;
      switch (rng() % 8) {
        case 0: return kSpecials[rng() % (sizeof(kSpecials) / sizeof(kSpecials[0]))];
        case 1: {  // any f32 from below f16's subnormals to past its overflow
          const int exponent = -27 + static_cast<int>(rng() % 45);
          return sign * std::ldexp(1.0f + static_cast<float>(rng() % (1u << 23)) * 0x1p-23f, exponent);
        }
        case 2: {  // halfway between two neighbouring finite f16 values
          const uint16_t h = static_cast<uint16_t>(rng() % 0x7bff);
          const float low = hlo::HalfToFloat(hlo::half{h}), high = hlo::HalfToFloat(hlo::half{static_cast<uint16_t>(h + 1)});
          return sign * (low + (high - low) / 2);
        }
        default: return 8.0f * unit(rng);
      }
    }
    case Domain::kTrig: {
      static const float kSpecials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 102943.0f, -102943.0f, 3.14159274f,
                                        -1.57079637f, 4.71238899f, 1e-30f};
      const float sign = rng() % 2 ? 1.0f : -1.0f;
      switch (rng() % 6) {
        case 0: return kSpecials[rng() % (sizeof(kSpecials) / sizeof(kSpecials[0]))];
        case 1: {  // the floats around k * pi/2
          const double k = static_cast<double>(rng() % 65536);
          const float near = static_cast<float>(k * 1.5707963267948966);
          const int steps = static_cast<int>(rng() % 5) - 2;
          return sign * (steps < 0 ? std::nextafter(near, 0.0f) : steps > 0 ? std::nextafter(near, INFINITY) : near);
        }
        case 2:
        case 3: return sign * std::exp2(-20.0f + 36.6f * std::fabs(unit(rng)));
        default: return 8.0f * unit(rng);
      }
    }
    case Domain::kErf: {
      static const float kSpecials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 3.83250690f, -3.83250690f,
                                        3.83250666f, -3.83250713f, 1e-20f};
      if (rng() % 6 == 0) return kSpecials[rng() % (sizeof(kSpecials) / sizeof(kSpecials[0]))];
      return 5.0f * unit(rng);
    }
    case Domain::kCbrt: {
      static const float kSpecials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 3.40282347e38f, -3.40282347e38f,
                                        0x1p-126f, 27.0f, -8.0f};
      if (rng() % 6 == 0) return kSpecials[rng() % (sizeof(kSpecials) / sizeof(kSpecials[0]))];
      return (rng() % 2 ? 1.0f : -1.0f) * std::ldexp(1.0f + static_cast<float>(rng() % (1u << 23)) * 0x1p-23f,
                                                     -126 + static_cast<int>(rng() % 254));
    }
    default: break;
  }
  return 0.0f;
}

Literal RandomLiteral(const Shape& shape, Domain domain, Rng& rng) {
  Literal literal(shape);
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    switch (shape.element_type) {
      case F32: literal.Set<float>(i, RandomFloat(rng, domain)); break;
      case S32: {
        if (domain == Domain::kShift) {
          literal.Set<int32_t>(i, static_cast<int32_t>(rng() % 40));
          break;
        }
        if (domain == Domain::kWords) {
          const uint32_t shift = rng() % 33;
          literal.Set<int32_t>(i, rng() % 8 == 0 ? -1 : static_cast<int32_t>(shift == 32 ? 0u : rng() >> shift));
          break;
        }
        static const int32_t kSpecials[] = {0, 1, -1, std::numeric_limits<int32_t>::max(),
                                            std::numeric_limits<int32_t>::min()};
        literal.Set<int32_t>(i, rng() % 8 == 0 ? kSpecials[rng() % 5]
                                               : static_cast<int32_t>(rng() % 2000) - 1000);
        break;
      }
      case PRED: literal.Set<bool>(i, rng() % 2 == 1); break;
      case PrimitiveType::S64: literal.Set<int64_t>(i, static_cast<int64_t>(rng() % 2000) - 1000); break;
      case PrimitiveType::U32:
        if (domain == Domain::kWords) {
          const uint32_t shift = rng() % 33;
          literal.Set<uint32_t>(i, shift == 32 ? 0u : static_cast<uint32_t>(rng()) >> shift);
          break;
        }
        literal.Set<uint32_t>(i, domain == Domain::kShift ? static_cast<uint32_t>(rng() % 40) : static_cast<uint32_t>(rng()));
        break;
      case PrimitiveType::BF16:
      case PrimitiveType::F16: literal.SetFromDouble(i, RandomFloat(rng, domain)); break;
      // The narrow integers over their whole range (shift amounts 0..11).
      case PrimitiveType::S8: literal.Set<int8_t>(i, static_cast<int8_t>(domain == Domain::kShift ? rng() % 12 : rng())); break;
      case PrimitiveType::U8: literal.Set<uint8_t>(i, static_cast<uint8_t>(domain == Domain::kShift ? rng() % 12 : rng())); break;
      case PrimitiveType::S16: literal.Set<int16_t>(i, static_cast<int16_t>(domain == Domain::kShift ? rng() % 20 : rng())); break;
      case PrimitiveType::U16: literal.Set<uint16_t>(i, static_cast<uint16_t>(domain == Domain::kShift ? rng() % 20 : rng())); break;
      default: break;
    }
  }
  return literal;
}

// Sizes that are not multiples of the lane count (8 on tiny, 128 on v2), 1 and some random ones.
int64_t RandomSize(Rng& rng) {
  static const int64_t kSizes[] = {1, 7, 9, 13, 130};
  return rng() % 3 == 0 ? 1 + static_cast<int64_t>(rng() % 40) : kSizes[rng() % 5];
}

std::vector<int64_t> RandomDims(Rng& rng, int rank, int64_t max_elements = 20000) {
  while (true) {
    std::vector<int64_t> dims;
    int64_t elements = 1;
    for (int i = 0; i < rank; ++i) {
      dims.push_back(RandomSize(rng));
      elements *= dims.back();
    }
    if (elements <= max_elements) return dims;
  }
}

// ---------------------------------------------------------------------------------------------------
// HLO text as XLA prints it

std::string ShapeText(const Shape& shape) {
  std::string text = std::string(hlo::PrimitiveTypeName(shape.element_type)) + "[";
  for (size_t i = 0; i < shape.dimensions.size(); ++i) text += (i ? "," : "") + std::to_string(shape.dimensions[i]);
  text += "]{";
  for (int i = shape.rank() - 1; i >= 0; --i) text += std::to_string(i) + (i ? "," : "");
  return text + "}";
}

struct Value {
  std::string name;
  Shape shape;               // arrays
  std::string tuple_shape;   // tuples: the shape text, e.g. "(f32[3]{0}, s32[3]{0})"
  std::string ShapeString() const { return tuple_shape.empty() ? ShapeText(shape) : tuple_shape; }
};

// Builds one module: parameters with their argument domains, instructions, and helper computations.
class ModuleBuilder {
 public:
  Value Parameter(PrimitiveType type, const std::vector<int64_t>& dims, Domain domain) {
    Value value{"%p" + std::to_string(parameters_.size()), Shape::Make(type, dims)};
    body_ += "  " + value.name + " = " + ShapeText(value.shape) + " parameter(" + std::to_string(parameters_.size()) + ")\n";
    parameters_.push_back(value);
    domains_.push_back(domain);
    return value;
  }
  Value Op(PrimitiveType type, const std::vector<int64_t>& dims, const std::string& opcode,
           const std::vector<Value>& operands, const std::string& attributes = "") {
    Value value{"%v" + std::to_string(next_++), Shape::Make(type, dims)};
    std::string args;
    for (const Value& operand : operands) args += (args.empty() ? "" : ", ") + operand.ShapeString() + " " + operand.name;
    body_ += "  " + value.name + " = " + ShapeText(value.shape) + " " + opcode + "(" + args + ")" +
             (attributes.empty() ? "" : ", " + attributes) + "\n";
    return value;
  }
  // A line of the entry's body as it is (instructions the helpers above do not write).
  void Raw(const std::string& line) { body_ += line; }
  Value Tuple(const std::vector<Value>& elements) {
    Value value{"%v" + std::to_string(next_++), Shape(), "("};
    std::string args;
    for (const Value& e : elements) {
      value.tuple_shape += (args.empty() ? "" : ", ") + e.ShapeString();
      args += (args.empty() ? "" : ", ") + e.ShapeString() + " " + e.name;
    }
    value.tuple_shape += ")";
    body_ += "  " + value.name + " = " + value.tuple_shape + " tuple(" + args + ")\n";
    return value;
  }
  Value Constant(const Literal& literal) {
    Value value{"%c" + std::to_string(next_++), literal.shape()};
    body_ += "  " + value.name + " = " + ShapeText(value.shape) + " constant(" + literal.ValuesToString() + ")\n";
    return value;
  }
  Value ScalarConstant(PrimitiveType type, double number) {
    Literal literal(Shape::Make(type, {}));
    literal.SetFromDouble(0, number);
    return Constant(literal);
  }
  // The computation that returns its second scalar of `type` (a scatter that replaces).
  std::string Replacer(PrimitiveType type) {
    const std::string name = std::string("%replace_") + hlo::PrimitiveTypeName(type);
    const std::string scalar = ShapeText(Shape::Make(type, {}));
    computations_ += name + " (a: " + scalar + ", b: " + scalar + ") -> " + scalar + " {\n  %a = " + scalar +
                     " parameter(0)\n  ROOT %b = " + scalar + " parameter(1)\n}\n\n";
    return name;
  }
  // compare(a, b) of two scalars of `type` in `direction` (a select-and-scatter's select).
  std::string Comparator(const std::string& direction, PrimitiveType type) {
    const std::string name = "%compare_" + direction + "_" + hlo::PrimitiveTypeName(type);
    const std::string scalar = ShapeText(Shape::Make(type, {}));
    computations_ += name + " (a: " + scalar + ", b: " + scalar + ") -> pred[] {\n  %a = " + scalar +
                     " parameter(0)\n  %b = " + scalar + " parameter(1)\n  ROOT %r = pred[] compare(" + scalar +
                     " %a, " + scalar + " %b), direction=" + direction + "\n}\n\n";
    return name;
  }
  // The binary computation `opcode` over scalars of `type`, for reduce.
  std::string Reducer(const std::string& opcode, PrimitiveType type) {
    const std::string name = "%" + opcode + "_" + hlo::PrimitiveTypeName(type);
    const std::string scalar = ShapeText(Shape::Make(type, {}));
    computations_ += name + " (a: " + scalar + ", b: " + scalar + ") -> " + scalar + " {\n  %a = " + scalar +
                     " parameter(0)\n  %b = " + scalar + " parameter(1)\n  ROOT %r = " + scalar + " " + opcode +
                     "(" + scalar + " %a, " + scalar + " %b)\n}\n\n";
    return name;
  }
  std::string Finish(const std::string& module_name, const std::vector<Value>& outputs) {
    std::string signature, result;
    for (const Value& p : parameters_) {
      signature += (signature.empty() ? "" : ", ") + p.name.substr(1) + ": " + ShapeText(p.shape).substr(0, ShapeText(p.shape).find('{'));
    }
    std::string root;
    if (outputs.size() == 1) {
      result = ShapeText(outputs[0].shape);
      // The last instruction is the root: re-emit it with ROOT.
      const size_t line = body_.rfind("  " + outputs[0].name + " = ");
      if (line != std::string::npos && body_.find('\n', line) == body_.size() - 1) {
        body_.insert(line + 2, "ROOT ");
      } else {
        body_ += "  ROOT %out = " + result + " copy(" + result + " " + outputs[0].name + ")\n";
      }
    } else {
      std::string shapes, args;
      for (const Value& v : outputs) {
        shapes += (shapes.empty() ? "" : ", ") + ShapeText(v.shape);
        args += (args.empty() ? "" : ", ") + ShapeText(v.shape) + " " + v.name;
      }
      result = "(" + shapes + ")";
      body_ += "  ROOT %out = " + result + " tuple(" + args + ")\n";
    }
    return "HloModule " + module_name + "\n\n" + computations_ + "ENTRY %main (" + signature + ") -> " + result +
           " {\n" + body_ + "}\n";
  }
  std::vector<Literal> Arguments(Rng& rng) const {
    std::vector<Literal> arguments;
    for (size_t i = 0; i < parameters_.size(); ++i) arguments.push_back(RandomLiteral(parameters_[i].shape, domains_[i], rng));
    return arguments;
  }

 private:
  std::vector<Value> parameters_;
  std::vector<Domain> domains_;
  std::string body_, computations_;
  int next_ = 0;
};

// ---------------------------------------------------------------------------------------------------
// Cases per opcode

struct DiffCase {
  std::string hlo;
  std::vector<Literal> arguments;
  bool exact = false;  // bit-exact up to DAZ/FTZ and the sign of zero; else the docs/numerics.md tolerance
  double max_ulp = 0;  // > 0: besides, every finite f32 output within this many ulp of the interpreter's
};

// Builds the module of case `index` (ranks and variants cycle with the index, sizes and values are random).
using Generator = std::function<DiffCase(Rng& rng, int index)>;

DiffCase Finish(ModuleBuilder& b, const std::string& name, const std::vector<Value>& outputs, Rng& rng, bool exact) {
  DiffCase c;
  c.hlo = b.Finish(name, outputs);
  c.arguments = b.Arguments(rng);
  c.exact = exact;
  return c;
}

std::string Dims(const std::vector<int64_t>& dims) {
  std::string text = "{";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "}";
}

int RankOf(int index) { return 1 + index % 3; }

Generator UnaryCase(const std::string& opcode, PrimitiveType type, Domain domain, bool exact) {
  return [=](Rng& rng, int index) {
    ModuleBuilder b;
    const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
    Value x = b.Parameter(type, dims, domain);
    return Finish(b, opcode, {b.Op(type, dims, opcode, {x})}, rng, exact);
  };
}

// A unary case whose f32 outputs must also stay within `max_ulp` of the interpreter's.
Generator UnaryUlpCase(const std::string& opcode, PrimitiveType type, Domain domain, double max_ulp) {
  return [=](Rng& rng, int index) {
    DiffCase c = UnaryCase(opcode, type, domain, false)(rng, index);
    c.max_ulp = max_ulp;
    return c;
  };
}

// The second operand of a binary op, as real modules write it: a tensor, the broadcast of a scalar
// constant, the broadcast of a row along the minor dimension, or the broadcast of a scalar parameter.
Value SecondOperand(ModuleBuilder& b, Rng& rng, int variant, PrimitiveType type, const std::vector<int64_t>& dims,
                    Domain domain) {
  switch (variant % 4) {
    case 1: {
      const float value = RandomFloat(rng, domain == Domain::kSpecial || domain == Domain::kHalf ? Domain::kUnit : domain);
      const double number = type == F32 || type == PrimitiveType::F16 ? value : type == PrimitiveType::U32 ? std::round(std::fabs(value)) : std::round(value);
      return b.Op(type, dims, "broadcast", {b.ScalarConstant(type, number)},
                  "dimensions={}");
    }
    case 2: {
      Value row = b.Parameter(type, {dims.back()}, domain);
      return b.Op(type, dims, "broadcast", {row}, "dimensions={" + std::to_string(dims.size() - 1) + "}");
    }
    case 3: return b.Op(type, dims, "broadcast", {b.Parameter(type, {}, domain)}, "dimensions={}");
    default: return b.Parameter(type, dims, domain);
  }
}

Generator BinaryCase(const std::string& opcode, PrimitiveType type, Domain a_domain, Domain b_domain, bool exact) {
  return [=](Rng& rng, int index) {
    ModuleBuilder b;
    const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
    Value x = b.Parameter(type, dims, a_domain);
    Value y = SecondOperand(b, rng, index / 3 + static_cast<int>(rng() % 2), type, dims, b_domain);
    const bool swap = opcode != "subtract" && opcode != "divide" && opcode != "power" && opcode.rfind("shift", 0) != 0 &&
                      rng() % 4 == 0;
    return Finish(b, opcode, {b.Op(type, dims, opcode, swap ? std::vector<Value>{y, x} : std::vector<Value>{x, y})},
                  rng, exact);
  };
}

Domain SpecialDomain(PrimitiveType type) {
  return type == F32 ? Domain::kSpecial : type == PrimitiveType::F16 ? Domain::kHalf : Domain::kInteger;
}

Generator CompareCase(const std::string& direction, PrimitiveType type) {
  return [=](Rng& rng, int index) {
    ModuleBuilder b;
    const Domain domain = SpecialDomain(type);
    const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
    Value x = b.Parameter(type, dims, domain);
    // Equal values are rare in random data: compare with a copy of x often (u32 has no maximum: select).
    auto partly_x = [&] {
      Value other = b.Parameter(type, dims, domain);
      if (type != PrimitiveType::U32) return b.Op(type, dims, "maximum", {x, other});
      return b.Op(type, dims, "select", {b.Parameter(PRED, dims, domain), x, other});
    };
    Value y = index % 2 == 0 ? SecondOperand(b, rng, index / 2, type, dims, domain) : partly_x();
    return Finish(b, "compare", {b.Op(PRED, dims, "compare", {x, y}, "direction=" + direction)}, rng, true);
  };
}

Generator SelectCase(PrimitiveType type) {
  return [=](Rng& rng, int index) {
    ModuleBuilder b;
    const Domain domain = SpecialDomain(type);
    const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
    Value p = b.Parameter(PRED, dims, Domain::kInteger);
    Value t = b.Parameter(type, dims, domain);
    Value f = index % 2 == 0 ? b.Parameter(type, dims, domain)
                             : b.Op(type, dims, "broadcast", {b.ScalarConstant(type, index % 4 == 1 ? 0.0 : -1.5)},
                                    "dimensions={}");
    return Finish(b, "select", {b.Op(type, dims, "select", {p, t, f})}, rng, true);
  };
}

Generator ClampCase(PrimitiveType type) {
  return [=](Rng& rng, int index) {
    ModuleBuilder b;
    const Domain domain = type == F32 ? Domain::kSpecial : Domain::kInteger;
    const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
    Value x = b.Parameter(type, dims, domain);
    const double scale = type == F32 ? 1.0 : 500.0;
    Value lo, hi;
    switch ((index / 3) % 3) {
      case 0:  // scalar constants, as jnp.clip writes them
        lo = b.ScalarConstant(type, std::round(-scale * (1 + rng() % 4)) / (type == F32 ? 2 : 1));
        hi = b.ScalarConstant(type, std::round(scale * (rng() % 4)) / (type == F32 ? 2 : 1));
        break;
      case 1:  // broadcasts of constants that do not bracket zero
        lo = b.Op(type, dims, "broadcast", {b.ScalarConstant(type, 0.25 * scale)}, "dimensions={}");
        hi = b.Op(type, dims, "broadcast", {b.ScalarConstant(type, 2 * scale)}, "dimensions={}");
        break;
      default:  // tensors; no NaN bounds: the interpreter's clamp ignores them, XLA's min/max propagate them
        lo = b.Parameter(type, dims, type == F32 ? Domain::kExp : domain);
        hi = b.Parameter(type, dims, type == F32 ? Domain::kExp : domain);
        break;
    }
    return Finish(b, "clamp", {b.Op(type, dims, "clamp", {lo, x, hi})}, rng, true);
  };
}

Generator ConvertCase(PrimitiveType from, PrimitiveType to) {
  return [=](Rng& rng, int index) {
    ModuleBuilder b;
    const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
    // bf16 conversions see infinities, NaN and rounding ties too; f16 ones f16's special domain.
    const bool bf16 = from == PrimitiveType::BF16 || to == PrimitiveType::BF16;
    const bool f16 = from == PrimitiveType::F16 || to == PrimitiveType::F16;
    const bool integer = from != F32 && from != PrimitiveType::BF16 && from != PrimitiveType::F16;
    Value x = b.Parameter(from, dims,
                          integer ? Domain::kInteger : f16 ? Domain::kHalf : bf16 ? Domain::kSpecial : Domain::kExp);
    return Finish(b, "convert", {b.Op(to, dims, "convert", {x})}, rng, true);
  };
}

// power with a constant exponent (integers multiply, 0.5 is sqrt, others go through exp and log) or a
// tensor exponent.
DiffCase PowerCase(Rng& rng, int index) {
  static const float kExponents[] = {2, 3, -2, 0.5f, -0.5f, 1.5f, 0, 7, -1, 1, 2.25f, 13};
  ModuleBuilder b;
  const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
  const bool tensor_exponent = index % 4 == 3;
  const float exponent = kExponents[rng() % (sizeof(kExponents) / sizeof(kExponents[0]))];
  const bool integer = !tensor_exponent && exponent == std::round(exponent);
  // Negative bases only where the result is defined: integer exponents.
  Value x = b.Parameter(F32, dims, integer ? Domain::kNonZero : Domain::kPositive);
  Value y = tensor_exponent ? b.Parameter(F32, dims, Domain::kUnit)
                            : b.Op(F32, dims, "broadcast", {b.ScalarConstant(F32, exponent)}, "dimensions={}");
  return Finish(b, "power", {b.Op(F32, dims, "power", {x, y})}, rng, false);
}

DiffCase BroadcastCase(PrimitiveType type, Rng& rng, int index) {
  ModuleBuilder b;
  const Domain domain = type == F32 ? Domain::kUnit : Domain::kInteger;
  std::vector<int64_t> out = RandomDims(rng, 2 + index % 2);
  std::vector<int64_t> in, mapping;
  switch ((index / 2) % 4) {
    case 0: break;                                                  // scalar
    case 1: in = {out.back()}; mapping = {int64_t(out.size()) - 1}; break;  // row along the minor dimension
    case 2: in = {out[0]}; mapping = {0}; break;                    // column (dimension 0)
    default:                                                         // rank-2 operand
      if (out.size() == 3) {
        in = {out[0], out[1]};
        mapping = {0, 1};
      } else {
        in = {out[1]};
        mapping = {1};
      }
      break;
  }
  Value x = b.Parameter(type, in, domain);
  return Finish(b, "broadcast", {b.Op(type, out, "broadcast", {x}, "dimensions=" + Dims(mapping))}, rng, true);
}

DiffCase ReshapeCase(Rng& rng, int index) {
  ModuleBuilder b;
  std::vector<int64_t> in = RandomDims(rng, 3), out;
  switch (index % 4) {
    case 0: out = {in[0] * in[1], in[2]}; break;        // merge leading dimensions (same rows)
    case 1: out = {in[0], in[1] * in[2]}; break;        // merge into the minor dimension
    case 2: out = {in[0] * in[1] * in[2]}; break;       // flatten
    default: out = {1, in[0], in[1] * in[2]}; break;
  }
  Value x = b.Parameter(F32, in, Domain::kUnit);
  Value r = b.Op(F32, out, "reshape", {b.Op(F32, in, "negate", {x})});
  return Finish(b, "reshape", {r, b.Op(F32, out, "reshape", {x})}, rng, true);
}

DiffCase TransposeCase(PrimitiveType type, Rng& rng, int index) {
  ModuleBuilder b;
  const int rank = 2 + (index % 3 == 2);
  std::vector<int64_t> in = RandomDims(rng, rank), permutation(rank);
  for (int i = 0; i < rank; ++i) permutation[i] = i;
  do {
    std::shuffle(permutation.begin(), permutation.end(), rng);
  } while (rank == 2 && permutation[0] == 0);
  std::vector<int64_t> out;
  for (int64_t d : permutation) out.push_back(in[d]);
  Value x = b.Parameter(type, in, SpecialDomain(type));
  return Finish(b, "transpose", {b.Op(type, out, "transpose", {x}, "dimensions=" + Dims(permutation))}, rng, true);
}

// f16 reductions: f16-normalization reduces the f32 values and rounds once, the interpreter (as XLA on the
// CPU) rounds after every step; at most 2000 elements keep that difference within the tolerance.
DiffCase ReduceCase(const std::string& reducer, Rng& rng, int index, PrimitiveType type = F32) {
  ModuleBuilder b;
  const int rank = RankOf(index);
  const std::vector<int64_t> in = RandomDims(rng, rank, type == F32 ? 20000 : 2000);
  std::vector<int64_t> reduced, out;
  for (int i = 0; i < rank; ++i) {
    if (rng() % 2 == 0) reduced.push_back(i);
  }
  if (reduced.empty()) reduced.push_back(static_cast<int64_t>(rng() % rank));
  for (int i = 0; i < rank; ++i) {
    if (std::find(reduced.begin(), reduced.end(), i) == reduced.end()) out.push_back(in[i]);
  }
  const std::string to_apply = b.Reducer(reducer, type);
  Value x = b.Parameter(type, in, Domain::kUnit);
  const double init = reducer == "add" ? (index % 2 ? 0.0 : 0.75) : (index % 2 ? -INFINITY : -0.25);
  Value r = b.Op(type, out, "reduce", {x, b.ScalarConstant(type, init)},
                 "dimensions=" + Dims(reduced) + ", to_apply=" + to_apply);
  return Finish(b, "reduce_" + reducer, {r}, rng, false);
}

// max / min reductions of u32 words (any bit pattern; codegen-legalization flips the sign bit), with an
// init of 0 or the largest u32 (the identities) or a value from the middle.
Generator UnsignedReduceCase(const std::string& reducer) {
  return [reducer](Rng& rng, int index) {
    ModuleBuilder b;
    const int rank = RankOf(index);
    const std::vector<int64_t> in = RandomDims(rng, rank);
    const int64_t reduced = static_cast<int64_t>(rng() % static_cast<uint32_t>(rank));
    std::vector<int64_t> out;
    for (int i = 0; i < rank; ++i) {
      if (i != reduced) out.push_back(in[i]);
    }
    const double identity = reducer == "maximum" ? 0.0 : 4294967295.0;
    Value x = b.Parameter(PrimitiveType::U32, in, Domain::kInteger);
    Value r = b.Op(PrimitiveType::U32, out, "reduce",
                   {x, b.ScalarConstant(PrimitiveType::U32, index % 2 ? identity : 2147483648.0)},
                   "dimensions={" + std::to_string(reduced) + "}, to_apply=" + b.Reducer(reducer, PrimitiveType::U32));
    return Finish(b, "reduce_u32_" + reducer, {r}, rng, true);
  };
}

// dot of rank-2 operands: plain, the lhs contracting its dimension 0, the rhs contracting its dimension 1,
// or an operand through an explicit transpose.
DiffCase DotCase(Rng& rng, int index, PrimitiveType operand_type, PrimitiveType result_type) {
  ModuleBuilder b;
  const int64_t m = RandomSize(rng), k = RandomSize(rng), n = RandomSize(rng);
  const int variant = index % 4;
  Value lhs, rhs;
  std::string lhs_contracting = "1", rhs_contracting = "0";
  switch (variant) {
    case 1:
      lhs = b.Parameter(operand_type, {k, m}, Domain::kUnit);
      lhs_contracting = "0";
      rhs = b.Parameter(operand_type, {k, n}, Domain::kUnit);
      break;
    case 2:
      lhs = b.Parameter(operand_type, {m, k}, Domain::kUnit);
      rhs = b.Parameter(operand_type, {n, k}, Domain::kUnit);
      rhs_contracting = "1";
      break;
    case 3:
      lhs = b.Parameter(operand_type, {m, k}, Domain::kUnit);
      rhs = b.Op(operand_type, {k, n}, "transpose", {b.Parameter(operand_type, {n, k}, Domain::kUnit)}, "dimensions={1,0}");
      break;
    default:
      lhs = b.Parameter(operand_type, {m, k}, Domain::kUnit);
      rhs = b.Parameter(operand_type, {k, n}, Domain::kUnit);
      break;
  }
  Value d = b.Op(result_type, {m, n}, "dot", {lhs, rhs},
                 "lhs_contracting_dims={" + lhs_contracting + "}, rhs_contracting_dims={" + rhs_contracting + "}");
  return Finish(b, "dot", {d}, rng, false);
}

DiffCase IotaCase(PrimitiveType type, Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
  Value x = b.Parameter(type, dims, type == F32 ? Domain::kUnit : Domain::kInteger);
  Value iota = b.Op(type, dims, "iota", {}, "iota_dimension=" + std::to_string(rng() % dims.size()));
  return Finish(b, "iota", {iota, b.Op(type, dims, "add", {x, iota})}, rng, true);
}

DiffCase ConstantCase(Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> dims = RandomDims(rng, RankOf(index), 600);
  Value x = b.Parameter(F32, dims, Domain::kUnit);
  Value c = b.Constant(RandomLiteral(Shape::Make(F32, dims), Domain::kUnit, rng));
  return Finish(b, "constant", {c, b.Op(F32, dims, "multiply", {x, c})}, rng, true);
}

DiffCase TupleCase(Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
  Value x = b.Parameter(F32, dims, Domain::kUnit);
  Value y = b.Parameter(S32, dims, Domain::kInteger);
  Value t = b.Tuple({b.Op(F32, dims, "add", {x, x}), y});
  Value g0 = b.Op(F32, dims, "get-tuple-element", {t}, "index=0");
  Value g1 = b.Op(S32, dims, "get-tuple-element", {t}, "index=1");
  return Finish(b, "tuple", {b.Op(F32, dims, "negate", {g0}), g1, x}, rng, true);
}

DiffCase CustomCallCase(Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
  Value x = b.Parameter(F32, dims, Domain::kUnit);
  Value c = b.Op(F32, dims, "custom-call", {x}, "custom_call_target=\"AwsNeuronTransferWithStaticRing\"");
  return Finish(b, "custom_call", {b.Op(F32, dims, "multiply", {c, c})}, rng, true);
}

DiffCase SliceCase(Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> in = RandomDims(rng, RankOf(index));
  std::vector<int64_t> out;
  std::string slice = "slice={";
  // Every other case keeps the minor dimension a prefix, the form rows of whole tiles copy fastest.
  const bool minor_prefix = index % 2 == 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool prefix = minor_prefix && i + 1 == in.size();
    const int64_t start = prefix ? 0 : static_cast<int64_t>(rng() % in[i]);
    const int64_t limit = start + 1 + static_cast<int64_t>(rng() % (in[i] - start));
    const int64_t stride = !prefix && rng() % 3 == 0 ? 2 : 1;
    out.push_back((limit - start + stride - 1) / stride);
    slice += std::string(i ? ", " : "") + "[" + std::to_string(start) + ":" + std::to_string(limit) +
             (stride == 1 ? "" : ":" + std::to_string(stride)) + "]";
  }
  Value x = b.Parameter(F32, in, Domain::kUnit);
  return Finish(b, "slice", {b.Op(F32, out, "slice", {x}, slice + "}")}, rng, true);
}

DiffCase PadCase(Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> in = RandomDims(rng, RankOf(index), 5000);
  std::vector<int64_t> out;
  std::string padding = "padding=";
  // Every other case pads only the leading dimensions at their edges (as convolutions' pads do).
  const bool edges_only = index % 2 == 1;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool minor = i + 1 == in.size();
    const int64_t low = edges_only && minor ? 0 : rng() % 4, high = edges_only && minor ? 0 : rng() % 4;
    const int64_t interior = !edges_only && rng() % 4 == 0 ? 1 : 0;
    out.push_back(low + high + in[i] + (in[i] - 1) * interior);
    padding += std::string(i ? "x" : "") + std::to_string(low) + "_" + std::to_string(high) +
               (interior ? "_" + std::to_string(interior) : "");
  }
  Value x = b.Parameter(F32, in, Domain::kUnit);
  Value value = b.ScalarConstant(F32, index % 2 ? 0.0 : 1.5);
  return Finish(b, "pad", {b.Op(F32, out, "pad", {x, value}, padding)}, rng, true);
}

DiffCase ConcatenateCase(Rng& rng, int index) {
  ModuleBuilder b;
  const int rank = RankOf(index);
  std::vector<int64_t> dims = RandomDims(rng, rank, 6000);
  // Every other case joins along dimension 0 (whole rows).
  const int64_t axis = index % 2 == 1 ? 0 : static_cast<int64_t>(rng() % rank);
  std::vector<Value> parts;
  std::vector<int64_t> out = dims;
  out[axis] = 0;
  for (int i = 0, n = 2 + static_cast<int>(rng() % 2); i < n; ++i) {
    dims[axis] = RandomSize(rng);
    out[axis] += dims[axis];
    parts.push_back(b.Parameter(F32, dims, Domain::kUnit));
  }
  return Finish(b, "concatenate", {b.Op(F32, out, "concatenate", parts, "dimensions={" + std::to_string(axis) + "}")},
                rng, true);
}

// NHWC convolutions as JAX writes them (dim_labels=b01f_01io->b01f), same or valid padding, stride 1 or 2.
DiffCase ConvolutionCase(Rng& rng, int index) {
  ModuleBuilder b;
  const int64_t batch = 1 + rng() % 2, height = 3 + rng() % 7, width = 3 + rng() % 7;
  const int64_t in_features = 1 + rng() % 9, out_features = 1 + rng() % 13, window = 1 + 2 * (rng() % 2);
  const int64_t stride = 1 + index % 2;
  const int64_t pad = index % 3 == 0 ? 0 : window / 2;
  auto out_size = [&](int64_t size) { return (size + 2 * pad - window) / stride + 1; };
  Value x = b.Parameter(F32, {batch, height, width, in_features}, Domain::kUnit);
  Value w = b.Parameter(F32, {window, window, in_features, out_features}, Domain::kUnit);
  const std::string p = std::to_string(pad) + "_" + std::to_string(pad);
  const std::string s = std::to_string(window);
  std::string window_text = "window={size=" + s + "x" + s;
  if (stride != 1) window_text += " stride=" + std::to_string(stride) + "x" + std::to_string(stride);
  if (pad != 0) window_text += " pad=" + p + "x" + p;
  window_text += "}";
  Value y = b.Op(F32, {batch, out_size(height), out_size(width), out_features}, "convolution", {x, w},
                 window_text + ", dim_labels=b01f_01io->b01f");
  return Finish(b, "convolution", {y}, rng, false);
}

// A random chain of elementwise instructions on one shape (with broadcasts, compares and selects), two
// of its values as outputs: buffer reuse and liveness between lowerings, values kept in [-4, 4].
DiffCase ChainCase(Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
  Value x = b.Parameter(F32, dims, Domain::kUnit);
  Value y = b.Parameter(F32, dims, Domain::kUnit);
  Value row = b.Parameter(F32, {dims.back()}, Domain::kUnit);
  std::vector<Value> values = {x, y};
  auto pick = [&] { return values[rng() % values.size()]; };
  auto constant = [&](double c) { return b.Op(F32, dims, "broadcast", {b.ScalarConstant(F32, c)}, "dimensions={}"); };
  const int length = 3 + static_cast<int>(rng() % 6);
  for (int step = 0; step < length; ++step) {
    const Value a = pick(), c = pick();
    Value v;
    switch (rng() % 12) {
      case 0: v = b.Op(F32, dims, "add", {a, c}); break;
      case 1: v = b.Op(F32, dims, "subtract", {a, b.Op(F32, dims, "broadcast", {row}, "dimensions={" + std::to_string(dims.size() - 1) + "}")}); break;
      case 2: v = b.Op(F32, dims, "multiply", {a, c}); break;
      case 3: v = b.Op(F32, dims, "tanh", {a}); break;
      case 4: v = b.Op(F32, dims, "logistic", {a}); break;
      case 5: v = b.Op(F32, dims, "maximum", {a, constant(0)}); break;
      case 6: v = b.Op(F32, dims, "select", {b.Op(PRED, dims, "compare", {a, c}, "direction=GT"), a, c}); break;
      case 7: v = b.Op(F32, dims, "clamp", {b.ScalarConstant(F32, -0.5), a, b.ScalarConstant(F32, 0.5)}); break;
      case 8: v = b.Op(F32, dims, "sqrt", {b.Op(F32, dims, "abs", {a})}); break;
      case 9: v = b.Op(F32, dims, "negate", {a}); break;
      case 10: v = b.Op(F32, dims, "divide", {a, b.Op(F32, dims, "add", {b.Op(F32, dims, "abs", {c}), constant(1)})}); break;
      default: v = b.Op(F32, dims, "power", {a, constant(2)}); break;
    }
    values.push_back(v);
  }
  return Finish(b, "chain", {values.back(), values[values.size() / 2]}, rng, false);
}

// A loop condition `state` -> pred[]: element 0 (the s32 counter) below `limit`, written as i < n
// (form 0), n > i, i <= n-1, n-1 >= i or i != n (the counter starts at 0 and counts up).
std::string CountedCondition(const std::string& name, const std::string& state, const std::string& limit,
                             int form = 0) {
  static const char* kForms[] = {"compare(%i, %n), direction=LT", "compare(%n, %i), direction=GT",
                                 "compare(%i, %m), direction=LE", "compare(%m, %i), direction=GE",
                                 "compare(%i, %n), direction=NE"};
  return "%" + name + " (p: " + state + ") -> pred[] {\n  %p = " + state + " parameter(0)\n"
         "  %i = s32[] get-tuple-element(%p), index=0\n  %n = s32[] constant(" + limit + ")\n"
         "  %m = s32[] constant(" + std::to_string(std::stoi(limit) - 1) + ")\n"
         "  ROOT %test = pred[] " + kForms[form % 5] + "\n}\n\n";
}

// The first lines of a loop body over (s32 counter, `array` x, `array` y): %i, %x, %y and %next = %i + 1.
std::string UnpackCountedState(const std::string& state, const std::string& array) {
  return "  %p = " + state + " parameter(0)\n  %i = s32[] get-tuple-element(%p), index=0\n"
         "  %x = " + array + " get-tuple-element(%p), index=1\n"
         "  %y = " + array + " get-tuple-element(%p), index=2\n"
         "  %one = s32[] constant(1)\n  %next = s32[] add(%i, %one)\n";
}

// while loops (control_flow.cc): `kind` "counted" (a fori loop: s32 counter against a constant trip count
// 0..5), "swap" (the body exchanges two state elements: staged back-edge copies), "data_dependent" (the
// condition reduces the state: the trip count depends on the values) and "nested" (a counted loop in
// the body of another). Shapes of any size; every state element is checked after the loop.
Generator WhileCase(const std::string& kind) {
  return [kind](Rng& rng, int index) {
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 9), cols = 1 + static_cast<int64_t>(rng() % 21);
    const std::string array = "f32[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
    const std::string state = "(s32[], " + array + ", " + array + ")";
    const std::string trips = std::to_string(index % 6);
    auto counted_condition = [&](const std::string& name, const std::string& limit) {
      return CountedCondition(name, state, limit, index % 5);
    };
    const std::string unpack = UnpackCountedState(state, array);
    std::string text = "HloModule while_" + kind + "\n\n%add (a: f32[], b: f32[]) -> f32[] {\n"
                       "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n";
    std::string condition = "cond", body = "body";
    if (kind == "counted" || kind == "swap") {
      text += counted_condition("cond", trips);
      const std::string results = kind == "swap" ? "(%next, %y, %sum)" : "(%next, %sum, %y)";
      text += "%body (p: " + state + ") -> " + state + " {\n" + unpack + "  %half = f32[] constant(0.5)\n"
              "  %halves = " + array + " broadcast(%half), dimensions={}\n"
              "  %scaled = " + array + " multiply(%x, %halves)\n  %sum = " + array + " add(%scaled, %y)\n"
              "  ROOT %t = " + state + " tuple" + results + "\n}\n\n";
    } else if (kind == "data_dependent") {
      // max(|x|) doubles (plus one) every iteration until it reaches 100: 6 to 8 iterations for [-1, 1) values.
      text += "%max (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
              "  ROOT %m = f32[] maximum(%a, %b)\n}\n\n"
              "%cond (p: " + state + ") -> pred[] {\n  %p = " + state + " parameter(0)\n"
              "  %x = " + array + " get-tuple-element(%p), index=1\n  %low = f32[] constant(-inf)\n"
              "  %m = f32[] reduce(%x, %low), dimensions={0,1}, to_apply=%max\n  %limit = f32[] constant(100)\n"
              "  ROOT %lt = pred[] compare(%m, %limit), direction=LT\n}\n\n";
      text += "%body (p: " + state + ") -> " + state + " {\n" + unpack + "  %a = " + array + " abs(%x)\n"
              "  %twice = " + array + " add(%a, %a)\n  %c = f32[] constant(1)\n  %cs = " + array +
              " broadcast(%c), dimensions={}\n  %grown = " + array + " add(%twice, %cs)\n"
              "  %sum = " + array + " add(%y, %grown)\n  ROOT %t = " + state + " tuple(%next, %grown, %sum)\n}\n\n";
    } else {  // nested: the body runs a counted inner loop of 1 + index % 3 trips, then adds y
      text += counted_condition("inner_cond", std::to_string(1 + index % 3));
      text += "%inner_body (p: " + state + ") -> " + state + " {\n" + unpack + "  %sum = " + array +
              " add(%x, %y)\n  ROOT %t = " + state + " tuple(%next, %sum, %y)\n}\n\n";
      text += counted_condition("cond", trips);
      text += "%body (p: " + state + ") -> " + state + " {\n" + unpack + "  %zero = s32[] constant(0)\n"
              "  %inner_init = " + state + " tuple(%zero, %x, %y)\n  %inner = " + state +
              " while(%inner_init), condition=%inner_cond, body=%inner_body\n"
              "  %inner_x = " + array + " get-tuple-element(%inner), index=1\n"
              "  %r = f32[] constant(0.25)\n  %rs = " + array + " broadcast(%r), dimensions={}\n"
              "  %scaled = " + array + " multiply(%inner_x, %rs)\n"
              "  ROOT %t = " + state + " tuple(%next, %scaled, %y)\n}\n\n";
    }
    text += "ENTRY %main (x: " + array + ", y: " + array + ") -> " + state + " {\n  %x = " + array +
            " parameter(0)\n  %y = " + array + " parameter(1)\n  %zero = s32[] constant(0)\n"
            "  %init = " + state + " tuple(%zero, %x, %y)\n  %w = " + state + " while(%init), condition=%" +
            condition + ", body=%" + body + "\n  %i = s32[] get-tuple-element(%w), index=0\n"
            "  %rx = " + array + " get-tuple-element(%w), index=1\n  %ry = " + array +
            " get-tuple-element(%w), index=2\n  ROOT %out = " + state + " tuple(%i, %rx, %ry)\n}\n";
    DiffCase c;
    c.hlo = text;
    const Shape shape = Shape::Make(PrimitiveType::F32, {rows, cols});
    c.arguments.push_back(RandomLiteral(shape, Domain::kUnit, rng));
    c.arguments.push_back(RandomLiteral(shape, Domain::kUnit, rng));
    c.exact = true;
    return c;
  };
}

// Dots the matrix-dots pass takes apart: batched ([B,M,K] x [B,K,N] and keys [B,N,K], the batch in the
// middle of the lhs), rank-3 activations times a weight, two contracting dimensions, a matrix times a vector.
DiffCase GeneralDotCase(Rng& rng, int index) {
  ModuleBuilder b;
  auto size = [&] { return 1 + static_cast<int64_t>(rng() % 12); };
  const int64_t batch = 1 + static_cast<int64_t>(rng() % 4), m = size(), k = size(), n = size(), k2 = size();
  Value lhs, rhs;
  std::vector<int64_t> result;
  std::string dims;
  switch (index % 5) {
    case 0:
      lhs = b.Parameter(F32, {batch, m, k}, Domain::kUnit);
      rhs = b.Parameter(F32, {batch, k, n}, Domain::kUnit);
      dims = "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}";
      result = {batch, m, n};
      break;
    case 1:
      lhs = b.Parameter(F32, {m, batch, k}, Domain::kUnit);
      rhs = b.Parameter(F32, {batch, n, k}, Domain::kUnit);
      dims = "lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={2}";
      result = {batch, m, n};
      break;
    case 2:
      lhs = b.Parameter(F32, {batch, m, k}, Domain::kUnit);
      rhs = b.Parameter(F32, {k, n}, Domain::kUnit);
      dims = "lhs_contracting_dims={2}, rhs_contracting_dims={0}";
      result = {batch, m, n};
      break;
    case 3:
      lhs = b.Parameter(F32, {m, k, k2}, Domain::kUnit);
      rhs = b.Parameter(F32, {k2, k, n}, Domain::kUnit);
      dims = "lhs_contracting_dims={1,2}, rhs_contracting_dims={1,0}";
      result = {m, n};
      break;
    default:
      lhs = b.Parameter(F32, {m, k}, Domain::kUnit);
      rhs = b.Parameter(F32, {k}, Domain::kUnit);
      dims = "lhs_contracting_dims={1}, rhs_contracting_dims={0}";
      result = {m};
      break;
  }
  return Finish(b, "general_dot", {b.Op(F32, result, "dot", {lhs, rhs}, dims)}, rng, false);
}

// Row gathers and scatters (gather_scatter.cc): a [V,D] table, s32 indices [N,1] or [A,B,1] from 3 below
// 0 to 3 past V-1 with repeats (a gather clamps them, a scatter skips those outside), scatters that add
// (f32 and s32) or replace (the last update of a row wins).
Generator GatherScatterCase(const std::string& kind) {
  return [kind](Rng& rng, int index) {
    ModuleBuilder b;
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 12), cols = RandomSize(rng);
    const std::vector<int64_t> batch = index % 2 ? std::vector<int64_t>{1 + static_cast<int64_t>(rng() % 4), 3}
                                                 : std::vector<int64_t>{1 + static_cast<int64_t>(rng() % 20)};
    std::vector<int64_t> index_dims = batch, window_dims = batch;
    index_dims.push_back(1);
    window_dims.push_back(cols);
    const PrimitiveType type = kind == "scatter_add_s32" ? S32 : F32;
    const Domain domain = type == S32 ? Domain::kInteger : Domain::kUnit;
    Value table = b.Parameter(type, {rows, cols}, domain);
    Value indices = b.Parameter(S32, index_dims, Domain::kInteger);
    const std::string ivd = "index_vector_dim=" + std::to_string(index_dims.size() - 1);
    Value result;
    if (kind == "gather") {
      result = b.Op(type, window_dims, "gather", {table, indices},
                    "offset_dims={" + std::to_string(batch.size()) + "}, collapsed_slice_dims={0}, start_index_map={0}, " +
                        ivd + ", slice_sizes={1," + std::to_string(cols) + "}");
    } else {
      Value updates = b.Parameter(type, window_dims, domain);
      const std::string combiner = kind == "scatter_replace" ? b.Replacer(type) : b.Reducer("add", type);
      result = b.Op(type, {rows, cols}, "scatter", {table, indices, updates},
                    "update_window_dims={" + std::to_string(batch.size()) + "}, inserted_window_dims={0}, "
                    "scatter_dims_to_operand_dims={0}, " + ivd + ", to_apply=" + combiner);
    }
    DiffCase c = Finish(b, kind, {result}, rng, true);
    Literal& index_values = c.arguments[1];
    for (int64_t i = 0; i < index_values.element_count(); ++i) {
      index_values.Set<int32_t>(i, static_cast<int32_t>(static_cast<int64_t>(rng() % static_cast<uint32_t>(rows + 6)) - 3));
    }
    return c;
  };
}

// One element along the minor dimension per row (take_along_axis through batching dimensions), or at one
// position for all rows, gathered or scatter-added (one-hot-gathers): indices from 3 below 0 to 3 past the
// end (a gather clamps, a scatter skips).
Generator TakeAlongCase(bool scatter) {
  return [scatter](Rng& rng, int index) {
    ModuleBuilder b;
    const bool per_row = index % 2 == 0;
    const int64_t a = 1 + static_cast<int64_t>(rng() % 5), r = RandomSize(rng) % 12 + 1, v = RandomSize(rng);
    Value p = b.Parameter(F32, {a, r, v}, Domain::kSpecial);
    Value indices = per_row ? b.Parameter(S32, {a, r, 1, 1}, Domain::kInteger) : b.Parameter(S32, {1}, Domain::kInteger);
    const std::string batching = per_row ? "operand_batching_dims={0,1}, start_indices_batching_dims={0,1}, index_vector_dim=3"
                                         : "index_vector_dim=0";
    Value result;
    if (!scatter) {
      const std::vector<int64_t> out = per_row ? std::vector<int64_t>{a, r, 1} : std::vector<int64_t>{a, r};
      const std::string sizes = per_row ? "{1,1,1}" : "{" + std::to_string(a) + "," + std::to_string(r) + ",1}";
      result = b.Op(F32, out, "gather", {p, indices},
                    std::string("offset_dims=") + (per_row ? "{}" : "{0,1}") + ", collapsed_slice_dims={2}, " +
                        "start_index_map={2}, " + batching + ", slice_sizes=" + sizes);
    } else {
      Value updates = b.Parameter(F32, per_row ? std::vector<int64_t>{a, r, 1} : std::vector<int64_t>{a, r}, Domain::kSpecial);
      const std::string window = per_row ? "update_window_dims={}" : "update_window_dims={0,1}";
      const std::string batching_scatter = per_row ? "input_batching_dims={0,1}, scatter_indices_batching_dims={0,1}, index_vector_dim=3"
                                                   : "index_vector_dim=0";
      result = b.Op(F32, {a, r, v}, "scatter", {p, indices, updates},
                    window + ", inserted_window_dims={2}, scatter_dims_to_operand_dims={2}, " + batching_scatter +
                        ", to_apply=" + b.Reducer("add", F32));
    }
    DiffCase c = Finish(b, scatter ? "take_along_scatter" : "take_along", {result}, rng, true);
    Literal& values = c.arguments[1];
    for (int64_t i = 0; i < values.element_count(); ++i) {
      values.Set<int32_t>(i, static_cast<int32_t>(static_cast<int64_t>(rng() % static_cast<uint32_t>(v + 6)) - 3));
    }
    return c;
  };
}

// Gathers and scatters as jnp indexing writes them (row-gathers rewrites them into slab gathers):
// "gather_1d" x[idx] on a vector, "gather_minor" x[:, idx], "gather_pair" x[i, j] (an index vector of 2),
// "gather_slabs" x[idx] on rank 3, "take_along_axis0" (a batching dimension, several picks per column);
// "scatter_1d_<combiner>" x.at[idx].<set/add/mul/min/max>(u), "scatter_minor_add" x.at[:, idx].add,
// "scatter_pair_max" x.at[i, j].max, "scatter_slabs_add" rows of a rank-3 table, "take_along_axis0_add"
// (its gradient). Indices from 3 below 0 to 3 past the dimension, with repeats (a gather clamps each
// position, a scatter skips an update with any position outside). Indices of another integer type than
// s32 (row-gathers converts them) mix in the ends of the type: u32 2^31 and more clamp to the last
// position or are skipped as XLA does, never wrap to negative ones (s64 only in the s32 range the device
// holds).
Generator IndexingCase(const std::string& kind, PrimitiveType index_type = S32) {
  return [kind, index_type](Rng& rng, int) {
    ModuleBuilder b;
    const bool scatter = kind.rfind("scatter", 0) == 0 || kind == "take_along_axis0_add";
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 12), cols = RandomSize(rng) % 40 + 1;
    const int64_t n = 1 + static_cast<int64_t>(rng() % 20), mid = 1 + static_cast<int64_t>(rng() % 4);
    std::vector<int64_t> table_dims, index_dims, result_dims, update_dims;
    std::string attributes, combiner = "add";
    int64_t bound = rows;  // the largest indexed dimension
    if (kind == "gather_1d" || kind.rfind("scatter_1d", 0) == 0) {
      table_dims = {rows};
      index_dims = {n, 1};
      result_dims = {n};
      update_dims = {n};
      attributes = scatter ? "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"
                           : "offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}";
      if (scatter) combiner = kind.substr(std::string("scatter_1d_").size());
    } else if (kind == "gather_minor" || kind == "scatter_minor_add") {
      table_dims = {rows, cols};
      index_dims = {n, 1};
      result_dims = update_dims = {rows, n};
      bound = cols;
      attributes = scatter ? "update_window_dims={0}, inserted_window_dims={1}, scatter_dims_to_operand_dims={1}, index_vector_dim=1"
                           : "offset_dims={0}, collapsed_slice_dims={1}, start_index_map={1}, index_vector_dim=1, slice_sizes={" +
                                 std::to_string(rows) + ",1}";
    } else if (kind == "gather_pair" || kind == "scatter_pair_max") {
      table_dims = {rows, cols};
      index_dims = {n, 2};
      result_dims = update_dims = {n};
      bound = std::max(rows, cols);
      attributes = scatter ? "update_window_dims={}, inserted_window_dims={0,1}, scatter_dims_to_operand_dims={0,1}, index_vector_dim=1"
                           : "offset_dims={}, collapsed_slice_dims={0,1}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={1,1}";
      if (scatter) combiner = "maximum";
    } else if (kind == "gather_slabs" || kind == "scatter_slabs_add") {
      table_dims = {rows, mid, cols};
      index_dims = {n, 1};
      result_dims = update_dims = {n, mid, cols};
      attributes = scatter ? "update_window_dims={1,2}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"
                           : "offset_dims={1,2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1," +
                                 std::to_string(mid) + "," + std::to_string(cols) + "}";
    } else {  // take_along_axis0, take_along_axis0_add
      table_dims = {rows, cols};
      index_dims = {mid, cols, 1};
      result_dims = update_dims = {mid, cols};
      attributes = scatter ? "update_window_dims={}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
                             "input_batching_dims={1}, scatter_indices_batching_dims={1}, index_vector_dim=2"
                           : "offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, operand_batching_dims={1}, "
                             "start_indices_batching_dims={1}, index_vector_dim=2, slice_sizes={1,1}";
    }
    Value table = b.Parameter(F32, table_dims, Domain::kUnit);
    Value indices = b.Parameter(index_type, index_dims, Domain::kInteger);
    Value result;
    if (!scatter) {
      result = b.Op(F32, result_dims, "gather", {table, indices}, attributes);
    } else {
      Value updates = b.Parameter(F32, update_dims, Domain::kUnit);
      const std::string apply = combiner == "set" ? b.Replacer(F32)
                                : b.Reducer(combiner == "mul" ? "multiply" : combiner == "min" ? "minimum"
                                            : combiner == "max" ? "maximum" : combiner, F32);
      result = b.Op(F32, table_dims, "scatter", {table, indices, updates}, attributes + ", to_apply=" + apply);
    }
    DiffCase c = Finish(b, kind, {result}, rng, true);
    Literal& index_values = c.arguments[1];
    const bool is_unsigned = index_type == PrimitiveType::U8 || index_type == PrimitiveType::U16 ||
                             index_type == PrimitiveType::U32;
    std::vector<double> ends;
    if (index_type == PrimitiveType::U32) ends = {2147483647.0, 2147483648.0, 4294967293.0, 4294967295.0};
    if (index_type == PrimitiveType::U16) ends = {32768.0, 65535.0};
    if (index_type == PrimitiveType::U8) ends = {128.0, 255.0};
    if (index_type == PrimitiveType::S16) ends = {-32768.0, 32767.0};
    if (index_type == PrimitiveType::S8) ends = {-128.0, 127.0};
    if (index_type == PrimitiveType::S64) ends = {-2147483647.0, 2147483647.0};
    for (int64_t i = 0; i < index_values.element_count(); ++i) {
      const int64_t near = static_cast<int64_t>(rng() % static_cast<uint32_t>(bound + 6)) - 3;
      if (index_type == S32) {
        index_values.Set<int32_t>(i, static_cast<int32_t>(near));
      } else {
        index_values.SetFromDouble(i, !ends.empty() && rng() % 4 == 0 ? ends[rng() % ends.size()]
                                      : static_cast<double>(is_unsigned ? std::max<int64_t>(near, 0) : near));
      }
    }
    return c;
  };
}

// Pooling with a window that touches the minor dimension (pool-minor-through-transpose): 1-D pooling of
// [N,W] over W, of a vector [W], NCHW pooling over H and W; reduce-window (add or max, strides and
// padding) and the max-pool gradient (select-and-scatter, GE, add). The taps keep their order: exact.
Generator MinorPoolCase(const std::string& kind) {
  return [kind](Rng& rng, int index) {
    ModuleBuilder b;
    const int form = index % 3;
    std::vector<int64_t> dims;
    if (form == 0) dims = {1 + static_cast<int64_t>(rng() % 9), 2 + static_cast<int64_t>(rng() % 40)};
    if (form == 1) dims = {2 + static_cast<int64_t>(rng() % 60)};
    if (form == 2) {
      dims = {1 + static_cast<int64_t>(rng() % 3), 1 + static_cast<int64_t>(rng() % 9), 2 + static_cast<int64_t>(rng() % 9),
              2 + static_cast<int64_t>(rng() % 12)};
    }
    const int rank = static_cast<int>(dims.size());
    const bool gradient = kind == "select_and_scatter";
    std::string sizes, strides, pads;
    std::vector<int64_t> out = dims;
    for (int d = 0; d < rank; ++d) {
      // 1-D: the last dimension; NCHW: H and W.
      const bool windowed = d == rank - 1 || (rank == 4 && d == 2);
      const int64_t size = windowed ? 1 + static_cast<int64_t>(rng() % std::min<int64_t>(dims[d], 3)) : 1;
      const int64_t stride = windowed ? 1 + static_cast<int64_t>(rng() % 2) : 1;
      // The gradient's windows stay inside the operand (the padding is the forward's concern).
      const int64_t low = windowed && !gradient ? static_cast<int64_t>(rng() % 2) : 0;
      const int64_t high = windowed && !gradient ? static_cast<int64_t>(rng() % 2) : 0;
      sizes += (d ? "x" : "") + std::to_string(size);
      strides += (d ? "x" : "") + std::to_string(stride);
      pads += std::string(d ? "x" : "") + std::to_string(low) + "_" + std::to_string(high);
      out[d] = (dims[d] + low + high - size) / stride + 1;
    }
    const std::string window = "window={size=" + sizes + " stride=" + strides + " pad=" + pads + "}";
    Value x = b.Parameter(F32, dims, Domain::kUnit);
    Value r;
    if (!gradient) {
      const bool add = kind == "reduce_window_add";
      Value init = b.ScalarConstant(F32, add ? 0.0 : -INFINITY);
      r = b.Op(F32, out, "reduce-window", {x, init}, window + ", to_apply=" + b.Reducer(add ? "add" : "maximum", F32));
    } else {
      Value source = b.Parameter(F32, out, Domain::kUnit);
      Value init = b.ScalarConstant(F32, 0.0);
      r = b.Op(F32, dims, "select-and-scatter", {x, source, init},
               window + ", select=" + b.Comparator("GE", F32) + ", scatter=" + b.Reducer("add", F32));
    }
    DiffCase c = Finish(b, "minor_pool", {r}, rng, true);
    if (gradient) {
      // Ties in the operand: which tap the gradient selects matters.
      for (int64_t i = 0; i < c.arguments[0].element_count(); ++i) c.arguments[0].Set<float>(i, static_cast<float>(rng() % 4));
    }
    return c;
  };
}

// Variadic reduces whose parts are independent (split-variadic-reduces): lax.reduce of (x, y) with a
// sum of x and a maximum of y (f32), or a sum and a minimum of s32 values; and jnp.argmax / argmin of
// s32 values (arg-reductions), ties to the first position.
Generator VariadicReduceCase(const std::string& kind) {
  return [kind](Rng& rng, int index) {
    const int rank = 1 + index % 3;
    const std::vector<int64_t> dims = RandomDims(rng, rank, 4000);
    const int64_t reduced = static_cast<int64_t>(rng() % static_cast<uint32_t>(rank));
    std::vector<int64_t> out;
    for (int d = 0; d < rank; ++d) {
      if (d != reduced) out.push_back(dims[d]);
    }
    const bool integer = kind != "sum_and_max";
    const PrimitiveType type = integer ? S32 : F32;
    const std::string t = integer ? "s32" : "f32";
    const std::string x = ShapeText(Shape::Make(type, dims)), positions = ShapeText(Shape::Make(S32, dims));
    const std::string values = ShapeText(Shape::Make(type, out)), indices = ShapeText(Shape::Make(S32, out));
    const std::string d = std::to_string(reduced);
    std::string text;
    DiffCase c;
    if (kind == "sum_and_max" || kind == "sum_and_min_s32") {
      const std::string second = kind == "sum_and_max" ? "maximum" : "minimum";
      const std::string init2 = kind == "sum_and_max" ? "-inf" : "2147483647";
      text = "HloModule parts\n\n%region (a0: " + t + "[], a1: " + t + "[], b0: " + t + "[], b1: " + t + "[]) -> (" + t +
             "[], " + t + "[]) {\n  %a0 = " + t + "[] parameter(0)\n  %a1 = " + t + "[] parameter(1)\n  %b0 = " + t +
             "[] parameter(2)\n  %b1 = " + t + "[] parameter(3)\n  %s = " + t + "[] add(%a0, %b0)\n  %m = " + t + "[] " +
             second + "(%a1, %b1)\n  ROOT %t = (" + t + "[], " + t + "[]) tuple(%s, %m)\n}\n\n"
             "ENTRY %main (x: " + x.substr(0, x.find('{')) + ", y: " + x.substr(0, x.find('{')) + ") -> (" + values + ", " +
             values + ") {\n  %x = " + x + " parameter(0)\n  %y = " + x + " parameter(1)\n  %zero = " + t +
             "[] constant(0)\n  %init = " + t + "[] constant(" + init2 + ")\n  %r = (" + values + ", " + values +
             ") reduce(%x, %y, %zero, %init), dimensions={" + d + "}, to_apply=%region\n  %v = " + values +
             " get-tuple-element(%r), index=0\n  %w = " + values + " get-tuple-element(%r), index=1\n  ROOT %out = (" +
             values + ", " + values + ") tuple(%v, %w)\n}\n";
      for (int p = 0; p < 2; ++p) c.arguments.push_back(RandomLiteral(Shape::Make(type, dims), integer ? Domain::kInteger : Domain::kUnit, rng));
      // A sum of f32 values adds in another order on the device: the docs/numerics.md tolerance.
      c.exact = integer;
    } else {  // argmax_s32, argmin_s32
      const bool max = kind == "argmax_s32";
      text = "HloModule arg\n\n%comparator (a: s32[], i: s32[], b: s32[], j: s32[]) -> (s32[], s32[]) {\n"
             "  %a = s32[] parameter(0)\n  %b = s32[] parameter(2)\n"
             "  %better = pred[] compare(%a, %b), direction=" + std::string(max ? "GT" : "LT") + "\n"
             "  %value = s32[] select(%better, %a, %b)\n  %eq = pred[] compare(%a, %b), direction=EQ\n"
             "  %i = s32[] parameter(1)\n  %j = s32[] parameter(3)\n  %lower = pred[] compare(%i, %j), direction=LT\n"
             "  %tie = pred[] and(%eq, %lower)\n  %keep = pred[] or(%better, %tie)\n"
             "  %index = s32[] select(%keep, %i, %j)\n  ROOT %t = (s32[], s32[]) tuple(%value, %index)\n}\n\n"
             "ENTRY %main (x: " + x.substr(0, x.find('{')) + ") -> (" + values + ", " + indices + ") {\n"
             "  %x = " + x + " parameter(0)\n  %positions = " + positions + " iota(), iota_dimension=" + d +
             "\n  %init = s32[] constant(" + (max ? "-2147483648" : "2147483647") + ")\n"
             "  %zero = s32[] constant(0)\n  %r = (" + values + ", " + indices + ") reduce(%x, %positions, %init, %zero), "
             "dimensions={" + d + "}, to_apply=%comparator\n"
             "  %v = " + values + " get-tuple-element(%r), index=0\n  %k = " + indices + " get-tuple-element(%r), index=1\n"
             "  ROOT %out = (" + values + ", " + indices + ") tuple(%v, %k)\n}\n";
      Literal input = RandomLiteral(Shape::Make(S32, dims), Domain::kInteger, rng);
      for (int64_t i = 0; i < input.element_count(); ++i) {
        if (rng() % 4 == 0) input.Set<int32_t>(i, static_cast<int32_t>(rng() % 3));  // ties
      }
      c.arguments.push_back(std::move(input));
      c.exact = true;
    }
    c.hlo = text;
    return c;
  };
}

// Reductions of pred values with and / or (min / max of their 0/1 words).
Generator LogicalReduceCase(const std::string& op) {
  return [op](Rng& rng, int index) {
    ModuleBuilder b;
    const int rank = 1 + index % 3;
    const std::vector<int64_t> dims = RandomDims(rng, rank);
    Value x = b.Parameter(PRED, dims, Domain::kInteger);
    const int64_t reduced = static_cast<int64_t>(rng() % static_cast<uint32_t>(rank));
    std::vector<int64_t> out;
    for (int d = 0; d < rank; ++d) {
      if (d != reduced) out.push_back(dims[d]);
    }
    Value init = b.ScalarConstant(PRED, op == "and" ? 1 : 0);
    return Finish(b, "reduce_" + op,
                  {b.Op(PRED, out, "reduce", {x, init}, "dimensions={" + std::to_string(reduced) + "}, to_apply=" +
                                                            b.Reducer(op, PRED))},
                  rng, true);
  };
}

// jnp.argmax / jnp.argmin over one dimension (arg-reductions): values with NaN, infinities and repeats
// (ties go to the first position, NaN wins), the comparator as JAX writes it.
Generator ArgReductionCase(bool max) {
  return [max](Rng& rng, int index) {
    const int rank = 1 + index % 3;
    const std::vector<int64_t> dims = RandomDims(rng, rank, 4000);
    const int64_t reduced = static_cast<int64_t>(rng() % static_cast<uint32_t>(rank));
    std::vector<int64_t> out;
    for (int d = 0; d < rank; ++d) {
      if (d != reduced) out.push_back(dims[d]);
    }
    const std::string x = ShapeText(Shape::Make(F32, dims)), positions = ShapeText(Shape::Make(S32, dims));
    const std::string values = ShapeText(Shape::Make(F32, out)), indices = ShapeText(Shape::Make(S32, out));
    const std::string text =
        "HloModule arg\n\n%comparator (a: f32[], i: s32[], b: f32[], j: s32[]) -> (f32[], s32[]) {\n"
        "  %a = f32[] parameter(0)\n  %b = f32[] parameter(2)\n"
        "  %better = pred[] compare(%a, %b), direction=" + std::string(max ? "GT" : "LT") + "\n"
        "  %nan = pred[] compare(%a, %a), direction=NE\n  %wins = pred[] or(%better, %nan)\n"
        "  %value = f32[] select(%wins, %a, %b)\n  %eq = pred[] compare(%a, %b), direction=EQ\n"
        "  %i = s32[] parameter(1)\n  %j = s32[] parameter(3)\n  %lower = pred[] compare(%i, %j), direction=LT\n"
        "  %tie = pred[] and(%eq, %lower)\n  %keep = pred[] or(%wins, %tie)\n"
        "  %index = s32[] select(%keep, %i, %j)\n  ROOT %t = (f32[], s32[]) tuple(%value, %index)\n}\n\n"
        "ENTRY %main (x: " + x.substr(0, x.find('{')) + ") -> (" + values + ", " + indices + ") {\n"
        "  %x = " + x + " parameter(0)\n  %positions = " + positions + " iota(), iota_dimension=" +
        std::to_string(reduced) + "\n  %init = f32[] constant(" + (max ? "-inf" : "inf") + ")\n"
        "  %zero = s32[] constant(0)\n  %r = (" + values + ", " + indices + ") reduce(%x, %positions, %init, %zero), "
        "dimensions={" + std::to_string(reduced) + "}, to_apply=%comparator\n"
        "  %v = " + values + " get-tuple-element(%r), index=0\n  %k = " + indices + " get-tuple-element(%r), index=1\n"
        "  ROOT %out = (" + values + ", " + indices + ") tuple(%v, %k)\n}\n";
    DiffCase c;
    c.hlo = text;
    Literal input = RandomLiteral(Shape::Make(F32, dims), Domain::kSpecial, rng);
    for (int64_t i = 0; i < input.element_count(); ++i) {
      if (rng() % 4 == 0) input.Set<float>(i, static_cast<float>(rng() % 3));  // ties
    }
    c.arguments.push_back(std::move(input));
    c.exact = true;
    return c;
  };
}

// s64 as PyTorch/XLA uses it, inside the s32 range the device holds it in (s64-range-check): labels
// clamped to the classes, an offset computed from them, a one-hot compare with an s64 iota, a sum.
DiffCase S64Case(Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> dims = {RandomSize(rng)};
  const int64_t classes = 2 + index % 9;
  const std::vector<int64_t> grid = {dims[0], classes};
  Value labels = b.Parameter(PrimitiveType::S64, dims, Domain::kInteger);
  Value low = b.Op(PrimitiveType::S64, dims, "broadcast", {b.ScalarConstant(PrimitiveType::S64, 0)}, "dimensions={}");
  Value high = b.Op(PrimitiveType::S64, dims, "broadcast", {b.ScalarConstant(PrimitiveType::S64, double(classes - 1))}, "dimensions={}");
  Value clamped = b.Op(PrimitiveType::S64, dims, "clamp", {low, labels, high});
  Value stride = b.Op(PrimitiveType::S64, dims, "broadcast", {b.ScalarConstant(PrimitiveType::S64, 1000.0)}, "dimensions={}");
  Value offset = b.Op(PrimitiveType::S64, dims, "add", {b.Op(PrimitiveType::S64, dims, "multiply", {clamped, stride}), clamped});
  Value iota = b.Op(PrimitiveType::S64, grid, "iota", {}, "iota_dimension=1");
  Value wide = b.Op(PrimitiveType::S64, grid, "broadcast", {clamped}, "dimensions={0}");
  Value onehot = b.Op(PRED, grid, "compare", {iota, wide}, "direction=EQ");
  const std::string add = b.Reducer("add", PrimitiveType::S64);
  Value sum = b.Op(PrimitiveType::S64, {}, "reduce", {offset, b.ScalarConstant(PrimitiveType::S64, 0)},
                   "dimensions={0}, to_apply=" + add);
  Value per_class = b.Op(PrimitiveType::S64, {classes}, "reduce", {wide, b.ScalarConstant(PrimitiveType::S64, 0)},
                         "dimensions={0}, to_apply=" + add);
  return Finish(b, "s64", {offset, onehot, sum, per_class}, rng, true);
}

// XLA's topk op (lax.top_k; topk-rewrite): f32 with NaN of both signs, infinities, signed zeros and
// ties (rounds over total-order keys), s32 (a sort), ranks 1 to 3, largest and smallest.
Generator TopKOpCase(PrimitiveType type) {
  return [type](Rng& rng, int index) {
    ModuleBuilder b;
    const int rank = 1 + index % 3;
    std::vector<int64_t> dims = RandomDims(rng, rank, type == F32 ? 400 : 150);  // s32: a sorting network
    const int64_t k = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(std::min<int64_t>(dims.back(), 5)));
    std::vector<int64_t> out = dims;
    out.back() = k;
    Value x = b.Parameter(type, dims, type == F32 ? Domain::kSpecial : Domain::kInteger);
    const std::string tuple = "(" + ShapeText(Shape::Make(type, out)) + ", " + ShapeText(Shape::Make(S32, out)) + ")";
    Value top{"%v_top", Shape(), tuple};
    b.Raw("  %v_top = " + tuple + " topk(" + x.ShapeString() + " " + x.name + "), k=" + std::to_string(k) +
          ", largest=" + (index % 2 == 0 ? "true" : "false") + "\n");
    Value values = b.Op(type, out, "get-tuple-element", {top}, "index=0");
    Value indices = b.Op(S32, out, "get-tuple-element", {top}, "index=1");
    DiffCase c = Finish(b, "topk", {values, indices}, rng, true);
    for (int64_t e = 0; e < c.arguments[0].element_count(); ++e) {
      if (rng() % 4 == 0) c.arguments[0].SetFromDouble(e, static_cast<double>(rng() % 3));  // ties
    }
    return c;
  };
}

// sort (sort-expansion) along a random dimension, ranks 1 to 3, as JAX writes it: jnp.sort's comparator
// (NaN and zero made canonical, a TOTALORDER less-than) on f32 and bf16 with NaN, infinities, signed
// zeros and repeats; argsort (values and an iota, the stable order decides ties); a descending s32 sort;
// and two keys (s32 then f32) carrying an s32 payload.
Generator SortCase(const std::string& kind) {
  return [kind](Rng& rng, int index) {
    const int rank = 1 + index % 3;
    std::vector<int64_t> dims = RandomDims(rng, rank, 300);
    const int64_t sorted = static_cast<int64_t>(rng() % static_cast<uint32_t>(rank));
    dims[sorted] = std::min<int64_t>(dims[sorted], 40);  // the network's stages grow as log^2 of the size
    const PrimitiveType value_type = kind == "sort_bf16" ? PrimitiveType::BF16 : kind == "descending_s32" ? S32 : F32;
    const std::string v = hlo::PrimitiveTypeName(value_type);
    auto canonical = [&](const std::string& x) {
      return "  %" + x + "_nan = pred[] compare(%" + x + ", %" + x + "), direction=NE\n  %" + x +
             "_zero = pred[] compare(%" + x + ", %zero), direction=EQ\n  %" + x + "_plus = " + v + "[] select(%" + x +
             "_zero, %zero, %" + x + ")\n  %" + x + "_key = " + v + "[] select(%" + x + "_nan, %nan, %" + x + "_plus)\n";
    };
    std::string comparator, params;
    std::vector<std::pair<PrimitiveType, Domain>> operands = {{value_type, value_type == S32 ? Domain::kInteger : Domain::kSpecial}};
    if (kind == "descending_s32") {
      comparator = "%cmp (a: s32[], b: s32[]) -> pred[] {\n  %a = s32[] parameter(0)\n  %b = s32[] parameter(1)\n"
                   "  ROOT %gt = pred[] compare(%a, %b), direction=GT\n}\n";
    } else if (kind == "two_keys") {
      operands = {{S32, Domain::kInteger}, {F32, Domain::kUnit}, {S32, Domain::kInteger}};
      comparator = "%cmp (a: s32[], b: s32[], c: f32[], d: f32[], e: s32[], f: s32[]) -> pred[] {\n"
                   "  %a = s32[] parameter(0)\n  %b = s32[] parameter(1)\n  %c = f32[] parameter(2)\n"
                   "  %d = f32[] parameter(3)\n  %e = s32[] parameter(4)\n  %f = s32[] parameter(5)\n"
                   "  %lt = pred[] compare(%a, %b), direction=LT\n  %eq = pred[] compare(%a, %b), direction=EQ\n"
                   "  %lt2 = pred[] compare(%c, %d), direction=LT\n  %tie = pred[] and(%eq, %lt2)\n"
                   "  ROOT %less = pred[] or(%lt, %tie)\n}\n";
    } else {
      const bool argsort = kind == "argsort";
      if (argsort) operands.push_back({S32, Domain::kInteger});
      comparator = "%cmp (a: " + v + "[], b: " + v + "[]" + (argsort ? ", i: s32[], j: s32[]" : "") +
                   ") -> pred[] {\n  %a = " + v + "[] parameter(0)\n  %b = " + v + "[] parameter(1)\n" +
                   (argsort ? "  %i = s32[] parameter(2)\n  %j = s32[] parameter(3)\n" : "") + "  %nan = " + v +
                   "[] constant(nan)\n  %zero = " + v + "[] constant(0)\n" + canonical("a") + canonical("b") +
                   "  ROOT %less = pred[] compare(%a_key, %b_key), direction=LT, type=TOTALORDER\n}\n";
    }
    std::string signature, body, args, result;
    DiffCase c;
    for (size_t i = 0; i < operands.size(); ++i) {
      const std::string shape = ShapeText(Shape::Make(operands[i].first, dims));
      const std::string name = "%x" + std::to_string(i);
      signature += (i ? ", " : "") + name.substr(1) + ": " + shape.substr(0, shape.find('{'));
      const bool positions = kind == "argsort" && i == 1;
      body += "  " + name + " = " + shape + (positions ? " iota(), iota_dimension=" + std::to_string(sorted)
                                                        : " parameter(" + std::to_string(i) + ")") + "\n";
      args += (i ? ", " : "") + name;
      result += (i ? ", " : "") + shape;
      if (positions) continue;
      Literal input = RandomLiteral(Shape::Make(operands[i].first, dims), operands[i].second, rng);
      for (int64_t e = 0; e < input.element_count(); ++e) {
        if (rng() % 3 == 0) input.SetFromDouble(e, static_cast<double>(rng() % 3));  // ties
      }
      c.arguments.push_back(std::move(input));
    }
    if (kind == "argsort") signature = signature.substr(0, signature.find(", "));
    const std::string tuple = operands.size() > 1 ? "(" + result + ")" : result;
    c.hlo = "HloModule sort\n\n" + comparator + "\nENTRY %main (" + signature + ") -> " + tuple + " {\n" + body +
            "  ROOT %sort = " + tuple + " sort(" + args + "), dimensions={" + std::to_string(sorted) +
            "}, is_stable=true, to_apply=%cmp\n}\n";
    c.exact = true;
    return c;
  };
}

// reduce-window along the minor dimension (codegen-legalization moves it to the front): cumulative sums
// (a window as wide as the dimension, padded in front) and max / sum pooling with strides and padding,
// ranks 2 and 3.
Generator MinorWindowCase(const std::string& op) {
  return [op](Rng& rng, int index) {
    ModuleBuilder b;
    const int rank = 2 + index % 2;
    std::vector<int64_t> dims = RandomDims(rng, rank, 3000);
    const bool cumulative = (op == "add" || op == "multiply") && index % 3 == 0;  // cumsum, cumprod
    // A cumulative window is unrolled per output position (pool.cc): narrow ones fit the IMEM.
    if (cumulative) dims.back() = 1 + dims.back() % 12;
    const int64_t cols = dims.back();
    const int64_t size = cumulative ? cols : 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(std::min<int64_t>(cols, 4)));
    const int64_t stride = cumulative ? 1 : 1 + static_cast<int64_t>(rng() % 2);
    const int64_t low = cumulative ? cols - 1 : static_cast<int64_t>(rng() % 2), high = cumulative ? 0 : static_cast<int64_t>(rng() % 2);
    std::string sizes, strides, pads;
    std::vector<int64_t> out = dims;
    for (int d = 0; d < rank; ++d) {
      const bool minor = d == rank - 1;
      sizes += (d ? "x" : "") + std::to_string(minor ? size : 1);
      strides += (d ? "x" : "") + std::to_string(minor ? stride : 1);
      pads += std::string(d ? "x" : "") + (minor ? std::to_string(low) + "_" + std::to_string(high) : "0_0");
    }
    out.back() = (cols + low + high - size) / stride + 1;
    Value x = b.Parameter(F32, dims, Domain::kUnit);
    Value init = b.ScalarConstant(F32, op == "add" ? 0.0 : op == "multiply" ? 1.0 : -INFINITY);
    Value r = b.Op(F32, out, "reduce-window", {x, init},
                   "window={size=" + sizes + " stride=" + strides + " pad=" + pads + "}, to_apply=" + b.Reducer(op, F32));
    return Finish(b, "minor_window", {r}, rng, op != "add");
  };
}

// bitcast-convert between f32, s32 and u32 (no code: the same words): f32 specials (NaN, infinities,
// signed zeros) to s32, their sign flipped as integers and read back as f32; u32 words read as f32.
DiffCase BitcastConvertCase(Rng& rng, int index) {
  ModuleBuilder b;
  const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
  Value x = b.Parameter(F32, dims, Domain::kSpecial);
  Value bits = b.Op(S32, dims, "bitcast-convert", {x});
  Value sign = b.Op(S32, dims, "broadcast", {b.ScalarConstant(S32, -2147483648.0)}, "dimensions={}");
  Value flipped = b.Op(F32, dims, "bitcast-convert", {b.Op(S32, dims, "xor", {bits, sign})});
  Value words = b.Op(F32, dims, "bitcast-convert", {b.Parameter(PrimitiveType::U32, dims, Domain::kInteger)});
  return Finish(b, "bitcast_convert", {bits, flipped, words}, rng, true);
}

// The narrow integer types (s8, u8, s16, u16) in 32-bit words: arithmetic that wraps at their width
// (integer-normalization computes in s32 and the convert back wraps), compares and bitwise ops, shifts,
// and converts from f32 (saturating), from s32 (wrapping) and to f32 and s32 (exact).
Generator NarrowIntegerCase(PrimitiveType type) {
  return [type](Rng& rng, int index) {
    ModuleBuilder b;
    const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
    Value x = b.Parameter(type, dims, Domain::kInteger), y = b.Parameter(type, dims, Domain::kInteger);
    Value shift = b.Parameter(type, dims, Domain::kShift);
    const bool is_unsigned = type == PrimitiveType::U8 || type == PrimitiveType::U16;
    std::vector<Value> outputs = {
        b.Op(type, dims, "add", {x, y}),
        b.Op(type, dims, "multiply", {x, y}),
        b.Op(type, dims, is_unsigned ? "subtract" : "negate", is_unsigned ? std::vector<Value>{x, y} : std::vector<Value>{x}),
        b.Op(type, dims, "shift-left", {x, shift}),
        b.Op(type, dims, is_unsigned ? "shift-right-logical" : "shift-right-arithmetic", {x, shift}),
        b.Op(type, dims, "maximum", {x, y}),
        b.Op(type, dims, "divide", {x, y}),
        b.Op(type, dims, "remainder", {x, y}),
        b.Op(type, dims, "xor", {x, y}),
        b.Op(PrimitiveType::PRED, dims, "compare", {x, y}, "direction=LT"),
        b.Op(F32, dims, "convert", {x}),
        b.Op(S32, dims, "convert", {y}),
        b.Op(type, dims, "convert", {b.Parameter(F32, dims, Domain::kSpecial)}),
        b.Op(type, dims, "convert", {b.Parameter(S32, dims, Domain::kInteger)}),
    };
    return Finish(b, "narrow_integer", outputs, rng, true);
  };
}

// dynamic-slice / dynamic-update-slice (dynamic_slice.cc): windows of whole rows (ranks 2 and 3, the minor
// dimension taken whole) at start indices the device reads: s32 parameters from 3 below 0 to 3 past the
// last valid start (clamped on the device), or constants (folded, also out of range). With `minor` the
// window covers part of the minor dimension too (dynamic-slice-minor-to-rows; ranks 1 to 3, often one
// element: a scan's xs[i] and ys.at[i]), the other dimensions whole or windows of their own.
Generator DynamicSliceCase(bool update, bool minor = false) {
  return [update, minor](Rng& rng, int index) {
    ModuleBuilder b;
    const int rank = minor ? 1 + index % 3 : 2 + index % 2;
    std::vector<int64_t> dims = RandomDims(rng, rank, 4000);
    if (minor && dims.back() == 1) dims.back() = 2 + static_cast<int64_t>(rng() % 30);
    std::vector<int64_t> sizes = dims;
    for (int d = 0; d + 1 < rank; ++d) sizes[d] = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(dims[d]));
    if (minor) {
      if (rng() % 3 == 0) std::copy(dims.begin(), dims.end() - 1, sizes.begin());  // whole rows
      sizes.back() = rng() % 2 == 0 ? 1 : 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(dims.back() - 1));
    }
    const PrimitiveType type = index % 3 == 2 ? S32 : F32;
    const Domain domain = type == F32 ? Domain::kUnit : Domain::kInteger;
    Value operand = b.Parameter(type, dims, domain);
    Value window = update ? b.Parameter(type, sizes, domain) : Value{};
    std::vector<Value> starts;
    std::vector<std::pair<size_t, int32_t>> start_arguments;  // parameter number, value
    size_t parameters = update ? 2 : 1;
    for (int d = 0; d < rank; ++d) {
      const int64_t limit = dims[d] - sizes[d];
      const int32_t value = static_cast<int32_t>(static_cast<int64_t>(rng() % static_cast<uint32_t>(limit + 7)) - 3);
      if (rng() % 3 == 0) {
        starts.push_back(b.ScalarConstant(S32, value));
      } else {
        starts.push_back(b.Parameter(S32, {}, Domain::kInteger));
        start_arguments.push_back({parameters++, value});
      }
    }
    std::vector<Value> operands = {operand};
    if (update) operands.push_back(window);
    operands.insert(operands.end(), starts.begin(), starts.end());
    Value result = update ? b.Op(type, dims, "dynamic-update-slice", operands)
                          : b.Op(type, sizes, "dynamic-slice", operands, "dynamic_slice_sizes=" + Dims(sizes));
    DiffCase c = Finish(b, std::string(update ? "dynamic_update_slice" : "dynamic_slice") + (minor ? "_minor" : ""),
                        {result}, rng, true);
    for (const auto& [parameter, value] : start_arguments) c.arguments[parameter].Set<int32_t>(0, value);
    return c;
  };
}

// A lax.scan over vectors (dynamic-slice-minor-to-rows carries xs and the stacked ys as columns): a
// counted loop whose body reads xs[.., j] and writes ys[.., j] of [n] or [r,n] operands, j the counter
// (or n-1-counter, as a gradient's reverse scan reads), the carry c + x, ys c * x; trip counts from 2 below
// to 2 past n (starts past the end clamp to the last column, exactly as the interpreter clamps them).
DiffCase ScanCase(Rng& rng, int index) {
  const int64_t n = 2 + static_cast<int64_t>(rng() % 40), r = 1 + static_cast<int64_t>(rng() % 5);
  const bool matrix = index % 2 == 1, reverse = index % 4 >= 2;
  const int64_t trips = std::max<int64_t>(1, n - 2 + static_cast<int64_t>(rng() % 5));
  const std::string array = matrix ? "f32[" + std::to_string(r) + "," + std::to_string(n) + "]" : "f32[" + std::to_string(n) + "]";
  const std::string window = matrix ? "f32[" + std::to_string(r) + ",1]" : "f32[1]";
  const std::string sizes = matrix ? "{" + std::to_string(r) + ",1}" : "{1}";
  const std::string starts = matrix ? "%z, %j" : "%j";
  const std::string state = "(s32[], " + window + ", " + array + ", " + array + ")";
  std::string text = "HloModule scan\n\n" + CountedCondition("cond", state, std::to_string(trips), index % 5);
  text += "%body (p: " + state + ") -> " + state + " {\n  %p = " + state + " parameter(0)\n"
          "  %i = s32[] get-tuple-element(%p), index=0\n  %c = " + window + " get-tuple-element(%p), index=1\n"
          "  %ys = " + array + " get-tuple-element(%p), index=2\n  %xs = " + array + " get-tuple-element(%p), index=3\n"
          "  %one = s32[] constant(1)\n  %next = s32[] add(%i, %one)\n  %z = s32[] constant(0)\n";
  text += reverse ? "  %last = s32[] constant(" + std::to_string(n - 1) + ")\n  %j = s32[] subtract(%last, %i)\n"
                  : "  %j = s32[] add(%i, %z)\n";
  text += "  %x = " + window + " dynamic-slice(%xs, " + starts + "), dynamic_slice_sizes=" + sizes + "\n"
          "  %sum = " + window + " add(%c, %x)\n  %y = " + window + " multiply(%c, %x)\n"
          "  %ys2 = " + array + " dynamic-update-slice(%ys, %y, " + starts + ")\n"
          "  ROOT %t = " + state + " tuple(%next, %sum, %ys2, %xs)\n}\n\n";
  text += "ENTRY %main (xs: " + array + ", ys: " + array + ", c: " + window + ") -> (" + array + ", " + window +
          ") {\n  %xs = " + array + " parameter(0)\n  %ys = " + array + " parameter(1)\n  %c = " + window +
          " parameter(2)\n  %zero = s32[] constant(0)\n  %init = " + state + " tuple(%zero, %c, %ys, %xs)\n"
          "  %w = " + state + " while(%init), condition=%cond, body=%body\n"
          "  %rys = " + array + " get-tuple-element(%w), index=2\n  %rc = " + window + " get-tuple-element(%w), index=1\n"
          "  ROOT %out = (" + array + ", " + window + ") tuple(%rys, %rc)\n}\n";
  DiffCase c;
  c.hlo = text;
  const std::vector<int64_t> dims = matrix ? std::vector<int64_t>{r, n} : std::vector<int64_t>{n};
  const std::vector<int64_t> window_dims = matrix ? std::vector<int64_t>{r, 1} : std::vector<int64_t>{1};
  c.arguments.push_back(RandomLiteral(Shape::Make(PrimitiveType::F32, dims), Domain::kUnit, rng));
  c.arguments.push_back(RandomLiteral(Shape::Make(PrimitiveType::F32, dims), Domain::kUnit, rng));
  c.arguments.push_back(RandomLiteral(Shape::Make(PrimitiveType::F32, window_dims), Domain::kUnit, rng));
  c.exact = true;
  return c;
}

// Conditionals (control_flow.cc): `kind` "pred" (a predicate the device computes from the data picks one
// of two branches; a tuple passed to one branch, an array to the other, a tuple result), "index" (an s32
// index parameter, also out of range, picks one of three branches; one branch returns its input as it
// is), "in_loop" (a conditional on the loop counter's parity inside a while body) and "loop_in_branch" (a
// counted while inside a branch).
Generator ConditionalCase(const std::string& kind) {
  return [kind](Rng& rng, int index) {
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 9), cols = 1 + static_cast<int64_t>(rng() % 21);
    const std::string array = "f32[" + std::to_string(rows) + "," + std::to_string(cols) + "]";
    const std::string pair = "(" + array + ", " + array + ")";
    const std::string result = "(" + array + ", f32[])";
    std::string text = "HloModule conditional_" + kind + "\n\n%add (a: f32[], b: f32[]) -> f32[] {\n"
                       "  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n  ROOT %s = f32[] add(%a, %b)\n}\n\n";
    // Two branches of the same result: a tuple input (x, y) -> (x * y + x, sum(y)); an array input
    // x -> (|x|, max-free sum(x)).
    auto tuple_branch = [&](const std::string& name) {
      return "%" + name + " (p: " + pair + ") -> " + result + " {\n  %p = " + pair + " parameter(0)\n"
             "  %x = " + array + " get-tuple-element(%p), index=0\n  %y = " + array + " get-tuple-element(%p), index=1\n"
             "  %xy = " + array + " multiply(%x, %y)\n  %r = " + array + " add(%xy, %x)\n  %zero = f32[] constant(0)\n"
             "  %sum = f32[] reduce(%y, %zero), dimensions={0,1}, to_apply=%add\n"
             "  ROOT %t = " + result + " tuple(%r, %sum)\n}\n\n";
    };
    auto array_branch = [&](const std::string& name) {
      return "%" + name + " (x: " + array + ") -> " + result + " {\n  %x = " + array + " parameter(0)\n"
             "  %a = " + array + " abs(%x)\n  %zero = f32[] constant(0)\n"
             "  %sum = f32[] reduce(%x, %zero), dimensions={0,1}, to_apply=%add\n"
             "  ROOT %t = " + result + " tuple(%a, %sum)\n}\n\n";
    };
    DiffCase c;
    const Shape shape = Shape::Make(PrimitiveType::F32, {rows, cols});
    c.arguments.push_back(RandomLiteral(shape, Domain::kUnit, rng));
    c.arguments.push_back(RandomLiteral(shape, Domain::kUnit, rng));
    c.exact = false;  // the branches reduce
    const std::string entry_head = "  %x = " + array + " parameter(0)\n  %y = " + array + " parameter(1)\n";
    auto outputs = [&](const std::string& value) {
      return "  %o0 = " + array + " get-tuple-element(" + value + "), index=0\n  %o1 = f32[] get-tuple-element(" +
             value + "), index=1\n  ROOT %out = " + result + " tuple(%o0, %o1)\n}\n";
    };
    if (kind == "pred") {
      text += tuple_branch("on_true") + array_branch("on_false");
      // sum(x) > threshold, the threshold drawn so that both branches run across the cases.
      const std::string threshold = index % 2 ? "-100" : "100";
      text += "ENTRY %main (x: " + array + ", y: " + array + ") -> " + result + " {\n" + entry_head +
              "  %zero = f32[] constant(0)\n  %s = f32[] reduce(%x, %zero), dimensions={0,1}, to_apply=%add\n"
              "  %limit = f32[] constant(" + threshold + ")\n  %p = pred[] compare(%s, %limit), direction=GT\n"
              "  %xy = " + pair + " tuple(%x, %y)\n  %c = " + result +
              " conditional(%p, %xy, %y), true_computation=%on_true, false_computation=%on_false\n" + outputs("%c");
    } else if (kind == "index") {
      text += "%b0 (x: " + array + ") -> " + array + " {\n  %x = " + array + " parameter(0)\n"
              "  %one = f32[] constant(1)\n  %ones = " + array + " broadcast(%one), dimensions={}\n"
              "  ROOT %r = " + array + " add(%x, %ones)\n}\n\n"
              "%b1 (x: " + array + ") -> " + array + " {\n  ROOT %x = " + array + " parameter(0)\n}\n\n"
              "%b2 (x: " + array + ") -> " + array + " {\n  %x = " + array + " parameter(0)\n"
              "  ROOT %r = " + array + " negate(%x)\n}\n\n";
      text += "ENTRY %main (i: s32[], x: " + array + ", y: " + array + ") -> " + array + " {\n  %i = s32[] parameter(0)\n"
              "  %x = " + array + " parameter(1)\n  %y = " + array + " parameter(2)\n  %x2 = " + array +
              " multiply(%x, %x)\n  ROOT %c = " + array +
              " conditional(%i, %x2, %y, %x), branch_computations={%b0, %b1, %b2}\n}\n";
      static const int32_t kIndices[] = {0, 1, 2, 3, -1, 7, std::numeric_limits<int32_t>::min()};
      Literal i(Shape::Make(S32, {}));
      i.Set<int32_t>(0, kIndices[index % 7]);
      c.arguments.insert(c.arguments.begin(), std::move(i));
      c.exact = true;
    } else {
      const std::string state = "(s32[], " + array + ", " + array + ")";
      const std::string trips = std::to_string(index % 5);
      auto counted = [&](const std::string& cond, const std::string& limit) { return CountedCondition(cond, state, limit); };
      const std::string unpack = UnpackCountedState(state, array);
      if (kind == "in_loop") {
        // Even iterations take the tuple branch on (x, y), odd ones the array branch on y.
        text += tuple_branch("on_true") + array_branch("on_false") + counted("cond", trips);
        text += "%body (p: " + state + ") -> " + state + " {\n" + unpack +
                "  %ones = s32[] constant(1)\n  %parity = s32[] and(%i, %ones)\n  %zero = s32[] constant(0)\n"
                "  %even = pred[] compare(%parity, %zero), direction=EQ\n  %xy = " + pair + " tuple(%x, %y)\n"
                "  %c = " + result + " conditional(%even, %xy, %y), true_computation=%on_true, false_computation=%on_false\n"
                "  %r = " + array + " get-tuple-element(%c), index=0\n  %half = f32[] constant(0.5)\n"
                "  %halves = " + array + " broadcast(%half), dimensions={}\n  %scaled = " + array + " multiply(%r, %halves)\n"
                "  ROOT %t = " + state + " tuple(%next, %scaled, %y)\n}\n\n";
      } else {  // loop_in_branch: the true branch runs a counted loop over its input, the false one negates it
        text += counted("cond", trips);
        text += "%body (p: " + state + ") -> " + state + " {\n" + unpack + "  %sum = " + array + " add(%x, %y)\n"
                "  ROOT %t = " + state + " tuple(%next, %sum, %y)\n}\n\n";
        text += "%on_true (p: " + pair + ") -> " + state + " {\n  %p = " + pair + " parameter(0)\n"
                "  %x = " + array + " get-tuple-element(%p), index=0\n  %y = " + array + " get-tuple-element(%p), index=1\n"
                "  %zero = s32[] constant(0)\n  %init = " + state + " tuple(%zero, %x, %y)\n"
                "  %w = " + state + " while(%init), condition=%cond, body=%body\n"
                "  %i = s32[] get-tuple-element(%w), index=0\n  %wx = " + array + " get-tuple-element(%w), index=1\n"
                "  ROOT %t = " + state + " tuple(%i, %wx, %y)\n}\n\n";
        text += "%on_false (p: " + pair + ") -> " + state + " {\n  %p = " + pair + " parameter(0)\n"
                "  %x = " + array + " get-tuple-element(%p), index=0\n  %n = " + array + " negate(%x)\n"
                "  %minus = s32[] constant(-1)\n  ROOT %t = " + state + " tuple(%minus, %n, %x)\n}\n\n";
      }
      text += "ENTRY %main (x: " + array + ", y: " + array + ") -> " + state + " {\n" + entry_head;
      if (kind == "in_loop") {
        text += "  %zero = s32[] constant(0)\n  %init = " + state + " tuple(%zero, %x, %y)\n"
                "  %w = " + state + " while(%init), condition=%cond, body=%body\n";
      } else {
        const std::string threshold = index % 2 ? "-100" : "100";
        text += "  %zero = f32[] constant(0)\n  %s = f32[] reduce(%x, %zero), dimensions={0,1}, to_apply=%add\n"
                "  %limit = f32[] constant(" + threshold + ")\n  %p = pred[] compare(%s, %limit), direction=GT\n"
                "  %xy = " + pair + " tuple(%x, %y)\n"
                "  %w = " + state + " conditional(%p, %xy, %xy), true_computation=%on_true, false_computation=%on_false\n";
      }
      text += "  %o0 = s32[] get-tuple-element(%w), index=0\n  %o1 = " + array + " get-tuple-element(%w), index=1\n"
              "  %o2 = " + array + " get-tuple-element(%w), index=2\n  ROOT %out = " + state + " tuple(%o0, %o1, %o2)\n}\n";
      c.exact = kind == "loop_in_branch";
    }
    c.hlo = text;
    return c;
  };
}

struct OpcodeSpec {
  std::string name;
  Generator generate;
};

// gtest prints a failing parameter with this.
// rng-bit-generator as JAX emits it for an 'rbg' key: u32 words -> u64 state -> (state', bits) -> words.
// A key passed as a parameter runs through rng-bit-generator-expansion (philox also with a three-word
// state); every fourth case has a constant key, which folds, and xors the bits with a parameter. Keys
// whose counters carry across words and wrap.
Generator RngBitGeneratorCase(const std::string& algorithm, PrimitiveType type) {
  return [=](Rng& rng, int index) {
    const bool constant_key = index % 4 == 3;
    const int64_t words = algorithm != "rng_three_fry" && index % 4 == 2 ? 3 : 2;
    const std::vector<int64_t> dims = RandomDims(rng, index % 4, 2000);
    const std::string bits = ShapeText(Shape::Make(type, dims));
    const std::string flat = "u32[" + std::to_string(2 * words) + "]{0}";
    const std::string pairs = "u32[" + std::to_string(words) + ",2]{1,0}";
    const std::string state = "u64[" + std::to_string(words) + "]{0}";
    Literal key(Shape::Make(PrimitiveType::U32, {2 * words}));
    for (int64_t i = 0; i < 2 * words; ++i) key.Set<uint32_t>(i, rng() % 3 == 0 ? 0xffffffffu - rng() % 4 : rng());
    DiffCase c;
    std::string text = "HloModule rng_bit_generator\n\nENTRY %main {\n";
    if (constant_key) {
      text += "  %k = " + flat + " constant(" + key.ValuesToString() + ")\n  %x = " + bits + " parameter(0)\n";
      Literal x(Shape::Make(type, dims));
      for (int64_t i = 0; i < x.element_count(); ++i) x.SetFromDouble(i, static_cast<double>(rng() % 256));
      c.arguments.push_back(std::move(x));
    } else {
      text += "  %k = " + flat + " parameter(0)\n";
      c.arguments.push_back(key);
    }
    text += "  %w = " + pairs + " reshape(%k)\n  %s = " + state + " bitcast-convert(%w)\n"
            "  %r = (" + state + ", " + bits + ") rng-bit-generator(%s), algorithm=" + algorithm + "\n"
            "  %next = " + state + " get-tuple-element(%r), index=0\n"
            "  %nw = " + pairs + " bitcast-convert(%next)\n  %nk = " + flat + " reshape(%nw)\n"
            "  %b = " + bits + " get-tuple-element(%r), index=1\n";
    if (constant_key) text += "  %bx = " + bits + " xor(%b, %x)\n";
    text += "  ROOT %out = (" + flat + ", " + bits + ") tuple(%nk, " + (constant_key ? "%bx" : "%b") + ")\n}\n";
    c.hlo = text;
    c.exact = true;
    return c;
  };
}

void PrintTo(const OpcodeSpec& spec, std::ostream* out) { *out << spec.name; }

std::vector<OpcodeSpec> AllSpecs() {
  std::vector<OpcodeSpec> specs;
  auto add = [&](const std::string& name, Generator generator) { specs.push_back({name, std::move(generator)}); };
  for (const char* op : {"add", "subtract", "multiply", "maximum", "minimum"}) {
    add(std::string(op) + "_f32", BinaryCase(op, F32, Domain::kSpecial, Domain::kSpecial, true));
    add(std::string(op) + "_s32", BinaryCase(op, S32, Domain::kInteger, Domain::kInteger, true));
  }
  add("divide_f32", BinaryCase("divide", F32, Domain::kUnit, Domain::kNonZero, false));
  // remainder-expansion: exact while |x / y| < 2^24.
  add("remainder_f32", BinaryCase("remainder", F32, Domain::kInteger, Domain::kNonZero, true));
  add("remainder_f32_unit", BinaryCase("remainder", F32, Domain::kUnit, Domain::kNonZero, true));
  // atan2-expansion: every quadrant, signed zeros, infinities and NaN (kSpecial) within the f32 tolerance.
  add("atan2_f32", BinaryCase("atan2", F32, Domain::kSpecial, Domain::kSpecial, false));
  add("atan2_f32_unit", BinaryCase("atan2", F32, Domain::kUnit, Domain::kUnit, false));
  // integer-division-expansion: long division over the whole range, zeros and MIN / -1 included.
  for (const char* op : {"divide", "remainder"}) {
    add(std::string(op) + "_s32", BinaryCase(op, S32, Domain::kInteger, Domain::kInteger, true));
    add(std::string(op) + "_u32", BinaryCase(op, PrimitiveType::U32, Domain::kInteger, Domain::kInteger, true));
  }
  // bf16 arithmetic in f32, rounded back to bf16 (bf16-normalization), as the interpreter and XLA do it.
  constexpr PrimitiveType BF16 = PrimitiveType::BF16;
  for (const char* op : {"add", "subtract", "multiply", "maximum", "minimum"}) {
    add(std::string(op) + "_bf16", BinaryCase(op, BF16, Domain::kSpecial, Domain::kSpecial, true));
  }
  add("divide_bf16", BinaryCase("divide", BF16, Domain::kUnit, Domain::kNonZero, false));
  add("negate_bf16", UnaryCase("negate", BF16, Domain::kSpecial, true));
  add("abs_bf16", UnaryCase("abs", BF16, Domain::kSpecial, true));
  add("exponential_bf16", UnaryCase("exponential", BF16, Domain::kExp, false));
  add("tanh_bf16", UnaryCase("tanh", BF16, Domain::kTanh, false));
  add("compare_LT_bf16", CompareCase("LT", BF16));
  // Bitwise ops on the raw words of every integer type and pred.
  for (const char* op : {"and", "or", "xor"}) {
    add(std::string(op) + "_s32", BinaryCase(op, S32, Domain::kInteger, Domain::kInteger, true));
    add(std::string(op) + "_u32", BinaryCase(op, PrimitiveType::U32, Domain::kInteger, Domain::kInteger, true));
    add(std::string(op) + "_pred", BinaryCase(op, PRED, Domain::kInteger, Domain::kInteger, true));
  }
  for (const char* op : {"shift-left", "shift-right-logical", "shift-right-arithmetic"}) {
    std::string name = op;
    std::replace(name.begin(), name.end(), '-', '_');
    add(name + "_s32", BinaryCase(op, S32, Domain::kInteger, Domain::kShift, true));
    add(name + "_u32", BinaryCase(op, PrimitiveType::U32, Domain::kInteger, Domain::kShift, true));
  }
  add("not_s32", UnaryCase("not", S32, Domain::kInteger, true));
  add("not_u32", UnaryCase("not", PrimitiveType::U32, Domain::kInteger, true));
  add("not_pred", UnaryCase("not", PRED, Domain::kInteger, true));
  for (const char* op : {"negate", "abs", "sign"}) {
    add(std::string(op) + "_f32", UnaryCase(op, F32, Domain::kSpecial, true));
    add(std::string(op) + "_s32", UnaryCase(op, S32, Domain::kInteger, true));
  }
  for (const char* direction : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
    add(std::string("compare_") + direction + "_f32", CompareCase(direction, F32));
    add(std::string("compare_") + direction + "_s32", CompareCase(direction, S32));
  }
  for (const char* direction : {"LT", "LE", "GT", "GE"}) {
    add(std::string("compare_") + direction + "_u32", CompareCase(direction, PrimitiveType::U32));
  }
  add("maximum_u32", BinaryCase("maximum", PrimitiveType::U32, Domain::kInteger, Domain::kInteger, true));
  add("minimum_u32", BinaryCase("minimum", PrimitiveType::U32, Domain::kInteger, Domain::kInteger, true));
  add("compare_EQ_u32", CompareCase("EQ", PrimitiveType::U32));
  add("compare_NE_u32", CompareCase("NE", PrimitiveType::U32));
  add("select_f32", SelectCase(F32));
  add("select_s32", SelectCase(S32));
  add("clamp_f32", ClampCase(F32));
  add("clamp_s32", ClampCase(S32));
  add("convert_f32_s32", ConvertCase(F32, S32));
  add("convert_s32_f32", ConvertCase(S32, F32));
  add("convert_f32_pred", ConvertCase(F32, PRED));
  add("convert_pred_f32", ConvertCase(PRED, F32));
  add("convert_s32_pred", ConvertCase(S32, PRED));
  for (const char* op : {"floor", "ceil", "round-nearest-even", "round-nearest-afz"}) {
    add(op, UnaryCase(op, F32, Domain::kSpecial, true));
  }
  add("is_finite", [](Rng& rng, int index) {
    ModuleBuilder b;
    const std::vector<int64_t> dims = RandomDims(rng, RankOf(index));
    Value x = b.Parameter(F32, dims, Domain::kSpecial);  // infinities and NaN among them
    return Finish(b, "is_finite", {b.Op(PRED, dims, "is-finite", {x})}, rng, true);
  });
  add("exponential", UnaryCase("exponential", F32, Domain::kExp, false));
  add("exponential_minus_one", UnaryCase("exponential-minus-one", F32, Domain::kExp, false));
  add("exponential_minus_one_small", UnaryCase("exponential-minus-one", F32, Domain::kTanh, false));
  add("log_plus_one", UnaryCase("log-plus-one", F32, Domain::kPositive, false));
  add("log_plus_one_small", UnaryCase("log-plus-one", F32, Domain::kUnit, false));
  add("log_plus_one_specials", UnaryCase("log-plus-one", F32, Domain::kSpecial, false));
  add("log", UnaryCase("log", F32, Domain::kPositive, false));
  add("rsqrt", UnaryCase("rsqrt", F32, Domain::kPositive, false));
  add("sqrt", UnaryCase("sqrt", F32, Domain::kPositive, false));
  add("tanh", UnaryCase("tanh", F32, Domain::kTanh, false));
  add("logistic", UnaryCase("logistic", F32, Domain::kLogistic, false));
  // Infinities, NaN, signed zeros and huge values through the exp/rcp sequences.
  add("tanh_specials", UnaryCase("tanh", F32, Domain::kSpecial, false));
  add("logistic_specials", UnaryCase("logistic", F32, Domain::kSpecial, false));
  add("power", PowerCase);
  // elementwise-expansion (docs/numerics.md has the bounds over dense sweeps): the ulp bounds here are
  // against the interpreter's C library on the device's arithmetic (VRCP, VEXP, VLOG included).
  add("sine_f32", UnaryUlpCase("sine", F32, Domain::kTrig, 4.0));
  add("cosine_f32", UnaryUlpCase("cosine", F32, Domain::kTrig, 4.0));
  add("tan_f32", UnaryUlpCase("tan", F32, Domain::kTrig, 8.0));
  add("erf_f32", UnaryUlpCase("erf", F32, Domain::kErf, 8.0));
  add("cbrt_f32", UnaryUlpCase("cbrt", F32, Domain::kCbrt, 3.0));
  for (PrimitiveType type : {PrimitiveType::BF16, PrimitiveType::F16}) {
    const std::string suffix = type == PrimitiveType::BF16 ? "_bf16" : "_f16";
    add("sine" + suffix, UnaryCase("sine", type, Domain::kUnit, false));
    add("cosine" + suffix, UnaryCase("cosine", type, Domain::kExp, false));
    add("tan" + suffix, UnaryCase("tan", type, Domain::kUnit, false));
    add("erf" + suffix, UnaryCase("erf", type, Domain::kErf, false));
    add("cbrt" + suffix, UnaryCase("cbrt", type, Domain::kExp, false));
  }
  for (const char* op : {"count-leading-zeros", "popcnt"}) {
    const std::string name = std::string(op) == "popcnt" ? "popcnt" : "count_leading_zeros";
    add(name + "_s32", UnaryCase(op, S32, Domain::kWords, true));
    add(name + "_u32", UnaryCase(op, PrimitiveType::U32, Domain::kWords, true));
    add(name + "_s8", UnaryCase(op, PrimitiveType::S8, Domain::kInteger, true));
    add(name + "_u8", UnaryCase(op, PrimitiveType::U8, Domain::kInteger, true));
    add(name + "_s16", UnaryCase(op, PrimitiveType::S16, Domain::kInteger, true));
    add(name + "_u16", UnaryCase(op, PrimitiveType::U16, Domain::kInteger, true));
  }
  add("broadcast_f32", [](Rng& rng, int i) { return BroadcastCase(F32, rng, i); });
  add("broadcast_s32", [](Rng& rng, int i) { return BroadcastCase(S32, rng, i); });
  // Leading dimensions added to an operand of rank 1 to 3 (its lines repeated).
  add("broadcast_leading", [](Rng& rng, int index) {
    ModuleBuilder b;
    const int source_rank = 1 + index % 3;
    const std::vector<int64_t> source = RandomDims(rng, source_rank, 2000);
    std::vector<int64_t> dims = {1 + static_cast<int64_t>(rng() % 5)};
    if (index % 2) dims.push_back(1 + static_cast<int64_t>(rng() % 4));
    std::vector<int64_t> mapped;
    for (int i = 0; i < source_rank; ++i) mapped.push_back(static_cast<int64_t>(dims.size()) + i);
    dims.insert(dims.end(), source.begin(), source.end());
    Value x = b.Parameter(F32, source, Domain::kSpecial);
    return Finish(b, "broadcast_leading", {b.Op(F32, dims, "broadcast", {x}, "dimensions=" + Dims(mapped))}, rng, true);
  });
  add("reshape", ReshapeCase);
  add("transpose_f32", [](Rng& rng, int i) { return TransposeCase(F32, rng, i); });
  add("transpose_s32", [](Rng& rng, int i) { return TransposeCase(S32, rng, i); });
  add("reduce_add", [](Rng& rng, int i) { return ReduceCase("add", rng, i); });
  add("reduce_max", [](Rng& rng, int i) { return ReduceCase("maximum", rng, i); });
  add("reduce_max_u32", UnsignedReduceCase("maximum"));
  add("reduce_min_u32", UnsignedReduceCase("minimum"));
  add("dot", [](Rng& rng, int i) { return DotCase(rng, i, F32, F32); });
  // bf16 operands reach the MXU unrounded; a bf16 result is rounded from the f32 sums.
  add("dot_bf16", [](Rng& rng, int i) { return DotCase(rng, i, PrimitiveType::BF16, i % 2 ? PrimitiveType::BF16 : F32); });
  add("convert_f32_bf16", ConvertCase(F32, PrimitiveType::BF16));
  // f16 (f16-normalization, f16-rounding-expansion): arithmetic on the f32 values rounded back to f16 by
  // VPU word arithmetic, with signed zeros, inf, NaN, f16 subnormals, overflow and ties (Domain::kHalf).
  constexpr PrimitiveType F16 = PrimitiveType::F16;
  for (const char* op : {"add", "subtract", "multiply", "maximum", "minimum"}) {
    add(std::string(op) + "_f16", BinaryCase(op, F16, Domain::kHalf, Domain::kHalf, true));
  }
  // x * VRCP(y) in f32 is not always the correctly rounded quotient: within the tolerance.
  add("divide_f16", BinaryCase("divide", F16, Domain::kHalf, Domain::kNonZero, false));
  add("negate_f16", UnaryCase("negate", F16, Domain::kHalf, true));
  add("abs_f16", UnaryCase("abs", F16, Domain::kHalf, true));
  for (const char* direction : {"LT", "EQ", "GE", "NE"}) add(std::string("compare_") + direction + "_f16", CompareCase(direction, F16));
  add("select_f16", SelectCase(F16));
  for (PrimitiveType other : {F32, PrimitiveType::BF16, S32}) {
    const std::string name = hlo::PrimitiveTypeName(other);
    add("convert_" + name + "_f16", ConvertCase(other, F16));
    add("convert_f16_" + name, ConvertCase(F16, other));
  }
  add("reduce_add_f16", [](Rng& rng, int i) { return ReduceCase("add", rng, i, F16); });
  add("reduce_max_f16", [](Rng& rng, int i) { return ReduceCase("maximum", rng, i, F16); });
  add("dot_f16", [](Rng& rng, int i) { return DotCase(rng, i, F16, i % 2 ? F16 : F32); });
  add("transpose_f16", [](Rng& rng, int i) { return TransposeCase(F16, rng, i); });
  add("convert_bf16_f32", ConvertCase(PrimitiveType::BF16, F32));
  add("iota_f32", [](Rng& rng, int i) { return IotaCase(F32, rng, i); });
  add("iota_s32", [](Rng& rng, int i) { return IotaCase(S32, rng, i); });
  add("constant", ConstantCase);
  add("tuple_get_tuple_element", TupleCase);
  add("custom_call_identity", CustomCallCase);
  add("slice", SliceCase);
  add("pad", PadCase);
  add("concatenate", ConcatenateCase);
  add("convolution", ConvolutionCase);
  add("elementwise_chain", ChainCase);
  for (const char* kind : {"counted", "swap", "data_dependent", "nested"}) add(std::string("while_") + kind, WhileCase(kind));
  add("bitcast_convert", BitcastConvertCase);
  for (const char* algorithm : {"rng_three_fry", "rng_philox", "rng_default"}) {
    add(std::string(algorithm + 4) + "_bit_generator_u32", RngBitGeneratorCase(algorithm, PrimitiveType::U32));
  }
  add("three_fry_bit_generator_u8", RngBitGeneratorCase("rng_three_fry", PrimitiveType::U8));
  add("philox_bit_generator_u16", RngBitGeneratorCase("rng_philox", PrimitiveType::U16));
  for (PrimitiveType type : {PrimitiveType::S8, PrimitiveType::U8, PrimitiveType::S16, PrimitiveType::U16}) {
    add(std::string("narrow_integer_") + hlo::PrimitiveTypeName(type), NarrowIntegerCase(type));
  }
  add("dot_general", GeneralDotCase);
  for (const char* kind : {"gather", "scatter_add", "scatter_add_s32", "scatter_replace"}) add(kind, GatherScatterCase(kind));
  add("take_along_gather", TakeAlongCase(false));
  add("take_along_scatter", TakeAlongCase(true));
  add("reduce_window_minor_add", MinorWindowCase("add"));
  add("reduce_window_minor_max", MinorWindowCase("maximum"));
  add("reduce_window_minor_multiply", MinorWindowCase("multiply"));
  add("s64_in_range", S64Case);
  add("topk_op_f32", TopKOpCase(F32));
  add("topk_op_s32", TopKOpCase(S32));
  for (const char* kind : {"sort_f32", "sort_bf16", "argsort", "descending_s32", "two_keys"}) add(kind, SortCase(kind));
  for (const char* kind : {"gather_1d", "gather_minor", "gather_pair", "gather_slabs", "take_along_axis0",
                           "scatter_1d_set", "scatter_1d_add", "scatter_1d_mul", "scatter_1d_min", "scatter_1d_max",
                           "scatter_minor_add", "scatter_pair_max", "scatter_slabs_add", "take_along_axis0_add"}) {
    add(std::string("indexing_") + kind, IndexingCase(kind));
  }
  // jnp.searchsorted's u32 indices, and the other integer types.
  for (const auto& [kind, type] : std::vector<std::pair<const char*, PrimitiveType>>{
           {"gather_1d", PrimitiveType::U32}, {"scatter_1d_add", PrimitiveType::U32}, {"gather_slabs", PrimitiveType::U32},
           {"gather_pair", PrimitiveType::S8}, {"scatter_pair_max", PrimitiveType::U16}, {"gather_minor", PrimitiveType::U8},
           {"scatter_slabs_add", PrimitiveType::S16}, {"gather_1d", PrimitiveType::S64}}) {
    add(std::string("indexing_") + kind + "_" + hlo::PrimitiveTypeName(type), IndexingCase(kind, type));
  }
  for (const char* kind : {"reduce_window_add", "reduce_window_max", "select_and_scatter"}) {
    add(std::string("minor_pool_") + kind, MinorPoolCase(kind));
  }
  for (const char* kind : {"sum_and_max", "sum_and_min_s32", "argmax_s32", "argmin_s32"}) {
    add(std::string("variadic_reduce_") + kind, VariadicReduceCase(kind));
  }
  add("argmax", ArgReductionCase(true));
  add("argmin", ArgReductionCase(false));
  add("reduce_and", LogicalReduceCase("and"));
  add("reduce_or", LogicalReduceCase("or"));
  add("dynamic_slice", DynamicSliceCase(false));
  add("dynamic_update_slice", DynamicSliceCase(true));
  add("dynamic_slice_minor", DynamicSliceCase(false, true));
  add("dynamic_update_slice_minor", DynamicSliceCase(true, true));
  add("scan_over_vectors", ScanCase);
  for (const char* kind : {"pred", "index", "in_loop", "loop_in_branch"}) {
    add(std::string("conditional_") + kind, ConditionalCase(kind));
  }
  return specs;
}

// ---------------------------------------------------------------------------------------------------
// Running and comparing

int EnvInt(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  return std::atoi(text);
}

uint32_t CaseSeed(uint32_t base, const std::string& name, int index) {
  uint32_t hash = 2166136261u;  // FNV-1a of the opcode name: each opcode draws its own values
  for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 16777619u;
  std::seed_seq seq{base, hash, static_cast<uint32_t>(index)};
  uint32_t seed;
  seq.generate(&seed, &seed + 1);
  return seed;
}

// Numerically identical: the same value, both NaN, zeros of either sign, or a device zero where the
// reference is an fp32 subnormal (DAZ/FTZ). Empty when equal, else the first difference.
std::string CompareExact(const Literal& device, const Literal& reference) {
  if (device.shape() != reference.shape()) return "shape " + device.shape().ToString() + " vs " + reference.shape().ToString();
  for (int64_t i = 0; i < reference.element_count(); ++i) {
    const double d = device.GetAsDouble(i), r = reference.GetAsDouble(i);
    const bool same = d == r || (std::isnan(d) && std::isnan(r)) ||
                      (d == 0 && reference.shape().element_type == F32 && std::fabs(r) < 0x1p-126);
    if (!same) {
      char text[160];
      std::snprintf(text, sizeof(text), "element %lld: device %.9g, interpreter %.9g", static_cast<long long>(i), d, r);
      return text;
    }
  }
  return "";
}

// Units in the last place of |d - r| for finite normal fp32 references, accumulated per opcode.
struct UlpStats {
  double max = 0, sum = 0;
  int64_t count = 0;
  void Add(const Literal& device, const Literal& reference) {
    if (reference.shape().element_type != F32 || device.shape() != reference.shape()) return;
    for (int64_t i = 0; i < reference.element_count(); ++i) {
      const float r = reference.Get<float>(i), d = device.Get<float>(i);
      if (!std::isfinite(r) || std::fabs(r) < 0x1p-126f) continue;
      int exponent;
      std::frexp(r, &exponent);
      const double ulp = std::ldexp(1.0, exponent - 24);
      const double error = std::isfinite(d) ? std::fabs(double(d) - double(r)) / ulp : INFINITY;
      max = std::max(max, error);
      sum += error;
      ++count;
    }
  }
};

struct BackendRun {
  std::vector<Literal> outputs;
  std::vector<std::vector<uint8_t>> device_bytes;  // padded device layout
  std::vector<compiler::DeviceLayout> layouts;
};

StatusOr<BackendRun> RunOn(runtime::Client& client, const hlo::HloModule& module, const std::vector<Literal>& arguments) {
  TPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::LoadedExecutable> executable, client.Compile(module));
  std::vector<std::unique_ptr<runtime::Buffer>> buffers;
  std::vector<const runtime::Buffer*> pointers;
  for (const Literal& argument : arguments) {
    TPU_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Buffer> buffer, client.BufferFromHostLiteral(argument));
    pointers.push_back(buffer.get());
    buffers.push_back(std::move(buffer));
  }
  TPU_ASSIGN_OR_RETURN(runtime::ExecuteResult result, executable->Execute(pointers));
  BackendRun run;
  for (const std::unique_ptr<runtime::Buffer>& output : result.outputs) {
    TPU_ASSIGN_OR_RETURN(Literal literal, output->ToLiteral());
    TPU_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, output->ToDeviceBytes());
    run.outputs.push_back(std::move(literal));
    run.device_bytes.push_back(std::move(bytes));
    run.layouts.push_back(output->layout());
  }
  return run;
}

// The first padded lane that is not +0, or empty.
std::string CheckPadding(const std::vector<uint8_t>& bytes, const compiler::DeviceLayout& layout) {
  for (int64_t r = 0; r < layout.rows; ++r) {
    for (int64_t c = layout.cols; c < layout.padded_cols; ++c) {
      const size_t at = static_cast<size_t>((r * layout.padded_cols + c) * 4);
      uint32_t word = 0;
      if (at + 4 <= bytes.size()) std::memcpy(&word, &bytes[at], 4);
      if (word != 0) {
        char text[96];
        std::snprintf(text, sizeof(text), "row %lld padded column %lld holds 0x%08x", static_cast<long long>(r),
                      static_cast<long long>(c), word);
        return text;
      }
    }
  }
  return "";
}

// An f16 output's words must be f16 values already (the f32 word of the value, a NaN any NaN): the host
// transfer would round any other word and hide a device that did not. The first word that is not, or empty.
std::string CheckF16Words(const std::vector<uint8_t>& bytes, const compiler::DeviceLayout& layout) {
  for (int64_t r = 0; r < layout.rows; ++r) {
    for (int64_t c = 0; c < layout.cols; ++c) {
      const size_t at = static_cast<size_t>((r * layout.padded_cols + c) * 4);
      float word = 0;
      if (at + 4 <= bytes.size()) std::memcpy(&word, &bytes[at], 4);
      if (!std::isnan(word) && hlo::HalfToFloat(hlo::FloatToHalf(word)) != word) {
        char text[96];
        std::snprintf(text, sizeof(text), "row %lld column %lld holds %.9g, not an f16 value", static_cast<long long>(r),
                      static_cast<long long>(c), word);
        return text;
      }
    }
  }
  return "";
}

std::string TestName(const std::string& spec_name) {
  std::string name = spec_name;
  for (char& c : name) {
    if (c == '-') c = '_';
  }
  return name;
}

// The clients are process-wide on purpose: SystemC simulates one platform per process. The rtl one is
// null when the build has no SystemC platform or TPU_DIFF_RTL=0.
runtime::Client* ModelClient() {
  static runtime::Client* client = [] {
    StatusOr<std::unique_ptr<runtime::Client>> made = runtime::Client::Create("model", cfg::kName);
    return made.ok() ? std::move(made).value().release() : nullptr;
  }();
  return client;
}

runtime::Client* RtlClient() {
  static runtime::Client* client = []() -> runtime::Client* {
    if (EnvInt("TPU_DIFF_RTL", 1) == 0) return nullptr;
    StatusOr<std::unique_ptr<runtime::Client>> made = runtime::Client::Create("rtl", cfg::kName);
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? std::move(made).value().release() : nullptr;
  }();
  return client;
}

enum class CaseOutcome { kChecked, kNotLowered };

// Interpreter, model and rtl on one module; failures are reported with `reproduce` appended.
CaseOutcome CheckCase(const DiffCase& c, const std::string& reproduce, bool with_rtl, UlpStats* ulps, bool* ran_rtl,
                      std::string* not_lowered) {
  runtime::Client* model_client = ModelClient();
  EXPECT_NE(model_client, nullptr);
  if (model_client == nullptr) return CaseOutcome::kChecked;
  StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(c.hlo);
  EXPECT_TRUE(module.ok()) << module.status() << reproduce;
  if (!module.ok()) return CaseOutcome::kChecked;
  const Status verified = hlo::VerifyHloModule(**module);
  EXPECT_TRUE(verified.ok()) << verified << reproduce;
  StatusOr<std::vector<Literal>> reference = hlo::Interpret(**module, c.arguments);
  EXPECT_TRUE(reference.ok()) << reference.status() << reproduce;
  if (!verified.ok() || !reference.ok()) return CaseOutcome::kChecked;

  StatusOr<BackendRun> model = RunOn(*model_client, **module, c.arguments);
  if (!model.ok() && (model.status().code() == StatusCode::kNotFound ||
                      model.status().code() == StatusCode::kUnimplemented)) {
    *not_lowered = model.status().ToString();
    return CaseOutcome::kNotLowered;
  }
  EXPECT_TRUE(model.ok()) << model.status() << reproduce;
  if (!model.ok()) return CaseOutcome::kChecked;
  EXPECT_EQ(model->outputs.size(), reference->size()) << reproduce;
  for (size_t i = 0; i < std::min(reference->size(), model->outputs.size()); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    const Literal& want = (*reference)[i];
    if (c.exact) {
      const std::string difference = CompareExact(model->outputs[i], want);
      EXPECT_TRUE(difference.empty()) << "model vs interpreter (exact): " << difference << reproduce;
    } else {
      const tpusim::OutputComparison comparison = tpusim::CompareOutput(model->outputs[i], want);
      EXPECT_TRUE(comparison.ok) << "model vs interpreter: " << tpusim::FormatComparison("output " + std::to_string(i), want, comparison)
                                 << reproduce;
      ulps->Add(model->outputs[i], want);
      if (c.max_ulp > 0) {
        UlpStats bound;
        bound.Add(model->outputs[i], want);
        EXPECT_LE(bound.max, c.max_ulp) << "model vs interpreter: ulp bound" << reproduce;
      }
    }
    const std::string padding = CheckPadding(model->device_bytes[i], model->layouts[i]);
    EXPECT_TRUE(padding.empty()) << "padding invariant: " << padding << reproduce;
    if (want.shape().element_type == PrimitiveType::F16) {
      const std::string words = CheckF16Words(model->device_bytes[i], model->layouts[i]);
      EXPECT_TRUE(words.empty()) << "f16 words: " << words << reproduce;
    }
  }
  if (runtime::Client* rtl_client = with_rtl ? RtlClient() : nullptr) {
    StatusOr<BackendRun> rtl = RunOn(*rtl_client, **module, c.arguments);
    EXPECT_TRUE(rtl.ok()) << rtl.status() << reproduce;
    if (!rtl.ok()) return CaseOutcome::kChecked;
    *ran_rtl = true;
    EXPECT_EQ(rtl->device_bytes.size(), model->device_bytes.size()) << reproduce;
    for (size_t i = 0; i < std::min(rtl->device_bytes.size(), model->device_bytes.size()); ++i) {
      EXPECT_TRUE(rtl->device_bytes[i] == model->device_bytes[i])
          << "output " << i << ": rtl bytes differ from the model's" << reproduce;
    }
  }
  return CaseOutcome::kChecked;
}

void PrintUlps(const std::string& name, const UlpStats& ulps) {
  if (ulps.count == 0) return;
  std::printf("%s: error against the interpreter over %lld elements: max %.2f ulp, mean %.3f ulp\n", name.c_str(),
              static_cast<long long>(ulps.count), ulps.max, ulps.sum / double(ulps.count));
}

class OpcodeDiffTest : public ::testing::TestWithParam<OpcodeSpec> {};

TEST_P(OpcodeDiffTest, InterpreterModelAndRtlAgree) {
  const OpcodeSpec& spec = GetParam();
  const uint32_t base_seed = static_cast<uint32_t>(EnvInt("TPU_DIFF_SEED", 1));
  const int iterations = EnvInt("TPU_DIFF_ITERATIONS", 6);
  const int rtl_iterations = EnvInt("TPU_DIFF_RTL_ITERATIONS", iterations);  // the first cases also on the rtl
  const int only_case = EnvInt("TPU_DIFF_CASE", -1);
  int ran = 0, skipped = 0, rtl_runs = 0;
  std::string skip_reason;
  UlpStats ulps;
  for (int index = 0; index < iterations; ++index) {
    if (only_case >= 0 && index != only_case) continue;
    Rng rng(CaseSeed(base_seed, spec.name, index));
    const DiffCase c = spec.generate(rng, index);
    const std::string reproduce = "\nreproduce: TPU_DIFF_SEED=" + std::to_string(base_seed) + " TPU_DIFF_CASE=" +
                                  std::to_string(index) + " opcode_diff_test --gtest_filter='*/" + TestName(spec.name) +
                                  "'\nmodule:\n" + c.hlo;
    bool ran_rtl = false;
    if (CheckCase(c, reproduce, index < rtl_iterations, &ulps, &ran_rtl, &skip_reason) == CaseOutcome::kNotLowered) {
      ++skipped;
      std::printf("case %d not lowered (skipped): %s\n", index, skip_reason.c_str());
      continue;
    }
    ++ran;
    rtl_runs += ran_rtl;
    if (HasFailure()) {
      std::printf("first failing case %d of %s, seed %u\n", index, spec.name.c_str(), base_seed);
      break;
    }
  }
  std::printf("%s: %d cases on the model (%d also on the rtl), %d not lowered\n", spec.name.c_str(), ran, rtl_runs,
              skipped);
  PrintUlps(spec.name, ulps);
  if (ran == 0 && skipped > 0) GTEST_SKIP() << spec.name << " is not lowered yet: " << skip_reason;
}

INSTANTIATE_TEST_SUITE_P(Opcodes, OpcodeDiffTest, ::testing::ValuesIn(AllSpecs()),
                         [](const ::testing::TestParamInfo<OpcodeSpec>& info) { return TestName(info.param.name); });


// The training steps of tb/system/hlo/ with argument values a real step sees (tpusim run fills every
// parameter with [-1, 1), which makes Adam's second moments negative and its sqrt NaN): second moments
// and learning rates positive, step counts and class labels in range. Every reference output must be
// finite, so that the tolerance check means something.
struct TrainingModuleSpec {
  const char* name;
  std::vector<std::pair<int, Domain>> domains;  // parameter -> domain; kUnit otherwise
};

Literal TrainingArgument(const Shape& shape, Domain domain, Rng& rng) {
  Literal literal = RandomLiteral(shape, domain == Domain::kPositive ? Domain::kUnit : domain, rng);
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    if (shape.element_type == S32) {
      // kPositive: step counts 0..99; kInteger: class labels 0..9.
      literal.Set<int32_t>(i, static_cast<int32_t>(rng() % (domain == Domain::kPositive ? 100 : 10)));
    } else if (domain == Domain::kPositive) {
      literal.Set<float>(i, std::fabs(literal.Get<float>(i)) * 0.01f);  // second moments, learning rates
    }
  }
  return literal;
}

TEST(TrainingModuleDiffTest, RealisticArgumentsInterpreterModelAndRtlAgree) {
  const TrainingModuleSpec kModules[] = {
      {"jax_mlp_tanh_adam_train_step",
       {{8, Domain::kPositive}, {9, Domain::kPositive}, {10, Domain::kPositive}, {11, Domain::kPositive},
        {12, Domain::kPositive}, {14, Domain::kInteger}}},
      {"pytorch_xla_mlp_sigmoid_l1_momentum_train_step", {{0, Domain::kPositive}}},
      {"pytorch_xla_mlp_tanh_mse_adam_train_step",
       {{0, Domain::kPositive}, {11, Domain::kPositive}, {12, Domain::kPositive}, {13, Domain::kPositive},
        {14, Domain::kPositive}}},
  };
  const uint32_t base_seed = static_cast<uint32_t>(EnvInt("TPU_DIFF_SEED", 1));
  const int iterations = std::max(1, EnvInt("TPU_DIFF_ITERATIONS", 6) / 3);
  const int rtl_iterations = EnvInt("TPU_DIFF_RTL_ITERATIONS", iterations * 3) / 3;
  for (const TrainingModuleSpec& spec : kModules) {
    SCOPED_TRACE(spec.name);
    std::ifstream file(std::string(TPU_SOURCE_DIR) + "/tb/system/hlo/" + spec.name + ".hlo");
    std::stringstream text;
    text << file.rdbuf();
    ASSERT_FALSE(text.str().empty()) << spec.name;
    StatusOr<std::unique_ptr<hlo::HloModule>> module = hlo::ParseHloModule(text.str());
    ASSERT_TRUE(module.ok()) << module.status();
    UlpStats ulps;
    for (int index = 0; index < iterations; ++index) {
      Rng rng(CaseSeed(base_seed, spec.name, index));
      DiffCase c;
      c.hlo = text.str();
      const hlo::HloComputation* entry = (*module)->entry_computation();
      for (int64_t p = 0; p < entry->num_parameters(); ++p) {
        Domain domain = Domain::kUnit;
        for (const auto& [parameter, d] : spec.domains) {
          if (parameter == p) domain = d;
        }
        c.arguments.push_back(TrainingArgument(entry->parameter_instruction(p)->shape(), domain, rng));
      }
      StatusOr<std::vector<Literal>> reference = hlo::Interpret(**module, c.arguments);
      ASSERT_TRUE(reference.ok()) << reference.status();
      for (const Literal& output : *reference) {
        for (int64_t i = 0; i < output.element_count(); ++i) ASSERT_TRUE(std::isfinite(output.GetAsDouble(i)));
      }
      const std::string reproduce = "\nreproduce: TPU_DIFF_SEED=" + std::to_string(base_seed) + ", case " +
                                    std::to_string(index) + " of " + spec.name;
      bool ran_rtl = false;
      std::string not_lowered;
      EXPECT_EQ(CheckCase(c, reproduce, index < rtl_iterations, &ulps, &ran_rtl, &not_lowered), CaseOutcome::kChecked)
          << not_lowered;
      if (HasFailure()) break;
    }
    PrintUlps(spec.name, ulps);
  }
}

}  // namespace
}  // namespace tpu

// Own main: linking the rtl backend brings libsystemc.so, which defines a main of its own.
int main(int argc, char** argv) {
  setenv("TPU_LOG_DIR", "disabled", /*overwrite=*/0);  // thousands of compiles: no log files
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
