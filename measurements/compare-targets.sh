#!/bin/bash
# The stored-run comparison's target (issue 10): `compare` of 20 pairs of
# stored single runs of identical code (the 24 xdp-lb benchmarks) gives at
# most 1 confident verdict per pair on average. Measured twice: with only
# the two runs known (no history), and with all the runs stored (history
# tells the run-to-run noise).
# Usage: measurements/compare-targets.sh [PAIRS [SAMPLES]]: 2 x PAIRS runs of about
# 20 s each at the default 50 samples. Nothing else may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-20}
samples=${2:-50}
bpfbench=./target/release/bpfbench
work=$(mktemp -d /tmp/bpfbench-compare-targets.XXXXXX)
trap 'rm -rf "$work"' EXIT
db=$work/history.sqlite

for i in $(seq 1 $((2 * pairs))); do
    "$bpfbench" run --samples "$samples" --db "$db" --tag same > /dev/null 2>&1
    "$bpfbench" show "$i" --db "$db" --format json > "$work/$i.json"
    echo "run $i of $((2 * pairs)) stored" >&2
done
confident() { grep -cE '"verdict": "(slower|faster)"' || true; }
for mode in alone history; do
    total=0
    for p in $(seq 1 "$pairs"); do
        a=$((2 * p - 1)) b=$((2 * p))
        if [ "$mode" = alone ]; then
            n=$("$bpfbench" compare "$work/$a.json" "$work/$b.json" --db "$work/none.sqlite" --format json | confident)
        else
            n=$("$bpfbench" compare "$a" "$b" --db "$db" --format json | confident)
        fi
        total=$((total + n))
    done
    echo "$mode: $total confident verdicts in $pairs pairs ($(awk -v t="$total" -v p="$pairs" 'BEGIN { printf "%.2f", t / p }') per pair)"
done
