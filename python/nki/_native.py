"""The compiled NKI interpreter (vtrn's ``_nki`` extension), reached through vtrn._native."""

from vtrn import _native

native = _native.nki

__all__ = ["native"]
