"""The trace of one kernel launch: the program being built and the state the NKI calls need.

A kernel body runs as ordinary Python (loops unroll, calls inline, ``if`` on Python values
resolve), exactly as the NKI compiler's specialization step does; every ``nki.language`` or
``nki.isa`` call appends instructions to a native program. The program is then checked, timed
and run by the C++ interpreter.
"""

import linecache
import os
import re
import sys
import threading

from nki._native import native

_PACKAGE_DIRS = tuple(
    os.path.dirname(os.path.abspath(p)) + os.sep
    for p in (__file__, os.path.join(os.path.dirname(os.path.dirname(__file__)), "neuronxcc", "x"))
)
_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")

_state = threading.local()


def current():
    """The active tracer, or None outside a kernel."""
    return getattr(_state, "tracer", None)


def require(api: str):
    tracer = current()
    if tracer is None:
        raise RuntimeError(
            f"Calling NKI API outside of NKI kernels is not supported ({api}); call it inside a "
            "function decorated with @nki.jit"
        )
    return tracer


def caller_frame():
    """The innermost frame outside the nki and neuronxcc packages (the kernel's line)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRS):
        frame = frame.f_back
    return frame


def origin() -> str:
    frame = caller_frame()
    if frame is None:
        return "<kernel>"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


def assigned_name(default: str) -> str:
    """The variable the kernel line assigns to (``a_tile = nl.ndarray(...)`` gives ``a_tile``)."""
    frame = caller_frame()
    if frame is not None:
        line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
        m = _ASSIGNED.match(line)
        if m:
            return m.group(1)
    return default


class Tracer:
    def __init__(self, target: str, grid: tuple, legacy: bool):
        self.target = target
        self.program = native.Program(target)
        self.grid = grid
        self.pid = (0,) * len(grid)
        self.legacy = legacy
        self.shared = []  # shared_hbm tensors, in allocation order (shared by SPMD instances)
        self.shared_cursor = 0
        self.inputs = []  # input storages, in argument order
        self.mutated = set()  # storage ids the kernel writes that belong to inputs
        self.loop_ids = 0
        self.arch = native.core_arch(target)

    def __enter__(self):
        if current() is not None:
            raise RuntimeError("nested NKI kernel launches are not supported")
        _state.tracer = self
        return self

    def __exit__(self, *exc):
        _state.tracer = None
        return False

    def emit(self, method: str, api: str, dst, **kwargs) -> int:
        """Appends one instruction (native builder |method|) whose destination is |dst|."""
        fn = getattr(self.program, method)
        index = fn(dst=dst._access(), api=api, origin=origin(), **kwargs)
        if dst._storage.is_input:
            self.mutated.add(dst._storage.id)
        return index

    def new_loop(self) -> int:
        self.loop_ids += 1
        return self.loop_ids
