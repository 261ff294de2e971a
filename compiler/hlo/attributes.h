// Typed views of attributes the IR keeps as raw text: gather/scatter dimension numbers, slice_sizes,
// replica_groups, source_target_pairs. Shared by the verifier (shape inference) and the interpreter.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "sw/base/status.h"

namespace tpu::hlo {

// "{1,2}" or "{}" -> {1, 2}; false on anything else.
bool ParseIntList(std::string_view text, std::vector<int64_t>* values);
// "{{0,1},{2,3}}", "{}" or "[2,2]<=[4]" (iota form) -> groups of replica ids; false on anything else.
bool ParseReplicaGroups(std::string_view text, std::vector<std::vector<int64_t>>* groups);

struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> slice_sizes;
  // Dimensions of the operand that pair up with dimensions of the indices (each index picks within its
  // own batch: take_along_axis); empty when the attributes are absent.
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
};
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
};

// Reads and range-checks the attributes of a gather / scatter (InvalidArgument naming what is wrong),
// batching dimensions included.
StatusOr<GatherDimensionNumbers> GetGatherDimensionNumbers(const HloInstruction& gather);
StatusOr<ScatterDimensionNumbers> GetScatterDimensionNumbers(const HloInstruction& scatter);

// dynamic_slice_sizes={...} of a dynamic-slice (InvalidArgument when missing or not a list).
StatusOr<std::vector<int64_t>> GetDynamicSliceSizes(const HloInstruction& dynamic_slice);

// k= and largest= of a topk (largest defaults to true, as XLA's); InvalidArgument when k is missing or
// outside [0, the operand's last dimension].
struct TopKAttributes {
  int64_t k = 0;
  bool largest = true;
};
StatusOr<TopKAttributes> GetTopKAttributes(const HloInstruction& topk);

// Replica groups of a collective; empty when the attribute is absent or `{}` (all replicas, one group).
// Checks that ids are non-negative, appear at most once and that groups have equal sizes.
StatusOr<std::vector<std::vector<int64_t>>> GetReplicaGroups(const HloInstruction& collective);
// source_target_pairs={{0,1},{1,0}} of collective-permute.
StatusOr<std::vector<std::pair<int64_t, int64_t>>> GetSourceTargetPairs(const HloInstruction& permute);

}  // namespace tpu::hlo
