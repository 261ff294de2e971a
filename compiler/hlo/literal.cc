#include "compiler/hlo/literal.h"

#include <cassert>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tpu::hlo {

float Bfloat16ToFloat(bfloat16 value) {
  uint32_t bits = static_cast<uint32_t>(value.bits) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
}

bfloat16 FloatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  bfloat16 result;
  if (std::isnan(value)) {
    result.bits = static_cast<uint16_t>((bits >> 16) | 0x0040);  // keep sign, force quiet
    return result;
  }
  uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);  // round to nearest, ties to even
  result.bits = static_cast<uint16_t>((bits + rounding) >> 16);
  return result;
}

float HalfToFloat(half value) {
  uint32_t sign = (value.bits >> 15) & 1;
  int32_t exponent = (value.bits >> 10) & 0x1F;
  uint32_t mantissa = value.bits & 0x3FF;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  }
  return sign ? -magnitude : magnitude;
}

half FloatToHalf(float value) {
  half result;
  uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  float magnitude = std::fabs(value);
  if (std::isnan(value)) {
    result.bits = sign | 0x7E00;
    return result;
  }
  if (magnitude >= 65520.0f) {  // rounds to infinity
    result.bits = sign | 0x7C00;
    return result;
  }
  if (magnitude < std::ldexp(1.0f, -14)) {  // subnormal: units of 2^-24, nearbyint rounds to even
    result.bits = sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(magnitude, 24)));
    return result;
  }
  int exponent;
  float fraction = std::frexp(magnitude, &exponent);  // magnitude = fraction * 2^exponent, fraction in [0.5,1)
  uint32_t mantissa = static_cast<uint32_t>(std::nearbyint(std::ldexp(fraction, 11)));  // 11 significant bits
  if (mantissa == 2048) {
    mantissa = 1024;
    ++exponent;
  }
  result.bits = sign | static_cast<uint16_t>(((exponent + 14) << 10) | (mantissa & 0x3FF));
  return result;
}

Literal::Literal() : Literal(Shape::Make(PrimitiveType::F32, {})) {}

Literal::Literal(const Shape& shape) : shape_(shape) {
  if (shape.IsTuple()) {
    for (const Shape& element : shape.tuple_shapes) elements_.emplace_back(element);
  } else if (shape.IsArray()) {
    bytes_.assign(static_cast<size_t>(shape.ByteSize()), 0);
  }
}

Literal::Literal(const Shape& shape, const std::vector<float>& values) : Literal(shape) {
  assert(static_cast<int64_t>(values.size()) == shape.ElementCount());
  int64_t count = std::min<int64_t>(static_cast<int64_t>(values.size()), shape.ElementCount());
  for (int64_t i = 0; i < count; ++i) SetFromDouble(i, values[i]);
}

Literal Literal::MakeTuple(std::vector<Literal> elements) {
  std::vector<Shape> shapes;
  for (const Literal& element : elements) shapes.push_back(element.shape());
  Literal tuple;
  tuple.shape_ = Shape::MakeTuple(std::move(shapes));
  tuple.bytes_.clear();
  tuple.elements_ = std::move(elements);
  return tuple;
}

Literal Literal::Random(const Shape& shape, std::mt19937& rng) {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& element : shape.tuple_shapes) elements.push_back(Random(element, rng));
    return MakeTuple(std::move(elements));
  }
  Literal literal(shape);
  if (!shape.IsArray()) return literal;
  PrimitiveType type = shape.element_type;
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  for (int64_t i = 0; i < literal.element_count(); ++i) {
    double value;
    if (IsFloatingPointType(type)) {
      value = real(rng);
    } else if (IsSignedIntegralType(type)) {
      value = static_cast<double>(static_cast<int>(rng() % 16) - 8);
    } else if (IsUnsignedIntegralType(type)) {
      value = static_cast<double>(rng() % 16);
    } else {
      value = static_cast<double>(rng() & 1);
    }
    literal.SetFromDouble(i, value);
  }
  return literal;
}

void Literal::CheckType(PrimitiveType type) const {
  (void)type;
  assert(shape_.element_type == type);
}

double Literal::GetAsDouble(int64_t i) const {
  return PrimitiveTypeSwitch(
      shape_.element_type,
      [&](auto tag) -> double {
        using T = decltype(tag);
        T value;
        std::memcpy(&value, bytes_.data() + i * sizeof(T), sizeof(T));
        return ToDouble(value);
      },
      []() -> double { return 0; });
}

void Literal::SetFromDouble(int64_t i, double value) {
  PrimitiveTypeSwitch(
      shape_.element_type,
      [&](auto tag) {
        using T = decltype(tag);
        T converted = FromDouble<T>(value);
        std::memcpy(bytes_.data() + i * sizeof(T), &converted, sizeof(T));
      },
      []() {});
}

std::vector<float> Literal::ToFloatVector() const {
  std::vector<float> values(static_cast<size_t>(element_count()));
  for (int64_t i = 0; i < element_count(); ++i) values[i] = static_cast<float>(GetAsDouble(i));
  return values;
}

Literal Literal::Convert(PrimitiveType type) const {
  if (IsTuple()) {
    std::vector<Literal> elements;
    for (const Literal& element : elements_) elements.push_back(element.Convert(type));
    return MakeTuple(std::move(elements));
  }
  Shape shape = shape_;
  shape.element_type = type;
  Literal result(shape);
  // Integer to integer wraps to the target's width (two's complement), as XLA's convert does; through a
  // double it would saturate, and 64-bit integers do not fit a double exactly.
  bool integer_source = IsIntegralType(shape_.element_type) && IsIntegralType(type);
  for (int64_t i = 0; i < element_count(); ++i) {
    if (integer_source) {
      int64_t value = 0;
      std::memcpy(&value, bytes_.data() + i * PrimitiveTypeByteSize(shape_.element_type),
                  static_cast<size_t>(PrimitiveTypeByteSize(shape_.element_type)));
      if (IsSignedIntegralType(shape_.element_type)) {
        int shift = 64 - 8 * static_cast<int>(PrimitiveTypeByteSize(shape_.element_type));
        value = static_cast<int64_t>(static_cast<uint64_t>(value) << shift) >> shift;  // sign-extend
      }
      std::memcpy(result.bytes_.data() + i * PrimitiveTypeByteSize(type), &value,
                  static_cast<size_t>(PrimitiveTypeByteSize(type)));
    } else {
      result.SetFromDouble(i, GetAsDouble(i));
    }
  }
  return result;
}

namespace {

// Shortest decimal text that reads back as the same value of `type`.
std::string FormatFloating(double value, PrimitiveType type) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
  char buffer[40];
  // Like XLA: six significant digits when that reads back exactly ("200", "0.9"), more when needed.
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    double back = std::strtod(buffer, nullptr);
    bool same;
    switch (type) {
      case PrimitiveType::F64: same = back == value; break;
      case PrimitiveType::F32: same = static_cast<float>(back) == static_cast<float>(value); break;
      case PrimitiveType::BF16: same = FloatToBfloat16(static_cast<float>(back)).bits == FloatToBfloat16(static_cast<float>(value)).bits; break;
      default: same = FloatToHalf(static_cast<float>(back)).bits == FloatToHalf(static_cast<float>(value)).bits; break;
    }
    if (same) break;
  }
  return buffer;
}

std::string FormatElement(const Literal& literal, int64_t i) {
  PrimitiveType type = literal.shape().element_type;
  if (type == PrimitiveType::PRED) return literal.GetAsDouble(i) != 0 ? "true" : "false";
  if (IsFloatingPointType(type)) return FormatFloating(literal.GetAsDouble(i), type);
  if (type == PrimitiveType::S64) return std::to_string(literal.Get<int64_t>(i));
  if (type == PrimitiveType::U64) return std::to_string(literal.Get<uint64_t>(i));
  return std::to_string(static_cast<int64_t>(literal.GetAsDouble(i)));
}

void FormatArray(const Literal& literal, int dimension, int64_t* index, std::string* out) {
  const Shape& shape = literal.shape();
  bool innermost = dimension == shape.rank() - 1;
  *out += innermost ? "{" : "{ ";
  for (int64_t i = 0; i < shape.dimensions[dimension]; ++i) {
    if (i) *out += ", ";
    if (innermost) {
      *out += FormatElement(literal, (*index)++);
    } else {
      FormatArray(literal, dimension + 1, index, out);
    }
  }
  *out += innermost ? "}" : " }";
}

}  // namespace

std::string Literal::ValuesToString() const {
  if (IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (i) out += ", ";
      out += elements_[i].ValuesToString();
    }
    return out + ")";
  }
  if (!shape_.IsArray()) return "";
  if (shape_.rank() == 0) return FormatElement(*this, 0);
  std::string out;
  int64_t index = 0;
  FormatArray(*this, 0, &index, &out);
  return out;
}

std::string Literal::ToString() const { return shape_.ToString() + " " + ValuesToString(); }

bool Literal::operator==(const Literal& other) const {
  return shape_ == other.shape_ && bytes_ == other.bytes_ && elements_ == other.elements_;
}

}  // namespace tpu::hlo
