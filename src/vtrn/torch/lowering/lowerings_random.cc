// Random numbers inside a module: vtrn::philox_dropout, vtrn::philox_uniform,
// vtrn::philox_normal and vtrn::philox_bernoulli, which compiled graphs use for native_dropout,
// rand, randn and bernoulli (eager mode runs those as the device's random kernels, which would
// end a capture's group).
//
// Each op takes the Philox (seed, offset) the caller reserved from the device generator as two
// runtime Scalars (so a new offset does not recompile) and draws what random_kernels.cpp draws
// for the same range: element i reads the first two words (a, b) of the Philox-4x32-10 block
// at counter offset + i, key seed. stablehlo.rng_bit_generator with the state {seed, offset}
// gives block j at counter offset + j (XLA's Philox semantics), so an output of [n, 4] words
// holds exactly those blocks. The transforms are the kernels':
//   uniform: u = (a & 0xFFFFFF) * 2^-24, from + u * (to - from) in double, then float;
//   normal: sqrt(-2 log(1 - a 2^-32)) cos(2 pi b 2^-32) in double (Box-Muller);
//   bernoulli(p): u < p; dropout: keep = u >= p, x * keep * (1 / (1 - p)) (the scale rounded to
//   x's dtype first), in opmath.
#include <cmath>

#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;
using hlo::Comparison;
using hlo::OpKind;

/// The first two Philox words (a, b) of each element of |dims|, as u32 tensors of that shape,
/// from the (seed, offset) Scalars at arguments |seed_arg| and |seed_arg| + 1.
std::pair<Value, Value> philox_words(Lowerer& L, int seed_arg,
                                     const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  Value seed = L.b.reshape(L.scalar(seed_arg, DType::kI64), {1});
  Value offset = L.b.reshape(L.scalar(seed_arg + 1, DType::kI64), {1});
  Value state = L.b.concatenate({seed, offset}, 0);
  Value bits =
      L.b.rng_bit_generator(state, TensorType(DType::kU32, {n, 4}), hlo::RngAlgorithm::kPhilox)
          .second;
  Value a = L.b.reshape(L.b.slice(bits, {0, 0}, {n, 1}), dims);
  Value b = L.b.reshape(L.b.slice(bits, {0, 1}, {n, 2}), dims);
  return {a, b};
}

/// uniform01 of random_kernels.cpp for non-double tensors: 24 random bits, exact in f64.
Value uniform01(Lowerer& L, Value a) {
  Value low = L.convert(L.b.binary(OpKind::kAnd, a, L.full_like(a, 16777215.0)), DType::kF64);
  return L.b.mul(low, L.full_like(low, 0x1p-24));
}

DType float_out(Lowerer& L, int like) {
  const DType d = L.dtype(L.tensor(like));
  L.require_claimed(d);
  return d;
}

/// vtrn::philox_dropout(self, p, seed, offset) -> (output, mask).
std::vector<Value> dropout(Lowerer& L) {
  Value x = L.tensor(0);
  const DType d = float_out(L, 0);
  const double p = L.real(1);
  if (!(p > 0.0 && p <= 1.0)) throw Unsupported("philox_dropout: p must be in (0, 1]");
  const auto [a, b] = philox_words(L, 2, L.shape(x));
  (void)b;
  Value u = uniform01(L, a);
  Value keep = L.b.compare(Comparison::kGE, u, L.full_like(u, p));
  // x.mul(keep) (exact in x's dtype), then .mul_(scale): the in-place CPU multiply rounds
  // the scale to x's dtype (1/0.9 is 1.109375 in bfloat16) and multiplies in opmath.
  const DType c = opmath(d);
  Value y = L.b.mul(L.convert(x, c), L.convert(keep, c));
  const double scale = p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
  y = L.b.mul(y, L.b.broadcast_to(L.convert(L.constant(scale, d), c), L.shape(y)));
  return {L.convert(y, d), keep};
}

/// vtrn::philox_uniform(like, from, to, seed, offset): like's shape and dtype.
std::vector<Value> uniform(Lowerer& L) {
  Value like = L.tensor(0);
  const DType d = float_out(L, 0);
  const auto [a, b] = philox_words(L, 3, L.shape(like));
  (void)b;
  Value u = uniform01(L, a);
  const double from = L.real(1), to = L.real(2);
  Value v = L.b.add(L.full_like(u, from), L.b.mul(u, L.full_like(u, to - from)));
  return {L.convert(L.convert(v, DType::kF32), d)};
}

/// vtrn::philox_normal(like, mean, std, seed, offset).
std::vector<Value> normal(Lowerer& L) {
  Value like = L.tensor(0);
  const DType d = float_out(L, 0);
  const auto [a, b] = philox_words(L, 3, L.shape(like));
  Value fa = L.convert(a, DType::kF64), fb = L.convert(b, DType::kF64);
  Value u1 = L.b.sub(L.full_like(fa, 1.0), L.b.mul(fa, L.full_like(fa, 0x1p-32)));
  Value u2 = L.b.mul(fb, L.full_like(fb, 0x1p-32));
  Value r = L.b.unary(OpKind::kSqrt, L.b.mul(L.full_like(u1, -2.0), L.b.unary(OpKind::kLog, u1)));
  Value z = L.b.mul(r, L.b.unary(OpKind::kCosine, L.b.mul(L.full_like(u2, 2.0 * M_PI), u2)));
  const double mean = L.real(1), std = L.real(2);
  Value v = L.b.add(L.full_like(z, mean), L.b.mul(L.full_like(z, std), z));
  return {L.convert(L.convert(v, DType::kF32), d)};
}

/// vtrn::philox_bernoulli(like, p, seed, offset): 1 where u < p, else 0, in like's dtype.
std::vector<Value> bernoulli(Lowerer& L) {
  Value like = L.tensor(0);
  const DType d = float_out(L, 0);
  const auto [a, b] = philox_words(L, 2, L.shape(like));
  (void)b;
  Value u = uniform01(L, a);
  return {L.convert(L.b.compare(Comparison::kLT, u, L.full_like(u, L.real(1))), d)};
}

}  // namespace

void add_random_lowerings(std::vector<OpLowering>& r) {
  add(r, {"vtrn::philox_dropout"}, entry(floats(), dropout));
  add(r, {"vtrn::philox_uniform"}, entry(floats(), uniform));
  add(r, {"vtrn::philox_normal"}, entry(floats(), normal));
  add(r, {"vtrn::philox_bernoulli"}, entry(floats(), bernoulli));
}

}  // namespace vtrn::lowering
