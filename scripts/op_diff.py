"""Op-by-op bit comparison of `neuron` against the CPU, for finding where a model's numbers part.

Runs a function on `neuron` under a dispatch mode that replays every aten call on CPU copies of
its inputs and compares the float outputs bit for bit (NaN equal to NaN). Views, copies and
factories are skipped; an op whose CPU replay raises is skipped too. The first op that differs is
where to look: later ones may only inherit its difference.

    python scripts/op_diff.py gpt2          # one training step of a tiny HF model
    python scripts/op_diff.py --list        # the models it builds (from configs, no downloads)

Exit status 0 when no op differs, 1 when one does, 2 for a model it does not know.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

SKIPPED = ("detach", "_to_copy", "copy_", "empty", "empty_strided", "lift_fresh", "clone")


@dataclasses.dataclass
class OpStats:
    calls: int = 0
    differing_calls: int = 0
    max_abs_diff: float = 0.0
    min_equal_fraction: float = 1.0


def _cpu(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().clone()
    if isinstance(x, torch.device):
        return torch.device("cpu")
    return x


class _Compare(TorchDispatchMode):
    def __init__(self, stats):
        super().__init__()
        self.stats = stats

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = func.__name__
        if name.split(".")[0] in SKIPPED or "view" in name or "_local_scalar" in name:
            return out
        try:
            ref = func(*tree_map(_cpu, args), **tree_map(_cpu, kwargs))
        except Exception:  # noqa: BLE001 - an op the CPU cannot replay is not compared
            return out
        outs = out if isinstance(out, (tuple, list)) else [out]
        refs = ref if isinstance(ref, (tuple, list)) else [ref]
        for i, (o, r) in enumerate(zip(outs, refs)):
            if not (isinstance(o, torch.Tensor) and isinstance(r, torch.Tensor)):
                continue
            if not o.is_floating_point() or o.shape != r.shape or o.numel() == 0:
                continue
            got = o.detach().cpu()
            equal = (got == r) | (got.isnan() & r.isnan())
            s = self.stats[f"{name}[{i}] {tuple(o.shape)} {o.dtype}"]
            s.calls += 1
            if not bool(equal.all()):
                s.differing_calls += 1
                diff = (got.double() - r.double()).abs().nan_to_num(posinf=0, neginf=0)
                s.max_abs_diff = max(s.max_abs_diff, diff.max().item())
                s.min_equal_fraction = min(s.min_equal_fraction, equal.float().mean().item())
        return out


def compare_ops(fn) -> dict[str, OpStats]:
    """Runs fn() under the comparison; per op signature (name, output index, shape, dtype), in
    the order first seen, how its calls compared."""
    stats: dict[str, OpStats] = collections.defaultdict(OpStats)
    with _Compare(stats):
        fn()
    return dict(stats)


def _models():
    import transformers as t

    ids = torch.randint(0, 500, (2, 32), generator=torch.Generator().manual_seed(1))
    text = {"input_ids": ids, "labels": ids}
    small = dict(vocab_size=500)
    return {
        "llama": lambda: (
            t.LlamaForCausalLM(
                t.LlamaConfig(
                    hidden_size=64,
                    intermediate_size=128,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    num_key_value_heads=2,
                    max_position_embeddings=64,
                    attn_implementation="sdpa",
                    **small,
                )
            ),
            text,
        ),
        "gpt2": lambda: (
            t.GPT2LMHeadModel(
                t.GPT2Config(
                    n_embd=64,
                    n_layer=2,
                    n_head=4,
                    n_positions=64,
                    resid_pdrop=0.0,
                    embd_pdrop=0.0,
                    attn_pdrop=0.0,
                    attn_implementation="sdpa",
                    **small,
                )
            ),
            text,
        ),
        "bert": lambda: (
            t.BertForMaskedLM(
                t.BertConfig(
                    hidden_size=64,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    intermediate_size=128,
                    max_position_embeddings=64,
                    hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0,
                    attn_implementation="sdpa",
                    **small,
                )
            ),
            text,
        ),
        "t5": lambda: (
            t.T5ForConditionalGeneration(
                t.T5Config(
                    d_model=64,
                    d_ff=128,
                    num_layers=2,
                    num_heads=4,
                    d_kv=16,
                    dropout_rate=0.0,
                    decoder_start_token_id=0,
                    pad_token_id=0,
                    **small,
                )
            ),
            text,
        ),
        "vit": lambda: (
            t.ViTForImageClassification(
                t.ViTConfig(
                    hidden_size=64,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    intermediate_size=128,
                    image_size=32,
                    patch_size=8,
                    num_labels=10,
                    hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0,
                    attn_implementation="sdpa",
                )
            ),
            {"pixel_values": torch.randn(2, 3, 32, 32), "labels": torch.tensor([1, 7])},
        ),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", help="a tiny HF model to train one step")
    parser.add_argument("--list", action="store_true", help="print the models and exit")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    models = _models()
    if args.list:
        print(" ".join(models))
        return 0
    if args.model not in models:
        print(
            f"op_diff: unknown model {args.model!r}; choose one of {', '.join(models)}",
            file=sys.stderr,
        )
        return 2
    import vtrn  # noqa: F401 - registers the device

    torch.manual_seed(0)
    model, inputs = models[args.model]()
    model = model.to("neuron")
    inputs = {k: v.to("neuron") for k, v in inputs.items()}
    stats = compare_ops(lambda: model(**inputs).loss.backward())
    differing = {k: s for k, s in stats.items() if s.differing_calls}
    print(f"{args.model}: {len(stats)} op signatures compared, {len(differing)} differ")
    for key, s in differing.items():
        print(
            f"  {key}: {s.differing_calls}/{s.calls} calls differ, max |diff| "
            f"{s.max_abs_diff:.3g}, {100 * s.min_equal_fraction:.1f}% of elements equal"
        )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
