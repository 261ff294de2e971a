#include "compiler/passes/convolution_lowering.h"

#include "compiler/passes/hlo_builder.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace tpu::compiler {
namespace {

using hlo::HloComputation;
using hlo::HloInstruction;
using hlo::HloOpcode;
using hlo::Shape;


// A convolution in canonical order: x [N, spatial..., C] (already padded), kernel [spatial..., Ci, Co].
struct Canonical {
  HloInstruction* x;
  HloInstruction* kernel;
  std::vector<int64_t> output_spatial;  // output sizes
  std::vector<int64_t> window_size, window_stride, window_dilation, start_offset;
  std::vector<bool> reversal;
  hlo::PrimitiveType type;
};

int64_t Product(const std::vector<int64_t>& values) {
  return std::accumulate(values.begin(), values.end(), int64_t{1}, std::multiplies<int64_t>());
}

// Every index of a box of the given sizes (the taps of a window, the positions of an output), row-major.
std::vector<std::vector<int64_t>> Indices(const std::vector<int64_t>& sizes) {
  std::vector<std::vector<int64_t>> indices;
  std::vector<int64_t> index(sizes.size(), 0);
  for (int64_t i = 0; i < Product(sizes); ++i) {
    indices.push_back(index);
    for (int s = static_cast<int>(index.size()) - 1; s >= 0; --s) {
      if (++index[s] < sizes[s]) break;
      index[s] = 0;
    }
  }
  return indices;
}

// x [.., spatial..., ..] at spatial dimensions 1..k: `counts[s]` elements from offset + first[s] *
// first_step[s], `step[s]` apart. Window(tap) and PositionWindow(o) are the two readings of
// x[o * stride + t * dilation + offset].
HloInstruction* SpatialBox(HloBuilder& b, const Canonical& c, HloInstruction* x, const std::vector<int64_t>& first,
                           const std::vector<int64_t>& first_step, const std::vector<int64_t>& counts,
                           const std::vector<int64_t>& step) {
  const std::vector<int64_t>& dims = x->shape().dimensions;
  std::vector<int64_t> starts(dims.size(), 0), limits = dims, strides(dims.size(), 1);
  for (size_t s = 0; s < first.size(); ++s) {
    starts[s + 1] = first[s] * first_step[s] + c.start_offset[s];
    limits[s + 1] = starts[s + 1] + (counts[s] - 1) * step[s] + 1;
    strides[s + 1] = step[s];
  }
  return b.Slice(x, starts, limits, strides);
}

// The input window tap `tap` reads: [N, output spatial..., features of x].
HloInstruction* Window(HloBuilder& b, const Canonical& c, HloInstruction* x, const std::vector<int64_t>& tap) {
  return SpatialBox(b, c, x, tap, c.window_dilation, c.output_spatial, c.window_stride);
}

// The input the taps of output position `o` read: [.., window size..., ..].
HloInstruction* PositionWindow(HloBuilder& b, const Canonical& c, HloInstruction* x, const std::vector<int64_t>& o) {
  return SpatialBox(b, c, x, o, c.window_stride, c.window_size, c.window_dilation);
}

// The kernel tap `tap` of `kernel` [spatial..., Ci, Co] as [Ci, Co].
HloInstruction* KernelTap(HloBuilder& b, const Canonical& c, HloInstruction* kernel, const std::vector<int64_t>& tap) {
  const std::vector<int64_t>& dims = kernel->shape().dimensions;
  const size_t k = tap.size();
  std::vector<int64_t> starts(dims.size(), 0), limits = dims, strides(dims.size(), 1);
  for (size_t s = 0; s < k; ++s) {
    starts[s] = c.reversal[s] ? c.window_size[s] - 1 - tap[s] : tap[s];
    limits[s] = starts[s] + 1;
  }
  return b.Reshape(b.Slice(kernel, starts, limits, strides), {dims[k], dims[k + 1]});
}

// Windows with at most this many columns together ([rows, Ci] per tap, or [Ci*taps, N] per output
// position) are gathered side by side into one matrix (a `concatenate` along the minor dimension: one
// lane relayout) and multiplied by one dot: with one or a few input features (grayscale or RGB images)
// every per-tap dot would use a sliver of the MXU's contraction width, and every dot is code. 32 takes
// the 3x3 windows of RGB images (27 columns: 4 tiles on tiny, one on v2).
constexpr int64_t kMaxGatheredColumns = 32;

// Windows whose columns fill whole lane tiles are gathered whatever their number: the concatenation is
// then row copies (no lane moves), and one dot with the taps in its contraction (or the positions in
// its columns) replaces one dot per window plus the additions of their results: the MXU accumulates
// the taps, the partial sums never go to HBM, and the code is one dot's instead of nine.
// With the lanes known, narrow windows are gathered up to kMaxGatheredTiles lane tiles: one dot of a few
// K tiles instead of one per window, each padding its few columns to a whole tile of the MXU (16 features
// use 1/8 of a 128-lane contraction), for the lane moves of the gathering.
constexpr int64_t kMaxGatheredTiles = 3;

bool GatherIntoOneDot(int64_t windows, int64_t columns_each, int64_t lanes) {
  if (windows <= 1) return false;
  const int64_t columns = windows * columns_each;
  return columns <= std::max(kMaxGatheredColumns, kMaxGatheredTiles * lanes) ||
         (lanes > 0 && columns_each % lanes == 0);
}

bool AnyReversal(const Canonical& c) {
  return std::any_of(c.reversal.begin(), c.reversal.end(), [](bool r) { return r; });
}

// sum over taps of dot(window, kernel tap), for x with Ci features and kernel [spatial..., Ci, Co]; or,
// for narrow windows, dot([window_0 ... window_T-1], kernel as [taps*Ci, Co]).
HloInstruction* LowerDense(HloBuilder& b, const Canonical& c, HloInstruction* x, HloInstruction* kernel, int64_t lanes) {
  const int64_t n = x->shape().dimensions[0];
  const int64_t ci = x->shape().dimensions.back();
  const int64_t co = kernel->shape().dimensions.back();
  const int64_t rows = n * Product(c.output_spatial);
  const int64_t taps = Product(c.window_size);
  HloInstruction* acc = nullptr;
  if (GatherIntoOneDot(taps, ci, lanes) && !AnyReversal(c)) {
    std::vector<HloInstruction*> windows;
    for (const std::vector<int64_t>& tap : Indices(c.window_size)) {
      windows.push_back(b.Reshape(Window(b, c, x, tap), {rows, ci}));
    }
    acc = b.Dot(b.Concatenate(windows, 1), b.Reshape(kernel, {taps * ci, co}), c.type);
  } else {
    for (const std::vector<int64_t>& tap : Indices(c.window_size)) {
      HloInstruction* window = b.Reshape(Window(b, c, x, tap), {rows, ci});
      acc = b.Accumulate(acc, b.Dot(window, KernelTap(b, c, kernel, tap), c.type));
    }
  }
  std::vector<int64_t> out = {n};
  out.insert(out.end(), c.output_spatial.begin(), c.output_spatial.end());
  out.push_back(co);
  return b.Reshape(acc, out);
}

// One dot per output position o instead of one per tap, for windows with more taps than the output has
// positions (the kernel-gradient convolution: a window the size of the image, a KxK output):
// out[n, o, co] = sum over (ci, t) of x[n, o * stride + t * dilation, ci] * K[t, ci, co] contracts the
// rows of the window [Ci, T..., N] -> [Ci*T, N] with those of the kernel [Ci, T..., Co] -> [Ci*T, Co].
// x_cn is the padded input as [Ci, spatial..., N] and kernel_c [Ci, taps..., Co]: in the
// kernel-gradient convolution's own order (f01b_i01o) both are its operands as written, and every
// reshape keeps the minor dimension. Returns [output spatial..., N, Co].
HloInstruction* LowerByOutputPosition(HloBuilder& b, const Canonical& c, HloInstruction* x_cn, HloInstruction* kernel_c,
                                      int64_t lanes) {
  const int64_t n = x_cn->shape().dimensions.back();
  const int64_t co = kernel_c->shape().dimensions.back();
  const int64_t rows = x_cn->shape().dimensions[0] * Product(c.window_size);
  HloInstruction* kernel = b.Reshape(kernel_c, {rows, co});
  std::vector<HloInstruction*> windows;
  for (const std::vector<int64_t>& o : Indices(c.output_spatial)) {
    windows.push_back(b.Reshape(PositionWindow(b, c, x_cn, o), {rows, n}));
  }
  std::vector<int64_t> out = c.output_spatial;
  out.push_back(n);
  out.push_back(co);
  const int64_t positions = static_cast<int64_t>(windows.size());
  if (positions * n <= kMaxGatheredColumns && positions > 1) {
    // [rows, positions*N] contracted over its rows: [positions*N, Co], rows in [o..., N] order.
    return b.Reshape(b.Dot(b.Concatenate(windows, 1), kernel, c.type, /*lhs_contracting=*/0), out);
  }
  if (GatherIntoOneDot(positions, n, lanes)) {
    // Wide windows: the kernel [rows, Co] is the lhs contracted over its rows (one transpose of it
    // instead of one of every window) and the gathered windows the weights: [Co, positions*N],
    // transposed back (Co x positions*N elements, far fewer than the rows).
    HloInstruction* product = b.Dot(kernel, b.Concatenate(windows, 1), c.type, /*lhs_contracting=*/0);
    return b.Reshape(b.Transpose(product, {1, 0}), out);
  }
  std::vector<HloInstruction*> per_position;
  for (HloInstruction* window : windows) {
    per_position.push_back(b.Reshape(b.Dot(window, kernel, c.type, /*lhs_contracting=*/0), {1, n, co}));
  }
  return b.Reshape(b.Concatenate(per_position, 0), out);
}

// sum over taps of window * broadcast(kernel row), one output per input feature.
HloInstruction* LowerDepthwise(HloBuilder& b, const Canonical& c) {
  HloInstruction* acc = nullptr;
  const int64_t features = c.x->shape().dimensions.back();
  for (const std::vector<int64_t>& tap : Indices(c.window_size)) {
    HloInstruction* window = Window(b, c, c.x, tap);
    HloInstruction* row = b.Reshape(KernelTap(b, c, c.kernel, tap), {features});
    HloInstruction* broadcast = b.Add(HloInstruction::CreateBroadcast(
        window->shape(), row, {static_cast<int64_t>(window->shape().rank()) - 1}));
    acc = b.Accumulate(acc, b.Binary(HloOpcode::kMultiply, window, broadcast));
  }
  return acc;
}

bool IsCanonical(const hlo::ConvolutionDimensionNumbers& d, size_t k) {
  if (d.input_batch_dimension != 0 || d.input_feature_dimension != static_cast<int64_t>(k) + 1) return false;
  if (d.output_batch_dimension != 0 || d.output_feature_dimension != static_cast<int64_t>(k) + 1) return false;
  if (d.kernel_input_feature_dimension != static_cast<int64_t>(k) ||
      d.kernel_output_feature_dimension != static_cast<int64_t>(k) + 1) {
    return false;
  }
  for (size_t s = 0; s < k; ++s) {
    if (d.input_spatial_dimensions[s] != static_cast<int64_t>(s) + 1 ||
        d.output_spatial_dimensions[s] != static_cast<int64_t>(s) + 1 ||
        d.kernel_spatial_dimensions[s] != static_cast<int64_t>(s)) {
      return false;
    }
  }
  return true;
}

bool IsDepthwise(const HloInstruction& convolution) {
  if (!convolution.has_convolution_dimension_numbers() || convolution.batch_group_count() != 1) return false;
  const hlo::ConvolutionDimensionNumbers& d = convolution.convolution_dimension_numbers();
  const int64_t features = convolution.operand(0)->shape().dimensions.at(d.input_feature_dimension);
  const hlo::Shape& kernel = convolution.operand(1)->shape();
  return convolution.feature_group_count() == features && features > 1 &&
         kernel.dimensions.at(d.kernel_input_feature_dimension) == 1 &&
         kernel.dimensions.at(d.kernel_output_feature_dimension) == features &&
         IsCanonical(d, d.input_spatial_dimensions.size());
}

// Dilation and reversal free, so that pad + an unpadded window is the whole story.
bool HasPlainWindow(const HloInstruction& convolution) {
  for (const hlo::WindowDimension& w : convolution.window().dimensions) {
    if (w.base_dilation != 1 || w.window_dilation != 1 || w.window_reversal || w.padding_low < 0 ||
        w.padding_high < 0) {
      return false;
    }
  }
  return true;
}

// pad + the same convolution with the padding removed from its window.
HloInstruction* PadDepthwise(HloComputation* computation, HloInstruction* convolution) {
  HloBuilder b(computation);
  const size_t k = convolution->window().dimensions.size();
  hlo::PaddingConfig padding;
  padding.dimensions.resize(k + 2);
  hlo::Window window = convolution->window();
  for (size_t s = 0; s < k; ++s) {
    padding.dimensions[s + 1].edge_padding_low = window.dimensions[s].padding_low;
    padding.dimensions[s + 1].edge_padding_high = window.dimensions[s].padding_high;
    window.dimensions[s].padding_low = 0;
    window.dimensions[s].padding_high = 0;
  }
  HloInstruction* padded = b.Pad(convolution->operand(0), padding);
  std::unique_ptr<HloInstruction> unpadded =
      convolution->CloneWithNewOperands(convolution->shape(), {padded, convolution->operand(1)});
  unpadded->set_window(window);
  unpadded->set_name("");
  return b.Add(std::move(unpadded));
}

bool HasPadding(const HloInstruction& convolution) {
  for (const hlo::WindowDimension& w : convolution.window().dimensions) {
    if (w.padding_low != 0 || w.padding_high != 0) return true;
  }
  return false;
}

// The transpose from a result whose dimension r is canonical dimension result_dims[r] to the convolution's
// output order (canonical dimension j is output dimension output_order[j]).
std::vector<int64_t> ToOutputOrder(const std::vector<int64_t>& result_dims, const std::vector<int64_t>& output_order) {
  std::vector<int64_t> permutation(result_dims.size());
  for (size_t r = 0; r < result_dims.size(); ++r) permutation[output_order[result_dims[r]]] = static_cast<int64_t>(r);
  return permutation;
}

StatusOr<HloInstruction*> Lower(HloComputation* computation, HloInstruction* convolution, int64_t lanes) {
  if (convolution->batch_group_count() != 1) {
    return Unimplemented("convolution " + convolution->name() + ": batch_group_count " +
                         std::to_string(convolution->batch_group_count()) + " is not lowered");
  }
  HloBuilder b(computation);
  if (const std::string* precision = convolution->raw_attribute("operand_precision")) b.set_dot_precision(*precision);
  const hlo::ConvolutionDimensionNumbers& d = convolution->convolution_dimension_numbers();
  const size_t k = d.input_spatial_dimensions.size();
  if (convolution->window().dimensions.size() != k) {
    return InvalidArgument("convolution " + convolution->name() + ": window rank does not match dim_labels");
  }
  std::vector<int64_t> input_order = {d.input_batch_dimension};
  input_order.insert(input_order.end(), d.input_spatial_dimensions.begin(), d.input_spatial_dimensions.end());
  input_order.push_back(d.input_feature_dimension);
  std::vector<int64_t> kernel_order = d.kernel_spatial_dimensions;
  kernel_order.push_back(d.kernel_input_feature_dimension);
  kernel_order.push_back(d.kernel_output_feature_dimension);
  std::vector<int64_t> output_order = {d.output_batch_dimension};
  output_order.insert(output_order.end(), d.output_spatial_dimensions.begin(), d.output_spatial_dimensions.end());
  output_order.push_back(d.output_feature_dimension);

  Canonical c;
  c.type = convolution->shape().element_type;
  hlo::PaddingConfig padding;
  padding.dimensions.resize(k + 2);
  for (size_t s = 0; s < k; ++s) {
    const hlo::WindowDimension& w = convolution->window().dimensions[s];
    hlo::PaddingDimension& p = padding.dimensions[s + 1];
    p.edge_padding_low = std::max<int64_t>(w.padding_low, 0);
    p.edge_padding_high = std::max<int64_t>(w.padding_high, 0);
    p.interior_padding = w.base_dilation - 1;
    c.output_spatial.push_back(convolution->shape().dimensions.at(d.output_spatial_dimensions[s]));
    c.window_size.push_back(w.size);
    c.window_stride.push_back(w.stride);
    c.window_dilation.push_back(w.window_dilation);
    c.start_offset.push_back(p.edge_padding_low - w.padding_low);
    c.reversal.push_back(w.window_reversal);
  }
  const int64_t groups = convolution->feature_group_count();
  const bool by_position = groups == 1 && !AnyReversal(c) && Product(c.output_spatial) < Product(c.window_size);
  // result_dims[r]: the canonical dimension (batch 0, spatial 1..k, feature k+1) of result dimension r.
  std::vector<int64_t> result_dims(k + 2);
  std::iota(result_dims.begin(), result_dims.end(), 0);
  if (by_position) {
    // Input [C, spatial..., N] (batch and feature swapped: the padding of dims 1..k stays), kernel
    // [Ci, spatial..., Co], result [output spatial..., N, Co].
    std::swap(input_order.front(), input_order.back());
    std::rotate(kernel_order.begin(), kernel_order.begin() + k, kernel_order.begin() + k + 1);
    HloInstruction* x_cn = b.Pad(b.Transpose(convolution->operand(0), input_order), padding);
    HloInstruction* result = LowerByOutputPosition(b, c, x_cn, b.Transpose(convolution->operand(1), kernel_order), lanes);
    std::rotate(result_dims.begin(), result_dims.begin() + 1, result_dims.begin() + k + 1);
    return b.Transpose(result, ToOutputOrder(result_dims, output_order));
  }
  HloInstruction* result = nullptr;
  c.x = b.Pad(b.Transpose(convolution->operand(0), input_order), padding);
  c.kernel = b.Transpose(convolution->operand(1), kernel_order);
  const int64_t features = c.x->shape().dimensions.back();
  const int64_t out_features = c.kernel->shape().dimensions.back();
  if (groups == 1) {
    result = LowerDense(b, c, c.x, c.kernel, lanes);
  } else if (groups == features && out_features == features) {
    result = LowerDepthwise(b, c);
  } else {
    if (groups <= 0 || features % groups != 0 || out_features % groups != 0) {
      return InvalidArgument("convolution " + convolution->name() + ": feature_group_count " +
                             std::to_string(groups) + " does not divide the features");
    }
    const int64_t group_in = features / groups, group_out = out_features / groups;
    std::vector<HloInstruction*> parts;
    for (int64_t g = 0; g < groups; ++g) {
      std::vector<int64_t> x_starts(k + 2, 0), x_limits = c.x->shape().dimensions, ones(k + 2, 1);
      x_starts.back() = g * group_in;
      x_limits.back() = (g + 1) * group_in;
      std::vector<int64_t> k_starts(k + 2, 0), k_limits = c.kernel->shape().dimensions;
      k_starts.back() = g * group_out;
      k_limits.back() = (g + 1) * group_out;
      parts.push_back(LowerDense(b, c, b.Slice(c.x, x_starts, x_limits, ones),
                                 b.Slice(c.kernel, k_starts, k_limits, ones), lanes));
    }
    result = b.Concatenate(parts, static_cast<int64_t>(k) + 1);
  }
  return b.Transpose(result, ToOutputOrder(result_dims, output_order));
}

}  // namespace

bool IsUnpaddedDepthwiseConvolution(const HloInstruction& convolution) {
  return convolution.opcode() == HloOpcode::kConvolution && IsDepthwise(convolution) &&
         HasPlainWindow(convolution) && !HasPadding(convolution);
}

StatusOr<bool> ConvolutionLowering::Run(hlo::HloModule* module) {
  bool changed = false;
  for (HloComputation* computation : module->computations()) {
    std::vector<HloInstruction*> convolutions;
    for (HloInstruction* instruction : computation->instructions()) {
      if (instruction->opcode() == HloOpcode::kConvolution) convolutions.push_back(instruction);
    }
    for (HloInstruction* convolution : convolutions) {
      const bool keep = options_.keep_depthwise_windows && IsDepthwise(*convolution) && HasPlainWindow(*convolution);
      if (keep && !HasPadding(*convolution)) continue;
      HloInstruction* lowered = nullptr;
      if (keep) {
        lowered = PadDepthwise(computation, convolution);
      } else {
        TPU_ASSIGN_OR_RETURN(lowered, Lower(computation, convolution, options_.lanes));
      }
      if (lowered->shape() != convolution->shape()) {
        return Internal("convolution " + convolution->name() + " lowered to " + lowered->shape().ToString() +
                        ", expected " + convolution->shape().ToString());
      }
      TPU_RETURN_IF_ERROR(computation->ReplaceInstruction(convolution, lowered));
      changed = true;
    }
  }
  return changed;
}

}  // namespace tpu::compiler
