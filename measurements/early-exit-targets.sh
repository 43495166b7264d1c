#!/bin/sh
# Issue 25's early-exit target: xdp-lb's pass-non-ip and drop-v4-frag,
# net of the loop (p50 less loop p50) in BPF, against an independent
# measure of the same path: xdp_lb.bpf.o's datapath alone (xdp_lb_live),
# one kernel-timed BPF_PROG_TEST_RUN per packet, less an empty program of
# the same verdict, the two alternating in `ab` (adjacent batches on one
# CPU); and, as the issue suggests, `bpftool prog run ... repeat 10000000`
# (the kernel's own repeat loop, whole ns) of the same two programs on the
# same frames, pinned in a private bpffs that is unmounted again. Rounds
# alternate the measures. Run as root, after cargo build --release, with
# nothing else running (bpftool: Debian's package, which setup.sh installs).
set -eu
cd "$(dirname "$0")/.."
bin=$(pwd)/target/release/bpfbench
lb=$(ls -t target/release/build/bpfbench-*/out/xdp_lb.bpf.o | head -1)
rounds=${ROUNDS:-3}
work=$(mktemp -d /tmp/bpfbench-early-exit.XXXXXX)
mkdir "$work/bpffs"
mount -t bpf bpf "$work/bpffs"
trap 'umount "$work/bpffs" 2>/dev/null; rm -rf "$work"' EXIT INT TERM
cp "$lb" "$work/lb.bpf.o"
# The frames for bpftool: an ARP request, and an IPv4 first fragment (MF) to the VIP.
python3 - "$work" <<'PY'
import struct, sys
def csum(b):
    s = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    s = (s & 0xffff) + (s >> 16)
    return ~((s & 0xffff) + (s >> 16)) & 0xffff
arp = bytes.fromhex('ffffffffffff020000000001080600010800060400010200000000010a090001000000000000' '0a090002')
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 40, 1, 0x2000, 64, 6, 0, bytes([10, 9, 0, 1]), bytes([10, 100, 0, 1]))
ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
tcp = struct.pack('!HHIIBBHHH', 1234, 80, 1, 0, 0x50, 0x10, 8192, 0, 0)
frag = bytes.fromhex('020000000002020000000001' '0800') + ip + tcp
for name, frame in (('PASS', arp), ('DROP', frag)):
    open(sys.argv[1] + '/frame_%s.bin' % name, 'wb').write(frame + bytes(max(0, 60 - len(frame))))
PY
per_run() { # pinned program, frame -> average ns per run over 10M runs on CPU 1
    taskset -c 1 bpftool prog run pinned "$1" data_in "$2" repeat 10000000 | sed -n 's/.*duration (average): \([0-9]*\)ns.*/\1/p'
}
# An empty program under the datapath's name, for each verdict.
for v in PASS DROP; do
    printf '#include <linux/bpf.h>\n#include <bpf/bpf_helpers.h>\nSEC("xdp") int xdp_lb_live(struct xdp_md *ctx) { return XDP_%s; }\nchar LICENSE[] SEC("license") = "GPL";\n' "$v" >"$work/empty_$v.bpf.c"
    clang-19 -O2 -g -target bpf -I/usr/include/x86_64-linux-gnu -c "$work/empty_$v.bpf.c" -o "$work/empty_$v.bpf.o"
    bpftool prog loadall "$work/empty_$v.bpf.o" "$work/bpffs/empty_$v" type xdp 2>/dev/null
done
bpftool prog loadall "$work/lb.bpf.o" "$work/bpffs/lb" type xdp 2>/dev/null
for r in $(seq 1 "$rounds"); do
    $bin run --no-store --samples 100 -s pass-non-ip -s drop-v4-frag --format json 2>/dev/null | python3 -c "
import json, sys
for x in json.load(sys.stdin)['results']:
    m = x['measurement']
    print('round $r', x['name'], 'in BPF net %.2f ns' % (m['summary']['median'] - m['overhead']['summary']['median']))"
    for pair in "pass-non-ip|PASS|eth(type=0x0806)/payload(46)" \
        "drop-v4-frag|DROP|eth/ipv4(dst=10.100.0.1,mf=1)/tcp(dport=80)/payload(20)"; do
        name=${pair%%|*}
        rest=${pair#*|}
        v=${rest%%|*}
        packet=${rest#*|}
        $bin ab "$work/lb.bpf.o" "$work/empty_$v.bpf.o" --program xdp_lb_live --per-call --packet "$packet" \
            --no-store --min-rounds 30 --format json 2>/dev/null | python3 -c "
import json, sys
c = json.load(sys.stdin)['cases'][0]
a, (lo, hi) = c['median_a'], c['ratio_ci95']
print('round $r', '$name', 'per call net %.2f ns (95%% CI %.2f-%.2f)' % (a - c['median_b'], a * (1 - hi), a * (1 - lo)))"
        lb_ns=$(per_run "$work/bpffs/lb/xdp_lb_live" "$work/frame_$v.bin")
        empty_ns=$(per_run "$work/bpffs/empty_$v/xdp_lb_live" "$work/frame_$v.bin")
        echo "round $r $name bpftool repeat net $((lb_ns - empty_ns)) ns ($lb_ns - $empty_ns)"
    done
done
