// Compiler / executor / cache benchmark. Build: cmake -DVTRN_BUILD_BENCH=ON, target
// vtrn_bench_compiler. Prints times measured in this run and their ratios:
//   1. a compile-cache hit (memory, disk) against a compile;
//   2. a fused chain of 5 elementwise ops on 16M floats against the same ops unfused;
//   3. a 1024x1024x1024 dot_general in float32 and bfloat16 against cblas_sgemm called directly;
//   4. a matmul with a bias+tanh epilogue, and a row softmax, fused against unfused.
#include <cblas.h>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <random>

#include "vtrn/hlo/builder.h"
#include "vtrn/runtime/compile_cache.h"
#include "vtrn/runtime/executor.h"

using namespace vtrn;
using Clock = std::chrono::steady_clock;

static double best_of(int reps, const std::function<void()>& f) {
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

static hlo::Module chain_module(std::int64_t n, hlo::DType d) {
  hlo::Builder b("chain5");
  hlo::TensorType t(d, {n});
  hlo::Value x = b.param(t), y = b.param(t);
  hlo::Value c = b.broadcast_in_dim(b.scalar(d, 0.5), {n}, {});
  hlo::Value v = b.mul(x, y);
  v = b.add(v, x);
  v = b.sub(v, c);
  v = b.max(v, y);
  v = b.mul(v, v);
  return b.finish({v});
}

static hlo::Module layer_module() {
  // A transformer-ish block: matmul, bias, gelu-like tanh, residual, softmax over rows.
  hlo::Builder b("layer");
  hlo::TensorType xt(hlo::DType::kF32, {64, 256}), wt(hlo::DType::kF32, {256, 256});
  hlo::Value x = b.param(xt), w = b.param(wt),
             bias = b.param(hlo::TensorType(hlo::DType::kF32, {256}));
  hlo::Value h = b.add(b.matmul(x, w), b.broadcast_in_dim(bias, {64, 256}, {1}));
  h = b.add(b.unary(hlo::OpKind::kTanh, h), x);
  hlo::Value mx = b.reduce(h, b.scalar(hlo::DType::kF32, -1e30), {1}, hlo::ReduceKind::kMax);
  hlo::Value e = b.exp(b.sub(h, b.broadcast_in_dim(mx, {64, 256}, {0})));
  hlo::Value s = b.reduce(e, b.scalar(hlo::DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
  return b.finish({b.div(e, b.broadcast_in_dim(s, {64, 256}, {0}))});
}

int main() {
  std::printf("vtrn compiler benchmark (executor threads: %d)\n\n", runtime::executor_threads());

  // 1. Cache lookup against compile.
  {
    const std::string dir = "/tmp/vtrn_bench_cache_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    runtime::CompileCache cache({dir, ""});
    const hlo::Module m = layer_module();
    const double compile_s = best_of(20, [&] { compiler::compile(m); });
    const double first_s = best_of(1, [&] { cache.get_or_compile(m); });
    const double mem_s = best_of(2000, [&] { cache.get_or_compile(m); });
    const double disk_s = best_of(50, [&] {
      cache.clear_memory();
      cache.get_or_compile(m);
    });
    std::printf("cache (layer module, %zu ops)\n", m.main.ops.size());
    std::printf("  compile (passes+fusion+cost)  %9.1f us\n", compile_s * 1e6);
    std::printf("  first get_or_compile (store)  %9.1f us\n", first_s * 1e6);
    std::printf("  memory hit                    %9.1f us   compile/hit = %.1fx\n", mem_s * 1e6,
                compile_s / mem_s);
    std::printf("  disk hit (read+verify+load)   %9.1f us   compile/hit = %.1fx\n\n", disk_s * 1e6,
                compile_s / disk_s);
    std::filesystem::remove_all(dir);
  }

  // 2. Fused vs unfused chain of 5 elementwise ops on 16M floats.
  {
    const std::int64_t n = 16 * 1024 * 1024;
    const hlo::Module m = chain_module(n, hlo::DType::kF32);
    compiler::CompileOptions off;
    off.fusion = false;
    runtime::LoadedExecutable fused(compiler::compile(m));
    runtime::LoadedExecutable unfused(compiler::compile(m, off));
    std::vector<float> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n)),
        o(static_cast<std::size_t>(n));
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1, 1);
    for (std::int64_t i = 0; i < n; ++i) x[i] = u(rng), y[i] = u(rng);
    const void* in[] = {x.data(), y.data()};
    void* out[] = {o.data()};
    const double tf = best_of(5, [&] { fused.run(in, out); });
    const double tu = best_of(5, [&] { unfused.run(in, out); });
    std::size_t fk = 0, uk = 0;
    for (const auto& k : fused.executable().kernels)
      fk += k.kind != compiler::KernelKind::kConstant;
    for (const auto& k : unfused.executable().kernels)
      uk += k.kind != compiler::KernelKind::kConstant;
    std::printf("elementwise chain, 5 ops on 16M float32\n");
    std::printf("  fused   (%zu kernel)   %8.2f ms  %6.2f GB/s effective (3 x 64 MiB)\n", fk,
                tf * 1e3, 3.0 * n * 4 / tf / 1e9);
    std::printf("  unfused (%zu kernels)  %8.2f ms\n", uk, tu * 1e3);
    std::printf("  unfused/fused = %.2fx\n", tu / tf);
    std::printf("  modeled trn2 NeuronCore time: fused %.1f us, unfused %.1f us\n\n",
                fused.executable().modeled_time_s() * 1e6,
                unfused.executable().modeled_time_s() * 1e6);
  }

  // 3. 1024^3 dot_general against OpenBLAS sgemm directly.
  {
    const int N = 1024;
    const double flop = 2.0 * N * N * N;
    std::vector<float> a(N * N), b(N * N), c(N * N);
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> u(-1, 1);
    for (auto& v : a) v = u(rng);
    for (auto& v : b) v = u(rng);
    const double ts = best_of(5, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a.data(), N, b.data(),
                  N, 0.0f, c.data(), N);
    });
    std::printf("dot_general 1024x1024x1024\n");
    std::printf("  cblas_sgemm direct      %8.2f ms  %7.1f GFLOP/s\n", ts * 1e3, flop / ts / 1e9);
    for (hlo::DType d : {hlo::DType::kF32, hlo::DType::kBF16}) {
      hlo::Builder bl;
      hlo::TensorType t(d, {N, N});
      hlo::Value l = bl.param(t), r = bl.param(t);
      runtime::LoadedExecutable exe(compiler::compile(bl.finish({bl.matmul(l, r)})));
      std::vector<std::uint8_t> la(static_cast<std::size_t>(t.byte_size())), ra(la.size()),
          oa(la.size());
      for (int i = 0; i < N * N; ++i) {
        hlo::store_double(d, a[i], la.data() + i * hlo::dtype_size(d));
        hlo::store_double(d, b[i], ra.data() + i * hlo::dtype_size(d));
      }
      const void* in[] = {la.data(), ra.data()};
      void* out[] = {oa.data()};
      const double te = best_of(5, [&] { exe.run(in, out); });
      std::printf(
          "  vtrn dot_general %-5s  %8.2f ms  %7.1f GFLOP/s  (%.2fx sgemm time; modeled trn2 %.1f "
          "us)\n",
          std::string(hlo::dtype_name(d)).c_str(), te * 1e3, flop / te / 1e9, te / ts,
          exe.executable().modeled_time_s() * 1e6);
    }
  }
  // 4. Epilogue and row chain: measured and modeled, fused against unfused.
  {
    auto compare = [](const char* what, const hlo::Module& m) {
      compiler::CompileOptions off;
      off.fusion = false;
      runtime::LoadedExecutable fused(compiler::compile(m));
      runtime::LoadedExecutable unfused(compiler::compile(m, off));
      std::vector<std::vector<float>> ins;
      std::vector<const void*> in;
      std::mt19937 rng(3);
      std::uniform_real_distribution<float> u(-1, 1);
      for (const hlo::TensorType& t : fused.input_types()) {
        ins.emplace_back(static_cast<std::size_t>(t.num_elements()));
        for (float& v : ins.back()) v = u(rng);
        in.push_back(ins.back().data());
      }
      std::vector<float> o(static_cast<std::size_t>(fused.output_types()[0].num_elements()));
      void* out[] = {o.data()};
      const double tf = best_of(5, [&] { fused.run(in, out); });
      const double tu = best_of(5, [&] { unfused.run(in, out); });
      std::printf("%s\n  fused %8.2f ms, unfused %8.2f ms: unfused/fused = %.2fx\n", what, tf * 1e3,
                  tu * 1e3, tu / tf);
      std::printf("  modeled trn2 NeuronCore time: fused %.1f us, unfused %.1f us\n\n",
                  fused.executable().modeled_time_s() * 1e6,
                  unfused.executable().modeled_time_s() * 1e6);
    };
    {
      hlo::Builder b("epilogue");
      const std::int64_t M = 2048, K = 1024, N = 1024;
      hlo::Value x = b.param(hlo::TensorType(hlo::DType::kF32, {M, K}));
      hlo::Value w = b.param(hlo::TensorType(hlo::DType::kF32, {K, N}));
      hlo::Value bias = b.param(hlo::TensorType(hlo::DType::kF32, {N}));
      hlo::Value h = b.add(b.matmul(x, w), b.broadcast_in_dim(bias, {M, N}, {1}));
      compare("matmul 2048x1024x1024 + bias + tanh (epilogue)",
              b.finish({b.unary(hlo::OpKind::kTanh, h)}));
    }
    {
      hlo::Builder b("softmax");
      const hlo::TensorType t(hlo::DType::kF32, {8192, 1024});
      hlo::Value x = b.param(t);
      hlo::Value mx = b.reduce(x, b.scalar(hlo::DType::kF32, -1e30), {1}, hlo::ReduceKind::kMax);
      hlo::Value e = b.exp(b.sub(x, b.broadcast_in_dim(mx, t.dims, {0})));
      hlo::Value s = b.reduce(e, b.scalar(hlo::DType::kF32, 0), {1}, hlo::ReduceKind::kAdd);
      compare("softmax over 8192 rows of 1024 (one row chain)",
              b.finish({b.div(e, b.broadcast_in_dim(s, t.dims, {0}))}));
    }
  }
  return 0;
}
