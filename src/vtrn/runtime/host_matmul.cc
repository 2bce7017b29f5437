#include "vtrn/runtime/host_matmul.h"

#include <omp.h>
#include <algorithm>
#include <cstring>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "vtrn/runtime/executor.h"

namespace vtrn::runtime {

namespace {

using Key = std::vector<std::int64_t>;

// A thread's primitives: oneDNN primitives may run concurrently, but their library-managed
// scratchpad makes one per thread the simple safe choice. Bounded, since a model with dynamic
// shapes would otherwise grow it for ever; 256 distinct shapes cover a training step.
constexpr std::size_t kMaxPrimitivesPerThread = 256;

struct Primitive {
  dnnl::matmul matmul;
  dnnl::memory::desc lhs, rhs, out;
  bool reference = false;  ///< oneDNN chose its reference loops
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

const Primitive& primitive_for(ThreadState& st, const MatmulShape& s) {
  const Layout l = layout_of(s);
  Key key{s.m, s.n, s.k, static_cast<std::int64_t>(s.input)};
  for (const auto* v : {&l.batch, &l.lhs_strides, &l.rhs_strides}) {
    key.push_back(static_cast<std::int64_t>(v->size()));
    key.insert(key.end(), v->begin(), v->end());
  }
  auto it = st.primitives.find(key);
  if (it != st.primitives.end()) return it->second;
  if (st.primitives.size() >= kMaxPrimitivesPerThread) st.primitives.clear();
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
  const dnnl::memory::desc lhs(dims(s.m, s.k), in, l.lhs_strides);
  const dnnl::memory::desc rhs(dims(s.k, s.n), in, l.rhs_strides);
  const dnnl::memory::desc out(od, dt::f32, out_strides);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(lhs, rhs, out), st.engine);
  ++st.compiled;
  const bool reference = std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
  return st.primitives.emplace(key, Primitive{dnnl::matmul(pd), lhs, rhs, out, reference})
      .first->second;
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
    std::fill_n(out, batch * s.m * s.n, 0.0f);
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

bool host_matmul_strides_fast(const MatmulShape& shape) {
  try {
    return !primitive_for(thread_state(), shape).reference;
  } catch (const dnnl::error&) {  // strides oneDNN does not take at all
    return false;
  }
}

std::int64_t host_matmul_primitives_compiled() { return thread_state().compiled; }

}  // namespace vtrn::runtime
