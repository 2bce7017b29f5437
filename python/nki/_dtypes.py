"""NKI element types: the names the interpreter uses, and their NumPy and torch types.

``nl.float32`` and friends are NumPy scalar types (``ml_dtypes`` provides bfloat16 and the
8-bit floats), so kernels and tests can pass them to NumPy as the samples do
(``np.zeros(shape, dtype=nl.bfloat16)``).
"""

import ml_dtypes
import numpy as np

# name -> NumPy type
_NUMPY = {
    "float32": np.float32,
    "bfloat16": ml_dtypes.bfloat16,
    "float16": np.float16,
    "tfloat32": np.float32,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "bool_": np.bool_,
}

_BY_NUMPY = {np.dtype(t): name for name, t in _NUMPY.items() if name != "tfloat32"}

# NumPy types NKI has no equivalent for, mapped to the nearest supported type (the simulator
# computes in 32 bits; inputs of these types are narrowed on the way in).
_NARROWED = {
    np.dtype(np.float64): "float32",
    np.dtype(np.int64): "int32",
    np.dtype(np.uint64): "uint32",
}


class TFloat32:
    """Marker for nl.tfloat32 (stored as float32, rounded to a 10-bit mantissa)."""

    name = "tfloat32"

    def __repr__(self):
        return "tfloat32"


tfloat32 = TFloat32()


def dtype_name(dtype) -> str:
    """The NKI name of |dtype|: a NumPy type, NumPy dtype, torch dtype, string or nl type."""
    if dtype is None:
        raise TypeError("dtype is None; pass an NKI dtype such as nl.float32")
    if isinstance(dtype, TFloat32):
        return "tfloat32"
    if isinstance(dtype, str):
        name = {"bool": "bool_", "fp32": "float32", "bf16": "bfloat16"}.get(dtype, dtype)
        if name in _NUMPY:
            return name
        dtype = np.dtype(dtype)
    torch_name = _torch_dtype_name(dtype)
    if torch_name is not None:
        return torch_name
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{dtype!r} is not an NKI dtype; use one of {', '.join(_NUMPY)}") from None
    if np_dtype in _BY_NUMPY:
        return _BY_NUMPY[np_dtype]
    if np_dtype in _NARROWED:
        return _NARROWED[np_dtype]
    raise TypeError(f"{np_dtype} is not an NKI dtype; use one of {', '.join(_NUMPY)}")


def numpy_type(name: str):
    return _NUMPY[name]


def itemsize(name: str) -> int:
    return np.dtype(_NUMPY[name]).itemsize


def is_float(name: str) -> bool:
    return name in ("float32", "bfloat16", "float16", "tfloat32") or name.startswith("float8")


def _torch_dtype_name(dtype):
    import sys

    torch = sys.modules.get("torch")
    if torch is None or not isinstance(dtype, torch.dtype):
        return None
    table = {
        torch.float32: "float32",
        torch.bfloat16: "bfloat16",
        torch.float16: "float16",
        torch.int8: "int8",
        torch.int16: "int16",
        torch.int32: "int32",
        torch.uint8: "uint8",
        torch.bool: "bool_",
        torch.float8_e4m3fn: "float8_e4m3fn",
        torch.float8_e5m2: "float8_e5m2",
        torch.float64: "float32",
        torch.int64: "int32",
    }
    if dtype not in table:
        raise TypeError(f"{dtype} has no NKI equivalent")
    return table[dtype]


def torch_dtype(name: str):
    import torch

    return {
        "float32": torch.float32,
        "tfloat32": torch.float32,
        "bfloat16": torch.bfloat16,
        "float16": torch.float16,
        "int8": torch.int8,
        "int16": torch.int16,
        "int32": torch.int32,
        "uint8": torch.uint8,
        "uint16": torch.uint16,
        "uint32": torch.uint32,
        "bool_": torch.bool,
        "float8_e4m3fn": torch.float8_e4m3fn,
        "float8_e5m2": torch.float8_e5m2,
    }[name]


def promote(a: str, b: str) -> str:
    """The result type of an elementwise op on two tiles (NumPy's rules on the NKI types)."""
    if a == b:
        return a
    if is_float(a) and not is_float(b):
        return a
    if is_float(b) and not is_float(a):
        return b
    if is_float(a) and is_float(b):
        order = [
            "float8_e4m3",
            "float8_e4m3fn",
            "float8_e5m2",
            "bfloat16",
            "float16",
            "tfloat32",
            "float32",
        ]
        if {a, b} == {"bfloat16", "float16"}:
            return "float32"
        return max(a, b, key=order.index)
    return dtype_name(np.result_type(_NUMPY[a], _NUMPY[b]))
