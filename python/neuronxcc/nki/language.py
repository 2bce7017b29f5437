"""Legacy ``neuronxcc.nki.language``: ``nki.language`` plus the NKI 0.1 loop semantics.

In legacy kernels ``nl.affine_range`` iterations may run in parallel, so two iterations must
not write the same location (the compiler's "Unexpected output dependencies" error); matmul
accumulation into PSUM is the exception. ``nl.sequential_range`` allows it.
"""

from nki import _tracer
from nki.language import *  # noqa: F403 - the legacy module is the new one plus loop scopes
from nki.language import __all__ as _base_all

__all__ = list(_base_all)


def affine_range(*args, **kwargs):
    tracer = _tracer.current()
    if tracer is None:
        yield from range(*args)
        return
    loop = tracer.new_loop()
    where = _tracer.origin()
    for i in range(*args):
        tracer.program.enter_iteration(loop, i, where)
        try:
            yield i
        finally:
            tracer.program.exit_iteration()
