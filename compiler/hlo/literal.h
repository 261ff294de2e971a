// Literal: a host-side value of an HLO shape. Arrays are stored densely in row-major order (dimension 0
// major) whatever the shape's layout says; tuples hold one Literal per element.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/hlo/shape.h"

namespace tpu::hlo {

// 16-bit float storage types. Conversions to float are exact; from float round to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
};
struct half {
  uint16_t bits = 0;
};
float Bfloat16ToFloat(bfloat16 value);
bfloat16 FloatToBfloat16(float value);  // NaN stays NaN (quiet), overflow gives inf
float HalfToFloat(half value);
half FloatToHalf(float value);

// The C++ storage type of each element type: PRED -> bool, S32 -> int32_t, F32 -> float, BF16 -> bfloat16 ...
template <typename T> struct NativeToPrimitive;
template <> struct NativeToPrimitive<bool> { static constexpr PrimitiveType value = PrimitiveType::PRED; };
template <> struct NativeToPrimitive<int8_t> { static constexpr PrimitiveType value = PrimitiveType::S8; };
template <> struct NativeToPrimitive<int16_t> { static constexpr PrimitiveType value = PrimitiveType::S16; };
template <> struct NativeToPrimitive<int32_t> { static constexpr PrimitiveType value = PrimitiveType::S32; };
template <> struct NativeToPrimitive<int64_t> { static constexpr PrimitiveType value = PrimitiveType::S64; };
template <> struct NativeToPrimitive<uint8_t> { static constexpr PrimitiveType value = PrimitiveType::U8; };
template <> struct NativeToPrimitive<uint16_t> { static constexpr PrimitiveType value = PrimitiveType::U16; };
template <> struct NativeToPrimitive<uint32_t> { static constexpr PrimitiveType value = PrimitiveType::U32; };
template <> struct NativeToPrimitive<uint64_t> { static constexpr PrimitiveType value = PrimitiveType::U64; };
template <> struct NativeToPrimitive<half> { static constexpr PrimitiveType value = PrimitiveType::F16; };
template <> struct NativeToPrimitive<bfloat16> { static constexpr PrimitiveType value = PrimitiveType::BF16; };
template <> struct NativeToPrimitive<float> { static constexpr PrimitiveType value = PrimitiveType::F32; };
template <> struct NativeToPrimitive<double> { static constexpr PrimitiveType value = PrimitiveType::F64; };

// Calls `f(T())` with T the storage type of an array element type; `f(int())` is never called for
// TUPLE/TOKEN: `on_other()` is.
template <typename F, typename G>
decltype(auto) PrimitiveTypeSwitch(PrimitiveType type, F&& f, G&& on_other) {
  switch (type) {
    case PrimitiveType::PRED: return f(bool());
    case PrimitiveType::S8: return f(int8_t());
    case PrimitiveType::S16: return f(int16_t());
    case PrimitiveType::S32: return f(int32_t());
    case PrimitiveType::S64: return f(int64_t());
    case PrimitiveType::U8: return f(uint8_t());
    case PrimitiveType::U16: return f(uint16_t());
    case PrimitiveType::U32: return f(uint32_t());
    case PrimitiveType::U64: return f(uint64_t());
    case PrimitiveType::F16: return f(half());
    case PrimitiveType::BF16: return f(bfloat16());
    case PrimitiveType::F32: return f(float());
    case PrimitiveType::F64: return f(double());
    default: return on_other();
  }
}

// Conversions between storage types and double (16-bit floats go through float).
template <typename T>
inline double ToDouble(T value) { return static_cast<double>(value); }
template <> inline double ToDouble<bfloat16>(bfloat16 value) { return Bfloat16ToFloat(value); }
template <> inline double ToDouble<half>(half value) { return HalfToFloat(value); }
// Float to integer conversion saturates and maps NaN to 0, as XLA's convert does.
template <typename T>
inline T FromDouble(double value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (value != value) return 0;
    if (value <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(value);
  } else {
    return static_cast<T>(value);
  }
}
template <> inline bfloat16 FromDouble<bfloat16>(double value) { return FloatToBfloat16(static_cast<float>(value)); }
template <> inline half FromDouble<half>(double value) { return FloatToHalf(static_cast<float>(value)); }

class Literal {
 public:
  // An f32[] zero.
  Literal();
  // Zero-filled value of `shape` (tuples get zero-filled elements). Dynamic dimensions are not allowed.
  explicit Literal(const Shape& shape);
  // `values` (row-major, one per element) converted to the shape's element type; the count must match.
  Literal(const Shape& shape, const std::vector<float>& values);

  template <typename T>
  static Literal CreateR0(T value) {
    Literal literal(Shape::Make(NativeToPrimitive<T>::value, {}));
    literal.data<T>()[0] = value;
    return literal;
  }
  template <typename T>
  static Literal CreateR1(const std::vector<T>& values) {
    Literal literal(Shape::Make(NativeToPrimitive<T>::value, {static_cast<int64_t>(values.size())}));
    for (size_t i = 0; i < values.size(); ++i) literal.data<T>()[i] = values[i];
    return literal;
  }
  // Rows must all have the same length.
  template <typename T>
  static Literal CreateR2(const std::vector<std::vector<T>>& rows) {
    int64_t columns = rows.empty() ? 0 : static_cast<int64_t>(rows[0].size());
    Literal literal(Shape::Make(NativeToPrimitive<T>::value, {static_cast<int64_t>(rows.size()), columns}));
    int64_t index = 0;
    for (const auto& row : rows)
      for (int64_t c = 0; c < columns; ++c) literal.data<T>()[index++] = c < (int64_t)row.size() ? row[c] : T();
    return literal;
  }
  static Literal MakeTuple(std::vector<Literal> elements);
  // Seeded test data: floats uniform in [-1, 1), signed ints in [-8, 8), unsigned in [0, 16), PRED fair.
  static Literal Random(const Shape& shape, std::mt19937& rng);

  const Shape& shape() const { return shape_; }
  bool IsTuple() const { return shape_.IsTuple(); }
  int64_t element_count() const { return shape_.ElementCount(); }

  // Tuple elements (empty for arrays).
  const std::vector<Literal>& tuple_elements() const { return elements_; }
  std::vector<Literal>& tuple_elements() { return elements_; }

  // Raw row-major bytes of an array.
  const uint8_t* untyped_data() const { return bytes_.data(); }
  uint8_t* untyped_data() { return bytes_.data(); }
  int64_t size_bytes() const { return static_cast<int64_t>(bytes_.size()); }

  // Typed access; T must be the storage type of the element type (checked in debug builds).
  template <typename T>
  T* data() {
    CheckType(NativeToPrimitive<T>::value);
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <typename T>
  const T* data() const {
    CheckType(NativeToPrimitive<T>::value);
    return reinterpret_cast<const T*>(bytes_.data());
  }
  template <typename T>
  T Get(int64_t linear_index) const { return data<T>()[linear_index]; }
  template <typename T>
  void Set(int64_t linear_index, T value) { data<T>()[linear_index] = value; }

  // Element as a double / set from a double (converted, saturating nothing) for any array element type.
  double GetAsDouble(int64_t linear_index) const;
  void SetFromDouble(int64_t linear_index, double value);
  // All elements converted to float, row-major.
  std::vector<float> ToFloatVector() const;

  // The same values converted to another element type (as HLO `convert` does).
  Literal Convert(PrimitiveType type) const;

  // HLO text of the values as in `constant(...)`: `1.5`, `{1, 2}`, `{ {1, 2}, {3, 4} }`, `(1, {2})`.
  std::string ValuesToString() const;
  // `f32[2] {1, 2}`.
  std::string ToString() const;

  // Same shape (ignoring layout) and identical bytes.
  bool operator==(const Literal& other) const;
  bool operator!=(const Literal& other) const { return !(*this == other); }

 private:
  void CheckType(PrimitiveType type) const;

  Shape shape_;
  std::vector<uint8_t> bytes_;
  std::vector<Literal> elements_;
};

}  // namespace tpu::hlo
