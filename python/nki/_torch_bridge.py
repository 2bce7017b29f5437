"""@nki.jit kernels called with torch tensors (CPU or ``neuron``): the tensors' values go
through the interpreter as NumPy arrays, results come back as tensors on the arguments'
device, and inputs the kernel writes are updated in place."""

import ml_dtypes
import numpy as np
import torch

from nki import _kernel

_VIEWS = {
    torch.bfloat16: (torch.int16, ml_dtypes.bfloat16),
    torch.float8_e4m3fn: (torch.uint8, ml_dtypes.float8_e4m3fn),
    torch.float8_e5m2: (torch.uint8, ml_dtypes.float8_e5m2),
}


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A NumPy copy of |t| (NKI has no 64-bit types: float64/int64 narrow to 32 bits)."""
    t = t.detach().to("cpu", copy=True).contiguous()
    if t.dtype == torch.float64:
        t = t.float()
    if t.dtype == torch.int64:
        t = t.int()
    if t.dtype in _VIEWS:
        carrier, np_type = _VIEWS[t.dtype]
        return t.view(carrier).numpy().view(np_type)
    return t.numpy()


def from_numpy(a: np.ndarray, device, dtype=None) -> torch.Tensor:
    a = np.ascontiguousarray(a)
    for torch_type, (carrier, np_type) in _VIEWS.items():
        if a.dtype == np.dtype(np_type):
            t = torch.from_numpy(a.view(np.int16 if carrier == torch.int16 else np.uint8)).view(
                torch_type
            )
            break
    else:
        t = torch.from_numpy(a)
    if dtype is not None and t.dtype != dtype:
        t = t.to(dtype)
    return t.to(device)


def launch(kernel, args, kwargs):
    tensors = [v for v in list(args) + list(kwargs.values()) if isinstance(v, torch.Tensor)]
    device = tensors[0].device
    np_args = [to_numpy(a) if isinstance(a, torch.Tensor) else a for a in args]
    np_kwargs = {k: to_numpy(v) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    info = {}
    result = _kernel.run_numpy(kernel, np_args, np_kwargs, arrays_out=info)
    # Write back every input the kernel wrote.
    bound = kernel.sign.bind(*args, **kwargs)
    names = list(kernel.sign.bind(*np_args, **np_kwargs).arguments)
    mutated = info["mutated"]
    for index, storage in info["inputs"]:
        if storage.id in mutated:
            original = bound.arguments[names[index]]
            with torch.no_grad():
                original.copy_(
                    from_numpy(info["prepared"][names[index]], original.device, original.dtype)
                )
    if result is None:
        return None
    if isinstance(result, tuple):
        return tuple(from_numpy(r, device) for r in result)
    return from_numpy(result, device)
