#include "compiler/hlo/attributes.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

namespace tpu::hlo {

namespace {

// A tiny cursor over attribute text.
struct Cursor {
  std::string_view text;
  size_t pos = 0;
  void SkipSpace() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  bool Int(int64_t* value) {
    SkipSpace();
    size_t start = pos;
    if (pos < text.size() && text[pos] == '-') ++pos;
    size_t digits = pos;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) ++pos;
    if (pos == digits || pos - digits > 18) return false;
    *value = std::stoll(std::string(text.substr(start, pos - start)));
    return true;
  }
  bool AtEnd() {
    SkipSpace();
    return pos == text.size();
  }
  // {a,b,c}
  bool List(std::vector<int64_t>* values) {
    values->clear();
    if (!Consume('{')) return false;
    if (Consume('}')) return true;
    do {
      int64_t v;
      if (!Int(&v)) return false;
      values->push_back(v);
    } while (Consume(','));
    return Consume('}');
  }
};

Status AttributeError(const HloInstruction& instruction, const std::string& what) {
  return InvalidArgument("instruction %" + instruction.name() + " (" + instruction.opcode_name() + "): " + what);
}

StatusOr<std::vector<int64_t>> RequiredList(const HloInstruction& instruction, const char* name) {
  const std::string* raw = instruction.raw_attribute(name);
  if (raw == nullptr) return AttributeError(instruction, std::string("missing ") + name + "=");
  std::vector<int64_t> values;
  if (!ParseIntList(*raw, &values)) return AttributeError(instruction, std::string(name) + "=" + *raw + " is not a list of integers");
  return values;
}

StatusOr<int64_t> RequiredInt(const HloInstruction& instruction, const char* name) {
  const std::string* raw = instruction.raw_attribute(name);
  if (raw == nullptr) return AttributeError(instruction, std::string("missing ") + name + "=");
  Cursor cursor{*raw};
  int64_t value;
  if (!cursor.Int(&value) || !cursor.AtEnd()) return AttributeError(instruction, std::string(name) + "=" + *raw + " is not an integer");
  return value;
}

StatusOr<std::vector<int64_t>> OptionalList(const HloInstruction& instruction, const char* name) {
  if (instruction.raw_attribute(name) == nullptr) return std::vector<int64_t>{};
  return RequiredList(instruction, name);
}

bool AllInRange(const std::vector<int64_t>& values, int64_t limit) {
  return std::all_of(values.begin(), values.end(), [&](int64_t v) { return v >= 0 && v < limit; });
}

bool Distinct(std::vector<int64_t> values) {
  std::sort(values.begin(), values.end());
  return std::adjacent_find(values.begin(), values.end()) == values.end();
}

// Batching dimensions: as many of the operand's as of the indices', distinct, in range, the indices' not
// the index vector, the operand's not `other` (collapsed or inserted) nor mapped to by an index.
Status CheckBatching(const HloInstruction& instruction, const std::vector<int64_t>& operand_dims,
                     const std::vector<int64_t>& index_dims, const std::vector<int64_t>& other,
                     const std::vector<int64_t>& index_map, int64_t operand_rank, int64_t indices_rank,
                     int64_t index_vector_dim) {
  if (operand_dims.size() != index_dims.size())
    return AttributeError(instruction, "the operand and the indices need as many batching dimensions");
  if (!AllInRange(operand_dims, operand_rank) || !Distinct(operand_dims) || !AllInRange(index_dims, indices_rank) ||
      !Distinct(index_dims))
    return AttributeError(instruction, "batching dimensions must be distinct and in range");
  for (int64_t d : index_dims)
    if (d == index_vector_dim) return AttributeError(instruction, "the index vector dimension cannot be a batching dimension");
  for (int64_t d : operand_dims)
    if (std::find(other.begin(), other.end(), d) != other.end() ||
        std::find(index_map.begin(), index_map.end(), d) != index_map.end())
      return AttributeError(instruction, "an operand batching dimension cannot also be collapsed, inserted or indexed");
  return OkStatus();
}

}  // namespace

bool ParseIntList(std::string_view text, std::vector<int64_t>* values) {
  Cursor cursor{text};
  return cursor.List(values) && cursor.AtEnd();
}

bool ParseReplicaGroups(std::string_view text, std::vector<std::vector<int64_t>>* groups) {
  groups->clear();
  Cursor cursor{text};
  cursor.SkipSpace();
  if (cursor.Consume('[')) {
    // Iota form [G,S]<=[N]: G groups of S consecutive ids (transposed forms are not supported).
    int64_t group_count, group_size, total;
    if (!cursor.Int(&group_count) || !cursor.Consume(',') || !cursor.Int(&group_size) || !cursor.Consume(']') ||
        !cursor.Consume('<') || !cursor.Consume('=') || !cursor.Consume('[') || !cursor.Int(&total) ||
        !cursor.Consume(']') || !cursor.AtEnd())
      return false;
    if (group_count <= 0 || group_size <= 0 || group_count * group_size != total || total > (1 << 20)) return false;
    for (int64_t g = 0; g < group_count; ++g) {
      groups->emplace_back();
      for (int64_t i = 0; i < group_size; ++i) groups->back().push_back(g * group_size + i);
    }
    return true;
  }
  if (!cursor.Consume('{')) return false;
  if (cursor.Consume('}')) return cursor.AtEnd();
  do {
    std::vector<int64_t> group;
    if (!cursor.List(&group)) return false;
    groups->push_back(std::move(group));
  } while (cursor.Consume(','));
  return cursor.Consume('}') && cursor.AtEnd();
}

StatusOr<GatherDimensionNumbers> GetGatherDimensionNumbers(const HloInstruction& gather) {
  GatherDimensionNumbers d;
  TPU_ASSIGN_OR_RETURN(d.operand_batching_dims, OptionalList(gather, "operand_batching_dims"));
  TPU_ASSIGN_OR_RETURN(d.start_indices_batching_dims, OptionalList(gather, "start_indices_batching_dims"));
  TPU_ASSIGN_OR_RETURN(d.offset_dims, RequiredList(gather, "offset_dims"));
  TPU_ASSIGN_OR_RETURN(d.collapsed_slice_dims, RequiredList(gather, "collapsed_slice_dims"));
  TPU_ASSIGN_OR_RETURN(d.start_index_map, RequiredList(gather, "start_index_map"));
  TPU_ASSIGN_OR_RETURN(d.index_vector_dim, RequiredInt(gather, "index_vector_dim"));
  TPU_ASSIGN_OR_RETURN(d.slice_sizes, RequiredList(gather, "slice_sizes"));
  if (gather.operand_count() != 2) return AttributeError(gather, "gather takes an operand and start indices");
  const Shape& operand = gather.operand(0)->shape();
  const Shape& indices = gather.operand(1)->shape();
  if (!operand.IsArray() || !indices.IsArray()) return AttributeError(gather, "operands must be arrays");
  if (!IsIntegralType(indices.element_type)) return AttributeError(gather, "start indices must be integers, not " + indices.ToString());
  if (static_cast<int>(d.slice_sizes.size()) != operand.rank())
    return AttributeError(gather, "slice_sizes needs one entry per operand dimension of " + operand.ToString());
  for (int i = 0; i < operand.rank(); ++i)
    if (d.slice_sizes[i] < 0 || d.slice_sizes[i] > operand.dimensions[i])
      return AttributeError(gather, "slice size " + std::to_string(d.slice_sizes[i]) + " out of range for dimension " +
                                        std::to_string(i) + " of " + operand.ToString());
  if (d.index_vector_dim < 0 || d.index_vector_dim > indices.rank())
    return AttributeError(gather, "index_vector_dim out of range for " + indices.ToString());
  int64_t index_vector_size = d.index_vector_dim == indices.rank() ? 1 : indices.dimensions[d.index_vector_dim];
  if (static_cast<int64_t>(d.start_index_map.size()) != index_vector_size)
    return AttributeError(gather, "start_index_map must have " + std::to_string(index_vector_size) + " entries");
  if (!AllInRange(d.start_index_map, operand.rank()) || !Distinct(d.start_index_map))
    return AttributeError(gather, "start_index_map must name distinct operand dimensions");
  if (!AllInRange(d.collapsed_slice_dims, operand.rank()) || !Distinct(d.collapsed_slice_dims))
    return AttributeError(gather, "collapsed_slice_dims must name distinct operand dimensions");
  for (int64_t c : d.collapsed_slice_dims)
    if (d.slice_sizes[c] > 1) return AttributeError(gather, "a collapsed dimension must have slice size 0 or 1");
  TPU_RETURN_IF_ERROR(CheckBatching(gather, d.operand_batching_dims, d.start_indices_batching_dims,
                                    d.collapsed_slice_dims, d.start_index_map, operand.rank(), indices.rank(),
                                    d.index_vector_dim));
  for (int64_t b : d.operand_batching_dims)
    if (d.slice_sizes[b] != 1) return AttributeError(gather, "a batching dimension must have slice size 1");
  int64_t batch_rank = indices.rank() - (d.index_vector_dim < indices.rank() ? 1 : 0);
  int64_t output_rank = batch_rank + static_cast<int64_t>(d.offset_dims.size());
  if (static_cast<int64_t>(d.offset_dims.size()) !=
      operand.rank() - static_cast<int64_t>(d.collapsed_slice_dims.size() + d.operand_batching_dims.size()))
    return AttributeError(gather, "offset_dims must have one entry per operand dimension that is neither collapsed nor "
                                  "batching");
  if (!AllInRange(d.offset_dims, output_rank) || !std::is_sorted(d.offset_dims.begin(), d.offset_dims.end()) ||
      !Distinct(d.offset_dims))
    return AttributeError(gather, "offset_dims must be sorted, distinct and below the output rank");
  return d;
}

StatusOr<ScatterDimensionNumbers> GetScatterDimensionNumbers(const HloInstruction& scatter) {
  ScatterDimensionNumbers d;
  TPU_ASSIGN_OR_RETURN(d.input_batching_dims, OptionalList(scatter, "input_batching_dims"));
  TPU_ASSIGN_OR_RETURN(d.scatter_indices_batching_dims, OptionalList(scatter, "scatter_indices_batching_dims"));
  TPU_ASSIGN_OR_RETURN(d.update_window_dims, RequiredList(scatter, "update_window_dims"));
  TPU_ASSIGN_OR_RETURN(d.inserted_window_dims, RequiredList(scatter, "inserted_window_dims"));
  TPU_ASSIGN_OR_RETURN(d.scatter_dims_to_operand_dims, RequiredList(scatter, "scatter_dims_to_operand_dims"));
  TPU_ASSIGN_OR_RETURN(d.index_vector_dim, RequiredInt(scatter, "index_vector_dim"));
  if (scatter.operand_count() < 3 || scatter.operand_count() % 2 != 1)
    return AttributeError(scatter, "scatter takes N operands, the indices and N updates");
  int64_t n = scatter.operand_count() / 2;
  const Shape& operand = scatter.operand(0)->shape();
  const Shape& indices = scatter.operand(n)->shape();
  if (!indices.IsArray() || !IsIntegralType(indices.element_type))
    return AttributeError(scatter, "scatter indices must be integers, not " + indices.ToString());
  for (int64_t i = 0; i < n; ++i) {
    const Shape& o = scatter.operand(i)->shape();
    const Shape& u = scatter.operand(n + 1 + i)->shape();
    if (!o.IsArray() || !u.IsArray() || o.dimensions != operand.dimensions ||
        u.dimensions != scatter.operand(n + 1)->shape().dimensions || o.element_type != u.element_type)
      return AttributeError(scatter, "operands and updates must be arrays of matching shapes and element types");
  }
  const Shape& updates = scatter.operand(n + 1)->shape();
  if (d.index_vector_dim < 0 || d.index_vector_dim > indices.rank())
    return AttributeError(scatter, "index_vector_dim out of range for " + indices.ToString());
  int64_t index_vector_size = d.index_vector_dim == indices.rank() ? 1 : indices.dimensions[d.index_vector_dim];
  if (static_cast<int64_t>(d.scatter_dims_to_operand_dims.size()) != index_vector_size)
    return AttributeError(scatter, "scatter_dims_to_operand_dims must have " + std::to_string(index_vector_size) + " entries");
  if (!AllInRange(d.scatter_dims_to_operand_dims, operand.rank()) || !Distinct(d.scatter_dims_to_operand_dims))
    return AttributeError(scatter, "scatter_dims_to_operand_dims must name distinct operand dimensions");
  if (!AllInRange(d.inserted_window_dims, operand.rank()) || !Distinct(d.inserted_window_dims))
    return AttributeError(scatter, "inserted_window_dims must name distinct operand dimensions");
  if (!AllInRange(d.update_window_dims, updates.rank()) || !Distinct(d.update_window_dims) ||
      !std::is_sorted(d.update_window_dims.begin(), d.update_window_dims.end()))
    return AttributeError(scatter, "update_window_dims must be sorted, distinct update dimensions");
  TPU_RETURN_IF_ERROR(CheckBatching(scatter, d.input_batching_dims, d.scatter_indices_batching_dims,
                                    d.inserted_window_dims, d.scatter_dims_to_operand_dims, operand.rank(),
                                    indices.rank(), d.index_vector_dim));
  if (static_cast<int64_t>(d.update_window_dims.size() + d.inserted_window_dims.size() + d.input_batching_dims.size()) !=
      operand.rank())
    return AttributeError(scatter, "update_window_dims, inserted_window_dims and input_batching_dims must cover the "
                                   "operand rank");
  int64_t batch_rank = indices.rank() - (d.index_vector_dim < indices.rank() ? 1 : 0);
  if (updates.rank() != batch_rank + static_cast<int64_t>(d.update_window_dims.size()))
    return AttributeError(scatter, "updates " + updates.ToString() + " have the wrong rank for indices " + indices.ToString());
  // Update scatter dimensions follow the index batch dimensions; window dimensions fit the operand.
  std::vector<int64_t> batch_sizes;
  for (int i = 0; i < indices.rank(); ++i)
    if (i != d.index_vector_dim) batch_sizes.push_back(indices.dimensions[i]);
  size_t batch = 0;
  size_t window = 0;
  std::vector<int64_t> window_operand_dims;
  for (int i = 0; i < operand.rank(); ++i)
    if (std::find(d.inserted_window_dims.begin(), d.inserted_window_dims.end(), i) == d.inserted_window_dims.end() &&
        std::find(d.input_batching_dims.begin(), d.input_batching_dims.end(), i) == d.input_batching_dims.end())
      window_operand_dims.push_back(i);
  for (int i = 0; i < updates.rank(); ++i) {
    bool is_window = std::find(d.update_window_dims.begin(), d.update_window_dims.end(), i) != d.update_window_dims.end();
    if (is_window) {
      if (updates.dimensions[i] > operand.dimensions[window_operand_dims[window++]])
        return AttributeError(scatter, "update window dimension " + std::to_string(i) + " is larger than the operand");
    } else if (updates.dimensions[i] != batch_sizes[batch++]) {
      return AttributeError(scatter, "update dimension " + std::to_string(i) + " does not match the indices " + indices.ToString());
    }
  }
  return d;
}

StatusOr<std::vector<std::vector<int64_t>>> GetReplicaGroups(const HloInstruction& collective) {
  std::vector<std::vector<int64_t>> groups;
  const std::string* raw = collective.raw_attribute("replica_groups");
  if (raw == nullptr) return groups;
  if (!ParseReplicaGroups(*raw, &groups)) return AttributeError(collective, "cannot read replica_groups=" + *raw);
  std::set<int64_t> seen;
  for (const auto& group : groups) {
    if (group.empty() || group.size() != groups[0].size())
      return AttributeError(collective, "replica groups must be non-empty and of equal size");
    for (int64_t id : group)
      if (id < 0 || !seen.insert(id).second)
        return AttributeError(collective, "replica id " + std::to_string(id) + " is negative or in two groups");
  }
  return groups;
}

StatusOr<std::vector<int64_t>> GetDynamicSliceSizes(const HloInstruction& dynamic_slice) {
  return RequiredList(dynamic_slice, "dynamic_slice_sizes");
}

StatusOr<TopKAttributes> GetTopKAttributes(const HloInstruction& topk) {
  TopKAttributes attributes;
  const std::string* k = topk.raw_attribute("k");
  if (k == nullptr) return AttributeError(topk, "missing k=");
  Cursor cursor{*k};
  if (!cursor.Int(&attributes.k) || !cursor.AtEnd()) return AttributeError(topk, "cannot read k=" + *k);
  const Shape& operand = topk.operand(0)->shape();
  if (!operand.IsArray() || operand.rank() < 1 || attributes.k < 0 || attributes.k > operand.dimensions.back()) {
    return AttributeError(topk, "k=" + *k + " must be in [0, the last dimension of " + operand.ToString() + "]");
  }
  if (const std::string* largest = topk.raw_attribute("largest")) {
    if (*largest != "true" && *largest != "false") return AttributeError(topk, "largest=" + *largest + " is not a bool");
    attributes.largest = *largest == "true";
  }
  return attributes;
}

StatusOr<std::vector<std::pair<int64_t, int64_t>>> GetSourceTargetPairs(const HloInstruction& permute) {
  std::vector<std::pair<int64_t, int64_t>> pairs;
  const std::string* raw = permute.raw_attribute("source_target_pairs");
  if (raw == nullptr) return AttributeError(permute, "missing source_target_pairs=");
  std::vector<std::vector<int64_t>> lists;
  if (!ParseReplicaGroups(*raw, &lists)) return AttributeError(permute, "cannot read source_target_pairs=" + *raw);
  std::set<int64_t> sources, targets;
  for (const auto& pair : lists) {
    if (pair.size() != 2 || pair[0] < 0 || pair[1] < 0) return AttributeError(permute, "each source_target_pair is {source,target}");
    if (!sources.insert(pair[0]).second || !targets.insert(pair[1]).second)
      return AttributeError(permute, "a replica is the source or target of two pairs");
    pairs.emplace_back(pair[0], pair[1]);
  }
  return pairs;
}

}  // namespace tpu::hlo
