#!/bin/sh
# Cilium's BPF unit tests as benchmarks, end to end (not in CI: it fetches
# Cilium and takes ~5 minutes): the Go module of VERSION from the module
# proxy (kept in DIR), every test built with examples/corpus/build.sh, then
# all of them replayed, checked by their own CHECK and timed.
#
#   scripts/cilium-tests.sh [VERSION [DIR]]      # v1.18.4, ~/.cache/bpfbench-cilium
#
# Extra bpfbench options go in BPFBENCH_ARGS (default: --samples 20).
set -eu
version=${1:-v1.18.4}
dir=${2:-$HOME/.cache/bpfbench-cilium}
here=$(cd "$(dirname "$0")/.." && pwd)
bpfbench=${BPFBENCH:-$here/target/release/bpfbench}
mkdir -p "$dir"
zip=$dir/cilium-$version.zip
if [ ! -s "$zip" ]; then
    curl -sSfL -o "$zip.part" "https://proxy.golang.org/github.com/cilium/cilium/@v/$version.zip"
    mv "$zip.part" "$zip"
fi
"$here/examples/corpus/build.sh" --cilium "$zip" --cilium-tests "$dir/tests-$version"
# shellcheck disable=SC2086
"$bpfbench" run --tests cilium "$dir/tests-$version" ${BPFBENCH_ARGS:---samples 20}
