"""The compiled NKI interpreter (``vtrn._core.nki``), reached through vtrn._native."""

from vtrn import _native

native = _native.nki

__all__ = ["native"]
