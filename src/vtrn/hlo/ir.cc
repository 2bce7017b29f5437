#include "vtrn/hlo/ir.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace vtrn::hlo {

std::int64_t TensorType::num_elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

std::string TensorType::str() const {
  std::string s = "tensor<";
  for (std::int64_t d : dims) {
    s += std::to_string(d);
    s += 'x';
  }
  s += dtype_name(dtype);
  s += '>';
  return s;
}

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

namespace {

template <typename T>
T read_as(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void write_as(void* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// double -> integer with truncation toward zero; NaN gives 0, out-of-range saturates to the
// int64 range and then wraps to the storage width.
std::int64_t double_to_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<std::int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<std::int64_t>::min();
  return static_cast<std::int64_t>(v);
}

}  // namespace

void store_double(DType dtype, double v, void* dst) {
  switch (dtype) {
    case DType::kPred:
      write_as<std::uint8_t>(dst, v != 0 ? 1 : 0);
      break;
    case DType::kI8:
      write_as<std::int8_t>(dst, static_cast<std::int8_t>(double_to_int(v)));
      break;
    case DType::kI16:
      write_as<std::int16_t>(dst, static_cast<std::int16_t>(double_to_int(v)));
      break;
    case DType::kI32:
      write_as<std::int32_t>(dst, static_cast<std::int32_t>(double_to_int(v)));
      break;
    case DType::kI64:
      write_as<std::int64_t>(dst, double_to_int(v));
      break;
    case DType::kU8:
      write_as<std::uint8_t>(dst, static_cast<std::uint8_t>(double_to_int(v)));
      break;
    case DType::kU16:
      write_as<std::uint16_t>(dst, static_cast<std::uint16_t>(double_to_int(v)));
      break;
    case DType::kU32:
      write_as<std::uint32_t>(dst, static_cast<std::uint32_t>(double_to_int(v)));
      break;
    case DType::kU64:
      write_as<std::uint64_t>(dst, v >= 9.2233720368547758e18
                                       ? static_cast<std::uint64_t>(v)
                                       : static_cast<std::uint64_t>(double_to_int(v)));
      break;
    case DType::kF16:
      write_as<std::uint16_t>(dst, f32_to_f16(static_cast<float>(v)));
      break;
    case DType::kBF16:
      write_as<std::uint16_t>(dst, f32_to_bf16(static_cast<float>(v)));
      break;
    case DType::kF32:
      write_as<float>(dst, static_cast<float>(v));
      break;
    case DType::kF64:
      write_as<double>(dst, v);
      break;
    case DType::kC64: {
      float c[2] = {static_cast<float>(v), 0.0f};
      std::memcpy(dst, c, 8);
      break;
    }
  }
}

double load_double(DType dtype, const void* src) {
  switch (dtype) {
    case DType::kPred:
      return read_as<std::uint8_t>(src) ? 1.0 : 0.0;
    case DType::kI8:
      return read_as<std::int8_t>(src);
    case DType::kI16:
      return read_as<std::int16_t>(src);
    case DType::kI32:
      return read_as<std::int32_t>(src);
    case DType::kI64:
      return static_cast<double>(read_as<std::int64_t>(src));
    case DType::kU8:
      return read_as<std::uint8_t>(src);
    case DType::kU16:
      return read_as<std::uint16_t>(src);
    case DType::kU32:
      return read_as<std::uint32_t>(src);
    case DType::kU64:
      return static_cast<double>(read_as<std::uint64_t>(src));
    case DType::kF16:
      return f16_to_f32(read_as<std::uint16_t>(src));
    case DType::kBF16:
      return bf16_to_f32(read_as<std::uint16_t>(src));
    case DType::kF32:
      return read_as<float>(src);
    case DType::kF64:
      return read_as<double>(src);
    case DType::kC64:
      return read_as<float>(src);
  }
  return 0;
}

double Literal::get_double(std::int64_t i) const {
  const std::int64_t idx = splat ? 0 : i;
  return load_double(type.dtype, data.data() + idx * dtype_size(type.dtype));
}

std::int64_t Literal::get_int(std::int64_t i) const {
  const std::int64_t idx = splat ? 0 : i;
  const std::uint8_t* p = data.data() + idx * dtype_size(type.dtype);
  switch (type.dtype) {
    case DType::kI64:
      return read_as<std::int64_t>(p);
    case DType::kU64:
      return static_cast<std::int64_t>(read_as<std::uint64_t>(p));
    default:
      return double_to_int(load_double(type.dtype, p));
  }
}

std::complex<float> Literal::get_complex(std::int64_t i) const {
  const std::int64_t idx = splat ? 0 : i;
  if (type.dtype != DType::kC64) return {static_cast<float>(get_double(i)), 0.0f};
  float c[2];
  std::memcpy(c, data.data() + idx * 8, 8);
  return {c[0], c[1]};
}

std::vector<std::uint8_t> Literal::expanded() const {
  if (!splat) return data;
  const std::int64_t n = type.num_elements();
  const int es = dtype_size(type.dtype);
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n * es));
  for (std::int64_t i = 0; i < n; ++i) std::memcpy(out.data() + i * es, data.data(), es);
  return out;
}

Literal Literal::scalar(DType dtype, double value) {
  return splat_of(TensorType(dtype, {}), value);
}

Literal Literal::splat_of(TensorType type, double value) {
  Literal lit;
  lit.data.resize(static_cast<std::size_t>(dtype_size(type.dtype)));
  store_double(type.dtype, value, lit.data.data());
  lit.splat = type.num_elements() != 1;
  lit.type = std::move(type);
  return lit;
}

Literal Literal::from_doubles(TensorType type, const std::vector<double>& values) {
  if (static_cast<std::int64_t>(values.size()) != type.num_elements())
    throw Error("Literal::from_doubles: " + std::to_string(values.size()) + " values for " +
                type.str());
  Literal lit;
  const int es = dtype_size(type.dtype);
  lit.data.resize(values.size() * static_cast<std::size_t>(es));
  for (std::size_t i = 0; i < values.size(); ++i)
    store_double(type.dtype, values[i], lit.data.data() + i * es);
  lit.type = std::move(type);
  return lit;
}

//===----------------------------------------------------------------------===//
// Op names
//===----------------------------------------------------------------------===//

namespace {

struct OpInfo {
  std::string_view name;
  char cls;
};

constexpr OpInfo kOpInfos[] = {
#define VTRN_X(e, n, c) {n, #c[0]},
    VTRN_HLO_OPS(VTRN_X)
#undef VTRN_X
};

}  // namespace

std::string_view op_name(OpKind kind) { return kOpInfos[static_cast<int>(kind)].name; }

std::string qualified_op_name(OpKind kind) {
  return std::string(kind == OpKind::kFma ? "math." : "stablehlo.") + std::string(op_name(kind));
}

bool op_from_name(std::string_view name, OpKind* out) {
  for (std::size_t i = 0; i < std::size(kOpInfos); ++i) {
    if (kOpInfos[i].name == name) {
      *out = static_cast<OpKind>(i);
      return true;
    }
  }
  return false;
}

bool is_unary_elementwise(OpKind kind) { return kOpInfos[static_cast<int>(kind)].cls == 'U'; }
bool is_binary_elementwise(OpKind kind) { return kOpInfos[static_cast<int>(kind)].cls == 'B'; }
bool has_vml_form(OpKind kind) {
  return kind == OpKind::kExp || kind == OpKind::kLog || kind == OpKind::kSqrt ||
         kind == OpKind::kSine || kind == OpKind::kCosine || kind == OpKind::kTanh;
}
bool is_elementwise(OpKind kind) {
  return is_unary_elementwise(kind) || is_binary_elementwise(kind) || kind == OpKind::kCompare ||
         kind == OpKind::kSelect || kind == OpKind::kClamp || kind == OpKind::kFma;
}

namespace {

// In enum order.
constexpr std::string_view kComparisonNames[] = {"EQ", "NE", "GE", "GT", "LE", "LT"};
constexpr std::string_view kCompareTypeNames[] = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED",
                                                  "UNSIGNED"};
constexpr std::string_view kRngAlgorithmNames[] = {"DEFAULT", "THREE_FRY", "PHILOX"};

template <typename Enum, std::size_t N>
std::optional<Enum> enum_from_name(const std::string_view (&names)[N], std::string_view name) {
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == name) return static_cast<Enum>(i);
  return std::nullopt;
}

}  // namespace

std::string_view comparison_name(Comparison c) { return kComparisonNames[static_cast<int>(c)]; }

std::string_view compare_type_name(CompareType t) { return kCompareTypeNames[static_cast<int>(t)]; }

std::optional<Comparison> comparison_from_name(std::string_view name) {
  return enum_from_name<Comparison>(kComparisonNames, name);
}

std::optional<CompareType> compare_type_from_name(std::string_view name) {
  return enum_from_name<CompareType>(kCompareTypeNames, name);
}

std::string_view rng_algorithm_name(RngAlgorithm a) {
  return kRngAlgorithmNames[static_cast<int>(a)];
}

std::optional<RngAlgorithm> rng_algorithm_from_name(std::string_view name) {
  return enum_from_name<RngAlgorithm>(kRngAlgorithmNames, name);
}

//===----------------------------------------------------------------------===//
// Standard regions
//===----------------------------------------------------------------------===//

std::string_view reduce_kind_name(ReduceKind kind) {
  static constexpr std::string_view kNames[] = {"add", "multiply", "maximum", "minimum",
                                                "and", "or",       "other"};
  return kNames[static_cast<int>(kind)];
}

namespace {

// The standard combiners and the op each applies, in ReduceKind order (kOther has none).
constexpr OpKind kReduceKindOps[] = {OpKind::kAdd,     OpKind::kMultiply, OpKind::kMaximum,
                                     OpKind::kMinimum, OpKind::kAnd,      OpKind::kOr};

}  // namespace

std::optional<OpKind> reduce_kind_op(ReduceKind kind) {
  if (kind == ReduceKind::kOther) return std::nullopt;
  return kReduceKindOps[static_cast<int>(kind)];
}

std::optional<ReduceKind> reduce_kind_of(OpKind op) {
  for (std::size_t i = 0; i < std::size(kReduceKindOps); ++i)
    if (kReduceKindOps[i] == op) return static_cast<ReduceKind>(i);
  return std::nullopt;
}

namespace {

std::shared_ptr<Block> binary_region(OpKind op, DType dtype) {
  auto b = std::make_shared<Block>();
  TensorType s(dtype, {});
  b->args = {b->add_value(s), b->add_value(s)};
  Op o;
  o.kind = op;
  o.operands = {0, 1};
  o.results = {b->add_value(s)};
  b->ops.push_back(std::move(o));
  b->results = {2};
  return b;
}

}  // namespace

std::shared_ptr<Block> make_reduce_region(ReduceKind kind, DType dtype) {
  const std::optional<OpKind> op = reduce_kind_op(kind);
  if (!op) throw Error("make_reduce_region: no standard region for 'other'");
  return binary_region(*op, dtype);
}

ReduceKind match_reduce_region(const Block& r) {
  if (r.args.size() != 2 || r.ops.size() != 1 || r.results.size() != 1) return ReduceKind::kOther;
  const Op& o = r.ops[0];
  if (o.results.size() != 1 || r.results[0] != o.results[0] || o.operands.size() != 2)
    return ReduceKind::kOther;
  const bool args_ok = (o.operands[0] == r.args[0] && o.operands[1] == r.args[1]) ||
                       (o.operands[0] == r.args[1] && o.operands[1] == r.args[0]);
  if (!args_ok) return ReduceKind::kOther;
  return reduce_kind_of(o.kind).value_or(ReduceKind::kOther);
}

std::shared_ptr<Block> make_scatter_region(ScatterKind kind, DType dtype) {
  if (kind == ScatterKind::kAdd) return binary_region(OpKind::kAdd, dtype);
  if (kind == ScatterKind::kMul) return binary_region(OpKind::kMultiply, dtype);
  if (kind == ScatterKind::kMax) return binary_region(OpKind::kMaximum, dtype);
  if (kind == ScatterKind::kMin) return binary_region(OpKind::kMinimum, dtype);
  if (kind == ScatterKind::kReplace) {
    auto b = std::make_shared<Block>();
    TensorType s(dtype, {});
    b->args = {b->add_value(s), b->add_value(s)};
    b->results = {1};
    return b;
  }
  throw Error("make_scatter_region: no standard region for 'other'");
}

ScatterKind match_scatter_region(const Block& r) {
  if (r.args.size() != 2 || r.results.size() != 1) return ScatterKind::kOther;
  if (r.ops.empty() && r.results[0] == r.args[1]) return ScatterKind::kReplace;
  switch (match_reduce_region(r)) {
    case ReduceKind::kAdd:
      return ScatterKind::kAdd;
    case ReduceKind::kMul:
      return ScatterKind::kMul;
    case ReduceKind::kMax:
      return ScatterKind::kMax;
    case ReduceKind::kMin:
      return ScatterKind::kMin;
    default:
      return ScatterKind::kOther;
  }
}

std::shared_ptr<Block> make_sort_region(const std::vector<DType>& dtypes, int key,
                                        bool descending) {
  auto b = std::make_shared<Block>();
  for (DType d : dtypes) {
    b->args.push_back(b->add_value(TensorType(d, {})));
    b->args.push_back(b->add_value(TensorType(d, {})));
  }
  Op o;
  o.kind = OpKind::kCompare;
  o.operands = {2 * key, 2 * key + 1};
  o.comparison = descending ? Comparison::kGT : Comparison::kLT;
  const DType kd = dtypes.at(static_cast<std::size_t>(key));
  o.compare_type = is_float(kd)                     ? CompareType::kFloat
                   : is_unsigned(kd) || is_pred(kd) ? CompareType::kUnsigned
                                                    : CompareType::kSigned;
  o.results = {b->add_value(TensorType(DType::kPred, {}))};
  b->results = {o.results[0]};
  b->ops.push_back(std::move(o));
  return b;
}

bool match_sort_region(const Block& r, int* key, bool* descending) {
  if (r.ops.size() != 1 || r.results.size() != 1) return false;
  const Op& o = r.ops[0];
  if (o.kind != OpKind::kCompare || r.results[0] != o.results[0]) return false;
  const int a = o.operands[0], b = o.operands[1];
  if (a % 2 != 0 || b != a + 1 || a >= static_cast<int>(r.args.size())) return false;
  if (o.comparison == Comparison::kLT)
    *descending = false;
  else if (o.comparison == Comparison::kGT)
    *descending = true;
  else
    return false;
  *key = a / 2;
  return true;
}

}  // namespace vtrn::hlo
