#include "vtrn/runtime/host_matmul.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "vtrn/hlo/dtype.h"
#include "vtrn/runtime/executor.h"

namespace vtrn::runtime {

namespace {

using Key = std::vector<std::int64_t>;

// A thread's primitives: oneDNN primitives may run concurrently, but their library-managed
// scratchpad makes one per thread the simple safe choice. Bounded, since a model with dynamic
// shapes would otherwise grow it for ever; 256 distinct shapes cover a training step.
constexpr std::size_t kMaxPrimitivesPerThread = 256;

// Where oneDNN has no brgemm kernel for the CPU (below AVX-512) it runs float32 on its jit GEMM,
// which on an AVX2 CPU takes up to twice OpenBLAS's time for large products whose rhs is stored
// [k, n]: 1024x1024 by 1024x256 with the lhs stored transposed (a weight gradient) 6.8 ms
// against 3.0, 256x1024 by 1024x1024 5.9 against 3.2, 512^3 2.0 against 1.5. With the rhs
// stored transposed (a forward linear) the two are within 10% either way, and at or below 256^3
// OpenBLAS loses (0.40 ms against 0.18), so those stay on oneDNN (bench/bench_matmul.py).
constexpr std::int64_t kBlasMinMultiplyAdds = std::int64_t{1} << 25;

// A compiled matmul with its memory objects, whose data handles each call sets: creating them,
// the argument map and a library-managed scratchpad per call cost more than a 16 x 64 x 64
// matmul itself.
struct Primitive {
  dnnl::matmul matmul;
  dnnl::memory lhs, rhs, out, scratchpad;
  std::size_t scratchpad_bytes = 0;
  bool reference = false;  ///< oneDNN chose its reference loops
  /// bf16 operands are widened to float32 first: the CPU has no bf16 matmul kernel (oneDNN
  /// has none below AVX-512). Exact, so the result is the float32 product's.
  bool widen = false;
  /// Run through OpenBLAS's sgemm instead (see kBlasMinMultiplyAdds).
  bool blas = false;
  std::string impl;  ///< oneDNN's name of the kernel, for errors
};

struct ThreadState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Primitive> primitives;
  Key key;  ///< the lookup key, reused
  std::int64_t compiled = 0;
  /// Every primitive's scratchpad, grown to the largest one (64-byte aligned, as oneDNN wants).
  std::unique_ptr<void, decltype(&std::free)> scratchpad{nullptr, &std::free};
  std::size_t scratchpad_bytes = 0;
  std::vector<float> widened_lhs, widened_rhs;  ///< bf16 operands in float32, where widened
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

// The operands' dims and strides as oneDNN reads them: [batch..., m, k], [batch..., k, n].
struct Layout {
  dnnl::memory::dims batch, lhs_strides, rhs_strides;
};

Layout layout_of(const MatmulShape& s) {
  Layout l;
  const std::int64_t m = s.m, n = s.n, k = s.k;
  if (!s.batch_dims.empty()) {
    l.batch.assign(s.batch_dims.begin(), s.batch_dims.end());
    l.lhs_strides.assign(s.lhs_strides.begin(), s.lhs_strides.end());
    l.rhs_strides.assign(s.rhs_strides.begin(), s.rhs_strides.end());
    return l;
  }
  l.batch = {s.batch};
  l.lhs_strides =
      s.lhs_transposed ? dnnl::memory::dims{m * k, 1, m} : dnnl::memory::dims{m * k, k, 1};
  l.rhs_strides =
      s.rhs_transposed ? dnnl::memory::dims{k * n, 1, k} : dnnl::memory::dims{k * n, n, 1};
  return l;
}

Primitive& primitive_for(ThreadState& st, const MatmulShape& s) {
  Key& key = st.key;
  key.assign({s.m, s.n, s.k, static_cast<std::int64_t>(s.input), s.batch, s.lhs_transposed,
              s.rhs_transposed});
  for (const auto* v : {&s.batch_dims, &s.lhs_strides, &s.rhs_strides, &s.out_strides}) {
    key.push_back(static_cast<std::int64_t>(v->size()));
    key.insert(key.end(), v->begin(), v->end());
  }
  auto it = st.primitives.find(key);
  if (it != st.primitives.end()) return it->second;
  if (st.primitives.size() >= kMaxPrimitivesPerThread) st.primitives.clear();
  const Layout l = layout_of(s);
  using dt = dnnl::memory::data_type;
  const dt in = s.input == MatmulInput::kBF16 ? dt::bf16 : dt::f32;
  auto dims = [&](std::int64_t r, std::int64_t c) {
    dnnl::memory::dims d = l.batch;
    d.push_back(r);
    d.push_back(c);
    return d;
  };
  dnnl::memory::dims out_strides(l.batch.size() + 2);
  std::int64_t extent = 1;
  const dnnl::memory::dims od = dims(s.m, s.n);
  for (std::size_t i = od.size(); i-- > 0;) {
    out_strides[i] = extent;
    extent *= od[i];
  }
  if (!s.batch_dims.empty() && !s.out_strides.empty())
    out_strides.assign(s.out_strides.begin(), s.out_strides.end());
  const dnnl::memory::desc out(od, dt::f32, out_strides);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  Primitive p;
  auto describe = [&](dt type) {
    const dnnl::memory::desc lhs(dims(s.m, s.k), type, l.lhs_strides);
    const dnnl::memory::desc rhs(dims(s.k, s.n), type, l.rhs_strides);
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(lhs, rhs, out), attr, st.engine);
  };
  dnnl::matmul::primitive_desc pd;
  try {
    pd = describe(in);
  } catch (const dnnl::error& e) {
    if (in != dt::bf16 || e.status != dnnl_unimplemented) throw;
    pd = describe(dt::f32);
    p.widen = true;
  }
  const dnnl::memory::desc lhs = pd.src_desc(), rhs = pd.weights_desc();
  ++st.compiled;
  p.matmul = dnnl::matmul(pd);
  p.lhs = dnnl::memory(lhs, st.engine, DNNL_MEMORY_NONE);
  p.rhs = dnnl::memory(rhs, st.engine, DNNL_MEMORY_NONE);
  p.out = dnnl::memory(out, st.engine, DNNL_MEMORY_NONE);
  p.scratchpad_bytes = pd.scratchpad_desc().get_size();
  if (p.scratchpad_bytes > 0)
    p.scratchpad = dnnl::memory(pd.scratchpad_desc(), st.engine, DNNL_MEMORY_NONE);
  p.impl = pd.impl_info_str();
  p.reference = p.impl.rfind("ref", 0) == 0;
  constexpr std::int64_t kBlasMaxDim = std::numeric_limits<blasint>::max();
  p.blas = p.impl.rfind("gemm:jit", 0) == 0 && s.batch_dims.empty() && s.batch == 1 &&
           !s.rhs_transposed && std::max({s.m, s.n, s.k}) <= kBlasMaxDim &&
           static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k) >=
               static_cast<double>(kBlasMinMultiplyAdds);
  return st.primitives.emplace(key, std::move(p)).first->second;
}

// The bf16 operand |src| ([batch..., r, c] through |strides|) in float32 in |buf|, at the same
// strides: every element up to the last one it reaches, gaps included.
const float* widen_bf16(const std::uint16_t* src, const dnnl::memory::dims& batch, std::int64_t r,
                        std::int64_t c, const dnnl::memory::dims& strides,
                        std::vector<float>& buf) {
  dnnl::memory::dims d = batch;
  d.push_back(r);
  d.push_back(c);
  std::int64_t extent = 1;
  for (std::size_t i = 0; i < d.size(); ++i) extent += (d[i] - 1) * strides[i];
  buf.resize(static_cast<std::size_t>(extent));
  for (std::int64_t i = 0; i < extent; ++i)
    buf[static_cast<std::size_t>(i)] = hlo::bf16_to_f32(src[i]);
  return buf.data();
}

}  // namespace

void host_matmul(const MatmulShape& s, const void* lhs, const void* rhs, float* out) {
  std::int64_t batch = s.batch;
  if (!s.batch_dims.empty()) {
    batch = 1;
    for (std::int64_t d : s.batch_dims) batch *= d;
  }
  if (batch == 0 || s.m == 0 || s.n == 0) return;
  if (s.k == 0) {
    if (s.batch_dims.empty() || s.out_strides.empty()) {
      std::fill_n(out, batch * s.m * s.n, 0.0f);
      return;
    }
    const std::size_t r = s.batch_dims.size();
    for (std::int64_t b = 0; b < batch; ++b) {
      std::int64_t off = 0;
      for (std::size_t i = r, rest = static_cast<std::size_t>(b); i-- > 0;) {
        off += static_cast<std::int64_t>(rest % static_cast<std::size_t>(s.batch_dims[i])) *
               s.out_strides[i];
        rest /= static_cast<std::size_t>(s.batch_dims[i]);
      }
      for (std::int64_t i = 0; i < s.m; ++i)
        for (std::int64_t j = 0; j < s.n; ++j)
          out[off + i * s.out_strides[r] + j * s.out_strides[r + 1]] = 0.0f;
    }
    return;
  }
  ThreadState& st = thread_state();
  // oneDNN runs on OpenMP threads, whose count OpenMP keeps per calling thread: follow the
  // thread budget on each stream worker.
  thread_local int omp_threads = 0;
  if (const int n = executor_threads(); n != omp_threads) {
    omp_set_num_threads(n);
    omp_threads = n;
  }
  Primitive& p = primitive_for(st, s);
  if (p.widen) {
    const Layout l = layout_of(s);
    lhs = widen_bf16(static_cast<const std::uint16_t*>(lhs), l.batch, s.m, s.k, l.lhs_strides,
                     st.widened_lhs);
    rhs = widen_bf16(static_cast<const std::uint16_t*>(rhs), l.batch, s.k, s.n, l.rhs_strides,
                     st.widened_rhs);
  }
  if (p.blas) {
    // Row-major; OpenBLAS's pool follows the same thread budget (executor.cc).
    cblas_sgemm(CblasRowMajor, s.lhs_transposed ? CblasTrans : CblasNoTrans,
                s.rhs_transposed ? CblasTrans : CblasNoTrans, static_cast<blasint>(s.m),
                static_cast<blasint>(s.n), static_cast<blasint>(s.k), 1.0f,
                static_cast<const float*>(lhs), static_cast<blasint>(s.lhs_transposed ? s.m : s.k),
                static_cast<const float*>(rhs), static_cast<blasint>(s.rhs_transposed ? s.k : s.n),
                0.0f, out, static_cast<blasint>(s.n));
    return;
  }
  p.lhs.set_data_handle(const_cast<void*>(lhs));
  p.rhs.set_data_handle(const_cast<void*>(rhs));
  p.out.set_data_handle(out);
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, p.lhs.get()},
                             {DNNL_ARG_WEIGHTS, p.rhs.get()},
                             {DNNL_ARG_DST, p.out.get()},
                             {DNNL_ARG_SCRATCHPAD, nullptr}};
  int nargs = 3;
  if (p.scratchpad_bytes > 0) {
    if (st.scratchpad_bytes < p.scratchpad_bytes) {
      const std::size_t bytes = (p.scratchpad_bytes + 63) / 64 * 64;
      st.scratchpad.reset(std::aligned_alloc(64, bytes));
      if (!st.scratchpad) throw std::bad_alloc();
      st.scratchpad_bytes = bytes;
    }
    p.scratchpad.set_data_handle(st.scratchpad.get());
    args[nargs++].memory = p.scratchpad.get();
  }
  // The C API takes the arguments as an array: the C++ one builds an unordered_map per call.
  const dnnl_status_t status = dnnl_primitive_execute(p.matmul.get(), st.stream.get(), nargs, args);
  if (status != dnnl_success)
    throw ExecError("oneDNN's matmul (" + p.impl + ", " + std::to_string(s.m) + "x" +
                    std::to_string(s.k) + " by " + std::to_string(s.k) + "x" + std::to_string(s.n) +
                    ") failed: " + dnnl_status2str(status) +
                    ". With PyTorch in the process, load libdnnl.so.2 with RTLD_DEEPBIND before "
                    "it (importing vtrn does), or torch's copy of oneDNN's symbols is used.");
  st.stream.wait();
}

bool host_matmul_strides_fast(const MatmulShape& shape) {
  try {
    return !primitive_for(thread_state(), shape).reference;
  } catch (const dnnl::error&) {  // strides oneDNN does not take at all
    return false;
  }
}

std::int64_t host_matmul_primitives_compiled() { return thread_state().compiled; }

}  // namespace vtrn::runtime
