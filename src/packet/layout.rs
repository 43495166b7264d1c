//! A packet's headers as named byte ranges (Ethernet, VLAN tags, IPv4/IPv6
//! headers nested for tunnels, GRE, then TCP with its options, UDP or
//! ICMP), read from the bytes by each layer's reader (layers.rs): what a
//! comparison names when a field differs (diff.rs) and what `--ignore`
//! leaves out of it (mask.rs).

use super::layers::{Kind, LAYERS};
use super::readers::{FieldKind, Next, Reader, Rest};

/// One named byte range of a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Field {
    /// As a report names it: "outer IPv4 source address".
    pub name: String,
    /// As a user names it (`--ignore`): "ip.src", the same for every IPv4 header.
    pub key: &'static str,
    pub start: usize,
    pub end: usize,
    pub kind: FieldKind,
}

/// Lays out the packet's headers as named fields, each read as its layer's
/// reader in [`LAYERS`] says, from Ethernet to the first header that names
/// nothing the reader knows; the rest is the payload.
pub(super) fn layout(pkt: &[u8]) -> Vec<Field> {
    // The headers in order: (kind, reader, first byte, length).
    let mut headers: Vec<(Kind, &Reader, usize, usize)> = Vec::new();
    let mut off = 0;
    let mut next = Some(Kind::Eth.def());
    while let Some(def) = next.take() {
        let (Some(reader), Some(at)) = (def.read, pkt.get(off..)) else { break };
        let Some(len) = (reader.len)(at) else { break };
        headers.push((def.kind, reader, off, len));
        off += len;
        next = match (reader.next)(at) {
            Next::EtherType(t) => LAYERS.iter().find(|d| d.ids.0 == Some(t) && d.read.is_some()),
            Next::Protocol(p) => LAYERS.iter().find(|d| d.ids.1 == Some(p) && d.read.is_some()),
            Next::End => None,
        };
    }
    let is_ip = |kind: Kind| matches!(kind, Kind::Ipv4 | Kind::Ipv6);
    let ip_count = headers.iter().filter(|h| is_ip(h.0)).count();
    let mut ip_seen = 0;
    let mut fields = Vec::new();
    for (kind, reader, base, len) in headers {
        // IP headers of a tunnel are told apart by depth: "outer IPv4 TTL".
        let depth = match (is_ip(kind), ip_count, ip_seen) {
            (false, _, _) | (true, 1, _) => "",
            (true, _, 0) => "outer ",
            (true, _, _) => "inner ",
        };
        ip_seen += is_ip(kind) as usize;
        let title = format!("{depth}{}", reader.title);
        for &(name, key, s, e, kind) in reader.fixed {
            fields.push(Field { name: format!("{title} {name}"), key, start: base + s, end: base + e, kind });
        }
        let rest = base + reader.fixed.last().map_or(0, |f| f.3);
        match reader.rest {
            Rest::None => {}
            Rest::Bytes(name, key) if base + len > rest => fields.push(Field {
                name: format!("{title} {name}"),
                key,
                start: rest,
                end: base + len,
                kind: FieldKind::Bytes,
            }),
            Rest::Bytes(..) => {}
            Rest::TcpOptions => tcp_options(&mut fields, pkt, rest, (base + len).min(pkt.len())),
        }
    }
    fields.push(Field {
        name: "payload".into(),
        key: "payload",
        start: off.min(pkt.len()),
        end: pkt.len(),
        kind: FieldKind::Bytes,
    });
    fields
}

/// Every key a field of [`layout`] can have, in [`LAYERS`]' order: what
/// `--ignore` takes.
pub(super) fn keys() -> Vec<&'static str> {
    let mut keys = Vec::new();
    for reader in LAYERS.iter().filter_map(|d| d.read) {
        keys.extend(reader.fixed.iter().map(|f| f.1));
        match reader.rest {
            Rest::None => {}
            Rest::Bytes(_, key) => keys.push(key),
            Rest::TcpOptions => keys.extend(["tcp.options", "ts.val", "ts.ecr"]),
        }
    }
    keys.push("payload");
    let mut seen = std::collections::HashSet::new();
    keys.retain(|k| seen.insert(*k));
    keys
}

/// The TCP options in `pkt[start..end]`: the timestamp option's two values
/// as fields of their own (`ts.val`, `ts.ecr`: what a SYN cookie or a
/// proxy fills from the clock), the other options' bytes around them.
fn tcp_options(fields: &mut Vec<Field>, pkt: &[u8], start: usize, end: usize) {
    let bytes = |fields: &mut Vec<Field>, s: usize, e: usize| {
        if s < e {
            fields.push(Field {
                name: "TCP options".into(),
                key: "tcp.options",
                start: s,
                end: e,
                kind: FieldKind::Bytes,
            });
        }
    };
    let mut at = start;
    let mut plain = start;
    while at < end {
        match pkt[at] {
            0 => break,
            1 => at += 1,
            kind => {
                let Some(&len) = pkt.get(at + 1) else { break };
                let len = len as usize;
                if len < 2 || at + len > end {
                    break;
                }
                if kind == 8 && len == 10 {
                    bytes(fields, plain, at + 2);
                    for (name, key, s) in
                        [("TCP timestamp value", "ts.val", at + 2), ("TCP timestamp echo reply", "ts.ecr", at + 6)]
                    {
                        fields.push(Field { name: name.into(), key, start: s, end: s + 4, kind: FieldKind::Number });
                    }
                    plain = at + 10;
                }
                at += len;
            }
        }
    }
    bytes(fields, plain, end);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketSpec;

    /// The packets the language writes are read back whole: every byte in
    /// exactly one field, and the values given at the places their fields'
    /// readers name.
    #[test]
    fn written_packets_are_read_back_field_for_field() {
        // A spec, and bytes its packet holds in fields of these keys.
        type Expected = &'static [(&'static str, &'static [u8])];
        let cases: &[(&str, Expected)] = &[
            (
                "eth/vlan(id=5)/ipv4(ttl=9,options=01010101)/gre/eth/ipv6(hlim=3)/ipv6hbh/ipv6frag/tcp(seq=7,mss=1460,ts=1,tsecr=2)/payload(len=3)",
                &[
                    ("vlan.tci", &[0, 5]),
                    ("ip.ttl", &[9]),
                    ("ip.options", &[1, 1, 1, 1]),
                    ("gre.proto", &[0x65, 0x58]),
                    ("ip6.hlim", &[3]),
                    ("ip6.nh", &[0]),
                    ("tcp.seq", &[0, 0, 0, 7]),
                    ("ts.val", &[0, 0, 0, 1]),
                    ("ts.ecr", &[0, 0, 0, 2]),
                    ("payload", &[0, 0, 0]),
                ],
            ),
            ("eth/ipv4/icmp(id=7,seq=9)", &[("icmp.type", &[8]), ("icmp.rest", &[0, 7, 0, 9])]),
            ("eth/ipv6/icmpv6", &[("icmp6.type", &[128])]),
            ("eth/ipv4/udp(dport=53)/payload(text=x)", &[("udp.dport", &[0, 53]), ("payload", b"x")]),
            ("eth/ipv4/ipv4(src=10.1.1.1)/tcp", &[("ip.src", &[10, 1, 1, 1])]),
        ];
        for (spec, values) in cases {
            let pkt = PacketSpec::parse(spec).unwrap().packet(0).unwrap();
            let mut fields = layout(&pkt);
            for (key, bytes) in *values {
                // The last field of a key: an inner header's.
                let f = fields.iter().rfind(|f| f.key == *key).unwrap_or_else(|| panic!("{spec}: no {key}"));
                assert_eq!(&pkt[f.start..f.end], *bytes, "{spec}: {key}");
            }
            fields.sort_by_key(|f| f.start);
            let mut at = 0;
            for f in &fields {
                assert_eq!(f.start, at, "{spec}: {} starts at {} after byte {at}", f.name, f.start);
                at = f.end;
            }
            assert_eq!(at, pkt.len(), "{spec}");
            assert!(fields.iter().all(|f| keys().contains(&f.key)), "{spec}");
        }
    }

    #[test]
    fn tunnels_name_their_headers_by_depth() {
        let pkt = PacketSpec::parse("eth/ipv4/ipv6/udp").unwrap().packet(0).unwrap();
        let names: Vec<String> = layout(&pkt).into_iter().map(|f| f.name).collect();
        assert!(names.contains(&"outer IPv4 TTL".to_string()) && names.contains(&"inner IPv6 hop limit".to_string()));
        assert!(names.contains(&"Ethernet source MAC".to_string()) && names.contains(&"UDP checksum".to_string()));
    }

    #[test]
    fn short_and_truncated_packets_are_laid_out_without_a_panic() {
        let pkt = PacketSpec::parse("eth/ipv4/tcp(mss=1460)").unwrap().packet(0).unwrap();
        for n in 0..pkt.len() {
            let fields = layout(&pkt[..n]);
            assert!(fields.iter().all(|f| f.start <= f.end || f.start >= n), "{n}");
            assert_eq!(fields.last().map(|f| f.key), Some("payload"), "{n}");
        }
        // A data offset past the end: the options stop where the bytes do.
        let mut long = pkt.clone();
        long[14 + 20 + 12] = 0xf0;
        assert!(layout(&long).iter().all(|f| f.end <= long.len() || f.key != "tcp.options"));
    }

    #[test]
    fn ipv6_extension_headers_are_stepped_over_to_the_transport_header() {
        for spec in ["eth/ipv6/tcp(seq=7)", "eth/ipv6/ipv6hbh(options=05020000)/ipv6dst/ipv6frag/tcp(seq=7)"] {
            let pkt = PacketSpec::parse(spec).unwrap().packet(0).unwrap();
            let seq = layout(&pkt).into_iter().find(|f| f.key == "tcp.seq").unwrap_or_else(|| panic!("{spec}"));
            assert_eq!(&pkt[seq.start..seq.end], &7u32.to_be_bytes(), "{spec}");
        }
    }
}
