#!/bin/bash
# Builds the kernel selftests' xdp-lb, bpf-nop and lpm-trie benchmarks from a
# kernel source tree without building the rest of the selftests (which need a
# full kernel build): their benchmark and BPF sources as they are, with
# bench_main.c here standing in for bench.c (argp, producers pinned to CPUs,
# one measure() a second, the same report functions).
#
# Usage: measurements/seed-bench/build.sh LINUX_TREE [OUT]   (OUT: target/seed-bench)
# Then:  OUT/bench -q -w3 -a xdp-lb --machine-readable --scenario tcp-v4-lru-hit
#
# One change to the sources: the LPM bench's tracing programs (fentry/fexit on
# bpf_map_free_deferred, used only by lpm-trie-free) are not loaded, so the
# other LPM operations run where tracing programs are refused; lpm-trie-free
# is not offered. Needs clang-19, bpftool (gen skeleton), libelf and zlib.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=$(cd "$1" && pwd)
out=$(mkdir -p "${2:-$here/../../target/seed-bench}" && cd "${2:-$here/../../target/seed-bench}" && pwd)
st=$tree/tools/testing/selftests/bpf
if [ ! -f "$st/benchs/bench_xdp_lb.c" ]; then
    echo "error: $st/benchs/bench_xdp_lb.c not found: give a kernel tree with the selftests' xdp-lb bench (Linux 7.1 or later)" >&2
    exit 2
fi
for tool in clang-19 bpftool gcc; do
    command -v "$tool" >/dev/null || { echo "error: $tool not found: install it (scripts/setup.sh installs clang-19; bpftool is Debian's bpftool package)" >&2; exit 2; }
done

# libbpf: the version bpfbench links (the libbpf-sys crate's source), so both
# tools load programs the same way.
libbpf_src=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/libbpf-sys-*/libbpf/src 2>/dev/null | sort | tail -1)
[ -n "$libbpf_src" ] || { echo "error: libbpf-sys source not found: run cargo build first" >&2; exit 2; }
make -s -C "$libbpf_src" BUILD_STATIC_ONLY=1 OBJDIR="$out/libbpf-obj" DESTDIR="$out/libbpf" \
    INCLUDEDIR=/include LIBDIR=/lib install >/dev/null

mkdir -p "$out/src"
# The LPM bench, with its tracing programs left unloaded (see above).
python3 - "$st/benchs/bench_lpm_trie_map.c" "$out/src/bench_lpm_trie_map.c" <<'EOF'
import sys
s = open(sys.argv[1]).read()
old = "ctx.bench = lpm_trie_bench__open_and_load();"
new = ("ctx.bench = lpm_trie_bench__open();\n"
       "\tif (ctx.bench && (bpf_program__set_autoload(ctx.bench->progs.trie_free_entry, false) ||\n"
       "\t\t\t  bpf_program__set_autoload(ctx.bench->progs.trie_free_exit, false) ||\n"
       "\t\t\t  lpm_trie_bench__load(ctx.bench)))\n"
       "\t\tctx.bench = NULL;")
if s.count(old) != 1:
    sys.exit("error: bench_lpm_trie_map.c has changed (no single open_and_load of lpm_trie_bench): update build.sh")
open(sys.argv[2], "w").write(s.replace(old, new))
EOF

bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$out/vmlinux.h"
bpf_flags=(-g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -I"$out/libbpf/include" -I"$out"
    -I"$st" -I"$st/progs" -I"$here/bpf-include" -I/usr/include/x86_64-linux-gnu -Wno-compare-distinct-pointer-types)
for prog in xdp_lb_bench bpf_nop_bench lpm_trie_bench lpm_trie_map; do
    clang-19 "${bpf_flags[@]}" -c "$st/progs/$prog.c" -o "$out/$prog.bpf.o"
    bpftool gen skeleton "$out/$prog.bpf.o" name "$prog" > "$out/$prog.skel.h"
done

# Our stand-ins first (bench.h, testing_helpers.h), then the selftests' own headers.
gcc -O2 -g -Wall -Wno-unused-function -Wno-unused-variable \
    -I"$here/include" -I"$out" -I"$out/libbpf/include" -I"$st" -I"$st/benchs" \
    -o "$out/bench" "$here/bench_main.c" "$st/benchs/bench_bpf_timing.c" "$st/benchs/bench_xdp_lb.c" \
    "$st/benchs/bench_bpf_nop.c" "$out/src/bench_lpm_trie_map.c" \
    "$out/libbpf/lib/libbpf.a" -lelf -lz -lm -lpthread
echo "$out/bench"
