// The `neuron` c10d backend: collectives on neuron tensors, checked against the NeuronLink
// topology and moved by an inner Gloo backend over the same host memory.
#pragma once

namespace pybind11 {
class module_;
}

namespace vtrn::torch_adapter {

/// Adds NeuronBackend and the modeled-collective clock to the extension module.
void bind_distributed(pybind11::module_& m);

}  // namespace vtrn::torch_adapter
