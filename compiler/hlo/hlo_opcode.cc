#include "compiler/hlo/hlo_opcode.h"

#include <string>
#include <unordered_map>

namespace tpu::hlo {

namespace {
struct OpcodeInfo {
  const char* name;
  int arity;
};
constexpr OpcodeInfo kOpcodes[] = {
#define TPU_HLO_OPCODE_INFO(enumerator, name, arity) {name, arity},
    TPU_HLO_OPCODE_LIST(TPU_HLO_OPCODE_INFO)
#undef TPU_HLO_OPCODE_INFO
    {"unknown", kVariadicOperands},
};
}  // namespace

const char* HloOpcodeString(HloOpcode opcode) { return kOpcodes[static_cast<int>(opcode)].name; }

int HloOpcodeArity(HloOpcode opcode) { return kOpcodes[static_cast<int>(opcode)].arity; }

std::optional<HloOpcode> StringToHloOpcode(std::string_view name) {
  static const auto* const by_name = [] {
    auto* map = new std::unordered_map<std::string, HloOpcode>();
    for (int i = 0; i < static_cast<int>(HloOpcode::kUnknown); ++i) (*map)[kOpcodes[i].name] = static_cast<HloOpcode>(i);
    return map;
  }();
  auto it = by_name->find(std::string(name));
  if (it == by_name->end()) return std::nullopt;
  return it->second;
}

bool IsElementwiseUnary(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAbs: case HloOpcode::kCbrt: case HloOpcode::kCeil: case HloOpcode::kClz:
    case HloOpcode::kConvert: case HloOpcode::kCopy: case HloOpcode::kCos: case HloOpcode::kErf:
    case HloOpcode::kExp: case HloOpcode::kExpm1: case HloOpcode::kFloor: case HloOpcode::kIsFinite:
    case HloOpcode::kLog: case HloOpcode::kLog1p: case HloOpcode::kLogistic: case HloOpcode::kNegate:
    case HloOpcode::kNot: case HloOpcode::kPopulationCount: case HloOpcode::kReducePrecision:
    case HloOpcode::kRoundNearestAfz: case HloOpcode::kRoundNearestEven: case HloOpcode::kRsqrt:
    case HloOpcode::kSign: case HloOpcode::kSin: case HloOpcode::kSqrt: case HloOpcode::kTan:
    case HloOpcode::kTanh: case HloOpcode::kBitcastConvert: case HloOpcode::kReal:
      return true;
    default:
      return false;
  }
}

bool IsElementwiseBinary(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAdd: case HloOpcode::kAnd: case HloOpcode::kAtan2: case HloOpcode::kCompare:
    case HloOpcode::kDivide: case HloOpcode::kMaximum: case HloOpcode::kMinimum: case HloOpcode::kMultiply:
    case HloOpcode::kOr: case HloOpcode::kPower: case HloOpcode::kRemainder: case HloOpcode::kShiftLeft:
    case HloOpcode::kShiftRightArithmetic: case HloOpcode::kShiftRightLogical: case HloOpcode::kSubtract:
    case HloOpcode::kXor:
      return true;
    default:
      return false;
  }
}

}  // namespace tpu::hlo
