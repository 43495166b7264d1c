#!/bin/sh
# The userspace runtime's targets (issue 12), measured on this machine:
# instruction counts identical over 10 runs, a one-instruction change seen
# as exactly +1, the userspace JIT vs the kernel's for every xdp-lb
# scenario, every map operation and a user's object (paired, in
# alternation on one CPU), and the million-program fuzz. Run as root with nothing else running.
set -eu
cd "$(dirname "$0")/.."
bin=./target/release/bpfbench
out=${1:-/tmp/bpfbench-uvm-targets}
mkdir -p "$out"

# Each case of an `ab --format json` record: both medians and user/kernel.
ratios() {
    python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cases"]:
    print(f'{c["name"]:28} kernel {c["median_a"]:8.2f}  user {c["median_b"]:8.2f}  user/kernel {c["ratio"]:.3f} [{c["ratio_ci95"][0]:.3f}, {c["ratio_ci95"][1]:.3f}]  {c["verdict"]}')
print("geomean user/kernel", r.get("geomean_ratio"))
PY
}

echo "== instruction counts, 10 runs"
for i in 1 2 3 4 5 6 7 8 9 10; do
    $bin run xdp-lb --metric insns --format json --no-store >"$out/insns-$i.json"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps([x["instructions"] for x in r["results"]], sort_keys=True))' "$out/insns-$i.json" >"$out/counts-$i.txt"
done
distinct=$(sort -u "$out"/counts-*.txt | wc -l)
echo "distinct count sets over 10 runs: $distinct"
$bin run xdp-lb --metric insns --no-store

echo "== one instruction more (-DLB_EXTRA_INSN)"
scripts/build-object.sh xdp-lb "$out/a.bpf.o"
scripts/build-object.sh xdp-lb "$out/b.bpf.o" -DLB_EXTRA_INSN
$bin ab --workload xdp-lb "$out/a.bpf.o" "$out/b.bpf.o" --metric insns | grep -v '^changed:' || true

echo "== kernel JIT vs userspace JIT, every scenario, paired (B/A = user/kernel)"
$bin ab --workload xdp-lb kernel user --no-store --format json >"$out/kernel-vs-user.json"
ratios "$out/kernel-vs-user.json"

echo "== map operations, every map type, paired (B/A = user/kernel)"
$bin ab --workload maps kernel user --op lookup,update,insert,delete --no-store --format json >"$out/maps-kernel-vs-user.json"
ratios "$out/maps-kernel-vs-user.json"
$bin ab --workload lpm-trie kernel user --no-store --format json >"$out/lpm-kernel-vs-user.json"
ratios "$out/lpm-kernel-vs-user.json"

echo "== a user's object (the README's encapsulation example), paired"
clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c examples/encap/xdp_encap.bpf.c -o "$out/xdp_encap.bpf.o"
$bin ab --workload "$out/xdp_encap.bpf.o" kernel user --map services=examples/encap/services.json \
    --packet 'eth/ipv4(src=10.1.0.0-10.1.15.255,dst=10.0.0.10)/tcp(dport=80)/payload(32)' --expect XDP_TX \
    --no-store --format json >"$out/encap-kernel-vs-user.json"
ratios "$out/encap-kernel-vs-user.json"

echo "== fuzz, 1M programs"
$bin fuzz-uvm --programs 1000000 --seed 1
