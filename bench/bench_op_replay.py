"""Every ATen call of a Llama training step, replayed alone on `neuron` and on `cpu`.

The forward and backward of examples/llama_step.py (size "bench" by default) run once on the
CPU under a TorchDispatchMode that records each ATen call with copies of its arguments (their
strides kept). Each call is then replayed on both devices in one process, cpu and neuron in
turn, each timed alone with warm caches and ending in a host read of its last result (best of
two rounds of three). The report sums the time per op and per op-and-argument-layout and lists
the calls whose neuron time exceeds the cpu's the most: where eager mode (AEE off) loses to the
CPU it emulates, one kernel at a time, free of the noise a whole step picks up on a shared
machine. The host read costs the same on both devices and is in both sums.

    python bench/bench_op_replay.py
    python bench/bench_op_replay.py --top 30 --size tiny
"""

import argparse
import collections
import os
import pathlib
import subprocess
import sys
import time
import warnings

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


def record_step(size_name):
    import llama_step
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_map

    def keep(a):
        return a.detach().clone() if isinstance(a, torch.Tensor) else a

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            self.calls.append((func, tree_map(keep, (args, kwargs))))
            return func(*args, **kwargs)

    size = llama_step.resolve_size(size_name)
    model = llama_step.make_model("cpu", torch.float32, size)
    tokens, targets = llama_step.batch(0, size)
    with Record() as rec:
        llama_step.loss_fn(model(tokens), targets).backward()
    return rec.calls


def layout(args):
    import torch

    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            s = "x".join(map(str, a.shape)) or "0-d"
            parts.append(s if a.is_contiguous() else f"{s}(strides {tuple(a.stride())})")
        elif isinstance(a, (int, float, bool)):
            parts.append(repr(a))
    return ", ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="bench", help="examples/llama_step.py size")
    parser.add_argument("--top", type=int, default=15, help="rows of each table")
    args = parser.parse_args()
    sys.path.insert(0, str(EXAMPLES))
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import torch
    from torch.utils._pytree import tree_map

    import vtrn  # noqa: F401  (the neuron device)

    def to_neuron(a):
        return a.to("neuron") if isinstance(a, torch.Tensor) else a

    def sync(out):
        leaves = out if isinstance(out, (list, tuple)) else [out]
        leaves = [t for t in leaves if isinstance(t, torch.Tensor) and t.numel() > 0]
        if leaves:  # one element through views: reshape(-1) would copy a non-contiguous result
            last = leaves[-1]
            last[(0,) * last.dim()].item()

    def best_time(func, call_args, call_kwargs):
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            sync(func(*call_args, **call_kwargs))
            best = min(best, time.perf_counter() - start)
        return best

    calls = record_step(args.size)
    per_op = collections.defaultdict(lambda: [0.0, 0.0, 0])
    per_layout = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for func, (cpu_args, cpu_kwargs) in calls:
        if func is torch.ops.aten.detach.default:
            continue
        dev_args, dev_kwargs = tree_map(to_neuron, (cpu_args, cpu_kwargs))
        if dev_kwargs.get("device") is not None:
            dev_kwargs = dict(dev_kwargs, device=torch.device("neuron"))
        sync(func(*dev_args, **dev_kwargs))  # compiles land here, untimed
        sync(func(*cpu_args, **cpu_kwargs))
        cpu_s = dev_s = float("inf")
        for _ in range(2):
            cpu_s = min(cpu_s, best_time(func, cpu_args, cpu_kwargs))
            dev_s = min(dev_s, best_time(func, dev_args, dev_kwargs))
        name = str(func).removeprefix("aten.")
        for table, key in ((per_op, name), (per_layout, f"{name}({layout(cpu_args)})")):
            row = table[key]
            row[0] += cpu_s
            row[1] += dev_s
            row[2] += 1
    cpu_total = sum(r[0] for r in per_op.values())
    dev_total = sum(r[1] for r in per_op.values())
    model = "unknown"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    print(
        f"llama step (size {args.size}) forward + backward, {len(calls)} ATen calls replayed one "
        f"at a time; {model}, {os.cpu_count()} CPUs, {torch.get_num_threads()} threads"
    )
    print(
        f"  sum of calls: cpu {cpu_total * 1e3:.1f} ms, neuron {dev_total * 1e3:.1f} ms, "
        f"neuron/cpu {dev_total / cpu_total:.2f}x"
    )
    for title, table in (("by op", per_op), ("by op and argument layout", per_layout)):
        print(f"  largest neuron - cpu, {title}:")
        rows = sorted(table.items(), key=lambda kv: kv[1][0] - kv[1][1])[: args.top]
        for key, (c, d, n) in rows:
            print(
                f"    {d * 1e3 - c * 1e3:+8.2f} ms  cpu {c * 1e3:7.2f}  neuron {d * 1e3:7.2f}  "
                f"x{n:<4d} {key}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
