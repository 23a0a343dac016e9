#!/bin/sh
# Regenerates every shipped benchmark snapshot and every result in benchmarks/results/ (no Make needed).
# Run from the repository root with the project installed in .venv (or BIN=dir-with-grove-extender):
#   sh benchmarks/regenerate.sh [DATA_DIR]
# DATA_DIR holds the public traces (benchmarks/README.md says which and where from).
set -eu
DATA="${1:?usage: sh $0 DATA_DIR (the public Alibaba GPU traces; see benchmarks/README.md)}"
BIN="${BIN:-.venv/bin}"
POLICIES=cpsat,cpsat-batch,topology-greedy,gang-best-fit,spread,first-fit
FILL_POLICIES=cpsat,topology-greedy,gang-best-fit
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
    command="grove-extender bench --fill --snapshot benchmarks/snapshots/$name.json.gz --policy $FILL_POLICIES \
--seeds 20 --workers 1 --json benchmarks/results/fill-$name.json --plot benchmarks/results/fill-$name.png"
    {
        printf '<!-- produced by: %s -->\n\n' "$command"
        # shellcheck disable=SC2086
        $BIN/$command
    } > "benchmarks/results/fill-$name.md"
done
# FGD's own workload (the openb pod list, one single-pod gang per GPU pod) on the Alibaba fleet's sample.
command="grove-extender bench --fill --snapshot benchmarks/snapshots/alibaba-hetero.json.gz --policy $FILL_POLICIES \
--shapes $DATA/alibaba-gpu-v2023/openb_pod_list_default.csv --seeds 20 --workers 1 \
--json benchmarks/results/fill-alibaba-openb.json --plot benchmarks/results/fill-alibaba-openb.png"
{
    printf '<!-- produced by: %s -->\n\n' "$command"
    # shellcheck disable=SC2086
    $BIN/$command
} > "benchmarks/results/fill-alibaba-openb.md"
# Gang priority and preemption: the victim model (cpsat) against the KAI-like greedy on the one snapshot whose gangs
# have different priorities (the three above name no PriorityClass: every gang ties, nothing can be preempted).
command="grove-extender bench --snapshot benchmarks/snapshots/gb200-preemption.json.gz --policy cpsat \
--preemption off,cpsat,kai-greedy --workers 1 --json benchmarks/results/gb200-preemption.json \
--plot benchmarks/results/gb200-preemption.png"
before="$(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086
output="$($BIN/$command)"
{
    printf '<!-- produced by: %s -->\n' "$command"
    printf '<!-- on %s cores; load average (1, 5, 15 min) before: %s, after: %s -->\n\n' "$(nproc)" "$before" \
        "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%s\n' "$output"
} > benchmarks/results/gb200-preemption.md
"$BIN/python" -m benchmarks.summary benchmarks/results/gb200-nvl72.json benchmarks/results/dgx-h100.json \
    benchmarks/results/alibaba-hetero.json > benchmarks/results/summary.md
"$BIN/python" -m benchmarks.summary --fill benchmarks/results/fill-gb200-nvl72.json \
    benchmarks/results/fill-dgx-h100.json benchmarks/results/fill-alibaba-hetero.json \
    benchmarks/results/fill-alibaba-openb.json > benchmarks/results/fill-summary.md
