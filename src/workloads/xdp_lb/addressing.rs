//! The load balancer's configuration for every scenario: addresses, VIPs,
//! reals and the next-hop MAC. One fixed addressing keeps results comparable
//! between runs and machines.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;

/// MAC of the client-side router that sent the packet to the balancer.
pub const ROUTER_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
/// MAC of the balancer's interface: the input packets' destination.
pub const LB_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
/// Next hop towards the reals: every encapsulated packet's destination.
pub const NEXT_HOP_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x03];

pub const CLIENT_V4: Ipv4Addr = Ipv4Addr::new(192, 168, 10, 7);
pub const CLIENT_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0xa, 0x7);
pub const CLIENT_PORT: u16 = 31337;
/// DSCP 10 (AF11): a non-zero ToS, so copying it to the outer header shows.
pub const CLIENT_TOS: u8 = 0x28;

/// UDP connection-table entries older than this are treated as misses (Katran's 30 s).
pub const UDP_LRU_TIMEOUT_NS: u64 = 30_000_000_000;

/// Which reals a VIP's ring is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    V4,
    V6,
}

#[derive(Debug, Clone, Copy)]
pub struct Vip {
    pub num: u32,
    pub addr: IpAddr,
    pub port: u16,
    pub proto: u8,
    pub lru_bypass: bool,
    pub pool: Pool,
}

const fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}
const fn v6(last: u16, prefix: u16) -> IpAddr {
    IpAddr::V6(Ipv6Addr::new(0xfc00, prefix, 0, 0, 0, 0, 0, last))
}

pub const VIP_TCP_V4: Vip =
    Vip { num: 0, addr: v4(10, 100, 0, 1), port: 80, proto: IPPROTO_TCP, lru_bypass: false, pool: Pool::V4 };
pub const VIP_TCP_V4_CH: Vip =
    Vip { num: 1, addr: v4(10, 100, 0, 2), port: 80, proto: IPPROTO_TCP, lru_bypass: true, pool: Pool::V4 };
pub const VIP_TCP_V6: Vip =
    Vip { num: 2, addr: v6(1, 0x100), port: 80, proto: IPPROTO_TCP, lru_bypass: false, pool: Pool::V6 };
pub const VIP_TCP_V6_CH: Vip =
    Vip { num: 3, addr: v6(2, 0x100), port: 80, proto: IPPROTO_TCP, lru_bypass: true, pool: Pool::V6 };
pub const VIP_UDP_V4: Vip =
    Vip { num: 4, addr: v4(10, 100, 0, 1), port: 53, proto: IPPROTO_UDP, lru_bypass: false, pool: Pool::V4 };
pub const VIP_UDP_V6: Vip =
    Vip { num: 5, addr: v6(1, 0x100), port: 53, proto: IPPROTO_UDP, lru_bypass: false, pool: Pool::V6 };
/// An IPv4 VIP served by IPv6 reals: IPv4-in-IPv6 encapsulation.
pub const VIP_TCP_V4_TO_V6: Vip =
    Vip { num: 6, addr: v4(10, 100, 0, 3), port: 80, proto: IPPROTO_TCP, lru_bypass: false, pool: Pool::V6 };

pub const VIPS: [Vip; 7] =
    [VIP_TCP_V4, VIP_TCP_V4_CH, VIP_TCP_V6, VIP_TCP_V6_CH, VIP_UDP_V4, VIP_UDP_V6, VIP_TCP_V4_TO_V6];

/// Addresses no VIP is configured on.
pub const UNKNOWN_VIP_V4: IpAddr = v4(10, 200, 0, 1);
pub const UNKNOWN_VIP_V6: IpAddr = v6(1, 0x200);

/// Reals per pool; Katran deployments run tens to hundreds.
pub const REALS_PER_POOL: u32 = 32;

/// A real server: its position in the `reals` map and address.
#[derive(Debug, Clone, Copy)]
pub struct Real {
    pub pos: u32,
    pub addr: IpAddr,
}

/// Positions 1..=32 are IPv4 reals 10.0.0.N, 33..=64 IPv6 reals fc00:2::N.
/// Position 0 stays empty, as in Katran, so a zero slot never means a real.
pub fn reals(pool: Pool) -> Vec<Real> {
    (1..=REALS_PER_POOL)
        .map(|i| match pool {
            Pool::V4 => Real { pos: i, addr: v4(10, 0, 0, i as u8) },
            Pool::V6 => {
                Real { pos: REALS_PER_POOL + i, addr: IpAddr::V6(Ipv6Addr::new(0xfc00, 2, 0, 0, 0, 0, 0, i as u16)) }
            }
        })
        .collect()
}

pub fn real_at(pos: u32) -> Option<Real> {
    reals(Pool::V4).into_iter().chain(reals(Pool::V6)).find(|r| r.pos == pos)
}
