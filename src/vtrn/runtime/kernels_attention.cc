#include "vtrn/runtime/kernels_attention.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "vtrn/compiler/fused_attention.h"
#include "vtrn/runtime/host_matmul.h"

namespace vtrn::runtime::kernels {
namespace {

struct Dims {
  std::int64_t batch, heads, kv_heads, q_len, kv_len, d;
  bool causal;
  double scale;
};

Dims dims_of(const CustomCallArgs& a, std::size_t query, const char* target) {
  const auto config = compiler::parse_flash_attention_config(a.backend_config);
  if (!config)
    throw ExecError(std::string("custom_call @") + target + " has a malformed backend_config \"" +
                    a.backend_config + "\"");
  const hlo::TensorType& q = a.input_types[query];
  const hlo::TensorType& k = a.input_types[query + 1];
  return Dims{q.dims[0], q.dims[1], k.dims[1],      q.dims[2],
              k.dims[2], q.dims[3], config->causal, config->scale};
}

// Elements [offset, offset + n) of |src| (of |type|'s dtype) as float32.
std::vector<float> widen(const hlo::TensorType& type, const void* src, std::int64_t offset,
                         std::int64_t n) {
  const int es = hlo::dtype_size(type.dtype);
  const auto* p = static_cast<const std::uint8_t*>(src) + offset * es;
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    out[i] = static_cast<float>(hlo::load_double(type.dtype, p + i * es));
  return out;
}

void narrow(const hlo::TensorType& type, const float* src, void* dst, std::int64_t offset,
            std::int64_t n) {
  const int es = hlo::dtype_size(type.dtype);
  auto* p = static_cast<std::uint8_t*>(dst) + offset * es;
  for (std::int64_t i = 0; i < n; ++i) hlo::store_double(type.dtype, src[i], p + i * es);
}

// The probabilities of one head, [L, S], from its scores and each row's logsumexp: zero where
// the causal mask hides the key (key j is visible to query i when j <= i).
void probabilities(const Dims& d, std::vector<float>& s, const float* lse) {
  for (std::int64_t i = 0; i < d.q_len; ++i) {
    float* row = s.data() + i * d.kv_len;
    for (std::int64_t j = 0; j < d.kv_len; ++j) {
      const bool hidden = (d.causal && j > i) || std::isinf(lse[i]);
      row[j] = hidden ? 0.0f : std::exp(row[j] * static_cast<float>(d.scale) - lse[i]);
    }
  }
}

void scores(const Dims& d, const float* q, const float* k, std::vector<float>& s) {
  MatmulShape m;
  m.m = d.q_len;
  m.n = d.kv_len;
  m.k = d.d;
  m.rhs_transposed = true;  // k is [S, D]
  s.resize(static_cast<std::size_t>(d.q_len * d.kv_len));
  host_matmul(m, q, k, s.data());
}

}  // namespace

void flash_attention_forward(const CustomCallArgs& a) {
  const Dims d = dims_of(a, 0, "vtrn.flash_attention");
  const std::int64_t groups = d.heads / d.kv_heads, qn = d.q_len * d.d, kn = d.kv_len * d.d;
  std::vector<float> s, out(static_cast<std::size_t>(qn)), lse(static_cast<std::size_t>(d.q_len));
  for (std::int64_t b = 0; b < d.batch; ++b) {
    for (std::int64_t h = 0; h < d.heads; ++h) {
      const std::int64_t qh = b * d.heads + h, kh = b * d.kv_heads + h / groups;
      const std::vector<float> q = widen(a.input_types[0], a.inputs[0], qh * qn, qn);
      const std::vector<float> k = widen(a.input_types[1], a.inputs[1], kh * kn, kn);
      const std::vector<float> v = widen(a.input_types[2], a.inputs[2], kh * kn, kn);
      scores(d, q.data(), k.data(), s);
      for (std::int64_t i = 0; i < d.q_len; ++i) {
        const float* row = s.data() + i * d.kv_len;
        const std::int64_t visible = d.causal ? std::min(i + 1, d.kv_len) : d.kv_len;
        float m = -std::numeric_limits<float>::infinity();
        for (std::int64_t j = 0; j < visible; ++j)
          m = std::max(m, row[j] * static_cast<float>(d.scale));
        double sum = 0;
        for (std::int64_t j = 0; j < visible; ++j)
          sum += std::exp(row[j] * static_cast<float>(d.scale) - m);
        lse[i] = visible == 0 ? -std::numeric_limits<float>::infinity()
                              : m + static_cast<float>(std::log(sum));
      }
      probabilities(d, s, lse.data());
      MatmulShape pv;
      pv.m = d.q_len;
      pv.n = d.d;
      pv.k = d.kv_len;
      host_matmul(pv, s.data(), v.data(), out.data());
      narrow(a.output_types[0], out.data(), a.outputs[0], qh * qn, qn);
      narrow(a.output_types[1], lse.data(), a.outputs[1], qh * d.q_len, d.q_len);
    }
  }
}

void flash_attention_backward(const CustomCallArgs& a) {
  const Dims d = dims_of(a, 1, "vtrn.flash_attention_backward");
  const std::int64_t groups = d.heads / d.kv_heads, qn = d.q_len * d.d, kn = d.kv_len * d.d;
  const std::int64_t ss = d.q_len * d.kv_len;
  std::vector<float> p, dp(static_cast<std::size_t>(ss)), dq(static_cast<std::size_t>(qn));
  std::vector<float> part(static_cast<std::size_t>(kn));
  for (std::int64_t b = 0; b < d.batch; ++b) {
    for (std::int64_t kvh = 0; kvh < d.kv_heads; ++kvh) {
      const std::int64_t kh = b * d.kv_heads + kvh;
      const std::vector<float> k = widen(a.input_types[2], a.inputs[2], kh * kn, kn);
      const std::vector<float> v = widen(a.input_types[3], a.inputs[3], kh * kn, kn);
      std::vector<float> dk(static_cast<std::size_t>(kn), 0.0f), dv(dk);
      for (std::int64_t g = 0; g < groups; ++g) {
        const std::int64_t qh = b * d.heads + kvh * groups + g;
        const std::vector<float> go = widen(a.input_types[0], a.inputs[0], qh * qn, qn);
        const std::vector<float> q = widen(a.input_types[1], a.inputs[1], qh * qn, qn);
        const std::vector<float> o = widen(a.input_types[4], a.inputs[4], qh * qn, qn);
        const std::vector<float> lse = widen(a.input_types[5], a.inputs[5], qh * d.q_len, d.q_len);
        scores(d, q.data(), k.data(), p);
        probabilities(d, p, lse.data());
        // dV += P^T dO
        MatmulShape m;
        m.m = d.kv_len, m.n = d.d, m.k = d.q_len, m.lhs_transposed = true;
        host_matmul(m, p.data(), go.data(), part.data());
        for (std::int64_t i = 0; i < kn; ++i) dv[i] += part[i];
        // dP = dO V^T; dS = P (dP - rowsum(dO O)) scale
        m = MatmulShape{};
        m.m = d.q_len, m.n = d.kv_len, m.k = d.d, m.rhs_transposed = true;
        host_matmul(m, go.data(), v.data(), dp.data());
        for (std::int64_t i = 0; i < d.q_len; ++i) {
          float delta = 0;
          for (std::int64_t c = 0; c < d.d; ++c) delta += go[i * d.d + c] * o[i * d.d + c];
          for (std::int64_t j = 0; j < d.kv_len; ++j) {
            float& x = dp[i * d.kv_len + j];
            x = p[i * d.kv_len + j] * (x - delta) * static_cast<float>(d.scale);
          }
        }
        // dQ = dS K
        m = MatmulShape{};
        m.m = d.q_len, m.n = d.d, m.k = d.kv_len;
        host_matmul(m, dp.data(), k.data(), dq.data());
        narrow(a.output_types[0], dq.data(), a.outputs[0], qh * qn, qn);
        // dK += dS^T Q
        m = MatmulShape{};
        m.m = d.kv_len, m.n = d.d, m.k = d.q_len, m.lhs_transposed = true;
        host_matmul(m, dp.data(), q.data(), part.data());
        for (std::int64_t i = 0; i < kn; ++i) dk[i] += part[i];
      }
      narrow(a.output_types[1], dk.data(), a.outputs[1], kh * kn, kn);
      narrow(a.output_types[2], dv.data(), a.outputs[2], kh * kn, kn);
    }
  }
}

}  // namespace vtrn::runtime::kernels
