#include "compiler/hlo/parser.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unordered_map>

#include "compiler/hlo/verifier.h"

namespace tpu::hlo {

namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

// Recursive-descent parser over the raw text; positions are byte offsets turned into line:column only when
// an error is reported.
class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  StatusOr<std::unique_ptr<HloModule>> ParseModule();
  StatusOr<Shape> ParseShapeOnly() {
    Shape shape;
    TPU_RETURN_IF_ERROR(ParseShape(&shape));
    SkipSpace();
    if (pos_ != text_.size()) return Error("expected the end of the shape");
    return shape;
  }

 private:
  // An operand or computation name waiting for the end of its scope to be resolved.
  struct PendingOperand {
    HloInstruction* user;
    std::string name;
    size_t position;
    bool typed;
    Shape declared;
  };
  struct PendingCall {
    HloInstruction* user;
    size_t index;  // in called_computation_attributes
    std::string name;
    size_t position;
  };

  Status ErrorAt(size_t position, const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < position && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return InvalidArgument("line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + what);
  }
  Status Error(const std::string& what) const { return ErrorAt(pos_, what); }
  std::string Found() const {
    if (pos_ >= text_.size()) return "the end of the text";
    size_t end = pos_;
    while (end < text_.size() && end - pos_ < 20 && text_[end] != '\n' && (IsNameChar(text_[end]) || end == pos_)) ++end;
    return "'" + std::string(text_.substr(pos_, end - pos_)) + "'";
  }
  Status Expected(const std::string& what) const { return Error("expected " + what + ", found " + Found()); }

  // Skips blanks, newlines and /* comments */ (XLA writes /*index=5*/ inside lists).
  void SkipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
        size_t end = text_.find("*/", pos_ + 2);
        pos_ = end == std::string_view::npos ? text_.size() : end + 2;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }
  bool Peek(char c) {
    SkipSpace();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  bool Consume(char c) {
    if (!Peek(c)) return false;
    ++pos_;
    return true;
  }
  Status Expect(char c, const std::string& what) {
    if (!Consume(c)) return Expected(std::string("'") + c + "' " + what);
    return OkStatus();
  }
  bool ConsumeWord(std::string_view word) {
    SkipSpace();
    if (text_.substr(pos_, word.size()) != word) return false;
    size_t after = pos_ + word.size();
    if (after < text_.size() && IsNameChar(text_[after])) return false;
    pos_ = after;
    return true;
  }
  // A name: letters, digits, '_', '.', '-', optionally after '%'.
  bool ParseName(std::string* name) {
    SkipSpace();
    size_t start = pos_;
    if (pos_ < text_.size() && text_[pos_] == '%') ++pos_;
    size_t name_start = pos_;
    while (pos_ < text_.size() && IsNameChar(text_[pos_])) ++pos_;
    if (pos_ == name_start) {
      pos_ = start;
      return false;
    }
    *name = std::string(text_.substr(name_start, pos_ - name_start));
    return true;
  }
  // A "quoted" string (backslash escapes the next character); the position is at the opening quote.
  Status ParseQuoted(std::string* value, const std::string& what) {
    SkipSpace();
    if (!Peek('"')) return Expected(what);
    const size_t quote = pos_++;
    value->clear();
    // Strings never span lines in XLA's text.
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      *value += text_[pos_++];
    }
    if (pos_ >= text_.size() || text_[pos_] != '"') return ErrorAt(quote, "unterminated string: expected a closing '\"'");
    ++pos_;
    return OkStatus();
  }
  Status ParseInt(int64_t* value) {
    SkipSpace();
    const char* begin = text_.data() + pos_;
    size_t end = pos_;
    if (end < text_.size() && (text_[end] == '-' || text_[end] == '+')) ++end;
    size_t digits = end;
    while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') ++end;
    if (end == digits) return Expected("an integer");
    errno = 0;
    *value = std::strtoll(std::string(begin, end - pos_).c_str(), nullptr, 10);
    if (errno == ERANGE) return Error("integer out of range");
    pos_ = end;
    return OkStatus();
  }
  // {1,2,3}
  Status ParseIntList(std::vector<int64_t>* values) {
    TPU_RETURN_IF_ERROR(Expect('{', "to open a list of integers"));
    values->clear();
    if (Consume('}')) return OkStatus();
    do {
      int64_t value;
      TPU_RETURN_IF_ERROR(ParseInt(&value));
      values->push_back(value);
    } while (Consume(','));
    return Expect('}', "to close the list of integers");
  }

  Status ParseShape(Shape* shape);
  Status ParseLayout(Shape* shape);
  Status ParseComputation(HloModule* module);
  Status ParseInstruction(HloComputation* computation, std::vector<PendingOperand>* pending_operands,
                          HloInstruction** root, bool* saw_root);
  Status ParseAttribute(HloInstruction* instruction);
  Status ParseLiteral(const Shape& shape, HloInstruction* instruction);
  Status ParseLiteralElements(const Shape& shape, int dimension, Literal* literal, int64_t* index);
  Status ParseLiteralScalar(PrimitiveType type, Literal* literal, int64_t index);
  Status ParseWindow(Window* window);
  Status ParseDimLabels(ConvolutionDimensionNumbers* dnums);
  Status ParseRawValue(std::string* value);
  Status ParseInputOutputAlias(HloModule* module);
  Status ParseSourceTables(HloModule* module);

  std::string_view text_;
  size_t pos_ = 0;
  std::vector<PendingCall> pending_calls_;
};

Status Parser::ParseShape(Shape* shape) {
  SkipSpace();
  if (Consume('(')) {
    *shape = Shape::MakeTuple({});
    if (Consume(')')) return OkStatus();
    do {
      Shape element;
      TPU_RETURN_IF_ERROR(ParseShape(&element));
      shape->tuple_shapes.push_back(std::move(element));
    } while (Consume(','));
    return Expect(')', "to close the tuple shape");
  }
  size_t start = pos_;
  while (pos_ < text_.size() && ((text_[pos_] >= 'a' && text_[pos_] <= 'z') || (text_[pos_] >= '0' && text_[pos_] <= '9')))
    ++pos_;
  std::string_view type_name = text_.substr(start, pos_ - start);
  if (type_name.empty()) {
    pos_ = start;
    return Expected("a shape such as f32[2,3]");
  }
  *shape = Shape();
  if (!PrimitiveTypeFromName(type_name, &shape->element_type)) {
    pos_ = start;
    return Error("unknown element type '" + std::string(type_name) + "'; expected pred, s8..s64, u8..u64, f16, bf16, f32, f64 or token");
  }
  if (pos_ >= text_.size() || text_[pos_] != '[') return Expected("'[' after the element type");
  ++pos_;
  if (!Consume(']')) {
    do {
      SkipSpace();
      bool dynamic = false;
      int64_t size;
      if (Consume('?')) {
        dynamic = true;
        size = kUnboundedDimension;
      } else {
        if (text_.substr(pos_, 2) == "<=") {
          pos_ += 2;
          dynamic = true;
        }
        if (pos_ >= text_.size() || !(text_[pos_] >= '0' && text_[pos_] <= '9')) {
          SkipSpace();
          if (pos_ >= text_.size() || !(text_[pos_] >= '0' && text_[pos_] <= '9'))
            return Expected("a dimension size (a non-negative integer, '?' or '<=N')");
        }
        TPU_RETURN_IF_ERROR(ParseInt(&size));
      }
      shape->dimensions.push_back(size);
      if (dynamic) {
        shape->dynamic_dimensions.resize(shape->dimensions.size(), false);
        shape->dynamic_dimensions.back() = true;
      }
    } while (Consume(','));
    TPU_RETURN_IF_ERROR(Expect(']', "to close the dimensions"));
  }
  if (!shape->dynamic_dimensions.empty()) shape->dynamic_dimensions.resize(shape->dimensions.size(), false);
  // A layout follows directly (no space) in XLA's text; `{` after a space would be something else.
  if (pos_ < text_.size() && text_[pos_] == '{') TPU_RETURN_IF_ERROR(ParseLayout(shape));
  return OkStatus();
}

Status Parser::ParseLayout(Shape* shape) {
  ++pos_;  // '{'
  SkipSpace();
  if (!Peek('}') && !Peek(':')) {
    do {
      int64_t dimension;
      TPU_RETURN_IF_ERROR(ParseInt(&dimension));
      if (dimension < 0 || dimension >= shape->rank())
        return ErrorAt(pos_ - 1, "layout dimension " + std::to_string(dimension) + " out of range for rank " +
                                     std::to_string(shape->rank()));
      shape->minor_to_major.push_back(dimension);
    } while (Consume(','));
  }
  if (Consume(':')) {
    size_t start = pos_;
    int depth = 0;
    while (pos_ < text_.size() && (depth > 0 || text_[pos_] != '}')) {
      if (text_[pos_] == '(') ++depth;
      if (text_[pos_] == ')') --depth;
      if (text_[pos_] == '\n') return Expected("'}' to close the layout");
      ++pos_;
    }
    shape->layout_tiling = std::string(text_.substr(start, pos_ - start));
  }
  TPU_RETURN_IF_ERROR(Expect('}', "to close the layout"));
  if (!shape->minor_to_major.empty() && static_cast<int>(shape->minor_to_major.size()) != shape->rank())
    return ErrorAt(pos_ - 1, "expected a layout with " + std::to_string(shape->rank()) + " dimensions");
  return OkStatus();
}

// A value kept verbatim: up to the next ',' or newline outside brackets and quotes.
Status Parser::ParseRawValue(std::string* value) {
  SkipSpace();
  size_t start = pos_;
  std::vector<char> closers;
  size_t open_position = pos_;
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == '"') {
      size_t quote = pos_++;
      while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n') {
        if (text_[pos_] == '\\') ++pos_;
        ++pos_;
      }
      if (pos_ >= text_.size() || text_[pos_] != '"') return ErrorAt(quote, "unterminated string: expected a closing '\"'");
      ++pos_;
      continue;
    }
    // Values never span lines in XLA's text, so a newline ends the value (or reports it unterminated).
    if (c == '\n' || (closers.empty() && (c == ',' || c == ')' || c == '}'))) break;
    if (c == '{' || c == '[' || c == '(') {
      if (closers.empty()) open_position = pos_;
      closers.push_back(c == '{' ? '}' : c == '[' ? ']' : ')');
    } else if (c == '}' || c == ']' || c == ')') {
      if (closers.empty()) return Error(std::string("unexpected '") + c + "' in an attribute value");
      if (closers.back() != c) return Error(std::string("expected '") + closers.back() + "', found '" + c + "'");
      closers.pop_back();
    }
    ++pos_;
  }
  if (!closers.empty())
    return ErrorAt(open_position, std::string("unterminated attribute value: expected a matching '") + closers.back() + "'");
  size_t end = pos_;
  while (end > start && (text_[end - 1] == ' ' || text_[end - 1] == '\r' || text_[end - 1] == '\t')) --end;
  if (end == start) return Expected("an attribute value");
  *value = std::string(text_.substr(start, end - start));
  return OkStatus();
}

Status Parser::ParseWindow(Window* window) {
  TPU_RETURN_IF_ERROR(Expect('{', "to open the window"));
  window->dimensions.clear();
  bool have_size = false;
  while (!Consume('}')) {
    std::string key;
    size_t key_position = pos_;
    if (!ParseName(&key)) return Expected("a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal) or '}'");
    TPU_RETURN_IF_ERROR(Expect('=', "after the window field name"));
    // Fields are lists separated by 'x'; pad entries are low_high.
    std::vector<std::pair<int64_t, int64_t>> entries;
    do {
      int64_t first, second = 0;
      TPU_RETURN_IF_ERROR(ParseInt(&first));
      if (key == "pad") {
        if (pos_ >= text_.size() || text_[pos_] != '_') return Expected("'_' between low and high padding");
        ++pos_;
        TPU_RETURN_IF_ERROR(ParseInt(&second));
      }
      entries.emplace_back(first, second);
    } while (pos_ < text_.size() && text_[pos_] == 'x' && ++pos_);
    if (key == "size") {
      window->dimensions.resize(entries.size());
      have_size = true;
    } else if (!have_size) {
      return ErrorAt(key_position, "expected 'size=' first in the window");
    }
    if (entries.size() != window->dimensions.size())
      return ErrorAt(key_position, "expected " + std::to_string(window->dimensions.size()) + " entries in window " + key);
    for (size_t i = 0; i < entries.size(); ++i) {
      WindowDimension& d = window->dimensions[i];
      if (key == "size") d.size = entries[i].first;
      else if (key == "stride") d.stride = entries[i].first;
      else if (key == "pad") { d.padding_low = entries[i].first; d.padding_high = entries[i].second; }
      else if (key == "lhs_dilate") d.base_dilation = entries[i].first;
      else if (key == "rhs_dilate") d.window_dilation = entries[i].first;
      else if (key == "rhs_reversal") d.window_reversal = entries[i].first != 0;
      else return ErrorAt(key_position, "unknown window field '" + key + "'");
    }
  }
  return OkStatus();
}

Status Parser::ParseDimLabels(ConvolutionDimensionNumbers* d) {
  SkipSpace();
  size_t start = pos_;
  while (pos_ < text_.size() && (IsNameChar(text_[pos_]) || text_[pos_] == '>')) ++pos_;
  std::string_view labels = text_.substr(start, pos_ - start);
  size_t underscore = labels.find('_');
  size_t arrow = labels.find("->");
  if (underscore == std::string_view::npos || arrow == std::string_view::npos || arrow < underscore) {
    pos_ = start;
    return Expected("dim_labels like b01f_01io->b01f");
  }
  std::string_view input = labels.substr(0, underscore);
  std::string_view kernel = labels.substr(underscore + 1, arrow - underscore - 1);
  std::string_view output = labels.substr(arrow + 2);
  if (input.size() != kernel.size() || input.size() != output.size() || input.size() < 2) {
    pos_ = start;
    return Error("expected dim_labels of equal ranks for input, kernel and output");
  }
  size_t spatial = input.size() - 2;
  auto assign = [&](std::string_view part, char a, int64_t* a_dim, char b, int64_t* b_dim,
                    std::vector<int64_t>* spatial_dims) -> bool {
    *a_dim = -1;
    *b_dim = -1;
    spatial_dims->assign(spatial, -1);
    for (size_t i = 0; i < part.size(); ++i) {
      char c = part[i];
      if (c == a) *a_dim = static_cast<int64_t>(i);
      else if (c == b) *b_dim = static_cast<int64_t>(i);
      else if (c >= '0' && c <= '9' && static_cast<size_t>(c - '0') < spatial) (*spatial_dims)[c - '0'] = static_cast<int64_t>(i);
      else return false;
    }
    if (*a_dim < 0 || *b_dim < 0) return false;
    for (int64_t s : *spatial_dims)
      if (s < 0) return false;
    return true;
  };
  if (!assign(input, 'b', &d->input_batch_dimension, 'f', &d->input_feature_dimension, &d->input_spatial_dimensions) ||
      !assign(kernel, 'i', &d->kernel_input_feature_dimension, 'o', &d->kernel_output_feature_dimension,
              &d->kernel_spatial_dimensions) ||
      !assign(output, 'b', &d->output_batch_dimension, 'f', &d->output_feature_dimension, &d->output_spatial_dimensions)) {
    pos_ = start;
    return Error("malformed dim_labels '" + std::string(labels) + "'");
  }
  return OkStatus();
}

Status Parser::ParseLiteralScalar(PrimitiveType type, Literal* literal, int64_t index) {
  SkipSpace();
  size_t start = pos_;
  while (pos_ < text_.size() && (IsNameChar(text_[pos_]) || text_[pos_] == '+')) ++pos_;
  std::string token(text_.substr(start, pos_ - start));
  if (token.empty()) return Expected("a number");
  auto bad = [&]() {
    pos_ = start;
    return Error(std::string("expected a ") + PrimitiveTypeName(type) + " value, found '" + token + "'");
  };
  if (type == PrimitiveType::PRED) {
    if (token == "true" || token == "1") literal->SetFromDouble(index, 1);
    else if (token == "false" || token == "0") literal->SetFromDouble(index, 0);
    else return bad();
    return OkStatus();
  }
  char* end = nullptr;
  errno = 0;
  if (IsFloatingPointType(type)) {
    double value = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size()) return bad();
    literal->SetFromDouble(index, value);
    return OkStatus();
  }
  if (type == PrimitiveType::U64) {
    uint64_t value = std::strtoull(token.c_str(), &end, 10);
    if (end != token.c_str() + token.size() || errno == ERANGE) return bad();
    literal->data<uint64_t>()[index] = value;
    return OkStatus();
  }
  int64_t value = std::strtoll(token.c_str(), &end, 10);
  if (end != token.c_str() + token.size() || errno == ERANGE) return bad();
  if (type == PrimitiveType::S64) literal->data<int64_t>()[index] = value;
  else literal->SetFromDouble(index, static_cast<double>(value));
  return OkStatus();
}

Status Parser::ParseLiteralElements(const Shape& shape, int dimension, Literal* literal, int64_t* index) {
  if (dimension == shape.rank()) return ParseLiteralScalar(shape.element_type, literal, (*index)++);
  size_t open = pos_;
  TPU_RETURN_IF_ERROR(Expect('{', "to open the literal's dimension " + std::to_string(dimension)));
  int64_t count = 0;
  if (!Peek('}')) {
    do {
      if (count == shape.dimensions[dimension])
        return Error("expected " + std::to_string(shape.dimensions[dimension]) + " elements in dimension " +
                     std::to_string(dimension) + " of the literal, found more");
      TPU_RETURN_IF_ERROR(ParseLiteralElements(shape, dimension + 1, literal, index));
      ++count;
    } while (Consume(','));
  }
  if (!Consume('}')) {
    if (pos_ >= text_.size()) return ErrorAt(open, "unterminated literal: expected '}'");
    return Expected("'}' to close the literal's dimension " + std::to_string(dimension));
  }
  if (count != shape.dimensions[dimension])
    return ErrorAt(open, "expected " + std::to_string(shape.dimensions[dimension]) + " elements in dimension " +
                             std::to_string(dimension) + " of the literal, found " + std::to_string(count));
  return OkStatus();
}

Status Parser::ParseLiteral(const Shape& shape, HloInstruction* instruction) {
  SkipSpace();
  if (text_.substr(pos_, 5) == "{...}") {
    pos_ += 5;
    instruction->set_literal_elided();
    return OkStatus();
  }
  if (!IsSupportedPrimitiveType(shape.element_type)) {
    // Kept as text: the verifier rejects the element type by name (c64 values are pairs, and so on).
    std::string ignored;
    TPU_RETURN_IF_ERROR(ParseRawValue(&ignored));
    instruction->set_literal_elided();
    return OkStatus();
  }
  if (!shape.IsArray()) return Error("only array constants are supported; expected an array shape");
  if (!shape.IsStatic()) return Error("a constant needs a static shape");
  // Each element takes at least one character, so a bigger count cannot be right (and must not be allocated).
  if (shape.ElementCount() > static_cast<int64_t>(text_.size() - pos_))
    return Error("expected " + std::to_string(shape.ElementCount()) + " literal values, more than the text holds");
  Literal literal(shape);
  int64_t index = 0;
  if (shape.rank() == 0 && Peek('{')) {
    // XLA accepts {x} for a scalar too.
    ++pos_;
    TPU_RETURN_IF_ERROR(ParseLiteralScalar(shape.element_type, &literal, 0));
    TPU_RETURN_IF_ERROR(Expect('}', "to close the scalar literal"));
  } else {
    TPU_RETURN_IF_ERROR(ParseLiteralElements(shape, 0, &literal, &index));
  }
  instruction->set_literal(std::move(literal));
  return OkStatus();
}

Status Parser::ParseAttribute(HloInstruction* instruction) {
  std::string key;
  size_t key_position = pos_;
  SkipSpace();
  key_position = pos_;
  if (!ParseName(&key)) return Expected("an attribute name");
  TPU_RETURN_IF_ERROR(Expect('=', "after attribute name '" + key + "'"));
  HloOpcode opcode = instruction->opcode();
  if (key == "dimensions") {
    std::vector<int64_t> dims;
    TPU_RETURN_IF_ERROR(ParseIntList(&dims));
    instruction->set_dimensions(std::move(dims));
  } else if (key == "lhs_contracting_dims" || key == "rhs_contracting_dims" || key == "lhs_batch_dims" ||
             key == "rhs_batch_dims") {
    DotDimensionNumbers d = instruction->dot_dimension_numbers();
    std::vector<int64_t>* target = key == "lhs_contracting_dims" ? &d.lhs_contracting_dimensions
                                   : key == "rhs_contracting_dims" ? &d.rhs_contracting_dimensions
                                   : key == "lhs_batch_dims"       ? &d.lhs_batch_dimensions
                                                                   : &d.rhs_batch_dimensions;
    TPU_RETURN_IF_ERROR(ParseIntList(target));
    instruction->set_dot_dimension_numbers(d);
  } else if (key == "direction") {
    std::string value;
    size_t at = pos_;
    if (!ParseName(&value)) return Expected("a comparison direction");
    ComparisonDirection direction;
    if (!ComparisonDirectionFromString(value, &direction))
      return ErrorAt(at, "expected a comparison direction (EQ, NE, GE, GT, LE, LT), found '" + value + "'");
    instruction->set_comparison_direction(direction);
  } else if (key == "type" && opcode == HloOpcode::kCompare) {
    std::string value;
    if (!ParseName(&value)) return Expected("a comparison type");
    instruction->set_comparison_type(value);
  } else if (key == "slice") {
    TPU_RETURN_IF_ERROR(Expect('{', "to open the slice"));
    std::vector<int64_t> starts, limits, strides;
    if (!Peek('}')) {
      do {
        TPU_RETURN_IF_ERROR(Expect('[', "to open a slice dimension [start:limit:stride]"));
        int64_t start, limit, stride = 1;
        TPU_RETURN_IF_ERROR(ParseInt(&start));
        TPU_RETURN_IF_ERROR(Expect(':', "between slice start and limit"));
        TPU_RETURN_IF_ERROR(ParseInt(&limit));
        if (Consume(':')) TPU_RETURN_IF_ERROR(ParseInt(&stride));
        TPU_RETURN_IF_ERROR(Expect(']', "to close the slice dimension"));
        starts.push_back(start);
        limits.push_back(limit);
        strides.push_back(stride);
      } while (Consume(','));
    }
    TPU_RETURN_IF_ERROR(Expect('}', "to close the slice"));
    instruction->set_slice(std::move(starts), std::move(limits), std::move(strides));
  } else if (key == "padding" && opcode == HloOpcode::kPad) {
    PaddingConfig config;
    SkipSpace();
    do {
      PaddingDimension d;
      TPU_RETURN_IF_ERROR(ParseInt(&d.edge_padding_low));
      if (pos_ >= text_.size() || text_[pos_] != '_') return Expected("'_' in the padding low_high[_interior]");
      ++pos_;
      TPU_RETURN_IF_ERROR(ParseInt(&d.edge_padding_high));
      if (pos_ < text_.size() && text_[pos_] == '_') {
        ++pos_;
        TPU_RETURN_IF_ERROR(ParseInt(&d.interior_padding));
      }
      config.dimensions.push_back(d);
    } while (pos_ < text_.size() && text_[pos_] == 'x' && ++pos_);
    instruction->set_padding_config(config);
  } else if (key == "window") {
    Window window;
    TPU_RETURN_IF_ERROR(ParseWindow(&window));
    instruction->set_window(window);
  } else if (key == "dim_labels") {
    ConvolutionDimensionNumbers d;
    TPU_RETURN_IF_ERROR(ParseDimLabels(&d));
    instruction->set_convolution_dimension_numbers(d);
  } else if (key == "feature_group_count" || key == "batch_group_count" || key == "index" ||
             key == "iota_dimension") {
    int64_t value;
    TPU_RETURN_IF_ERROR(ParseInt(&value));
    if (key == "feature_group_count") instruction->set_feature_group_count(value);
    else if (key == "batch_group_count") instruction->set_batch_group_count(value);
    else if (key == "index") instruction->set_tuple_index(value);
    else instruction->set_iota_dimension(value);
  } else if (key == "is_stable") {
    if (ConsumeWord("true")) instruction->set_is_stable(true);
    else if (ConsumeWord("false")) instruction->set_is_stable(false);
    else return Expected("true or false");
  } else if (key == "custom_call_target") {
    std::string target;
    TPU_RETURN_IF_ERROR(ParseQuoted(&target, "a quoted custom-call target"));
    instruction->set_custom_call_target(std::move(target));
  } else if (key == "to_apply" || key == "calls" || key == "condition" || key == "body" || key == "select" ||
             key == "scatter" || key == "true_computation" || key == "false_computation" ||
             key == "branch_computations" || key == "comparator") {
    bool list = Consume('{');
    do {
      std::string name;
      size_t at = pos_;
      SkipSpace();
      at = pos_;
      if (!ParseName(&name)) return Expected("a computation name");
      pending_calls_.push_back({instruction, instruction->called_computation_attributes().size(), name, at});
      instruction->AddCalledComputation(key, nullptr);
    } while (list && Consume(','));
    if (list) TPU_RETURN_IF_ERROR(Expect('}', "to close the list of computations"));
  } else {
    std::string value;
    TPU_RETURN_IF_ERROR(ParseRawValue(&value));
    if (instruction->raw_attribute(key) != nullptr) return ErrorAt(key_position, "duplicate attribute '" + key + "'");
    instruction->set_raw_attribute(key, std::move(value));
  }
  return OkStatus();
}

Status Parser::ParseInstruction(HloComputation* computation, std::vector<PendingOperand>* pending_operands,
                                HloInstruction** root, bool* saw_root) {
  SkipSpace();
  size_t start = pos_;
  bool is_root = ConsumeWord("ROOT");
  std::string name;
  SkipSpace();
  size_t name_position = pos_;
  if (!ParseName(&name)) return Expected("an instruction name");
  if (computation->GetInstructionWithName(name) != nullptr)
    return ErrorAt(name_position, "duplicate instruction name '" + name + "'");
  TPU_RETURN_IF_ERROR(Expect('=', "after the instruction name"));
  Shape shape;
  TPU_RETURN_IF_ERROR(ParseShape(&shape));
  SkipSpace();
  size_t opcode_position = pos_;
  std::string opcode_text;
  if (!ParseName(&opcode_text)) return Expected("an opcode");
  std::optional<HloOpcode> opcode = StringToHloOpcode(opcode_text);
  auto instruction = HloInstruction::Create(opcode ? *opcode : HloOpcode::kUnknown, shape, {}, name);
  if (!opcode) instruction->set_unknown_opcode_name(opcode_text);
  (void)opcode_position;
  if (!Consume('(')) return Expected("'(' after the opcode " + opcode_text);
  if (opcode == HloOpcode::kParameter) {
    int64_t number;
    SkipSpace();
    const size_t number_position = pos_;
    TPU_RETURN_IF_ERROR(ParseInt(&number));
    if (number < 0) return Error("expected a non-negative parameter number");
    // Parameters 0..number are instructions of their own, each longer than one character, so a bigger number
    // than the text's length cannot be right (and must not size the computation's table of parameters).
    if (number >= static_cast<int64_t>(text_.size()))
      return ErrorAt(number_position, "parameter(" + std::to_string(number) + ") needs parameters 0 to " +
                                          std::to_string(number - 1) + " too, more than the text holds");
    instruction->set_parameter_number(number);
    if (number < computation->num_parameters() && computation->parameter_instruction(number) != nullptr)
      return ErrorAt(name_position, "duplicate parameter number " + std::to_string(number));
  } else if (opcode == HloOpcode::kConstant) {
    TPU_RETURN_IF_ERROR(ParseLiteral(shape, instruction.get()));
  } else if (!Peek(')')) {
    do {
      SkipSpace();
      PendingOperand pending{nullptr, "", 0, false, Shape()};
      // `shape %name`, `shape name`, `%name` or `name`.
      bool has_shape = false;
      if (Peek('(')) {
        has_shape = true;
      } else if (pos_ < text_.size() && text_[pos_] != '%') {
        size_t scan = pos_;
        while (scan < text_.size() && text_[scan] >= 'a' && text_[scan] <= 'z') ++scan;
        while (scan < text_.size() && text_[scan] >= '0' && text_[scan] <= '9') ++scan;
        has_shape = scan < text_.size() && text_[scan] == '[';
      }
      if (has_shape) {
        TPU_RETURN_IF_ERROR(ParseShape(&pending.declared));
        pending.typed = true;
      }
      SkipSpace();
      pending.position = pos_;
      if (!ParseName(&pending.name)) return Expected("an operand name");
      pending_operands->push_back(std::move(pending));
    } while (Consume(','));
  }
  if (!Consume(')')) {
    if (pos_ >= text_.size()) return ErrorAt(start, "unterminated instruction: expected ')' to close the operands");
    return Expected("')' to close the operands of " + name);
  }
  HloInstruction* added = computation->AddInstruction(std::move(instruction));
  for (size_t i = pending_operands->size(); i-- > 0 && (*pending_operands)[i].user == nullptr;)
    (*pending_operands)[i].user = added;
  // Attributes up to the end of the line.
  while (true) {
    size_t before = pos_;
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) ++pos_;
    if (pos_ < text_.size() && text_[pos_] == ',') {
      ++pos_;
      TPU_RETURN_IF_ERROR(ParseAttribute(added));
      continue;
    }
    pos_ = before;
    break;
  }
  if (is_root) {
    if (*saw_root) return ErrorAt(start, "a second ROOT instruction in computation " + computation->name());
    *saw_root = true;
    *root = added;
  }
  if (!*saw_root) *root = added;
  return OkStatus();
}

Status Parser::ParseComputation(HloModule* module) {
  SkipSpace();
  bool is_entry = ConsumeWord("ENTRY");
  std::string name;
  SkipSpace();
  size_t name_position = pos_;
  if (!ParseName(&name)) return Expected(is_entry ? "the entry computation's name" : "a computation name or ENTRY");
  if (module->GetComputationWithName(name) != nullptr)
    return ErrorAt(name_position, "duplicate computation name '" + name + "'");
  // Optional signature `(p: f32[2], ...) -> f32[2]`, which repeats what the instructions say.
  if (Consume('(')) {
    if (!Consume(')')) {
      do {
        std::string parameter;
        if (!ParseName(&parameter)) return Expected("a parameter name");
        TPU_RETURN_IF_ERROR(Expect(':', "after the parameter name"));
        Shape ignored;
        TPU_RETURN_IF_ERROR(ParseShape(&ignored));
      } while (Consume(','));
      TPU_RETURN_IF_ERROR(Expect(')', "to close the computation's parameters"));
    }
    SkipSpace();
    if (text_.substr(pos_, 2) != "->") return Expected("'->' and the result shape");
    pos_ += 2;
    Shape ignored;
    TPU_RETURN_IF_ERROR(ParseShape(&ignored));
  }
  TPU_RETURN_IF_ERROR(Expect('{', "to open the computation body"));
  size_t open = pos_ - 1;
  auto owned = std::make_unique<HloComputation>(name);
  HloComputation* computation = owned.get();
  std::vector<PendingOperand> pending;
  HloInstruction* root = nullptr;
  bool saw_root = false;
  while (!Consume('}')) {
    if (pos_ >= text_.size()) return ErrorAt(open, "unterminated computation " + name + ": expected '}'");
    TPU_RETURN_IF_ERROR(ParseInstruction(computation, &pending, &root, &saw_root));
  }
  if (root == nullptr) return ErrorAt(open, "expected at least one instruction in computation " + name);
  for (PendingOperand& operand : pending) {
    HloInstruction* definition = computation->GetInstructionWithName(operand.name);
    if (definition == nullptr)
      return ErrorAt(operand.position, "unknown operand name '" + operand.name + "'; expected an instruction of computation " + name);
    if (operand.typed && !(operand.declared == definition->shape()))
      return ErrorAt(operand.position, "operand %" + operand.name + " is written with shape " + operand.declared.ToString() +
                                           " but defined with shape " + definition->shape().ToString());
    operand.user->AppendOperand(definition);
  }
  // Operands may be written before their definition, so a name can lead back to its own user: report
  // the cycle where it closes, before anything walks (or clones) the operands.
  std::vector<const HloInstruction*> cycle = FindOperandCycle(*computation);
  if (!cycle.empty()) {
    const HloInstruction* closing_user = cycle.back();
    const std::string& closing_operand = cycle.front()->name();
    size_t position = open;
    for (auto it = pending.rbegin(); it != pending.rend(); ++it)  // backwards: the first use wins
      if (it->user == closing_user && it->name == closing_operand) position = it->position;
    return ErrorAt(position, DescribeOperandCycle(cycle));
  }
  for (int64_t i = 0; i < computation->num_parameters(); ++i)
    if (computation->parameter_instruction(i) == nullptr)
      return ErrorAt(open, "computation " + name + " has no parameter(" + std::to_string(i) + ")");
  computation->set_root_instruction(root);
  module->AddComputation(std::move(owned), is_entry);
  return OkStatus();
}

Status Parser::ParseInputOutputAlias(HloModule* module) {
  // { {0}: (2, {}, must-alias), {1}: (1, {}) }
  TPU_RETURN_IF_ERROR(Expect('{', "to open input_output_alias"));
  auto& aliases = module->mutable_input_output_aliases();
  if (!Peek('}')) {
    do {
      InputOutputAlias alias;
      TPU_RETURN_IF_ERROR(ParseIntList(&alias.output_index));
      TPU_RETURN_IF_ERROR(Expect(':', "after the aliased output index"));
      TPU_RETURN_IF_ERROR(Expect('(', "to open the aliased parameter"));
      TPU_RETURN_IF_ERROR(ParseInt(&alias.parameter_number));
      TPU_RETURN_IF_ERROR(Expect(',', "after the parameter number"));
      TPU_RETURN_IF_ERROR(ParseIntList(&alias.parameter_index));
      if (Consume(',')) {
        if (!ParseName(&alias.kind)) return Expected("must-alias or may-alias");
      }
      TPU_RETURN_IF_ERROR(Expect(')', "to close the aliased parameter"));
      aliases.push_back(std::move(alias));
    } while (Consume(','));
  }
  return Expect('}', "to close input_output_alias");
}

// The source tables of current XLA dumps, each a title and one entry per line, before the computations:
//   FileNames / FunctionNames    1 "train.py"
//   FileLocations                1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=0 end_column=73}
//   StackFrames                  1 {file_location_id=1 parent_frame_id=1}
// Ids count from 1 in order; references must name entries that exist (parent_frame_id 0: none; the
// tables an entry names come before it, but for the parent frames).
Status Parser::ParseSourceTables(HloModule* module) {
  StackFrameIndex& index = module->mutable_stack_frames();
  std::vector<size_t> frame_positions;
  auto exists = [](int64_t id, size_t size) { return id >= 1 && id <= static_cast<int64_t>(size); };
  static const char* const kTables[] = {"FileNames", "FunctionNames", "FileLocations", "StackFrames"};
  while (true) {
    std::string table;
    for (const char* name : kTables) {
      if (ConsumeWord(name)) table = name;
      if (!table.empty()) break;
    }
    if (table.empty()) break;
    for (int64_t expected = 1;; ++expected) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') break;
      const size_t id_position = pos_;
      int64_t id = 0;
      TPU_RETURN_IF_ERROR(ParseInt(&id));
      if (id != expected) {
        return ErrorAt(id_position, table + " ids count from 1 in order: expected " + std::to_string(expected) +
                                        ", found " + std::to_string(id));
      }
      if (table == "FileNames" || table == "FunctionNames") {
        std::string name;
        TPU_RETURN_IF_ERROR(ParseQuoted(&name, "a quoted name"));
        (table == "FileNames" ? index.file_names : index.function_names).push_back(std::move(name));
        continue;
      }
      TPU_RETURN_IF_ERROR(Expect('{', "to open the " + table + " entry"));
      StackFrameIndex::FileLocation location;
      StackFrameIndex::StackFrame frame;
      std::map<std::string, int64_t*> fields;
      if (table == "FileLocations") {
        fields = {{"file_name_id", &location.file_name_id}, {"function_name_id", &location.function_name_id},
                  {"line", &location.line}, {"end_line", &location.end_line}, {"column", &location.column},
                  {"end_column", &location.end_column}};
      } else {
        fields = {{"file_location_id", &frame.file_location_id}, {"parent_frame_id", &frame.parent_frame_id}};
      }
      while (!Consume('}')) {
        const size_t key_position = pos_;
        std::string key;
        if (!ParseName(&key)) return Expected("a field name or '}' in the " + table + " entry");
        auto field = fields.find(key);
        if (field == fields.end()) return ErrorAt(key_position, "unknown " + table + " field '" + key + "'");
        TPU_RETURN_IF_ERROR(Expect('=', "after '" + key + "'"));
        TPU_RETURN_IF_ERROR(ParseInt(field->second));
      }
      if (table == "FileLocations") {
        if (!exists(location.file_name_id, index.file_names.size()) ||
            !exists(location.function_name_id, index.function_names.size())) {
          return ErrorAt(id_position, "FileLocations entry " + std::to_string(id) +
                                          " names a file or function that FileNames / FunctionNames do not hold");
        }
        index.file_locations.push_back(location);
      } else {
        if (!exists(frame.file_location_id, index.file_locations.size())) {
          return ErrorAt(id_position, "StackFrames entry " + std::to_string(id) +
                                          " names a location that FileLocations does not hold");
        }
        index.stack_frames.push_back(frame);
        frame_positions.push_back(id_position);
      }
    }
  }
  for (size_t i = 0; i < index.stack_frames.size(); ++i) {
    const int64_t parent = index.stack_frames[i].parent_frame_id;
    if (parent != 0 && !exists(parent, index.stack_frames.size())) {
      return ErrorAt(frame_positions[i], "StackFrames entry " + std::to_string(i + 1) + " names parent frame " +
                                             std::to_string(parent) + ", which StackFrames does not hold");
    }
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<HloModule>> Parser::ParseModule() {
  if (!ConsumeWord("HloModule")) return Expected("'HloModule' at the start of the text");
  std::string name;
  if (!ParseName(&name)) return Expected("the module name");
  auto module = std::make_unique<HloModule>(name);
  while (true) {
    size_t before = pos_;
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r')) ++pos_;
    if (pos_ >= text_.size() || text_[pos_] != ',') {
      pos_ = before;
      break;
    }
    ++pos_;
    std::string key;
    SkipSpace();
    if (!ParseName(&key)) return Expected("a module attribute name");
    TPU_RETURN_IF_ERROR(Expect('=', "after module attribute name '" + key + "'"));
    if (key == "input_output_alias") {
      TPU_RETURN_IF_ERROR(ParseInputOutputAlias(module.get()));
      module->mutable_raw_attributes().emplace_back(key, "");
    } else {
      std::string value;
      TPU_RETURN_IF_ERROR(ParseRawValue(&value));
      module->mutable_raw_attributes().emplace_back(key, std::move(value));
    }
  }
  TPU_RETURN_IF_ERROR(ParseSourceTables(module.get()));
  SkipSpace();
  while (pos_ < text_.size()) {
    TPU_RETURN_IF_ERROR(ParseComputation(module.get()));
    SkipSpace();
  }
  if (module->computations().empty()) return Expected("at least one computation");
  if (module->entry_computation() == nullptr) {
    return ErrorAt(text_.size(), "expected an ENTRY computation (the text marks none)");
  }
  for (const PendingCall& call : pending_calls_) {
    HloComputation* callee = module->GetComputationWithName(call.name);
    if (callee == nullptr) return ErrorAt(call.position, "unknown computation '" + call.name + "'");
    call.user->set_called_computation(call.index, callee);
  }
  return module;
}

}  // namespace

StatusOr<std::unique_ptr<HloModule>> ParseHloModule(std::string_view text) { return Parser(text).ParseModule(); }

StatusOr<Shape> ParseShape(std::string_view text) { return Parser(text).ParseShapeOnly(); }

}  // namespace tpu::hlo
