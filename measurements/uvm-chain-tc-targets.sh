#!/bin/sh
# Issue 26's userspace targets: the userspace runtime against the kernel
# (ratio user/kernel, paired: `ab --workload OBJ kernel user`, the two
# timed in alternation on CPU 1) for tail-calling chains (its
# bpf_tail_call) and tc programs (its __sk_buff from the kernel, its tc
# helpers), on test objects; and the instructions per packet it counts.
# Run as root after cargo build --release, with nothing else running.
set -eu
cd "$(dirname "$0")/.."
bin=$(pwd)/target/release/bpfbench
obj() { ls -t target/release/build/bpfbench-*/out/test-objects/"$1" | head -1; }
frame="eth(type=0x88b5)/payload(46)"
udp="eth/ipv4(dst=10.0.0.10)/udp(dport=53)/payload(102)"
ab() { # label, object, run arguments
    label=$1
    o=$(obj "$2")
    shift 2
    taskset -c 1 "$bin" ab --workload "$o" kernel user --cpu 1 --no-store --format json "$@" 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
for c in d['cases']:
    lo, hi = c['ratio_ci95']
    print('%-34s kernel %7.2f ns, user %7.2f ns, user/kernel %.3f [%.3f, %.3f] (%s)' % ('$label', c['median_a'], c['median_b'], c['ratio'], lo, hi, c['timing'].get('mode', '?')))
" || echo "$label: ab failed"
}
insns() { # label, object, run arguments
    label=$1
    o=$(obj "$2")
    shift 2
    "$bin" run "$o" --metric insns --no-store --format json "$@" 2>/dev/null | python3 -c "
import json, sys
i = json.load(sys.stdin)['results'][0]['instructions']
print('%-34s %.0f insns/packet, helpers %s' % ('$label', i['body_insns'] / i['packets'] - i['loop_insns'] / i['packets'], {k: round(v / i['packets'], 2) for k, v in i['helpers'].items()}))"
}
ab "xdp chain_entry (2 programs)" xdp_chain.bpf.o --program chain_entry --packet "$frame" --expect XDP_TX
ab "xdp chain_three (3 programs)" xdp_chain.bpf.o --program chain_three --packet "$frame" --expect XDP_TX
ab "tc tc_chain_entry (2 programs)" tc_chain.bpf.o --program tc_chain_entry --skb '{"mark": 9}' --expect TC_ACT_PIPE
ab "tc tc_ttl (direct access, csum)" tc_ttl.bpf.o --packet "eth/ipv4(ttl=9)/udp/payload(30)"
ab "tc tc_nat (skb helpers, trim)" tc_nat.bpf.o --program tc_nat --packet "$udp"
ab "tc tc_skb_echo (context)" tc_skb_echo.bpf.o --packet "eth/ipv4/udp/payload(80)"
insns "xdp chain_three" xdp_chain.bpf.o --program chain_three --packet "$frame"
insns "tc tc_nat" tc_nat.bpf.o --program tc_nat --packet "$udp"
insns "tc tc_chain_entry" tc_chain.bpf.o --program tc_chain_entry --skb '{"mark": 9}'
