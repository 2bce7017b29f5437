"""Trainium topology: where ranks run, which collective groups the runtime can build, and what
each collective costs.

The model itself is C++ (layers hw / topo / coll, reached through ``vtrn._native``); this
module gives it a typed Python face. Nothing here imports torch.

    from vtrn.topology import Cluster

    cluster = Cluster("trn2.48xlarge", lnc=2)
    analysis = cluster.analyze_mesh([8, 8], ["dp", "tp"])
    analysis.axes[0].routable            # False: the default TP8 x FSDP8 mesh is not routable
    found = cluster.search_placement([8, 8], ["dp", "tp"])
    cluster.analyze_mesh([8, 8], ["dp", "tp"], found.placement).routable   # True

Bad input (an unknown instance, an LNC the instance does not have, a mesh that does not fill
the world) raises ValueError with the model's message, which names the value and what to use.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from vtrn import _native

__all__ = [
    "AxisEstimate",
    "AxisReport",
    "ChipSpec",
    "Cluster",
    "Estimate",
    "InstanceSpec",
    "MeshAnalysis",
    "MeshReport",
    "PlacementSearch",
    "RankLocation",
    "Route",
    "instance",
    "instance_names",
    "max_nodes",
    "max_world",
    "nest",
]


def _build(cls, data: dict, **overrides):
    """``cls`` from the fields of ``data`` it declares; keys it does not declare are ignored."""
    names = {f.name for f in dataclasses.fields(cls)}
    values = {k: v for k, v in data.items() if k in names}
    values.update(overrides)
    return cls(**values)


def max_world() -> int:
    """The largest world vtrn models (2^20 ranks): no rank or mesh axis can exceed it."""
    return _native.model.MAX_WORLD


def max_nodes() -> int:
    """The most instances a cluster can have (4096)."""
    return _native.model.MAX_NODES


def instance_names() -> list[str]:
    """Names of the known instance types, in listing order."""
    return list(_native.model.instance_names())


# --------------------------------------------------------------------------------------------
# Hardware


@dataclass(frozen=True)
class ChipSpec:
    """One Trainium chip. Bandwidths in bytes per second, latencies in seconds, sizes in bytes."""

    name: str
    core_name: str
    physical_cores: int
    hbm_bytes: int
    hbm_Bps: float
    dma_Bps: float
    dma_core_Bps: float
    dma_latency_s: float
    dense_fp8_flops: float
    dense_bf16_flops: float
    dense_fp32_flops: float
    core_tensor_flops: dict[str, float]  # per physical core, by dtype name
    core_vector_fp32_flops: float
    core_scalar_fp32_flops: float
    neuronlink: str  # the link generation, e.g. "NeuronLink-v3"
    neuronlink_intra_Bps: float
    neuronlink_inter_Bps: float


@dataclass(frozen=True)
class InstanceSpec:
    """One instance type: its chips and how they are linked."""

    name: str
    summary: str
    chip: ChipSpec
    chips: int
    topology: str  # "torus-2d", "switch" or "single-chip"
    grid_rows: int
    grid_cols: int
    link_Bps: float
    hop_latency_s: float
    lnc_allowed: list[int]
    lnc_default: int | None  # None: the chip has no Logical NeuronCore setting (trn1)
    ultraserver_nodes: int
    ultraserver_fabric: str
    ultraserver_chip_Bps: float
    efa_Bps: float
    efa_latency_s: float

    @classmethod
    def from_native(cls, data: dict) -> InstanceSpec:
        return _build(cls, data, chip=_build(ChipSpec, data["chip"]))


def instance(name: str) -> InstanceSpec:
    """The spec of instance type ``name`` (ValueError naming the known ones if unknown)."""
    return InstanceSpec.from_native(_native.model.instance(name))


# --------------------------------------------------------------------------------------------
# Collectives


class RankLocation(NamedTuple):
    node: int
    chip: int  # within the node
    core: int  # logical core within the chip


@dataclass(frozen=True)
class Route:
    """Whether the runtime can build a collective for a group of ranks, and over what."""

    routable: bool
    kind: str
    error: str | None  # the runtime's error when not routable
    bad_node: int | None  # the node whose chips are not connected
    disconnected: list[list[int]]  # the disconnected sets of chips on bad_node
    ranks: int
    nodes: int
    chips_per_node: int
    ranks_per_chip: int
    whole_chips: bool
    node_chip_Bps: float
    mean_hops: float
    nodes_joined: bool  # the nodes are joined by NeuronLink (one UltraServer), not EFA only


@dataclass(frozen=True)
class Estimate:
    """The algorithm the runtime picks for one collective and its modeled time."""

    algorithm: str  # "Mesh", "RDH", "KangaRing", "Ring", "Hierarchical", "P2P", ...
    node: str | None  # Hierarchical: the algorithm inside a node (None: one rank per node)
    net: str | None  # Hierarchical: the algorithm between nodes
    seconds: float

    def label(self) -> str:
        """``RDH``, or ``Hierarchical(RDH/Ring)`` with the node and network parts."""
        if self.algorithm != "Hierarchical":
            return self.algorithm
        return f"{self.algorithm}({self.node or '-'}/{self.net})"


@dataclass(frozen=True)
class AxisEstimate(Estimate):
    """An axis's collective at one message size, and every collective's time at that size."""

    collective: str
    seconds_by_collective: dict[str, float]


@dataclass(frozen=True)
class AxisReport:
    """One mesh axis: its groups, whether each is routable, and its collective's cost."""

    name: str
    size: int
    role: str  # "pipeline", "replicate", "shard" or "tensor"
    collective: str  # the collective this axis runs: all_reduce, all_gather, send_recv, ...
    groups: list[list[int]]  # in mesh order
    group_routable: list[bool]
    routable: bool
    error: str | None  # the runtime's error for the first group it cannot build
    first_bad_group: int | None
    bad_node: int | None
    disconnected: list[list[int]]  # chips of bad_node that no link joins
    estimates: dict[int, AxisEstimate]  # by message size in bytes (only when routable)

    def shown_group(self) -> int:
        """The group worth drawing: the first unroutable one, else the first."""
        return next((i for i, ok in enumerate(self.group_routable) if not ok), 0)


@dataclass(frozen=True)
class MeshAnalysis:
    """Every axis of a mesh on a cluster."""

    routable: bool
    placement: list[int]  # the rank at each mesh position, row-major
    axes: list[AxisReport]

    @classmethod
    def from_native(cls, data: dict) -> MeshAnalysis:
        axes = []
        for axis in data["axes"]:
            estimates = {
                int(size): _build(AxisEstimate, est) for size, est in axis["algorithms"].items()
            }
            axes.append(_build(AxisReport, axis, estimates=estimates))
        return cls(routable=data["routable"], placement=list(data["placement"]), axes=axes)


@dataclass(frozen=True)
class PlacementSearch:
    """The result of searching for a placement where every group of a mesh is routable."""

    found: bool
    placement: list[int] | None  # row-major, when found
    chip_order: list[int]
    fill_order: list[int]  # axis indices, in the order they are filled
    default_routable: bool
    is_default: bool  # the row-major placement was already routable
    tp_groups_off_chip: int
    cost_seconds: float
    steps: int
    solutions: int  # routable placements compared
    message: str | None  # why nothing was found


@dataclass(frozen=True)
class MeshReport:
    """Everything ``vtrn mesh`` shows: the analysis of a mesh under a placement, and the
    placement search when one was asked for."""

    cluster: Cluster
    shape: list[int]
    names: list[str]
    placement_source: str  # "default" (row-major), "auto" (searched) or "custom" (given)
    placement: list[int] | None  # the placement asked for (None: row-major, or none found)
    analysis: MeshAnalysis
    search: PlacementSearch | None

    @property
    def routable(self) -> bool:
        """Every group of every axis is routable (under the placement analyzed)."""
        return self.analysis.routable

    @property
    def ok(self) -> bool:
        """Routable, and the placement search (if any) found a placement."""
        return self.analysis.routable and (self.search is None or self.search.found)


# --------------------------------------------------------------------------------------------
# The cluster


class Cluster:
    """``nodes`` instances of one type at one Logical NeuronCore setting, with their links.

    ``lnc`` is 1 or 2 where the instance has the setting; None takes the instance's default
    (LNC2 on trn2 and trn3; trn1 has none). Ranks are numbered node, then chip, then core.
    """

    def __init__(self, instance: str = "trn2.48xlarge", lnc: int | None = None, nodes: int = 1):
        self._native = _native.model.Cluster(instance, 0 if lnc is None else lnc, nodes)

    def __repr__(self) -> str:
        return f"Cluster({self.instance!r}, lnc={self.lnc}, nodes={self.nodes})"

    @property
    def instance(self) -> str:
        return self._native.instance

    @cached_property
    def spec(self) -> InstanceSpec:
        return InstanceSpec.from_native(self._native.spec)

    @property
    def lnc(self) -> int | None:
        return self._native.lnc

    @property
    def nodes(self) -> int:
        return self._native.nodes

    @property
    def chips_per_node(self) -> int:
        return self._native.chips_per_node

    @property
    def ranks_per_chip(self) -> int:
        return self._native.ranks_per_chip

    @property
    def ranks_per_node(self) -> int:
        return self._native.ranks_per_node

    @property
    def world(self) -> int:
        return self._native.world

    def describe(self) -> str:
        """The cluster in words: instance, LNC, nodes and world."""
        return self._native.describe()

    def locate(self, rank: int) -> RankLocation:
        return RankLocation(*self._native.locate(rank))

    def rank_of(self, node: int, chip: int, core: int) -> int:
        return self._native.rank_of(node, chip, core)

    def chip_coord(self, node: int, chip: int) -> tuple[int, int, int]:
        """(row, column, z) of a chip."""
        return tuple(self._native.chip_coord(node, chip))

    def neighbors(self, chip: int) -> list[int]:
        """The node-local NeuronLink neighbours of ``chip``."""
        return list(self._native.neighbors(chip))

    def links(self) -> list[tuple[int, int, str]]:
        """Every link: (global chip a, global chip b, kind)."""
        return [tuple(link) for link in self._native.links()]

    def components(self, chips: Sequence[int]) -> list[list[int]]:
        """Connected components of node-local ``chips``, using only links between them."""
        return self._native.components(list(chips))

    def route(self, ranks: Sequence[int]) -> Route:
        return _build(Route, self._native.route(list(ranks)))

    def estimate(self, ranks: Sequence[int], collective: str, nbytes: int) -> Estimate:
        """Algorithm and modeled time of ``collective`` over ``ranks`` on an ``nbytes`` buffer."""
        return _build(Estimate, self._native.estimate(list(ranks), collective, nbytes))

    def mesh_groups(
        self, shape: Sequence[int], names: Sequence[str], placement: Sequence[int] | None = None
    ) -> list[list[list[int]]]:
        """The groups of every axis of a mesh, each in mesh order."""
        return self._native.mesh_groups(list(shape), list(names), _list_or_none(placement))

    def analyze_mesh(
        self,
        shape: Sequence[int],
        names: Sequence[str],
        placement: Sequence[int] | None = None,
        sizes: Sequence[int] | None = None,
    ) -> MeshAnalysis:
        """Groups, routability, algorithms and modeled times of every axis. ``placement`` is
        the rank at each mesh position, row-major (default: rank = position); ``sizes`` are
        the message sizes in bytes to model (default 64 KiB, 16 MiB, 256 MiB)."""
        return MeshAnalysis.from_native(
            self._native.analyze_mesh(
                list(shape), list(names), _list_or_none(placement), _list_or_none(sizes)
            )
        )

    def search_placement(
        self,
        shape: Sequence[int],
        names: Sequence[str],
        cost_bytes: int = 64 << 20,
        max_steps: int = 2_000_000,
        max_solutions: int = 1024,
        structured_orders: bool = True,
    ) -> PlacementSearch:
        """A placement where every group is routable, the cheapest of those compared."""
        return _build(
            PlacementSearch,
            self._native.search_placement(
                list(shape), list(names), cost_bytes, max_steps, max_solutions, structured_orders
            ),
        )

    def report_mesh(
        self,
        shape: Sequence[int],
        names: Sequence[str],
        placement: str | Sequence[int] = "default",
        sizes: Sequence[int] | None = None,
    ) -> MeshReport:
        """The mesh under ``placement``: "default" (row-major), "auto" (searched; when none is
        found the row-major placement is analyzed) or the ranks themselves, row-major."""
        shape, names = list(shape), list(names)
        search = None
        if placement == "default":
            source, chosen = "default", None
        elif placement == "auto":
            search = self.search_placement(shape, names)
            source, chosen = "auto", search.placement if search.found else None
        elif isinstance(placement, str):
            raise ValueError(
                f"placement {placement!r} is not understood; give 'default', 'auto' or the "
                "ranks of the mesh, row-major"
            )
        else:
            source, chosen = "custom", list(placement)
        analysis = self.analyze_mesh(shape, names, chosen, sizes)
        return MeshReport(self, shape, names, source, chosen, analysis, search)


def _list_or_none(values) -> list | None:
    return None if values is None else list(values)


def nest(flat: Sequence[Any], shape: Sequence[int]) -> list:
    """The row-major nested list of ``flat`` with ``shape``."""
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0]
    return [nest(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])]
