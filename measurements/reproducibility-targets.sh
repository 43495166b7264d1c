#!/bin/bash
# Figures that reproduce (issue 39, item 4): RUNS default runs in a row on
# one CPU; for each row, the run-to-run coefficient of variation of each
# candidate estimator (the reported figure, the median, p10, p25, the
# minimum and the mean of the lowest decile), then the median and the
# worst row of each, and how long each run took.
# Usage: measurements/reproducibility-targets.sh [RUNS [CPU [BPFBENCH ARGS...]]]
# Nothing else may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-4}
cpu=${2:-1}
shift $(( $# > 2 ? 2 : $# )) || true
bpfbench=./target/release/bpfbench
work=$(mktemp -d /tmp/bpfbench-reproducibility.XXXXXX)
[ -n "${KEEP:-}" ] && echo "keeping $work" >&2 || trap 'rm -rf "$work"' EXIT

for i in $(seq 1 "$runs"); do
    start=$(date +%s.%N)
    "$bpfbench" run --cpu "$cpu" --no-store --format json "$@" > "$work/$i.json" 2> "$work/$i.err"
    end=$(date +%s.%N)
    echo "run $i of $runs: $(echo "$end - $start" | bc) s" >&2
done
python3 - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
records = [json.load(open(f"{work}/{i}.json")) for i in range(1, runs + 1)]

def quantile(xs, q):
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

estimators = {
    "reported": lambda m: m["summary"]["estimate"] if "estimate" in m["summary"] else m["summary"]["p50"],
    "p50": lambda m: quantile(m["samples_ns"], 0.5),
    "p25": lambda m: quantile(m["samples_ns"], 0.25),
    "p10": lambda m: quantile(m["samples_ns"], 0.10),
    "min": lambda m: min(m["samples_ns"]),
    "low-decile mean": lambda m: statistics.mean(sorted(m["samples_ns"])[: max(1, len(m["samples_ns"]) // 10)]),
}
rows = {}
for rec in records:
    for r in rec["results"]:
        m = r.get("measurement")
        if m:
            rows.setdefault(r["name"], []).append(m)
print(f"{runs} runs, {len(rows)} rows; run-to-run CV of each estimator (%)")
names = list(estimators)
print(f"{'row':<30}" + "".join(f"{n:>17}" for n in names))
cvs = {n: [] for n in names}
for row, ms in rows.items():
    if len(ms) < runs:
        continue
    line = f"{row:<30}"
    for n, f in estimators.items():
        vals = [f(m) for m in ms]
        cv = statistics.stdev(vals) / statistics.mean(vals) * 100
        cvs[n].append((cv, row))
        line += f"{cv:>17.2f}"
    print(line)
print(f"{'median of rows':<30}" + "".join(f"{statistics.median(c for c, _ in cvs[n]):>17.2f}" for n in names))
print(f"{'worst row':<30}" + "".join(f"{max(cvs[n])[0]:>17.2f}" for n in names))
for n in names:
    print(f"  worst for {n}: {max(cvs[n])[1]}")
PY
