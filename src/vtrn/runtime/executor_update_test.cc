// The optimizers' updates as the lowerings write them (addcmul: fma(s * x, y, z); addcdiv:
// z + s * x / y; lerp by a scalar weight: a select between fma(w, e - p, p) and
// fma(w - 1, e - p, e)), folded into one instruction of a fused loop (FusedProgram::fold_update):
// each element against the same operations rounded in turn, written here, on ordinary values,
// zeros of both signs, infinities, NaNs, subnormals and products that overflow. The same
// modules unfused, and with an intermediate also returned (which keeps it from folding), give
// the same bits; so do bf16 operands converted to float32 and back.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

enum class Update { kAddcmul, kAddcdiv, kLerp };

std::vector<double> operand(std::int64_t n, unsigned seed, DType d) {
  std::vector<double> v = random_values(n, -3, 3, seed, d);
  const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-40, -3e38, 3e38};
  for (std::size_t i = 0; i < std::size(special); ++i)
    v[(seed * 7 + i * 5) % v.size()] = special[i];
  return v;
}

TEST(ExecutorUpdateTest, FoldedUpdatesKeepTheRoundingOfEachStep) {
  const std::int64_t n = 77;  // two vector steps of 32 and a tail
  for (DType d : {DType::kF32, DType::kBF16})
    for (Update u : {Update::kAddcmul, Update::kAddcdiv, Update::kLerp})
      for (double s : {1.0, -1e-3, 0.0, 2.5, 0.1, 0.7})
        for (bool intermediate_returned : {false, true}) {
          const TensorType t(d, {n}), scalar(DType::kF32, {});
          Builder b;
          auto f32 = [&](Value v) { return d == DType::kF32 ? v : b.convert(v, DType::kF32); };
          const Value z = f32(b.param(t)), x = f32(b.param(t)), y = f32(b.param(t));
          const Value sv = b.broadcast_to(b.param(scalar), {n});
          Value r, middle;
          if (u == Update::kAddcmul) {
            middle = b.mul(sv, x);
            r = b.fma(middle, y, z);
          } else if (u == Update::kAddcdiv) {
            middle = b.mul(sv, x);
            r = b.add(z, b.div(middle, y));
          } else {  // lerp(z, x, s)
            const Value one =
                b.broadcast_to(b.constant(hlo::Literal::scalar(DType::kF32, 1.0)), {n});
            const Value half =
                b.broadcast_to(b.constant(hlo::Literal::scalar(DType::kF32, 0.5)), {n});
            middle = b.sub(x, z);
            const Value low = b.fma(sv, middle, z), high = b.fma(b.sub(sv, one), middle, x);
            r = b.select(b.compare(hlo::Comparison::kLT, b.unary(OpKind::kAbs, sv), half), low,
                         high);
          }
          if (d != DType::kF32) r = b.convert(r, d);
          std::vector<Value> results = {r};
          if (intermediate_returned) results.push_back(middle);
          const hlo::Module m = b.finish(results);
          const HostTensor zs = HostTensor::from_doubles(t, operand(n, 1, d));
          const HostTensor xs = HostTensor::from_doubles(t, operand(n, 2, d));
          const HostTensor ys = HostTensor::from_doubles(t, operand(n, 3, d));
          const HostTensor ss = HostTensor::from_doubles(scalar, {s});
          const auto sf = static_cast<float>(s);
          for (bool fusion : {true, false}) {
            const auto out = run(m, {zs, xs, ys, ss}, fusion);
            for (std::int64_t i = 0; i < n; ++i) {
              const auto zi = static_cast<float>(zs.get(i)), xi = static_cast<float>(xs.get(i)),
                         yi = static_cast<float>(ys.get(i));
              float want;
              if (u == Update::kAddcmul) {
                const float scaled = sf * xi;
                want = std::fma(scaled, yi, zi);
              } else if (u == Update::kAddcdiv) {
                const float scaled = sf * xi;
                const float quotient = scaled / yi;
                want = zi + quotient;
              } else {
                const float diff = xi - zi;
                want =
                    std::fabs(sf) < 0.5f ? std::fma(sf, diff, zi) : std::fma(sf - 1.0f, diff, xi);
              }
              const double w = ref_round(d, want);
              const double got = out[0].get(i);
              const std::string where = "update " + std::to_string(static_cast<int>(u)) +
                                        " dtype " + std::string(hlo::dtype_name(d)) + " s " +
                                        std::to_string(s) + (fusion ? " fused" : " alone") +
                                        (intermediate_returned ? " returned" : "") + " element " +
                                        std::to_string(i);
              ASSERT_TRUE(std::isnan(w) ? std::isnan(got)
                                        : got == w && std::signbit(got) == std::signbit(w))
                  << where << ": got " << got << " want " << w;
            }
          }
        }
}

}  // namespace
}  // namespace vtrn::runtime
