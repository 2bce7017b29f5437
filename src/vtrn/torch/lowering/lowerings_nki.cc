// vtrn::nki_call(args, kernel): an NKI kernel (registered by the nki front end under a content
// hash, nki/registry.h) as one `stablehlo.custom_call @vtrn.nki`. Its operands are the kernel's
// tensor arguments; its results are the kernel's shared_hbm results, then the new values of the
// arguments it writes. The backend_config names the kernel and carries its modeled latency, so
// the compiler costs the call with the kernel's own engine schedule.
#include "vtrn/nki/registry.h"
#include "vtrn/torch/lowering/families.h"

namespace vtrn::lowering {
namespace {

using namespace family;

/// The HLO dtype of a kernel tensor; kernels with types HLO lacks (fp8, tf32) fall back.
DType hlo_dtype(nki::DType d) {
  switch (d) {
    case nki::DType::kFloat32:
      return DType::kF32;
    case nki::DType::kBFloat16:
      return DType::kBF16;
    case nki::DType::kFloat16:
      return DType::kF16;
    case nki::DType::kInt8:
      return DType::kI8;
    case nki::DType::kInt16:
      return DType::kI16;
    case nki::DType::kInt32:
      return DType::kI32;
    case nki::DType::kUInt8:
      return DType::kU8;
    case nki::DType::kUInt16:
      return DType::kU16;
    case nki::DType::kUInt32:
      return DType::kU32;
    case nki::DType::kBool:
      return DType::kPred;
    default:
      throw Unsupported("NKI kernel tensor of type " + std::string(nki::dtype_name(d)));
  }
}

TensorType decl_type(const nki::RegisteredKernel& k, std::int32_t tensor) {
  const nki::TensorDecl& d = k.program.tensors().at(static_cast<std::size_t>(tensor));
  return TensorType{hlo_dtype(d.dtype), d.shape};
}

}  // namespace

void add_nki_lowerings(std::vector<OpLowering>& r) {
  add(r, {"vtrn::nki_call"}, entry(all_types(), [](Lowerer& L) -> std::vector<Value> {
        const std::string& key = L.arg(1).text;
        const std::shared_ptr<const nki::RegisteredKernel> k = nki::find_kernel(key);
        if (!k) throw Unsupported("no NKI kernel is registered as " + key);
        const std::vector<Value>& args = L.tensors(0);
        if (args.size() != k->inputs.size())
          throw Unsupported("NKI kernel " + key + " takes " + std::to_string(k->inputs.size()) +
                            " tensors, got " + std::to_string(args.size()));
        for (std::size_t i = 0; i < args.size(); ++i)
          if (L.b.type(args[i]) != decl_type(*k, k->inputs[i]))
            throw Unsupported("NKI kernel " + key + " argument " + std::to_string(i) +
                              " has another shape or dtype than the traced kernel's");
        std::vector<TensorType> results;
        for (std::int32_t t : k->results) results.push_back(decl_type(*k, t));
        for (std::size_t m : k->mutated) results.push_back(decl_type(*k, k->inputs[m]));
        return L.b.custom_call(std::string(nki::kCustomCallTarget), args, std::move(results),
                               nki::backend_config(key, *k));
      }));
}

}  // namespace vtrn::lowering
