// complex64 arithmetic on float32 pairs: add, sub, mul and polar (rotary embeddings multiply
// view_as_complex(x) by a polar() table), copies (a compiled graph's clone), and indexing of a
// complex table (index.Tensor here,
// gather in lowerings_index.cc). A complex64 tensor reaches these lowerings as its
// view_as_real (OpLowering::complex_pairs), so the executor computes in float32 only.
//
// The formulas are the CPU kernels' (ATen's Vectorized<c10::complex<float>>): a product is
// (ac - bd, ad + bc), each product rounded to float32, then the sum; add is
// self + alpha * other with alpha a complex (alpha, 0), and sub passes -alpha, as
// BinaryOpsKernel.cpp does (so 0 + (inf + 1j) is inf + nanj, as on the CPU). The CPU's
// scalar loop over the last few elements of a row may contract a product and a sum into one
// fused multiply-add, so results agree within the last bit there, bit for bit elsewhere.
#include <string>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using hlo::OpKind;

struct Complex {
  Value re, im;
};

/// Part |k| (0 real, 1 imaginary) of float32 pairs [..., 2].
Value part(Lowerer& L, Value pairs, std::int64_t k) {
  std::vector<std::int64_t> start(static_cast<std::size_t>(L.rank(pairs)), 0);
  std::vector<std::int64_t> limit = L.shape(pairs);
  start.back() = k;
  limit.back() = k + 1;
  std::vector<std::int64_t> dims = L.shape(pairs);
  dims.pop_back();
  return L.b.reshape(L.b.slice(pairs, start, limit, {}), dims);
}

/// Argument |i| as complex64: a complex tensor's parts, or a real tensor or Scalar converted
/// as the CPU converts it (its value rounded to float32, imaginary part +0).
Complex operand(Lowerer& L, int i) {
  if (L.is_complex(i)) {
    Value p = L.tensor(i);
    return {part(L, p, 0), part(L, p, 1)};
  }
  Value re = L.convert(L.tensor(i), DType::kF32);
  return {re, L.full_like(re, 0.0)};
}

/// The two operands of a binary op, broadcast to one shape. Throws Unsupported unless the
/// result type is complex64.
std::pair<Complex, Complex> binary_operands(Lowerer& L) {
  if (L.result_type({L.promotion(0), L.promotion(1)}) != DType::kC64)
    throw Unsupported(L.entry.name + ": a complex result other than complex64");
  const Complex a = operand(L, 0), b = operand(L, 1);
  auto v = L.broadcast({a.re, a.im, b.re, b.im});
  return {{v[0], v[1]}, {v[2], v[3]}};
}

Complex multiply(Lowerer& L, const Complex& a, const Complex& b) {
  return {L.b.sub(L.b.mul(a.re, b.re), L.b.mul(a.im, b.im)),
          L.b.add(L.b.mul(a.re, b.im), L.b.mul(a.im, b.re))};
}

std::vector<Value> complex_mul(Lowerer& L) {
  auto [a, b] = binary_operands(L);
  const Complex r = multiply(L, a, b);
  return {L.complex_result(r.re, r.im)};
}

/// self + alpha * other; sub negates alpha first, as the CPU's sub does.
std::vector<Value> complex_add(Lowerer& L, bool subtract) {
  if (L.has(2) && L.arg(2).kind == ArgKind::kScalar && L.arg(2).types.at(0).dtype == DType::kPred)
    throw Unsupported("a bool alpha for a complex result");  // alpha_check refuses it
  L.check_fits(2, DType::kF32);                              // alpha.to<c10::complex<float>>()
  auto [a, b] = binary_operands(L);
  Value alpha = L.has(2) ? L.scalar(2, DType::kF32) : L.constant(1.0, DType::kF32);
  if (subtract) alpha = L.b.neg(alpha);
  const Complex scale{L.broadcast_to(alpha, L.shape(b.re)), L.full_like(b.re, 0.0)};
  const Complex scaled = multiply(L, scale, b);
  return {L.complex_result(L.b.add(a.re, scaled.re), L.b.add(a.im, scaled.im))};
}

/// Wraps |e|'s lowering: calls with a complex64 tensor go to |complex|, the others to |e|'s
/// own lowering.
void take_complex(OpLowering& e, std::function<std::vector<Value>(Lowerer&)> complex) {
  LowerFn real = e.lower;
  e.lower = [real, complex](Lowerer& L) -> std::vector<Value> {
    for (int i = 0; i < static_cast<int>(L.call.args.size()); ++i)
      if (L.is_complex(i)) return complex(L);
    return real(L);
  };
  e.complex_pairs = true;
  e.dtypes.push_back(DType::kC64);
}

/// index.Tensor of a complex64 self: the pair dim is one more dim no index reaches (the CPU
/// refuses more indices than self has dims, so those calls are left to it).
void index_complex(OpLowering& e) {
  LowerFn real = e.lower;
  e.lower = [real](Lowerer& L) -> std::vector<Value> {
    if (!L.is_complex(0)) return real(L);
    if (static_cast<int>(L.arg(1).ints.size()) > L.rank(L.tensor(0)) - 1)
      throw Unsupported("index: more indices than the complex64 tensor has dims");
    for (const TensorType& t : L.arg(1).types)  // a mask spans as many dims as it has
      if (t.dtype == DType::kPred || t.dtype == DType::kU8)
        throw Unsupported("index of a complex64 tensor with a mask");
    std::vector<Value> out = real(L);
    return {L.as_complex_result(out.at(0))};
  };
  e.complex_pairs = true;
  e.dtypes.push_back(DType::kC64);
}

/// alias_copy of a complex64 tensor (the compiled-graph path's clone): the same float32 pairs
/// (the result check refuses a real output for them).
void copy_complex(OpLowering& e) {
  LowerFn real = e.lower;
  e.lower = [real](Lowerer& L) -> std::vector<Value> {
    if (!L.is_complex(0)) return real(L);
    Value pairs = L.tensor(0);
    return {L.as_complex_result(L.b.reshape(pairs, L.shape(pairs)))};
  };
  e.complex_pairs = true;
  e.dtypes.push_back(DType::kC64);
}

}  // namespace

void add_complex_lowerings(std::vector<OpLowering>& r) {
  for (OpLowering& e : r) {
    const std::string& n = e.name;
    if (n == "mul.Tensor" || n == "mul_.Tensor" || n == "mul.out")
      take_complex(e, complex_mul);
    else if (n == "add.Tensor" || n == "add_.Tensor" || n == "add.out")
      take_complex(e, [](Lowerer& L) { return complex_add(L, false); });
    else if (n == "sub.Tensor" || n == "sub_.Tensor" || n == "sub.out")
      take_complex(e, [](Lowerer& L) { return complex_add(L, true); });
    else if (n == "index.Tensor")
      index_complex(e);
    else if (n == "alias_copy" || n == "alias_copy.out")
      copy_complex(e);
  }
  // polar(abs, angle) = abs * (cos(angle) + i sin(angle)), as c10::polar computes it. The CPU
  // kernel takes float32 inputs for a complex64 result; torch.polar calls this overload.
  OpLowering polar =
      family::entry({DType::kF32, DType::kC64}, [](Lowerer& L) -> std::vector<Value> {
        if (L.dtype(L.tensor(0)) != DType::kF32 || L.dtype(L.tensor(1)) != DType::kF32 ||
            L.call.out_dtypes.empty() || L.call.out_dtypes[0] != DType::kC64)
          throw Unsupported("polar: float32 inputs and a complex64 output only");
        auto v = L.broadcast({L.tensor(0), L.tensor(1)});
        Value re = L.b.mul(v[0], L.b.unary(OpKind::kCosine, v[1]));
        Value im = L.b.mul(v[0], L.b.unary(OpKind::kSine, v[1]));
        return {L.complex_result(re, im)};
      });
  polar.name = "polar.out";
  polar.complex_pairs = true;
  r.push_back(std::move(polar));
}

}  // namespace vtrn::lowering
