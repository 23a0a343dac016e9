#!/bin/sh
# Regenerates every shipped benchmark snapshot and every result in benchmarks/results/ (no Make needed).
# Run from the repository root with the project installed in .venv (or BIN=dir-with-grove-extender):
#   sh benchmarks/regenerate.sh [DATA_DIR]
# DATA_DIR holds the public traces (default ../shared/data, as seen from the repository root).
set -eu
DATA="${1:-../shared/data}"
BIN="${BIN:-.venv/bin}"
POLICIES=cpsat,topology-greedy,gang-best-fit,spread,first-fit
"$BIN/python" -m benchmarks.generate --out benchmarks/snapshots --data "$DATA" --seed 1
mkdir -p benchmarks/results
for name in gb200-nvl72 dgx-h100 alibaba-hetero; do
    command="grove-extender bench --snapshot benchmarks/snapshots/$name.json.gz --policy $POLICIES --workers 1 \
--json benchmarks/results/$name.json --plot benchmarks/results/$name.png"
    {
        printf '<!-- produced by: %s -->\n\n' "$command"
        # shellcheck disable=SC2086 # the command is split into words on purpose
        $BIN/$command
    } > "benchmarks/results/$name.md"
done
"$BIN/python" -m benchmarks.summary benchmarks/results/gb200-nvl72.json benchmarks/results/dgx-h100.json \
    benchmarks/results/alibaba-hetero.json > benchmarks/results/summary.md
