"""Legacy ``neuronxcc.nki.typing``: the same annotations as ``nki.typing``."""

from nki.typing import mutable_tensor, scalar, tensor

__all__ = ["mutable_tensor", "scalar", "tensor"]
