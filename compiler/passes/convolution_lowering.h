// Lowers `convolution` onto what the MXU and VPU compute: dots and elementwise multiply-adds.
//
// Every convolution is first brought to the canonical dimension order (input [batch, spatial..., feature],
// kernel [spatial..., input feature, output feature], output [batch, spatial..., feature]) with
// transposes where its dim_labels differ (b01f_01io->b01f needs none). Then, with X the input padded
// once (`pad`, edge padding only where the window pads, interior padding for lhs_dilate; negative
// padding crops through the window slices) and, for every kernel tap t, W_t the window of X that tap
// reads (`slice` with the window stride; rhs_dilate and rhs_reversal move the start and the tap):
//  - dense (feature_group_count 1): out = sum_t dot(reshape(W_t, [rows, Cin]), K_t) with K_t the
//    [Cin, Cout] kernel tap. A 1x1 window with stride 1 and no padding is one dot over the input
//    itself, [N*H*W, Cin] x [Cin, Cout] (the reshapes keep the minor dimension, so they are free in the
//    device layout). A KxK window sums per-tap dots when its features do not fill lane tiles: each tap
//    reads one strided window of the input (the size of the output, times Cin/Cout), where an im2col
//    matrix would need lane moves for every window.
//    A window with more taps than the output has positions, without reversal (the kernel-gradient
//    convolution f01b_i01o->01bf of a training step: a window the size of the image, a 3x3 output),
//    gets one dot per output position instead: the window at that position as [Ci*taps, N] (input in
//    the order [Ci, spatial..., N], which f01b is) contracted over its rows with the kernel as
//    [Ci*taps, Co] (i01o as written): 9 dots instead of 784 for 28x28 images (every dot is code).
//    Windows with at most 32 columns together (taps x Cin, or output positions x N; with the lanes
//    known, ConvolutionLoweringOptions::lanes, at most 3 lane tiles), or whose columns fill whole lane
//    tiles, are gathered side by side (`concatenate` along the minor dimension) into one matrix for a
//    single dot;
//  - depthwise (feature_group_count == input features, one output per feature): out = sum_t W_t *
//    broadcast(k_t), k_t the kernel row of tap t: VPU multiply-adds of shifted windows;
//  - other feature groupings (including depthwise with a channel multiplier): each group's feature
//    slice is lowered as a dense convolution and the groups are concatenated along the features.
// batch_group_count != 1 gives Unimplemented. Kernel taps are slices of the kernel; for a constant
// kernel the compiler folds them into constants.
#pragma once

#include "compiler/passes/pass.h"

namespace tpu::compiler {

struct ConvolutionLoweringOptions {
  // Depthwise convolutions in canonical order without dilations or reversal become `pad` and a
  // convolution with an unpadded window, left for a code generator that streams the windows itself
  // (compiler/codegen/depthwise.cc: one strided DMA and one VPU multiply-add per tap and output row,
  // no HBM temporaries), instead of per-tap slices, multiplies and adds.
  bool keep_depthwise_windows = false;
  // Lanes of the target (0: not known). Windows whose features are a multiple of it are gathered side
  // by side (im2col: row copies only) into one dot, however many there are; narrower ones up to 3 tiles.
  int64_t lanes = 0;
};

class ConvolutionLowering : public HloPass {
 public:
  explicit ConvolutionLowering(ConvolutionLoweringOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "convolution-lowering"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;

 private:
  ConvolutionLoweringOptions options_;
};

// Whether `convolution` is the depthwise form keep_depthwise_windows leaves: dim_labels b01f_01io->b01f
// (or its rank-3/5 analogues), feature_group_count == input features == output features, one input
// feature per group, a window without padding, dilation or reversal.
bool IsUnpaddedDepthwiseConvolution(const hlo::HloInstruction& convolution);

}  // namespace tpu::compiler
