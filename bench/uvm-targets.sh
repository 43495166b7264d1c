#!/bin/sh
# The userspace runtime's targets (issue 12), measured on this machine:
# instruction counts identical over 10 runs, a one-instruction change seen
# as exactly +1, the userspace JIT vs the kernel's for every xdp-lb
# scenario (paired, in alternation on one CPU), and the
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

echo "== kernel JIT vs userspace JIT, every scenario, paired (B/A = user/kernel)"
$bin ab --workload xdp-lb kernel user --no-store --format json >"$out/kernel-vs-user.json"
python3 - "$out/kernel-vs-user.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["cases"]:
    print(f'{c["name"]:24} kernel {c["median_a"]:8.2f}  user {c["median_b"]:8.2f}  user/kernel {c["ratio"]:.3f} [{c["ratio_ci95"][0]:.3f}, {c["ratio_ci95"][1]:.3f}]  {c["verdict"]}')
print("geomean user/kernel", r.get("geomean_ratio"))
PY

echo "== fuzz, 1M programs"
$bin fuzz-uvm --programs 1000000 --seed 1
