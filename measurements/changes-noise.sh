#!/bin/bash
# The run-to-run noise the change-point targets are measured on (issue 27):
# RUNS runs of identical code, one after the other, stored with tag "same"
# into DB (kept: measurements/changes-targets.sh and 'bpfbench changes' read
# it). Each run: xdp-lb's tcp-v4-lru-hit and pass-non-ip at the default
# sampling, on the default CPU, as a CI job would run them.
# Usage: measurements/changes-noise.sh DB [RUNS]. Nothing else may run meanwhile.
set -euo pipefail
cd "$(dirname "$0")/.."
db=${1:?usage: $0 DB [RUNS]}
runs=${2:-40}
for i in $(seq 1 "$runs"); do
    ./target/release/bpfbench run -s tcp-v4-lru-hit -s pass-non-ip --db "$db" --tag same > /dev/null
    echo "run $i of $runs stored in $db" >&2
done
