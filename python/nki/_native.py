"""The compiled NKI interpreter (vtrn's ``_nki`` extension module), imported in one place."""

from vtrn import _nki as native

__all__ = ["native"]
