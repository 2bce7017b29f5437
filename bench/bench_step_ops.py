"""Where eager `neuron` spends more than the CPU in a Llama training step, op by op, in one process.

The step of examples/llama_step.py at size "bench" (AdamW foreach, clip_grad_norm_) runs once on
each device under a dispatch mode that records every aten call: the first call of each distinct
(op, shapes, strides) and how many times a step makes it. Each recorded call the two devices
share is then replayed on both, the devices taking turns for --rounds rounds (fastest of 5
calls each, a synchronize around them), under torch.no_grad. The gap is (neuron - cpu) times the
calls per step; the table lists the largest gaps, and the total over every op but the matrix
products and attention (which the other benches cover).

An op replayed alone runs with warm caches and without AEE's fusion, so the figures are per-op
costs, not the step's; they are ratios from one process, which the machine's drift hits alike.

    python bench/bench_step_ops.py              # one thread, the 20 largest gaps
    python bench/bench_step_ops.py --threads 2 --top 40
"""

import argparse
import collections
import pathlib
import sys
import time
import warnings

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
SKIPPED = ("aten.mm", "aten.addmm", "aten.bmm", "scaled_dot_product")


def key_of(func, args):
    parts = []
    for a in args:
        if hasattr(a, "shape") and hasattr(a, "stride"):
            parts.append((tuple(a.shape), a.stride()))
        elif isinstance(a, (list, tuple)) and a and hasattr(a[0], "shape"):
            parts.append(("list", len(a)))
    return str(func), tuple(parts)


def record_step(device):
    import llama_step
    from torch.utils._python_dispatch import TorchDispatchMode

    stepper = llama_step.Stepper(device, "float32", "foreach", 1.0, "bench")
    for i in range(2):
        stepper.step(i).item()
    first, count = {}, collections.Counter()

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            k = key_of(func, args)
            count[k] += 1
            first.setdefault(k, (func, args, kwargs or {}))
            return func(*args, **(kwargs or {}))

    with Record():
        stepper.step(2).item()
    return first, count, stepper


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    sys.path.insert(0, str(EXAMPLES))
    import torch

    import vtrn  # noqa: F401 - registers the device

    torch.set_num_threads(args.threads)
    recorded = {device: record_step(device) for device in ("cpu", "neuron")}
    torch.set_grad_enabled(False)
    rows = []
    for k, _ in recorded["neuron"][0].items():
        if k not in recorded["cpu"][0] or any(s in k[0] for s in SKIPPED):
            continue
        best = {}
        for _ in range(args.rounds):
            for device in ("cpu", "neuron"):
                func, a, kw = recorded[device][0][k]
                torch.neuron.synchronize()
                start = time.perf_counter()
                for _ in range(5):
                    func(*a, **kw)
                torch.neuron.synchronize()
                seconds = (time.perf_counter() - start) / 5
                best[device] = min(best.get(device, float("inf")), seconds)
        calls = recorded["neuron"][1][k]
        rows.append(((best["neuron"] - best["cpu"]) * calls, k, calls, best))
    rows.sort(key=lambda r: -r[0])
    print(f"llama step, size bench, {args.threads} thread(s): ops by neuron's extra time per step")
    print(f"  {'gap ms/step':>11} {'calls':>5} {'cpu us':>9} {'neuron us':>9} {'ratio':>6}  op")
    for gap, k, calls, best in rows[: args.top]:
        print(
            f"  {gap * 1e3:11.2f} {calls:5d} {best['cpu'] * 1e6:9.1f} {best['neuron'] * 1e6:9.1f} "
            f"{best['neuron'] / best['cpu']:5.2f}x  {k[0]} {str(k[1])[:70]}"
        )
    total = sum(r[0] for r in rows)
    print(
        f"  total over {len(rows)} ops (matrix products and attention aside): {total * 1e3:.2f} ms/step"
    )


if __name__ == "__main__":
    main()
