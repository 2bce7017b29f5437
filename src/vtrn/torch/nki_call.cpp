// vtrn::nki_call(Tensor[] args, str kernel) -> Tensor[]: an NKI kernel the nki front end traced
// and registered under |kernel| (nki/registry.h). On `neuron` it is a lowered op
// (torch/lowering/lowerings_nki.cc): one `custom_call @vtrn.nki`, which joins the graph
// capture of a torch.compile graph like any other op. Elsewhere (cpu tensors, the CPU
// fallback) this kernel runs the interpreter on the tensors directly.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "vtrn/nki/registry.h"

namespace vtrn::torch_adapter {
namespace {

at::ScalarType scalar_type(nki::DType d) {
  switch (d) {
    case nki::DType::kFloat32:
      return at::kFloat;
    case nki::DType::kBFloat16:
      return at::kBFloat16;
    case nki::DType::kFloat16:
      return at::kHalf;
    case nki::DType::kInt8:
      return at::kChar;
    case nki::DType::kInt16:
      return at::kShort;
    case nki::DType::kInt32:
      return at::kInt;
    case nki::DType::kUInt8:
      return at::kByte;
    case nki::DType::kUInt16:
      return at::kUInt16;
    case nki::DType::kUInt32:
      return at::kUInt32;
    case nki::DType::kBool:
      return at::kBool;
    default:
      TORCH_CHECK(false, "vtrn::nki_call: NKI tensors of type ", nki::dtype_name(d),
                  " have no torch dtype here; call the kernel directly (nki.simulate)");
  }
}

std::vector<at::Tensor> nki_call_anywhere(at::TensorList args, c10::string_view kernel) {
  const std::shared_ptr<const nki::RegisteredKernel> k = nki::find_kernel(std::string(kernel));
  TORCH_CHECK(k, "vtrn::nki_call: no NKI kernel is registered as ", kernel,
              "; call it through torch_neuronx.wrap_nki or an nki_op");
  TORCH_CHECK(args.size() == k->inputs.size(), "vtrn::nki_call: kernel ", kernel, " takes ",
              k->inputs.size(), " tensors, got ", args.size());
  const c10::Device device = args.empty() ? c10::Device(c10::kCPU) : args[0].device();
  std::vector<at::Tensor> inputs;
  std::vector<const void*> in_ptrs;
  std::vector<std::size_t> in_bytes;
  for (const at::Tensor& t : args) {
    inputs.push_back(t.to(c10::kCPU).contiguous());
    in_ptrs.push_back(inputs.back().const_data_ptr());
    in_bytes.push_back(inputs.back().nbytes());
  }
  std::vector<at::Tensor> outputs;
  auto add_output = [&](std::int32_t tensor) {
    const nki::TensorDecl& d = k->program.tensors().at(static_cast<std::size_t>(tensor));
    outputs.push_back(at::empty(d.shape, at::TensorOptions().dtype(scalar_type(d.dtype))));
  };
  for (std::int32_t t : k->results) add_output(t);
  for (std::size_t m : k->mutated) add_output(k->inputs[m]);
  std::vector<void*> out_ptrs;
  std::vector<std::size_t> out_bytes;
  for (at::Tensor& t : outputs) {
    out_ptrs.push_back(t.mutable_data_ptr());
    out_bytes.push_back(t.nbytes());
  }
  try {
    nki::run_kernel(*k, in_ptrs, in_bytes, out_ptrs, out_bytes);
  } catch (const std::invalid_argument& e) {
    TORCH_CHECK_VALUE(false, "vtrn::nki_call: ", e.what());
  }
  if (device.is_cpu()) return outputs;
  std::vector<at::Tensor> moved;
  for (const at::Tensor& t : outputs) moved.push_back(t.to(device));
  return moved;
}

TORCH_LIBRARY_FRAGMENT(vtrn, m) { m.def("nki_call(Tensor[] args, str kernel) -> Tensor[]"); }

TORCH_LIBRARY_IMPL(vtrn, CompositeExplicitAutograd, m) { m.impl("nki_call", nki_call_anywhere); }

}  // namespace
}  // namespace vtrn::torch_adapter
