"""The main job: a small MLP trained for 20 steps on `neuron`, beside the same model on `cpu`.

Both runs start from the same seed and see the same batches; the losses must agree (the
device computes what the CPU computes). Run it with `make demo`.
"""

import argparse
import sys
import warnings

import torch
from torch import nn


def train(device: str, steps: int = 20, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    model = nn.Sequential(
        nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 10)
    )
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(seed + 1)
    losses = []
    for _ in range(steps):
        x = torch.randn(16, 32, generator=data).to(device)
        y = torch.randint(0, 10, (16,), generator=data).to(device)
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--rtol", type=float, default=1e-5)
    args = parser.parse_args()

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*fell back to CPU")
        neuron = train("neuron", args.steps)
    cpu = train("cpu", args.steps)

    import vtrn

    print(f"{'step':>4}  {'neuron loss':>12}  {'cpu loss':>12}  {'rel diff':>9}")
    worst = 0.0
    for step, (a, b) in enumerate(zip(neuron, cpu), start=1):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst = max(worst, rel)
        print(f"{step:>4}  {a:>12.6f}  {b:>12.6f}  {rel:>9.2e}")
    fallbacks = vtrn.get_fallback_ops()
    print(f"\nops that fell back to CPU: {len(fallbacks)} (vtrn.get_fallback_ops())")
    ok = worst <= args.rtol
    print(f"max relative difference {worst:.2e} ({'within' if ok else 'OUTSIDE'} {args.rtol:g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
