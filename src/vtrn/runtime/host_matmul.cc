#include "vtrn/runtime/host_matmul.h"

#include <omp.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
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

// A compiled matmul with its memory objects, whose data handles each call sets: creating them,
// the argument map and a library-managed scratchpad per call cost more than a 16 x 64 x 64
// matmul itself.
struct Primitive {
  dnnl::matmul matmul;
  dnnl::memory lhs, rhs, out, scratchpad;
  std::size_t scratchpad_bytes = 0;
  bool reference = false;  ///< oneDNN chose its reference loops
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
  for (const auto* v : {&s.batch_dims, &s.lhs_strides, &s.rhs_strides}) {
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
  const dnnl::memory::desc lhs(dims(s.m, s.k), in, l.lhs_strides);
  const dnnl::memory::desc rhs(dims(s.k, s.n), in, l.rhs_strides);
  const dnnl::memory::desc out(od, dt::f32, out_strides);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(lhs, rhs, out), attr, st.engine);
  ++st.compiled;
  Primitive p;
  p.matmul = dnnl::matmul(pd);
  p.lhs = dnnl::memory(lhs, st.engine, DNNL_MEMORY_NONE);
  p.rhs = dnnl::memory(rhs, st.engine, DNNL_MEMORY_NONE);
  p.out = dnnl::memory(out, st.engine, DNNL_MEMORY_NONE);
  p.scratchpad_bytes = pd.scratchpad_desc().get_size();
  if (p.scratchpad_bytes > 0)
    p.scratchpad = dnnl::memory(pd.scratchpad_desc(), st.engine, DNNL_MEMORY_NONE);
  p.reference = std::strncmp(pd.impl_info_str(), "ref", 3) == 0;
  return st.primitives.emplace(key, std::move(p)).first->second;
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
  Primitive& p = primitive_for(st, s);
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
  dnnl::error::wrap_c_api(dnnl_primitive_execute(p.matmul.get(), st.stream.get(), nargs, args),
                          "could not execute a matmul");
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
