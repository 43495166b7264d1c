#!/bin/sh
# Your own objects in the driver's two loops (issue 23): may_goto and the
# bounded loop forced in turn on the same objects, alternating per round on
# one CPU (the machine's speed levels change over minutes). Per object and
# loop: the median over the rounds of loop p50 and of the net figure (p50
# less loop p50), and the rounds' median ratio of bounded's net to
# may_goto's. Run as root, after cargo build --release, with nothing else
# running.
set -eu
cd "$(dirname "$0")/.."
bin=./target/release/bpfbench
objs=$(ls -d target/release/build/bpfbench-*/out/test-objects | head -1)
rounds=${ROUNDS:-5}
out=${1:-/tmp/bpfbench-own-modes}
mkdir -p "$out"
: >"$out/rows"
for spec in "xdp_encap.bpf.o --map services=examples/encap/services.json --packet eth/ipv4(dst=10.0.0.10)/tcp(dport=80)/payload(32)" \
    xdp_lru.bpf.o tc_ttl.bpf.o xdp_fib.bpf.o; do
    # shellcheck disable=SC2086
    set -- $spec
    obj=$1
    shift
    for r in $(seq 1 "$rounds"); do
        for m in may-goto bounded; do
            $bin run "$objs/$obj" "$@" --cpu 1 --no-store --samples 10 --batch-ms 2 --format json --timing-mode "$m" 2>/dev/null |
                python3 -c "
import json, sys
m = json.load(sys.stdin)['results'][0]['measurement']
p, o = m['summary']['median'], m['overhead']['summary']['median']
print('$obj', '$m', p - o, o)" >>"$out/rows"
        done
    done
done
python3 - "$out/rows" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    obj, mode, net, loop = line.split()
    rows[(obj, mode)].append((float(net), float(loop)))
for obj in sorted({k[0] for k in rows}):
    a, b = rows[(obj, "may-goto")], rows[(obj, "bounded")]
    ratio = statistics.median(y[0] / x[0] for x, y in zip(a, b))
    med = lambda r, i: statistics.median(x[i] for x in r)
    print(f"{obj:22} may-goto net {med(a, 0):6.2f} loop {med(a, 1):5.2f} | bounded net {med(b, 0):6.2f} loop {med(b, 1):5.2f} | net ratio {ratio:.3f}")
PY
