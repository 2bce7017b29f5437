"""A small Llama-style model trained on `neuron` with a torchtitan-style mesh.

    vtrn run --nproc-per-node 8 examples/train_llama.py --layout tp4-fsdp2
    python examples/train_llama.py --layout cpu          # the single-process reference

Layouts (8 processes): ddp8, fsdp8, hsdp2x4 (replicate x shard), tp4-fsdp2 (tensor and
sequence parallel inside each FSDP shard), pp2-tp4 (two pipeline stages, TP4 in each;
--schedule gpipe|1f1b). FSDP layouts keep bfloat16 parameters for compute and float32
gradients for reduction. Rank 0 prints one line per step: `step N loss L`.
--save-at K --checkpoint DIR saves a distributed checkpoint after step K; --resume DIR
restores it and continues from step K+1.

--size llama3-70b gives the model Llama-3-70B's dimensions (80 layers, hidden 8192, 64 query
and 8 key/value heads, FFN 28672, vocabulary 128256, sequence 4096) and one sequence per data
parallel rank. Its parameters are created on the device without initial values (`to_empty`):
it is meant for `vtrn estimate`, which runs it in shape-only execution:

    vtrn estimate --nodes 4 --nproc-per-node 64 --ranks 0 -- examples/train_llama.py \
        --size llama3-70b --layout tp4-fsdp2 --checkpointing full
"""

import argparse
import contextlib
import sys
import warnings

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, DIM, LAYERS, HEADS, FFN, SEQ, BATCH = 64, 32, 2, 4, 64, 16, 8
KV_HEADS = HEADS  # key/value heads (grouped-query attention when fewer than HEADS)
ON_META = False  # the model is built on meta and created on the device after sharding
CHECKPOINT = False  # --checkpointing full: each block's activations are recomputed in backward
# --size: the module constants above; BATCH None means one sequence per data parallel rank.
SIZES = {
    "tiny": dict(
        VOCAB=64, DIM=32, LAYERS=2, HEADS=4, KV_HEADS=4, FFN=64, SEQ=16, BATCH=8, ON_META=False
    ),
    # meta-llama/Meta-Llama-3-70B config.json; torchtitan's sequence length 4096.
    "llama3-70b": dict(
        VOCAB=128256,
        DIM=8192,
        LAYERS=80,
        HEADS=64,
        KV_HEADS=8,
        FFN=28672,
        SEQ=4096,
        BATCH=None,
        ON_META=True,  # too large to build on the host: parameters start on meta
    ),
}


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary(x, cos, sin):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.head_dim = DIM // HEADS
        self.repeats = HEADS // KV_HEADS  # query heads per key/value head
        self.wq = nn.Linear(DIM, DIM, bias=False)
        self.wk = nn.Linear(DIM, KV_HEADS * self.head_dim, bias=False)
        self.wv = nn.Linear(DIM, KV_HEADS * self.head_dim, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        # -1 heads: under tensor parallelism each rank holds HEADS / tp of them.
        q = self.wq(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, -1, self.head_dim).transpose(1, 2)
        q, k = rotary(q, cos, sin), rotary(k, cos, sin)
        if self.repeats > 1:
            k = k.repeat_interleave(self.repeats, dim=1)
            v = v.repeat_interleave(self.repeats, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, -1))


class FeedForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(DIM, FFN, bias=False)
        self.w2 = nn.Linear(FFN, DIM, bias=False)
        self.w3 = nn.Linear(DIM, FFN, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm = RMSNorm(DIM)
        self.attention = Attention()
        self.ffn_norm = RMSNorm(DIM)
        self.feed_forward = FeedForward()

    def forward(self, x, cos, sin):
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    """Pipeline stages keep a subset of the layers; missing parts are None, as in torchtitan."""

    def __init__(self):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleDict({str(i): Block() for i in range(LAYERS)})
        self.norm = RMSNorm(DIM)
        self.output = nn.Linear(DIM, VOCAB, bias=False)
        half = DIM // HEADS // 2
        freqs = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float32) / half))
        angles = torch.outer(torch.arange(SEQ, dtype=torch.float32), freqs)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
        for layer in self.layers.values():
            if CHECKPOINT:
                from torch.utils.checkpoint import checkpoint

                h = checkpoint(layer, h, self.cos, self.sin, use_reentrant=False)
            else:
                h = layer(h, self.cos, self.sin)
        h = self.norm(h) if self.norm is not None else h
        return self.output(h) if self.output is not None else h


def batch(step, size=None):
    g = torch.Generator().manual_seed(1000 + step)
    tokens = torch.randint(0, VOCAB, (size or BATCH, SEQ + 1), generator=g)
    return tokens[:, :-1], tokens[:, 1:]


def set_size(name):
    """Sets the module's dimensions to those of size |name|."""
    globals().update(SIZES[name])


def to_device(model, device):
    """|model| moved to |device|; a model built on meta stays there until it is sharded."""
    if any(p.is_meta for p in model.parameters()):
        return model
    return model.to(device)


def loss_fn(logits, targets):
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(0, 1))


def make_model():
    torch.manual_seed(0)
    if ON_META:
        with torch.device("meta"):
            return Llama()
    return Llama()


def make_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.0, foreach=False)


#
# Layouts
#


def fsdp_policy():
    from torch.distributed.fsdp import MixedPrecisionPolicy

    return MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)


def shard_blocks(model, mesh):
    from torch.distributed.fsdp import fully_shard

    for block in model.layers.values():
        fully_shard(block, mesh=mesh, mp_policy=fsdp_policy())
    fully_shard(model, mesh=mesh, mp_policy=fsdp_policy())


def apply_tp(model, tp_mesh, loss_parallel=False):
    """Tensor and sequence parallelism, torchtitan's Llama plan. With |loss_parallel| the
    logits stay sharded over the vocabulary (a DTensor) for a loss computed under
    torch.distributed.tensor.parallel.loss_parallel(), as torchtitan does."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (
        ColwiseParallel,
        PrepareModuleInput,
        RowwiseParallel,
        SequenceParallel,
        parallelize_module,
    )

    plan = {}
    if model.tok_embeddings is not None:
        plan["tok_embeddings"] = RowwiseParallel(input_layouts=Replicate(), output_layouts=Shard(1))
    if model.norm is not None:
        plan["norm"] = SequenceParallel()
        plan["output"] = ColwiseParallel(
            input_layouts=Shard(1),
            output_layouts=Shard(-1) if loss_parallel else Replicate(),
            use_local_output=not loss_parallel,
        )
    parallelize_module(model, tp_mesh, plan)
    for block in model.layers.values():
        parallelize_module(
            block,
            tp_mesh,
            {
                "attention_norm": SequenceParallel(),
                "attention": PrepareModuleInput(
                    input_layouts=(Shard(1), None, None),
                    desired_input_layouts=(Replicate(), None, None),
                ),
                "attention.wq": ColwiseParallel(),
                "attention.wk": ColwiseParallel(),
                "attention.wv": ColwiseParallel(),
                "attention.wo": RowwiseParallel(output_layouts=Shard(1)),
                "ffn_norm": SequenceParallel(),
                "feed_forward": PrepareModuleInput(
                    input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),)
                ),
                "feed_forward.w1": ColwiseParallel(),
                "feed_forward.w2": RowwiseParallel(output_layouts=Shard(1)),
                "feed_forward.w3": ColwiseParallel(),
            },
        )


def pipeline_stage_model(stage, stages):
    """The layers of |stage|; the embeddings go with the first stage, norm and output with the last."""
    model = make_model()
    per_stage = LAYERS // stages
    keep = {str(i) for i in range(stage * per_stage, (stage + 1) * per_stage)}
    for name in list(model.layers.keys()):
        if name not in keep:
            del model.layers[name]
    if stage > 0:
        model.tok_embeddings = None
    if stage < stages - 1:
        model.norm = None
        model.output = None
    return model


class Trainer:
    """Builds the layout's model, optimizer and data slice; step() returns the global loss."""

    def __init__(self, layout, schedule):
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh

        self.dist = dist
        self.layout = layout
        dist.init_process_group("cpu:gloo,neuron:neuron")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.device = torch.device("neuron", torch.neuron.current_device())
        self.pp_schedule = None
        self.loss_parallel = False  # the loss over vocabulary-sharded logits (tp4-fsdp2)
        if layout == "ddp8":
            self.mesh = init_device_mesh("neuron", (self.world,), mesh_dim_names=("dp",))
            self.model = torch.nn.parallel.DistributedDataParallel(
                to_device(make_model(), self.device)
            )
            self.dp_rank, self.dp_size = self.rank, self.world
        elif layout == "fsdp8":
            self.mesh = init_device_mesh("neuron", (self.world,), mesh_dim_names=("shard",))
            self.model = to_device(make_model(), self.device)
            shard_blocks(self.model, self.mesh)
            self.dp_rank, self.dp_size = self.rank, self.world
        elif layout == "hsdp2x4":
            self.mesh = init_device_mesh(
                "neuron", (2, self.world // 2), mesh_dim_names=("replicate", "shard")
            )
            self.model = to_device(make_model(), self.device)
            shard_blocks(self.model, self.mesh)
            self.dp_rank, self.dp_size = self.rank, self.world
        elif layout == "tp4-fsdp2":
            self.mesh = init_device_mesh(
                "neuron", (self.world // 4, 4), mesh_dim_names=("shard", "tp")
            )
            self.model = to_device(make_model(), self.device)
            apply_tp(self.model, self.mesh["tp"], loss_parallel=True)
            self.loss_parallel = True
            shard_blocks(self.model, self.mesh["shard"])
            self.dp_rank, self.dp_size = (
                self.mesh["shard"].get_local_rank(),
                self.mesh["shard"].size(),
            )
        elif layout == "pp2-tp4":
            from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

            self.mesh = init_device_mesh(
                "neuron", (2, self.world // 2), mesh_dim_names=("pp", "tp")
            )
            stage = self.mesh["pp"].get_local_rank()
            self.model = to_device(pipeline_stage_model(stage, 2), self.device)
            apply_tp(self.model, self.mesh["tp"])
            self.stage = PipelineStage(
                self.model, stage, 2, self.device, group=self.mesh.get_group("pp")
            )
            cls = ScheduleGPipe if schedule == "gpipe" else Schedule1F1B
            self.pp_schedule = cls(self.stage, n_microbatches=4, loss_fn=loss_fn)
            self.dp_rank, self.dp_size = 0, 1
        else:
            raise SystemExit(f"unknown layout {layout!r}")
        if any(p.is_meta for p in self.model.parameters()):
            # Sharded on meta, then created on the device: each rank holds only its shards.
            self.model.to_empty(device=self.device)
        self.optimizer = make_optimizer(self.model)

    def step(self, step):
        tokens, targets = batch(step, BATCH or self.dp_size)
        per = (BATCH or self.dp_size) // self.dp_size
        mine = slice(per * self.dp_rank, per * (self.dp_rank + 1))
        tokens, targets = tokens[mine].to(self.device), targets[mine].to(self.device)
        self.optimizer.zero_grad()
        if self.pp_schedule is not None:
            losses = []
            if self.stage.is_first:
                self.pp_schedule.step(tokens)
            else:
                self.pp_schedule.step(target=targets, losses=losses)
            loss = torch.stack(losses).mean() if losses else torch.zeros((), device=self.device)
            # The last stage holds the loss: share it with every rank.
            last = self.mesh["pp"].size() - 1
            src = self.dist.get_global_rank(self.mesh.get_group("pp"), last)
            self.dist.broadcast(loss, src=src, group=self.mesh.get_group("pp"))
        else:
            with self.loss_context():
                loss = loss_fn(self.model(tokens), targets)
                loss.backward()
        self.optimizer.step()
        total = loss.detach().float()
        # A loss-parallel loss is a replicated DTensor: every TP rank holds the whole value.
        total = (total.full_tensor() if hasattr(total, "full_tensor") else total).clone()
        if self.dp_size > 1:
            self.dist.all_reduce(total, op=self.dist.ReduceOp.AVG)
        return total.item()

    def loss_context(self):
        if not self.loss_parallel:
            return contextlib.nullcontext()
        from torch.distributed.tensor.parallel import loss_parallel

        return loss_parallel()

    def state(self):
        from torch.distributed.checkpoint.state_dict import get_state_dict

        model_state, optim_state = get_state_dict(self.model, self.optimizer)
        return {"model": model_state, "optim": optim_state}

    def save(self, path):
        import torch.distributed.checkpoint as dcp

        dcp.save(self.state(), checkpoint_id=path)

    def load(self, path):
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_state_dict

        state = self.state()
        dcp.load(state, checkpoint_id=path)
        set_state_dict(
            self.model,
            self.optimizer,
            model_state_dict=state["model"],
            optim_state_dict=state["optim"],
        )


def run_cpu(steps):
    model = make_model()
    optimizer = make_optimizer(model)
    for step in range(steps):
        tokens, targets = batch(step)
        optimizer.zero_grad()
        loss = loss_fn(model(tokens), targets)
        loss.backward()
        optimizer.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--layout",
        default="fsdp8",
        choices=["cpu", "ddp8", "fsdp8", "hsdp2x4", "tp4-fsdp2", "pp2-tp4"],
    )
    parser.add_argument("--schedule", default="gpipe", choices=["gpipe", "1f1b"])
    parser.add_argument("--size", default="tiny", choices=sorted(SIZES))
    parser.add_argument("--layers", type=int, default=None, help="override the size's layers")
    parser.add_argument(
        "--checkpointing",
        default="none",
        choices=["none", "full"],
        help="full: recompute each block's activations in backward",
    )
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--save-at", type=int, default=None)
    parser.add_argument("--checkpoint", default=None)
    parser.add_argument(
        "--resume", default=None, help="checkpoint to restore; continues after --save-at"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    set_size(args.size)
    if args.layers is not None:
        globals()["LAYERS"] = args.layers
    globals()["CHECKPOINT"] = args.checkpointing == "full"
    if args.layout == "cpu":
        run_cpu(args.steps)
        return 0
    trainer = Trainer(args.layout, args.schedule)
    first = 0
    if args.resume:
        trainer.load(args.resume)
        first = (args.save_at or 0) + 1
    for step in range(first, args.steps):
        loss = trainer.step(step)
        if trainer.rank == 0:
            print(f"step {step} loss {loss:.6f}", flush=True)
        if args.save_at == step and args.checkpoint:
            trainer.save(args.checkpoint)
    trainer.dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
