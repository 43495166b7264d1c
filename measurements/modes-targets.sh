#!/bin/sh
# The timing modes' targets (issue 23), measured on this machine: every mode
# forced in turn on the same xdp-lb scenarios, in rounds that alternate the
# modes (the machine's speed levels change over minutes), each round one
# short run per mode on one CPU. Per mode and scenario: the median over the
# rounds of the loop's own cost (loop p50) and of the net figure (p50 less
# loop p50), and the net against may_goto's. Run as root with nothing else
# running.
set -eu
cd "$(dirname "$0")/.."
bin=./target/release/bpfbench
out=${1:-/tmp/bpfbench-modes-targets}
rounds=${ROUNDS:-5}
mkdir -p "$out"
scenarios="-s tcp-v4-lru-hit -s tcp-v4-ch -s tcp-v6-lru-hit -s tcp-v4v6-lru-hit -s tcp-v4-lru-diverse -s tcp-v4-lru-miss -s pass-non-ip -s drop-v4-frag"
for r in $(seq 1 "$rounds"); do
    for m in may-goto bpf-loop bounded; do
        # shellcheck disable=SC2086
        $bin run $scenarios --timing-mode "$m" --no-store --samples 50 --max-time 2 --format json >"$out/$m-$r.json" 2>/dev/null
    done
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
modes = ["may-goto", "bpf-loop", "bounded"]
fig = {}  # (mode, scenario) -> [(p50, loop)]
for m in modes:
    for r in range(1, rounds + 1):
        for s in json.load(open(f"{out}/{m}-{r}.json"))["results"]:
            meas = s["measurement"]
            fig.setdefault((m, s["name"]), []).append((meas["summary"]["median"], meas["overhead"]["summary"]["median"]))
names = sorted({n for (_, n) in fig}, key=lambda n: [k for k in fig].index(("may-goto", n)))
print(f"{'scenario':22} " + "  ".join(f"{m:>26}" for m in modes))
print(f"{'':22} " + "  ".join(f"{'loop':>8} {'net':>8} {'net/mg':>8}" for m in modes))
for n in names:
    base = statistics.median(p - l for p, l in fig[("may-goto", n)])
    cells = []
    for m in modes:
        loop = statistics.median(l for _, l in fig[(m, n)])
        net = statistics.median(p - l for p, l in fig[(m, n)])
        cells.append(f"{loop:8.2f} {net:8.2f} {net / base:8.3f}")
    print(f"{n:22} " + "  ".join(cells))
PY
