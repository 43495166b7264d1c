#!/bin/bash
# Issue 27's change-point targets: on series made of this machine's measured
# run-to-run noise, a 5 % shift is found in >= 90 % of trials, and series of
# identical code report a change in <= 5 % of them.
# Usage: measurements/changes-targets.sh [DB [TRIALS]]: DB holds runs of
# identical code (measurements/changes-noise.sh makes one; without DB, one
# of 40 runs is made first, about 4 minutes). Nothing else may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
db=${1:-}
trials=${2:-1000}
if [ -z "$db" ]; then
    work=$(mktemp -d /tmp/bpfbench-changes-targets.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    db=$work/history.sqlite
    ./measurements/changes-noise.sh "$db" 40
fi
cargo build --release --example change_point_power >/dev/null 2>&1
./target/release/examples/change_point_power "$db" "$trials" 0.05
./target/release/bpfbench changes --db "$db"
