"""Op-by-op bit comparison of `neuron` against the CPU, for finding where a model's numbers part.

Runs a function on `neuron` under a dispatch mode that replays every aten call on CPU copies of
its inputs (taken before the op runs) and compares the outputs bit for bit (NaN equal to NaN,
-0.0 not equal to 0.0; integer results too, and dtypes and shapes), and the arguments an op
writes without returning them. The attention ops PyTorch sends to the device's own kernel
replay through the CPU's flash attention. Factories of undefined contents and random draws are
skipped; an op whose CPU replay raises is skipped too. The first op that differs is where to
look: later ones may only inherit its difference.

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

# Factories whose contents are undefined and random draws are not compared; copies, casts and
# views are (a cast is an op that can round otherwise than the CPU's).
SKIPPED = (
    "empty",
    "empty_strided",
    "empty_like",
    "new_empty",
    "new_empty_strided",
    "set_",
    "resize_",
    "bernoulli",
    "bernoulli_",
    "rand",
    "randn",
    "randint",
    "rand_like",
    "randn_like",
    "randint_like",
    "normal",
    "normal_",
    "uniform_",
    "random_",
    "exponential_",
    "multinomial",
    "randperm",
    "native_dropout",
    "record_stream",
)


@dataclasses.dataclass
class OpStats:
    calls: int = 0
    differing_calls: int = 0
    max_abs_diff: float = 0.0
    min_equal_fraction: float = 1.0
    kind: str = ""  # what differed first: values, a dtype, a shape


def _cpu(x):
    if isinstance(x, torch.Tensor):
        # With the device tensor's strides: the CPU's kernels take other paths for a strided
        # view (a row slice, a transpose) than for its dense copy.
        copy = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype)
        try:
            return copy.copy_(x.detach())
        except RuntimeError:  # an expanded view (stride 0) takes no copy
            return x.detach().cpu().clone()
    if isinstance(x, torch.device):
        return torch.device("cpu")
    return x


def _replay_on_cpu(func, args, kwargs):
    """func on the CPU. The CPU has no kernel for the PrivateUse1 attention ops: those replay
    through the kernels a CPU run of scaled_dot_product_attention takes (ATen's flash attention
    and its backward); results the CPU has no counterpart for come back as None."""
    name = func.__name__
    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    flash_backward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default
    scale = kwargs.get("scale")
    if name.startswith("_scaled_dot_product_fused_attention_overrideable_backward"):
        grad, q, k, v, bias, mask, _out, _saved, *_ = args
        dropout, causal = args[12], args[13]
        out, lse = flash(q, k, v, dropout, causal, attn_mask=bias, scale=scale)
        grads = flash_backward(
            grad, q, k, v, out, lse, dropout, causal, attn_mask=bias, scale=scale
        )
        return tuple(g if wanted else None for g, wanted in zip((*grads, None), mask))
    if name.startswith("_scaled_dot_product_fused_attention_overrideable"):
        q, k, v = args[:3]
        bias = args[3] if len(args) > 3 else kwargs.get("attn_bias")
        dropout = args[4] if len(args) > 4 else kwargs.get("dropout_p", 0.0)
        causal = args[5] if len(args) > 5 else kwargs.get("is_causal", False)
        out, _ = flash(q, k, v, dropout, causal, attn_mask=bias, scale=scale)
        return (out,) + (None,) * 8
    return func(*args, **kwargs)


class _Compare(TorchDispatchMode):
    def __init__(self, stats):
        super().__init__()
        self.stats = stats

    def _compare(self, key, got, want):
        if got is None or want is None:
            return
        s = self.stats[key]
        s.calls += 1
        kind = ""
        if not isinstance(got, torch.Tensor) or not isinstance(want, torch.Tensor):
            if not isinstance(got, (bool, int, float)):  # an opaque object (a profiler record)
                s.calls -= 1
                return
            if got != want and not (got != got and want != want):  # NaN equals NaN
                kind = "values"
        elif got.dtype != want.dtype:
            kind = f"dtype {got.dtype} (the CPU's {want.dtype})"
        elif got.shape != want.shape:
            kind = f"shape {tuple(got.shape)} (the CPU's {tuple(want.shape)})"
        elif got.numel():
            got = got.detach().cpu()
            if got.is_complex():
                got, want = torch.view_as_real(got), torch.view_as_real(want)
            if got.is_floating_point():
                # Bits: NaN equals NaN, -0.0 does not equal 0.0.
                equal = ((got == want) | (got.isnan() & want.isnan())) & (
                    torch.signbit(got) == torch.signbit(want)
                )
            else:
                equal = got == want
            if not bool(equal.all()):
                kind = "values"
                diff = (got.double() - want.double()).abs().nan_to_num(nan=float("inf"))
                s.max_abs_diff = max(s.max_abs_diff, diff.max().item())
                s.min_equal_fraction = min(s.min_equal_fraction, equal.float().mean().item())
        if kind:
            s.differing_calls += 1
            s.kind = s.kind or kind

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.__name__
        if name.split(".")[0] in SKIPPED or "_local_scalar" in name:
            return func(*args, **kwargs)
        # The CPU copies are taken before the op runs, which may write its inputs.
        cpu_args, cpu_kwargs = tree_map(_cpu, (args, kwargs))
        out = func(*args, **kwargs)
        try:
            ref = _replay_on_cpu(func, cpu_args, cpu_kwargs)
        except Exception:  # noqa: BLE001 - an op the CPU cannot replay is not compared
            return out
        outs = out if isinstance(out, (tuple, list)) else [out]
        refs = ref if isinstance(ref, (tuple, list)) else [ref]
        for i, (o, r) in enumerate(zip(outs, refs)):
            if isinstance(o, (tuple, list)):  # a list result (the foreach ops)
                for j, (oj, rj) in enumerate(zip(o, r)):
                    self._compare(f"{name}[{i}.{j}] {_signature(oj)}", oj, rj)
            else:
                self._compare(f"{name}[{i}] {_signature(o)}", o, r)
        # Arguments the op writes without returning them (batch norm's running statistics).
        for k, a in enumerate(func._schema.arguments):
            if a.alias_info is None or not a.alias_info.is_write:
                continue
            if k < len(args):
                o, r = args[k], cpu_args[k]
            elif a.name in kwargs:
                o, r = kwargs[a.name], cpu_kwargs[a.name]
            else:
                continue
            if isinstance(o, torch.Tensor) and not any(o is x for x in outs):
                self._compare(f"{name}<writes {a.name}> {_signature(o)}", o, r)
            elif isinstance(o, (tuple, list)) and out is None:  # the in-place foreach ops
                for j, (oj, rj) in enumerate(zip(o, r)):
                    self._compare(f"{name}<writes {a.name}.{j}> {_signature(oj)}", oj, rj)
        return out


def _signature(x):
    return f"{tuple(x.shape)} {x.dtype}" if isinstance(x, torch.Tensor) else type(x).__name__


def compare_ops(fn) -> dict[str, OpStats]:
    """Runs fn() under the comparison; per op signature (name, output index, shape, dtype), in
    the order first seen, how its calls compared."""
    stats: dict[str, OpStats] = collections.defaultdict(OpStats)
    with _Compare(stats):
        fn()
    return dict(stats)


def models():
    """The tiny HF models by name: each a function giving (model, keyword inputs with labels)."""
    import transformers as t

    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 500, (2, 32), generator=g)
    text = {"input_ids": ids, "labels": ids}
    small = dict(vocab_size=500)
    decoder = dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        attn_implementation="sdpa",
        **small,
    )
    pixels = {
        "pixel_values": torch.randn(2, 3, 32, 32, generator=g),
        "labels": torch.tensor([1, 7]),
    }
    return {
        "gemma": lambda: (t.GemmaForCausalLM(t.GemmaConfig(head_dim=16, **decoder)), text),
        "qwen3": lambda: (t.Qwen3ForCausalLM(t.Qwen3Config(head_dim=16, **decoder)), text),
        "mixtral": lambda: (
            t.MixtralForCausalLM(
                t.MixtralConfig(num_local_experts=4, num_experts_per_tok=2, **decoder)
            ),
            text,
        ),
        "clip": lambda: (
            t.CLIPModel(
                t.CLIPConfig(
                    text_config=dict(
                        hidden_size=64,
                        intermediate_size=128,
                        num_hidden_layers=2,
                        num_attention_heads=4,
                        max_position_embeddings=32,
                        vocab_size=500,
                    ),
                    vision_config=dict(
                        hidden_size=64,
                        intermediate_size=128,
                        num_hidden_layers=2,
                        num_attention_heads=4,
                        image_size=32,
                        patch_size=8,
                    ),
                    projection_dim=32,
                )
            ),
            {"input_ids": ids, "pixel_values": pixels["pixel_values"], "return_loss": True},
        ),
        "resnet": lambda: (
            t.ResNetForImageClassification(
                t.ResNetConfig(
                    embedding_size=16,
                    hidden_sizes=[16, 32],
                    depths=[1, 1],
                    layer_type="bottleneck",
                    num_labels=10,
                )
            ),
            pixels,
        ),
        "llama": lambda: (t.LlamaForCausalLM(t.LlamaConfig(**decoder)), text),
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
    known = models()
    if args.list:
        print(" ".join(known))
        return 0
    if args.model not in known:
        print(
            f"op_diff: unknown model {args.model!r}; choose one of {', '.join(known)}",
            file=sys.stderr,
        )
        return 2
    import vtrn  # noqa: F401 - registers the device

    torch.manual_seed(0)
    model, inputs = known[args.model]()
    model = model.to("neuron")
    inputs = {k: v.to("neuron") if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    stats = compare_ops(lambda: model(**inputs).loss.backward())
    differing = {k: s for k, s in stats.items() if s.differing_calls}
    print(f"{args.model}: {len(stats)} op signatures compared, {len(differing)} differ")
    for key, s in differing.items():
        print(
            f"  {key}: {s.differing_calls}/{s.calls} calls differ ({s.kind}), max |diff| "
            f"{s.max_abs_diff:.3g}, {100 * s.min_equal_fraction:.1f}% of elements equal"
        )
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
