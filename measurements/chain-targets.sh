#!/bin/sh
# Issue 26's chain target: a tail-calling chain's figure against the sum
# of its parts measured apart, on tests/objects/xdp_chain.bpf.o and the
# default packet (IPv4/UDP), on CPU 1, the variants taking turns in each
# round. Figures are net of each run's own loop (p50 less loop p50):
#   chains (in BPF, entered by a tail call from the chain loop):
#     chain_entry -> chain_tx; chain_three -> chain_mid -> chain_tx;
#   parts: chain_entry and chain_three alone (their slot emptied with
#     --tail-call ...=none: the tail call falls through; chain loop too),
#     chain_mid alone (the same), chain_tx alone (no tail call: inline in
#     the ordinary loop);
#   the same chains per call (one test run each, for scale).
# Run as root after cargo build --release, with nothing else running.
# ROUNDS (default 3).
set -eu
cd "$(dirname "$0")/.."
bin=$(pwd)/target/release/bpfbench
chain=$(ls -t target/release/build/bpfbench-*/out/test-objects/xdp_chain.bpf.o | head -1)
rounds=${ROUNDS:-3}
net() { # label, bpfbench run arguments -> "label mode net-ns (p50, loop)"
    label=$1
    shift
    taskset -c 1 "$bin" run "$chain" --cpu 1 --no-store --format json "$@" 2>/dev/null | python3 -c "
import json, sys
r = json.load(sys.stdin)['results'][0]
m = r['measurement']
print('%-30s %-8s %6.2f ns   (p50 %.2f, loop %.2f)' % ('$label', r['timing']['mode'], m['summary']['median'] - m['overhead']['summary']['median'], m['summary']['median'], m['overhead']['summary']['median']))"
}
for r in $(seq 1 "$rounds"); do
    echo "round $r"
    net "entry->tx" --program chain_entry
    net "entry alone" --program chain_entry --tail-call chain_slots:1=none
    net "tx alone" --program chain_tx
    net "three->mid->tx" --program chain_three
    net "three alone" --program chain_three --tail-call chain_slots:2=none
    net "mid alone" --program chain_mid --tail-call chain_slots:1=none
    net "entry->tx per call" --program chain_entry --per-call
    net "three->mid->tx per call" --program chain_three --per-call
done
