#!/bin/sh
# Builds a built-in workload's BPF object the way bpfbench's build does, for
# 'bpfbench ab --workload NAME A.bpf.o B.bpf.o'. Extra arguments go to clang,
# e.g. -DLB_EXTRA_WORK=2 or -mcpu=v2.
#
#   scripts/build-object.sh xdp-lb before.bpf.o
#   (change src/workloads/xdp_lb/xdp_lb.bpf.c)
#   scripts/build-object.sh xdp-lb after.bpf.o
#   bpfbench ab --workload xdp-lb before.bpf.o after.bpf.o
set -eu
cd "$(dirname "$0")/.."

if [ $# -lt 2 ]; then
    echo "usage: scripts/build-object.sh WORKLOAD OUT.bpf.o [CLANG_ARGS...]  (WORKLOAD: xdp-lb, maps or lpm-trie)" >&2
    exit 2
fi
workload=$1
out=$2
shift 2
case "$workload" in
    xdp-lb) src=src/workloads/xdp_lb/xdp_lb.bpf.c ;;
    maps | lpm-trie) src=src/workloads/maps/map_ops.bpf.c ;;
    *)
        echo "build-object.sh: unknown workload '$workload'; give xdp-lb, maps or lpm-trie" >&2
        exit 2
        ;;
esac
clang=${BPF_CLANG:-clang-19}
# The flags of build.rs (and libbpf-cargo's own: -g -O2 -target bpf -D__TARGET_ARCH_x86).
exec "$clang" -g -O2 -target bpf -D__TARGET_ARCH_x86 -mcpu=v3 \
    -I/usr/include/x86_64-linux-gnu -Isrc/bpf -Wall -Werror "$@" -c "$src" -o "$out"
