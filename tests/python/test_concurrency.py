"""Several threads on one device, and waits that must not hold the GIL.

DataLoader workers, torch.compile workers and user threads all issue work to the same device.
As on CUDA, ops from two threads on one stream run in issue order, and a thread's host read
sees its own earlier ops. Queued work may need the GIL when it finishes (it can drop the last
C++ reference to a storage Python holds), so no wait may hold the GIL. Each case that could
hang runs in a child process under a timeout, so a regression fails instead of hanging."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

HANG_TIMEOUT = 60  # seconds; each child needs a few


def run_child(code: str, env=None) -> subprocess.CompletedProcess:
    """Runs |code| in a fresh interpreter in a session of its own; on a hang, kills the whole
    session (forked grandchildren included) and fails."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=HANG_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the child hung for {HANG_TIMEOUT} s; its output: {out!r} {err!r}")
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


#
# Adaptive Eager Execution with several threads
#

AEE_THREADS = """
import threading, torch, vtrn

THREADS, ITERS, STEPS = 8, 120, 3
failures = []

def step(x, y):
    # A fusable elementwise chain, in-place updates that carry state to the next step (so an
    # op run out of order, or a stale read, changes every later value) and a reduction.
    z = (x * 1.5 + y).relu() - y * 0.25
    x.mul_(0.5).add_(z)
    y.sub_(x * 0.125).clamp_(-4.0, 4.0)
    return z, (x + y).sum()

def worker(k):
    g = torch.Generator().manual_seed(k)
    # Half the threads share the default stream, half have their own stream.
    stream = torch.neuron.Stream() if k % 2 else torch.neuron.default_stream()
    with torch.neuron.stream(stream):
        for i in range(ITERS):
            # A length of its own per thread and iteration: every group is a new composition,
            # so ending one compiles, which is when another thread's read could overtake it.
            n = 64 + 8 * i + k
            a, b = torch.randn(n, generator=g), torch.randn(n, generator=g)
            x, y = a.to("neuron"), b.to("neuron")
            for _ in range(STEPS):
                z_cpu, s_cpu = step(a, b)
                z, s = step(x, y)
                got_z, got_s = z.cpu(), s.item()  # host reads
                if not torch.allclose(got_z, z_cpu, rtol=1e-4, atol=1e-4) or (
                        abs(got_s - s_cpu.item()) > 1e-3 * max(1.0, abs(s_cpu.item()))):
                    failures.append((k, i, (got_z - z_cpu).abs().max().item()))
                    return
                a.copy_(x.cpu()); b.copy_(y.cpu())  # the next step starts from equal values

threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
for t in threads: t.start()
for t in threads: t.join()
m = vtrn.metrics()
print("fused_groups", m["fused_groups"], "fused_ops", m["fused_ops"])
print("failures", len(failures), failures[:5])
"""


def test_threads_sharing_a_device_under_aee_get_the_cpu_results(tmp_path):
    env = dict(
        os.environ,
        TORCH_NEURONX_ENABLE_CONCATENATION="1",
        TORCH_NEURONX_NEFF_CACHE_DIR=str(tmp_path),  # groups compile: no disk cache hits
    )
    result = run_child(AEE_THREADS, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    fused = result.stdout.split("fused_groups ")[1].split()[0]
    assert int(fused) > 0, result.stdout  # AEE really fused groups
    assert "failures 0 []" in result.stdout, result.stdout


# DataLoader workers fork while other threads keep issuing work. The forked child has only the
# forking thread: it must neither find a group locked forever by a thread it does not have, nor
# lose the forking thread's own pending ops that another thread was ending at that moment. The
# other threads use streams of their own (switching streams ends the group, which then holds
# the forking thread's ops), so the child's read waits only for the forking thread's work.
FORK_WHILE_THREADS_ISSUE = """
import os, signal, threading, time, torch

stop = threading.Event()

def hammer(k):
    with torch.neuron.stream(torch.neuron.Stream()):
        x = torch.full((64 + k,), float(k), device="neuron")
        while not stop.is_set():
            y = (x * 2 + 1).relu() - x
            y.sum().item()

threads = [threading.Thread(target=hammer, args=(k,)) for k in range(3)]
for t in threads: t.start()
results = []
for i in range(20):
    a = torch.full((32,), float(i), device="neuron")
    b = a * 3 + 1  # pending in the group when the fork happens
    pid = os.fork()
    if pid == 0:
        os._exit(0 if b.cpu().eq(3 * i + 1).all() else 1)
    deadline = time.monotonic() + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            results.append(os.waitstatus_to_exitcode(status))
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            results.append("hung")
            break
        time.sleep(0.01)
stop.set()
for t in threads: t.join()
print("children", results)
"""


def test_fork_while_threads_issue_work_under_aee():
    env = dict(os.environ, TORCH_NEURONX_ENABLE_CONCATENATION="1")
    result = run_child(FORK_WHILE_THREADS_ISSUE, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"children {[0] * 20}" in result.stdout, result.stdout


#
# Waits release the GIL
#

# The queued multiply holds |t|'s storage behind half a second of other work; |t| dies, so when
# the multiply finishes the worker drops the last C++ reference to a storage that Python holds
# (|s|) and needs the GIL for it, while the main thread waits for that very work.
WAIT_FOR_WORK_THAT_NEEDS_THE_GIL = """
import threading, torch, vtrn

def queue_work_that_needs_the_gil():
    t = torch.ones(1 << 12, device="neuron")
    s = t.untyped_storage()
    torch.neuron._sleep(0.5)
    u = t * 2
    del t
    return s, u

waits = {
    "storage.resize_(0)": lambda s: s.resize_(0),
    "storage.resize_ to grow": lambda s: s.resize_(s.nbytes() * 2),
    "torch.neuron.synchronize": lambda s: torch.neuron.synchronize(),
    "stream.synchronize": lambda s: torch.neuron.current_stream().synchronize(),
    "event.synchronize": lambda s: torch.neuron.current_stream().record_event().synchronize(),
}
for name, wait in waits.items():
    s, u = queue_work_that_needs_the_gil()
    wait(s)
    assert u.cpu().eq(2).all(), name
    print("returned:", name, flush=True)

# The same wait from a second thread, while the main thread wants the GIL too.
s, u = queue_work_that_needs_the_gil()
waiter = threading.Thread(target=lambda: s.resize_(0))
waiter.start(); waiter.join()
print("returned: from a thread", s.nbytes(), flush=True)
"""


def test_waits_release_the_gil_for_work_that_needs_it():
    result = run_child(WAIT_FOR_WORK_THAT_NEEDS_THE_GIL)
    assert result.returncode == 0, result.stderr[-3000:]
    for name in (
        "storage.resize_(0)",
        "storage.resize_ to grow",
        "torch.neuron.synchronize",
        "stream.synchronize",
        "event.synchronize",
        "from a thread 0",
    ):
        assert f"returned: {name}" in result.stdout, result.stdout


def test_ctrl_c_during_a_wait_raises_keyboard_interrupt():
    # As on CUDA, the wait finishes its work, then Python raises KeyboardInterrupt. Before the
    # waits released the GIL, the signal could not even be delivered: the process hung.
    result = run_child(
        """
        import os, signal, threading, torch
        # Python leaves SIGINT ignored when it starts so (a job started in the background by a
        # non-interactive shell); Ctrl-C at a terminal reaches the default handler.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        t = torch.ones(1 << 12, device="neuron")
        s = t.untyped_storage()
        torch.neuron._sleep(1.0)
        u = t * 2
        del t
        threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
        try:
            s.resize_(0)
            for _ in range(100):  # the interrupt is raised between bytecodes
                pass
            print("no interrupt")
        except KeyboardInterrupt:
            print("interrupted after the wait;", s.nbytes(), u.cpu()[0].item())
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "interrupted after the wait; 0 2.0" in result.stdout, result.stdout
