// How a fused loop reads its operands, each case against the arithmetic written out: scalar
// operands computed once and read as scalars on either side, a select on a scalar picking its
// operand, a multiply by a scalar 1 reading its other operand, values needed at different times
// sharing a chunk, an in-place update written over its input, an extra output written straight
// over an input, a per-row value read one scalar per row.
#include <gtest/gtest.h>

#include <cmath>

#include "vtrn/hlo/parser.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

// lerp's lowering: a select on a comparison of a runtime scalar. The loop computes the scalar's
// instructions once and, the predicate being the same everywhere, only the picked operand; a
// value of the other branch that is returned is still computed. The unfused run computes every
// op over every element: the results must be the same bytes.
TEST(ExecutorTest, ScalarOperandsComputeOnceAndASelectOnOnePicksItsOperand) {
  Builder b;
  TensorType t(DType::kF32, {3, 1100}), s(DType::kF32, {});
  Value x = b.param(t), y = b.param(t), w = b.param(s);
  auto spread = [&](Value v) { return b.broadcast_in_dim(v, t.dims, {}); };
  Value wb = spread(w), one = spread(b.scalar(DType::kF32, 1));
  Value diff = b.sub(y, x);
  Value low = b.add(x, b.mul(wb, diff));
  Value high = b.sub(y, b.mul(diff, b.sub(one, wb)));
  Value use_low = b.compare(hlo::Comparison::kLT, b.unary(OpKind::kAbs, wb),
                            spread(b.scalar(DType::kF32, 0.5)));
  Value square = b.add(b.mul(wb, wb), one);  // another loop reading the same broadcast
  hlo::Module m = b.finish({b.select(use_low, low, high), high, square});
  int fused = 0;
  for (const compiler::Kernel& k : compiler::compile(m).kernels) {
    if (k.kind != compiler::KernelKind::kFused) continue;
    ++fused;
    EXPECT_GT(k.ops.size(), 1u) << k.name;  // no loop materializes the broadcast alone
  }
  ASSERT_EQ(fused, 2);  // each loop reads the scalar itself
  const auto xs = random_values(t.num_elements(), -3, 3, 41, DType::kF32),
             ys = random_values(t.num_elements(), -3, 3, 42, DType::kF32);
  for (double wv : {0.25, 0.75, -0.6, -0.4, double(NAN)}) {
    std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys),
                                  HostTensor::from_doubles(s, {wv})};
    auto fused_out = run(m, in, true), unfused_out = run(m, in, false);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(fused_out[r].data, unfused_out[r].data) << "w " << wv;
    for (std::int64_t i = 0; i < t.num_elements(); i += 97) {
      const double d = ys[i] - xs[i];
      const double want_low = xs[i] + wv * d, want_high = ys[i] - d * (1 - wv);
      if (std::isnan(wv)) {
        EXPECT_TRUE(std::isnan(fused_out[0].get(i)));
        continue;
      }
      ASSERT_NEAR(fused_out[0].get(i), std::fabs(wv) < 0.5 ? want_low : want_high, 1e-5)
          << "w " << wv << " i " << i;
      ASSERT_NEAR(fused_out[1].get(i), want_high, 1e-5) << "w " << wv << " i " << i;
      ASSERT_NEAR(fused_out[2].get(i), wv * wv + 1, 1e-6) << "w " << wv << " i " << i;
    }
  }
}

// add(x, y, alpha) lowers to y + x * alpha, alpha a runtime scalar; a loop whose scalar is 1
// skips the multiply and reads x itself. Either way every element equals the float arithmetic
// written out, -0, infinities, NaN and subnormals included, as a root (alpha * y) and inside.
TEST(ExecutorTest, AMultiplyByAScalarOneReadsItsOtherOperand) {
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16}) {
    Builder b;
    TensorType t(d, {3, 1100}), s(d, {});
    Value x = b.param(t), y = b.param(t), alpha = b.param(s);
    Value ab = b.broadcast_in_dim(alpha, t.dims, {});
    hlo::Module m = b.finish({b.add(y, b.mul(x, ab)), b.mul(ab, y)});
    auto xs = random_values(t.num_elements(), -3, 3, 44, d);
    const auto ys = random_values(t.num_elements(), -3, 3, 45, d);
    const double specials[] = {-0.0, INFINITY, -INFINITY, NAN, 1e-40, -3e-39, 1e30};
    for (std::size_t i = 0; i < std::size(specials); ++i) xs[i * 401] = specials[i];
    auto round_to = [&](double v) {
      return HostTensor::from_doubles(TensorType(d, {}), {v}).get(0);
    };
    for (double av : {1.0, 3.0, -1.0}) {
      std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs),
                                    HostTensor::from_doubles(t, ys),
                                    HostTensor::from_doubles(s, {av})};
      auto fused = run(m, in, true), unfused = run(m, in, false);
      for (int r = 0; r < 2; ++r)
        EXPECT_EQ(fused[r].data, unfused[r].data) << hlo::dtype_name(d) << " alpha " << av;
      for (std::int64_t i = 0; i < t.num_elements(); ++i) {
        // Rounded to d after each operation, as the loop computes.
        const double xv = in[0].get(i), yv = in[1].get(i);
        const double sum = round_to(yv + round_to(xv * av)), scaled = round_to(av * yv);
        const double got = fused[0].get(i);
        if (std::isnan(sum)) {
          ASSERT_TRUE(std::isnan(got)) << hlo::dtype_name(d) << " alpha " << av << " i " << i;
        } else {
          ASSERT_EQ(got, sum) << hlo::dtype_name(d) << " alpha " << av << " i " << i;
          ASSERT_EQ(std::signbit(got), std::signbit(sum)) << "i " << i;
        }
        ASSERT_EQ(fused[1].get(i), scaled) << hlo::dtype_name(d) << " alpha " << av << " i " << i;
      }
    }
  }
}

// Values a loop never needs at the same time share one chunk of its scratch: a value read
// last early on gives its chunk to the values computed after it. A value read through another
// (a multiply by a scalar 1 reads as its other operand, a select on a scalar as the operand it
// picks) keeps its chunk for as long as that other value is read: here |early| and |left| are
// read last, directly, before six more values are computed, and through |scaled| and |picked|
// after them. Every element is the arithmetic written out, rounded to the dtype after each op.
TEST(ExecutorTest, ValuesNeededAtDifferentTimesShareAChunk) {
  for (DType d : {DType::kF32, DType::kF64}) {
    Builder b;
    TensorType t(d, {3, 1100}), s(d, {}), p(DType::kPred, {});
    Value x = b.param(t), y = b.param(t), alpha = b.param(s), pick = b.param(p);
    auto spread = [&](Value v) { return b.broadcast_in_dim(v, t.dims, {}); };
    Value early = b.neg(x);
    Value scaled = b.mul(early, spread(alpha));
    Value left = b.add(x, y), right = b.sub(x, y);
    Value picked = b.select(spread(pick), left, right);
    Value c = y;
    for (int i = 0; i < 6; ++i) c = b.add(b.mul(c, y), x);
    hlo::Module m = b.finish({b.add(b.mul(scaled, c), picked)});
    const auto xs = random_values(t.num_elements(), -1.5, 1.5, 47, d),
               ys = random_values(t.num_elements(), -1.5, 1.5, 48, d);
    auto round_to = [&](double v) {
      return HostTensor::from_doubles(TensorType(d, {}), {v}).get(0);
    };
    for (double av : {1.0, 2.5})
      for (double pv : {1.0, 0.0}) {
        std::vector<HostTensor> in = {
            HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys),
            HostTensor::from_doubles(s, {av}), HostTensor::from_doubles(p, {pv})};
        auto fused = run(m, in, true), unfused = run(m, in, false);
        EXPECT_EQ(fused[0].data, unfused[0].data) << hlo::dtype_name(d) << " alpha " << av;
        for (std::int64_t i = 0; i < t.num_elements(); ++i) {
          const double xv = in[0].get(i), yv = in[1].get(i);
          double cv = yv;
          for (int k = 0; k < 6; ++k) cv = round_to(round_to(cv * yv) + xv);
          const double chosen = round_to(pv != 0 ? xv + yv : xv - yv);
          const double want = round_to(round_to(round_to(-xv * av) * cv) + chosen);
          ASSERT_EQ(fused[0].get(i), want)
              << hlo::dtype_name(d) << " alpha " << av << " pick " << pv << " i " << i;
        }
      }
  }
}

// A float op with one scalar operand reads the scalar itself, on either side, not a chunk
// filled with it: every element is the op written out in the loop's arithmetic (float for
// float32 and bfloat16, rounded to the dtype; double for float64), -0, infinities, NaN and
// subnormals included, and a max or min with a NaN is NaN.
TEST(ExecutorTest, AScalarOperandOnEitherSideGivesTheOpWrittenOut) {
  const OpKind kinds[] = {OpKind::kAdd,    OpKind::kSubtract, OpKind::kMultiply,
                          OpKind::kDivide, OpKind::kMaximum,  OpKind::kMinimum};
  const double specials[] = {-0.0, 0.0, INFINITY, -INFINITY, NAN, 1e-40, -3e-39, 1e30, 2.5};
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16}) {
    Builder b;
    TensorType t(d, {3, 1100}), s(d, {});
    Value x = b.param(t), w = b.param(s);
    Value wb = b.broadcast_in_dim(w, t.dims, {});
    std::vector<Value> outs;
    for (OpKind k : kinds) {
      outs.push_back(b.binary(k, x, wb));
      outs.push_back(b.binary(k, wb, x));
    }
    hlo::Module m = b.finish(outs);
    auto xs = random_values(t.num_elements(), -3, 3, 46, d);
    for (std::size_t i = 0; i < std::size(specials); ++i) xs[i * 331] = specials[i];
    auto round_to = [&](double v) {
      return HostTensor::from_doubles(TensorType(d, {}), {v}).get(0);
    };
    auto apply = [&](OpKind k, double a, double c) -> double {
      if (d != DType::kF64) {
        const auto fa = static_cast<float>(a), fc = static_cast<float>(c);
        switch (k) {
          case OpKind::kAdd:
            return round_to(fa + fc);
          case OpKind::kSubtract:
            return round_to(fa - fc);
          case OpKind::kMultiply:
            return round_to(fa * fc);
          case OpKind::kDivide:
            return round_to(fa / fc);
          default:
            break;
        }
      } else {
        switch (k) {
          case OpKind::kAdd:
            return a + c;
          case OpKind::kSubtract:
            return a - c;
          case OpKind::kMultiply:
            return a * c;
          case OpKind::kDivide:
            return a / c;
          default:
            break;
        }
      }
      if (std::isnan(a) || std::isnan(c)) return NAN;
      return k == OpKind::kMaximum ? (a > c ? a : c) : (a < c ? a : c);
    };
    for (double wv : {0.75, -2.0, 0.0, -0.0, double(INFINITY), double(NAN), 1e-39}) {
      std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs),
                                    HostTensor::from_doubles(s, {wv})};
      const auto out = run(m, in, true);
      const double sv = in[1].get(0);
      for (std::size_t j = 0; j < std::size(kinds); ++j)
        for (int side = 0; side < 2; ++side)
          for (std::int64_t i = 0; i < t.num_elements(); ++i) {
            const double xv = in[0].get(i);
            const double want = side == 0 ? apply(kinds[j], xv, sv) : apply(kinds[j], sv, xv);
            const double got = out[2 * j + side].get(i);
            const std::string what = std::string(hlo::dtype_name(d)) + " " +
                                     std::string(hlo::op_name(kinds[j])) +
                                     (side ? " (s, x)" : " (x, s)") + " s " + std::to_string(wv) +
                                     " i " + std::to_string(i);
            if (std::isnan(want)) {
              ASSERT_TRUE(std::isnan(got)) << what;
              continue;
            }
            ASSERT_EQ(got, want) << what;
            // Which zero a max or min of -0 and +0 keeps is the order's (fmax_nan): not pinned.
            if (want != 0 || kinds[j] == OpKind::kAdd || kinds[j] == OpKind::kSubtract ||
                kinds[j] == OpKind::kMultiply || kinds[j] == OpKind::kDivide)
              ASSERT_EQ(std::signbit(got), std::signbit(want)) << what;
          }
    }
  }
}

// An in-place update, x = x + w * (y - x) with x's buffer also the output (torch's lerp_):
// over many chunks, the last instruction writes each element after every read of it, and a
// select on a scalar that picks that result writes it straight into the output.
TEST(ExecutorTest, AnInPlaceUpdateOverItsInputIsTheOpWrittenOut) {
  const hlo::Module m = hlo::parse_module(R"(
func.func @main(%x: tensor<4x3000xf32> {jax.buffer_donor = true}, %y: tensor<4x3000xf32>,
                %w: tensor<f32>) -> tensor<4x3000xf32> {
  %wb = stablehlo.broadcast_in_dim %w, dims = [] : (tensor<f32>) -> tensor<4x3000xf32>
  %half = stablehlo.constant dense<0.5> : tensor<4x3000xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4x3000xf32>
  %d = stablehlo.subtract %y, %x : tensor<4x3000xf32>
  %low = math.fma %wb, %d, %x : tensor<4x3000xf32>
  %wm1 = stablehlo.subtract %wb, %one : tensor<4x3000xf32>
  %high = math.fma %wm1, %d, %y : tensor<4x3000xf32>
  %aw = stablehlo.abs %wb : tensor<4x3000xf32>
  %lt = stablehlo.compare LT, %aw, %half : (tensor<4x3000xf32>, tensor<4x3000xf32>) -> tensor<4x3000xi1>
  %r = stablehlo.select %lt, %low, %high : tensor<4x3000xi1>, tensor<4x3000xf32>
  return %r : tensor<4x3000xf32>
})");
  LoadedExecutable exe(compiler::compile(m));
  const TensorType t(DType::kF32, {4, 3000}), s(DType::kF32, {});
  const auto xs = random_values(t.num_elements(), -3, 3, 47, DType::kF32),
             ys = random_values(t.num_elements(), -3, 3, 48, DType::kF32);
  for (double wv : {0.1, 0.9}) {
    HostTensor x = HostTensor::from_doubles(t, xs), y = HostTensor::from_doubles(t, ys),
               w = HostTensor::from_doubles(s, {wv});
    const std::vector<const void*> inputs{x.data.data(), y.data.data(), w.data.data()};
    const std::vector<void*> outputs{x.data.data()};
    exe.run(inputs, outputs);
    const auto wf = static_cast<float>(wv);
    for (std::int64_t i = 0; i < t.num_elements(); ++i) {
      const auto xf = static_cast<float>(xs[i]), yf = static_cast<float>(ys[i]);
      const float want = wf < 0.5f ? std::fma(wf, yf - xf, xf) : std::fma(wf - 1, yf - xf, yf);
      ASSERT_EQ(x.get(i), want) << "w " << wv << " i " << i;
    }
  }
}

// One loop with two outputs (two updates sharing a value computed per element),
// each given the buffer of an input it reads (the plan allows it: the loop reads both inputs
// elementwise and nothing reads them after it). The output computed first is written straight
// over its input only where no later instruction still reads that input: below, x * w lands in
// x's buffer while the second output still reads x, and must not be seen by it.
TEST(ExecutorTest, AnExtraOutputOverAnInputIsWrittenOnlyOnceNothingReadsIt) {
  for (bool x_read_last : {true, false}) {
    const std::string second = x_read_last ? "%x" : "%y";
    const hlo::Module m = hlo::parse_module(R"(
func.func @main(%x: tensor<3x2500xf32>, %y: tensor<3x2500xf32>, %w: tensor<f32>,
                %z: tensor<3x2500xf32>) -> (tensor<3x2500xf32>, tensor<3x2500xf32>) {
  %wb = stablehlo.broadcast_in_dim %w, dims = [] : (tensor<f32>) -> tensor<3x2500xf32>
  %w2 = stablehlo.multiply %wb, %z : tensor<3x2500xf32>
  %a = stablehlo.multiply %x, %w2 : tensor<3x2500xf32>
  %yw = stablehlo.multiply %y, %w2 : tensor<3x2500xf32>
  %b = stablehlo.add )" + second + R"(, %yw : tensor<3x2500xf32>
  return %a, %b : tensor<3x2500xf32>, tensor<3x2500xf32>
})");
    const compiler::Executable compiled = compiler::compile(m);
    int loops = 0;
    for (const compiler::Kernel& k : compiled.kernels)
      loops += k.kind == compiler::KernelKind::kFused;
    ASSERT_EQ(loops, 1);  // both outputs from one loop
    LoadedExecutable exe(compiled);
    const TensorType t(DType::kF32, {3, 2500}), s(DType::kF32, {});
    const auto xs = random_values(t.num_elements(), -3, 3, 49, DType::kF32),
               ys = random_values(t.num_elements(), -3, 3, 50, DType::kF32);
    HostTensor x = HostTensor::from_doubles(t, xs), y = HostTensor::from_doubles(t, ys),
               w = HostTensor::from_doubles(s, {0.75}),
               z = HostTensor::from_doubles(t, std::vector<double>(xs.size(), 2.0));
    const std::vector<const void*> inputs{x.data.data(), y.data.data(), w.data.data(),
                                          z.data.data()};
    const std::vector<void*> outputs{x.data.data(), y.data.data()};
    exe.run(inputs, outputs);
    for (std::int64_t i = 0; i < t.num_elements(); ++i) {
      const auto xf = static_cast<float>(xs[i]), yf = static_cast<float>(ys[i]);
      ASSERT_EQ(x.get(i), xf * 1.5f) << "x read last " << x_read_last << " i " << i;
      ASSERT_EQ(y.get(i), (x_read_last ? xf : yf) + yf * 1.5f)
          << "x read last " << x_read_last << " i " << i;
    }
  }
}

// A per-row value broadcast along its row (a softmax's max) is read one scalar per row, on
// either side of the op or as either multiplicand of an fma (log_softmax's gradient), with rows
// that do not divide a chunk (1000 elements), and still filled per element for an op that
// cannot take it so (a compare, eager subtract's fma(row, -alpha, x) with its scalar
// multiplicand, an fma adding it): every element is the arithmetic written out.
TEST(ExecutorTest, APerRowValueIsReadOneScalarPerRow) {
  for (DType d : {DType::kF32, DType::kF64}) {
    const TensorType t(d, {5, 1000}), r(d, {5});
    const auto xs = random_values(t.num_elements(), -3, 3, 51, d);
    const auto ms = random_values(r.num_elements(), 0.5, 2, 52, d);
    const TensorType scalar(d, {});
    const std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs),
                                        HostTensor::from_doubles(r, ms),
                                        HostTensor::from_doubles(scalar, {1.5})};
    auto f = [&](double v) { return d == DType::kF32 ? double(static_cast<float>(v)) : v; };
    // One loop per case: a broadcast read by one loop is that loop's load.
    auto fma = [&](double a, double b, double c) {
      return d == DType::kF32 ? double(std::fma(static_cast<float>(a), static_cast<float>(b),
                                                static_cast<float>(c)))
                              : std::fma(a, b, c);
    };
    for (int c = 0; c < 7; ++c) {
      Builder b;
      Value x = b.param(t), m = b.param(r), alpha = b.param(scalar);
      Value mb = b.broadcast_in_dim(m, t.dims, {0});
      Value out = c == 0   ? b.sub(mb, x)
                  : c == 1 ? b.div(x, mb)
                  : c == 2 ? b.select(b.compare(hlo::Comparison::kGT, x, mb), b.sub(x, mb), mb)
                  : c == 3 ? b.fma(mb, b.neg(b.broadcast_to(alpha, t.dims)), x)
                  : c == 4 ? b.fma(b.neg(x), mb, x)
                  : c == 5 ? b.fma(mb, b.neg(x), x)
                           : b.fma(x, x, mb);
      hlo::Module mod = b.finish({out});
      const auto got = run(mod, in, true);
      for (std::int64_t i = 0; i < t.num_elements(); ++i) {
        const double xv = in[0].get(i), mv = in[1].get(i / 1000);
        const double want = c == 0   ? f(mv - xv)
                            : c == 1 ? f(xv / mv)
                            : c == 2 ? (xv > mv ? f(xv - mv) : mv)
                            : c == 3 ? fma(mv, -1.5, xv)
                            : c == 4 ? fma(-xv, mv, xv)
                            : c == 5 ? fma(mv, -xv, xv)
                                     : fma(xv, xv, mv);
        ASSERT_EQ(got[0].get(i), want) << hlo::dtype_name(d) << " case " << c << " i " << i;
      }
    }
  }
}

// A table repeated along the domain (a norm's weight [300] over [4, 7, 300], a rotary table
// [7, 300] over the same) is read in place a run per repeat, on either side of the op, where the
// chunks start mid-table, and still filled per element where something else reads it so (a
// compare): every element is the arithmetic written out.
TEST(ExecutorTest, ARepeatedTableIsReadInPlace) {
  for (DType d : {DType::kF32, DType::kF64}) {
    const TensorType t(d, {4, 7, 300});
    const auto xs = random_values(t.num_elements(), -3, 3, 61, d);
    for (const Dims& table_dims : {Dims{300}, Dims{7, 300}}) {
      const TensorType w(d, table_dims);
      const auto ws = random_values(w.num_elements(), 0.5, 2, 62, d);
      const std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs),
                                          HostTensor::from_doubles(w, ws)};
      auto f = [&](double v) { return d == DType::kF32 ? double(static_cast<float>(v)) : v; };
      for (int c = 0; c < 7; ++c) {
        Builder b;
        Value x = b.param(t), wt = b.param(w);
        Value wb = b.broadcast_in_dim(wt, t.dims, table_dims.size() == 1 ? Dims{2} : Dims{1, 2});
        Value out = c == 0   ? b.mul(wb, x)
                    : c == 1 ? b.sub(wb, x)
                    : c == 2 ? b.div(x, wb)
                    : c == 3 ? b.div(wb, b.add(x, wb))
                    : c == 4 ? b.binary(OpKind::kMaximum, x, wb)
                    : c == 5 ? b.binary(OpKind::kMinimum, wb, x)
                             : b.select(b.compare(hlo::Comparison::kGT, x, wb), b.mul(x, wb), wb);
        const auto got = run(b.finish({out}), in, true);
        for (std::int64_t i = 0; i < t.num_elements(); ++i) {
          const double xv = in[0].get(i), wv = in[1].get(i % w.num_elements());
          const double want = c == 0   ? f(wv * xv)
                              : c == 1 ? f(wv - xv)
                              : c == 2 ? f(xv / wv)
                              : c == 3 ? f(wv / f(xv + wv))
                              : c == 4 ? std::max(xv, wv)
                              : c == 5 ? std::min(wv, xv)
                                       : (xv > wv ? f(xv * wv) : wv);
          ASSERT_EQ(got[0].get(i), want) << hlo::dtype_name(d) << " table " << table_dims.size()
                                         << "d, case " << c << " i " << i;
        }
      }
    }
  }
}

// A loop whose every instruction reads only scalars: computed once, spread over the output.
TEST(ExecutorTest, ALoopOfScalarsOnlyFillsItsOutput) {
  Builder b;
  TensorType t(DType::kF32, {5, 700}), s(DType::kF32, {});
  Value w = b.param(s);
  Value wb = b.broadcast_in_dim(w, t.dims, {});
  Value one = b.broadcast_in_dim(b.scalar(DType::kF32, 1), t.dims, {});
  hlo::Module m = b.finish({b.add(b.mul(wb, wb), one)});
  for (double wv : {1.5, -3.0}) {
    auto out = run(m, {HostTensor::from_doubles(s, {wv})});
    for (std::int64_t i = 0; i < t.num_elements(); ++i) ASSERT_EQ(out[0].get(i), wv * wv + 1) << i;
  }
}

// Scalars are computed on one element and spread over a chunk only where a per-element read
// needs them: here a scalar chain feeding a product, a select that picks a scalar as the loop's
// result, and a scalar returned as an extra output.
TEST(ExecutorTest, ScalarsReachEveryElementThatReadsThem) {
  Builder b;
  TensorType t(DType::kF32, {4, 900}), s(DType::kF32, {});
  Value x = b.param(t), w = b.param(s);
  auto spread = [&](Value v) { return b.broadcast_in_dim(v, t.dims, {}); };
  Value wb = spread(w);
  Value c = b.add(b.mul(wb, spread(b.scalar(DType::kF32, 2))), spread(b.scalar(DType::kF32, 1)));
  Value positive = b.compare(hlo::Comparison::kGT, wb, spread(b.scalar(DType::kF32, 0)));
  hlo::Module m = b.finish({b.mul(x, c), b.select(positive, c, x), c});
  const auto xs = random_values(t.num_elements(), -3, 3, 43, DType::kF32);
  for (double wv : {1.5, -2.0}) {
    std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs),
                                  HostTensor::from_doubles(s, {wv})};
    auto fused_out = run(m, in, true), unfused_out = run(m, in, false);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(fused_out[r].data, unfused_out[r].data) << "w " << wv;
    const double cv = wv * 2 + 1;
    for (std::int64_t i = 0; i < t.num_elements(); ++i) {
      ASSERT_EQ(fused_out[0].get(i), static_cast<float>(xs[i] * cv)) << "w " << wv << " i " << i;
      ASSERT_EQ(fused_out[1].get(i), wv > 0 ? cv : static_cast<float>(xs[i])) << "w " << wv;
      ASSERT_EQ(fused_out[2].get(i), cv) << "w " << wv << " i " << i;
    }
  }
}

}  // namespace
}  // namespace vtrn::runtime
