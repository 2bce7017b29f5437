#include "vtrn/runtime/kernels_addmm.h"

#include <cblas.h>

#include <cstring>
#include <optional>
#include <string>

#include "vtrn/compiler/aten_addmm.h"
#include "vtrn/runtime/aten_matmul.h"

namespace vtrn::runtime::kernels {

void aten_addmm(const CustomCallArgs& args) {
  const std::string what = "custom_call @" + std::string(compiler::kAtenAddmmTarget);
  const std::optional<compiler::AtenAddmmConfig> c =
      compiler::parse_aten_addmm_config(args.backend_config);
  if (!c) throw ExecError(what + " has a malformed backend_config \"" + args.backend_config + "\"");
  const bool has_c = c->beta != 0.0;
  const std::size_t first = has_c ? 1 : 0;
  if (args.inputs.size() != first + 3 || args.outputs.size() != 1)
    throw ExecError(what + " got " + std::to_string(args.inputs.size()) + " operands and " +
                    std::to_string(args.outputs.size()) + " results");
  const hlo::TensorType& l = args.input_types[first];
  const hlo::TensorType& r = args.input_types[first + 1];
  const std::int64_t m = l.dims[c->lhs_transposed ? 1 : 0], k = l.dims[c->lhs_transposed ? 0 : 1],
                     n = r.dims[c->rhs_transposed ? 0 : 1];
  const auto* lhs = static_cast<const float*>(args.inputs[first]);
  const auto* rhs = static_cast<const float*>(args.inputs[first + 1]);
  const float alpha = *static_cast<const float*>(args.inputs[first + 2]);
  const auto beta = static_cast<float>(c->beta);
  auto* out = static_cast<float*>(args.outputs[0]);
  // The result first holds self expanded, as addmm_impl_cpu_'s copy_ leaves it.
  if (has_c && out != args.inputs[0])
    std::memmove(out, args.inputs[0], static_cast<std::size_t>(m * n) * sizeof(float));
  if (aten_matmul::addmm(m, n, k, lhs, c->lhs_transposed, rhs, c->rhs_transposed, alpha, beta, out))
    return;
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, c->lhs_transposed ? CblasTrans : CblasNoTrans,
              c->rhs_transposed ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, lhs,
              static_cast<blasint>(c->lhs_transposed ? m : k), rhs,
              static_cast<blasint>(c->rhs_transposed ? k : n), beta, out, static_cast<blasint>(n));
}

}  // namespace vtrn::runtime::kernels
