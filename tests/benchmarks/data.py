"""Miniature public traces for generator tests, so they run without ../shared/data."""

from __future__ import annotations

from pathlib import Path

OPENB = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"


def write_mini_traces(root: Path) -> Path:
    """A miniature of ../shared/data with the columns the generator reads; returns ``root``."""
    openb = root / "alibaba-gpu-v2023"
    openb.mkdir(parents=True)
    rows = [OPENB] + [
        f"p{i},1000,1024,{1 + i % 2},1000,,LS,{'Succeeded' if i % 3 else 'Failed'},0,{600 + 700 * i},0"
        for i in range(12)
    ]
    (openb / "openb_pod_list_default.csv").write_text("\n".join(rows) + "\n")
    multi = ["name,cpu_milli,memory_mib,num_gpu,gpu_milli"] + [f"m{i},1,1,{(1, 2, 4, 8)[i % 4]},1000" for i in range(8)]
    (openb / "openb_pod_list_multigpu50.csv").write_text("\n".join(multi) + "\n")
    spot = root / "alibaba-spot-gpu-v2026"
    spot.mkdir()
    nodes = ["gpu_model,gpu_capacity_num,cpu_num,node_name"]
    nodes += [f"A10,1,128,{i}" for i in range(40)] + [f"A100-SXM4-80GB,8,128,{100 + i}" for i in range(40)]
    (spot / "node_info_df.csv").write_text("\n".join(nodes) + "\n")
    return root


def small_h100_snapshot(root: Path) -> Path:
    """A dgx-h100 snapshot of 10 gangs drawn from the mini traces (seed 2), written under ``root``: small enough for
    the CLI tests to replay and fill in seconds."""
    from benchmarks.generate.scenarios import build
    from scheduler.snapshot import dump_snapshot

    path = root / "h100.json.gz"
    dump_snapshot(build("dgx-h100", seed=2, data_dir=write_mini_traces(root / "data"), gangs=10), path)
    return path
