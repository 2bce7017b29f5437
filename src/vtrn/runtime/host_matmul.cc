#include "vtrn/runtime/host_matmul.h"

#include <omp.h>
#include <algorithm>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime {

namespace {

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool, int>;

// A thread's primitives: oneDNN primitives may run concurrently, but their library-managed
// scratchpad makes one per thread the simple safe choice. Bounded, since a model with dynamic
// shapes would otherwise grow it for ever; 256 distinct shapes cover a training step.
constexpr std::size_t kMaxPrimitivesPerThread = 256;

struct Primitive {
  dnnl::matmul matmul;
  dnnl::memory::desc lhs, rhs, out;
};

struct ThreadState {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::map<Key, Primitive> primitives;
  std::int64_t compiled = 0;
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

const Primitive& primitive_for(ThreadState& st, const MatmulShape& s) {
  const Key key{
      s.batch, s.m, s.n, s.k, s.lhs_transposed, s.rhs_transposed, static_cast<int>(s.input)};
  auto it = st.primitives.find(key);
  if (it != st.primitives.end()) return it->second;
  if (st.primitives.size() >= kMaxPrimitivesPerThread) st.primitives.clear();
  using dt = dnnl::memory::data_type;
  const dt in = s.input == MatmulInput::kBF16 ? dt::bf16 : dt::f32;
  const std::int64_t b = s.batch, m = s.m, n = s.n, k = s.k;
  const dnnl::memory::dims lhs_strides =
      s.lhs_transposed ? dnnl::memory::dims{m * k, 1, m} : dnnl::memory::dims{m * k, k, 1};
  const dnnl::memory::dims rhs_strides =
      s.rhs_transposed ? dnnl::memory::dims{k * n, 1, k} : dnnl::memory::dims{k * n, n, 1};
  const dnnl::memory::desc lhs({b, m, k}, in, lhs_strides);
  const dnnl::memory::desc rhs({b, k, n}, in, rhs_strides);
  const dnnl::memory::desc out({b, m, n}, dt::f32, dnnl::memory::dims{m * n, n, 1});
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(lhs, rhs, out), st.engine);
  ++st.compiled;
  return st.primitives.emplace(key, Primitive{dnnl::matmul(pd), lhs, rhs, out}).first->second;
}

}  // namespace

void host_matmul(const MatmulShape& s, const void* lhs, const void* rhs, float* out) {
  if (s.batch == 0 || s.m == 0 || s.n == 0) return;
  if (s.k == 0) {
    std::fill_n(out, s.batch * s.m * s.n, 0.0f);
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
  const Primitive& p = primitive_for(st, s);
  dnnl::memory a(p.lhs, st.engine, const_cast<void*>(lhs));
  dnnl::memory w(p.rhs, st.engine, const_cast<void*>(rhs));
  dnnl::memory o(p.out, st.engine, out);
  p.matmul.execute(st.stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, o}});
  st.stream.wait();
}

std::int64_t host_matmul_primitives_compiled() { return thread_state().compiled; }

}  // namespace vtrn::runtime
