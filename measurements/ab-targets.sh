#!/bin/bash
# The paired A/B's targets (issue 10), measured on the machine this runs on:
#   - an object about 2% slower is called slower in at least 9 of 10 trials;
#   - an identical object gets no confident verdict in at least 19 of 20;
#   - each case takes at most 10 s at default settings.
# The objects are builds of examples/encap/xdp_encap.bpf.c; the slower one
# multiplies the service lookup's key by 1, nine times, before the lookup
# (dependent multiplications on the hot path: 2.2% at issue 10, 1.8-4.4%
# or nothing at all at issue 52, by the machine's phase). Then the load
# balancer against itself with one and two more hash rounds
# (LB_EXTRA_WORK, scripts/build-object.sh; tcp-v4-lru-hit), and identical.
# Usage: measurements/ab-targets.sh [SLOW_TRIALS [SAME_TRIALS]]. Nothing else may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
slow_trials=${1:-10}
same_trials=${2:-20}
bpfbench=./target/release/bpfbench
work=$(mktemp -d /tmp/bpfbench-ab-targets.XXXXXX)
trap 'rm -rf "$work"' EXIT

src=examples/encap/xdp_encap.bpf.c
build() { clang-19 -g -O2 -target bpf -mcpu=v3 -I/usr/include/x86_64-linux-gnu -c "$1" -o "$2"; }
build "$src" "$work/a.bpf.o"
cp "$work/a.bpf.o" "$work/same.bpf.o"
muls=$(printf '\t\tasm volatile("%%[a] *= 1" : [a] "+r"(a));\n%.0s' $(seq 1 9))
awk -v muls="$muls" '/\tkey.addr = ip->daddr;/ { print "\t{\n\t\t__u64 a = ip->daddr;"; print muls; print "\t\tkey.addr = a;\n\t}"; next } { print }' "$src" > "$work/slow.bpf.c"
build "$work/slow.bpf.c" "$work/slow.bpf.o"

args=(--map "services=examples/encap/services.json" --packet 'eth/ipv4(src=10.0.0.1,dst=10.0.0.10)/tcp(dport=80)/payload(32)' --no-store --format csv)
trial() { # prints: verdict elapsed_s ratio
    "$bpfbench" ab "$work/a.bpf.o" "$1" "${args[@]}" 2>/dev/null | awk -F, 'NR == 2 { print $7, $11, $4 }'
}
count() { # what, trials, object
    local slower=0 confident=0 max=0
    for i in $(seq 1 "$2"); do
        read -r verdict elapsed ratio < <(trial "$3")
        echo "$1 $i: $verdict (B/A $ratio, $elapsed s)"
        [ "$verdict" = slower ] && slower=$((slower + 1))
        case "$verdict" in slower | faster) confident=$((confident + 1)) ;; esac
        max=$(awk -v a="$max" -v b="$elapsed" 'BEGIN { print (b > a ? b : a) }')
    done
    echo "$1: $slower of $2 slower, $confident confident, longest case ${max} s"
}
count slower "$slow_trials" "$work/slow.bpf.o"
count identical "$same_trials" "$work/same.bpf.o"

scripts/build-object.sh xdp-lb "$work/lb0.bpf.o"
for n in 1 2; do scripts/build-object.sh xdp-lb "$work/lb$n.bpf.o" -DLB_EXTRA_WORK=$n; done
trial() { "$bpfbench" ab --workload xdp-lb "$work/lb0.bpf.o" "$1" -s tcp-v4-lru-hit --no-store --format csv 2>/dev/null | awk -F, 'NR == 2 { print $7, $11, $4 }'; }
count "one hash round" "$slow_trials" "$work/lb1.bpf.o"
count "two hash rounds" "$slow_trials" "$work/lb2.bpf.o"
cp "$work/lb0.bpf.o" "$work/lb0-again.bpf.o"
count "identical load balancer" "$same_trials" "$work/lb0-again.bpf.o"
