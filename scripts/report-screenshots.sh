#!/usr/bin/env bash
# The report guide's screenshots (docs/src/images/report-*.png), drawn by
# headless Chromium from a history of real runs made here:
# - the LPM-trie suite, a live sweep and a paired comparison of two builds
#   of the load balancer, the second doing one extra hash round
#   (-DLB_EXTRA_WORK=1, a deliberate regression);
# - 16 runs of four xdp-lb scenarios, the last 8 by a bpfbench built with
#   that regression (BPF_EXTRA_CFLAGS), so the trends show a real change
#   point; the last of them in both runtimes, the latest run the page shows.
# Usage: scripts/report-screenshots.sh [OUT_DIR]  (default docs/src/images;
# takes about 5 minutes, as root, with nothing else running).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p "${1:-docs/src/images}"
out=$(cd "${1:-docs/src/images}" && pwd)
work=$(mktemp -d /tmp/bpfbench-screenshots.XXXXXX)
trap 'rm -rf "$work"' EXIT
export BPFBENCH_DB=$work/history.sqlite

# Two builds: as the tree is, and with the regression. The tree's build is
# made again last, so target/release is left as it was.
BPF_EXTRA_CFLAGS=-DLB_EXTRA_WORK=1 cargo build --release --locked -q
cp target/release/bpfbench "$work/bpfbench-slow"
scripts/build-object.sh xdp-lb "$work/slow.bpf.o" -DLB_EXTRA_WORK=1
cargo build --release --locked -q
cp target/release/bpfbench "$work/bpfbench"
scripts/build-object.sh xdp-lb "$work/base.bpf.o"

scenarios=(-s tcp-v4-lru-hit -s tcp-v4-ch -s tcp-v6-lru-hit -s pass-non-ip)
quick=(--samples 60 --batch-ms 5 --sweeps 3)
"$work/bpfbench" run lpm-trie "${quick[@]}" >/dev/null
"$work/bpfbench" live xdp-lb --sweep src-ports=0,2000,8000,16000 --duration 1 >/dev/null
"$work/bpfbench" ab --workload xdp-lb "$work/base.bpf.o" "$work/slow.bpf.o" "${scenarios[@]}" --max-time 3 >/dev/null
for i in $(seq 1 8); do "$work/bpfbench" run "${scenarios[@]}" "${quick[@]}" --tag main >/dev/null; done
for i in $(seq 1 7); do "$work/bpfbench-slow" run "${scenarios[@]}" "${quick[@]}" --tag extra-work >/dev/null; done
"$work/bpfbench-slow" run "${scenarios[@]}" "${quick[@]}" --tag extra-work --runtime both >/dev/null

"$work/bpfbench" report -o "$work/report.html"
shot() { # NAME WIDTH HEIGHT URL
  chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$work/profile" \
    --window-size="$2,$3" --screenshot="$out/$1" "$4" 2>"$work/chromium.log" || true
  test -s "$out/$1" || { echo "chromium drew no $1:"; tail -5 "$work/chromium.log"; exit 1; } >&2
}
shot report-top.png 1200 900 "file://$work/report.html"
"$work/bpfbench" report -o "$work/trend.html" -s tcp-v4-lru-hit
# A window scrolled to the trends: a frame around the page (headless
# Chromium's screenshot does not follow a page's own #fragment).
echo '<!doctype html><body style="margin:0"><iframe src="trend.html#trends" style="width:1200px;height:900px;border:0"></iframe>' >"$work/frame.html"
shot report-trends.png 1200 900 "file://$work/frame.html"
shot report-phone.png 412 2400 "file://$work/report.html"
echo "drew $out/report-top.png, report-trends.png and report-phone.png from $(
  "$work/bpfbench" history | tail -n +2 | wc -l) runs"
