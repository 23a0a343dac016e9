"""``python -m benchmarks.generate --out benchmarks/snapshots``: write every shipped scenario's snapshot."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.generate.scenarios import LOAD, SCENARIOS, build
from scheduler.snapshot import dump_snapshot


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.generate", description=__doc__)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/snapshots"))
    parser.add_argument(
        "--data", type=Path, required=True, help="the public Alibaba GPU traces (benchmarks/README.md says which)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--gangs", type=int, help="gangs per snapshot (default: each scenario's own)")
    parser.add_argument("--load", type=float, default=LOAD, help="offered GPU load as a share of the cluster's GPUs")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="default: all")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.scenario or sorted(SCENARIOS):
        target = args.out / f"{name}.json.gz"
        dump_snapshot(build(name, seed=args.seed, data_dir=args.data, gangs=args.gangs, load=args.load), target)
        print(f"wrote {target} ({target.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
