"""The three cluster layouts, as lists of Node dicts with the labels real clusters of that kind carry.

- GB200 NVL72: racks of 18 compute trays × 4 GPUs; every tray in a rack reports the same GPU Feature Discovery
  ``nvidia.com/gpu.clique`` (``<ClusterUUID>.<CliqueID>``, one clique per rack) and Topograph's
  ``accelerator`` label; racks hang under leaf → spine → core switches.
- DGX H100 scalable units: 32 nodes × 8 GPUs per leaf (one SU), spines above. No multi-node NVLink, so there is
  no clique label: the NVLink domain is the node.
- Alibaba heterogeneous: the node table of the GFS trace (``node_info_df.csv``) with an overlay we state:
  nodes of one (model, GPUs per node) are racked together, ``nodes_per_leaf`` per ToR leaf by GPUs per node,
  four leaves per spine, one core. The NVLink domain is the node (PCIe or SXM8 boxes, no clique).
"""

from __future__ import annotations

import csv
import random
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.generate.nodes import ACCELERATOR, CLIQUE, CORE, LEAF, PRODUCT, SPINE, ZONE, make_node

_UUID_NS = uuid.UUID("5b0d4a52-6f5e-4c1a-9d1e-0b6f7e0c2a11")  # fixed namespace: UUIDs are a function of names


def gb200_nvl72(*, racks: int, racks_per_leaf: int, leaves_per_spine: int) -> list[dict[str, Any]]:
    nodes = []
    for rack in range(racks):
        leaf = rack // racks_per_leaf
        spine = leaf // leaves_per_spine
        cluster_uuid = uuid.uuid5(_UUID_NS, f"gb200-rack-{rack}")
        labels = {
            ZONE: "zone-a",
            CORE: "core-0",
            SPINE: f"spine-{spine}",
            LEAF: f"leaf-{leaf}",
            ACCELERATOR: f"nvl72-{rack:02d}",
            CLIQUE: f"{cluster_uuid}.1",
            PRODUCT: "NVIDIA-GB200",
        }
        for tray in range(18):
            # A GB200 compute tray: 2 Grace CPUs (72 cores each), ~960 GB LPDDR5X; allocatable leaves headroom.
            nodes.append(
                make_node(name=f"gb200-r{rack:02d}-n{tray:02d}", labels=labels, cpu=140, memory_gi=850, gpus=4)
            )
    return nodes


def dgx_h100(*, scalable_units: int, sus_per_spine: int) -> list[dict[str, Any]]:
    nodes = []
    for su in range(scalable_units):
        labels = {
            ZONE: "zone-a",
            CORE: "core-0",
            SPINE: f"spine-{su // sus_per_spine}",
            LEAF: f"su-{su}",
            PRODUCT: "NVIDIA-H100-80GB-HBM3",
        }
        for index in range(32):
            # DGX H100: 2 × 56-core Xeon (224 threads), 2 TB RAM.
            nodes.append(make_node(name=f"h100-su{su}-n{index:02d}", labels=labels, cpu=220, memory_gi=1900, gpus=8))
    return nodes


NODES_PER_LEAF = {1: 16, 4: 8, 8: 8}  # by GPUs per node: what one ToR's ports and a rack's power take
LEAVES_PER_SPINE = 4
MEMORY_GI_PER_CPU = 8  # the GFS node table has no memory column


def read_alibaba_nodes(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def alibaba_heterogeneous(rows: list[dict[str, str]], *, fraction: float, rng: random.Random) -> list[dict[str, Any]]:
    """A stratified sample (``fraction`` of each (model, GPUs, CPUs) stratum, at least one node) with the overlay."""
    strata: dict[tuple[str, int, int], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        strata[(row["gpu_model"], int(row["gpu_capacity_num"]), int(row["cpu_num"]))].append(row)
    nodes = []
    leaf_index = 0
    for (model, gpus, cpus), members in sorted(strata.items()):
        members = sorted(members, key=lambda row: int(row["node_name"]))
        keep = max(1, round(len(members) * fraction))
        chosen = sorted(rng.sample(members, keep), key=lambda row: int(row["node_name"]))
        per_leaf = NODES_PER_LEAF.get(gpus, 8)
        for offset in range(0, len(chosen), per_leaf):
            labels = {
                ZONE: "zone-a",
                CORE: "core-0",
                SPINE: f"spine-{leaf_index // LEAVES_PER_SPINE}",
                LEAF: f"leaf-{leaf_index}",
                PRODUCT: model,
            }
            for row in chosen[offset : offset + per_leaf]:
                name = f"ali-{int(row['node_name']):04d}"
                nodes.append(
                    make_node(name=name, labels=labels, cpu=cpus, memory_gi=cpus * MEMORY_GI_PER_CPU, gpus=gpus)
                )
            leaf_index += 1
    return nodes
