"""Eager mode on `neuron` against `cpu`: a Llama training step, and a tiny op's dispatch cost.

For each mode, Adaptive Eager Execution off and on (TORCH_NEURONX_ENABLE_CONCATENATION=1,
read at process start), one fresh process with its own compile cache times both devices, so
each ratio comes from one process on one machine state:

  * the training step of examples/llama_step.py at size "bench" (dim 256, 4 layers, seq 128,
    batch 8, AdamW foreach, clip_grad_norm_): warm-up steps (compiles land there), then the
    median of timed steps, each ending in a host read of the loss; best of two rounds per device;
  * `y = x + 1` on a 16-element float32 tensor, 20,000 times, synchronizing once at the end:
    microseconds per op on each device and the difference, which is what the device adds to
    every eager op once its kernel is cached.

Targets: the step within 1.2x of the CPU with AEE off and at or below it with AEE on; the
per-op overhead under 10 us.

    python bench/bench_eager.py                 # both modes
    python bench/bench_eager.py --mode on --steps 5
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
AEE = "TORCH_NEURONX_ENABLE_CONCATENATION"
CACHE = "TORCH_NEURONX_NEFF_CACHE_DIR"

STEP_TARGET = {"off": 1.2, "on": 1.0}  # neuron / cpu, at most
OVERHEAD_TARGET_US = 10.0
OP_ELEMENTS = 16
OP_COUNT = 20_000
OP_SAMPLES = 3


#
# Worker: one process, one mode.
#


def metrics():
    import vtrn

    return vtrn.metrics() if hasattr(vtrn, "metrics") else None


def time_round(stepper, first, steps):
    """Median seconds per step over |steps| steps from step |first|, each ending in a host read."""
    samples = []
    for i in range(first, first + steps):
        start = time.perf_counter()
        stepper.step(i).item()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def time_steps(args):
    """Seconds per training step on cpu and on neuron: the best of two rounds' medians, the
    rounds interleaved so that load from elsewhere hits both devices alike; and the metrics
    delta over neuron's last round where the build has vtrn.metrics()."""
    import llama_step

    steppers = {
        device: llama_step.Stepper(device, args.dtype, args.optimizer, 1.0, "bench")
        for device in ("cpu", "neuron")
    }
    for stepper in steppers.values():
        for i in range(args.warmup):
            stepper.step(i).item()
    best, delta = {"cpu": float("inf"), "neuron": float("inf")}, None
    for round_ in range(2):
        first = args.warmup + round_ * args.steps
        for device, stepper in steppers.items():
            before = metrics() if device == "neuron" else None
            best[device] = min(best[device], time_round(stepper, first, args.steps))
            after = metrics() if device == "neuron" else None
            if before is not None and after is not None:
                delta = {
                    k: after[k] - before[k] for k in after if isinstance(after[k], (int, float))
                }
    return best["cpu"], best["neuron"], delta


def per_op_seconds(x):
    import torch

    best = float("inf")
    for _ in range(OP_SAMPLES):
        start = time.perf_counter()
        for _ in range(OP_COUNT):
            y = x + 1  # noqa: F841
        if x.device.type == "neuron":
            torch.neuron.synchronize()
        best = min(best, (time.perf_counter() - start) / OP_COUNT)
    return best


def worker(args):
    sys.path.insert(0, str(EXAMPLES))
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import torch

    import vtrn

    result = {"mode": args.mode}
    vtrn.clear_op_tracking()
    result["step_cpu_s"], result["step_neuron_s"], result["step_metrics"] = time_steps(args)
    result["step_fallbacks"] = vtrn.get_fallback_ops()

    cpu = torch.randn(OP_ELEMENTS)
    neuron = cpu.to("neuron")
    for t in (cpu, neuron):  # warm up: compile, first-use warnings, allocator
        for _ in range(200):
            t + 1
    torch.neuron.synchronize()
    cpu_times, neuron_times = [], []
    before = metrics()
    for _ in range(2):  # interleaved, so drift on a shared machine hits both alike
        cpu_times.append(per_op_seconds(cpu))
        neuron_times.append(per_op_seconds(neuron))
    after = metrics()
    result["op_cpu_s"], result["op_neuron_s"] = min(cpu_times), min(neuron_times)
    if before is not None and after is not None:
        result["op_metrics"] = {
            k: after[k] - before[k] for k in after if isinstance(after[k], (int, float))
        }
    result["metrics"] = metrics()
    print("RESULT " + json.dumps(result), flush=True)


#
# Driver: one worker process per mode, then the table.
#


def run_mode(mode, args):
    with tempfile.TemporaryDirectory(prefix="vtrn-bench-cache-") as cache:
        env = dict(os.environ)
        env[CACHE] = cache
        env.pop(AEE, None)
        if mode == "on":
            env[AEE] = "1"
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            "--mode",
            mode,
            "--steps",
            str(args.steps),
            "--warmup",
            str(args.warmup),
            "--dtype",
            args.dtype,
            "--optimizer",
            args.optimizer,
        ]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(
            f"AEE {mode}: worker failed (rc {proc.returncode})\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
        )
        return None
    return json.loads(lines[-1].removeprefix("RESULT "))


def verdict(ok):
    return "ok" if ok else "MISS"


def report(r, args):
    mode = r["mode"]
    print(f"== AEE {mode} ({AEE}={'1' if mode == 'on' else 'unset'})")
    cpu_ms, neuron_ms = r["step_cpu_s"] * 1e3, r["step_neuron_s"] * 1e3
    ratio = r["step_neuron_s"] / r["step_cpu_s"]
    target = STEP_TARGET[mode]
    print(
        f"  llama step, size bench, {args.dtype}, AdamW({args.optimizer}): median of {args.steps} "
        f"after {args.warmup} warm-up, best of 2"
    )
    print(f"    cpu    {cpu_ms:9.2f} ms/step")
    print(f"    neuron {neuron_ms:9.2f} ms/step")
    print(
        f"    ratio neuron/cpu {ratio:6.2f}x   target <= {target:.1f}x  {verdict(ratio <= target)}"
    )
    fallbacks = r["step_fallbacks"]
    print(f"    fallback ops: {len(fallbacks)}{': ' + ', '.join(fallbacks) if fallbacks else ''}")
    m = r.get("step_metrics")
    if m:
        per = {k: v / args.steps for k, v in m.items()}
        print("    per timed step: " + ", ".join(f"{k} {v:g}" for k, v in sorted(per.items())))
        if per.get("modeled_device_time_us"):
            print(f"    modeled device time {per['modeled_device_time_us'] / 1e3:.3f} ms/step")
    else:
        print("    vtrn.metrics(): not in this build")
    cpu_us, neuron_us = r["op_cpu_s"] * 1e6, r["op_neuron_s"] * 1e6
    overhead = neuron_us - cpu_us
    print(
        f"  y = x + 1, {OP_ELEMENTS} float32 elements, {OP_COUNT} ops, one synchronize, best of {2 * OP_SAMPLES}"
    )
    print(f"    cpu    {cpu_us:9.2f} us/op")
    print(f"    neuron {neuron_us:9.2f} us/op")
    print(
        f"    overhead {overhead:7.2f} us/op   target < {OVERHEAD_TARGET_US:.0f} us  "
        f"{verdict(overhead < OVERHEAD_TARGET_US)}"
    )
    if r.get("op_metrics"):
        m = r["op_metrics"]
        ops = 2 * OP_SAMPLES * OP_COUNT
        print(f"    over the {ops} ops: " + ", ".join(f"{k} {v:g}" for k, v in sorted(m.items())))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="both", choices=["off", "on", "both"])
    parser.add_argument("--steps", type=int, default=5, help="timed steps per round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--optimizer", default="foreach", choices=["foreach", "fused", "single"])
    parser.add_argument("--timeout", type=int, default=600, help="seconds per worker process")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    failed = False
    for mode in ["off", "on"] if args.mode == "both" else [args.mode]:
        r = run_mode(mode, args)
        if r is None:
            failed = True
            continue
        report(r, args)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
