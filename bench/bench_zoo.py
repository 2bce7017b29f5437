"""Training steps of the model zoo's tiny HF models on `neuron` against `cpu`.

The models are the zoo test's (tests/python/test_model_zoo.py builds them: Llama, GPT-2 and
ViT, the same configs and batches). For each model and each threading mode, one fresh process
with its own compile cache trains a CPU copy and a neuron copy from the same weights (AdamW,
float32): warm-up steps (compiles land there), then timed steps that alternate the two devices
step by step, so that load from elsewhere hits both alike, each ending in a host read of the
loss; the median per device, best of two rounds. Threading modes: "single" (OMP_NUM_THREADS=1 and
torch.set_num_threads(1)) and "default" (PyTorch's own choice).

It prints ms/step on each device, the ratio neuron/cpu and the ops that fell back. Nothing is
asserted: the Speed targets are reported elsewhere.

    python bench/bench_zoo.py                        # every model, both threading modes
    python bench/bench_zoo.py --models llama --threads single --steps 5
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

TESTS = pathlib.Path(__file__).resolve().parents[1] / "tests" / "python"
CACHE = "TORCH_NEURONX_NEFF_CACHE_DIR"
MODELS = ("llama", "gpt2", "vit")
THREADS = ("single", "default")


#
# Worker: one process, one model, one threading mode.
#


class Trainer:
    def __init__(self, build, device, state):
        import torch

        torch.manual_seed(0)
        self.model, batch = build()
        self.model.load_state_dict(state)
        self.model.to(device).train()
        self.batch = {k: v.to(device) for k, v in batch.items()}
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=1e-3)

    def step(self):
        self.opt.zero_grad()
        loss = self.model(**self.batch).loss
        loss.backward()
        self.opt.step()
        return loss.detach()


def time_round(trainers, steps):
    """Median seconds per step of each trainer, the devices alternating step by step so that
    the machine's drift hits both alike."""
    samples = {device: [] for device in trainers}
    for _ in range(steps):
        for device, trainer in trainers.items():
            start = time.perf_counter()
            trainer.step().item()
            samples[device].append(time.perf_counter() - start)
    return {device: statistics.median(s) for device, s in samples.items()}


def worker(args):
    sys.path.insert(0, str(TESTS))
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    import test_model_zoo
    import torch

    import vtrn

    if args.threads == "single":
        torch.set_num_threads(1)
    build = test_model_zoo.MODELS[args.model]
    torch.manual_seed(0)
    reference, _ = build()
    state = reference.state_dict()
    trainers = {device: Trainer(build, device, state) for device in ("cpu", "neuron")}
    vtrn.clear_op_tracking()
    for trainer in trainers.values():
        for _ in range(args.warmup):
            trainer.step().item()
    best = {"cpu": float("inf"), "neuron": float("inf")}
    for _ in range(2):
        for device, seconds in time_round(trainers, args.steps).items():
            best[device] = min(best[device], seconds)
    result = {
        "model": args.model,
        "threads": args.threads,
        "torch_threads": torch.get_num_threads(),
        "cpu_s": best["cpu"],
        "neuron_s": best["neuron"],
        "fallbacks": vtrn.get_fallback_ops(),
    }
    print("RESULT " + json.dumps(result), flush=True)


#
# Driver: one worker process per (model, threading mode), then the table.
#


def run_one(model, threads, args):
    with tempfile.TemporaryDirectory(prefix="vtrn-bench-cache-") as cache:
        env = dict(os.environ)
        env[CACHE] = cache
        if threads == "single":
            env["OMP_NUM_THREADS"] = "1"
        cmd = [
            sys.executable, __file__, "--worker", "--model", model, "--threads", threads,
            "--steps", str(args.steps), "--warmup", str(args.warmup),
        ]  # fmt: skip
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(
            f"{model} ({threads}): worker failed (rc {proc.returncode})\n"
            f"{proc.stdout[-2000:]}{proc.stderr[-4000:]}"
        )
        return None
    return json.loads(lines[-1].removeprefix("RESULT "))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--threads", default=",".join(THREADS))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--model", choices=MODELS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    models = [m for m in args.models.split(",") if m]
    threads = [t for t in args.threads.split(",") if t]
    for name in models + threads:
        if name not in MODELS + THREADS:
            parser.error(
                f"unknown model or threading mode {name!r}; choose from {MODELS + THREADS}"
            )
    print(
        f"zoo training steps (AdamW, float32): median of {args.steps} alternating steps after "
        f"{args.warmup} warm-up, best of 2"
    )
    print(f"{'model':8} {'threads':14} {'cpu ms':>9} {'neuron ms':>10} {'ratio':>7}  fallbacks")
    failed = False
    for threads_mode in threads:
        for model in models:
            r = run_one(model, threads_mode, args)
            if r is None:
                failed = True
                continue
            ratio = r["neuron_s"] / r["cpu_s"]
            label = f"{threads_mode} ({r['torch_threads']})"
            fb = ", ".join(r["fallbacks"]) or "none"
            print(
                f"{model:8} {label:14} {r['cpu_s'] * 1e3:9.2f} {r['neuron_s'] * 1e3:10.2f} "
                f"{ratio:6.2f}x  {fb}",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
