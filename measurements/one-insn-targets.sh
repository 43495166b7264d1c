#!/bin/sh
# Issue 25's one-instruction target: two builds of xdp-lb whose difference
# is one ALU operation on the non-IP early exit (-DLB_EXTRA_EXIT_INSN),
# compared by `ab` on pass-non-ip with the datapath inline and called, and
# counted by the userspace runtime (how many BPF instructions that operation
# is per packet). Run as root, after cargo build --release, with nothing
# else running.
set -eu
cd "$(dirname "$0")/.."
bin=./target/release/bpfbench
work=$(mktemp -d /tmp/bpfbench-one-insn.XXXXXX)
trap 'rm -rf "$work"' EXIT
scripts/build-object.sh xdp-lb "$work/a.bpf.o"
scripts/build-object.sh xdp-lb "$work/b.bpf.o" -DLB_EXTRA_EXIT_INSN
for body in inline call; do
    echo "--body $body:"
    $bin ab --workload xdp-lb "$work/a.bpf.o" "$work/b.bpf.o" -s pass-non-ip --body "$body" --no-store | grep pass-non-ip
done
echo "instructions per packet:"
$bin ab --workload xdp-lb "$work/a.bpf.o" "$work/b.bpf.o" -s pass-non-ip --metric insns --no-store | grep pass-non-ip
