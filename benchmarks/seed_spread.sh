#!/bin/sh
# How much of our policies' margin over the closest baseline (topology-greedy) survives other workload draws:
# regenerates every scenario with seeds 2 and 3 (snapshots in a temporary directory, not shipped) and benches
# cpsat, cpsat-batch and topology-greedy on each. Writes benchmarks/results/seeds/*.json and
# benchmarks/results/seeds.md.
#   sh benchmarks/seed_spread.sh [DATA_DIR]
set -eu
DATA="${1:?usage: sh $0 DATA_DIR (the public Alibaba GPU traces; see benchmarks/README.md)}"
BIN="${BIN:-.venv/bin}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p benchmarks/results/seeds
for seed in 2 3; do
    "$BIN/python" -m benchmarks.generate --out "$TMP/seed$seed" --data "$DATA" --seed "$seed"
    for name in gb200-nvl72 dgx-h100 alibaba-hetero; do
        "$BIN/grove-extender" bench --snapshot "$TMP/seed$seed/$name.json.gz" \
            --policy cpsat,cpsat-batch,topology-greedy --workers 1 \
            --json "benchmarks/results/seeds/$name-seed$seed.json" > /dev/null
    done
done
"$BIN/python" -m benchmarks.summary benchmarks/results/seeds/*.json > benchmarks/results/seeds.md
