"""The one error of a TorchNeuron feature vtrn does not have yet."""

from __future__ import annotations


def not_implemented(name: str, instead: str = "") -> NotImplementedError:
    """The NotImplementedError raised when ``name`` is used: it names the feature and, when
    there is one, what to use instead."""
    message = f"{name} is not implemented by vtrn yet"
    if instead:
        message += f"; {instead}"
    return NotImplementedError(message + ".")
