#!/bin/sh
# The userspace runtime's targets (issue 12), measured on this machine:
# instruction counts identical over 10 runs, a one-instruction change seen
# as exactly +1, kernel vs userspace for every xdp-lb scenario, and the
# million-program fuzz. Run as root with nothing else running.
set -eu
cd "$(dirname "$0")/.."
bin=./target/release/bpfbench
out=${1:-/tmp/bpfbench-uvm-targets}
mkdir -p "$out"

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

echo "== kernel vs userspace, every scenario"
$bin run xdp-lb --runtime both --no-store

echo "== fuzz, 1M programs"
$bin fuzz-uvm --programs 1000000 --seed 1
