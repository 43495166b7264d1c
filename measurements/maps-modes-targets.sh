#!/bin/sh
# Map operations in each loop construct (issue 23): may_goto, bpf_loop and
# the bounded loop forced in turn on the same operations, alternating per
# round on one CPU (the machine's speed levels change over minutes). Per
# operation and loop: the median over the rounds of loop p50 (the empty
# loop) and of the net figure (p50 less loop p50), and the rounds' median
# ratio of each loop's net to may_goto's. Run as root, after cargo build
# --release, with nothing else running.
set -eu
cd "$(dirname "$0")/.."
bin=./target/release/bpfbench
rounds=${ROUNDS:-5}
out=${1:-/tmp/bpfbench-maps-modes}
mkdir -p "$out"
: >"$out/rows"
for r in $(seq 1 "$rounds"); do
    for m in may-goto bpf-loop bounded; do
        for w in "maps --map hash,lru_hash,array --op lookup,update" "lpm-trie --op lookup,delete"; do
            # shellcheck disable=SC2086
            $bin run $w --cpu 1 --no-store --samples 10 --batch-ms 2 --format json --timing-mode "$m" 2>/dev/null |
                python3 -c "
import json, sys
for r in json.load(sys.stdin)['results']:
    m = r['measurement']
    if m:
        p, o = m['summary']['median'], m['overhead']['summary']['median']
        print(r['workload'] + '/' + r['name'], '$m', p - o, o)" >>"$out/rows"
        done
    done
done
python3 - "$out/rows" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, mode, net, loop = line.split()
    rows[(name, mode)].append((float(net), float(loop)))
med = lambda r, i: statistics.median(x[i] for x in r)
for name in sorted({k[0] for k in rows}):
    base = rows[(name, "may-goto")]
    cells = []
    for mode in ("may-goto", "bpf-loop", "bounded"):
        r = rows[(name, mode)]
        ratio = statistics.median(y[0] / x[0] for x, y in zip(base, r))
        cells.append(f"{mode} net {med(r, 0):7.2f} loop {med(r, 1):5.2f} x{ratio:.3f}")
    print(f"{name:28} " + " | ".join(cells))
PY
