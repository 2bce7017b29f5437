// Matmul epilogues (a dot_general and the elementwise ops that read only its result form one
// kernel) and row chains (a softmax's or a norm's loops run row block by row block): results
// bit-identical to the unfused kernels' and close to a double reference.
#include <cmath>

#include "vtrn/runtime/executor_kernels.h"
#include "vtrn/runtime/executor_test_util.h"

namespace vtrn::runtime {
namespace {

using namespace test;  // NOLINT(google-build-using-namespace)

int count_kind(const compiler::Executable& exe, compiler::KernelKind kind) {
  int n = 0;
  for (const compiler::Kernel& k : exe.kernels) n += k.kind == kind;
  return n;
}

// The kernel holding op |op|.
const compiler::Kernel& kernel_of(const compiler::Executable& exe, int op) {
  for (const compiler::Kernel& k : exe.kernels)
    for (int i : k.ops)
      if (i == op) return k;
  throw std::runtime_error("op in no kernel");
}

// Runs |m| fused and unfused and requires the same bytes.
std::vector<HostTensor> run_both(const hlo::Module& m, const std::vector<HostTensor>& in) {
  auto fused = run(m, in, true), unfused = run(m, in, false);
  EXPECT_EQ(fused.size(), unfused.size());
  for (std::size_t i = 0; i < fused.size(); ++i) EXPECT_EQ(fused[i].data, unfused[i].data) << i;
  return fused;
}

TEST(EpilogueTest, BiasGeluConvertIsOneKernelAndBitIdentical) {
  // y = convert(tanh((x w + bias) * 0.5), out): the bias, scale, activation and convert run on
  // the dot's result inside the dot's kernel.
  for (DType d : {DType::kF32, DType::kBF16}) {
    for (DType out : {DType::kF32, DType::kBF16}) {
      const std::int64_t M = 96, K = 80, N = 72;
      Builder b;
      Value x = b.param(TensorType(d, {M, K})), w = b.param(TensorType(d, {K, N}));
      Value bias = b.param(TensorType(d, {N}));
      Value h = b.add(b.matmul(x, w), b.broadcast_in_dim(bias, {M, N}, {1}));
      Value a = b.unary(OpKind::kTanh, b.mul(h, b.broadcast_in_dim(b.scalar(d, 0.5), {M, N}, {})));
      hlo::Module m = b.finish({b.convert(a, out)});
      const compiler::Executable exe = compiler::compile(m);
      EXPECT_EQ(count_kind(exe, compiler::KernelKind::kFused), 1);
      EXPECT_EQ(count_kind(exe, compiler::KernelKind::kOp), 0);
      const auto xs = random_values(M * K, -1, 1, 1, d), ws = random_values(K * N, -1, 1, 2, d),
                 bs = random_values(N, -1, 1, 3, d);
      auto res = run_both(m, {HostTensor::from_doubles(TensorType(d, {M, K}), xs),
                              HostTensor::from_doubles(TensorType(d, {K, N}), ws),
                              HostTensor::from_doubles(TensorType(d, {N}), bs)});
      for (std::int64_t i = 0; i < M; i += 7)
        for (std::int64_t j = 0; j < N; j += 5) {
          double acc = 0;
          for (std::int64_t k = 0; k < K; ++k) acc += xs[i * K + k] * ws[k * N + j];
          const double want = std::tanh((acc + bs[j]) * 0.5);
          // Each of the dot, add, multiply, tanh and convert rounds once.
          const double tol = d == DType::kF32 && out == DType::kF32
                                 ? 1e-5
                                 : 6 * std::max(tolerance(d), tolerance(out));
          ASSERT_NEAR(res[0].get(i * N + j), want, tol) << i << "," << j;
        }
    }
  }
}

TEST(EpilogueTest, BatchedTransposedDotWithReduceRoot) {
  // sum over n of exp(q k^T * s): batch 3, k read transposed through the dimension numbers.
  const std::int64_t B = 3, M = 40, K = 24, N = 36;
  Builder b;
  Value q = b.param(TensorType(DType::kF32, {B, M, K}));
  Value k = b.param(TensorType(DType::kF32, {B, N, K}));
  hlo::DotDims dims;
  dims.lhs_batch = {0};
  dims.rhs_batch = {0};
  dims.lhs_contracting = {2};
  dims.rhs_contracting = {2};
  Value s = b.dot_general(q, k, dims);
  Value e = b.exp(b.mul(s, b.broadcast_in_dim(b.scalar(DType::kF32, 0.25), {B, M, N}, {})));
  Value r = b.reduce(e, b.scalar(DType::kF32, 0), {2}, hlo::ReduceKind::kAdd);
  hlo::Module m = b.finish({r});
  const compiler::Executable exe = compiler::compile(m);
  EXPECT_EQ(count_kind(exe, compiler::KernelKind::kFused), 1);
  EXPECT_EQ(count_kind(exe, compiler::KernelKind::kOp), 0);
  const auto qs = random_values(B * M * K, -1, 1, 4, DType::kF32),
             ks = random_values(B * N * K, -1, 1, 5, DType::kF32);
  auto res = run_both(m, {HostTensor::from_doubles(TensorType(DType::kF32, {B, M, K}), qs),
                          HostTensor::from_doubles(TensorType(DType::kF32, {B, N, K}), ks)});
  for (std::int64_t bb = 0; bb < B; ++bb)
    for (std::int64_t i = 0; i < M; i += 3) {
      double want = 0;
      for (std::int64_t j = 0; j < N; ++j) {
        double acc = 0;
        for (std::int64_t kk = 0; kk < K; ++kk)
          acc += qs[(bb * M + i) * K + kk] * ks[(bb * N + j) * K + kk];
        want += std::exp(acc * 0.25);
      }
      ASSERT_NEAR(res[0].get(bb * M + i), want, 1e-5 * want);
    }
}

TEST(EpilogueTest, WhatStaysOutside) {
  // The dot's result is also returned: no epilogue. An operand of the dot that the epilogue
  // reads too is computed before the kernel, never inside it.
  const std::int64_t M = 32;
  const TensorType t(DType::kF32, {M, M});
  {
    Builder b;
    Value x = b.param(t), w = b.param(t);
    Value h = b.matmul(x, w);
    hlo::Module m = b.finish({h, b.exp(h)});
    const compiler::Executable exe = compiler::compile(m);
    EXPECT_EQ(kernel_of(exe, 0).kind, compiler::KernelKind::kOp);
  }
  {
    Builder b;
    Value x = b.param(t), w = b.param(t);
    Value ex = b.exp(x);  // op 0
    Value h = b.matmul(ex, w);
    hlo::Module m = b.finish({b.add(h, ex)});
    const compiler::Executable exe = compiler::compile(m);
    EXPECT_EQ(kernel_of(exe, 0).ops, std::vector<int>{0});       // exp alone
    EXPECT_EQ(kernel_of(exe, 1).ops, (std::vector<int>{1, 2}));  // dot + add
    const auto xs = random_values(M * M, -1, 1, 6, DType::kF32),
               ws = random_values(M * M, -1, 1, 7, DType::kF32);
    auto res = run_both(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, ws)});
    double acc = 0;
    for (std::int64_t k = 0; k < M; ++k) acc += std::exp(xs[k]) * ws[k * M + 1];
    EXPECT_NEAR(res[0].get(1), acc + std::exp(xs[1]), 1e-5);
  }
  {
    // Two dots into one add: one heads the kernel, the other runs before it.
    Builder b;
    Value x = b.param(t), w = b.param(t), v = b.param(t);
    hlo::Module m = b.finish({b.add(b.matmul(x, w), b.matmul(x, v))});
    const compiler::Executable exe = compiler::compile(m);
    EXPECT_EQ(count_kind(exe, compiler::KernelKind::kFused), 1);
    EXPECT_EQ(count_kind(exe, compiler::KernelKind::kOp), 1);
    const auto xs = random_values(M * M, -1, 1, 8, DType::kF32);
    auto res = run_both(m, {HostTensor::from_doubles(t, xs), HostTensor::from_doubles(t, xs),
                            HostTensor::from_doubles(t, xs)});
    double acc = 0;
    for (std::int64_t k = 0; k < M; ++k) acc += xs[k] * xs[k * M];
    EXPECT_NEAR(res[0].get(0), 2 * acc, 1e-5);
  }
  {
    // Integer and float64 dots keep their own kernel.
    Builder b;
    const TensorType ti(DType::kI32, {M, M}), td(DType::kF64, {M, M});
    Value xi = b.param(ti), xd = b.param(td);
    hlo::Module m = b.finish({b.add(b.matmul(xi, xi), xi), b.add(b.matmul(xd, xd), xd)});
    const compiler::Executable exe = compiler::compile(m);
    EXPECT_EQ(count_kind(exe, compiler::KernelKind::kOp), 2);
  }
}

TEST(EpilogueTest, FusedKernelIsChargedOnce) {
  // The fused kernel moves x, w, bias and y; unfused, the dot's result also goes to HBM and
  // back, and each kernel pays the DMA start cost.
  const std::int64_t M = 256, K = 256, N = 512;
  Builder b;
  Value x = b.param(TensorType(DType::kF32, {M, K})), w = b.param(TensorType(DType::kF32, {K, N}));
  Value bias = b.param(TensorType(DType::kF32, {N}));
  hlo::Module m = b.finish({b.add(b.matmul(x, w), b.broadcast_in_dim(bias, {M, N}, {1}))});
  const compiler::Executable exe = compiler::compile(m);
  const compiler::Kernel& k = kernel_of(exe, 0);
  ASSERT_EQ(k.kind, compiler::KernelKind::kFused);
  const double bytes = static_cast<double>((M * K + K * N + N + M * N) * 4);
  EXPECT_NEAR(k.cost.dma_s, bytes / 362.5e9, 1e-15);
  EXPECT_DOUBLE_EQ(k.cost.flops, 2.0 * M * N * K);
  EXPECT_NEAR(k.cost.vector_s, static_cast<double>(M * N) / 1e12, 1e-15);
  compiler::CompileOptions off;
  off.fusion = false;
  const compiler::Executable unfused = compiler::compile(m, off);
  EXPECT_LT(exe.modeled_time_s(), unfused.modeled_time_s() - 1.3e-6);
}

// The row chains the executor would form from |m|'s kernels: how many fused loops each holds.
std::vector<std::size_t> chain_lengths(const hlo::Module& m) {
  const compiler::Executable exe = compiler::compile(m);
  const hlo::Block& b = exe.module.main;
  std::vector<const hlo::Literal*> constant_of(b.types.size(), nullptr);
  for (const hlo::Op& op : b.ops)
    if (op.kind == OpKind::kConstant) constant_of[op.results[0]] = &op.literal;
  // Fused loops (dot-free), nullptr for a reshape; other kernels end a chain.
  std::vector<std::unique_ptr<kernels::FusedProgram>> loops;
  std::vector<int> reshape_op;
  for (const compiler::Kernel& k : exe.kernels) {
    if (k.kind == compiler::KernelKind::kConstant) continue;
    const bool fused =
        k.kind == compiler::KernelKind::kFused && b.ops[k.ops.front()].kind != OpKind::kDotGeneral;
    loops.push_back(fused ? std::make_unique<kernels::FusedProgram>(b, k.ops, constant_of)
                          : nullptr);
    reshape_op.push_back(k.kind == compiler::KernelKind::kBitcast ? k.ops[0] : -1);
  }
  std::vector<std::size_t> lengths;
  for (std::size_t i = 0; i < loops.size(); ++i) {
    if (!loops[i] || !loops[i]->reduces()) continue;
    std::vector<const kernels::FusedProgram*> run{loops[i].get()};
    std::vector<std::vector<std::pair<int, int>>> bitcasts(1);
    std::size_t n = 0, end = i;
    for (std::size_t j = i + 1; j < loops.size(); ++j) {
      if (reshape_op[j] >= 0) {
        const hlo::Op& op = b.ops[reshape_op[j]];
        bitcasts.back().emplace_back(op.results[0], op.operands[0]);
        continue;
      }
      if (!loops[j]) break;
      run.push_back(loops[j].get());
      bitcasts.emplace_back();
      if (!kernels::RowChain::make(b, run, bitcasts)) break;
      n = run.size();
      end = j;
    }
    if (n > 0) {
      lengths.push_back(n);
      i = end;
    }
  }
  return lengths;
}

hlo::Module softmax(DType d, std::int64_t rows, std::int64_t cols) {
  Builder b;
  TensorType t(d, {rows, cols});
  Value x = b.param(t);
  Value mx = b.reduce(x, b.scalar(d, -INFINITY), {1}, hlo::ReduceKind::kMax);
  Value e = b.exp(b.sub(x, b.broadcast_in_dim(mx, t.dims, {0})));
  Value s = b.reduce(e, b.scalar(d, 0), {1}, hlo::ReduceKind::kAdd);
  return b.finish({b.div(e, b.broadcast_in_dim(s, t.dims, {0}))});
}

TEST(RowChainTest, SoftmaxRunsAsOneChainWithTheSameBytes) {
  for (DType d : {DType::kF32, DType::kBF16}) {
    // 300 rows of 700: blocks of 23 rows, split over threads; and one row longer than a block.
    for (auto [rows, cols] : {std::pair<std::int64_t, std::int64_t>{300, 700}, {3, 40000}}) {
      hlo::Module m = softmax(d, rows, cols);
      // max | exp(x - max) | sum | divide: all four loops in one chain.
      EXPECT_EQ(chain_lengths(m), std::vector<std::size_t>{4});
      const TensorType t(d, {rows, cols});
      const auto xs = random_values(rows * cols, -4, 4, 9, d);
      auto out = run_both(m, {HostTensor::from_doubles(t, xs)});
      for (std::int64_t r = 0; r < rows; r += 37) {
        double mx = -INFINITY, sum = 0;
        for (std::int64_t c = 0; c < cols; ++c) mx = std::max(mx, xs[r * cols + c]);
        for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(xs[r * cols + c] - mx);
        for (std::int64_t c = 0; c < cols; c += 11) {
          const double want = std::exp(xs[r * cols + c] - mx) / sum;
          ASSERT_NEAR(out[0].get(r * cols + c), want, 4 * tolerance(d) * want + 1e-9);
        }
      }
    }
  }
}

TEST(RowChainTest, RmsNormAndInPlaceOutput) {
  // x * rsqrt(mean(x^2) + eps) * w, with the mean reshaped to [rows, 1] before its broadcast.
  const std::int64_t rows = 256, cols = 384;
  const TensorType t(DType::kF32, {rows, cols});
  Builder b;
  Value x = b.param(t), w = b.param(TensorType(DType::kF32, {cols}));
  Value ss = b.reduce(b.mul(x, x), b.scalar(DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
  Value inv = b.unary(OpKind::kRsqrt,
                      b.add(b.div(ss, b.broadcast_in_dim(b.scalar(DType::kF32, cols), {rows}, {})),
                            b.broadcast_in_dim(b.scalar(DType::kF32, 1e-6), {rows}, {})));
  Value inv2 = b.reshape(inv, {rows, 1});
  Value y =
      b.mul(b.mul(x, b.broadcast_in_dim(inv2, t.dims, {0, 1})), b.broadcast_in_dim(w, t.dims, {1}));
  hlo::Module m = b.finish({y});
  // sum of squares | rsqrt(mean + eps) | the scaling, across the reshape.
  EXPECT_EQ(chain_lengths(m), std::vector<std::size_t>{3});
  const auto xs = random_values(rows * cols, -2, 2, 10, DType::kF32),
             ws = random_values(cols, -2, 2, 11, DType::kF32);
  std::vector<HostTensor> in = {HostTensor::from_doubles(t, xs),
                                HostTensor::from_doubles(TensorType(DType::kF32, {cols}), ws)};
  auto out = run_both(m, in);
  for (std::int64_t r = 0; r < rows; r += 17) {
    double ms = 0;
    for (std::int64_t c = 0; c < cols; ++c) ms += xs[r * cols + c] * xs[r * cols + c];
    const double scale = 1 / std::sqrt(ms / cols + 1e-6);
    for (std::int64_t c = 0; c < cols; c += 13)
      ASSERT_NEAR(out[0].get(r * cols + c), xs[r * cols + c] * scale * ws[c], 1e-5);
  }
  // The output written over the input x, as an in-place op's is: the same bytes.
  LoadedExecutable exe(compiler::compile(m));
  std::vector<std::uint8_t> buf = in[0].data;
  const void* ins[] = {buf.data(), in[1].data.data()};
  void* outs[] = {buf.data()};
  exe.run(ins, outs);
  EXPECT_EQ(buf, out[0].data);
}

TEST(RowChainTest, ColumnReduceIsNoChain) {
  // A reduce over the leading dim has no rows to block by.
  const TensorType t(DType::kF32, {64, 48});
  Builder b;
  Value x = b.param(t);
  Value s = b.reduce(x, b.scalar(DType::kF32, 0), {0}, hlo::ReduceKind::kAdd);
  hlo::Module m = b.finish({b.sub(x, b.broadcast_in_dim(s, t.dims, {1}))});
  EXPECT_TRUE(chain_lengths(m).empty());
  const auto xs = random_values(64 * 48, -1, 1, 12, DType::kF32);
  auto out = run_both(m, {HostTensor::from_doubles(t, xs)});
  double s0 = 0;
  for (int r = 0; r < 64; ++r) s0 += xs[r * 48];
  EXPECT_NEAR(out[0].get(5 * 48), xs[5 * 48] - s0, 1e-5);
}

}  // namespace
}  // namespace vtrn::runtime
