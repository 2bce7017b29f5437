"""Registers the ``neuron`` device with PyTorch: renames PrivateUse1, installs the
``torch.neuron`` module and the generated ``Tensor.neuron()`` / ``is_neuron`` methods."""

import os
import threading

import torch

_lock = threading.Lock()
_registered = False

DEVICE_TYPE = "neuron"


def register():
    global _registered
    with _lock:
        if _registered:
            return
        # OpenBLAS (the executor's dot_general) reads this when _C loads it. Its idle threads
        # otherwise spin between calls, taking a core from the Python thread that dispatches
        # the next ops: on 2 cores that cost the Llama step 25% (bench/bench_eager.py).
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
        from vtrn import (
            _C,  # loading it runs the C++ registrations
            neuron,
        )

        # Softmax's float32 row sums and the activations' scalar tails follow ATen's kernels,
        # which depend on the width of the vectors they run on here (runtime/aten_sum.h).
        _C._set_aten_vector_lanes(
            16 if torch.backends.cpu.get_cpu_capability().startswith("AVX512") else 8
        )
        current = torch._C._get_privateuse1_backend_name()
        if current != DEVICE_TYPE:
            if current != "privateuseone":
                raise RuntimeError(
                    f"PrivateUse1 is already registered as {current!r} by another extension; "
                    f"one process can hold one such backend. Uninstall the other one to use vtrn."
                )
            torch.utils.rename_privateuse1_backend(DEVICE_TYPE)
        if not hasattr(torch, DEVICE_TYPE):
            torch._register_device_module(DEVICE_TYPE, neuron)
        if not hasattr(torch.Tensor, "is_neuron"):
            torch.utils.generate_methods_for_privateuse1_backend(
                for_tensor=True, for_module=True, for_packed_sequence=True, for_storage=True
            )
        from vtrn import _compile_hooks, distributed

        distributed.register()
        _compile_hooks.install()
        _registered = True
