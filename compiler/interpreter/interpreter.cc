#include "compiler/interpreter/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "compiler/hlo/attributes.h"
#include "compiler/hlo/collective_groups.h"
#include "compiler/hlo/verifier.h"
#include "compiler/interpreter/rendezvous.h"
#include "compiler/interpreter/rng_bit_generator.h"

namespace tpu::hlo {

namespace {

// ---------------------------------------------------------------------------------------------------
// Element helpers: 16-bit floats compute in float; integers wrap like two's-complement hardware.

template <typename T>
using ComputeType = std::conditional_t<std::is_same_v<T, bfloat16> || std::is_same_v<T, half>, float, T>;

template <typename T>
ComputeType<T> Load(T value) {
  if constexpr (std::is_same_v<T, bfloat16>) return Bfloat16ToFloat(value);
  else if constexpr (std::is_same_v<T, half>) return HalfToFloat(value);
  else return value;
}
template <typename T>
T StoreAs(ComputeType<T> value) {
  if constexpr (std::is_same_v<T, bfloat16>) return FloatToBfloat16(value);
  else if constexpr (std::is_same_v<T, half>) return FloatToHalf(value);
  else return static_cast<T>(value);
}

template <typename C>
constexpr bool kIsInt = std::is_integral_v<C> && !std::is_same_v<C, bool>;
template <typename C>
constexpr bool kIsFloat = std::is_floating_point_v<C>;

template <typename C>
C WrapAdd(C a, C b) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename C>
C WrapSub(C a, C b) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename C>
C WrapMul(C a, C b) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
}

Status Unsupported(const HloInstruction& instruction, const std::string& why = "") {
  return Unimplemented("the HLO interpreter does not support " + instruction.opcode_name() +
                       (why.empty() ? "" : " (" + why + ")") + " (instruction %" + instruction.name() + ")");
}

// Calls f(T()) for the storage type; Unimplemented for tuples/tokens.
template <typename F>
Status ForArrayType(PrimitiveType type, F&& f) {
  return PrimitiveTypeSwitch(type, std::forward<F>(f), [&]() -> Status {
    return Unimplemented(std::string("element type ") + PrimitiveTypeName(type));
  });
}

Shape ArrayShape(const Shape& shape) {
  Shape result = Shape::Make(shape.element_type, shape.dimensions);
  return result;
}

// Builds an array of `shape` whose element at each output index is copied from `source` at
// `source_index(out_multi_index)`, or from `fill` (a scalar) when that returns -1.
template <typename F>
Literal GatherElements(const Literal& source, const Shape& shape, F source_index, const Literal* fill = nullptr) {
  Literal out(ArrayShape(shape));
  int64_t element_size = PrimitiveTypeByteSize(shape.element_type);
  int64_t count = out.element_count();
  std::vector<int64_t> index(static_cast<size_t>(shape.rank()), 0);
  const uint8_t* in = source.untyped_data();
  uint8_t* dst = out.untyped_data();
  for (int64_t linear = 0; linear < count; ++linear) {
    int64_t from = source_index(index);
    const uint8_t* src = from >= 0 ? in + from * element_size : fill->untyped_data();
    std::memcpy(dst + linear * element_size, src, static_cast<size_t>(element_size));
    for (int d = shape.rank() - 1; d >= 0; --d) {
      if (++index[d] < shape.dimensions[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

// `operands` joined along `dimension` into an array of `shape`.
Literal Concatenate(const std::vector<const Literal*>& operands, int64_t dimension, const Shape& shape) {
  Literal result(ArrayShape(shape));
  int64_t element_size = PrimitiveTypeByteSize(shape.element_type);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < dimension; ++d) outer *= shape.dimensions[d];
  for (int d = static_cast<int>(dimension) + 1; d < shape.rank(); ++d) inner *= shape.dimensions[d];
  int64_t out_row = shape.dimensions[dimension] * inner * element_size;
  int64_t offset = 0;
  for (const Literal* operand : operands) {
    int64_t row = operand->shape().dimensions[dimension] * inner * element_size;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(result.untyped_data() + o * out_row + offset, operand->untyped_data() + o * row, static_cast<size_t>(row));
    offset += row;
  }
  return result;
}

// The `index`-th of `pieces` equal slices of `array` along `dimension`.
Literal SliceAlong(const Literal& array, int64_t dimension, int64_t pieces, int64_t index) {
  Shape shape = ArrayShape(array.shape());
  shape.dimensions[dimension] /= pieces;
  const int64_t start = index * shape.dimensions[dimension];
  std::vector<int64_t> in_strides = RowMajorStrides(array.shape().dimensions);
  return GatherElements(array, shape, [&](const std::vector<int64_t>& at) {
    int64_t linear = 0;
    for (int d = 0; d < shape.rank(); ++d) linear += (at[d] + (d == dimension ? start : 0)) * in_strides[d];
    return linear;
  });
}

// The start indices of a dynamic-slice or dynamic-update-slice (operands from `first`), each clamped to
// [0, dimension - size] so that the window lies in the operand, as XLA defines it.
std::vector<int64_t> DynamicSliceStarts(const std::vector<const Literal*>& operands, size_t first,
                                        const std::vector<int64_t>& sizes) {
  const Shape& in = operands[0]->shape();
  std::vector<int64_t> starts;
  for (int d = 0; d < in.rank(); ++d) {
    const double start = operands[first + static_cast<size_t>(d)]->GetAsDouble(0);
    const int64_t limit = in.dimensions[d] - sizes[static_cast<size_t>(d)];
    starts.push_back(start < 0 ? 0 : start > static_cast<double>(limit) ? limit : static_cast<int64_t>(start));
  }
  return starts;
}

int64_t Linear(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t linear = 0;
  for (size_t i = 0; i < index.size(); ++i) linear += index[i] * strides[i];
  return linear;
}

// ---------------------------------------------------------------------------------------------------
// Elementwise ops

// reduce-precision of an f32 value to `exponent_bits` (at most 8) and `mantissa_bits` (at most 23): the
// mantissa rounded to nearest even (an overflow of the rounding carries into the exponent), values above
// the reduced format's largest finite to infinity, below its smallest normal to zero with the sign
// kept; NaN stays NaN.
float ReducePrecisionF32(float value, int exponent_bits, int mantissa_bits) {
  if (std::isnan(value)) return value;
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  const int dropped = 23 - mantissa_bits;
  if (dropped > 0) {
    const uint32_t last_kept = (bits >> dropped) & 1u;
    bits += ((1u << (dropped - 1)) - 1u) + last_kept;
    bits &= ~((1u << dropped) - 1u);
  }
  if (exponent_bits < 8) {
    const int exponent = static_cast<int>((bits >> 23) & 0xffu) - 127;
    const int max_exponent = (1 << (exponent_bits - 1)) - 1;
    const uint32_t sign = bits & 0x80000000u;
    if (exponent > max_exponent) bits = sign | 0x7f800000u;
    else if (exponent < 1 - max_exponent) bits = sign;
  }
  float result;
  std::memcpy(&result, &bits, 4);
  return result;
}

int IntAttribute(const HloInstruction& instruction, const char* name, int fallback) {
  const std::string* text = instruction.raw_attribute(name);
  return text == nullptr ? fallback : std::atoi(text->c_str());
}

template <typename T>
Status UnaryTyped(const HloInstruction& instruction, const Literal& a, Literal* out) {
  using C = ComputeType<T>;
  const T* x = a.data<T>();
  int64_t n = a.element_count();
  auto run = [&](auto f) {
    T* z = out->data<T>();
    for (int64_t i = 0; i < n; ++i) z[i] = StoreAs<T>(static_cast<C>(f(Load(x[i]))));
    return OkStatus();
  };
  HloOpcode opcode = instruction.opcode();
  if constexpr (kIsFloat<C>) {
    switch (opcode) {
      case HloOpcode::kExp: return run([](C v) { return std::exp(v); });
      case HloOpcode::kExpm1: return run([](C v) { return std::expm1(v); });
      case HloOpcode::kLog: return run([](C v) { return std::log(v); });
      case HloOpcode::kLog1p: return run([](C v) { return std::log1p(v); });
      case HloOpcode::kTanh: return run([](C v) { return std::tanh(v); });
      case HloOpcode::kSqrt: return run([](C v) { return std::sqrt(v); });
      case HloOpcode::kRsqrt: return run([](C v) { return C(1) / std::sqrt(v); });
      case HloOpcode::kCbrt: return run([](C v) { return std::cbrt(v); });
      case HloOpcode::kCos: return run([](C v) { return std::cos(v); });
      case HloOpcode::kSin: return run([](C v) { return std::sin(v); });
      case HloOpcode::kTan: return run([](C v) { return std::tan(v); });
      case HloOpcode::kErf: return run([](C v) { return std::erf(v); });
      case HloOpcode::kFloor: return run([](C v) { return std::floor(v); });
      case HloOpcode::kCeil: return run([](C v) { return std::ceil(v); });
      case HloOpcode::kRoundNearestAfz: return run([](C v) { return std::round(v); });
      case HloOpcode::kRoundNearestEven: return run([](C v) { return std::nearbyint(v); });
      case HloOpcode::kLogistic: return run([](C v) { return C(1) / (C(1) + std::exp(-v)); });
      case HloOpcode::kAbs: return run([](C v) { return std::fabs(v); });
      case HloOpcode::kNegate: return run([](C v) { return -v; });
      case HloOpcode::kSign:
        return run([](C v) { return std::isnan(v) ? v : v > 0 ? C(1) : v < 0 ? C(-1) : v; });
      case HloOpcode::kReducePrecision: {
        const int exponent_bits = IntAttribute(instruction, "exponent_bits", 8);
        const int mantissa_bits = IntAttribute(instruction, "mantissa_bits", 23);
        if (!std::is_same_v<C, float> || exponent_bits < 1 || exponent_bits > 8 || mantissa_bits < 0 ||
            mantissa_bits > 23) {
          break;
        }
        return run([&](C v) { return ReducePrecisionF32(static_cast<float>(v), exponent_bits, mantissa_bits); });
      }
      case HloOpcode::kIsFinite: {
        bool* z = out->data<bool>();
        for (int64_t i = 0; i < n; ++i) z[i] = std::isfinite(Load(x[i]));
        return OkStatus();
      }
      default: break;
    }
  } else if constexpr (kIsInt<C>) {
    switch (opcode) {
      case HloOpcode::kAbs: return run([](C v) { return v < 0 ? WrapSub(C(0), v) : v; });
      case HloOpcode::kNegate: return run([](C v) { return WrapSub(C(0), v); });
      case HloOpcode::kSign: return run([](C v) { return v > 0 ? C(1) : v < 0 ? static_cast<C>(-1) : C(0); });
      case HloOpcode::kNot: return run([](C v) { return static_cast<C>(~v); });
      case HloOpcode::kPopulationCount:
        return run([](C v) { return static_cast<C>(__builtin_popcountll(static_cast<std::make_unsigned_t<C>>(v))); });
      case HloOpcode::kClz:
        return run([](C v) {
          using U = std::make_unsigned_t<C>;
          constexpr int kBits = 8 * sizeof(C);
          int n = 0;
          for (U bits = static_cast<U>(v); n < kBits && !(bits >> (kBits - 1 - n) & 1); ++n) {
          }
          return static_cast<C>(n);
        });
      default: break;
    }
  } else {  // bool
    if (opcode == HloOpcode::kNot) return run([](C v) { return !v; });
  }
  return Unsupported(instruction, std::string("element type ") + PrimitiveTypeName(a.shape().element_type));
}

// The ordered integer image of a float's bits: its order is the total order -NaN < -inf < ... < -0 < +0 <
// ... < inf < NaN (TOTALORDER compares, TopK).
int64_t TotalOrderKey(double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return (bits >> 63) ? -static_cast<int64_t>(bits & 0x7FFFFFFFFFFFFFFFull) - 1 : static_cast<int64_t>(bits);
}

template <typename T>
Status BinaryTyped(const HloInstruction& instruction, const Literal& a, const Literal& b, Literal* out) {
  using C = ComputeType<T>;
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  int64_t n = a.element_count();
  HloOpcode opcode = instruction.opcode();
  if (opcode == HloOpcode::kCompare) {
    bool* z = out->data<bool>();
    bool total_order = instruction.comparison_type() == "TOTALORDER";
    // Total order through TotalOrderKey; otherwise IEEE comparison.
    auto run = [&](auto f) {
      for (int64_t i = 0; i < n; ++i) {
        double p = static_cast<double>(Load(x[i])), q = static_cast<double>(Load(y[i]));
        if (total_order) {
          p = static_cast<double>(TotalOrderKey(p));
          q = static_cast<double>(TotalOrderKey(q));
        }
        z[i] = f(p, q);
      }
      return OkStatus();
    };
    if constexpr (kIsInt<C>) {
      // Exact for 64-bit values: compare natively.
      auto native = [&](auto f) {
        for (int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
        return OkStatus();
      };
      switch (instruction.comparison_direction()) {
        case ComparisonDirection::kEq: return native([](C p, C q) { return p == q; });
        case ComparisonDirection::kNe: return native([](C p, C q) { return p != q; });
        case ComparisonDirection::kGe: return native([](C p, C q) { return p >= q; });
        case ComparisonDirection::kGt: return native([](C p, C q) { return p > q; });
        case ComparisonDirection::kLe: return native([](C p, C q) { return p <= q; });
        case ComparisonDirection::kLt: return native([](C p, C q) { return p < q; });
      }
    }
    switch (instruction.comparison_direction()) {
      case ComparisonDirection::kEq: return run([](double p, double q) { return p == q; });
      case ComparisonDirection::kNe: return run([](double p, double q) { return p != q; });
      case ComparisonDirection::kGe: return run([](double p, double q) { return p >= q; });
      case ComparisonDirection::kGt: return run([](double p, double q) { return p > q; });
      case ComparisonDirection::kLe: return run([](double p, double q) { return p <= q; });
      case ComparisonDirection::kLt: return run([](double p, double q) { return p < q; });
    }
    return Unsupported(instruction);
  }
  auto run = [&](auto f) {
    T* z = out->data<T>();
    for (int64_t i = 0; i < n; ++i) z[i] = StoreAs<T>(static_cast<C>(f(Load(x[i]), Load(y[i]))));
    return OkStatus();
  };
  if constexpr (kIsFloat<C>) {
    switch (opcode) {
      case HloOpcode::kAdd: return run([](C p, C q) { return p + q; });
      case HloOpcode::kSubtract: return run([](C p, C q) { return p - q; });
      case HloOpcode::kMultiply: return run([](C p, C q) { return p * q; });
      case HloOpcode::kDivide: return run([](C p, C q) { return p / q; });
      // NaN-propagating like XLA's maximum/minimum.
      case HloOpcode::kMaximum:
        return run([](C p, C q) { return std::isnan(p) || std::isnan(q) ? std::numeric_limits<C>::quiet_NaN() : std::max(p, q); });
      case HloOpcode::kMinimum:
        return run([](C p, C q) { return std::isnan(p) || std::isnan(q) ? std::numeric_limits<C>::quiet_NaN() : std::min(p, q); });
      case HloOpcode::kPower: return run([](C p, C q) { return std::pow(p, q); });
      case HloOpcode::kRemainder: return run([](C p, C q) { return std::fmod(p, q); });
      case HloOpcode::kAtan2: return run([](C p, C q) { return std::atan2(p, q); });
      default: break;
    }
  } else if constexpr (kIsInt<C>) {
    constexpr int kBits = 8 * sizeof(C);
    using U = std::make_unsigned_t<C>;
    switch (opcode) {
      case HloOpcode::kAdd: return run([](C p, C q) { return WrapAdd(p, q); });
      case HloOpcode::kSubtract: return run([](C p, C q) { return WrapSub(p, q); });
      case HloOpcode::kMultiply: return run([](C p, C q) { return WrapMul(p, q); });
      // XLA: x / 0 = -1 and x % 0 = x; MIN / -1 = MIN and MIN % -1 = 0.
      case HloOpcode::kDivide:
        return run([](C p, C q) -> C {
          if (q == 0) return static_cast<C>(-1);
          if constexpr (std::is_signed_v<C>) if (p == std::numeric_limits<C>::min() && q == -1) return p;
          return static_cast<C>(p / q);
        });
      case HloOpcode::kRemainder:
        return run([](C p, C q) -> C {
          if (q == 0) return p;
          if constexpr (std::is_signed_v<C>) if (p == std::numeric_limits<C>::min() && q == -1) return 0;
          return static_cast<C>(p % q);
        });
      case HloOpcode::kMaximum: return run([](C p, C q) { return std::max(p, q); });
      case HloOpcode::kMinimum: return run([](C p, C q) { return std::min(p, q); });
      case HloOpcode::kAnd: return run([](C p, C q) { return static_cast<C>(p & q); });
      case HloOpcode::kOr: return run([](C p, C q) { return static_cast<C>(p | q); });
      case HloOpcode::kXor: return run([](C p, C q) { return static_cast<C>(p ^ q); });
      case HloOpcode::kPower:
        return run([](C p, C q) -> C {
          if (q < 0) return p == 1 ? C(1) : C(0);
          C result = 1;
          for (C e = 0; e < q && e < 64; ++e) result = WrapMul(result, p);
          return result;
        });
      case HloOpcode::kShiftLeft:
        return run([](C p, C q) -> C {
          return static_cast<U>(q) >= kBits ? C(0) : static_cast<C>(static_cast<U>(p) << static_cast<U>(q));
        });
      case HloOpcode::kShiftRightLogical:
        return run([](C p, C q) -> C {
          return static_cast<U>(q) >= kBits ? C(0) : static_cast<C>(static_cast<U>(p) >> static_cast<U>(q));
        });
      case HloOpcode::kShiftRightArithmetic:
        return run([](C p, C q) -> C {
          using S = std::make_signed_t<C>;
          int shift = static_cast<U>(q) >= kBits ? kBits - 1 : static_cast<int>(q);
          return static_cast<C>(static_cast<S>(p) >> shift);
        });
      default: break;
    }
  } else {  // bool
    switch (opcode) {
      case HloOpcode::kAnd: case HloOpcode::kMinimum: case HloOpcode::kMultiply:
        return run([](C p, C q) { return p && q; });
      case HloOpcode::kOr: case HloOpcode::kMaximum: case HloOpcode::kAdd:
        return run([](C p, C q) { return p || q; });
      case HloOpcode::kXor:
        return run([](C p, C q) { return p != q; });
      default: break;
    }
  }
  return Unsupported(instruction, std::string("element type ") + PrimitiveTypeName(a.shape().element_type));
}

// Whether `computation` is `ROOT op(parameter(0), parameter(1))` on scalars; gives op.
bool IsSimpleBinaryReducer(const HloComputation* computation, HloOpcode* opcode) {
  if (computation == nullptr || computation->num_parameters() != 2) return false;
  const HloInstruction* root = computation->root_instruction();
  if (!IsElementwiseBinary(root->opcode()) || root->opcode() == HloOpcode::kCompare) return false;
  const HloInstruction* a = root->operand(0);
  const HloInstruction* b = root->operand(1);
  if (a->opcode() != HloOpcode::kParameter || b->opcode() != HloOpcode::kParameter) return false;
  if (a->parameter_number() == b->parameter_number()) return false;
  // Both orders are fine for the commutative ops we accept.
  switch (root->opcode()) {
    case HloOpcode::kAdd: case HloOpcode::kMultiply: case HloOpcode::kMaximum: case HloOpcode::kMinimum:
    case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
      *opcode = root->opcode();
      return true;
    default:
      return false;
  }
}

// ---------------------------------------------------------------------------------------------------

// The largest value one instruction may produce on the host.
constexpr int64_t kMaxValueBytes = int64_t{4} << 30;

// The device an evaluator runs: its place in the grid and where it meets the other devices (null when
// it runs alone).
struct DevicePlace {
  DeviceGrid grid;
  int64_t device = 0;
  CollectiveRendezvous* rendezvous = nullptr;
};

class Evaluator {
 public:
  // `place` says which device of the grid this evaluator runs and where it meets the others.
  Evaluator(const InterpreterOptions& options, const DevicePlace& place) : options_(options), place_(place) {}
  StatusOr<Literal> Run(const HloComputation& computation, const std::vector<const Literal*>& arguments, int depth);

 private:
  StatusOr<Literal> Evaluate(const HloInstruction& instruction, const std::vector<const Literal*>& operands,
                             const std::vector<const Literal*>& arguments, int depth);
  StatusOr<Literal> Dot(const HloInstruction& instruction, const Literal& lhs, const Literal& rhs);
  StatusOr<Literal> Reduce(const HloInstruction& instruction, const std::vector<const Literal*>& operands, int depth);
  StatusOr<Literal> Convolution(const HloInstruction& instruction, const Literal& input, const Literal& kernel);
  StatusOr<Literal> ReduceWindow(const HloInstruction& instruction, const Literal& operand, const Literal& init,
                                 int depth);
  StatusOr<Literal> Sort(const HloInstruction& instruction, const std::vector<const Literal*>& operands, int depth);
  StatusOr<Literal> TopK(const HloInstruction& instruction, const Literal& operand);
  StatusOr<Literal> While(const HloInstruction& instruction, const Literal& init, int depth);
  StatusOr<Literal> Gather(const HloInstruction& instruction, const Literal& operand, const Literal& indices);
  StatusOr<Literal> Scatter(const HloInstruction& instruction, const std::vector<const Literal*>& operands, int depth);
  StatusOr<Literal> SelectAndScatter(const HloInstruction& instruction, const Literal& operand, const Literal& source,
                                     const Literal& init, int depth);
  // all-reduce, all-gather, reduce-scatter, all-to-all and collective-permute: meets the devices of the
  // group (a group of one needs nobody) and combines their operands.
  StatusOr<Literal> Collective(const HloInstruction& instruction, const std::vector<const Literal*>& operands, int depth);
  // Combines a and b (scalars, or arrays element by element) with a scalar binary computation (fast path
  // for one elementwise op).
  StatusOr<Literal> Combine(const HloComputation& computation, const Literal& a, const Literal& b, int depth);
  // Applies a scalar binary computation (a fast path when it is one elementwise op).
  StatusOr<Literal> ApplyScalar(const HloComputation& computation, const std::vector<Literal>& scalars, int depth);
  // Structural checks (via shape inference) once per computation, so malformed IR gives an error, not a crash.
  Status CheckComputation(const HloComputation& computation, const std::vector<HloInstruction*>& order);

  InterpreterOptions options_;
  DevicePlace place_;
  std::unordered_set<const HloComputation*> checked_;
  std::unordered_map<const HloInstruction*, int64_t> executions_;  // of each collective, on this device
};

Status Evaluator::CheckComputation(const HloComputation& computation, const std::vector<HloInstruction*>& order) {
  if (checked_.count(&computation)) return OkStatus();
  if (computation.root_instruction() == nullptr) return InvalidArgument("computation " + computation.name() + " has no root");
  for (const HloInstruction* instruction : order) {
    for (const auto& called : instruction->called_computation_attributes())
      if (called.computation == nullptr)
        return InvalidArgument("%" + instruction->name() + ": " + called.attribute + "= names no computation");
    TPU_ASSIGN_OR_RETURN(Shape inferred, InferShape(*instruction));
    if (inferred != instruction->shape())
      return InvalidArgument("%" + instruction->name() + " has shape " + instruction->shape().ToString() +
                             " but its operands give " + inferred.ToString());
    if (!instruction->shape().IsStatic())
      return InvalidArgument("%" + instruction->name() + " has a dynamic shape " + instruction->shape().ToString());
    if (instruction->shape().ByteSize() > kMaxValueBytes)
      return ResourceExhausted("%" + instruction->name() + " of shape " + instruction->shape().ToString() +
                               " is too large for the host interpreter (limit 4 GiB per value)");
  }
  checked_.insert(&computation);
  return OkStatus();
}

StatusOr<Literal> Evaluator::ApplyScalar(const HloComputation& computation, const std::vector<Literal>& scalars,
                                         int depth) {
  std::vector<const Literal*> pointers;
  for (const Literal& scalar : scalars) pointers.push_back(&scalar);
  return Run(computation, pointers, depth + 1);
}

StatusOr<Literal> Evaluator::Run(const HloComputation& computation, const std::vector<const Literal*>& arguments,
                                 int depth) {
  if (depth > 64) return FailedPrecondition("call depth over 64 in computation " + computation.name());
  if (static_cast<int64_t>(arguments.size()) != computation.num_parameters())
    return InvalidArgument("computation " + computation.name() + " takes " + std::to_string(computation.num_parameters()) +
                           " arguments, got " + std::to_string(arguments.size()));
  std::unordered_map<const HloInstruction*, Literal> values;
  std::vector<HloInstruction*> order = computation.MakeInstructionPostOrder();
  TPU_RETURN_IF_ERROR(CheckComputation(computation, order));
  // Free each value after its last use so big graphs stay within memory.
  std::unordered_map<const HloInstruction*, int64_t> remaining_uses;
  for (const HloInstruction* instruction : order)
    for (const HloInstruction* operand : instruction->operands()) ++remaining_uses[operand];
  for (const HloInstruction* instruction : order) {
    std::vector<const Literal*> operands;
    for (const HloInstruction* operand : instruction->operands()) {
      auto it = values.find(operand);
      if (it == values.end()) return Internal("operand %" + operand->name() + " of %" + instruction->name() + " not evaluated");
      operands.push_back(&it->second);
    }
    auto result = Evaluate(*instruction, operands, arguments, depth);
    if (!result.ok()) return result.status();
    if (!(result->shape() == instruction->shape()))
      return Internal("%" + instruction->name() + " evaluated to " + result->shape().ToString() + ", expected " +
                      instruction->shape().ToString());
    values[instruction] = std::move(result).value();
    for (const HloInstruction* operand : instruction->operands())
      if (--remaining_uses[operand] == 0 && operand != computation.root_instruction()) values.erase(operand);
  }
  return std::move(values[computation.root_instruction()]);
}

StatusOr<Literal> Evaluator::Evaluate(const HloInstruction& instruction, const std::vector<const Literal*>& operands,
                                      const std::vector<const Literal*>& arguments, int depth) {
  HloOpcode opcode = instruction.opcode();
  const Shape& shape = instruction.shape();
  if (opcode != HloOpcode::kTuple && opcode != HloOpcode::kGetTupleElement && opcode != HloOpcode::kCall &&
      opcode != HloOpcode::kParameter && opcode != HloOpcode::kSort && opcode != HloOpcode::kCustomCall &&
      opcode != HloOpcode::kConstant && opcode != HloOpcode::kReduce && opcode != HloOpcode::kFusion &&
      opcode != HloOpcode::kWhile && opcode != HloOpcode::kConditional && opcode != HloOpcode::kAllReduce &&
      opcode != HloOpcode::kAllGather && opcode != HloOpcode::kReduceScatter && opcode != HloOpcode::kAllToAll &&
      opcode != HloOpcode::kCollectivePermute && opcode != HloOpcode::kScatter && opcode != HloOpcode::kInfeed &&
      opcode != HloOpcode::kOutfeed && opcode != HloOpcode::kAfterAll && opcode != HloOpcode::kRngBitGenerator &&
      opcode != HloOpcode::kTopK &&
      !shape.IsArray())
    return Unsupported(instruction, "non-array result");
  switch (opcode) {
    case HloOpcode::kParameter: {
      int64_t number = instruction.parameter_number();
      if (number >= static_cast<int64_t>(arguments.size())) return InvalidArgument("missing argument " + std::to_string(number));
      return *arguments[number];
    }
    case HloOpcode::kConstant: {
      if (!instruction.has_literal())
        return FailedPrecondition("constant %" + instruction.name() + " has elided values ({...}) in the HLO text; "
                                  "its values are unknown");
      return instruction.literal();
    }
    case HloOpcode::kTuple: {
      std::vector<Literal> elements;
      for (const Literal* operand : operands) elements.push_back(*operand);
      return Literal::MakeTuple(std::move(elements));
    }
    case HloOpcode::kGetTupleElement:
      return operands[0]->tuple_elements().at(instruction.tuple_index());
    case HloOpcode::kCall: {
      if (instruction.to_apply() == nullptr) return InvalidArgument("call %" + instruction.name() + " has no to_apply");
      return Run(*instruction.to_apply(), operands, depth + 1);
    }
    case HloOpcode::kCustomCall:
      if (IsIdentityCustomCallTarget(instruction.custom_call_target()) && operands.size() == 1) return *operands[0];
      if (instruction.custom_call_target() == kExactF16Target && operands.size() == 1 &&
          operands[0]->shape().element_type == PrimitiveType::F32) {
        Literal result = operands[0]->Convert(PrimitiveType::F16);
        for (int64_t i = 0; i < result.element_count(); ++i) {
          const float value = operands[0]->Get<float>(i);
          if (!std::isnan(value) && HalfToFloat(result.Get<half>(i)) != value) {
            return InvalidArgument("custom-call %" + instruction.name() + " to \"" + std::string(kExactF16Target) +
                                   "\": element " + std::to_string(i) + " (" + std::to_string(value) +
                                   ") is not an f16 value");
          }
        }
        return result;
      }
      return Unimplemented("the HLO interpreter does not support custom-call target \"" +
                           instruction.custom_call_target() + "\" (instruction %" + instruction.name() + ")");
    case HloOpcode::kCopy:
    case HloOpcode::kOptimizationBarrier:
      return *operands[0];
    case HloOpcode::kReshape:
    case HloOpcode::kBitcast: {
      if (operands[0]->shape().ByteSize() != shape.ByteSize()) return Unsupported(instruction, "size change");
      Literal result(ArrayShape(shape));
      std::memcpy(result.untyped_data(), operands[0]->untyped_data(), static_cast<size_t>(shape.ByteSize()));
      return result;
    }
    case HloOpcode::kConvert:
      return operands[0]->Convert(shape.element_type);
    case HloOpcode::kBitcastConvert: {
      // The same bytes read as another type; a change of width adds or drops a minor dimension of the
      // ratio (u32[n,2] <-> u64[n]: the little-endian words of each wide element, low first), which the
      // verifier checked.
      if (operands[0]->shape().ByteSize() != shape.ByteSize()) return Unsupported(instruction, "a change of size");
      Literal result(ArrayShape(shape));
      std::memcpy(result.untyped_data(), operands[0]->untyped_data(), static_cast<size_t>(shape.ByteSize()));
      return result;
    }
    case HloOpcode::kBroadcast: {
      const Shape& in = operands[0]->shape();
      std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions);
      const auto& dims = instruction.dimensions();
      return GatherElements(*operands[0], shape, [&](const std::vector<int64_t>& index) {
        int64_t linear = 0;
        for (size_t i = 0; i < dims.size(); ++i) linear += index[dims[i]] * in_strides[i];
        return linear;
      });
    }
    case HloOpcode::kTranspose: {
      std::vector<int64_t> in_strides = RowMajorStrides(operands[0]->shape().dimensions);
      const auto& permutation = instruction.dimensions();
      return GatherElements(*operands[0], shape, [&](const std::vector<int64_t>& index) {
        int64_t linear = 0;
        for (size_t i = 0; i < permutation.size(); ++i) linear += index[i] * in_strides[permutation[i]];
        return linear;
      });
    }
    case HloOpcode::kReverse: {
      std::vector<int64_t> in_strides = RowMajorStrides(shape.dimensions);
      const auto& dims = instruction.dimensions();
      return GatherElements(*operands[0], shape, [&](const std::vector<int64_t>& index) {
        int64_t linear = 0;
        for (int d = 0; d < shape.rank(); ++d) {
          bool reversed = std::find(dims.begin(), dims.end(), d) != dims.end();
          linear += (reversed ? shape.dimensions[d] - 1 - index[d] : index[d]) * in_strides[d];
        }
        return linear;
      });
    }
    case HloOpcode::kSlice: {
      std::vector<int64_t> in_strides = RowMajorStrides(operands[0]->shape().dimensions);
      return GatherElements(*operands[0], shape, [&](const std::vector<int64_t>& index) {
        int64_t linear = 0;
        for (int d = 0; d < shape.rank(); ++d)
          linear += (instruction.slice_starts()[d] + index[d] * instruction.slice_strides()[d]) * in_strides[d];
        return linear;
      });
    }
    case HloOpcode::kDynamicSlice: {
      const std::vector<int64_t> starts = DynamicSliceStarts(operands, 1, shape.dimensions);
      std::vector<int64_t> in_strides = RowMajorStrides(operands[0]->shape().dimensions);
      return GatherElements(*operands[0], shape, [&](const std::vector<int64_t>& index) {
        int64_t linear = 0;
        for (int d = 0; d < shape.rank(); ++d) linear += (starts[d] + index[d]) * in_strides[d];
        return linear;
      });
    }
    case HloOpcode::kDynamicUpdateSlice: {
      const Literal& update = *operands[1];
      const std::vector<int64_t> starts = DynamicSliceStarts(operands, 2, update.shape().dimensions);
      Literal result = *operands[0];
      std::vector<int64_t> out_strides = RowMajorStrides(shape.dimensions);
      const int64_t element_size = PrimitiveTypeByteSize(shape.element_type);
      std::vector<int64_t> index(static_cast<size_t>(shape.rank()), 0);
      for (int64_t linear = 0; linear < update.element_count(); ++linear) {
        int64_t to = 0;
        for (int d = 0; d < shape.rank(); ++d) to += (starts[d] + index[d]) * out_strides[d];
        std::memcpy(result.untyped_data() + to * element_size, update.untyped_data() + linear * element_size,
                    static_cast<size_t>(element_size));
        for (int d = shape.rank() - 1; d >= 0; --d) {
          if (++index[d] < update.shape().dimensions[d]) break;
          index[d] = 0;
        }
      }
      return result;
    }
    case HloOpcode::kPad: {
      const Shape& in = operands[0]->shape();
      std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions);
      const PaddingConfig& config = instruction.padding_config();
      return GatherElements(
          *operands[0], shape,
          [&](const std::vector<int64_t>& index) -> int64_t {
            int64_t linear = 0;
            for (int d = 0; d < shape.rank(); ++d) {
              const PaddingDimension& p = config.dimensions[d];
              int64_t offset = index[d] - p.edge_padding_low;
              int64_t step = p.interior_padding + 1;
              if (offset < 0 || offset % step != 0 || offset / step >= in.dimensions[d]) return -1;
              linear += (offset / step) * in_strides[d];
            }
            return linear;
          },
          operands[1]);
    }
    case HloOpcode::kConcatenate:
      return Concatenate(operands, instruction.concatenate_dimension(), shape);
    case HloOpcode::kIota: {
      Literal result(ArrayShape(shape));
      int64_t dimension = instruction.iota_dimension();
      std::vector<int64_t> index(static_cast<size_t>(shape.rank()), 0);
      for (int64_t linear = 0; linear < result.element_count(); ++linear) {
        result.SetFromDouble(linear, static_cast<double>(index[dimension]));
        for (int d = shape.rank() - 1; d >= 0; --d) {
          if (++index[d] < shape.dimensions[d]) break;
          index[d] = 0;
        }
      }
      return result;
    }
    case HloOpcode::kSelect: {
      Literal result(ArrayShape(shape));
      int64_t element_size = PrimitiveTypeByteSize(shape.element_type);
      const bool* predicate = operands[0]->data<bool>();
      bool scalar = operands[0]->shape().rank() == 0;
      for (int64_t i = 0; i < result.element_count(); ++i) {
        const Literal* chosen = predicate[scalar ? 0 : i] ? operands[1] : operands[2];
        std::memcpy(result.untyped_data() + i * element_size, chosen->untyped_data() + i * element_size,
                    static_cast<size_t>(element_size));
      }
      return result;
    }
    case HloOpcode::kClamp: {
      // clamp(lo, x, hi) = min(max(x, lo), hi), with scalar bounds broadcast. XLA's maximum and minimum
      // propagate NaN, so a NaN value or bound gives NaN.
      Literal result(ArrayShape(shape));
      for (int64_t i = 0; i < result.element_count(); ++i) {
        double lo = operands[0]->GetAsDouble(operands[0]->shape().rank() == 0 ? 0 : i);
        double hi = operands[2]->GetAsDouble(operands[2]->shape().rank() == 0 ? 0 : i);
        double x = operands[1]->GetAsDouble(i);
        double value = std::isnan(x)    ? x
                       : std::isnan(lo) ? lo
                       : std::isnan(hi) ? hi
                                        : std::min(std::max(x, lo), hi);
        result.SetFromDouble(i, value);
      }
      return result;
    }
    case HloOpcode::kDot:
      return Dot(instruction, *operands[0], *operands[1]);
    case HloOpcode::kReduce:
      return Reduce(instruction, operands, depth);
    case HloOpcode::kConvolution:
      return Convolution(instruction, *operands[0], *operands[1]);
    case HloOpcode::kReduceWindow:
      if (operands.size() != 2) return Unsupported(instruction, "variadic reduce-window");
      return ReduceWindow(instruction, *operands[0], *operands[1], depth);
    case HloOpcode::kSort:
      return Sort(instruction, operands, depth);
    case HloOpcode::kTopK:
      return TopK(instruction, *operands[0]);
    case HloOpcode::kFusion: {
      std::vector<HloComputation*> called = instruction.called_computations();
      if (called.size() != 1 || called[0] == nullptr) return InvalidArgument("fusion %" + instruction.name() + " has no calls=");
      return Run(*called[0], operands, depth + 1);
    }
    case HloOpcode::kWhile:
      return While(instruction, *operands[0], depth);
    case HloOpcode::kConditional: {
      std::vector<HloComputation*> branches = instruction.called_computations();
      int64_t branch;
      if (operands[0]->shape().element_type == PrimitiveType::PRED) {
        branch = operands[0]->Get<bool>(0) ? 0 : 1;  // true_computation first
      } else {
        branch = static_cast<int64_t>(operands[0]->GetAsDouble(0));
        // Out-of-range indices run the last branch, as XLA defines it.
        if (branch < 0 || branch >= static_cast<int64_t>(branches.size())) branch = static_cast<int64_t>(branches.size()) - 1;
      }
      return Run(*branches.at(static_cast<size_t>(branch)), {operands[static_cast<size_t>(branch) + 1]}, depth + 1);
    }
    case HloOpcode::kAfterAll:
      return Literal(Shape::MakeToken());
    case HloOpcode::kInfeed: {
      const Shape& data = shape.tuple_shapes.at(0);
      if (!options_.infeed) {
        return FailedPrecondition("infeed %" + instruction.name() + " of " + data.ToString() + ": no infeed source");
      }
      StatusOr<Literal> value = options_.infeed(data);
      if (!value.ok()) {
        return Status(value.status().code(), "infeed %" + instruction.name() + " of " + data.ToString() + ": " +
                                                 value.status().message());
      }
      if (!(value->shape() == data)) {
        return InvalidArgument("infeed %" + instruction.name() + " takes " + data.ToString() + " but was given " +
                               value->shape().ToString());
      }
      std::vector<Literal> result;
      result.push_back(std::move(value).value());
      result.emplace_back(Shape::MakeToken());
      return Literal::MakeTuple(std::move(result));
    }
    case HloOpcode::kOutfeed:
      if (!options_.outfeed) {
        return FailedPrecondition("outfeed %" + instruction.name() + ": nothing receives its data");
      }
      TPU_RETURN_IF_ERROR(options_.outfeed(*operands[0]));
      return Literal(Shape::MakeToken());
    case HloOpcode::kRngBitGenerator:
      return EvaluateRngBitGenerator(instruction, *operands[0]);
    case HloOpcode::kGather:
      return Gather(instruction, *operands[0], *operands[1]);
    case HloOpcode::kScatter:
      return Scatter(instruction, operands, depth);
    case HloOpcode::kSelectAndScatter:
      return SelectAndScatter(instruction, *operands[0], *operands[1], *operands[2], depth);
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllGather:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute:
      return Collective(instruction, operands, depth);
    case HloOpcode::kReplicaId:
      return Literal::CreateR0<uint32_t>(static_cast<uint32_t>(place_.grid.replica_of(place_.device)));
    case HloOpcode::kPartitionId:
      return Literal::CreateR0<uint32_t>(static_cast<uint32_t>(place_.grid.partition_of(place_.device)));
    default:
      break;
  }
  if (IsElementwiseUnary(opcode)) {
    Literal result(ArrayShape(shape));
    Status status = ForArrayType(operands[0]->shape().element_type, [&](auto tag) -> Status {
      return UnaryTyped<decltype(tag)>(instruction, *operands[0], &result);
    });
    if (!status.ok()) return status;
    return result;
  }
  if (IsElementwiseBinary(opcode)) {
    if (operands[0]->shape() != operands[1]->shape()) return Unsupported(instruction, "operands of different shapes");
    Literal result(ArrayShape(shape));
    Status status = ForArrayType(operands[0]->shape().element_type, [&](auto tag) -> Status {
      return BinaryTyped<decltype(tag)>(instruction, *operands[0], *operands[1], &result);
    });
    if (!status.ok()) return status;
    return result;
  }
  return Unsupported(instruction);
}

// Values of an array as doubles (exact for every type but 64-bit integers beyond 2^53).
std::vector<double> AsDoubles(const Literal& literal) {
  std::vector<double> values(static_cast<size_t>(literal.element_count()));
  if (literal.shape().element_type == PrimitiveType::F32) {
    const float* data = literal.data<float>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = data[i];
  } else {
    for (size_t i = 0; i < values.size(); ++i) values[i] = literal.GetAsDouble(static_cast<int64_t>(i));
  }
  return values;
}

// Rearranges `values` (row-major over `dims`) so that the dimensions listed in `order` come first-to-last.
template <typename V>
std::vector<V> Permute(const std::vector<V>& values, const std::vector<int64_t>& dims, const std::vector<int64_t>& order) {
  std::vector<int64_t> strides = RowMajorStrides(dims);
  std::vector<int64_t> new_dims, new_strides;
  for (int64_t d : order) {
    new_dims.push_back(dims[d]);
    new_strides.push_back(strides[d]);
  }
  std::vector<V> result(values.size());
  std::vector<int64_t> index(order.size(), 0);
  for (size_t linear = 0; linear < values.size(); ++linear) {
    result[linear] = values[static_cast<size_t>(Linear(index, new_strides))];
    for (int d = static_cast<int>(order.size()) - 1; d >= 0; --d) {
      if (++index[d] < new_dims[d]) break;
      index[d] = 0;
    }
  }
  return result;
}

StatusOr<Literal> Evaluator::Dot(const HloInstruction& instruction, const Literal& lhs, const Literal& rhs) {
  const DotDimensionNumbers& d = instruction.dot_dimension_numbers();
  const Shape& ls = lhs.shape();
  const Shape& rs = rhs.shape();
  auto free_dims = [](const Shape& s, const std::vector<int64_t>& batch, const std::vector<int64_t>& contracting) {
    std::vector<int64_t> result;
    for (int i = 0; i < s.rank(); ++i)
      if (std::find(batch.begin(), batch.end(), i) == batch.end() &&
          std::find(contracting.begin(), contracting.end(), i) == contracting.end())
        result.push_back(i);
    return result;
  };
  std::vector<int64_t> lhs_free = free_dims(ls, d.lhs_batch_dimensions, d.lhs_contracting_dimensions);
  std::vector<int64_t> rhs_free = free_dims(rs, d.rhs_batch_dimensions, d.rhs_contracting_dimensions);
  auto product = [](const Shape& s, const std::vector<int64_t>& dims) {
    int64_t p = 1;
    for (int64_t x : dims) p *= s.dimensions[x];
    return p;
  };
  int64_t batch = product(ls, d.lhs_batch_dimensions);
  int64_t m = product(ls, lhs_free);
  int64_t k = product(ls, d.lhs_contracting_dimensions);
  int64_t n = product(rs, rhs_free);
  // lhs as [batch, m, k], rhs as [batch, k, n].
  std::vector<int64_t> lhs_order = d.lhs_batch_dimensions;
  lhs_order.insert(lhs_order.end(), lhs_free.begin(), lhs_free.end());
  lhs_order.insert(lhs_order.end(), d.lhs_contracting_dimensions.begin(), d.lhs_contracting_dimensions.end());
  std::vector<int64_t> rhs_order = d.rhs_batch_dimensions;
  rhs_order.insert(rhs_order.end(), d.rhs_contracting_dimensions.begin(), d.rhs_contracting_dimensions.end());
  rhs_order.insert(rhs_order.end(), rhs_free.begin(), rhs_free.end());
  Literal result(ArrayShape(instruction.shape()));
  bool float_accumulate = instruction.shape().element_type == PrimitiveType::F32 ||
                          instruction.shape().element_type == PrimitiveType::BF16 ||
                          instruction.shape().element_type == PrimitiveType::F16;
  if (float_accumulate) {
    // IEEE fp32: products and sums rounded to float, summed in increasing contraction index.
    std::vector<float> a, b;
    for (double v : Permute(AsDoubles(lhs), ls.dimensions, lhs_order)) a.push_back(static_cast<float>(v));
    for (double v : Permute(AsDoubles(rhs), rs.dimensions, rhs_order)) b.push_back(static_cast<float>(v));
    std::vector<float> out(static_cast<size_t>(batch * m * n), 0.0f);
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t i = 0; i < m; ++i) {
        float* row = &out[static_cast<size_t>((bi * m + i) * n)];
        for (int64_t kk = 0; kk < k; ++kk) {
          float av = a[static_cast<size_t>((bi * m + i) * k + kk)];
          const float* brow = &b[static_cast<size_t>((bi * k + kk) * n)];
          for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
        }
      }
    for (size_t i = 0; i < out.size(); ++i) result.SetFromDouble(static_cast<int64_t>(i), out[i]);
  } else {
    std::vector<double> a = Permute(AsDoubles(lhs), ls.dimensions, lhs_order);
    std::vector<double> b = Permute(AsDoubles(rhs), rs.dimensions, rhs_order);
    for (int64_t bi = 0; bi < batch; ++bi)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t kk = 0; kk < k; ++kk) sum += a[static_cast<size_t>((bi * m + i) * k + kk)] * b[static_cast<size_t>((bi * k + kk) * n + j)];
          result.SetFromDouble((bi * m + i) * n + j, sum);
        }
  }
  return result;
}

StatusOr<Literal> Evaluator::Reduce(const HloInstruction& instruction, const std::vector<const Literal*>& operands,
                                    int depth) {
  size_t inputs = operands.size() / 2;
  const Shape& in_shape = operands[0]->shape();
  const auto& reduced = instruction.dimensions();
  std::vector<int64_t> kept;
  for (int d = 0; d < in_shape.rank(); ++d)
    if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) kept.push_back(d);
  std::vector<int64_t> out_dims;
  for (int64_t d : kept) out_dims.push_back(in_shape.dimensions[d]);
  std::vector<int64_t> out_strides = RowMajorStrides(out_dims);
  int64_t out_count = 1;
  for (int64_t x : out_dims) out_count *= x;
  // Output linear index of each input element, in input row-major order.
  std::vector<int64_t> out_index(static_cast<size_t>(operands[0]->element_count()));
  {
    std::vector<int64_t> index(static_cast<size_t>(in_shape.rank()), 0);
    for (size_t linear = 0; linear < out_index.size(); ++linear) {
      int64_t o = 0;
      for (size_t i = 0; i < kept.size(); ++i) o += index[kept[i]] * out_strides[i];
      out_index[linear] = o;
      for (int d = in_shape.rank() - 1; d >= 0; --d) {
        if (++index[d] < in_shape.dimensions[d]) break;
        index[d] = 0;
      }
    }
  }
  HloOpcode op;
  if (inputs == 1 && IsSimpleBinaryReducer(instruction.to_apply(), &op)) {
    // Accumulate with the same elementwise code as the binary op: accumulator literal and a one-element view.
    Shape out_shape = Shape::Make(operands[1]->shape().element_type, out_dims);
    Literal accumulator(out_shape);
    int64_t element_size = PrimitiveTypeByteSize(out_shape.element_type);
    for (int64_t i = 0; i < out_count; ++i)
      std::memcpy(accumulator.untyped_data() + i * element_size, operands[1]->untyped_data(), static_cast<size_t>(element_size));
    auto reducer = HloInstruction::Create(op, Shape::Make(out_shape.element_type, {}), {});
    Status status = ForArrayType(out_shape.element_type, [&](auto tag) -> Status {
      using T = decltype(tag);
      using C = ComputeType<T>;
      T* acc = accumulator.data<T>();
      const T* x = operands[0]->data<T>();
      Literal a(Shape::Make(out_shape.element_type, {})), b(Shape::Make(out_shape.element_type, {})),
          r(Shape::Make(out_shape.element_type, {}));
      if constexpr (kIsFloat<C>) {
        if (op == HloOpcode::kAdd) {
          for (size_t i = 0; i < out_index.size(); ++i)
            acc[out_index[i]] = StoreAs<T>(static_cast<C>(Load(acc[out_index[i]]) + Load(x[i])));
          return OkStatus();
        }
      }
      for (size_t i = 0; i < out_index.size(); ++i) {
        a.data<T>()[0] = acc[out_index[i]];
        b.data<T>()[0] = x[i];
        TPU_RETURN_IF_ERROR(BinaryTyped<T>(*reducer, a, b, &r));
        acc[out_index[i]] = r.data<T>()[0];
      }
      return OkStatus();
    });
    if (!status.ok()) return status;
    return accumulator;
  }
  // General reducer: run the computation per element.
  const HloComputation* reducer = instruction.to_apply();
  std::vector<Literal> accumulators;
  for (size_t j = 0; j < inputs; ++j) {
    Literal acc(Shape::Make(operands[inputs + j]->shape().element_type, out_dims));
    int64_t element_size = PrimitiveTypeByteSize(acc.shape().element_type);
    for (int64_t i = 0; i < out_count; ++i)
      std::memcpy(acc.untyped_data() + i * element_size, operands[inputs + j]->untyped_data(), static_cast<size_t>(element_size));
    accumulators.push_back(std::move(acc));
  }
  std::vector<Literal> scalars(2 * inputs);
  for (size_t j = 0; j < inputs; ++j) {
    scalars[j] = Literal(Shape::Make(accumulators[j].shape().element_type, {}));
    scalars[inputs + j] = Literal(Shape::Make(operands[j]->shape().element_type, {}));
  }
  for (size_t i = 0; i < out_index.size(); ++i) {
    for (size_t j = 0; j < inputs; ++j) {
      int64_t es = PrimitiveTypeByteSize(accumulators[j].shape().element_type);
      std::memcpy(scalars[j].untyped_data(), accumulators[j].untyped_data() + out_index[i] * es, static_cast<size_t>(es));
      int64_t xs = PrimitiveTypeByteSize(operands[j]->shape().element_type);
      std::memcpy(scalars[inputs + j].untyped_data(), operands[j]->untyped_data() + i * xs, static_cast<size_t>(xs));
    }
    TPU_ASSIGN_OR_RETURN(Literal value, ApplyScalar(*reducer, scalars, depth));
    for (size_t j = 0; j < inputs; ++j) {
      const Literal& part = inputs == 1 ? value : value.tuple_elements().at(j);
      int64_t es = PrimitiveTypeByteSize(accumulators[j].shape().element_type);
      std::memcpy(accumulators[j].untyped_data() + out_index[i] * es, part.untyped_data(), static_cast<size_t>(es));
    }
  }
  if (inputs == 1) return std::move(accumulators[0]);
  return Literal::MakeTuple(std::move(accumulators));
}

StatusOr<Literal> Evaluator::Convolution(const HloInstruction& instruction, const Literal& input, const Literal& kernel) {
  if (instruction.batch_group_count() != 1) return Unsupported(instruction, "batch_group_count != 1");
  const ConvolutionDimensionNumbers& d = instruction.convolution_dimension_numbers();
  const Shape& is = input.shape();
  const Shape& ks = kernel.shape();
  const Shape& os = instruction.shape();
  size_t spatial = d.input_spatial_dimensions.size();
  std::vector<double> in_values = AsDoubles(input);
  std::vector<double> k_values = AsDoubles(kernel);
  std::vector<int64_t> in_strides = RowMajorStrides(is.dimensions);
  std::vector<int64_t> k_strides = RowMajorStrides(ks.dimensions);
  int64_t groups = instruction.feature_group_count();
  int64_t kernel_in = ks.dimensions[d.kernel_input_feature_dimension];
  int64_t out_features = os.dimensions[d.output_feature_dimension];
  int64_t out_per_group = out_features / groups;
  bool fp32 = IsFloatingPointType(os.element_type) && os.element_type != PrimitiveType::F64;
  Literal result(ArrayShape(os));
  std::vector<int64_t> out_index(static_cast<size_t>(os.rank()), 0);
  std::vector<int64_t> window_index(spatial, 0);
  for (int64_t linear = 0; linear < result.element_count(); ++linear) {
    int64_t b = out_index[d.output_batch_dimension];
    int64_t of = out_index[d.output_feature_dimension];
    int64_t group = of / out_per_group;
    float sum_f = 0;
    double sum_d = 0;
    std::fill(window_index.begin(), window_index.end(), 0);
    int64_t window_count = 1;
    for (size_t s = 0; s < spatial; ++s) window_count *= instruction.window().dimensions[s].size;
    for (int64_t w = 0; w < window_count; ++w) {
      // Input position of this window tap, or skip if it falls in padding or between dilated elements.
      int64_t in_offset = in_strides[d.input_batch_dimension] * b;
      int64_t k_offset = k_strides[d.kernel_output_feature_dimension] * of;
      bool valid = true;
      for (size_t s = 0; s < spatial && valid; ++s) {
        const WindowDimension& wd = instruction.window().dimensions[s];
        int64_t tap = wd.window_reversal ? wd.size - 1 - window_index[s] : window_index[s];
        int64_t position = out_index[d.output_spatial_dimensions[s]] * wd.stride - wd.padding_low +
                           window_index[s] * wd.window_dilation;
        if (position < 0 || position % wd.base_dilation != 0) { valid = false; break; }
        position /= wd.base_dilation;
        if (position >= is.dimensions[d.input_spatial_dimensions[s]]) { valid = false; break; }
        in_offset += position * in_strides[d.input_spatial_dimensions[s]];
        k_offset += tap * k_strides[d.kernel_spatial_dimensions[s]];
      }
      if (valid) {
        for (int64_t f = 0; f < kernel_in; ++f) {
          double x = in_values[static_cast<size_t>(in_offset + (group * kernel_in + f) * in_strides[d.input_feature_dimension])];
          double y = k_values[static_cast<size_t>(k_offset + f * k_strides[d.kernel_input_feature_dimension])];
          if (fp32) sum_f += static_cast<float>(x) * static_cast<float>(y);
          else sum_d += x * y;
        }
      }
      for (int s = static_cast<int>(spatial) - 1; s >= 0; --s) {
        if (++window_index[s] < instruction.window().dimensions[s].size) break;
        window_index[s] = 0;
      }
    }
    result.SetFromDouble(linear, fp32 ? sum_f : sum_d);
    for (int dd = os.rank() - 1; dd >= 0; --dd) {
      if (++out_index[dd] < os.dimensions[dd]) break;
      out_index[dd] = 0;
    }
  }
  return result;
}

StatusOr<Literal> Evaluator::ReduceWindow(const HloInstruction& instruction, const Literal& operand, const Literal& init,
                                          int depth) {
  const Shape& os = instruction.shape();
  const Shape& is = operand.shape();
  const Window& window = instruction.window();
  std::vector<int64_t> in_strides = RowMajorStrides(is.dimensions);
  HloOpcode op;
  bool simple = IsSimpleBinaryReducer(instruction.to_apply(), &op);
  auto reducer = HloInstruction::Create(simple ? op : HloOpcode::kAdd, Shape::Make(os.element_type, {}), {});
  Literal result(ArrayShape(os));
  int64_t element_size = PrimitiveTypeByteSize(os.element_type);
  int rank = is.rank();
  std::vector<int64_t> out_index(static_cast<size_t>(rank), 0);
  std::vector<int64_t> window_index(static_cast<size_t>(rank), 0);
  int64_t window_count = 1;
  for (const WindowDimension& w : window.dimensions) window_count *= w.size;
  Literal accumulator = init;
  Literal element(Shape::Make(is.element_type, {}));
  Literal combined(Shape::Make(os.element_type, {}));
  for (int64_t linear = 0; linear < result.element_count(); ++linear) {
    accumulator = init;
    std::fill(window_index.begin(), window_index.end(), 0);
    for (int64_t w = 0; w < window_count; ++w) {
      int64_t offset = 0;
      bool valid = true;
      for (int dd = 0; dd < rank && valid; ++dd) {
        const WindowDimension& wd = window.dimensions[dd];
        int64_t position = out_index[dd] * wd.stride - wd.padding_low + window_index[dd] * wd.window_dilation;
        if (position < 0 || position % wd.base_dilation != 0) { valid = false; break; }
        position /= wd.base_dilation;
        if (position >= is.dimensions[dd]) { valid = false; break; }
        offset += position * in_strides[dd];
      }
      if (valid) {
        std::memcpy(element.untyped_data(), operand.untyped_data() + offset * element_size, static_cast<size_t>(element_size));
        if (simple) {
          Status status = ForArrayType(os.element_type, [&](auto tag) -> Status {
            return BinaryTyped<decltype(tag)>(*reducer, accumulator, element, &combined);
          });
          if (!status.ok()) return status;
          std::swap(accumulator, combined);
        } else {
          TPU_ASSIGN_OR_RETURN(accumulator, ApplyScalar(*instruction.to_apply(), {accumulator, element}, depth));
        }
      }
      for (int dd = rank - 1; dd >= 0; --dd) {
        if (++window_index[dd] < window.dimensions[dd].size) break;
        window_index[dd] = 0;
      }
    }
    std::memcpy(result.untyped_data() + linear * element_size, accumulator.untyped_data(), static_cast<size_t>(element_size));
    for (int dd = rank - 1; dd >= 0; --dd) {
      if (++out_index[dd] < os.dimensions[dd]) break;
      out_index[dd] = 0;
    }
  }
  return result;
}

// XLA's TopK: along the last dimension, the k largest (smallest) values in the total order of floats
// (-NaN < -inf < ... < -0 < +0 < ... < inf < NaN), ties in index order, and their indices.
StatusOr<Literal> Evaluator::TopK(const HloInstruction& instruction, const Literal& operand) {
  TPU_ASSIGN_OR_RETURN(hlo::TopKAttributes attributes, hlo::GetTopKAttributes(instruction));
  const Shape& shape = operand.shape();
  const int64_t length = shape.dimensions.back(), k = attributes.k;
  const int64_t rows = length == 0 ? 0 : shape.ElementCount() / length;
  const bool floating = IsFloatingPointType(shape.element_type);
  std::vector<int64_t> keys(static_cast<size_t>(shape.ElementCount()));
  for (int64_t i = 0; i < shape.ElementCount(); ++i) {
    const double value = operand.GetAsDouble(i);
    keys[static_cast<size_t>(i)] = floating ? TotalOrderKey(value) : static_cast<int64_t>(value);
  }
  Shape value_shape = shape, index_shape = Shape::Make(PrimitiveType::S32, shape.dimensions);
  value_shape.dimensions.back() = index_shape.dimensions.back() = k;
  Literal values(value_shape), indices(index_shape);
  const int64_t element_size = PrimitiveTypeByteSize(shape.element_type);
  std::vector<int64_t> order(static_cast<size_t>(length));
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t* key = keys.data() + row * length;
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return attributes.largest ? key[a] > key[b] : key[a] < key[b];
    });
    for (int64_t j = 0; j < k; ++j) {
      std::memcpy(values.untyped_data() + (row * k + j) * element_size,
                  operand.untyped_data() + (row * length + order[static_cast<size_t>(j)]) * element_size,
                  static_cast<size_t>(element_size));
      indices.Set<int32_t>(row * k + j, static_cast<int32_t>(order[static_cast<size_t>(j)]));
    }
  }
  std::vector<Literal> elements;
  elements.push_back(std::move(values));
  elements.push_back(std::move(indices));
  return Literal::MakeTuple(std::move(elements));
}

StatusOr<Literal> Evaluator::Sort(const HloInstruction& instruction, const std::vector<const Literal*>& operands,
                                  int depth) {
  const Shape& shape = operands[0]->shape();
  int64_t dimension = instruction.dimensions(0);
  int64_t length = shape.dimensions[dimension];
  std::vector<int64_t> strides = RowMajorStrides(shape.dimensions);
  int64_t stride = strides[dimension];
  const HloComputation* comparator = instruction.to_apply();
  if (comparator == nullptr) return InvalidArgument("sort %" + instruction.name() + " has no comparator");
  // Fast path: ROOT compare(parameter(0), parameter(1)) on the first operand's keys.
  const HloInstruction* root = comparator->root_instruction();
  bool simple = root->opcode() == HloOpcode::kCompare && root->operand(0)->opcode() == HloOpcode::kParameter &&
                root->operand(1)->opcode() == HloOpcode::kParameter &&
                root->operand(0)->parameter_number() == 0 && root->operand(1)->parameter_number() == 1 &&
                (root->comparison_direction() == ComparisonDirection::kLt ||
                 root->comparison_direction() == ComparisonDirection::kGt) &&
                root->comparison_type() != "TOTALORDER";  // -0 < +0 and NaN signs: the comparator decides
  std::vector<double> keys = AsDoubles(*operands[0]);
  std::vector<Literal> results;
  for (const Literal* operand : operands) results.push_back(*operand);
  int64_t slices = shape.ElementCount() / std::max<int64_t>(length, 1);
  std::vector<int64_t> permutation(static_cast<size_t>(length));
  Status failure = OkStatus();
  std::vector<Literal> scalars;
  for (const Literal* operand : operands) {
    scalars.emplace_back(Shape::Make(operand->shape().element_type, {}));
    scalars.emplace_back(Shape::Make(operand->shape().element_type, {}));
  }
  for (int64_t slice = 0; slice < slices; ++slice) {
    // Base offset of this slice: slice enumerates all indices except `dimension`.
    int64_t outer = slice / stride, inner = slice % stride;
    int64_t base = outer * stride * length + inner;
    std::iota(permutation.begin(), permutation.end(), 0);
    auto less = [&](int64_t a, int64_t b) -> bool {
      if (simple) {
        double ka = keys[static_cast<size_t>(base + a * stride)], kb = keys[static_cast<size_t>(base + b * stride)];
        // NaNs last for LT (first for GT), as a total order puts them outside the numbers.
        bool na = std::isnan(ka), nb = std::isnan(kb);
        if (na || nb) return root->comparison_direction() == ComparisonDirection::kLt ? (!na && nb) : (na && !nb);
        return root->comparison_direction() == ComparisonDirection::kLt ? ka < kb : ka > kb;
      }
      if (!failure.ok()) return false;
      for (size_t o = 0; o < operands.size(); ++o) {
        int64_t es = PrimitiveTypeByteSize(operands[o]->shape().element_type);
        std::memcpy(scalars[2 * o].untyped_data(), operands[o]->untyped_data() + (base + a * stride) * es, static_cast<size_t>(es));
        std::memcpy(scalars[2 * o + 1].untyped_data(), operands[o]->untyped_data() + (base + b * stride) * es, static_cast<size_t>(es));
      }
      auto value = ApplyScalar(*comparator, scalars, depth);
      if (!value.ok()) {
        failure = value.status();
        return false;
      }
      return value->GetAsDouble(0) != 0;
    };
    std::stable_sort(permutation.begin(), permutation.end(), less);
    if (!failure.ok()) return failure;
    for (size_t o = 0; o < operands.size(); ++o) {
      int64_t es = PrimitiveTypeByteSize(operands[o]->shape().element_type);
      for (int64_t i = 0; i < length; ++i)
        std::memcpy(results[o].untyped_data() + (base + i * stride) * es,
                    operands[o]->untyped_data() + (base + permutation[i] * stride) * es, static_cast<size_t>(es));
    }
  }
  if (results.size() == 1) return std::move(results[0]);
  return Literal::MakeTuple(std::move(results));
}

// One element of an array as a scalar Literal.
Literal ElementAt(const Literal& array, int64_t linear) {
  Literal scalar(Shape::Make(array.shape().element_type, {}));
  int64_t size = PrimitiveTypeByteSize(array.shape().element_type);
  std::memcpy(scalar.untyped_data(), array.untyped_data() + linear * size, static_cast<size_t>(size));
  return scalar;
}
void SetElement(Literal* array, int64_t linear, const Literal& scalar) {
  int64_t size = PrimitiveTypeByteSize(array->shape().element_type);
  std::memcpy(array->untyped_data() + linear * size, scalar.untyped_data(), static_cast<size_t>(size));
}
// Advances a row-major multi-index over `dimensions`; false after the last one.
bool NextIndex(std::vector<int64_t>* index, const std::vector<int64_t>& dimensions) {
  for (int d = static_cast<int>(dimensions.size()) - 1; d >= 0; --d) {
    if (++(*index)[d] < dimensions[d]) return true;
    (*index)[d] = 0;
  }
  return false;
}
bool Contains(const std::vector<int64_t>& values, int64_t value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

StatusOr<Literal> Evaluator::Combine(const HloComputation& computation, const Literal& a, const Literal& b, int depth) {
  HloOpcode op;
  if (IsSimpleBinaryReducer(&computation, &op) && a.shape() == b.shape()) {
    auto reducer = HloInstruction::Create(op, a.shape(), {});
    Literal result(a.shape());
    Status status = ForArrayType(a.shape().element_type, [&](auto tag) -> Status {
      return BinaryTyped<decltype(tag)>(*reducer, a, b, &result);
    });
    if (!status.ok()) return status;
    return result;
  }
  if (a.shape().rank() == 0) return ApplyScalar(computation, {a, b}, depth);
  Literal result = a;
  for (int64_t i = 0; i < a.element_count(); ++i) {
    TPU_ASSIGN_OR_RETURN(Literal combined, ApplyScalar(computation, {ElementAt(a, i), ElementAt(b, i)}, depth));
    SetElement(&result, i, combined);
  }
  return result;
}

StatusOr<Literal> Evaluator::While(const HloInstruction& instruction, const Literal& init, int depth) {
  const HloComputation* condition = nullptr;
  const HloComputation* body = nullptr;
  for (const auto& called : instruction.called_computation_attributes()) {
    if (called.attribute == "condition") condition = called.computation;
    if (called.attribute == "body") body = called.computation;
  }
  if (condition == nullptr || body == nullptr) return InvalidArgument("while %" + instruction.name() + " needs condition= and body=");
  Literal state = init;
  for (int64_t iteration = 0;; ++iteration) {
    if (iteration >= options_.max_while_iterations)
      return FailedPrecondition("while %" + instruction.name() + " ran " + std::to_string(options_.max_while_iterations) +
                                " iterations without its condition becoming false");
    TPU_ASSIGN_OR_RETURN(Literal go, Run(*condition, {&state}, depth + 1));
    if (go.shape().element_type != PrimitiveType::PRED || go.element_count() != 1)
      return InvalidArgument("condition of while %" + instruction.name() + " must return pred[]");
    if (!go.Get<bool>(0)) return state;
    TPU_ASSIGN_OR_RETURN(state, Run(*body, {&state}, depth + 1));
  }
}

StatusOr<Literal> Evaluator::Gather(const HloInstruction& instruction, const Literal& operand, const Literal& indices) {
  TPU_ASSIGN_OR_RETURN(GatherDimensionNumbers d, GetGatherDimensionNumbers(instruction));
  const Shape& os = instruction.shape();
  const Shape& is = indices.shape();
  const Shape& in = operand.shape();
  std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions);
  std::vector<int64_t> index_strides = RowMajorStrides(is.dimensions);
  std::vector<int64_t> batch_dims, window_operand_dims;
  for (int i = 0; i < os.rank(); ++i)
    if (!Contains(d.offset_dims, i)) batch_dims.push_back(i);
  for (int i = 0; i < in.rank(); ++i)
    if (!Contains(d.collapsed_slice_dims, i) && !Contains(d.operand_batching_dims, i)) window_operand_dims.push_back(i);
  std::vector<int64_t> start(static_cast<size_t>(in.rank()));
  std::vector<int64_t> index_position(static_cast<size_t>(is.rank()));
  return GatherElements(operand, os, [&](const std::vector<int64_t>& out) -> int64_t {
    // Position in the indices array: batch coordinates with index_vector_dim inserted.
    size_t next = 0;
    for (int i = 0; i < is.rank(); ++i) index_position[i] = i == d.index_vector_dim ? 0 : out[batch_dims[next++]];
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < d.start_index_map.size(); ++k) {
      if (d.index_vector_dim < is.rank()) index_position[d.index_vector_dim] = static_cast<int64_t>(k);
      int64_t dim = d.start_index_map[k];
      int64_t value = static_cast<int64_t>(indices.GetAsDouble(Linear(index_position, index_strides)));
      // Starts are clamped so the slice stays inside the operand, as XLA defines it.
      start[dim] = std::clamp<int64_t>(value, 0, in.dimensions[dim] - d.slice_sizes[dim]);
    }
    // A batching dimension of the operand is at the index's own position along its paired dimension.
    for (size_t b = 0; b < d.operand_batching_dims.size(); ++b) {
      start[d.operand_batching_dims[b]] = index_position[d.start_indices_batching_dims[b]];
    }
    int64_t linear = 0;
    for (size_t w = 0; w < window_operand_dims.size(); ++w) {
      int64_t dim = window_operand_dims[w];
      linear += (start[dim] + out[d.offset_dims[w]]) * in_strides[dim];
    }
    for (int64_t dim : d.collapsed_slice_dims) linear += start[dim] * in_strides[dim];
    for (int64_t dim : d.operand_batching_dims) linear += start[dim] * in_strides[dim];
    return linear;
  });
}

StatusOr<Literal> Evaluator::Scatter(const HloInstruction& instruction, const std::vector<const Literal*>& operands,
                                     int depth) {
  TPU_ASSIGN_OR_RETURN(ScatterDimensionNumbers d, GetScatterDimensionNumbers(instruction));
  if (operands.size() != 3) return Unsupported(instruction, "variadic scatter");
  const Literal& indices = *operands[1];
  const Literal& updates = *operands[2];
  const HloComputation* combiner = instruction.to_apply();
  if (combiner == nullptr) return InvalidArgument("scatter %" + instruction.name() + " needs to_apply=");
  Literal result = *operands[0];
  const Shape& in = result.shape();
  const Shape& is = indices.shape();
  const Shape& us = updates.shape();
  std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions);
  std::vector<int64_t> index_strides = RowMajorStrides(is.dimensions);
  std::vector<int64_t> scatter_dims, window_operand_dims;
  for (int i = 0; i < us.rank(); ++i)
    if (!Contains(d.update_window_dims, i)) scatter_dims.push_back(i);
  for (int i = 0; i < in.rank(); ++i)
    if (!Contains(d.inserted_window_dims, i) && !Contains(d.input_batching_dims, i)) window_operand_dims.push_back(i);
  // Window extent per operand dimension (1 for inserted and batching dimensions).
  std::vector<int64_t> window_size(static_cast<size_t>(in.rank()), 1);
  for (size_t w = 0; w < window_operand_dims.size(); ++w) window_size[window_operand_dims[w]] = us.dimensions[d.update_window_dims[w]];
  std::vector<int64_t> update_index(static_cast<size_t>(us.rank()), 0);
  std::vector<int64_t> index_position(static_cast<size_t>(is.rank()));
  std::vector<int64_t> start(static_cast<size_t>(in.rank()));
  if (updates.element_count() == 0) return result;
  int64_t linear_update = 0;
  do {
    size_t next = 0;
    for (int i = 0; i < is.rank(); ++i) index_position[i] = i == d.index_vector_dim ? 0 : update_index[scatter_dims[next++]];
    std::fill(start.begin(), start.end(), 0);
    for (size_t k = 0; k < d.scatter_dims_to_operand_dims.size(); ++k) {
      if (d.index_vector_dim < is.rank()) index_position[d.index_vector_dim] = static_cast<int64_t>(k);
      start[d.scatter_dims_to_operand_dims[k]] = static_cast<int64_t>(indices.GetAsDouble(Linear(index_position, index_strides)));
    }
    // A batching dimension of the operand is at the update's own position along its paired dimension.
    for (size_t b = 0; b < d.input_batching_dims.size(); ++b) {
      start[d.input_batching_dims[b]] = index_position[d.scatter_indices_batching_dims[b]];
    }
    // A window that does not fit the operand is skipped whole, as XLA defines it.
    bool fits = true;
    for (int dim = 0; dim < in.rank(); ++dim)
      if (start[dim] < 0 || start[dim] + window_size[dim] > in.dimensions[dim]) fits = false;
    if (fits) {
      int64_t linear = 0;
      for (int dim = 0; dim < in.rank(); ++dim) linear += start[dim] * in_strides[dim];
      for (size_t w = 0; w < window_operand_dims.size(); ++w)
        linear += update_index[d.update_window_dims[w]] * in_strides[window_operand_dims[w]];
      TPU_ASSIGN_OR_RETURN(Literal combined,
                           Combine(*combiner, ElementAt(result, linear), ElementAt(updates, linear_update), depth));
      SetElement(&result, linear, combined);
    }
    ++linear_update;
  } while (NextIndex(&update_index, us.dimensions));
  return result;
}

StatusOr<Literal> Evaluator::SelectAndScatter(const HloInstruction& instruction, const Literal& operand,
                                              const Literal& source, const Literal& init, int depth) {
  const HloComputation* select = nullptr;
  const HloComputation* scatter = nullptr;
  for (const auto& called : instruction.called_computation_attributes()) {
    if (called.attribute == "select") select = called.computation;
    if (called.attribute == "scatter") scatter = called.computation;
  }
  if (select == nullptr || scatter == nullptr)
    return InvalidArgument("select-and-scatter %" + instruction.name() + " needs select= and scatter=");
  const Shape& in = operand.shape();
  const Window& window = instruction.window();
  Literal result(ArrayShape(instruction.shape()));
  for (int64_t i = 0; i < result.element_count(); ++i) SetElement(&result, i, init);
  std::vector<int64_t> in_strides = RowMajorStrides(in.dimensions);
  std::vector<int64_t> window_dims;
  for (const WindowDimension& w : window.dimensions) window_dims.push_back(w.size);
  if (source.element_count() == 0) return result;
  std::vector<int64_t> source_index(static_cast<size_t>(in.rank()), 0);
  int64_t source_linear = 0;
  do {
    // The selected operand element of this window: the first valid one, replaced by each later one the
    // select computation does not prefer the current choice over.
    int64_t selected = -1;
    std::vector<int64_t> tap(static_cast<size_t>(in.rank()), 0);
    do {
      int64_t linear = 0;
      bool valid = true;
      for (int dim = 0; dim < in.rank() && valid; ++dim) {
        const WindowDimension& w = window.dimensions[dim];
        int64_t position = source_index[dim] * w.stride - w.padding_low + tap[dim] * w.window_dilation;
        if (position < 0 || position % w.base_dilation != 0) { valid = false; break; }
        position /= w.base_dilation;
        if (position >= in.dimensions[dim]) { valid = false; break; }
        linear += position * in_strides[dim];
      }
      if (!valid) continue;
      if (selected < 0) {
        selected = linear;
        continue;
      }
      TPU_ASSIGN_OR_RETURN(Literal keep, ApplyScalar(*select, {ElementAt(operand, selected), ElementAt(operand, linear)}, depth));
      if (keep.shape().element_type != PrimitiveType::PRED)
        return InvalidArgument("select= of %" + instruction.name() + " must return pred[]");
      if (!keep.Get<bool>(0)) selected = linear;
    } while (NextIndex(&tap, window_dims));
    if (selected >= 0) {
      TPU_ASSIGN_OR_RETURN(Literal combined,
                           Combine(*scatter, ElementAt(result, selected), ElementAt(source, source_linear), depth));
      SetElement(&result, selected, combined);
    }
    ++source_linear;
  } while (NextIndex(&source_index, source.shape().dimensions));
  return result;
}

StatusOr<Literal> Evaluator::Collective(const HloInstruction& instruction, const std::vector<const Literal*>& operands,
                                        int depth) {
  const HloOpcode opcode = instruction.opcode();
  const int64_t device = place_.device;
  std::vector<int64_t> group;
  int64_t source = -1;
  if (opcode == HloOpcode::kCollectivePermute) {
    if (operands.size() != 1)
      return Unsupported(instruction, "collective-permute of " + std::to_string(operands.size()) + " operands");
    TPU_ASSIGN_OR_RETURN(PermutePeers peers, CollectivePermutePeers(instruction, place_.grid, device));
    if (peers.target == -1 && peers.source == -1) return Literal(ArrayShape(instruction.shape()));
    group = peers.group;
    source = peers.source;
  } else {
    TPU_ASSIGN_OR_RETURN(group, CollectiveGroup(instruction, place_.grid, device));
  }
  const int64_t execution = executions_[&instruction]++;
  std::vector<Literal> own;
  for (const Literal* operand : operands) own.push_back(*operand);
  std::vector<CollectiveRendezvous::Contribution> all;
  if (group.size() == 1) {
    all.push_back(std::make_shared<const std::vector<Literal>>(std::move(own)));
  } else {
    if (place_.rendezvous == nullptr)
      return FailedPrecondition(instruction.opcode_name() + " %" + instruction.name() + " meets " +
                                std::to_string(group.size()) + " devices, but this interpretation runs a single "
                                "device (InterpretReplicated runs them all)");
    TPU_ASSIGN_OR_RETURN(all, place_.rendezvous->Exchange(instruction, execution, group, device, std::move(own)));
  }
  const int64_t size = static_cast<int64_t>(group.size());
  auto index_of = [&](int64_t member) { return std::find(group.begin(), group.end(), member) - group.begin(); };
  const int64_t rank = index_of(device);
  if (opcode == HloOpcode::kCollectivePermute) {
    if (source == -1) return Literal(ArrayShape(instruction.shape()));
    return (*all[static_cast<size_t>(index_of(source))])[0];
  }
  std::vector<Literal> results;
  for (size_t i = 0; i < operands.size(); ++i) {
    switch (opcode) {
      case HloOpcode::kAllReduce:
      case HloOpcode::kReduceScatter: {
        // Left to right in group order: every device of the group gets the same bits.
        Literal sum = (*all[0])[i];
        for (int64_t k = 1; k < size; ++k) {
          TPU_ASSIGN_OR_RETURN(sum, Combine(*instruction.to_apply(), sum, (*all[static_cast<size_t>(k)])[i], depth));
        }
        if (opcode == HloOpcode::kAllReduce) {
          results.push_back(std::move(sum));
        } else {
          results.push_back(SliceAlong(sum, instruction.dimensions(0), size, rank));
        }
        break;
      }
      case HloOpcode::kAllGather: {
        std::vector<const Literal*> pieces;
        for (const auto& contribution : all) pieces.push_back(&(*contribution)[i]);
        const Shape& out = instruction.shape().IsTuple() ? instruction.shape().tuple_shapes[i] : instruction.shape();
        results.push_back(Concatenate(pieces, instruction.dimensions(0), out));
        break;
      }
      case HloOpcode::kAllToAll: {
        if (instruction.dimensions().size() == 1) {
          // One array split along the dimension: piece k goes to the k-th device, which joins what it
          // receives in group order.
          std::vector<Literal> received;
          for (const auto& contribution : all)
            received.push_back(SliceAlong((*contribution)[i], instruction.dimensions(0), size, rank));
          std::vector<const Literal*> pieces;
          for (const Literal& piece : received) pieces.push_back(&piece);
          results.push_back(Concatenate(pieces, instruction.dimensions(0), ArrayShape(operands[i]->shape())));
        } else {
          // One operand per device: the i-th result is what the i-th device sends to this one.
          if (static_cast<int64_t>(operands.size()) != size)
            return Unsupported(instruction, "tuple all-to-all needs one operand per device of the group");
          results.push_back((*all[i])[static_cast<size_t>(rank)]);
        }
        break;
      }
      default:
        return Unsupported(instruction);
    }
  }
  if (results.size() == 1) return std::move(results[0]);
  return Literal::MakeTuple(std::move(results));
}

void Flatten(Literal literal, std::vector<Literal>* out) {
  if (!literal.IsTuple()) {
    out->push_back(std::move(literal));
    return;
  }
  for (Literal& element : literal.tuple_elements()) Flatten(std::move(element), out);
}

StatusOr<Literal> RunOnDevice(const HloComputation& computation, const std::vector<Literal>& arguments,
                              const InterpreterOptions& options, const DevicePlace& place) {
  std::vector<const Literal*> pointers;
  for (int64_t i = 0; i < static_cast<int64_t>(arguments.size()); ++i) {
    if (i < computation.num_parameters() && !(arguments[i].shape() == computation.parameter_instruction(i)->shape()))
      return InvalidArgument("argument " + std::to_string(i) + " has shape " + arguments[i].shape().ToString() +
                             ", parameter %" + computation.parameter_instruction(i)->name() + " of " + computation.name() +
                             " needs " + computation.parameter_instruction(i)->shape().ToString());
    pointers.push_back(&arguments[i]);
  }
  Evaluator evaluator(options, place);
  return evaluator.Run(computation, pointers, 0);
}

}  // namespace

StatusOr<Literal> InterpretComputation(const HloComputation& computation, const std::vector<Literal>& arguments,
                                       const InterpreterOptions& options) {
  return RunOnDevice(computation, arguments, options, DevicePlace{});
}

std::function<StatusOr<Literal>(const Shape&)> InfeedQueue(std::deque<Literal>* queue) {
  return [queue](const Shape&) -> StatusOr<Literal> {
    if (queue->empty()) return FailedPrecondition("the infeed queue is empty");
    Literal value = std::move(queue->front());
    queue->pop_front();
    return value;
  };
}

std::function<Status(Literal)> OutfeedQueue(std::vector<Literal>* queue) {
  return [queue](Literal value) {
    queue->push_back(std::move(value));
    return OkStatus();
  };
}

StatusOr<std::vector<Literal>> Interpret(const HloModule& module, const std::vector<Literal>& arguments,
                                         const InterpreterOptions& options) {
  if (module.entry_computation() == nullptr) return InvalidArgument("module " + module.name() + " has no entry computation");
  DevicePlace place;
  TPU_ASSIGN_OR_RETURN(place.grid, ModuleDeviceGrid(module));
  TPU_ASSIGN_OR_RETURN(Literal result, RunOnDevice(*module.entry_computation(), arguments, options, place));
  std::vector<Literal> outputs;
  Flatten(std::move(result), &outputs);
  return outputs;
}

StatusOr<std::vector<std::vector<Literal>>> InterpretReplicated(const HloModule& module,
                                                                const std::vector<std::vector<Literal>>& arguments,
                                                                const std::vector<InterpreterOptions>& device_options) {
  if (module.entry_computation() == nullptr) return InvalidArgument("module " + module.name() + " has no entry computation");
  TPU_ASSIGN_OR_RETURN(DeviceGrid grid, ModuleDeviceGrid(module));
  const int64_t devices = static_cast<int64_t>(arguments.size());
  if (grid.devices() == 1 && devices > 1) grid.replicas = devices;  // the header names no grid: replicas
  if (devices != grid.devices())
    return InvalidArgument("module " + module.name() + " runs on " + std::to_string(grid.devices()) + " devices (" +
                           std::to_string(grid.replicas) + " replicas x " + std::to_string(grid.partitions) +
                           " partitions), given arguments for " + std::to_string(devices));
  if (!device_options.empty() && static_cast<int64_t>(device_options.size()) != devices)
    return InvalidArgument("options for " + std::to_string(device_options.size()) + " devices, module runs on " +
                           std::to_string(devices));
  CollectiveRendezvous rendezvous(devices);
  std::vector<StatusOr<Literal>> results(static_cast<size_t>(devices), Status(Internal("not run")));
  // The device whose failure came first is the cause; devices that then waited for it fail after it.
  std::mutex order_mutex;
  std::vector<int64_t> failure_order;
  auto run = [&](int64_t device) {
    DevicePlace place{grid, device, &rendezvous};
    const InterpreterOptions& options = device_options.empty() ? InterpreterOptions{} : device_options[device];
    results[device] = RunOnDevice(*module.entry_computation(), arguments[device], options, place);
    if (!results[device].ok()) {
      std::lock_guard<std::mutex> lock(order_mutex);
      failure_order.push_back(device);
    }
    rendezvous.Finish(device, results[device].status());
  };
  std::vector<std::thread> threads;
  for (int64_t device = 1; device < devices; ++device) threads.emplace_back(run, device);
  run(0);
  for (std::thread& thread : threads) thread.join();
  if (!failure_order.empty()) {
    const int64_t first = failure_order.front();
    const Status& status = results[first].status();
    return Status(status.code(), "device " + std::to_string(first) + ": " + status.message());
  }
  std::vector<std::vector<Literal>> outputs(static_cast<size_t>(devices));
  for (int64_t device = 0; device < devices; ++device) Flatten(std::move(results[device]).value(), &outputs[device]);
  return outputs;
}

}  // namespace tpu::hlo
