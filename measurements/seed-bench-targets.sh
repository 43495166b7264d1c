#!/bin/bash
# bpfbench side by side with the kernel selftests' `bench` (issue 25, item 4):
# every xdp-lb scenario and LPM-trie operation, the two tools taking turns on
# one CPU, so both see the same machine phases.
#
# Usage: measurements/seed-bench-targets.sh PATH/TO/bench [ROUNDS [CPU]]
#   PATH/TO/bench: the selftests' bench (make -C tools/testing/selftests/bpf
#   bench in a kernel tree that has bench_xdp_lb.c), or the reduced build of
#   measurements/seed-bench/build.sh where the whole selftests do not build.
# Per scenario and round it prints one line:
#   seed:   the selftests' median ns/op (its loop, call and reset included);
#   inline: bpfbench's p50 with the body inline (the default), and its loop;
#   call:   bpfbench's p50 with --body call (the seed's construct), and its loop.
# Then the LPM-trie operations (10,000 entries, /32): the seed's latency
# (1000 / mean M ops/s of its one-second ticks) and bpfbench's p50 and loop.
# Nothing else may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
seed=$1
rounds=${2:-2}
cpu=${3:-1}
bpfbench=./target/release/bpfbench

scenarios=$("$bpfbench" list 2>/dev/null | awk '/^xdp-lb/ { on = 1; next } /^[^ ]/ { on = 0 } on && /^    [a-z]/ { print $1 }')

seed_xdp() { # scenario -> median ns/op
    "$seed" -q -w3 -a --prod-affinity "$cpu" xdp-lb --machine-readable --scenario "$1" 2>/dev/null |
        sed -nE 's/^RESULT .* median=([^ ]+).*/\1/p'
}
ours() { # workload args... -> "p50 loop" per result line
    "$bpfbench" run "$@" --cpu "$cpu" --no-store --format json 2>/dev/null |
        python3 -c 'import json,sys
for r in json.load(sys.stdin)["results"]:
    m = r["measurement"]
    print("%.2f %.2f" % (m["summary"]["median"], m["overhead"]["summary"]["median"]))'
}

echo "# xdp-lb, ns/op (each figure includes its tool's loop), CPU $cpu"
for round in $(seq 1 "$rounds"); do
    for s in $scenarios; do
        a=$(seed_xdp "$s")
        b=$(ours xdp-lb -s "$s")
        c=$(ours xdp-lb -s "$s" --body call)
        echo "round $round $s seed ${a:-ERR} inline ${b:-ERR ERR} call ${c:-ERR ERR}"
    done
done
echo "# seed harness: bpf-nop (its loop around a constant, no call)"
for round in $(seq 1 "$rounds"); do
    "$seed" -q -w3 -a --prod-affinity "$cpu" bpf-nop 2>/dev/null | sed -n 's/^bpf-nop: median \([^ ]*\).*/round '"$round"' bpf-nop \1/p'
done

echo "# lpm-trie, 10000 entries, /32, ns/op"
for round in $(seq 1 "$rounds"); do
    for op in noop baseline lookup insert update delete; do
        a=$("$seed" -q -w1 -d5 -a --prod-affinity "$cpu" "lpm-trie-$op" --nr_entries 10000 2>/dev/null |
            sed -nE 's/.*latency +([0-9.]+) ns\/op.*/\1/p')
        b=$(ours lpm-trie --op "$op" --entries 10000)
        echo "round $round lpm-$op seed ${a:-ERR} ours ${b:-ERR ERR}"
    done
done
