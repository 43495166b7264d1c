//! A frame's flow as a socket sees it: the addresses, ports and transport
//! protocol of an Ethernet/IP/TCP-or-UDP frame (what an sk_lookup program
//! is asked about, `bpfbench run` takes it from a test packet).

use std::net::IpAddr;

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

/// A TCP or UDP flow, from the receiver's side: `remote` sent to `local`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FiveTuple {
    /// IPPROTO_TCP (6) or IPPROTO_UDP (17).
    pub protocol: u8,
    pub remote: IpAddr,
    pub remote_port: u16,
    pub local: IpAddr,
    pub local_port: u16,
}

impl FiveTuple {
    /// The flow of an Ethernet frame carrying IPv4 or IPv6 and TCP or UDP;
    /// `None` for anything else.
    pub fn of_frame(frame: &[u8]) -> Option<FiveTuple> {
        let s = SlicedPacket::from_ethernet(frame).ok()?;
        let (remote, local): (IpAddr, IpAddr) = match s.net? {
            NetSlice::Ipv4(ip) => (ip.header().source_addr().into(), ip.header().destination_addr().into()),
            NetSlice::Ipv6(ip) => (ip.header().source_addr().into(), ip.header().destination_addr().into()),
            _ => return None,
        };
        let (protocol, remote_port, local_port) = match s.transport? {
            TransportSlice::Tcp(t) => (6, t.source_port(), t.destination_port()),
            TransportSlice::Udp(u) => (17, u.source_port(), u.destination_port()),
            _ => return None,
        };
        Some(FiveTuple { protocol, remote, remote_port, local, local_port })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketSpec;

    #[test]
    fn a_frames_flow_is_read_from_the_receivers_side() {
        let frame = PacketSpec::parse("eth/ipv6(src=2001:db8::1,dst=2001:db8::2)/udp(sport=5000,dport=53)/payload(4)")
            .unwrap()
            .packet(0)
            .unwrap();
        let t = FiveTuple::of_frame(&frame).unwrap();
        assert_eq!((t.protocol, t.remote_port, t.local_port), (17, 5000, 53));
        assert_eq!(t.local, "2001:db8::2".parse::<IpAddr>().unwrap());
        let arp = PacketSpec::parse("eth(type=0x0806)/payload(28)").unwrap().packet(0).unwrap();
        assert_eq!(FiveTuple::of_frame(&arp), None);
    }
}
