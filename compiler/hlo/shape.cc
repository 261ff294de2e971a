#include "compiler/hlo/shape.h"

#include <limits>

namespace tpu::hlo {

namespace {
struct TypeInfo {
  PrimitiveType type;
  const char* name;
  int64_t byte_size;
};
constexpr TypeInfo kTypes[] = {
    {PrimitiveType::PRED, "pred", 1}, {PrimitiveType::S8, "s8", 1},     {PrimitiveType::S16, "s16", 2},
    {PrimitiveType::S32, "s32", 4},   {PrimitiveType::S64, "s64", 8},   {PrimitiveType::U8, "u8", 1},
    {PrimitiveType::U16, "u16", 2},   {PrimitiveType::U32, "u32", 4},   {PrimitiveType::U64, "u64", 8},
    {PrimitiveType::F16, "f16", 2},   {PrimitiveType::BF16, "bf16", 2}, {PrimitiveType::F32, "f32", 4},
    {PrimitiveType::F64, "f64", 8},   {PrimitiveType::TUPLE, "tuple", 0}, {PrimitiveType::TOKEN, "token", 0},
    // Unsupported: sizes as XLA stores them unpacked (sub-byte types take a byte each).
    {PrimitiveType::S1, "s1", 1},               {PrimitiveType::S2, "s2", 1},
    {PrimitiveType::S4, "s4", 1},               {PrimitiveType::U1, "u1", 1},
    {PrimitiveType::U2, "u2", 1},               {PrimitiveType::U4, "u4", 1},
    {PrimitiveType::F8E5M2, "f8e5m2", 1},       {PrimitiveType::F8E4M3, "f8e4m3", 1},
    {PrimitiveType::F8E4M3FN, "f8e4m3fn", 1},   {PrimitiveType::F8E4M3B11FNUZ, "f8e4m3b11fnuz", 1},
    {PrimitiveType::F8E5M2FNUZ, "f8e5m2fnuz", 1}, {PrimitiveType::F8E4M3FNUZ, "f8e4m3fnuz", 1},
    {PrimitiveType::F8E3M4, "f8e3m4", 1},       {PrimitiveType::F4E2M1FN, "f4e2m1fn", 1},
    {PrimitiveType::F8E8M0FNU, "f8e8m0fnu", 1}, {PrimitiveType::C64, "c64", 8},
    {PrimitiveType::C128, "c128", 16},          {PrimitiveType::OPAQUE, "opaque", 0},
};
// kTypes is indexed by the enum value.
static_assert(sizeof(kTypes) / sizeof(kTypes[0]) == static_cast<size_t>(PrimitiveType::OPAQUE) + 1);

void AppendInts(std::string* out, const std::vector<int64_t>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) *out += ',';
    *out += std::to_string(values[i]);
  }
}
}  // namespace

const char* PrimitiveTypeName(PrimitiveType type) { return kTypes[static_cast<int>(type)].name; }

bool PrimitiveTypeFromName(std::string_view name, PrimitiveType* type) {
  for (const TypeInfo& info : kTypes) {
    if (info.type != PrimitiveType::TUPLE && name == info.name) {
      *type = info.type;
      return true;
    }
  }
  return false;
}

int64_t PrimitiveTypeByteSize(PrimitiveType type) { return kTypes[static_cast<int>(type)].byte_size; }

bool IsSupportedPrimitiveType(PrimitiveType type) {
  return static_cast<int>(type) <= static_cast<int>(PrimitiveType::TOKEN);
}

bool IsFloatingPointType(PrimitiveType t) {
  return t == PrimitiveType::F16 || t == PrimitiveType::BF16 || t == PrimitiveType::F32 || t == PrimitiveType::F64;
}
bool IsSignedIntegralType(PrimitiveType t) {
  return t == PrimitiveType::S8 || t == PrimitiveType::S16 || t == PrimitiveType::S32 || t == PrimitiveType::S64;
}
bool IsUnsignedIntegralType(PrimitiveType t) {
  return t == PrimitiveType::U8 || t == PrimitiveType::U16 || t == PrimitiveType::U32 || t == PrimitiveType::U64;
}
bool IsIntegralType(PrimitiveType t) { return IsSignedIntegralType(t) || IsUnsignedIntegralType(t); }
bool IsArrayType(PrimitiveType t) {
  return t != PrimitiveType::TUPLE && t != PrimitiveType::TOKEN && t != PrimitiveType::OPAQUE;
}

bool Shape::is_dynamic_dimension(int dimension) const {
  return dimension < static_cast<int>(dynamic_dimensions.size()) && dynamic_dimensions[dimension];
}

bool Shape::IsStatic() const {
  if (IsTuple()) {
    for (const Shape& element : tuple_shapes)
      if (!element.IsStatic()) return false;
    return true;
  }
  for (size_t d = 0; d < dimensions.size(); ++d)
    if (is_dynamic_dimension(static_cast<int>(d)) || dimensions[d] < 0) return false;
  return true;
}

namespace {
constexpr int64_t kMaxSize = std::numeric_limits<int64_t>::max();

// a * b for non-negative values, kMaxSize when the product does not fit.
int64_t SaturatingMultiply(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kMaxSize / b ? kMaxSize : a * b;
}
}  // namespace

int64_t Shape::ElementCount() const {
  if (!IsArray()) return 0;
  int64_t count = 1;
  for (int64_t d : dimensions) count = SaturatingMultiply(count, d < 0 ? 0 : d);
  return count;
}

int64_t Shape::ByteSize() const { return SaturatingMultiply(ElementCount(), PrimitiveTypeByteSize(element_type)); }

std::string Shape::ToString(bool print_layout) const {
  std::string out;
  if (IsTuple()) {
    out += '(';
    for (size_t i = 0; i < tuple_shapes.size(); ++i) {
      if (i) out += ", ";
      if (i > 0 && i % 5 == 0) out += "/*index=" + std::to_string(i) + "*/";
      out += tuple_shapes[i].ToString(print_layout);
    }
    out += ')';
    return out;
  }
  out += PrimitiveTypeName(element_type);
  out += '[';
  for (size_t d = 0; d < dimensions.size(); ++d) {
    if (d) out += ',';
    if (dimensions[d] == kUnboundedDimension) {
      out += '?';
    } else {
      if (is_dynamic_dimension(static_cast<int>(d))) out += "<=";
      out += std::to_string(dimensions[d]);
    }
  }
  out += ']';
  if (print_layout && !dimensions.empty() && has_layout()) {
    out += '{';
    AppendInts(&out, minor_to_major);
    if (!layout_tiling.empty()) {
      out += ':';
      out += layout_tiling;
    }
    out += '}';
  }
  return out;
}

bool Shape::operator==(const Shape& other) const {
  if (element_type != other.element_type) return false;
  if (IsTuple()) return tuple_shapes == other.tuple_shapes;
  if (dimensions != other.dimensions) return false;
  for (size_t d = 0; d < dimensions.size(); ++d)
    if (is_dynamic_dimension(static_cast<int>(d)) != other.is_dynamic_dimension(static_cast<int>(d))) return false;
  return true;
}

bool Shape::EqualsIncludingLayout(const Shape& other) const {
  if (!(*this == other)) return false;
  if (IsTuple()) {
    for (size_t i = 0; i < tuple_shapes.size(); ++i)
      if (!tuple_shapes[i].EqualsIncludingLayout(other.tuple_shapes[i])) return false;
    return true;
  }
  return minor_to_major == other.minor_to_major && layout_tiling == other.layout_tiling;
}

Shape Shape::Make(PrimitiveType type, std::vector<int64_t> dims) {
  Shape shape;
  shape.element_type = type;
  shape.dimensions = std::move(dims);
  return shape;
}

Shape Shape::MakeWithDefaultLayout(PrimitiveType type, std::vector<int64_t> dims) {
  Shape shape = Make(type, std::move(dims));
  shape.minor_to_major = DefaultMinorToMajor(shape.rank());
  return shape;
}

Shape Shape::MakeTuple(std::vector<Shape> elements) {
  Shape shape;
  shape.element_type = PrimitiveType::TUPLE;
  shape.tuple_shapes = std::move(elements);
  return shape;
}

Shape Shape::MakeToken() {
  Shape shape;
  shape.element_type = PrimitiveType::TOKEN;
  return shape;
}

std::vector<int64_t> DefaultMinorToMajor(int rank) {
  std::vector<int64_t> order(rank);
  for (int i = 0; i < rank; ++i) order[i] = rank - 1 - i;
  return order;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dimensions) {
  std::vector<int64_t> strides(dimensions.size(), 1);
  for (int i = static_cast<int>(dimensions.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * dimensions[i + 1];
  return strides;
}

}  // namespace tpu::hlo
