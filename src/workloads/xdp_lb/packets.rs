//! Input packets for the scenarios and the packets the balancer must emit,
//! written in the packet language from the header rules alone (never by
//! running the BPF logic on the host): Ethernet to the next hop, an outer IP
//! header with Katran's source-address rules, the client's packet unchanged
//! inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use anyhow::{Context, Result, bail};
use etherparse::{ArpHardwareId, ArpOperation, ArpPacket, EtherType, PacketBuilder};

use super::addressing::{LB_MAC, NEXT_HOP_MAC, ROUTER_MAC};
use crate::packet::PacketSpec;

/// Encapsulation TTL / hop limit.
pub const ENCAP_TTL: u8 = 64;
const CLIENT_TTL: u8 = 64;
/// Payload bytes after the L4 header: keeps every packet longer than the
/// 64 header bytes the timing loop saves.
const PAYLOAD: [u8; 32] = *b"bpfbench-xdp-lb-payload-32-bytes";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpFlags {
    pub syn: bool,
    pub ack: bool,
    pub rst: bool,
}

pub const ACK: TcpFlags = TcpFlags { syn: false, ack: true, rst: false };
pub const SYN: TcpFlags = TcpFlags { syn: true, ack: false, rst: false };
pub const RST_ACK: TcpFlags = TcpFlags { syn: false, ack: true, rst: true };

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    Tcp(TcpFlags),
    Udp,
    IcmpEcho,
}

/// Irregular shapes the balancer must refuse or pass on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Plain,
    /// IPv4 with More Fragments set.
    V4Fragment,
    /// IPv4 with one 4-byte option (ihl 6).
    V4Options,
    /// IPv6 with a Fragment extension header.
    V6Fragment,
    /// An ARP request: not IP at all.
    Arp,
}

/// A client packet towards the balancer.
#[derive(Debug, Clone, Copy)]
pub struct ClientPacket {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub l4: L4,
    pub tos: u8,
    pub shape: Shape,
}

impl ClientPacket {
    pub fn with_src(mut self, src: IpAddr) -> Self {
        self.src = src;
        self
    }
}

/// Serialises a client packet: Ethernet from the router to the balancer.
pub fn build_client_packet(p: &ClientPacket) -> Result<Vec<u8>> {
    if p.shape == Shape::Arp {
        return build_arp(p);
    }
    PacketSpec::parse(&client_spec(p)?)?.packet(0)
}

/// An ARP request (the packet language has no ARP layer), padded to the
/// bytes the timing loop saves, as Ethernet pads short frames.
fn build_arp(p: &ClientPacket) -> Result<Vec<u8>> {
    let (IpAddr::V4(s), IpAddr::V4(d)) = (p.src, p.dst) else {
        bail!("an ARP request needs IPv4 addresses");
    };
    let arp = ArpPacket::new(
        ArpHardwareId::ETHERNET,
        EtherType::IPV4,
        ArpOperation::REQUEST,
        &ROUTER_MAC,
        &s.octets(),
        &[0; 6],
        &d.octets(),
    )
    .map_err(|e| anyhow::anyhow!("ARP packet: {e:?}"))?;
    let mut out = Vec::new();
    PacketBuilder::ethernet2(ROUTER_MAC, LB_MAC).arp(arp).write(&mut out).context("writing ARP packet")?;
    out.resize(64, 0);
    Ok(out)
}

fn mac(m: [u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// The client packet from its IP header on, in the packet language.
fn client_layers(p: &ClientPacket) -> Result<String> {
    let ip = match (p.src, p.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let shape = match p.shape {
                Shape::V4Fragment => ",mf=1",
                Shape::V4Options => ",options=00000000",
                _ => "",
            };
            format!("ipv4(src={s},dst={d},tos={},ttl={CLIENT_TTL},df=1{shape})", p.tos)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let frag = if p.shape == Shape::V6Fragment { "/ipv6frag(m=1,id=0x1234)" } else { "" };
            format!("ipv6(src={s},dst={d},tc={},hlim={CLIENT_TTL}){frag}", p.tos)
        }
        _ => bail!("client packet mixes IPv4 and IPv6 addresses"),
    };
    let l4 = match p.l4 {
        L4::Tcp(f) => {
            let flags: String =
                [(f.syn, 'S'), (f.rst, 'R'), (f.ack, 'A')].iter().filter(|(on, _)| *on).map(|(_, c)| *c).collect();
            let ack = if f.ack { 0x2000_0000 } else { 0 };
            format!("tcp(sport={},dport={},seq=0x10000000,ack={ack:#x},flags={flags},win=64240)", p.sport, p.dport)
        }
        L4::Udp => format!("udp(sport={},dport={})", p.sport, p.dport),
        L4::IcmpEcho if p.src.is_ipv4() => "icmp(type=8,id=7,seq=1)".into(),
        L4::IcmpEcho => "icmpv6(type=128,id=7,seq=1)".into(),
    };
    Ok(format!("{ip}/{l4}/payload(text={})", std::str::from_utf8(&PAYLOAD).expect("ASCII payload")))
}

/// A client packet in the packet language (ARP, which it has no layer for, aside).
pub fn client_spec(p: &ClientPacket) -> Result<String> {
    Ok(format!("eth(src={},dst={})/{}", mac(ROUTER_MAC), mac(LB_MAC), client_layers(p)?))
}

/// The packet the balancer must transmit for `client` sent to `real`, in the packet language.
pub fn encapsulated_spec(client: &ClientPacket, real: IpAddr) -> Result<String> {
    let eth = format!("eth(src={},dst={})", mac(LB_MAC), mac(NEXT_HOP_MAC));
    let outer = match (real, client.src) {
        (IpAddr::V4(r), IpAddr::V4(c)) => {
            format!("ipv4(src={},dst={r},tos={},ttl={ENCAP_TTL})", outer_ipv4_source(c, client.sport), client.tos)
        }
        (IpAddr::V4(_), IpAddr::V6(_)) => bail!("an IPv6 client cannot be sent to an IPv4 real"),
        (IpAddr::V6(r), c) => {
            format!("ipv6(src={},dst={r},tc={},hlim={ENCAP_TTL})", outer_ipv6_source(c, client.sport), client.tos)
        }
    };
    Ok(format!("{eth}/{outer}/{}", client_layers(client)?))
}

/// Katran's outer IPv4 source: 172.16.X.Y, where X.Y are the client
/// address's last two bytes XORed with the source port (network order).
pub fn outer_ipv4_source(client: Ipv4Addr, sport: u16) -> Ipv4Addr {
    let c = client.octets();
    let p = sport.to_be_bytes();
    Ipv4Addr::new(172, 16, c[2] ^ p[0], c[3] ^ p[1])
}

/// Katran's outer IPv6 source: in 0100::/64; the last four bytes are the
/// client address's last four, the first two of them XORed with the source
/// port (network order).
pub fn outer_ipv6_source(client: IpAddr, sport: u16) -> Ipv6Addr {
    let last4 = match client {
        IpAddr::V4(a) => a.octets(),
        IpAddr::V6(a) => {
            let o = a.octets();
            [o[12], o[13], o[14], o[15]]
        }
    };
    let p = sport.to_be_bytes();
    let mut o = [0u8; 16];
    o[0] = 0x01;
    o[12] = last4[0] ^ p[0];
    o[13] = last4[1] ^ p[1];
    o[14] = last4[2];
    o[15] = last4[3];
    Ipv6Addr::from(o)
}

/// The packet the balancer must transmit for `client` sent to `real`.
pub fn build_encapsulated(client: &ClientPacket, real: IpAddr) -> Result<Vec<u8>> {
    PacketSpec::parse(&encapsulated_spec(client, real)?)?.packet(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::xdp_lb::addressing::*;
    use etherparse::{Ethernet2Header, IpNumber, Ipv4Header, Ipv6Header, NetSlice, SlicedPacket, TransportSlice};

    fn tcp_v4() -> ClientPacket {
        ClientPacket {
            src: IpAddr::V4(CLIENT_V4),
            dst: VIP_TCP_V4.addr,
            sport: CLIENT_PORT,
            dport: 80,
            l4: L4::Tcp(ACK),
            tos: CLIENT_TOS,
            shape: Shape::Plain,
        }
    }

    #[test]
    fn client_packet_parses_back() {
        let bytes = build_client_packet(&tcp_v4()).unwrap();
        let p = SlicedPacket::from_ethernet(&bytes).unwrap();
        let Some(NetSlice::Ipv4(ip)) = p.net else { panic!("no IPv4") };
        assert_eq!(ip.header().source_addr(), CLIENT_V4);
        assert_eq!(ip.header().dcp().value(), CLIENT_TOS >> 2);
        let Some(TransportSlice::Tcp(tcp)) = p.transport else { panic!("no TCP") };
        assert!(tcp.ack() && !tcp.syn());
        assert_eq!(tcp.source_port(), CLIENT_PORT);
        assert!(bytes.len() >= 64);
    }

    #[test]
    fn ipip_packet_parses_back_with_valid_checksums() {
        let real = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9));
        let bytes = build_encapsulated(&tcp_v4(), real).unwrap();
        let eth = Ethernet2Header::from_slice(&bytes).unwrap().0;
        assert_eq!(eth.destination, NEXT_HOP_MAC);
        assert_eq!(eth.source, LB_MAC);
        let (outer, rest) = Ipv4Header::from_slice(&bytes[14..]).unwrap();
        assert_eq!(outer.protocol, IpNumber::IPV4);
        assert_eq!(outer.time_to_live, ENCAP_TTL);
        assert_eq!(outer.header_checksum, outer.calc_header_checksum());
        assert_eq!(outer.destination, [10, 0, 0, 9]);
        // 192.168.10.7, port 31337 = 0x7a69: 172.16.(10^0x7a).(7^0x69)
        assert_eq!(outer.source, [172, 16, 10 ^ 0x7a, 7 ^ 0x69]);
        assert_eq!(outer.total_len as usize, bytes.len() - 14);
        // The inner packet is the client's, byte for byte.
        let client = build_client_packet(&tcp_v4()).unwrap();
        assert_eq!(rest, &client[14..]);
    }

    #[test]
    fn ipv4_in_ipv6_packet_parses_back() {
        let real: IpAddr = "fc00:2::5".parse().unwrap();
        let bytes = build_encapsulated(&tcp_v4(), real).unwrap();
        let (outer, rest) = Ipv6Header::from_slice(&bytes[14..]).unwrap();
        assert_eq!(outer.next_header, IpNumber::IPV4);
        assert_eq!(outer.traffic_class, CLIENT_TOS);
        assert_eq!(outer.hop_limit, ENCAP_TTL);
        assert_eq!(outer.payload_length as usize, rest.len());
        let src = Ipv6Addr::from(outer.source);
        assert_eq!(src.segments()[0], 0x0100);
        assert_eq!(&outer.source[12..], &[192 ^ 0x7a, 168 ^ 0x69, 10, 7]);
    }

    #[test]
    fn irregular_shapes_parse_as_intended() {
        let frag = build_client_packet(&ClientPacket { shape: Shape::V4Fragment, ..tcp_v4() }).unwrap();
        let (h, _) = Ipv4Header::from_slice(&frag[14..]).unwrap();
        assert!(h.more_fragments);
        let opts = build_client_packet(&ClientPacket { shape: Shape::V4Options, ..tcp_v4() }).unwrap();
        assert_eq!(opts[14] & 0x0f, 6, "ihl");
        let v6 =
            ClientPacket { src: IpAddr::V6(CLIENT_V6), dst: VIP_TCP_V6.addr, shape: Shape::V6Fragment, ..tcp_v4() };
        let bytes = build_client_packet(&v6).unwrap();
        assert_eq!(bytes[14 + 6], 44, "next header: Fragment");
        let arp = build_client_packet(&ClientPacket { shape: Shape::Arp, ..tcp_v4() }).unwrap();
        assert_eq!(&arp[12..14], &[0x08, 0x06]);
    }
}
