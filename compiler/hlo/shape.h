// Shapes of HLO values: element type, dimensions, an optional layout, or a tuple of shapes.
// Text form as XLA prints it: `f32[200,32]{1,0}`, `f32[]`, `(f32[2], s32[])`, `f32[?,10]`, `f32[<=8]`,
// `f32[8,128]{1,0:T(8,128)}`, `token[]`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tpu::hlo {

// The types this compiler computes with come first (their values are stored in program files); after
// TOKEN, the other element types XLA knows: they parse, so that the verifier can reject them by name.
enum class PrimitiveType {
  PRED, S8, S16, S32, S64, U8, U16, U32, U64, F16, BF16, F32, F64, TUPLE, TOKEN,
  // Known to XLA, not supported here (IsSupportedPrimitiveType is false).
  S1, S2, S4, U1, U2, U4, F8E5M2, F8E4M3, F8E4M3FN, F8E4M3B11FNUZ, F8E5M2FNUZ, F8E4M3FNUZ, F8E3M4, F4E2M1FN,
  F8E8M0FNU, C64, C128, OPAQUE,
};

// Lower-case name as written in HLO text: "pred", "s32", "bf16", "f32", "tuple", "token", "c64", "opaque".
const char* PrimitiveTypeName(PrimitiveType type);
// Inverse of PrimitiveTypeName; false for an unknown name ("tuple" is not accepted: tuples use parentheses).
bool PrimitiveTypeFromName(std::string_view name, PrimitiveType* type);
// False for the XLA types after TOKEN (complex, 8-bit and 4-bit floats, sub-byte integers, opaque): the
// verifier rejects them, so nothing after it sees them.
bool IsSupportedPrimitiveType(PrimitiveType type);
// Bytes per element of an array of this type (PRED is one byte); 0 for TUPLE and TOKEN.
int64_t PrimitiveTypeByteSize(PrimitiveType type);
bool IsFloatingPointType(PrimitiveType type);   // F16, BF16, F32, F64
bool IsSignedIntegralType(PrimitiveType type);  // S8..S64
bool IsUnsignedIntegralType(PrimitiveType type);  // U8..U64
bool IsIntegralType(PrimitiveType type);  // signed or unsigned integers (not PRED)
bool IsArrayType(PrimitiveType type);  // anything but TUPLE, TOKEN and OPAQUE

// Size written as `?`: unknown at graph construction time.
constexpr int64_t kUnboundedDimension = -1;

struct Shape {
  PrimitiveType element_type = PrimitiveType::F32;
  std::vector<int64_t> dimensions;
  // Empty (all static) or one flag per dimension: true for `?` (size kUnboundedDimension) or `<=N`
  // (size N, the bound).
  std::vector<bool> dynamic_dimensions;
  // Layout, minor-most dimension first, e.g. {1,0} for row-major rank 2. Empty when the text had none.
  std::vector<int64_t> minor_to_major;
  // Everything after ':' inside the layout braces, verbatim, e.g. "T(8,128)" or "T(8,128)(2,1)S(1)".
  std::string layout_tiling;
  std::vector<Shape> tuple_shapes;  // when element_type == TUPLE

  bool IsTuple() const { return element_type == PrimitiveType::TUPLE; }
  bool IsToken() const { return element_type == PrimitiveType::TOKEN; }
  bool IsArray() const { return IsArrayType(element_type); }
  int rank() const { return static_cast<int>(dimensions.size()); }
  bool is_dynamic_dimension(int dimension) const;
  // True when no dimension (recursively for tuples) is dynamic.
  bool IsStatic() const;
  // Product of the dimensions (1 for a scalar); 0 for tuples and tokens. Both saturate at INT64_MAX, which
  // the verifier rejects, instead of overflowing.
  int64_t ElementCount() const;
  // ElementCount() * element size for arrays, 0 otherwise.
  int64_t ByteSize() const;
  bool has_layout() const { return !minor_to_major.empty() || !layout_tiling.empty(); }

  // `f32[2,3]`, with print_layout `f32[2,3]{1,0}` (scalars never print a layout, as XLA does).
  std::string ToString(bool print_layout = false) const;

  // Equality of element types, dimensions, dynamic flags and tuple elements, ignoring the layout.
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }
  // Equality including minor_to_major and tiling.
  bool EqualsIncludingLayout(const Shape& other) const;

  static Shape Make(PrimitiveType type, std::vector<int64_t> dimensions);
  // A shape with the default row-major layout {rank-1, ..., 0}.
  static Shape MakeWithDefaultLayout(PrimitiveType type, std::vector<int64_t> dimensions);
  static Shape MakeTuple(std::vector<Shape> elements);
  static Shape MakeToken();
};

// {rank-1, ..., 1, 0}: dimension 0 major.
std::vector<int64_t> DefaultMinorToMajor(int rank);

// Row-major strides in elements for `dimensions` (the last dimension has stride 1).
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dimensions);

}  // namespace tpu::hlo
