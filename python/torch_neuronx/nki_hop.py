"""``torch_neuronx.nki_op`` and ``torch_neuronx.wrap_nki`` (TorchNeuron's module name for them):
NKI kernels as PyTorch ops. They live in vtrn's ``nki`` package (``nki/_torch_hop.py``)."""

from nki._torch_hop import nki_op, wrap_nki

__all__ = ["nki_op", "wrap_nki"]
