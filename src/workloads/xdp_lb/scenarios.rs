//! The 24 load-balancer scenarios: the code-path matrix of protocol, address
//! family, LRU state, consistent hashing, TCP flags and early exits. Names and
//! groups follow the kernel selftests' xdp-lb bench so results compare.

use std::net::IpAddr;

use super::addressing::*;
use super::packets::{ACK, ClientPacket, L4, RST_ACK, SYN, Shape};
use crate::harness::ScenarioInfo;

/// How the reset block varies the flow between iterations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flows {
    /// The same packet every time.
    Single,
    /// 4096 source addresses, cycled: after the first pass, every flow is in the LRU.
    Diverse,
    /// A 16M-address space walked by a counter that persists across batches,
    /// so a flow comes back only after 16M packets: long evicted, a cold LRU.
    Miss16M,
    /// Fresh flows, two packets each: the first misses and inserts, the second hits.
    WarmupPairs,
}

impl Flows {
    /// (flow-space mask, packets per flow) as the BPF flow generator takes them.
    pub fn generator(self) -> Option<(u32, u32)> {
        match self {
            Flows::Single => None,
            Flows::Diverse => Some((4095, 1)),
            Flows::Miss16M => Some((0x00ff_ffff, 1)),
            Flows::WarmupPairs => Some((0x00ff_ffff, 2)),
        }
    }
}

/// The code path a scenario must take, which fixes the counters validation expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Connection found in the LRU.
    LruHit,
    /// VIP bypasses the LRU: consistent hashing only.
    ConsistentHash,
    /// SYN: LRU lookup skipped, consistent hash, LRU updated.
    Syn,
    /// RST not in the LRU: consistent hash, no insert.
    RstMiss,
    /// Every packet misses the LRU and is inserted.
    LruMiss,
    /// First packet of each flow misses, the rest hit.
    LruFirstMiss,
    Pass,
    Drop,
}

impl Path {
    /// Whether the path reads or writes the connection table, so that its
    /// time depends on what the table holds (a miss in an empty table is
    /// not a miss in a full one; an insert into a full table evicts).
    pub fn uses_lru(self) -> bool {
        !matches!(self, Path::ConsistentHash | Path::Pass | Path::Drop)
    }
}

#[derive(Debug, Clone)]
pub struct LbScenario {
    pub info: ScenarioInfo,
    pub packet: ClientPacket,
    /// The VIP the packet is for, when it is for one.
    pub vip: Option<Vip>,
    pub flows: Flows,
    pub path: Path,
}

const SINGLE: &str = "Single-flow baseline";
const DIVERSE: &str = "Diverse flows (4K src addrs)";
const FLAGS: &str = "TCP flags";
const STRESS: &str = "LRU stress";
const EXITS: &str = "Early exits";

const fn pkt(src: IpAddr, dst: IpAddr, dport: u16, l4: L4, shape: Shape) -> ClientPacket {
    ClientPacket { src, dst, sport: CLIENT_PORT, dport, l4, tos: CLIENT_TOS, shape }
}

const C4: IpAddr = IpAddr::V4(CLIENT_V4);
const C6: IpAddr = IpAddr::V6(CLIENT_V6);

const fn to_vip(client: IpAddr, vip: Vip, l4: L4) -> ClientPacket {
    pkt(client, vip.addr, vip.port, l4, Shape::Plain)
}

// One argument per column of the scenario table below.
#[allow(clippy::too_many_arguments)]
const fn lb(
    name: &'static str,
    group: &'static str,
    description: &'static str,
    vip: Vip,
    client: IpAddr,
    l4: L4,
    flows: Flows,
    path: Path,
) -> LbScenario {
    LbScenario {
        info: ScenarioInfo::fixed(name, group, description),
        packet: to_vip(client, vip, l4),
        vip: Some(vip),
        flows,
        path,
    }
}

const fn exit(name: &'static str, description: &'static str, packet: ClientPacket, path: Path) -> LbScenario {
    LbScenario { info: ScenarioInfo::fixed(name, EXITS, description), packet, vip: None, flows: Flows::Single, path }
}

const TCP: L4 = L4::Tcp(ACK);

pub static SCENARIOS: [LbScenario; 24] = [
    lb("tcp-v4-lru-hit", SINGLE, "IPv4 TCP, LRU hit, IPIP encap", VIP_TCP_V4, C4, TCP, Flows::Single, Path::LruHit),
    lb(
        "tcp-v4-ch",
        SINGLE,
        "IPv4 TCP, LRU bypass, consistent-hash lookup, IPIP encap",
        VIP_TCP_V4_CH,
        C4,
        TCP,
        Flows::Single,
        Path::ConsistentHash,
    ),
    lb("tcp-v6-lru-hit", SINGLE, "IPv6 TCP, LRU hit, IP6IP6 encap", VIP_TCP_V6, C6, TCP, Flows::Single, Path::LruHit),
    lb(
        "tcp-v6-ch",
        SINGLE,
        "IPv6 TCP, LRU bypass, consistent-hash lookup, IP6IP6 encap",
        VIP_TCP_V6_CH,
        C6,
        TCP,
        Flows::Single,
        Path::ConsistentHash,
    ),
    lb(
        "udp-v4-lru-hit",
        SINGLE,
        "IPv4 UDP, LRU hit with timeout check, IPIP encap",
        VIP_UDP_V4,
        C4,
        L4::Udp,
        Flows::Single,
        Path::LruHit,
    ),
    lb(
        "udp-v6-lru-hit",
        SINGLE,
        "IPv6 UDP, LRU hit with timeout check, IP6IP6 encap",
        VIP_UDP_V6,
        C6,
        L4::Udp,
        Flows::Single,
        Path::LruHit,
    ),
    lb(
        "tcp-v4v6-lru-hit",
        SINGLE,
        "IPv4 TCP to IPv6 reals, LRU hit, IPv4-in-IPv6 encap",
        VIP_TCP_V4_TO_V6,
        C4,
        TCP,
        Flows::Single,
        Path::LruHit,
    ),
    lb(
        "tcp-v4-lru-diverse",
        DIVERSE,
        "IPv4 TCP, 4K flows, LRU hits after the first pass",
        VIP_TCP_V4,
        C4,
        TCP,
        Flows::Diverse,
        Path::LruFirstMiss,
    ),
    lb(
        "tcp-v4-ch-diverse",
        DIVERSE,
        "IPv4 TCP, 4K flows, consistent hash across the ring",
        VIP_TCP_V4_CH,
        C4,
        TCP,
        Flows::Diverse,
        Path::ConsistentHash,
    ),
    lb(
        "tcp-v6-lru-diverse",
        DIVERSE,
        "IPv6 TCP, 4K flows, LRU hits after the first pass",
        VIP_TCP_V6,
        C6,
        TCP,
        Flows::Diverse,
        Path::LruFirstMiss,
    ),
    lb(
        "tcp-v6-ch-diverse",
        DIVERSE,
        "IPv6 TCP, 4K flows, consistent hash across the ring",
        VIP_TCP_V6_CH,
        C6,
        TCP,
        Flows::Diverse,
        Path::ConsistentHash,
    ),
    lb(
        "udp-v4-lru-diverse",
        DIVERSE,
        "IPv4 UDP, 4K flows, LRU hits after the first pass",
        VIP_UDP_V4,
        C4,
        L4::Udp,
        Flows::Diverse,
        Path::LruFirstMiss,
    ),
    lb(
        "tcp-v4-syn",
        FLAGS,
        "IPv4 TCP SYN: LRU skipped, consistent hash, LRU entry rewritten",
        VIP_TCP_V4,
        C4,
        L4::Tcp(SYN),
        Flows::Single,
        Path::Syn,
    ),
    lb(
        "tcp-v4-rst-miss",
        FLAGS,
        "IPv4 TCP RST, not in LRU: consistent hash, no LRU insert",
        VIP_TCP_V4,
        C4,
        L4::Tcp(RST_ACK),
        Flows::Single,
        Path::RstMiss,
    ),
    lb(
        "tcp-v4-lru-miss",
        STRESS,
        "IPv4 TCP, LRU miss (16M flow space), CH lookup and LRU insert",
        VIP_TCP_V4,
        C4,
        TCP,
        Flows::Miss16M,
        Path::LruMiss,
    ),
    lb(
        "udp-v4-lru-miss",
        STRESS,
        "IPv4 UDP, LRU miss (16M flow space), CH lookup and LRU insert",
        VIP_UDP_V4,
        C4,
        L4::Udp,
        Flows::Miss16M,
        Path::LruMiss,
    ),
    lb(
        "tcp-v4-lru-warmup",
        STRESS,
        "IPv4 TCP, new flows of two packets: half miss and insert, half hit",
        VIP_TCP_V4,
        C4,
        TCP,
        Flows::WarmupPairs,
        Path::LruFirstMiss,
    ),
    exit(
        "pass-v4-no-vip",
        "IPv4 TCP to an address with no VIP: XDP_PASS",
        pkt(C4, UNKNOWN_VIP_V4, 80, TCP, Shape::Plain),
        Path::Pass,
    ),
    exit(
        "pass-v6-no-vip",
        "IPv6 TCP to an address with no VIP: XDP_PASS",
        pkt(C6, UNKNOWN_VIP_V6, 80, TCP, Shape::Plain),
        Path::Pass,
    ),
    exit(
        "pass-v4-icmp",
        "IPv4 ICMP echo to a VIP address: XDP_PASS",
        pkt(C4, VIP_TCP_V4.addr, 0, L4::IcmpEcho, Shape::Plain),
        Path::Pass,
    ),
    exit("pass-non-ip", "ARP request (not IP): XDP_PASS", pkt(C4, VIP_TCP_V4.addr, 0, TCP, Shape::Arp), Path::Pass),
    exit(
        "drop-v4-frag",
        "IPv4 fragment (MF set) to a VIP: XDP_DROP",
        pkt(C4, VIP_TCP_V4.addr, 80, TCP, Shape::V4Fragment),
        Path::Drop,
    ),
    exit(
        "drop-v4-options",
        "IPv4 with IP options to a VIP: XDP_DROP",
        pkt(C4, VIP_TCP_V4.addr, 80, TCP, Shape::V4Options),
        Path::Drop,
    ),
    exit(
        "drop-v6-frag",
        "IPv6 with a Fragment header to a VIP: XDP_DROP",
        pkt(C6, VIP_TCP_V6.addr, 80, TCP, Shape::V6Fragment),
        Path::Drop,
    ),
];

pub fn find(name: &str) -> Option<&'static LbScenario> {
    SCENARIOS.iter().find(|s| s.info.name == name)
}

/// Source address of flow `index` for a packet from `base`: the flow
/// generator XORs the index into the address's last 32-bit word.
pub fn flow_source(base: IpAddr, index: u32) -> IpAddr {
    match base {
        IpAddr::V4(a) => IpAddr::V4((u32::from(a) ^ index).into()),
        IpAddr::V6(a) => IpAddr::V6((u128::from(a) ^ index as u128).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::groups;

    #[test]
    fn matrix_has_the_seed_groups_and_counts() {
        let infos: Vec<ScenarioInfo> = SCENARIOS.iter().map(|s| s.info.clone()).collect();
        let gs = groups(&infos);
        assert_eq!(gs, vec![SINGLE, DIVERSE, FLAGS, STRESS, EXITS]);
        let count = |g: &str| infos.iter().filter(|i| i.group == g).count();
        assert_eq!([count(SINGLE), count(DIVERSE), count(FLAGS), count(STRESS), count(EXITS)], [7, 5, 2, 3, 7]);
        let mut names: Vec<_> = infos.iter().map(|i| i.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 24, "scenario names are unique");
    }

    #[test]
    fn flow_sources_vary_the_low_word() {
        let a: IpAddr = "192.168.10.7".parse().unwrap();
        assert_eq!(flow_source(a, 0), a);
        assert_eq!(flow_source(a, 0x0102), "192.168.11.5".parse::<IpAddr>().unwrap());
        let b: IpAddr = "2001:db8::a:7".parse().unwrap();
        assert_eq!(flow_source(b, 1), "2001:db8::a:6".parse::<IpAddr>().unwrap());
    }
}
