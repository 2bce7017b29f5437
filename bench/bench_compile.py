"""torch.compile(backend="neuron") against eager `neuron`, eager `cpu` and Inductor on `cpu`.

The training step of examples/llama_step.py at size "bench" (dim 256, 4 layers, seq 128,
batch 8): the model's forward and the loss are the compiled region (fullgraph=True,
dynamic=False), backward runs through the compiled backward graph, and clip_grad_norm_ and
AdamW (foreach) run eagerly after it, in every mode alike. Each mode runs in a fresh process
with its own empty compile cache (and Inductor cache), so the first step's time includes every
compile the mode does:

  * compiled: torch.compile(backend="neuron") on `neuron`;
  * eager:    `neuron` eager mode (one executable per op, compiled on first use);
  * cpu:      PyTorch eager on the CPU;
  * inductor: torch.compile() (Inductor, the default backend) on the CPU.

Per mode: the first step (compile included), then the median of the timed steps after the
warm-up, each step ending in a host read of the loss. The modes take turns for --rounds rounds,
each keeping its fastest. Ratios are against cpu eager; the target
is compiled <= 0.7x cpu eager. For compiled, each graph's planned peak host scratch (its
intermediates sharing buffers) and the sum of its intermediates (the scratch without reuse).

The cpu worker also times the step's matrix products alone: every mm/addmm/bmm the step's
forward and backward issue is recorded (shapes and strides) and replayed on the CPU, each call
timed alone with warm caches (best of 5). Their sum is a floor no backend of this CPU goes under
while it computes those products at ATen's speed; the report prints it as a ratio of the cpu step.

    python bench/bench_compile.py
    python bench/bench_compile.py --modes compiled,cpu --steps 5
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
MODES = ("compiled", "eager", "cpu", "inductor")
DEVICE = {"compiled": "neuron", "eager": "neuron", "cpu": "cpu", "inductor": "cpu"}
TARGET = 0.7  # compiled / cpu eager, at most


def worker(args):
    sys.path.insert(0, str(EXAMPLES))
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import llama_step
    import torch

    mode, device = args.mode, DEVICE[args.mode]
    dtype = llama_step.DTYPES[args.dtype]
    size = llama_step.resolve_size("bench")
    model = llama_step.make_model(device, dtype, size)
    opt = llama_step.make_optimizer(model, "foreach")

    def loss_of(tokens, targets):
        return llama_step.loss_fn(model(tokens), targets)

    if mode == "compiled":
        loss_of = torch.compile(loss_of, backend="neuron", fullgraph=True, dynamic=False)
    elif mode == "inductor":
        loss_of = torch.compile(loss_of, fullgraph=True, dynamic=False)

    def step(i):
        tokens, targets = llama_step.batch(i, size)
        opt.zero_grad(set_to_none=True)
        loss = loss_of(tokens.to(device), targets.to(device))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
        opt.step()
        return loss.detach().item()

    result = {"mode": mode}
    start = time.perf_counter()
    losses = [step(0)]
    result["first_step_s"] = time.perf_counter() - start
    for i in range(1, 1 + args.warmup):
        losses.append(step(i))
    samples = []
    for i in range(1 + args.warmup, 1 + args.warmup + args.steps):
        start = time.perf_counter()
        losses.append(step(i))
        samples.append(time.perf_counter() - start)
    result["step_s"] = statistics.median(samples)
    result["losses"] = losses
    if mode == "cpu":
        tokens, targets = llama_step.batch(0, size)
        result["matmul_s"], result["matmuls"] = matmul_floor_s(
            lambda: loss_of(tokens, targets).backward()
        )
    if device == "neuron":
        import vtrn

        result["fallbacks"] = vtrn.get_fallback_ops()
        result["metrics"] = vtrn.metrics()
    if mode == "compiled":
        from vtrn.compile import get_dynamo_metrics, graph_modules, records

        result["graph_modules"] = graph_modules()
        result["dynamo"] = get_dynamo_metrics()
        result["scratch"] = [
            (r.graph_name, r.planned_scratch_bytes, r.intermediate_bytes)
            for r in records.get_dynamo_metrics()
        ]
    print("RESULT " + json.dumps(result), flush=True)


MATMULS = ("mm", "addmm", "bmm", "baddbmm")


def matmul_floor_s(step_fn):
    """Seconds the matrix products of one call of |step_fn| take on this CPU, each replayed alone."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    ops = {getattr(torch.ops.aten, name).default for name in MATMULS}

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in ops:
                spec = [(a.shape, a.stride()) if isinstance(a, torch.Tensor) else a for a in args]
                self.calls.append((func, spec, kwargs or {}))
            return func(*args, **(kwargs or {}))

    with Record() as rec:
        step_fn()
    total = 0.0
    for func, spec, kwargs in rec.calls:
        args = [torch.empty_strided(*a).normal_() if isinstance(a, tuple) else a for a in spec]
        for _ in range(2):
            func(*args, **kwargs)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            func(*args, **kwargs)
            best = min(best, time.perf_counter() - start)
        total += best
    return total, len(rec.calls)


def run_mode(mode, args):
    with tempfile.TemporaryDirectory(prefix="vtrn-bench-compile-") as cache:
        env = dict(os.environ)
        env["TORCH_NEURONX_NEFF_CACHE_DIR"] = os.path.join(cache, "neff")
        env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cache, "inductor")
        env.pop("TORCH_NEURONX_COMPILE_ONLY", None)
        cmd = [sys.executable, __file__, "--worker", "--mode", mode, "--dtype", args.dtype]
        cmd += ["--steps", str(args.steps), "--warmup", str(args.warmup)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(
            f"{mode}: worker failed (rc {proc.returncode})\n"
            f"{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
        )
        return None
    return json.loads(lines[-1].removeprefix("RESULT "))


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return "unknown"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def report(results, args):
    print(
        f"llama step, size bench, {args.dtype}, AdamW(foreach) + clip: median of {args.steps} "
        f"steps after {args.warmup} warm-up, fastest of {args.rounds} rounds; {cpu_model()}, {os.cpu_count()} CPUs"
    )
    cpu = results.get("cpu")
    print(f"  {'mode':9s} {'ms/step':>10s} {'vs cpu':>8s} {'first step s':>13s}")
    for mode in MODES:
        r = results.get(mode)
        if r is None:
            continue
        ratio = f"{r['step_s'] / cpu['step_s']:7.2f}x" if cpu else "       -"
        print(f"  {mode:9s} {r['step_s'] * 1e3:10.2f} {ratio} {r['first_step_s']:13.2f}")
    if cpu is not None:
        floor = cpu["matmul_s"] / cpu["step_s"]
        print(
            f"  the step's {cpu['matmuls']} matrix products alone, each timed on the cpu: "
            f"{cpu['matmul_s'] * 1e3:.1f} ms = {floor:.2f}x the cpu step; at {TARGET}x a backend "
            f"has {max(0.0, TARGET - floor) * cpu['step_s'] * 1e3:.1f} ms left for everything else"
        )
    c = results.get("compiled")
    if c is not None:
        if cpu is not None:
            ratio = c["step_s"] / cpu["step_s"]
            verdict = "ok" if ratio <= TARGET else "MISS"
            print(f"  compiled/cpu {ratio:.2f}x   target <= {TARGET}x  {verdict}")
        print(f"  compiled graph modules: {c['graph_modules']}")
        print(f"  compiled fallback ops: {c['fallbacks'] or 'none'}")
        for name, planned, total in c["scratch"]:
            print(
                f"  {name}: planned peak scratch {planned / 2**20:.1f} MiB, "
                f"intermediates {total / 2**20:.1f} MiB"
            )
        d = c["dynamo"]
        print(
            f"  neuron backend: {d['graphs']} graph(s), {d['compiles']} compiled, "
            f"{d['cache_hits']} cache hit(s), first runs {d['compile_time_s']:.2f} s"
        )
    e = results.get("eager")
    if c is not None and e is not None:
        print(f"  compiled/eager {c['step_s'] / e['step_s']:.2f}x")
        print(f"  losses equal to eager's: {c['losses'] == e['losses']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated subset")
    parser.add_argument("--steps", type=int, default=5, help="timed steps")
    parser.add_argument("--warmup", type=int, default=2, help="steps after the first, untimed")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each mode, fastest kept")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per worker process")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    modes = [m for m in args.modes.split(",") if m]
    bad = sorted(set(modes) - set(MODES))
    if bad:
        parser.error(f"unknown mode(s) {bad}; choose from {list(MODES)}")
    # The modes take turns, round after round, and each keeps its fastest round: a neighbour's
    # load on a shared machine then slows every mode alike instead of whichever ran during it.
    results, failed = {}, set()
    for _ in range(args.rounds):
        for mode in modes:
            r = run_mode(mode, args)
            if r is None:
                failed.add(mode)
            elif mode not in results or r["step_s"] < results[mode]["step_s"]:
                results[mode] = r
    report(results, args)
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
