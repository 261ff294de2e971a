// Padding report: for every dot and convolution, each operand's and the result's logical shape next to
// the shape the hardware actually holds, padded to its tile as the Cloud TPU performance guide describes:
// the batch dimension to a multiple of 8, feature dimensions (contracting/hidden sizes, input and output
// channels) to a multiple of the MXU size. Reports the share of padded elements and of MXU
// multiply-accumulates that are padding ("waste"). Analysis only: the module is not changed.
//
// Which dimension is which:
//  - dot: lhs free dimensions are the batch (rows), contracting dimensions and rhs free dimensions are
//    features; with several free or contracting dimensions the minor-most one is padded. Dot batch
//    dimensions are not padded.
//  - convolution: the input/output batch dimension is the batch; input features, kernel input/output
//    features and output features are features (per group for grouped convolutions, so a depthwise
//    convolution pads each single-channel group to the MXU size). Spatial dimensions are not padded.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/hlo/hlo_ir.h"
#include "compiler/passes/pass.h"

namespace tpu::compiler {

struct PaddingReportOptions {
  int64_t batch_multiple = 8;
  int64_t feature_multiple = 128;  // the MXU size (LANES of the target)
};

struct PaddedTensor {
  std::string role;  // "lhs", "rhs", "input", "kernel", "output"
  hlo::Shape logical;
  hlo::Shape padded;
  double waste_percent() const;  // share of the padded elements that are padding
};

struct PaddingEntry {
  std::string instruction;  // name without %
  hlo::HloOpcode opcode = hlo::HloOpcode::kDot;
  std::vector<PaddedTensor> tensors;
  uint64_t logical_macs = 0;
  uint64_t padded_macs = 0;
  double mac_waste_percent() const;
};

// Every dot and convolution of every computation, in computation and instruction order.
std::vector<PaddingEntry> ComputePaddingReport(const hlo::HloModule& module, const PaddingReportOptions& options);
// Human-readable text: a header with the options, one block per entry, and a total line.
std::string FormatPaddingReport(const std::vector<PaddingEntry>& entries, const PaddingReportOptions& options);

// The report as a pass, for pipelines: Run() never changes the module; text() holds the last report.
class PaddingReport : public HloPass {
 public:
  explicit PaddingReport(PaddingReportOptions options = {}) : options_(options) {}
  std::string_view name() const override { return "padding-report"; }
  StatusOr<bool> Run(hlo::HloModule* module) override;
  const std::string& text() const { return text_; }
  const std::vector<PaddingEntry>& entries() const { return entries_; }

 private:
  PaddingReportOptions options_;
  std::vector<PaddingEntry> entries_;
  std::string text_;
};

}  // namespace tpu::compiler
