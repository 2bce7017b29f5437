#include "vtrn/torch/lowering/lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace vtrn::lowering {
namespace {

int category(DType d) {  // bool < integer < floating < complex
  if (hlo::is_pred(d)) return 0;
  if (hlo::is_integer(d)) return 1;
  if (hlo::is_float(d)) return 2;
  return 3;
}

int int_bits(DType d) { return hlo::dtype_size(d) * 8; }

// combine_categories() of c10: a higher-priority group (dimensioned tensors over 0-d tensors
// over wrapped numbers) wins unless the lower one is of a higher category.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (hlo::is_complex(*higher)) return higher;
  if (hlo::is_complex(*lower)) {
    // A float keeps its precision as the complex type of it (toComplexType); complex64 is the
    // one complex type lowered.
    if (!hlo::is_float(*higher)) return lower;
    if (*higher != DType::kF32)
      throw Unsupported("the complex type of " + torch_dtype_name(*higher) + " is not lowered");
    return DType::kC64;
  }
  if (category(*higher) >= 2) return higher;
  if (hlo::is_pred(*higher) || category(*lower) >= 2) return promote_types(*higher, *lower);
  return higher;
}

template <typename T>
hlo::Literal exact_scalar(DType d, T value) {
  hlo::Literal lit;
  lit.type = TensorType(d, {});
  lit.data.resize(sizeof(T));
  std::memcpy(lit.data.data(), &value, sizeof(T));
  return lit;
}

/// The highest (or lowest) value of |d|, exactly: the identity of a min (or max) reduction.
/// Integer limits do not all survive a trip through double (int64's max does not).
hlo::Literal extreme(DType d, bool highest) {
  auto pick = [highest](auto type_tag) {
    using T = decltype(type_tag);
    return highest ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
  };
  switch (d) {
    case DType::kPred:
      return exact_scalar<std::uint8_t>(d, highest ? 1 : 0);
    case DType::kI8:
      return exact_scalar(d, pick(std::int8_t{}));
    case DType::kI16:
      return exact_scalar(d, pick(std::int16_t{}));
    case DType::kI32:
      return exact_scalar(d, pick(std::int32_t{}));
    case DType::kI64:
      return exact_scalar(d, pick(std::int64_t{}));
    case DType::kU8:
      return exact_scalar(d, pick(std::uint8_t{}));
    case DType::kU16:
      return exact_scalar(d, pick(std::uint16_t{}));
    case DType::kU32:
      return exact_scalar(d, pick(std::uint32_t{}));
    case DType::kU64:
      return exact_scalar(d, pick(std::uint64_t{}));
    default:
      return hlo::Literal::scalar(d, highest ? INFINITY : -INFINITY);
  }
}

}  // namespace

std::string torch_dtype_name(DType d) {
  switch (d) {
    case DType::kPred:
      return "bool";
    case DType::kI8:
      return "int8";
    case DType::kI16:
      return "int16";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU8:
      return "uint8";
    case DType::kU16:
      return "uint16";
    case DType::kU32:
      return "uint32";
    case DType::kU64:
      return "uint64";
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
    case DType::kF32:
      return "float32";
    case DType::kF64:
      return "float64";
    case DType::kC64:
      return "complex64";
  }
  return "?";
}

bool can_cast(DType from, DType to) { return category(from) <= category(to); }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (hlo::is_complex(a) || hlo::is_complex(b)) {
    // complex64 with any type but float64 (which gives complex128, not lowered).
    if (a == DType::kF64 || b == DType::kF64) throw Unsupported("complex128 is not lowered");
    return DType::kC64;
  }
  if (hlo::is_pred(a)) return b;
  if (hlo::is_pred(b)) return a;
  const bool fa = hlo::is_float(a), fb = hlo::is_float(b);
  if (fa && fb) {
    if ((a == DType::kF16 && b == DType::kBF16) || (a == DType::kBF16 && b == DType::kF16))
      return DType::kF32;
    return hlo::dtype_size(a) >= hlo::dtype_size(b) ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // Both integers.
  const bool ua = hlo::is_unsigned(a), ub = hlo::is_unsigned(b);
  if (ua != ub) {
    const DType u = ua ? a : b, s = ua ? b : a;
    if (u != DType::kU8)
      throw Unsupported("promotion of uint16/32/64 with a signed type is not supported by PyTorch");
    return int_bits(s) > 8 ? s : DType::kI16;
  }
  return int_bits(a) >= int_bits(b) ? a : b;
}

DType result_type(const std::vector<PromotionInput>& inputs, DType default_float) {
  std::optional<DType> dim, zero, wrapped;
  auto update = [](std::optional<DType>& slot, DType d) {
    slot = slot ? promote_types(*slot, d) : d;
  };
  for (const PromotionInput& in : inputs) {
    switch (in.kind) {
      case PromotionInput::kDimTensor:
        update(dim, in.dtype);
        break;
      case PromotionInput::kZeroDimTensor:
        update(zero, in.dtype);
        break;
      case PromotionInput::kWrappedScalar: {
        // A Python number takes the default dtype of its category.
        DType d = in.dtype;
        if (hlo::is_float(d))
          d = default_float;
        else if (hlo::is_integer(d))
          d = DType::kI64;
        update(wrapped, d);
        break;
      }
    }
  }
  std::optional<DType> r = combine(dim, combine(zero, wrapped));
  if (!r) throw Unsupported("result_type of no inputs");
  return *r;
}

DType opmath(DType d) { return (d == DType::kF16 || d == DType::kBF16) ? DType::kF32 : d; }

//===----------------------------------------------------------------------===//
// Lowerer
//===----------------------------------------------------------------------===//

Lowerer::Lowerer(const OpCall& c, const OpLowering& e)
    // One module name for every op: the cache key hashes the printed module, and add.Tensor,
    // add_.Tensor and add.out lower to the same body.
    : owned_builder_(std::make_unique<hlo::Builder>("eager_op")),
      b(*owned_builder_),
      call(c),
      entry(e) {
  values_.resize(call.args.size());
  for (std::size_t i = 0; i < call.args.size(); ++i) {
    const ArgSpec& a = call.args[i];
    if (a.kind == ArgKind::kTensor || a.kind == ArgKind::kTensorList ||
        a.kind == ArgKind::kScalar || a.kind == ArgKind::kScalarList) {
      for (const TensorType& t : a.types) {
        if (a.stored_transposed && t.rank() >= 2 && !hlo::is_complex(t.dtype)) {
          std::vector<std::int64_t> stored = t.dims, perm(t.dims.size());
          std::iota(perm.begin(), perm.end(), 0);
          std::swap(stored[stored.size() - 1], stored[stored.size() - 2]);
          std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
          values_[i].push_back(b.transpose(b.param(TensorType(t.dtype, stored)), perm));
          continue;
        }
        if (!hlo::is_complex(t.dtype)) {
          values_[i].push_back(b.param(t));
          continue;
        }
        std::vector<std::int64_t> pairs = t.dims;
        pairs.push_back(2);
        values_[i].push_back(b.param(TensorType(DType::kF32, std::move(pairs))));
      }
    }
  }
}

Lowerer::Lowerer(hlo::Builder& builder, const OpCall& c, const OpLowering& e,
                 std::vector<std::vector<Value>> values)
    : b(builder), call(c), entry(e), values_(std::move(values)) {
  values_.resize(call.args.size());
}

const ArgSpec& Lowerer::arg(int i) const {
  if (i < 0 || i >= static_cast<int>(call.args.size()))
    throw Unsupported(entry.name + ": argument " + std::to_string(i) + " is missing");
  return call.args[static_cast<std::size_t>(i)];
}

Value Lowerer::tensor(int i) {
  if (arg(i).kind != ArgKind::kTensor && arg(i).kind != ArgKind::kScalar)
    throw Unsupported(entry.name + ": argument " + std::to_string(i) + " is not a tensor");
  return values_[static_cast<std::size_t>(i)].at(0);
}

const std::vector<Value>& Lowerer::tensors(int i) {
  if (arg(i).kind != ArgKind::kTensorList)
    throw Unsupported(entry.name + ": argument " + std::to_string(i) + " is not a tensor list");
  return values_[static_cast<std::size_t>(i)];
}

Value Lowerer::scalar(int i, DType d) {
  const ArgSpec& a = arg(i);
  switch (a.kind) {
    case ArgKind::kScalar:
    case ArgKind::kTensor: {
      Value v = values_[static_cast<std::size_t>(i)].at(0);
      if (rank(v) != 0)
        throw Unsupported(entry.name + ": argument " + std::to_string(i) + " is not a scalar");
      return convert(v, d);
    }
    case ArgKind::kFloat:
      return constant(a.real, d);
    case ArgKind::kInt:
    case ArgKind::kBool:
      return constant(static_cast<double>(a.ints.at(0)), d);
    default:
      throw Unsupported(entry.name + ": argument " + std::to_string(i) + " is not a scalar");
  }
}

std::int64_t Lowerer::integer(int i) const {
  const ArgSpec& a = arg(i);
  if (a.kind == ArgKind::kFloat) return static_cast<std::int64_t>(a.real);
  if (a.ints.empty())
    throw Unsupported(entry.name + ": argument " + std::to_string(i) + " is not an integer");
  return a.ints[0];
}

std::vector<std::int64_t> Lowerer::ints(int i) const { return arg(i).ints; }

double Lowerer::real(int i) const {
  const ArgSpec& a = arg(i);
  if (a.kind == ArgKind::kFloat) return a.real;
  if (a.kind == ArgKind::kInt || a.kind == ArgKind::kBool) return static_cast<double>(a.ints.at(0));
  throw Unsupported(entry.name + ": argument " + std::to_string(i) + " is not a static number");
}

bool Lowerer::flag(int i) const { return integer(i) != 0; }

PromotionInput Lowerer::promotion(int i) const {
  const ArgSpec& a = arg(i);
  if (a.kind == ArgKind::kScalar) return {a.types.at(0).dtype, PromotionInput::kWrappedScalar};
  if (a.kind == ArgKind::kFloat)
    return {a.ints.empty() || a.ints[0] == 0 ? DType::kF64 : DType::kI64,
            PromotionInput::kWrappedScalar};
  if (a.kind != ArgKind::kTensor)
    throw Unsupported(entry.name + ": argument " + std::to_string(i) + " does not promote");
  const TensorType& t = a.types.at(0);
  if (a.cpu_scalar_tensor && !a.ints.empty() && a.ints[0] == 1)
    return {t.dtype, PromotionInput::kWrappedScalar};
  return {t.dtype, t.rank() == 0 ? PromotionInput::kZeroDimTensor : PromotionInput::kDimTensor};
}

Value Lowerer::promoted(int i, DType common) {
  return convert(convert(tensor(i), common), opmath(common));
}

DType Lowerer::out_dtype(int k, DType result) const {
  if (k >= static_cast<int>(call.out_dtypes.size())) return result;
  const DType want = call.out_dtypes[static_cast<std::size_t>(k)];
  if (want == result) return result;
  // An out= tensor of another dtype: PyTorch casts for some ops and refuses for others (a
  // structured kernel's out check, TensorIterator's same-dtype check); the CPU decides.
  if (!call.in_place)
    throw Unsupported(entry.name + ": out= of dtype " + torch_dtype_name(want) +
                      " for a result of dtype " + torch_dtype_name(result));
  // PyTorch refuses to write a result into an output of a lower category (canCast).
  if (category(result) > category(want))
    throw Unsupported(entry.name + ": result type " + torch_dtype_name(result) +
                      " can't be cast to the desired output type " + torch_dtype_name(want));
  return result;
}

void Lowerer::check_fits(int i, DType d) const {
  if (i >= static_cast<int>(call.args.size())) return;
  const ArgSpec& a = arg(i);
  if (a.kind != ArgKind::kScalar || a.ints.empty()) return;
  if (((a.ints[0] >> static_cast<int>(d)) & 1) == 0)
    throw Unsupported(entry.name + ": argument " + std::to_string(i) + " does not fit " +
                      torch_dtype_name(d));
}

std::optional<DType> Lowerer::given_out_dtype(int k) const {
  if (call.in_place || k >= static_cast<int>(call.out_dtypes.size())) return std::nullopt;
  return call.out_dtypes[static_cast<std::size_t>(k)];
}

Value Lowerer::convert(Value v, DType d) { return dtype(v) == d ? v : b.convert(v, d); }

Value Lowerer::full_like(Value like, double value) {
  return b.broadcast_to(constant(value, dtype(like)), shape(like));
}

Value Lowerer::broadcast_to(Value v, const std::vector<std::int64_t>& s) {
  if (shape(v) == s) return v;
  return b.broadcast_to(v, s);
}

std::vector<Value> Lowerer::broadcast(std::vector<Value> values) {
  std::vector<std::int64_t> out;
  for (Value v : values) {
    const auto& s = shape(v);
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    for (std::size_t k = 0; k < s.size(); ++k) {
      std::int64_t& o = out[out.size() - s.size() + k];
      const std::int64_t d = s[k];
      if (o == d || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      throw Unsupported(entry.name + ": shapes do not broadcast");
    }
  }
  for (Value& v : values) v = broadcast_to(v, out);
  return values;
}

std::int64_t Lowerer::wrap_dim(std::int64_t dim, int r) const {
  const int n = std::max(r, 1);
  if (dim < -n || dim >= n) throw Unsupported(entry.name + ": dimension out of range");
  return dim < 0 ? dim + n : dim;
}

Value Lowerer::reduce(Value x, std::vector<std::int64_t> dims, hlo::ReduceKind kind, bool keepdim,
                      bool cascade_sum, bool vec_sum) {
  const DType d = dtype(x);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  hlo::Literal init;
  switch (kind) {
    case hlo::ReduceKind::kAdd:
    case hlo::ReduceKind::kOr:
      init = hlo::Literal::scalar(d, 0);
      break;
    case hlo::ReduceKind::kMul:
    case hlo::ReduceKind::kAnd:
      init = hlo::Literal::scalar(d, 1);
      break;
    case hlo::ReduceKind::kMax:
      init = extreme(d, false);
      break;
    case hlo::ReduceKind::kMin:
      init = extreme(d, true);
      break;
    default:
      throw Unsupported("reduce kind");
  }
  Value r =
      dims.empty() ? x : b.reduce(x, b.constant(std::move(init)), dims, kind, cascade_sum, vec_sum);
  if (keepdim && !dims.empty()) {
    std::vector<std::int64_t> s = shape(x);
    for (std::int64_t k : dims) s[static_cast<std::size_t>(k)] = 1;
    r = b.reshape(r, s);
  }
  return r;
}

void Lowerer::require_claimed(DType d) const {
  if (std::find(entry.dtypes.begin(), entry.dtypes.end(), d) == entry.dtypes.end())
    throw Unsupported(entry.name + " is not lowered for " + torch_dtype_name(d));
}

bool Lowerer::is_complex(int i) const {
  const ArgSpec& a = arg(i);
  return a.kind == ArgKind::kTensor && hlo::is_complex(a.types.at(0).dtype);
}

Value Lowerer::complex_result(Value re, Value im) {
  if (shape(re) != shape(im) || dtype(re) != DType::kF32 || dtype(im) != DType::kF32)
    throw hlo::Error(entry.name + ": the parts of a complex64 result differ in type");
  std::vector<std::int64_t> pair = shape(re);
  pair.push_back(1);
  return as_complex_result(b.concatenate({b.reshape(re, pair), b.reshape(im, pair)}, rank(re)));
}

Value Lowerer::as_complex_result(Value pairs) {
  if (dtype(pairs) != DType::kF32 || rank(pairs) == 0 || shape(pairs).back() != 2)
    throw hlo::Error(entry.name + ": a complex64 result must be float32 pairs [..., 2], not " +
                     b.type(pairs).str());
  complex_results_.push_back(pairs.id);
  return pairs;
}

bool Lowerer::is_complex_result(Value v) const {
  return std::find(complex_results_.begin(), complex_results_.end(), v.id) !=
         complex_results_.end();
}

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

const std::vector<OpLowering>& registry() {
  static const std::vector<OpLowering> entries = [] {
    std::vector<OpLowering> r;
    add_elementwise_lowerings(r);
    add_reduction_lowerings(r);
    add_nn_lowerings(r);
    add_conv_lowerings(r);
    add_pool_lowerings(r);
    add_activation_lowerings(r);
    add_grouped_mm_lowerings(r);
    add_norm_lowerings(r);
    add_rms_norm_lowerings(r);
    add_data_lowerings(r);
    add_optimizer_lowerings(r);
    add_factory_lowerings(r);
    add_integer_lowerings(r);
    add_scan_lowerings(r);
    add_index_lowerings(r);
    add_complex_lowerings(r);
    add_mask_lowerings(r);
    add_random_lowerings(r);
    add_foreach_lowerings(r);
    add_nki_lowerings(r);
    add_collective_lowerings(r);
    return r;
  }();
  return entries;
}

const OpLowering* find_lowering(const std::string& name) {
  static const std::unordered_map<std::string, const OpLowering*> by_name = [] {
    std::unordered_map<std::string, const OpLowering*> m;
    for (const OpLowering& e : registry()) m.emplace(e.name, &e);
    return m;
  }();
  auto it = by_name.find(name);
  return it == by_name.end() ? nullptr : it->second;
}

LoweredCall lower_call(const OpLowering& entry, const OpCall& call) {
  Lowerer L(call, entry);
  std::vector<Value> results = entry.lower(L);
  LoweredCall lowered;
  for (std::size_t k = 0; k < results.size(); ++k)
    lowered.written.push_back(results[k].id != kUnchanged.id);
  for (std::size_t k = 0; k < results.size() && k < call.out_dtypes.size(); ++k) {
    if (!lowered.written[k]) continue;
    const DType want = call.out_dtypes[k];
    const bool complex = L.is_complex_result(results[k]);
    // A complex result goes to a complex64 output only; a real result into a complex output
    // (real-to-complex casts) is left to the CPU.
    if (complex != hlo::is_complex(want)) {
      if (complex)
        throw Unsupported(entry.name + ": result type complex64 can't be cast to the desired " +
                          "output type " + torch_dtype_name(want));
      throw Unsupported(entry.name + ": a real result for a complex64 output");
    }
    if (complex) continue;
    const DType have = L.dtype(results[k]);
    if (have == want) continue;
    if (!call.in_place)
      throw Unsupported(entry.name + ": out= of dtype " + torch_dtype_name(want) +
                        " for a result of dtype " + torch_dtype_name(have));
    // PyTorch refuses to write a result into an output of a lower category (canCast).
    if (category(have) > category(want))
      throw Unsupported(entry.name + ": result type " + torch_dtype_name(have) +
                        " can't be cast to the desired output type " + torch_dtype_name(want));
    results[k] = L.convert(results[k], want);
  }
  std::erase_if(results, [](Value v) { return v.id == kUnchanged.id; });
  for (Value v : results) lowered.complex.push_back(L.is_complex_result(v));
  lowered.module = L.b.finish(results);
  return lowered;
}

}  // namespace vtrn::lowering
