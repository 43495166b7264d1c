#!/bin/bash
# The generator's targets (issue 11), side by side in one run on this machine:
#   - bpfbench gen against xdp-trafficgen (UDP, 64 B on the wire, veth), on
#     1 and 2 threads, while varying 64K flows (xdp-trafficgen varies none),
#     in IPv6 (as xdp-trafficgen sends) and IPv4;
#   - --rate within 2% of the asked rate from 10 kpps to 1 Mpps.
# Usage: measurements/gen-targets.sh PATH/TO/xdp-trafficgen [SECONDS [ROUNDS]]
# (build xdp-tools 1.6.3 from source; its libbpf submodule can be the
# libbpf source that the libbpf-sys crate ships; its configure wants m4 and
# libpcap-dev: CLANG=clang-19 LLC=llc-19 ./configure && make -C lib && make -C
# xdp-trafficgen). Nothing else may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
trafficgen=$1
secs=${2:-3}
rounds=${3:-5}
bpfbench=./target/release/bpfbench
drop=$(ls target/release/build/bpfbench-*/out/test-objects/xdp_drop.bpf.o | head -1)
ns=bpfbench-$$ g=bpfbench$(printf %x $$)g d=bpfbench$(printf %x $$)d
cleanup() { ip link del "$g" 2>/dev/null || true; ip netns del "$ns" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
ip netns add "$ns"
ip link add "$g" numtxqueues 2 numrxqueues 2 type veth peer name "$d" numtxqueues 2 numrxqueues 2 netns "$ns"
ip link set "$g" up
ip -n "$ns" link set "$d" up
# The receiver drops every frame in XDP (a veth takes redirected frames only with an XDP program).
ip -n "$ns" link set dev "$d" xdpdrv obj "$drop" sec xdp
mac=$(ip -n "$ns" -o link show "$d" | sed 's/.*link\/ether \([^ ]*\).*/\1/')

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# Per-second rates, the first second left out (start-up).
ours() { # threads spec size
    # On the CPUs xdp-trafficgen takes (its threads start at CPU 0): the two
    # vCPUs run at different speeds, so the same threads on other CPUs would
    # compare the CPUs as much as the tools.
    "$bpfbench" gen "$g" --threads "$1" --cpus "$(seq -s, 0 $(($1 - 1)))" --packet "$2" --size "$3" --duration "$secs" --format json 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); [print(s["pps"]) for s in d["seconds"][1:] if s["t_s"] - int(s["t_s"]) < 0.5]' | median
}
theirs() { # threads
    # Stopped with SIGINT, as its users stop it (it has no time limit).
    { timeout -s INT "$((secs + 1))" "$trafficgen" udp "$g" --dst-mac "$mac" --threads "$1" 2>/dev/null || true; } |
        awk '/xmit\/s/ { print $(NF - 1) }' | tail -n +2 | median
}
# 64 sources x 1024 ports = 65536 flows.
v6="eth(dst=$mac)/ipv6(src=fe80::1-fe80::40,dst=fe80::2)/udp(sport=1024-2047,dport=9)"
v4="eth(dst=$mac)/ipv4(src=10.0.0.1-10.0.0.64,dst=10.0.0.2)/udp(sport=1024-2047,dport=9)"
# The machine's CPUs switch speed levels for seconds at a time: the tools
# take turns in short runs, and each round gives its own ratios.
for threads in 1 2; do
    for round in $(seq 1 "$rounds"); do
        t=$(theirs "$threads")
        o6=$(ours "$threads" "$v6" 62)
        o4=$(ours "$threads" "$v4" 60)
        awk -v n="$threads" -v r="$round" -v t="$t" -v o6="$o6" -v o4="$o4" 'BEGIN {
            printf "%d thread(s), round %d: xdp-trafficgen IPv6 1 flow %.0f pps; bpfbench gen IPv6 65536 flows %.0f pps (%.3fx); IPv4 65536 flows %.0f pps (%.3fx)\n", n, r, t, o6, o6 / t, o4, o4 / t }'
    done
done
for rate in 10000 100000 1000000; do
    "$bpfbench" gen "$g" --packet "$v4" --size 60 --rate "$rate" --duration "$secs" --format json 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print("--rate %d: %.0f pps over %.2f s (%+.3f%%), device tx %d, errors %d" % (d["rate_asked_pps"], d["pps"], d["elapsed_s"], (d["pps"] / d["rate_asked_pps"] - 1) * 100, d["device_tx"], d["errors"]))'
done
