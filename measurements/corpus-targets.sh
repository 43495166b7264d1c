#!/bin/sh
# Issue 26's corpus targets: every program of examples/corpus/ validated and
# timed in the kernel (ns/op p50 with its 95% interval, the loop's own
# cost, the timing mode), in the userspace runtime where it has the
# program's helpers (user/kernel ratio), and its BPF instructions per
# packet (--metric insns, counted by the userspace runtime). Needs the
# objects built first (examples/corpus/build.sh with your checkouts). Run
# as root after cargo build --release, with nothing else running.
set -eu
cd "$(dirname "$0")/.."
bin=$(pwd)/target/release/bpfbench
for spec in examples/corpus/*.toml; do
    [ -f "$spec" ] || continue
    both=$(mktemp)
    insns=$(mktemp)
    if ! taskset -c 1 "$bin" run "$spec" --cpu 1 --no-store --runtime both --format json >"$both" 2>/dev/null; then
        taskset -c 1 "$bin" run "$spec" --cpu 1 --no-store --format json >"$both" 2>/dev/null || true
    fi
    taskset -c 1 "$bin" run "$spec" --cpu 1 --no-store --metric insns --format json >"$insns" 2>/dev/null || echo '{"results": []}' >"$insns"
    python3 - "$spec" "$both" "$insns" <<'PY'
import json, sys
spec, both, insns = sys.argv[1:4]
runs = json.load(open(both))['results']
counts = {r['name']: r.get('instructions') for r in json.load(open(insns))['results']}
kernel = {r['name']: r for r in runs if r.get('runtime', 'kernel') == 'kernel'}
user = {r['name']: r for r in runs if r.get('runtime') == 'user'}
for name, r in kernel.items():
    if r.get('error'):
        print(f"{spec} {name}: FAILED: {r['error']}")
        continue
    m = r['measurement']
    s = m['summary']
    lo, hi = s['median_ci95']
    line = f"{spec.split('/')[-1]:24} {name:22} {r['timing']['mode']:8} p50 {s['median']:7.2f} ns [{lo:.2f}, {hi:.2f}] loop {m['overhead']['summary']['median']:5.2f}"
    u = user.get(name)
    if u and not u.get('error'):
        line += f"  user {u['measurement']['summary']['median']:6.2f} ({u['measurement']['summary']['median'] / s['median']:.2f}x)"
    else:
        line += "  user -"
    c = counts.get(name)
    line += f"  insns/packet {c['body_insns'] / c['packets']:.0f}" if isinstance(c, dict) and c.get('packets') else "  insns -"
    print(line)
PY
    rm -f "$both" "$insns"
done
