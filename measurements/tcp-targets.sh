#!/bin/bash
# gen's TCP mode beside xdp-trafficgen's and the kernel's own TCP sender, in
# one run: each sends for 3 s to a Python receiver in a namespace across a
# veth pair, which reports what its socket took in (bytes over the time from
# the first to the last byte). Rounds alternate the senders: the CPUs' speed
# levels move between rounds. Usage: measurements/tcp-targets.sh [XDP_TRAFFICGEN]
# (nothing else may run meanwhile; the trafficgen is optional).
set -euo pipefail
cd "$(dirname "$0")/.."
bpfbench=./target/release/bpfbench
trafficgen=${1:-}
ns=bpfbench-tcpbench g=bpfbenchtcpg d=bpfbenchtcpd
pass=$(find target/release/build -path '*test-objects/xdp_pass.bpf.o' | head -1)
[ -n "$pass" ] || { echo "build the tests first (cargo test --release --no-run)" >&2; exit 1; }
cleanup() {
    kill $(jobs -p) 2>/dev/null || true
    ip link del "$g" 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
}
trap cleanup EXIT
ip netns add "$ns"
ip link add "$g" mtu 2000 type veth peer name "$d" mtu 2000 netns "$ns"
ip addr add 198.18.255.1/30 dev "$g"
ip addr add fd62:7066:6265::1/64 dev "$g" nodad
ip link set "$g" up
ip -n "$ns" addr add 198.18.255.2/30 dev "$d"
ip -n "$ns" addr add fd62:7066:6265::2/64 dev "$d" nodad
ip -n "$ns" link set "$d" up
# A veth takes redirected frames only into XDP.
ip netns exec "$ns" ip link set dev "$d" xdpdrv obj "$pass" sec xdp

receiver() { # ADDR PORT: prints one line per connection
    ip netns exec "$ns" python3 -u -c '
import socket, sys, time
addr, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((addr, port)); s.listen(8)
buf = memoryview(bytearray(4 << 20))
while True:
    c, _ = s.accept(); c.settimeout(1.0)
    n, t0, t1 = 0, None, None
    while True:
        try:
            k = c.recv_into(buf)
        except (socket.timeout, ConnectionResetError) as e:
            print(f"receiver: {type(e).__name__}", flush=True)
            break
        if not k:
            break
        t1 = time.monotonic(); t0 = t0 or t1; n += k
    c.close()
    dt = (t1 - t0) if t0 and t1 > t0 else float("nan")
    print(f"receiver: {n} bytes in {dt:.3f} s = {n * 8 / dt / 1e9:.3f} Gbit/s", flush=True)
' "$1" "$2" &
}
receiver 198.18.255.2 5001
receiver fd62:7066:6265::2 5002
sleep 1

kernel_tcp() { # ADDR PORT: the kernel's own sender, 3 s of sendall
    python3 -c '
import socket, sys, time
addr, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
s.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, sys.argv[3].encode())
s.connect((addr, port)); buf = bytes(1 << 20); end = time.monotonic() + 3
while time.monotonic() < end:
    s.sendall(buf)
s.close()
' "$1" "$2" "$g"
}

for round in 1 2 3; do
    for fam in 4 6; do
        if [ $fam = 4 ]; then addr=198.18.255.2 port=5001 url=198.18.255.2:5001; else addr=fd62:7066:6265::2 port=5002 url="[fd62:7066:6265::2]:5002"; fi
        echo "== round $round, IPv$fam, bpfbench gen --tcp"
        "$bpfbench" gen "$g" --tcp "$url" --duration 3 | tail -3
        sleep 1.5
        if [ -n "$trafficgen" ] && [ $fam = 6 ]; then # its TCP mode is IPv6 only
            echo "== round $round, IPv$fam, xdp-trafficgen tcp"
            timeout -s INT 3 "$trafficgen" tcp -i "$g" -p $port $addr | tail -2 || true
            sleep 2
        fi
        echo "== round $round, IPv$fam, kernel TCP (sendall)"
        kernel_tcp $addr $port
        sleep 1.5
    done
done
