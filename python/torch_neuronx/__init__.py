"""TorchNeuron's NKI entry points: ``from torch_neuronx import nki_op, wrap_nki``.

Only these two for now; they live in vtrn's nki package (nki/_torch_hop.py).
"""

from nki._torch_hop import nki_op, wrap_nki

__all__ = ["nki_op", "wrap_nki"]
