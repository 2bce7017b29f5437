"""A process that ran a backward on neuron exits cleanly.

torch.autograd.backward stashes a Python object in the thread-local state that each backward's
GraphTask copies, and neuron's autograd thread may drop the last reference to a finished GraphTask
after the caller has moved on. If that happens while the interpreter finalizes, the thread is ended
inside a noexcept destructor and the process aborts ("terminate called without an active
exception"). vtrn's exit hook waits for the thread to let go first.
"""

import subprocess
import sys
import weakref

import torch

from vtrn.neuron.devices import _autograd_device_threads, _drain_autograd_device_thread


class _Probe:
    pass


def test_after_the_drain_no_finished_backward_holds_python_state():
    held_after_return = 0
    for _ in range(30):
        probe = _Probe()
        ref = weakref.ref(probe)
        torch._C._stash_obj_in_tls("vtrn_exit_probe", probe)  # copied into the GraphTask
        try:
            x = torch.randn(16, device="neuron", requires_grad=True)
            (x * 2).sum().backward()
        finally:
            torch._C._remove_obj_from_tls("vtrn_exit_probe")
        del probe
        held_after_return += ref() is not None
        _drain_autograd_device_thread(0)
        assert ref() is None, "neuron:0's autograd thread still holds a finished backward"
    print(f"GraphTasks still held when backward returned: {held_after_return} of 30")


def test_the_autograd_threads_are_found_by_name():
    x = torch.ones(4, device="neuron", requires_grad=True)
    x.sum().backward()
    assert 0 in _autograd_device_threads()


def test_a_process_that_ran_backward_exits_with_status_zero():
    script = (
        "import torch, vtrn\n"
        "m = torch.nn.Linear(32, 32).to('neuron')\n"
        "for _ in range(3):\n"
        "    m(torch.randn(8, 32, device='neuron')).square().sum().backward()\n"
        "print(float(m.weight.grad.sum().cpu()))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "terminate called" not in proc.stderr
