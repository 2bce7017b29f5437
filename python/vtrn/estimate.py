"""One rank of ``vtrn estimate``: runs a training script in shape-only execution and writes what
its steps would cost on Trainium as JSON.

``vtrn estimate`` starts ``python -m vtrn.estimate SCRIPT ARGS`` (or ``-m MODULE ARGS``) once
per listed rank, with ``VTRN_EXECUTION=shapes`` (under ``run`` the same report comes from a
computing run, which tests compare with), the rank's ``RANK``/``WORLD_SIZE``/
``LOCAL_RANK``/``NODE_RANK`` and ``VTRN_ESTIMATE_OUT`` (the JSON file to write),
``VTRN_ESTIMATE_STEPS`` and optionally ``VTRN_ESTIMATE_TRACE`` (a Chrome trace to write).

- ``torch.distributed.init_process_group`` joins a fake world of ``WORLD_SIZE`` ranks (torch's
  FakeStore, the ``neuron`` backend alone): no data moves, while the ``neuron`` backend still
  checks each group's routing on its real placement and charges ``coll``'s time.
- A step is one ``optimizer.step()`` (a global post-hook). Each ends a span of the modeled
  clock; after ``VTRN_ESTIMATE_STEPS`` steps the script is stopped.

The ranks' DeviceMeshes are reported (``meshes``: each mesh's dimension names and ranks), so
that ``vtrn estimate`` can tell the ranks' roles apart (``representative_ranks``).

Per step: ``time_s`` is the clock's span, ``compute_s`` the busy time of the non-collective
engines summed over streams, ``collective_s`` the collectives' busy time,
``exposed_collective_s`` the part of the span not covered by compute, up to ``collective_s``,
and ``idle_s`` the rest of the span.
"""

from __future__ import annotations

import json
import os
import resource
import runpy
import sys

ROUND_BYTES = 512  # the device allocator's granularity (runtime/device_memory.h)


# Mesh dimension names that mean pipeline stages (torchtitan's "pp", and common spellings).
PIPELINE_AXES = ("pp", "pipeline", "pipe", "stage", "stages")


def _mesh_shape(ranks) -> list[int]:
    shape = []
    while isinstance(ranks, list):
        shape.append(len(ranks))
        ranks = ranks[0] if ranks else None
    return shape


def representative_ranks(meshes: list[dict]) -> list[tuple[int, str]]:
    """One rank per distinct role, as ``[(rank, role), ...]`` in rank order, from the script's
    DeviceMeshes (``{"dim_names": [...], "ranks": nested lists}``, as the worker reports them).

    Ranks within a pipeline stage do the same work on their shards (TP, FSDP, HSDP and DP ranks
    are symmetric), so one rank per stage would do; the stages themselves differ only at the
    ends: the first holds the embedding and starts every micro-batch, the last holds the output
    projection and the loss, and the stages between are alike. So: the first stage, the last,
    and stage 1 for the middle ones (under 1F1B the middle stage with the most micro-batches in
    flight, so the most memory); each represented by its rank at coordinate 0 of every other
    axis. Without a pipeline axis (a mesh dimension named in PIPELINE_AXES) every rank has one
    role, and rank 0 plays it."""
    for mesh in meshes:
        names = [str(n).lower() for n in (mesh.get("dim_names") or [])]
        ranks = mesh["ranks"]
        shape = _mesh_shape(ranks)
        axis = next((i for i, n in enumerate(names) if n in PIPELINE_AXES), None)
        if axis is None or axis >= len(shape) or shape[axis] < 2:
            continue
        stages = shape[axis]
        picks = [(0, "first pipeline stage")]
        if stages > 2:
            picks.append((1, f"middle pipeline stages (1 to {stages - 2})"))
        picks.append((stages - 1, "last pipeline stage"))
        out = []
        for stage, role in picks:
            node = ranks
            for dim in range(len(shape)):
                node = node[stage if dim == axis else 0]
            out.append((int(node), f"{role} of {stages}"))
        return sorted(out)
    return [(0, "every rank")]


def layout_meshes(layout: dict) -> list[dict]:
    """The mesh of a planner layout (``_native.plan.parse_layout``): its axes outermost first
    (pp, replicate, shard, tp), ranks placed row-major."""
    shape, names = layout["mesh_shape"], layout["mesh_axes"]

    def build(dim: int, base: int):
        if dim == len(shape):
            return base
        stride = 1
        for n in shape[dim + 1 :]:
            stride *= n
        return [build(dim + 1, base + i * stride) for i in range(shape[dim])]

    return [{"dim_names": list(names), "ranks": build(0, 0)}]


class _EnoughSteps(BaseException):
    """Raised from the step hook to end the script once the requested steps ran."""


def _rounded(nbytes: int) -> int:
    return (nbytes + ROUND_BYTES - 1) // ROUND_BYTES * ROUND_BYTES


def _storage_bytes(tensors, seen: set) -> int:
    """Device bytes of the distinct neuron storages behind ``tensors`` (DTensors by their local
    shard), not counting a storage already in ``seen``."""
    total = 0
    for t in tensors:
        if t is None:
            continue
        local = getattr(t, "_local_tensor", t)
        if local.device.type != "neuron":
            continue
        storage = local.untyped_storage()
        key = storage.data_ptr()
        if key in seen or storage.nbytes() == 0:
            continue
        seen.add(key)
        total += _rounded(storage.nbytes())
    return total


def _state_tensors(optimizer):
    import torch

    for state in optimizer.state.values():
        for value in state.values():
            if isinstance(value, torch.Tensor):
                yield value


def split_step(clock: dict) -> dict:
    """The step fields of one span of ``vtrn.clock()``."""
    span = clock["span_us"] * 1e-6
    compute = collective = 0.0
    for stream in clock["streams"].values():
        busy = stream["busy_us"]
        collective += busy["collective"] * 1e-6
        compute += (stream["busy_total_us"] - busy["collective"]) * 1e-6
    exposed = max(0.0, min(collective, span - compute))
    idle = max(0.0, span - compute - exposed)
    return {
        "time_s": span,
        "compute_s": compute,
        "collective_s": collective,
        "exposed_collective_s": exposed,
        "idle_s": idle,
    }


class StepRecorder:
    """The optimizer post-hook: reads the clock and the memory at the end of each step."""

    def __init__(self, steps: int):
        from vtrn import _C

        self.steps_wanted = steps
        self.steps: list[dict] = []
        self.flops: list[float] = []
        self.categories = None
        self._flops_at = _C._tensor_flops()

    def hook(self, optimizer, args, kwargs) -> None:
        import torch

        import vtrn
        from vtrn import _C

        torch.neuron.synchronize()
        self.steps.append(split_step(vtrn.clock(reset=True)))
        flops = _C._tensor_flops()
        self.flops.append(flops - self._flops_at)
        self._flops_at = flops
        self.categories = self._categories(optimizer)
        if len(self.steps) >= self.steps_wanted:
            raise _EnoughSteps()

    @staticmethod
    def _categories(optimizer) -> dict:
        import torch

        seen: set = set()
        params = [p for group in optimizer.param_groups for p in group["params"]]
        parameters = _storage_bytes(params, seen)
        gradients = _storage_bytes([p.grad for p in params], seen)
        state = _storage_bytes(_state_tensors(optimizer), seen)
        allocated = torch.neuron.memory_allocated()
        other = max(0, allocated - parameters - gradients - state)
        return {
            "parameters": parameters,
            "gradients": gradients,
            "optimizer": state,
            "other": other,
        }


def _fake_backend(backend):
    """The script's backend in a fake world: ``neuron`` for the neuron device alone. (Torch's
    fake backend cannot stand in for Gloo beside it: a fake group replaces the whole process
    group, so collectives on CPU tensors are not modeled.)"""
    if backend is None or str(backend) in ("neuron", "gloo") or "neuron" in str(backend):
        return "neuron"
    raise ValueError(
        f"init_process_group({backend!r}): vtrn estimate models the neuron backend; use "
        f"'neuron' or 'cpu:gloo,neuron:neuron'"
    )


def _join_fake_world(rank: int, world: int) -> None:
    """Makes every init_process_group of the script join a fake world as ``rank``."""
    import torch.distributed as dist
    import torch.distributed.device_mesh as device_mesh
    from torch.distributed import distributed_c10d as c10d
    from torch.testing._internal.distributed.fake_pg import FakeStore

    original = c10d.init_process_group

    def init_process_group(backend=None, init_method=None, timeout=None, **kwargs):
        kwargs.update(store=FakeStore(), rank=rank, world_size=world)
        return original(_fake_backend(backend), timeout=timeout, **kwargs)

    for module in (dist, c10d, device_mesh):
        if hasattr(module, "init_process_group"):
            module.init_process_group = init_process_group


def _record_meshes(meshes: list) -> None:
    """Appends each DeviceMesh the script builds (dimension names, ranks) to ``meshes``."""
    from torch.distributed.device_mesh import DeviceMesh

    original = DeviceMesh.__init__
    if getattr(original, "_vtrn_records", None) is not None:
        original = original._vtrn_original

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        try:
            mesh = {"dim_names": list(self.mesh_dim_names or []), "ranks": self.mesh.tolist()}
            if mesh not in meshes:
                meshes.append(mesh)
        except Exception:  # a mesh vtrn cannot read leaves the roles to the default
            pass

    init._vtrn_records = meshes
    init._vtrn_original = original
    DeviceMesh.__init__ = init


def _peak_flops_per_rank() -> float:
    from vtrn import _C, topology

    config = _C.config()
    spec = topology.instance(config["instance"])
    return spec.chip.core_tensor_flops["bf16"] * max(config["lnc"] or 1, 1)


def run(target: list[str]) -> dict:
    """Runs ``target`` (``[SCRIPT, ARGS...]`` or ``["-m", MODULE, ARGS...]``) as this rank and
    returns its report."""
    import torch

    import vtrn
    from vtrn import _C

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    steps = int(os.environ.get("VTRN_ESTIMATE_STEPS", "3"))
    trace = os.environ.get("VTRN_ESTIMATE_TRACE") or None
    torch.neuron.set_device(local)
    meshes: list = []
    if world > 1:
        _join_fake_world(rank, world)
        _record_meshes(meshes)
    recorder = StepRecorder(steps)
    from torch.optim.optimizer import register_optimizer_step_post_hook

    handle = register_optimizer_step_post_hook(recorder.hook)
    torch.neuron.reset_peak_memory_stats()
    vtrn.reset_clock()
    reads_before = _C._host_reads()
    profile = None
    if trace:
        profile = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.PrivateUse1])
        profile.__enter__()
    error = None
    try:
        if target[0] == "-m":
            sys.argv = target[1:]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(target)
            sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
            runpy.run_path(target[0], run_name="__main__")
    except _EnoughSteps:
        pass
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            error = f"the script exited with status {exit_.code}"
    except torch.OutOfMemoryError as oom:
        error = str(oom).splitlines()[0]
    finally:
        handle.remove()
        if profile is not None:
            profile.__exit__(None, None, None)
            profile.export_chrome_trace(trace)
    peak = torch.neuron.max_memory_allocated()
    categories = recorder.categories or {
        "parameters": 0,
        "gradients": 0,
        "optimizer": 0,
        "other": torch.neuron.memory_allocated(),
    }
    known = sum(categories.values())
    memory = {
        "parameters": categories["parameters"],
        "gradients": categories["gradients"],
        "optimizer": categories["optimizer"],
        "activations": max(0, peak - known),
        "other": categories["other"],
    }
    report = {
        "rank": rank,
        "steps": recorder.steps,
        "peak_memory_bytes": peak,
        "memory_by_category": memory,
        "model_flops": recorder.flops[-1] if recorder.flops else 0.0,
        "host_reads": _C._host_reads() - reads_before,
        "host_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "peak_flops": _peak_flops_per_rank(),
        "meshes": meshes,
    }
    if error is not None:
        report["error"] = error
    return report


def main() -> int:
    report = run(sys.argv[1:])
    with open(os.environ["VTRN_ESTIMATE_OUT"], "w") as f:
        json.dump(report, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
