// Row permutations: reverse, and transposes that keep the minor dimension. Output row i (its index over
// the leading dimensions) reads input row first + sum(i_d * src_steps[d]), a step negative where a
// dimension is reversed; rows move with DMAs (EmitRowBoxCopy). A reversed minor dimension moves columns
// to other lanes: one lane relayout whose piece reads the columns backwards.
#include "compiler/codegen/codegen_internal.h"

namespace tpu::compiler::codegen_internal {
namespace {

// Output rows indexed by `counts` (the last innermost), read from src + sum(i_d * src_steps[d]) and written
// to dst + sum(i_d * dst_steps[d]).
struct RowMap {
  std::vector<int64_t> counts, src_steps, dst_steps;
};

// Drops dimensions of one index and merges a dimension into the next inner one where both sides step
// through them as through one longer dimension (a reversed pair merges too: its steps are negative).
void MergeRowDimensions(RowMap* map) {
  auto erase = [&](size_t d) {
    map->counts.erase(map->counts.begin() + d);
    map->src_steps.erase(map->src_steps.begin() + d);
    map->dst_steps.erase(map->dst_steps.begin() + d);
  };
  for (size_t d = 0; d + 1 < map->counts.size();) {
    const size_t e = d + 1;
    if (map->counts[d] == 1) {
      erase(d);
    } else if (map->src_steps[d] == map->counts[e] * map->src_steps[e] &&
               map->dst_steps[d] == map->counts[e] * map->dst_steps[e]) {
      map->counts[e] *= map->counts[d];
      erase(d);
    } else {
      ++d;
    }
  }
}

// Moves dimension d to the innermost place (the loops of a copy may run in any order).
void MakeInnermost(RowMap* map, size_t d) {
  auto rotate = [&](std::vector<int64_t>& v) { std::rotate(v.begin() + d, v.begin() + d + 1, v.end()); };
  rotate(map->counts);
  rotate(map->src_steps);
  rotate(map->dst_steps);
}

}  // namespace

Status CodeGenerator::EmitRowPermutation(const HloInstruction& instruction, int64_t src_first_line,
                                         const std::vector<int64_t>& src_steps, bool reverse_minor) {
  const HloInstruction& operand = *instruction.operand(0);
  const hlo::Shape& out = instruction.shape();
  const DeviceLayout in_layout = MakeDeviceLayout(operand.shape(), L());
  const DeviceLayout out_layout = MakeDeviceLayout(out, L());
  if (out_layout.lines == 0) return OkStatus();
  const int64_t in_tiles = in_layout.column_tiles(L()), out_tiles = out_layout.column_tiles(L());
  RowMap map;
  for (int d = 0; d + 1 < out.rank(); ++d) map.counts.push_back(out.dimensions[d]);
  map.src_steps = src_steps;
  map.dst_steps = RowSteps(out, L());
  // The row itself as an innermost dimension of one index: consecutive whole rows merge into it.
  map.counts.push_back(1);
  map.src_steps.push_back(in_tiles);
  map.dst_steps.push_back(out_tiles);
  MergeRowDimensions(&map);
  // The innermost dimension is now consecutive rows (forwards), or the row alone when the last leading
  // dimension is reversed or permuted. The DMA stride is unsigned, so another innermost dimension must
  // read forwards: copies take the longest forward one as strided DMAs when it has more rows than a row
  // has tiles (fewer DMAs than one per row); a relayout gathers its blocks of LANES rows along it.
  if (map.counts.back() == 1) {
    size_t best = map.counts.size();
    for (size_t d = 0; d + 1 < map.counts.size(); ++d) {
      if (map.src_steps[d] > 0 && (best == map.counts.size() || map.counts[d] > map.counts[best])) best = d;
    }
    const int64_t worth = reverse_minor ? 1 : in_tiles;
    if (best < map.counts.size() && map.counts[best] > worth) {
      map.counts.pop_back();
      map.src_steps.pop_back();
      map.dst_steps.pop_back();
      MakeInnermost(&map, best);
    }
  }
  Location src = locations_.at(BufferOf(&operand));
  src.offset += static_cast<uint32_t>(src_first_line);
  const Location dst = locations_.at(BufferOf(&instruction));
  if (!reverse_minor) {
    RowBox box;
    box.src = src;
    box.dst = dst;
    box.counts = map.counts;
    box.src_steps = map.src_steps;
    box.dst_steps = map.dst_steps;
    box.tiles = static_cast<uint32_t>(out_tiles);
    return EmitRowBoxCopy(box);
  }
  LaneRelayout relayout;
  relayout.dst = dst;
  relayout.counts = map.counts;
  relayout.dst_steps = map.dst_steps;
  relayout.dst_cols = out_layout.cols;
  ColumnPiece piece;
  piece.src = src;
  piece.src_steps = map.src_steps;
  piece.src_col = in_layout.cols - 1;
  piece.src_stride = -1;
  piece.count = in_layout.cols;
  relayout.pieces.push_back(piece);
  return EmitLaneRelayout(relayout, instruction);
}

// Reversed leading dimensions start at their last index and step back; a reversed minor dimension
// (rank 1 included) goes through the lane relayout.
Status CodeGenerator::EmitReverse(const HloInstruction& instruction) {
  const hlo::Shape& shape = instruction.shape();
  const int rank = shape.rank();
  std::vector<bool> reversed(static_cast<size_t>(rank), false);
  for (int64_t d : instruction.dimensions()) {
    if (d < 0 || d >= rank) {
      return InvalidArgument("reverse " + instruction.name() + ": dimension " + std::to_string(d) + " out of range");
    }
    reversed[static_cast<size_t>(d)] = shape.dimensions[d] > 1;
  }
  if (rank == 0) return EmitCopy(instruction.operand(0), locations_.at(&instruction));
  const std::vector<int64_t> steps = RowSteps(shape, L());
  std::vector<int64_t> src_steps;
  int64_t first_line = 0;
  for (int d = 0; d + 1 < rank; ++d) {
    src_steps.push_back(reversed[d] ? -steps[d] : steps[d]);
    if (reversed[d]) first_line += (shape.dimensions[d] - 1) * steps[d];
  }
  return EmitRowPermutation(instruction, first_line, src_steps, reversed.back());
}

// Transposes that keep the minor dimension: output dimension i steps through input dimension perm[i].
Status CodeGenerator::EmitRowTranspose(const HloInstruction& instruction) {
  const std::vector<int64_t> in_steps = RowSteps(instruction.operand(0)->shape(), L());
  const std::vector<int64_t>& perm = instruction.dimensions();
  std::vector<int64_t> src_steps;
  for (size_t i = 0; i + 1 < perm.size(); ++i) src_steps.push_back(in_steps[static_cast<size_t>(perm[i])]);
  return EmitRowPermutation(instruction, 0, src_steps, false);
}

void CodeGenerator::AddReverseHandlers(OpcodeHandlerTable& table) {
  OpcodeHandler reverse(HloOpcode::kReverse);
  reverse.types = ElementTypes::kDeviceWord;
  reverse.emit = [](CodeGenerator& g, const HloInstruction& instruction) { return g.EmitReverse(instruction); };
  table.Add(std::move(reverse));
}

}  // namespace tpu::compiler::codegen_internal
