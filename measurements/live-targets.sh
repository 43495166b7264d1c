#!/bin/bash
# The live targets (issue 11), in one run on this machine: xdp-lb's LRU hit
# rate across the Katran-on-userspace study's source-port sweep against what
# the LRU size predicts, and its ns/packet against the in-BPF hit and miss
# figures (the cross-check); then a frame-size sweep. Plots beside the output.
# Usage: measurements/live-targets.sh [OUTDIR] (nothing else may run meanwhile).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/tmp/bpfbench-live-targets}
mkdir -p "$out"
bpfbench=./target/release/bpfbench
"$bpfbench" live xdp-lb --lru-size 2000 --sweep src-ports=0,1000,2000,6000,8000,16000 \
    --duration 3 --warmup 1 --no-store --plot "$out/src-ports.svg" | tee "$out/src-ports.txt"
"$bpfbench" live xdp-lb --sweep size=64,128,256,512,1024,1500 --duration 2 --warmup 0.5 \
    --no-store --no-cross-check --plot "$out/size.svg" | tee "$out/size.txt"
