//! Input packets for the scenarios and the packets the balancer must emit,
//! built with etherparse from the header rules alone (never by running the
//! BPF logic on the host): Ethernet to the next hop, an outer IP header with
//! Katran's source-address rules, the client's packet unchanged inside.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use anyhow::{Context, Result, bail};
use etherparse::{
    ArpHardwareId, ArpOperation, ArpPacket, EtherType, Ethernet2Header, IpDscp, IpEcn,
    IpFragOffset, IpHeaders, IpNumber, Ipv4Header, Ipv4Options, Ipv6Extensions,
    Ipv6FlowLabel, Ipv6FragmentHeader, Ipv6Header, PacketBuilder,
};

use super::topology::{LB_MAC, NEXT_HOP_MAC, ROUTER_MAC};

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

fn ip_headers(p: &ClientPacket) -> Result<IpHeaders> {
    let dscp = IpDscp::try_new(p.tos >> 2).context("DSCP")?;
    let ecn = IpEcn::try_new(p.tos & 3).context("ECN")?;
    match (p.src, p.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let mut h = Ipv4Header::new(0, CLIENT_TTL, IpNumber::TCP, s.octets(), d.octets())
                .context("IPv4 header")?;
            h.dscp = dscp;
            h.ecn = ecn;
            match p.shape {
                Shape::V4Fragment => h.more_fragments = true,
                // One option word: End of Option List padded (type 0), valid per RFC 791.
                Shape::V4Options => h.options = Ipv4Options::from([0u8; 4]),
                _ => {}
            }
            Ok(IpHeaders::Ipv4(h, Default::default()))
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let h = Ipv6Header {
                traffic_class: p.tos,
                flow_label: Ipv6FlowLabel::ZERO,
                payload_length: 0,
                next_header: IpNumber::TCP,
                hop_limit: CLIENT_TTL,
                source: s.octets(),
                destination: d.octets(),
            };
            let mut exts = Ipv6Extensions::default();
            if p.shape == Shape::V6Fragment {
                exts.fragment = Some(Ipv6FragmentHeader::new(
                    IpNumber::TCP,
                    IpFragOffset::ZERO,
                    true,
                    0x1234,
                ));
            }
            Ok(IpHeaders::Ipv6(h, exts))
        }
        _ => bail!("client packet mixes IPv4 and IPv6 addresses"),
    }
}

/// Serialises a client packet: Ethernet from the router to the balancer.
pub fn build_client_packet(p: &ClientPacket) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    if p.shape == Shape::Arp {
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
        PacketBuilder::ethernet2(ROUTER_MAC, LB_MAC)
            .arp(arp)
            .write(&mut out)
            .context("writing ARP packet")?;
        // Ethernet pads short frames; pad to the bytes the timing loop saves.
        out.resize(64, 0);
        return Ok(out);
    }
    let eth = PacketBuilder::ethernet2(ROUTER_MAC, LB_MAC).ip(ip_headers(p)?);
    match p.l4 {
        L4::Tcp(f) => {
            let mut b = eth.tcp(p.sport, p.dport, 0x1000_0000, 64240);
            if f.syn {
                b = b.syn();
            }
            if f.ack {
                b = b.ack(0x2000_0000);
            }
            if f.rst {
                b = b.rst();
            }
            b.write(&mut out, &PAYLOAD)
        }
        L4::Udp => eth.udp(p.sport, p.dport).write(&mut out, &PAYLOAD),
        L4::IcmpEcho => match p.src {
            IpAddr::V4(_) => eth.icmpv4_echo_request(7, 1).write(&mut out, &PAYLOAD),
            IpAddr::V6(_) => eth.icmpv6_echo_request(7, 1).write(&mut out, &PAYLOAD),
        },
    }
    .context("writing client packet")?;
    Ok(out)
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
    let inner = build_client_packet(client)?;
    let inner_ip = &inner[Ethernet2Header::LEN..];
    let mut out = Vec::with_capacity(inner.len() + 40);
    match real {
        IpAddr::V4(real4) => {
            let IpAddr::V4(src4) = client.src else {
                bail!("an IPv6 client cannot be sent to an IPv4 real");
            };
            Ethernet2Header {
                source: LB_MAC,
                destination: NEXT_HOP_MAC,
                ether_type: EtherType::IPV4,
            }
            .write(&mut out)?;
            let mut outer = Ipv4Header::new(
                inner_ip.len() as u16,
                ENCAP_TTL,
                IpNumber::IPV4,
                outer_ipv4_source(src4, client.sport).octets(),
                real4.octets(),
            )
            .context("outer IPv4 header")?;
            // Katran leaves DF clear on the outer header: the real may fragment.
            outer.dont_fragment = false;
            outer.dscp = IpDscp::try_new(client.tos >> 2)?;
            outer.ecn = IpEcn::try_new(client.tos & 3)?;
            outer.header_checksum = outer.calc_header_checksum();
            outer.write(&mut out)?;
        }
        IpAddr::V6(real6) => {
            Ethernet2Header {
                source: LB_MAC,
                destination: NEXT_HOP_MAC,
                ether_type: EtherType::IPV6,
            }
            .write(&mut out)?;
            Ipv6Header {
                traffic_class: client.tos,
                flow_label: Ipv6FlowLabel::ZERO,
                payload_length: inner_ip.len() as u16,
                next_header: if client.src.is_ipv6() { IpNumber::IPV6 } else { IpNumber::IPV4 },
                hop_limit: ENCAP_TTL,
                source: outer_ipv6_source(client.src, client.sport).octets(),
                destination: real6.octets(),
            }
            .write(&mut out)?;
        }
    }
    out.extend_from_slice(inner_ip);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workloads::xdp_lb::topology::*;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

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
        let v6 = ClientPacket {
            src: IpAddr::V6(CLIENT_V6),
            dst: VIP_TCP_V6.addr,
            shape: Shape::V6Fragment,
            ..tcp_v4()
        };
        let bytes = build_client_packet(&v6).unwrap();
        assert_eq!(bytes[14 + 6], 44, "next header: Fragment");
        let arp = build_client_packet(&ClientPacket { shape: Shape::Arp, ..tcp_v4() }).unwrap();
        assert_eq!(&arp[12..14], &[0x08, 0x06]);
    }
}
