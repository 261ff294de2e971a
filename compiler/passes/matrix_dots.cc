#include "compiler/passes/matrix_dots.h"

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/passes/hlo_builder.h"

namespace tpu::compiler {
namespace {

using hlo::HloInstruction;
using hlo::HloOpcode;

int64_t Product(const std::vector<int64_t>& dimensions, const std::vector<int64_t>& which) {
  int64_t product = 1;
  for (int64_t d : which) product *= dimensions[d];
  return product;
}

// The dimensions of a rank-`rank` operand in none of `used`, in increasing order.
std::vector<int64_t> FreeDimensions(int rank, const std::vector<int64_t>& batch,
                                    const std::vector<int64_t>& contracting) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(batch.begin(), batch.end(), d) == batch.end() &&
        std::find(contracting.begin(), contracting.end(), d) == contracting.end()) {
      free.push_back(d);
    }
  }
  return free;
}

std::vector<int64_t> Concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool IsMatrixDot(const HloInstruction& dot) {
  const hlo::DotDimensionNumbers& d = dot.dot_dimension_numbers();
  return dot.operand(0)->shape().rank() == 2 && dot.operand(1)->shape().rank() == 2 && d.lhs_batch_dimensions.empty() &&
         d.lhs_contracting_dimensions.size() == 1 && d.rhs_contracting_dimensions.size() == 1;
}

HloInstruction* RewriteDot(hlo::HloComputation* computation, HloInstruction* dot) {
  const hlo::DotDimensionNumbers& d = dot->dot_dimension_numbers();
  HloInstruction* lhs = dot->operand(0);
  HloInstruction* rhs = dot->operand(1);
  const std::vector<int64_t>& ld = lhs->shape().dimensions;
  const std::vector<int64_t>& rd = rhs->shape().dimensions;
  const std::vector<int64_t> lhs_free =
      FreeDimensions(lhs->shape().rank(), d.lhs_batch_dimensions, d.lhs_contracting_dimensions);
  const std::vector<int64_t> rhs_free =
      FreeDimensions(rhs->shape().rank(), d.rhs_batch_dimensions, d.rhs_contracting_dimensions);
  const int64_t batch = Product(ld, d.lhs_batch_dimensions);
  const int64_t m = Product(ld, lhs_free), k = Product(ld, d.lhs_contracting_dimensions), n = Product(rd, rhs_free);
  if (batch == 0 || m == 0 || k == 0 || n == 0) return nullptr;  // nothing to multiply: left as it is

  HloBuilder b(computation);
  if (const std::string* precision = dot->raw_attribute("operand_precision")) b.set_dot_precision(*precision);
  HloInstruction* l = b.Reshape(
      b.Transpose(lhs, Concat(Concat(d.lhs_batch_dimensions, lhs_free), d.lhs_contracting_dimensions)), {batch, m, k});
  HloInstruction* r = b.Reshape(
      b.Transpose(rhs, Concat(Concat(d.rhs_batch_dimensions, d.rhs_contracting_dimensions), rhs_free)), {batch, k, n});
  const hlo::PrimitiveType type = dot->shape().element_type;
  std::vector<HloInstruction*> products;
  for (int64_t i = 0; i < batch; ++i) {
    HloInstruction* li = b.Reshape(b.Slice(l, {i, 0, 0}, {i + 1, m, k}, {1, 1, 1}), {m, k});
    HloInstruction* ri = b.Reshape(b.Slice(r, {i, 0, 0}, {i + 1, k, n}, {1, 1, 1}), {k, n});
    products.push_back(b.Reshape(b.Dot(li, ri, type), {1, m, n}));
  }
  return b.Reshape(b.Concatenate(products, 0), dot->shape().dimensions);
}

}  // namespace

StatusOr<bool> MatrixDots::Run(hlo::HloModule* module) {
  return ReplaceEachInProgram(module,
                              [](hlo::HloComputation* computation, HloInstruction* instruction) -> HloInstruction* {
                                if (instruction->opcode() != HloOpcode::kDot || instruction->operand_count() != 2 ||
                                    IsMatrixDot(*instruction)) {
                                  return nullptr;
                                }
                                return RewriteDot(computation, instruction);
                              });
}

}  // namespace tpu::compiler
