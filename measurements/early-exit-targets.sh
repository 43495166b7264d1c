#!/bin/sh
# Issue 25's early-exit target: xdp-lb's pass-non-ip and drop-v4-frag,
# net of the loop (p50 less loop p50) in BPF, against an independent
# measure of the same path: xdp_lb.bpf.o's datapath alone (xdp_lb_live),
# one kernel-timed BPF_PROG_TEST_RUN per packet, less an empty program of
# the same verdict, the two alternating in `ab` (adjacent batches on one
# CPU). Rounds alternate the two measures. Run as root, after cargo build
# --release, with nothing else running.
set -eu
cd "$(dirname "$0")/.."
bin=$(pwd)/target/release/bpfbench
lb=$(ls -t target/release/build/bpfbench-*/out/xdp_lb.bpf.o | head -1)
rounds=${ROUNDS:-3}
work=$(mktemp -d /tmp/bpfbench-early-exit.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$lb" "$work/lb.bpf.o"
# An empty program under the datapath's name, for each verdict.
for v in PASS DROP; do
    printf '#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\nSEC("xdp") int xdp_lb_live(struct xdp_md *ctx) { return XDP_%s; }\nchar LICENSE[] SEC("license") = "GPL";\n' "$v" >"$work/empty_$v.bpf.c"
    clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c "$work/empty_$v.bpf.c" -o "$work/empty_$v.bpf.o"
done
for r in $(seq 1 "$rounds"); do
    $bin run --no-store --samples 100 -s pass-non-ip -s drop-v4-frag --format json 2>/dev/null | python3 -c "
import json, sys
for x in json.load(sys.stdin)['results']:
    m = x['measurement']
    print('round $r', x['name'], 'in BPF net %.2f ns' % (m['summary']['median'] - m['overhead']['summary']['median']))"
    for pair in "pass-non-ip|PASS|eth(type=0x0806)/payload(46)" \
        "drop-v4-frag|DROP|eth/ipv4(dst=10.100.0.1,mf=1)/tcp(dport=80)/payload(20)"; do
        name=${pair%%|*}
        rest=${pair#*|}
        v=${rest%%|*}
        packet=${rest#*|}
        $bin ab "$work/lb.bpf.o" "$work/empty_$v.bpf.o" --program xdp_lb_live --per-call --packet "$packet" \
            --no-store --min-rounds 30 --format json 2>/dev/null | python3 -c "
import json, sys
c = json.load(sys.stdin)['cases'][0]
a, (lo, hi) = c['median_a'], c['ratio_ci95']
print('round $r', '$name', 'per call net %.2f ns (95%% CI %.2f-%.2f)' % (a - c['median_b'], a * (1 - hi), a * (1 - lo)))"
    done
done
