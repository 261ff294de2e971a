// HLO opcodes with the names HLO text uses (`get-tuple-element`, `reduce-window`, ...).
#pragma once

#include <optional>
#include <string_view>

namespace tpu::hlo {

// X(enumerator, "text name", operand count or kVariadicOperands)
#define TPU_HLO_OPCODE_LIST(X)                                   \
  X(kAbs, "abs", 1)                                              \
  X(kAdd, "add", 2)                                              \
  X(kAfterAll, "after-all", kVariadicOperands)                   \
  X(kAllGather, "all-gather", kVariadicOperands)                 \
  X(kAllReduce, "all-reduce", kVariadicOperands)                 \
  X(kAllToAll, "all-to-all", kVariadicOperands)                  \
  X(kAnd, "and", 2)                                              \
  X(kAtan2, "atan2", 2)                                          \
  X(kBatchNormGrad, "batch-norm-grad", 5)                        \
  X(kBatchNormInference, "batch-norm-inference", 5)              \
  X(kBatchNormTraining, "batch-norm-training", 3)                \
  X(kBitcast, "bitcast", 1)                                      \
  X(kBitcastConvert, "bitcast-convert", 1)                       \
  X(kBroadcast, "broadcast", 1)                                  \
  X(kCall, "call", kVariadicOperands)                            \
  X(kCbrt, "cbrt", 1)                                            \
  X(kCeil, "ceil", 1)                                            \
  X(kCholesky, "cholesky", 1)                                    \
  X(kClamp, "clamp", 3)                                          \
  X(kClz, "count-leading-zeros", 1)                              \
  X(kCollectivePermute, "collective-permute", kVariadicOperands) \
  X(kCompare, "compare", 2)                                      \
  X(kConcatenate, "concatenate", kVariadicOperands)              \
  X(kConditional, "conditional", kVariadicOperands)              \
  X(kConstant, "constant", 0)                                    \
  X(kConvert, "convert", 1)                                      \
  X(kConvolution, "convolution", 2)                              \
  X(kCopy, "copy", 1)                                            \
  X(kCopyDone, "copy-done", 1)                                   \
  X(kCopyStart, "copy-start", 1)                                 \
  X(kCos, "cosine", 1)                                           \
  X(kCustomCall, "custom-call", kVariadicOperands)               \
  X(kDivide, "divide", 2)                                        \
  X(kDomain, "domain", 1)                                        \
  X(kDot, "dot", 2)                                              \
  X(kDynamicSlice, "dynamic-slice", kVariadicOperands)           \
  X(kDynamicUpdateSlice, "dynamic-update-slice", kVariadicOperands) \
  X(kErf, "erf", 1)                                              \
  X(kExp, "exponential", 1)                                      \
  X(kExpm1, "exponential-minus-one", 1)                          \
  X(kFft, "fft", 1)                                              \
  X(kFloor, "floor", 1)                                          \
  X(kFusion, "fusion", kVariadicOperands)                        \
  X(kGather, "gather", 2)                                        \
  X(kGetDimensionSize, "get-dimension-size", 1)                  \
  X(kGetTupleElement, "get-tuple-element", 1)                    \
  X(kInfeed, "infeed", 1)                                        \
  X(kIota, "iota", 0)                                            \
  X(kIsFinite, "is-finite", 1)                                   \
  X(kLog, "log", 1)                                              \
  X(kLog1p, "log-plus-one", 1)                                   \
  X(kLogistic, "logistic", 1)                                    \
  X(kMap, "map", kVariadicOperands)                              \
  X(kMaximum, "maximum", 2)                                      \
  X(kMinimum, "minimum", 2)                                      \
  X(kMultiply, "multiply", 2)                                    \
  X(kNegate, "negate", 1)                                        \
  X(kNot, "not", 1)                                              \
  X(kOptimizationBarrier, "opt-barrier", 1)                      \
  X(kOr, "or", 2)                                                \
  X(kOutfeed, "outfeed", 2)                                      \
  X(kPad, "pad", 2)                                              \
  X(kParameter, "parameter", 0)                                  \
  X(kPartitionId, "partition-id", 0)                             \
  X(kPopulationCount, "popcnt", 1)                               \
  X(kPower, "power", 2)                                          \
  X(kReal, "real", 1)                                            \
  X(kRecv, "recv", 1)                                            \
  X(kRecvDone, "recv-done", 1)                                   \
  X(kReduce, "reduce", kVariadicOperands)                        \
  X(kReducePrecision, "reduce-precision", 1)                     \
  X(kReduceScatter, "reduce-scatter", kVariadicOperands)         \
  X(kReduceWindow, "reduce-window", kVariadicOperands)           \
  X(kRemainder, "remainder", 2)                                  \
  X(kReplicaId, "replica-id", 0)                                 \
  X(kReshape, "reshape", 1)                                      \
  X(kReverse, "reverse", 1)                                      \
  X(kRng, "rng", kVariadicOperands)                              \
  X(kRngBitGenerator, "rng-bit-generator", 1)                    \
  X(kRngGetAndUpdateState, "rng-get-and-update-state", 0)        \
  X(kRoundNearestAfz, "round-nearest-afz", 1)                    \
  X(kRoundNearestEven, "round-nearest-even", 1)                  \
  X(kRsqrt, "rsqrt", 1)                                          \
  X(kScatter, "scatter", kVariadicOperands)                      \
  X(kSelect, "select", 3)                                        \
  X(kSelectAndScatter, "select-and-scatter", 3)                  \
  X(kSend, "send", 2)                                            \
  X(kSendDone, "send-done", 1)                                   \
  X(kSetDimensionSize, "set-dimension-size", 2)                  \
  X(kShiftLeft, "shift-left", 2)                                 \
  X(kShiftRightArithmetic, "shift-right-arithmetic", 2)          \
  X(kShiftRightLogical, "shift-right-logical", 2)                \
  X(kSign, "sign", 1)                                            \
  X(kSin, "sine", 1)                                             \
  X(kSlice, "slice", 1)                                          \
  X(kSort, "sort", kVariadicOperands)                            \
  X(kSqrt, "sqrt", 1)                                            \
  X(kSubtract, "subtract", 2)                                    \
  X(kTan, "tan", 1)                                              \
  X(kTanh, "tanh", 1)                                            \
  X(kTopK, "topk", 1)                                            \
  X(kTranspose, "transpose", 1)                                  \
  X(kTriangularSolve, "triangular-solve", 2)                     \
  X(kTuple, "tuple", kVariadicOperands)                          \
  X(kWhile, "while", 1)                                          \
  X(kXor, "xor", 2)

constexpr int kVariadicOperands = -1;

enum class HloOpcode {
#define TPU_HLO_OPCODE_ENUM(enumerator, name, arity) enumerator,
  TPU_HLO_OPCODE_LIST(TPU_HLO_OPCODE_ENUM)
#undef TPU_HLO_OPCODE_ENUM
  // An opcode name the text had that is not in the list above; the instruction keeps the name
  // (HloInstruction::opcode_name()) so the verifier can report it.
  kUnknown,
};

// Text name, e.g. "get-tuple-element"; "unknown" for kUnknown.
const char* HloOpcodeString(HloOpcode opcode);
// Opcode for a text name; nullopt when the name is not a known opcode.
std::optional<HloOpcode> StringToHloOpcode(std::string_view name);
// Fixed operand count, or kVariadicOperands.
int HloOpcodeArity(HloOpcode opcode);
// Elementwise ops with one/two/three array operands of the output's dimensions.
bool IsElementwiseUnary(HloOpcode opcode);
bool IsElementwiseBinary(HloOpcode opcode);

}  // namespace tpu::hlo
