// The executor: dot_general, data movement, rng, complex64, fusion, threads and custom calls,
// against references computed here. Elementwise ops are tested in executor_elementwise_test.cc,
// reductions in executor_reduce_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;

TEST(ExecutorTest, DotGeneralBatchedAndTransposed) {
  for (DType d : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI32}) {
    // lhs [k=5, b=2, m=3], rhs [b=2, n=4, k=5] -> [b, m, n]
    Builder b;
    TensorType lt(d, {5, 2, 3}), rt(d, {2, 4, 5});
    Value l = b.param(lt), r = b.param(rt);
    hlo::Module m = b.finish({b.dot_general(l, r, hlo::DotDims{{1}, {0}, {0}, {2}})});
    const auto ls = random_values(30, -2, 2, 12, d), rs = random_values(40, -2, 2, 13, d);
    auto out = run(m, {HostTensor::from_doubles(lt, ls), HostTensor::from_doubles(rt, rs)});
    ASSERT_EQ(out[0].type.dims, (Dims{2, 3, 4}));
    for (int bb = 0; bb < 2; ++bb)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          double s = 0;
          for (int k = 0; k < 5; ++k) s += ls[(k * 2 + bb) * 3 + i] * rs[(bb * 4 + j) * 5 + k];
          const double got = out[0].get((bb * 3 + i) * 4 + j);
          if (d == DType::kI32 || d == DType::kF64)
            ASSERT_NEAR(got, s, 1e-12);
          else
            ASSERT_NEAR(got, s, tolerance(d) * 8 * std::max(1.0, std::fabs(s)));
        }
  }
}

TEST(ExecutorTest, TransposedDotOperandsFoldIntoTheDotWithTheSameResults) {
  // x^T @ y (a weight gradient) and a batched q @ k^T through explicit transposes: at O2 the
  // transposes become the dot's dimension numbers; at O0 they run. Reference: by hand.
  Builder b;
  TensorType xt(DType::kF32, {6, 3}), yt(DType::kF32, {6, 4}), kt(DType::kF32, {2, 5, 4});
  Value x = b.param(xt), y = b.param(yt), q = b.param(TensorType(DType::kF32, {2, 3, 4})),
        k = b.param(kt);
  Value w = b.matmul(b.transpose(x, {1, 0}), y);  // [3, 4]
  Value s = b.dot_general(q, b.transpose(k, {0, 2, 1}), hlo::DotDims{{0}, {0}, {2}, {1}});
  hlo::Module m = b.finish({w, s});  // s: [2, 3, 5]
  compiler::Executable folded = compiler::compile(m);
  for (const auto& kern : folded.kernels)
    for (int oi : kern.ops) EXPECT_NE(folded.module.main.ops[oi].kind, OpKind::kTranspose);
  compiler::CompileOptions o0;
  o0.opt_level = 0;
  const auto xs = random_values(18, -1, 1, 31, DType::kF32),
             ys = random_values(24, -1, 1, 32, DType::kF32),
             qs = random_values(24, -1, 1, 33, DType::kF32),
             ks = random_values(40, -1, 1, 34, DType::kF32);
  std::vector<HostTensor> in = {HostTensor::from_doubles(xt, xs), HostTensor::from_doubles(yt, ys),
                                HostTensor::from_doubles(TensorType(DType::kF32, {2, 3, 4}), qs),
                                HostTensor::from_doubles(kt, ks)};
  auto a = LoadedExecutable(std::move(folded)).run(in);
  auto c = LoadedExecutable(compiler::compile(m, o0)).run(in);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      double want = 0;
      for (int r = 0; r < 6; ++r) want += xs[r * 3 + i] * ys[r * 4 + j];
      ASSERT_NEAR(a[0].get(i * 4 + j), want, 1e-5);
      ASSERT_NEAR(c[0].get(i * 4 + j), want, 1e-5);
    }
  for (int bb = 0; bb < 2; ++bb)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        double want = 0;
        for (int d = 0; d < 4; ++d) want += qs[(bb * 3 + i) * 4 + d] * ks[(bb * 5 + j) * 4 + d];
        ASSERT_NEAR(a[1].get((bb * 3 + i) * 5 + j), want, 1e-5);
        ASSERT_NEAR(c[1].get((bb * 3 + i) * 5 + j), want, 1e-5);
      }
}

// Attention's p x v with v stored [b, s, h, d]: the dot reads v through strides (batch dims
// b, h not adjacent in memory). Also a free group of two dims that is one stride apart in lhs,
// and one that is not (lhs [m1, b, m2, k]: m1 and m2 straddle the batch dim), which is copied.
// Each equals the dot of the same operands made dense by a transpose that runs (O0), bit for
// bit, and the double-precision sum of products within float32's rounding.
TEST(ExecutorTest, DotGeneralReadsPermutedOperandsInPlace) {
  struct Case {
    Dims lhs, rhs;
    hlo::DotDims dims;
    Dims lhs_perm, rhs_perm;  // transposes that make each operand dense [batch..., free, k]
  };
  const std::vector<Case> cases = {
      // p [b=2, h=3, s=4, t=5] x v [b=2, t=5, h=3, d=6] -> [2, 3, 4, 6]
      {{2, 3, 4, 5},
       {2, 5, 3, 6},
       hlo::DotDims{{0, 1}, {0, 2}, {3}, {1}},
       {0, 1, 2, 3},
       {0, 2, 1, 3}},
      // x [b=2, m1=3, m2=4, k=5] x w [b=2, k=5, n=6]: m1, m2 one group -> [2, 3, 4, 6]
      {{2, 3, 4, 5}, {2, 5, 6}, hlo::DotDims{{0}, {0}, {3}, {1}}, {0, 1, 2, 3}, {0, 1, 2}},
      // x [m1=3, b=2, m2=4, k=5] x w [b=2, k=5, n=6] -> [2, 3, 4, 6]: m1, m2 not one stride
      {{3, 2, 4, 5}, {2, 5, 6}, hlo::DotDims{{1}, {0}, {3}, {1}}, {1, 0, 2, 3}, {0, 1, 2}},
  };
  for (DType d : {DType::kF32, DType::kBF16})
    for (const Case& c : cases) {
      TensorType lt(d, c.lhs), rt(d, c.rhs);
      auto build = [&](bool transposed_first) {
        Builder b;
        Value l = b.param(lt), r = b.param(rt);
        if (!transposed_first) return b.finish({b.dot_general(l, r, c.dims)});
        // The same product with each operand first made [batch..., free, k] / [batch..., k, n].
        Value lp = b.transpose(l, c.lhs_perm), rp = b.transpose(r, c.rhs_perm);
        const std::int64_t nb = static_cast<std::int64_t>(c.dims.lhs_batch.size());
        std::vector<std::int64_t> batch, lk, rk;
        for (std::int64_t i = 0; i < nb; ++i) batch.push_back(i);
        lk.push_back(static_cast<std::int64_t>(c.lhs.size()) - 1);
        rk.push_back(nb);
        return b.finish({b.dot_general(lp, rp, hlo::DotDims{batch, batch, lk, rk})});
      };
      const std::int64_t ln = lt.num_elements(), rn = rt.num_elements();
      const auto ls = random_values(ln, -1, 1, 41, d), rs = random_values(rn, -1, 1, 42, d);
      const std::vector<HostTensor> in = {HostTensor::from_doubles(lt, ls),
                                          HostTensor::from_doubles(rt, rs)};
      compiler::CompileOptions o0;
      o0.opt_level = 0;
      auto strided = LoadedExecutable(compiler::compile(build(false))).run(in);
      auto dense = LoadedExecutable(compiler::compile(build(true), o0)).run(in);
      ASSERT_EQ(strided[0].type, dense[0].type);
      ASSERT_EQ(strided[0].data, dense[0].data) << "case lhs rank " << c.lhs.size();
      // By hand: out[b, i, j] over the case's layouts, through the dense operands' index maps.
      const Dims& od = strided[0].type.dims;
      const std::int64_t k = c.lhs[c.dims.lhs_contracting[0]];
      const Dims lstr = kernels::strides_of(c.lhs), rstr = kernels::strides_of(c.rhs);
      const std::int64_t on = strided[0].type.num_elements();
      for (std::int64_t o = 0; o < on; ++o) {
        // Result index -> (batch..., free lhs..., free rhs...).
        Dims idx(od.size());
        for (std::int64_t rem = o, q = static_cast<std::int64_t>(od.size()) - 1; q >= 0; --q) {
          idx[q] = rem % od[q];
          rem /= od[q];
        }
        double want = 0;
        for (std::int64_t kk = 0; kk < k; ++kk) {
          Dims li(c.lhs.size(), -1), ri(c.rhs.size(), -1);
          std::size_t at = 0;
          for (std::size_t q = 0; q < c.dims.lhs_batch.size(); ++q, ++at) {
            li[c.dims.lhs_batch[q]] = idx[at];
            ri[c.dims.rhs_batch[q]] = idx[at];
          }
          li[c.dims.lhs_contracting[0]] = kk;
          ri[c.dims.rhs_contracting[0]] = kk;
          for (std::size_t q = 0; q < li.size(); ++q)
            if (li[q] < 0) li[q] = idx[at++];
          for (std::size_t q = 0; q < ri.size(); ++q)
            if (ri[q] < 0) ri[q] = idx[at++];
          std::int64_t lo = 0, ro = 0;
          for (std::size_t q = 0; q < li.size(); ++q) lo += li[q] * lstr[q];
          for (std::size_t q = 0; q < ri.size(); ++q) ro += ri[q] * rstr[q];
          want += ls[static_cast<std::size_t>(lo)] * rs[static_cast<std::size_t>(ro)];
        }
        const double tol = d == DType::kBF16 ? tolerance(d) * 4 : 1e-5;
        ASSERT_NEAR(strided[0].get(o), want, tol * std::max(1.0, std::fabs(want)))
            << "element " << o;
      }
    }
}

TEST(ExecutorTest, Bf16DotIsRoundedFloat32Result) {
  // Small integers: every product and sum is exact in float32, so the bf16 result must be the
  // round-to-nearest-even of the exact sum.
  Builder b;
  TensorType lt(DType::kBF16, {2, 3}), rt(DType::kBF16, {3, 2});
  Value l = b.param(lt), r = b.param(rt);
  hlo::Module m = b.finish({b.matmul(l, r)});
  const std::vector<double> ls = {100, 3, 7, -5, 2, 9}, rs = {1, 2, 3, 5, 11, 1};
  auto out = run(m, {HostTensor::from_doubles(lt, ls), HostTensor::from_doubles(rt, rs)});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      double s = 0;
      for (int k = 0; k < 3; ++k) s += ls[i * 3 + k] * rs[k * 2 + j];
      EXPECT_EQ(out[0].get(i * 2 + j), ref_round(DType::kBF16, s));
    }
}

// torch.stack((a, b), dim=-1): a concatenate of two [..., 1] operands along the last dim,
// interleaved in one pass for 4-byte elements (float32 and int32), on one thread and on two
// (100000 pairs split into ranges); other element sizes take the strided copies.
TEST(ExecutorTest, StackingTwoAlongANewLastDimInterleavesThem) {
  const int threads_before = executor_threads();
  for (DType d : {DType::kF32, DType::kI32, DType::kF64})
    for (std::int64_t n : {7, 100000})
      for (int threads : {1, 2}) {
        set_executor_threads(threads);
        const TensorType t(d, {n, 1});
        Builder b;
        const hlo::Module m = b.finish({b.concatenate({b.param(t), b.param(t)}, 1)});
        std::vector<double> xs(static_cast<std::size_t>(n)), ys(xs.size());
        for (std::size_t i = 0; i < xs.size(); ++i) {
          xs[i] = static_cast<double>(i % 1000) - 500;
          ys[i] = static_cast<double>(i % 777) + 0.0;
        }
        const auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys)});
        ASSERT_EQ(out[0].type.dims, (Dims{n, 2}));
        for (std::int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(out[0].get(2 * i), xs[static_cast<std::size_t>(i)]) << i;
          ASSERT_EQ(out[0].get(2 * i + 1), ys[static_cast<std::size_t>(i)]) << i;
        }
      }
  set_executor_threads(threads_before);
}

TEST(ExecutorTest, DataMovement) {
  Builder b;
  TensorType t(DType::kF32, {3, 4});
  Value x = b.param(t);
  Value one = b.scalar(DType::kI32, 1), big = b.scalar(DType::kI32, 7);
  Value tr = b.transpose(x, {1, 0});
  Value sl = b.slice(x, {0, 1}, {3, 4}, {2, 2});
  Value pd = b.pad(x, b.scalar(DType::kF32, -1), {1, 0}, {0, -1}, {0, 1});
  Value cc = b.concatenate({x, x}, 1);
  Value rv = b.reverse(x, {0, 1});
  Value ds = b.dynamic_slice(x, {one, big}, {2, 2});  // column start clamped to 2
  Value us = b.dynamic_update_slice(x, b.slice(x, {0, 0}, {1, 2}), {big, one});  // row clamped to 2
  Value io = b.iota(TensorType(DType::kI32, {2, 3}), 1);
  Value bc = b.broadcast_in_dim(b.slice(x, {0, 0}, {1, 4}), {2, 3, 4}, {1, 2});
  Value rs = b.reshape(x, {2, 6});
  hlo::Module m = b.finish({tr, sl, pd, cc, rv, ds, us, io, bc, rs});
  std::vector<double> xs(12);
  for (int i = 0; i < 12; ++i) xs[i] = i + 1;
  auto X = [&](int i, int j) { return xs[i * 4 + j]; };
  auto out = run(m, {HostTensor::from_doubles(t, xs)});
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(out[0].get(i * 3 + j), X(j, i));
  EXPECT_EQ(out[1].type.dims, (Dims{2, 2}));
  EXPECT_EQ(out[1].get(0), X(0, 1));
  EXPECT_EQ(out[1].get(3), X(2, 3));
  // pad: rows 1 low, cols interior 1 then high -1: [4, 6].
  ASSERT_EQ(out[2].type.dims, (Dims{4, 6}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) {
      const double want = (i >= 1 && j % 2 == 0) ? X(i - 1, j / 2) : -1;
      EXPECT_EQ(out[2].get(i * 6 + j), want) << i << "," << j;
    }
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 8; ++j) EXPECT_EQ(out[3].get(i * 8 + j), X(i, j % 4));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(out[4].get(i * 4 + j), X(2 - i, 3 - j));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) EXPECT_EQ(out[5].get(i * 2 + j), X(1 + i, 2 + j));
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(out[6].get(i * 4 + j), (i == 2 && (j == 1 || j == 2)) ? X(0, j - 1) : X(i, j));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[7].get(i), i % 3);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out[8].get(i), X(0, i % 4));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[9].get(i), xs[i]);
}

TEST(ExecutorTest, GatherScatterSort) {
  Builder b;
  TensorType t(DType::kF32, {5, 3});
  TensorType it(DType::kI32, {4, 1});
  Value x = b.param(t);
  Value idx = b.param(it);
  Value g = b.gather(x, idx, hlo::GatherDims{{1}, {0}, {0}, 1}, {1, 3});
  Value upd = b.param(TensorType(DType::kF32, {4, 3}));
  Value sa = b.scatter(x, idx, upd, hlo::ScatterDims{{1}, {0}, {0}, 1}, hlo::ScatterKind::kAdd);
  Value sr = b.scatter(x, idx, upd, hlo::ScatterDims{{1}, {0}, {0}, 1}, hlo::ScatterKind::kReplace);
  auto sorted = b.sort({x, b.iota(TensorType(DType::kI32, {5, 3}), 0)}, 0, 0, /*descending=*/true);
  hlo::Module m = b.finish({g, sa, sr, sorted[0], sorted[1]});
  const std::vector<double> xs = {5, 1, 9, 2, 8, 3, 7, 7, 7, 0, 4, 6, 3, 2, 1};
  const std::vector<double> is = {4, 0, 4, 9};  // 9 is out of bounds: gather clamps, scatter skips
  std::vector<double> us(12);
  for (int i = 0; i < 12; ++i) us[i] = 10 * (i + 1);
  auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(it, is),
                     HostTensor::from_doubles(TensorType(DType::kF32, {4, 3}), us)});
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(out[0].get(r * 3 + c), xs[std::min<int>(static_cast<int>(is[r]), 4) * 3 + c]);
  std::vector<double> add = xs, rep = xs;
  for (int r = 0; r < 4; ++r) {
    if (is[r] > 4) continue;
    for (int c = 0; c < 3; ++c) {
      add[static_cast<std::size_t>(is[r] * 3 + c)] += us[r * 3 + c];
      rep[static_cast<std::size_t>(is[r] * 3 + c)] = us[r * 3 + c];
    }
  }
  for (int i = 0; i < 15; ++i) {
    EXPECT_EQ(out[1].get(i), add[i]);
    EXPECT_EQ(out[2].get(i), rep[i]);
  }
  // Descending stable sort of each column, with the original row as payload.
  for (int c = 0; c < 3; ++c) {
    std::vector<std::pair<double, int>> col;
    for (int r = 0; r < 5; ++r) col.push_back({xs[r * 3 + c], r});
    std::stable_sort(col.begin(), col.end(), [](auto& a, auto& b2) { return a.first > b2.first; });
    for (int r = 0; r < 5; ++r) {
      EXPECT_EQ(out[3].get(r * 3 + c), col[r].first);
      EXPECT_EQ(out[4].get(r * 3 + c), col[r].second);
    }
  }
}

TEST(ExecutorTest, ScatterMultipliesAndTakesExtremes) {
  // Three updates into element 1 and one into element 3, out of range (9) dropped; NaN
  // propagates through maximum and minimum; int64 extremes compare exactly.
  for (DType d : {DType::kF32, DType::kBF16, DType::kI64}) {
    Builder b;
    TensorType t(d, {4});
    TensorType it(DType::kI64, {5, 1});
    Value x = b.param(t), idx = b.param(it), upd = b.param(TensorType(d, {5}));
    const hlo::ScatterDims dims{{}, {0}, {0}, 1};
    hlo::Module m = b.finish({b.scatter(x, idx, upd, dims, hlo::ScatterKind::kMul),
                              b.scatter(x, idx, upd, dims, hlo::ScatterKind::kMax),
                              b.scatter(x, idx, upd, dims, hlo::ScatterKind::kMin)});
    const bool f = hlo::is_float(d);
    const double nan = std::nan("");
    const std::vector<double> xs = {1, 2, 3, 4}, is = {1, 1, 3, 9, 1};
    const std::vector<double> us = {3, -5, f ? nan : 7, 100, 0.5 * f + 2 * !f};
    auto out = run(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(it, is),
                       HostTensor::from_doubles(TensorType(d, {5}), us)});
    const double u4 = us[4];
    const std::vector<double> mul = {1, 2 * 3 * -5 * u4, 3, f ? nan : 28};
    const std::vector<double> max = {1, 3, 3, f ? nan : 7}, min = {1, -5, 3, f ? nan : 4};
    for (int i = 0; i < 4; ++i) {
      for (auto [k, want] : {std::pair{0, mul[i]}, {1, max[i]}, {2, min[i]}}) {
        const double got = out[static_cast<std::size_t>(k)].get(i);
        if (std::isnan(want))
          EXPECT_TRUE(std::isnan(got)) << k << " " << i;
        else
          EXPECT_EQ(got, want) << k << " " << i;
      }
    }
  }
}

TEST(ExecutorTest, RngBitGeneratorIsDeterministicAndAdvances) {
  Builder b;
  TensorType st(DType::kU64, {2});
  Value s = b.param(st);
  auto [ns, bits] = b.rng_bit_generator(s, TensorType(DType::kU32, {1000}));
  hlo::Module m = b.finish({ns, bits});
  HostTensor state(st);
  state.as<std::uint64_t>()[0] = 42;
  state.as<std::uint64_t>()[1] = 7;
  auto a = run(m, {state});
  auto c = run(m, {state});
  EXPECT_EQ(a[1].data, c[1].data);
  // 1000 words are 250 blocks: the counter advances by 250.
  EXPECT_EQ(a[0].as<std::uint64_t>()[1], 257u);
  // Roughly uniform: mean of 1000 uint32 within 10% of 2^31.
  double mean = 0;
  for (int i = 0; i < 1000; ++i) mean += a[1].as<std::uint32_t>()[i];
  mean /= 1000;
  EXPECT_NEAR(mean / 2147483648.0, 1.0, 0.1);
  auto d = run(m, {a[0]});
  EXPECT_NE(d[1].data, a[1].data);
}

// Known answers for Philox-4x32-10 from Random123's kat_vectors (counter[4], key[2] -> out[4]).
TEST(ExecutorTest, PhiloxMatchesRandom123KnownAnswers) {
  struct Kat {
    std::uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    std::uint32_t out[4];
    kernels::philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i)
      EXPECT_EQ(out[i], k.out[i]) << std::hex << "ctr[0]=" << k.ctr[0] << " word " << i;
  }
  // Through the op: state {key = 0, counter = 0} gives the first vector as its first 4 words,
  // and the second block is Philox of counter {1, 0, 0, 0} (XLA's counter + block index).
  Builder b;
  TensorType st(DType::kU64, {2});
  Value s = b.param(st);
  auto [ns, bits] = b.rng_bit_generator(s, TensorType(DType::kU32, {8}));
  hlo::Module m = b.finish({ns, bits});
  auto out = run(m, {HostTensor(st)});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[1].as<std::uint32_t>()[i], kats[0].out[i]) << i;
  const std::uint32_t ctr1[4] = {1, 0, 0, 0}, key0[2] = {0, 0};
  std::uint32_t block1[4];
  kernels::philox4x32_10(ctr1, key0, block1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[1].as<std::uint32_t>()[4 + i], block1[i]) << i;
}

// complex64: arithmetic and dot_general are rejected with an error naming complex64; data
// movement (a dtype-agnostic copy of 8-byte elements) runs.
TEST(ExecutorTest, Complex64ArithmeticIsRejectedAndDataMovementRuns) {
  TensorType t(DType::kC64, {2, 3});
  HostTensor x(t);
  for (int i = 0; i < 6; ++i) {
    x.as<float>()[2 * i] = static_cast<float>(i);           // real
    x.as<float>()[2 * i + 1] = static_cast<float>(10 + i);  // imaginary
  }
  for (OpKind k : {OpKind::kAdd, OpKind::kSubtract, OpKind::kMultiply}) {
    Builder b;
    Value p = b.param(t), q = b.param(t);
    hlo::Module m = b.finish({b.binary(k, p, q)});
    try {
      run(m, {x, x});
      ADD_FAILURE() << hlo::op_name(k) << " on complex64 ran";
    } catch (const ExecError& e) {
      EXPECT_NE(std::string(e.what()).find("complex64"), std::string::npos) << e.what();
    }
  }
  {
    Builder b;
    Value p = b.param(t);
    hlo::Module m = b.finish({b.unary(OpKind::kNegate, p)});
    EXPECT_THROW(run(m, {x}), ExecError);
  }
  {
    Builder b;
    Value p = b.param(t), q = b.param(TensorType(DType::kC64, {3, 2}));
    hlo::Module m = b.finish({b.matmul(p, q)});
    try {
      run(m, {x, HostTensor(TensorType(DType::kC64, {3, 2}))});
      ADD_FAILURE() << "dot_general on complex64 ran";
    } catch (const ExecError& e) {
      EXPECT_NE(std::string(e.what()).find("complex64"), std::string::npos) << e.what();
    }
  }
  Builder b;
  Value p = b.param(t);
  hlo::Module m = b.finish({b.transpose(p, {1, 0}), b.reverse(p, {1})});
  auto out = run(m, {x});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j) {
      EXPECT_EQ(out[0].as<float>()[2 * (i * 2 + j)], static_cast<float>(j * 3 + i));
      EXPECT_EQ(out[0].as<float>()[2 * (i * 2 + j) + 1], static_cast<float>(10 + j * 3 + i));
      EXPECT_EQ(out[1].as<float>()[2 * (j * 3 + i)], static_cast<float>(j * 3 + (2 - i)));
    }
}

TEST(ExecutorTest, FiveOpChainFusesIntoOneKernelWithSameResults) {
  for (DType d : {DType::kF32, DType::kBF16}) {
    Builder b;
    TensorType t(d, {300, 70});
    Value x = b.param(t), y = b.param(t);
    // ((x * y + x) - 0.5) max 0, then exp: 5 elementwise ops (the constant is broadcast).
    Value half = b.broadcast_in_dim(b.scalar(d, 0.5), t.dims, {});
    Value v = b.exp(
        b.max(b.sub(b.add(b.mul(x, y), x), half), b.broadcast_in_dim(b.scalar(d, 0), t.dims, {})));
    hlo::Module m = b.finish({v});
    compiler::Executable fused = compiler::compile(m);
    int fused_kernels = 0;
    for (const auto& k : fused.kernels) fused_kernels += k.kind != compiler::KernelKind::kConstant;
    EXPECT_EQ(fused_kernels, 1);
    compiler::CompileOptions off;
    off.fusion = false;
    compiler::Executable unfused = compiler::compile(m, off);
    EXPECT_GE(unfused.kernels.size(), 5u);
    const auto xs = random_values(t.num_elements(), -1, 1, 21, d),
               ys = random_values(t.num_elements(), -1, 1, 22, d);
    std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ys)};
    auto a = LoadedExecutable(std::move(fused)).run(in);
    auto c = LoadedExecutable(std::move(unfused)).run(in);
    EXPECT_EQ(a[0].data, c[0].data);  // bit-identical: each op rounds to its dtype either way
    for (std::int64_t i = 0; i < t.num_elements(); ++i) {
      const double want = std::exp(std::max(xs[i] * ys[i] + xs[i] - 0.5, 0.0));
      ASSERT_NEAR(a[0].get(i), want, tolerance(d) * 4 * want) << i;
    }
  }
}

TEST(ExecutorTest, SoftmaxRowFusesReduceAndRunsOnTwoThreads) {
  // exp(x - max) / sum: large enough to use the parallel path.
  Builder b;
  TensorType t(DType::kF32, {512, 256});
  Value x = b.param(t);
  Value mx = b.reduce(x, b.scalar(DType::kF32, -INFINITY), {1}, hlo::ReduceKind::kMax);
  Value e = b.exp(b.sub(x, b.broadcast_in_dim(mx, t.dims, {0})));
  Value s = b.reduce(e, b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
  Value y = b.div(e, b.broadcast_in_dim(s, t.dims, {0}));
  hlo::Module m = b.finish({y});
  const auto xs = random_values(t.num_elements(), -5, 5, 31, DType::kF32);
  auto out = run(m, {HostTensor::from_doubles(t, xs)});
  for (int r = 0; r < 512; r += 37) {
    double mxv = -INFINITY, sum = 0;
    for (int c = 0; c < 256; ++c) mxv = std::max(mxv, xs[r * 256 + c]);
    for (int c = 0; c < 256; ++c) sum += std::exp(xs[r * 256 + c] - mxv);
    for (int c = 0; c < 256; ++c)
      ASSERT_NEAR(out[0].get(r * 256 + c), std::exp(xs[r * 256 + c] - mxv) / sum, 1e-6);
  }
}

TEST(ExecutorTest, CustomCallRegistry) {
  register_custom_call("test.double_it", [](const CustomCallArgs& a) {
    const auto* in = static_cast<const float*>(a.inputs[0]);
    auto* out = static_cast<float*>(a.outputs[0]);
    for (std::int64_t i = 0; i < a.input_types[0].num_elements(); ++i) out[i] = 2 * in[i];
  });
  Builder b;
  TensorType t(DType::kF32, {3});
  Value x = b.param(t);
  hlo::Module m = b.finish({b.custom_call("test.double_it", {x}, {t})[0]});
  auto out = run(m, {HostTensor::from_doubles(t, {1, 2, 3})});
  EXPECT_EQ(out[0].get(2), 6);
  Builder b2;
  Value x2 = b2.param(t);
  hlo::Module m2 = b2.finish({b2.custom_call("test.unknown", {x2}, {t})[0]});
  EXPECT_THROW(run(m2, {HostTensor::from_doubles(t, {1, 2, 3})}), ExecError);
}

}  // namespace
}  // namespace vtrn::runtime
