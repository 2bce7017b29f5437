#include "vtrn/nki/ops.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace vtrn::nki {
namespace {

struct AluName {
  AluOp op;
  std::string_view name;
};
constexpr AluName kAluNames[] = {
    {AluOp::kBypass, "bypass"},
    {AluOp::kAdd, "add"},
    {AluOp::kSubtract, "subtract"},
    {AluOp::kMultiply, "multiply"},
    {AluOp::kDivide, "divide"},
    {AluOp::kMaximum, "maximum"},
    {AluOp::kMinimum, "minimum"},
    {AluOp::kPower, "power"},
    {AluOp::kMod, "mod"},
    {AluOp::kAbsMax, "abs_max"},
    {AluOp::kEqual, "equal"},
    {AluOp::kNotEqual, "not_equal"},
    {AluOp::kGreater, "greater"},
    {AluOp::kGreaterEqual, "greater_equal"},
    {AluOp::kLess, "less"},
    {AluOp::kLessEqual, "less_equal"},
    {AluOp::kLogicalAnd, "logical_and"},
    {AluOp::kLogicalOr, "logical_or"},
    {AluOp::kLogicalXor, "logical_xor"},
    {AluOp::kBitwiseAnd, "bitwise_and"},
    {AluOp::kBitwiseOr, "bitwise_or"},
    {AluOp::kBitwiseXor, "bitwise_xor"},
    {AluOp::kLeftShift, "left_shift"},
    {AluOp::kRightShift, "right_shift"},
};

struct ActName {
  ActFunc func;
  std::string_view name;
};
constexpr ActName kActNames[] = {
    {ActFunc::kCopy, "copy"},       {ActFunc::kExp, "exp"},
    {ActFunc::kLog, "log"},         {ActFunc::kSqrt, "sqrt"},
    {ActFunc::kRsqrt, "rsqrt"},     {ActFunc::kReciprocal, "reciprocal"},
    {ActFunc::kSquare, "square"},   {ActFunc::kTanh, "tanh"},
    {ActFunc::kSigmoid, "sigmoid"}, {ActFunc::kRelu, "relu"},
    {ActFunc::kGelu, "gelu"},       {ActFunc::kGeluApproxTanh, "gelu_apprx_tanh"},
    {ActFunc::kSilu, "silu"},       {ActFunc::kSin, "sin"},
    {ActFunc::kCos, "cos"},         {ActFunc::kAbs, "abs"},
    {ActFunc::kSign, "sign"},       {ActFunc::kSoftplus, "softplus"},
    {ActFunc::kMish, "mish"},       {ActFunc::kErf, "erf"},
    {ActFunc::kArctan, "arctan"},   {ActFunc::kNegative, "negative"},
};

template <typename Table>
std::string known_names(const Table& table) {
  std::string out;
  for (const auto& entry : table) out += (out.empty() ? "" : ", ") + std::string(entry.name);
  return out;
}

std::int64_t as_int(double v) {
  if (std::isnan(v)) return 0;
  return static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::int64_t>(v)));
}

float f32(double v) { return static_cast<float>(v); }

}  // namespace

AluOp parse_alu_op(std::string_view name) {
  for (const AluName& n : kAluNames) {
    if (n.name == name) return n.op;
  }
  throw std::invalid_argument("unsupported NKI ALU operator '" + std::string(name) +
                              "'; supported: " + known_names(kAluNames));
}

std::string_view alu_op_name(AluOp op) {
  for (const AluName& n : kAluNames) {
    if (n.op == op) return n.name;
  }
  return "?";
}

ActFunc parse_act_func(std::string_view name) {
  for (const ActName& n : kActNames) {
    if (n.name == name) return n.func;
  }
  if (name == "identity") return ActFunc::kCopy;
  throw std::invalid_argument("unsupported NKI activation function '" + std::string(name) +
                              "'; supported: " + known_names(kActNames));
}

std::string_view act_func_name(ActFunc func) {
  for (const ActName& n : kActNames) {
    if (n.func == func) return n.name;
  }
  return "?";
}

bool is_bitvec(AluOp op) {
  switch (op) {
    case AluOp::kBitwiseAnd:
    case AluOp::kBitwiseOr:
    case AluOp::kBitwiseXor:
    case AluOp::kLeftShift:
    case AluOp::kRightShift:
      return true;
    default:
      return false;
  }
}

double apply_alu(AluOp op, double a, double b) {
  // Float operators round to float32 like the engines' FP32 ALUs.
  const float x = f32(a), y = f32(b);
  switch (op) {
    case AluOp::kBypass:
      return a;
    case AluOp::kAdd:
      return x + y;
    case AluOp::kSubtract:
      return x - y;
    case AluOp::kMultiply:
      return x * y;
    case AluOp::kDivide:
      return x / y;
    case AluOp::kMaximum:
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::quiet_NaN()
                                            : (x > y ? x : y);
    case AluOp::kMinimum:
      return std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::quiet_NaN()
                                            : (x < y ? x : y);
    case AluOp::kPower:
      return std::pow(x, y);
    case AluOp::kMod:
      return std::fmod(x, y);
    case AluOp::kAbsMax:
      return std::fabs(x) > std::fabs(y) ? std::fabs(x) : std::fabs(y);
    case AluOp::kEqual:
      return x == y;
    case AluOp::kNotEqual:
      return x != y;
    case AluOp::kGreater:
      return x > y;
    case AluOp::kGreaterEqual:
      return x >= y;
    case AluOp::kLess:
      return x < y;
    case AluOp::kLessEqual:
      return x <= y;
    case AluOp::kLogicalAnd:
      return (x != 0) && (y != 0);
    case AluOp::kLogicalOr:
      return (x != 0) || (y != 0);
    case AluOp::kLogicalXor:
      return (x != 0) != (y != 0);
    case AluOp::kBitwiseAnd:
      return static_cast<double>(as_int(a) & as_int(b));
    case AluOp::kBitwiseOr:
      return static_cast<double>(as_int(a) | as_int(b));
    case AluOp::kBitwiseXor:
      return static_cast<double>(as_int(a) ^ as_int(b));
    case AluOp::kLeftShift:
      return static_cast<double>(
          static_cast<std::int32_t>(static_cast<std::uint32_t>(as_int(a)) << (as_int(b) & 31)));
    case AluOp::kRightShift:
      return static_cast<double>(static_cast<std::int32_t>(as_int(a)) >> (as_int(b) & 31));
  }
  return a;
}

double reduce_identity(AluOp op) {
  switch (op) {
    case AluOp::kAdd:
    case AluOp::kSubtract:
    case AluOp::kLogicalOr:
    case AluOp::kLogicalXor:
    case AluOp::kBitwiseOr:
    case AluOp::kBitwiseXor:
      return 0;
    case AluOp::kMultiply:
    case AluOp::kLogicalAnd:
      return 1;
    case AluOp::kMaximum:
    case AluOp::kAbsMax:
      return -std::numeric_limits<double>::infinity();
    case AluOp::kMinimum:
      return std::numeric_limits<double>::infinity();
    case AluOp::kBitwiseAnd:
      return -1;
    default:
      throw std::invalid_argument("operator '" + std::string(alu_op_name(op)) +
                                  "' cannot reduce; use add, multiply, maximum or minimum");
  }
}

double apply_act(ActFunc func, double v) {
  const float x = f32(v);
  switch (func) {
    case ActFunc::kCopy:
      return x;
    case ActFunc::kExp:
      return std::exp(x);
    case ActFunc::kLog:
      return std::log(x);
    case ActFunc::kSqrt:
      return std::sqrt(x);
    case ActFunc::kRsqrt:
      return 1.0f / std::sqrt(x);
    case ActFunc::kReciprocal:
      return 1.0f / x;
    case ActFunc::kSquare:
      return x * x;
    case ActFunc::kTanh:
      return std::tanh(x);
    case ActFunc::kSigmoid:
      return 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    case ActFunc::kRelu:
      return x > 0 ? x : 0.0f;
    case ActFunc::kGelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ActFunc::kGeluApproxTanh: {
      const double c = std::sqrt(2.0 / M_PI);
      return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
    }
    case ActFunc::kSilu:
      return x / (1.0 + std::exp(-static_cast<double>(x)));
    case ActFunc::kSin:
      return std::sin(x);
    case ActFunc::kCos:
      return std::cos(x);
    case ActFunc::kAbs:
      return std::fabs(x);
    case ActFunc::kSign:
      return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0);
    case ActFunc::kSoftplus:
      return std::log1p(std::exp(static_cast<double>(x)));
    case ActFunc::kMish:
      return x * std::tanh(std::log1p(std::exp(static_cast<double>(x))));
    case ActFunc::kErf:
      return std::erf(x);
    case ActFunc::kArctan:
      return std::atan(x);
    case ActFunc::kNegative:
      return -x;
  }
  return x;
}

}  // namespace vtrn::nki
