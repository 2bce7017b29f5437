"""The one place that imports vtrn's torch-free native extensions.

- ``model``: the hardware, topology and collective model (C++ layers hw / topo / coll);
- ``hlo``: the StableHLO parser, compiler, compile cache and executor (hlo / compiler / runtime);
- ``plan``: the layout planner (plan);
- ``nki``: the NKI kernel interpreter (nki), used by the ``nki`` package.

None of them imports torch. Every other module reaches them through this one
(``from vtrn import _native`` then ``_native.model.Cluster(...)``), so how the extensions are
built and named is known here alone. All four are submodules of the one extension
``vtrn._core``, whose native library vtrn._C shares (one compile cache per process); it is
imported on first use, so ``import vtrn`` alone loads none of them.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

# Attribute of this module -> the extension module that provides it.
_EXTENSIONS = {
    "model": "vtrn._core.topology",
    "hlo": "vtrn._core.hlo",
    "plan": "vtrn._core.plan",
    "nki": "vtrn._core.nki",
}

__all__ = ["NativeModuleMissing", "hlo", "model", "nki", "plan"]

if TYPE_CHECKING:  # pragma: no cover - for type checkers only
    model: ModuleType
    hlo: ModuleType
    plan: ModuleType
    nki: ModuleType


class NativeModuleMissing(ImportError):
    """A native extension is not built or does not load; the message says how to build it."""


def __getattr__(name: str) -> ModuleType:
    extension = _EXTENSIONS.get(name)
    if extension is None:
        raise AttributeError(f"module 'vtrn._native' has no attribute {name!r}")
    try:
        module = importlib.import_module(extension)
    except ImportError as err:
        raise NativeModuleMissing(
            f"the native extension {extension} is not available ({err}); "
            "build it with `make install`"
        ) from err
    globals()[name] = module  # later lookups skip __getattr__
    return module
