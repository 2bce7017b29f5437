"""One Llama-style training step, single device: the eager workload vtrn has to run natively.

    python examples/llama_step.py --device neuron --dtype bfloat16 --steps 10
    python examples/llama_step.py --device cpu --dtype float32 --optimizer fused

A decoder (token embedding, RMSNorm, rotary embedding, causal scaled_dot_product_attention,
SwiGLU MLP, output projection) trained with cross-entropy, torch.nn.utils.clip_grad_norm_ and
torch.optim.AdamW in one of its three implementations: `foreach` (foreach=True), `fused`
(fused=True) or `single` (foreach=False, one tensor at a time). The model is built on the CPU
from a fixed seed and moved to the device; batches come from a CPU torch.Generator seeded per
step, so a run on `neuron` and a run on `cpu` see the same parameters and data.

On `neuron` the script also prints the ops that fell back to the CPU and vtrn.metrics()
(where the build has it); --json prints one line `{"losses": [...], "fallbacks": [...],
"metrics": {...}}` for tests and benchmarks to parse.
"""

import argparse
import dataclasses
import json
import sys
import warnings

import torch
import torch.nn.functional as F
from torch import nn

# The same building blocks as the distributed example (this directory is on sys.path when the
# script runs, and the tests put it there).
from train_llama import RMSNorm, rotary


@dataclasses.dataclass(frozen=True)
class Size:
    vocab: int
    dim: int
    layers: int
    heads: int
    ffn: int
    seq: int
    batch: int


SIZES = {
    "tiny": Size(vocab=64, dim=32, layers=2, heads=4, ffn=64, seq=16, batch=4),
    "bench": Size(vocab=1024, dim=256, layers=4, heads=8, ffn=688, seq=128, batch=8),
}

OPTIMIZERS = ("foreach", "fused", "single")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


class Attention(nn.Module):
    def __init__(self, size: Size):
        super().__init__()
        self.head_dim = size.dim // size.heads
        self.wq = nn.Linear(size.dim, size.dim, bias=False)
        self.wk = nn.Linear(size.dim, size.dim, bias=False)
        self.wv = nn.Linear(size.dim, size.dim, bias=False)
        self.wo = nn.Linear(size.dim, size.dim, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self, size: Size):
        super().__init__()
        self.w1 = nn.Linear(size.dim, size.ffn, bias=False)
        self.w2 = nn.Linear(size.ffn, size.dim, bias=False)
        self.w3 = nn.Linear(size.dim, size.ffn, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, size: Size):
        super().__init__()
        self.attention_norm = RMSNorm(size.dim)
        self.attention = Attention(size)
        self.ffn_norm = RMSNorm(size.dim)
        self.feed_forward = FeedForward(size)

    def forward(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    def __init__(self, size: Size, max_seq: int):
        super().__init__()
        self.size = size
        self.tok_embeddings = nn.Embedding(size.vocab, size.dim)
        self.layers = nn.ModuleList(Block(size) for _ in range(size.layers))
        self.norm = RMSNorm(size.dim)
        self.output = nn.Linear(size.dim, size.vocab, bias=False)
        half = size.dim // size.heads // 2
        freqs = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float32) / half))
        angles = torch.outer(torch.arange(max_seq, dtype=torch.float32), freqs)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, tokens):
        t = tokens.shape[1]
        cos, sin = self.cos[:t], self.sin[:t]
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))


def resolve_size(size, seq=None, batch=None) -> Size:
    """A named size (or a Size), with the sequence length or batch overridden if given."""
    size = SIZES[size] if isinstance(size, str) else size
    return dataclasses.replace(size, seq=seq or size.seq, batch=batch or size.batch)


def make_model(device="cpu", dtype=torch.float32, size="tiny"):
    """The model for |size|, built on the CPU from seed 0 in float32, then moved to |device|, |dtype|."""
    size = resolve_size(size)
    torch.manual_seed(0)
    # Rotary tables cover up to 4x the size's sequence, so a longer --seq still fits.
    model = Llama(size, max_seq=4 * size.seq)
    return model.to(device=device, dtype=dtype)


def make_optimizer(model, optimizer="foreach", lr=1e-2):
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, not {optimizer!r}")
    kwargs = {"foreach": {"foreach": True}, "fused": {"fused": True}, "single": {"foreach": False}}[
        optimizer
    ]
    return torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1, **kwargs
    )


def batch(step, size: Size):
    """Tokens and targets of |step|, on the CPU, the same for every device."""
    g = torch.Generator().manual_seed(1000 + step)
    tokens = torch.randint(0, size.vocab, (size.batch, size.seq + 1), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def loss_fn(logits, targets):
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


class Stepper:
    """Model, optimizer and data of one run; step(i) runs training step |i| and returns its loss
    (a 0-dim float32 tensor on the device, not synchronized)."""

    def __init__(
        self,
        device="cpu",
        dtype=torch.float32,
        optimizer="foreach",
        clip=1.0,
        size="tiny",
        seq=None,
        batch=None,
    ):
        self.device = torch.device(device)
        self.dtype = DTYPES[dtype] if isinstance(dtype, str) else dtype
        self.size = resolve_size(size, seq, batch)
        self.model = make_model(self.device, self.dtype, self.size)
        self.optimizer = make_optimizer(self.model, optimizer)
        self.clip = clip
        # The per-tensor optimizer clips per tensor too; the others use the foreach norm.
        self.clip_foreach = optimizer != "single"

    def step(self, i):
        tokens, targets = batch(i, self.size)
        tokens, targets = tokens.to(self.device), targets.to(self.device)
        self.optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(self.model(tokens), targets)
        loss.backward()
        if self.clip:
            torch.nn.utils.clip_grad_norm_(
                self.model.parameters(), self.clip, foreach=self.clip_foreach
            )
        self.optimizer.step()
        return loss.detach()

    def synchronize(self):
        if self.device.type == "neuron":
            torch.neuron.synchronize()


def train(
    device="cpu",
    dtype=torch.float32,
    steps=10,
    optimizer="foreach",
    clip=1.0,
    size="tiny",
    seq=None,
    batch=None,
):
    """Trains for |steps| steps and returns the per-step losses (floats, before each update)."""
    stepper = Stepper(device, dtype, optimizer, clip, size, seq, batch)
    losses = [stepper.step(i) for i in range(steps)]
    return [loss.item() for loss in losses]


def metrics():
    """vtrn.metrics() where the build has it, else None."""
    try:
        import vtrn
    except ImportError:
        return None
    return vtrn.metrics() if hasattr(vtrn, "metrics") else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="neuron")
    parser.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--optimizer", default="foreach", choices=OPTIMIZERS)
    parser.add_argument(
        "--clip", type=float, default=1.0, help="max grad norm; 0 turns clipping off"
    )
    parser.add_argument("--size", default="tiny", choices=sorted(SIZES))
    parser.add_argument("--seq", type=int, default=None, help="override the size's sequence length")
    parser.add_argument("--batch", type=int, default=None, help="override the size's batch")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of text")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*fell back to CPU")
    on_neuron = torch.device(args.device).type == "neuron"
    if on_neuron:
        import vtrn

        vtrn.clear_op_tracking()
    losses = train(
        args.device,
        DTYPES[args.dtype],
        args.steps,
        args.optimizer,
        args.clip,
        args.size,
        args.seq,
        args.batch,
    )
    fallbacks = sorted(vtrn.get_fallback_ops()) if on_neuron else []
    stats = metrics() if on_neuron else None
    if args.json:
        print(json.dumps({"losses": losses, "fallbacks": fallbacks, "metrics": stats}), flush=True)
        return 0
    for step, loss in enumerate(losses):
        print(f"step {step} loss {loss:.6f}", flush=True)
    if on_neuron:
        print(f"fallback ops ({len(fallbacks)}): {', '.join(fallbacks) if fallbacks else 'none'}")
        if stats is None:
            print("vtrn.metrics(): not in this build")
        else:
            print("vtrn.metrics():")
            for key, value in stats.items():
                print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
