"""Grove-shaped gangs: roles (PodCliques) with replicas, ``minAvailable`` and GPUs per pod, and pack constraints
(node-label keys) at gang, group-config and group scope — the three families the README describes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Pack:
    required: str | None = None
    preferred: str | None = None

    def constraint(self) -> dict[str, object]:
        pack = {key: value for key, value in (("required", self.required), ("preferred", self.preferred)) if value}
        return {"packConstraint": pack}


@dataclass(frozen=True)
class Role:
    """One PodClique: ``replicas`` pods of ``gpus`` GPUs each, ``min_available`` of them gang-guaranteed."""

    name: str
    replicas: int
    min_available: int
    gpus: int
    pack: Pack | None = None


@dataclass(frozen=True)
class GroupConfig:
    name: str
    roles: tuple[str, ...]
    pack: Pack


@dataclass(frozen=True)
class GangShape:
    kind: str
    roles: tuple[Role, ...]
    pack: Pack | None = None
    configs: tuple[GroupConfig, ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    cpu_per_gpu: int = 16
    memory_gi_per_gpu: int = 128
    priority_class: str | None = None  # the PodGang's spec.priorityClassName (Grove does not copy it to pods)

    @property
    def guaranteed_gpus(self) -> int:
        return sum(role.min_available * role.gpus for role in self.roles)

    @property
    def gpus(self) -> int:
        return sum(role.replicas * role.gpus for role in self.roles)


def training(*, workers: int, gpus: int, pack: Pack) -> GangShape:
    """Data/tensor-parallel training: ``workers`` identical whole-node pods, all guaranteed."""
    return GangShape(kind="training", roles=(Role("worker", workers, workers, gpus),), pack=pack)


def leader_workers(*, workers: int, gpus: int, pack: Pack) -> GangShape:
    """Multi-node inference (LeaderWorkerSet-like): one leader and ``workers`` workers, all guaranteed."""
    roles = (Role("leader", 1, 1, gpus), Role("worker", workers, workers, gpus))
    return GangShape(kind="leader-workers", roles=tuple(role for role in roles if role.replicas), pack=pack)


def disaggregated(
    *,
    prefill: int,
    prefill_gpus: int,
    decode_workers: int,
    decode_gpus: int,
    extra_prefill: int,
    scope: str,
    gang: Pack,
) -> GangShape:
    """Dynamo-style disaggregated serving: a CPU-only router, prefill workers (``extra_prefill`` of them
    best-effort), and a decode leader + workers that must share one ``scope`` domain (a group config)."""
    roles = (
        Role("router", 1, 1, 0),
        Role("prefill", prefill + extra_prefill, prefill, prefill_gpus),
        Role("decode-leader", 1, 1, decode_gpus),
        Role("decode-worker", decode_workers, decode_workers, decode_gpus),
    )
    decode = GroupConfig("decode", ("decode-leader", "decode-worker"), Pack(required=scope))
    return GangShape(
        kind="disaggregated",
        roles=tuple(r for r in roles if r.replicas),
        pack=gang,
        configs=(decode,) if decode_workers else (),
    )
