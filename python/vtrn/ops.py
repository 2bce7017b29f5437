"""Which ATen ops run natively on ``neuron``, and which fall back to the CPU.

Every ATen op with a CPU or a ``neuron`` kernel is one ``OpRow``: native (lowered to StableHLO
and compiled, or a runtime kernel), CPU fallback, or composite (PyTorch's default kernel runs it
as other ops). The answer is the dispatcher's, so this module imports torch when asked.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["NOT_LISTED", "OpRow", "ops_table", "select"]

# Kernels that PyTorch runs for any backend without a kernel of its own, ahead of the backend
# fallback; an op with one of them never reaches vtrn's CPU fallback (add.Tensor runs as add.out).
COMPOSITE_KEYS = (
    "CompositeExplicitAutogradNonFunctional",
    "CompositeExplicitAutograd",
    "CompositeImplicitAutograd",
)

# The C++ side may list dtypes in any order; a fixed one keeps the table stable.
DTYPE_ORDER = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float8_e4m3fn",
    "float8_e5m2",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)

NOT_LISTED = "(not listed by vtrn._C._native_ops)"


class OpRow(NamedTuple):
    name: str  # overload name without "aten::", e.g. "add.out", "mm"
    status: str  # "native", "fallback" or "composite"
    kind: str  # native: "lowered" or "runtime"; otherwise ""
    dtypes: tuple[str, ...]  # native only

    def status_text(self) -> str:
        return f"native ({self.kind})" if self.status == "native" else self.status

    def dtypes_text(self) -> str:
        if self.status == "fallback":
            return "cpu fallback"
        if self.status == "composite":
            return "runs as other ops"
        return ", ".join(self.dtypes)


def _dtype_key(name: str):
    return (DTYPE_ORDER.index(name), "") if name in DTYPE_ORDER else (len(DTYPE_ORDER), name)


def _native_ops() -> list[tuple[str, list[str], str]]:
    import torch  # noqa: F401 - loads the neuron device

    import vtrn

    vtrn.register()
    from vtrn import _C

    if not hasattr(_C, "_native_ops"):
        raise ImportError(
            "the installed extension vtrn._C has no _native_ops(); rebuild it with `make install`"
        )
    return _C._native_ops()


def _aten_registrations(key: str) -> set[str]:
    import torch

    return {
        n[len("aten::") :]
        for n in torch._C._dispatch_get_registrations_for_dispatch_key(key)
        if n.startswith("aten::")
    }


def ops_table() -> list[OpRow]:
    """One row per ATen op with a CPU or neuron kernel, sorted by name."""
    import torch

    rows = {
        name: OpRow(name, "native", kind, tuple(sorted(dtypes, key=_dtype_key)))
        for name, dtypes, kind in _native_ops()
    }
    # A neuron kernel missing from _native_ops is still native; tests/python/test_ops_table.py
    # keeps the list complete, so this row only shows up while it is not.
    for name in _aten_registrations("PrivateUse1") - rows.keys():
        rows[name] = OpRow(name, "native", "runtime", (NOT_LISTED,))
    for name in _aten_registrations("CPU") - rows.keys():
        composite = any(
            torch._C._dispatch_has_kernel_for_dispatch_key("aten::" + name, k)
            for k in COMPOSITE_KEYS
        )
        rows[name] = OpRow(name, "composite" if composite else "fallback", "", ())
    return [rows[name] for name in sorted(rows)]


def select(rows: list[OpRow], name: str) -> list[OpRow]:
    """One overload ("add.out"), or every overload of an op ("add", "mm": mm and mm.out)."""
    name = name.removeprefix("aten::")
    if "." in name:
        return [r for r in rows if r.name == name]
    return [r for r in rows if r.name.split(".")[0] == name]
