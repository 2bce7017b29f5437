"""The layout planner: which FSDP / TP / PP / HSDP layout to train a model with on Trainium.

The model is C++ (layer ``plan``, reached through ``vtrn._native``): per-rank memory by part,
step time from the kernel cost model and the collective model, and a search over every
factorization of the world into pp x replicate x shard x tp, ranked by tokens per second. This
module gives it a typed Python face; docs/planner.md states the assumptions. No torch.

    from vtrn import plan

    result = plan.plan("llama3-70b", nodes=4, seq=2048, global_batch=1024)
    best = result.layouts[0]
    best.name, best.mesh_shape, best.tokens_per_second, best.memory.total / 2**30
    print(best.reason)   # why, in the terms of "Best practices for training on AWS Neuron"
    print(best.code)     # the DeviceMesh, as Python

Bad input (an unknown preset, a layout that does not fill the world) raises ValueError with
the planner's message.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from vtrn import _native

__all__ = [
    "Layout",
    "MemoryBreakdown",
    "ModelSummary",
    "PlanResult",
    "StepTime",
    "model",
    "plan",
    "presets",
    "step_model",
]


def _build(cls, data: dict, **overrides):
    """``cls`` from the keys of ``data`` it declares (absent ones keep their defaults)."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    values.update(overrides)
    return cls(**values)


@dataclass(frozen=True)
class ModelSummary:
    """A transformer as the planner sees it (a preset or a JSON model file)."""

    name: str
    source: str  # where the figures come from
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    activation: str
    vocab: int
    tied_embeddings: bool
    norm: str
    experts: int  # 0 for a dense model
    top_k: int
    expert_ffn: int
    params: int
    active_params: int


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per rank, by part; ``budget`` is the rank's HBM less the runtime's reserve."""

    parameters: float
    gradients: float
    optimizer: float
    gathered: float
    activations: float
    logits: float
    runtime: float
    collectives: float
    total: float
    budget: float

    PARTS = (
        "parameters",
        "gradients",
        "optimizer",
        "gathered",
        "activations",
        "logits",
        "runtime",
        "collectives",
    )

    @property
    def state(self) -> float:
        """Persistent model state: parameters, gradients and optimizer state."""
        return self.parameters + self.gradients + self.optimizer

    @property
    def other(self) -> float:
        """The runtime's reserve and the collective buffers."""
        return self.runtime + self.collectives


@dataclass(frozen=True)
class StepTime:
    """Seconds of one optimizer step, by part (``*_total`` include the overlapped time)."""

    compute: float
    recompute: float
    tp: float
    fsdp_exposed: float
    fsdp_total: float
    fsdp_internode: bool  # the shard groups cross nodes
    dp_exposed: float
    dp_total: float
    pp_p2p: float
    bubble: float
    optimizer: float

    # The parts that add up to the step, in the order reports stack them.
    PARTS = (
        "compute",
        "recompute",
        "tp",
        "fsdp_exposed",
        "dp_exposed",
        "pp_p2p",
        "bubble",
        "optimizer",
    )


@dataclass(frozen=True)
class Layout:
    """One evaluated layout: its mesh, memory, step time and the planner's verdict."""

    mesh_shape: list[int]
    mesh_axes: list[str]
    pp: int
    replicate: int
    shard: int
    tp: int
    micro_batch: int
    checkpointing: str  # "none", "selective" or "full"
    fits: bool  # in the memory budget
    routable: bool  # every group's collective can be built
    batch_ok: bool  # the global batch divides into the data-parallel ranks' micro-batches
    tp_ok: bool  # the model's heads divide by tp
    custom_placement: bool  # ranks are placed other than row-major
    placement: list[int] | None  # the placement, when custom
    memory: MemoryBreakdown
    time: StepTime
    step_time_s: float
    tokens_per_second: float
    mfu: float
    limiting_resource: str
    advice: str
    memory_peak_at: str = ""  # the moment of the step the memory peaks: loss, backward, ...
    zero1: bool = False  # optimizer state sharded over the data-parallel ranks (ZeRO-1)
    error_band: float = 0.0  # the calibration's relative error band of step_time_s
    step_time_low_s: float = 0.0  # step_time_s x (1 - error_band)
    step_time_high_s: float = 0.0  # step_time_s x (1 + error_band)
    tokens_per_second_low: float = 0.0
    tokens_per_second_high: float = 0.0
    tie_with_best: bool = False  # within the error band of the best layout's throughput
    route_error: str = ""
    batch_error: str = ""
    tp_error: str = ""
    reason: str = ""  # the explanation, in words
    code: str = ""  # the DeviceMesh, as Python

    @classmethod
    def from_native(cls, data: dict) -> Layout:
        return _build(
            cls,
            data,
            placement=data.get("placement"),
            memory=_build(MemoryBreakdown, data["memory_bytes"]),
            time=_build(StepTime, data["time_s"]),
        )

    @property
    def name(self) -> str:
        """``TP4 x FSDP16``, ``PP4 x TP8 x HSDP2x8``, ``DDP8``, ``ZeRO1-DP8``, or ``1 rank``."""
        parts = []
        if self.pp > 1:
            parts.append(f"PP{self.pp}")
        if self.tp > 1:
            parts.append(f"TP{self.tp}")
        if self.replicate > 1 and self.shard > 1:
            parts.append(f"HSDP{self.replicate}x{self.shard}")
        elif self.shard > 1:
            parts.append(f"FSDP{self.shard}")
        elif self.replicate > 1:
            parts.append(f"ZeRO1-DP{self.replicate}" if self.zero1 else f"DDP{self.replicate}")
        return " x ".join(parts) or "1 rank"


@dataclass(frozen=True)
class PlanResult:
    """The layouts of one planning question, best first, and how the search went."""

    model: ModelSummary
    cluster: str  # the cluster in words
    world: int
    seq: int
    global_batch: int
    precision: str
    schedule: str
    layouts: list[Layout]  # best first; with a given layout, its micro-batch/checkpointing choices
    rejected: list[Layout]  # the closest layouts that do not fit or route (search only)
    evaluated: int
    factorizations: int
    placement_searches: int
    why_nothing: str  # empty when some layout is valid
    alternatives: list[str]  # the runners-up, in words
    search_seconds: float
    error_band: float = 0.0  # the calibration's relative error band of every predicted step

    @classmethod
    def from_native(cls, data: dict) -> PlanResult:
        from vtrn.render.mesh_code import layout_code

        model = _build(ModelSummary, data["model"])

        def with_code(d: dict) -> Layout:
            layout = Layout.from_native(d)
            if "reason" not in d:  # the planner explained only the layouts it reports
                return layout
            code = layout_code(
                layout, model=model.name, cluster=data["cluster"], schedule=data["schedule"]
            )
            return dataclasses.replace(layout, code=code)

        return _build(
            cls,
            data,
            model=model,
            layouts=[with_code(d) for d in data["layouts"]],
            rejected=[with_code(d) for d in data.get("rejected", [])],
            placement_searches=data.get("placement_searches", 0),
            alternatives=list(data.get("alternatives", [])),
        )


def plan(
    model: str,
    *,
    instance: str = "trn2.48xlarge",
    lnc: int = 0,
    nodes: int = 1,
    seq: int = 4096,
    global_batch: int = 1024,
    precision: str = "bf16-fp32-master",
    schedule: str = "1f1b",
    sequence_parallel: bool = True,
    prefetch: int = 1,
    layout: str | None = None,
    top: int = 10,
    checkpointing: Sequence[str] = ("none", "selective", "full"),
    micro_batches: Sequence[int] = (1, 2, 4, 8),
    allow_pp: bool = True,
    search_placement: bool = True,
) -> PlanResult:
    """Searches every layout of ``model`` (a preset name or a JSON model file) on ``nodes``
    instances, or evaluates exactly ``layout`` (``"pp=1,replicate=1,shard=16,tp=4"``, with
    optional ``micro_batch=`` and ``checkpointing=``). ``lnc`` 0 is the instance's default;
    ``precision`` is ``bf16-fp32-master`` or ``bf16``; ``schedule`` ``1f1b`` or ``gpipe``.
    Integers beyond the planner's limits (2^24 for seq, global_batch, micro-batches and
    prefetch) are a ValueError."""
    most = _native.plan.MAX_WORKLOAD_VALUE
    limits = {"seq": (seq, 1), "global_batch": (global_batch, 1), "prefetch": (prefetch, 0)}
    limits.update({f"micro_batches[{i}]": (mb, 1) for i, mb in enumerate(micro_batches)})
    for name, (value, low) in limits.items():
        if not low <= value <= most:
            raise ValueError(f"{name}={value} is outside {low}..{most} (2^24)")
    for name, value in (("lnc", lnc), ("nodes", nodes), ("top", top)):
        if not -(2**31) <= value < 2**31:
            raise ValueError(f"{name}={value} does not fit a 32-bit integer")
    return PlanResult.from_native(
        _native.plan.plan(
            model,
            instance=instance,
            lnc=lnc,
            nodes=nodes,
            seq=seq,
            global_batch=global_batch,
            precision=precision,
            schedule=schedule,
            sequence_parallel=sequence_parallel,
            prefetch=prefetch,
            layout=layout,
            top=top,
            checkpointing=list(checkpointing),
            micro_batches=list(micro_batches),
            allow_pp=allow_pp,
            search_placement=search_placement,
        )
    )


def presets() -> list[ModelSummary]:
    """The built-in models (llama2-7b, llama3-70b, qwen3-32b, mixtral-8x7b, gpt3-175b, ...)."""
    return [_build(ModelSummary, d) for d in _native.plan.presets()]


def model(name_or_path: str) -> ModelSummary:
    """A preset by name, or a JSON model file (docs/planner.md gives its fields)."""
    return _build(ModelSummary, _native.plan.model(name_or_path))


def step_model() -> dict:
    """The step model's calibrated parameters (tensor_efficiency, kernel_overhead_s,
    comm_overlap, error_band) and their provenance (bench/calibrate.py fits them)."""
    return dict(_native.plan.step_model())
