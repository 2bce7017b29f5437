// The arithmetic an NKI instruction applies: ALU operators (tensor_tensor, tensor_scalar,
// tensor_reduce) and activation functions (the Scalar engine's activation).
#pragma once

#include <cstdint>
#include <string_view>

namespace vtrn::nki {

enum class AluOp : std::uint8_t {
  kBypass,  ///< passes the data operand through (nl.bypass)
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kMaximum,
  kMinimum,
  kPower,
  kMod,
  kAbsMax,
  kEqual,
  kNotEqual,
  kGreater,
  kGreaterEqual,
  kLess,
  kLessEqual,
  kLogicalAnd,
  kLogicalOr,
  kLogicalXor,
  kBitwiseAnd,
  kBitwiseOr,
  kBitwiseXor,
  kLeftShift,
  kRightShift,
};

enum class ActFunc : std::uint8_t {
  kCopy,  ///< identity
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kReciprocal,
  kSquare,
  kTanh,
  kSigmoid,
  kRelu,
  kGelu,
  kGeluApproxTanh,
  kSilu,
  kSin,
  kCos,
  kAbs,
  kSign,
  kSoftplus,
  kMish,
  kErf,
  kArctan,
  kNegative,
};

/// Parses the operator names the NKI front end passes ("add", "maximum", ...); throws
/// std::invalid_argument listing the known names.
AluOp parse_alu_op(std::string_view name);
std::string_view alu_op_name(AluOp op);
ActFunc parse_act_func(std::string_view name);
std::string_view act_func_name(ActFunc func);

/// Bitwise and shift operators work on integers; the others on float32 values.
bool is_bitvec(AluOp op);

/// a op b, computed as the engines do: float operators in float32, bitwise ones on the
/// 32-bit integer values. Comparisons give 1 or 0.
double apply_alu(AluOp op, double a, double b);
/// The identity of |op| as a reduction (0 for add, -inf for maximum, ...).
double reduce_identity(AluOp op);
double apply_act(ActFunc func, double x);

}  // namespace vtrn::nki
