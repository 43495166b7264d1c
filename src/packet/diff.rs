//! Byte-exact packet comparison that names the header field that differs.
//!
//! The layout is read from the expected packet (Ethernet, then IPv4/IPv6
//! headers, nested for tunnels, then TCP/UDP), so a mismatch reads like
//! "outer IPv4 source address (bytes 26..30): expected 172.16.112.110, got 172.16.112.111".

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

/// One named byte range of a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Field {
    name: String,
    start: usize,
    end: usize,
    kind: FieldKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldKind {
    Mac,
    Ipv4,
    Ipv6,
    Number,
    Bytes,
}

const ETH_FIELDS: &[(&str, usize, usize, FieldKind)] = &[
    ("destination MAC", 0, 6, FieldKind::Mac),
    ("source MAC", 6, 12, FieldKind::Mac),
    ("EtherType", 12, 14, FieldKind::Number),
];
const IPV4_FIELDS: &[(&str, usize, usize, FieldKind)] = &[
    ("version/IHL", 0, 1, FieldKind::Number),
    ("ToS", 1, 2, FieldKind::Number),
    ("total length", 2, 4, FieldKind::Number),
    ("identification", 4, 6, FieldKind::Number),
    ("flags/fragment offset", 6, 8, FieldKind::Number),
    ("TTL", 8, 9, FieldKind::Number),
    ("protocol", 9, 10, FieldKind::Number),
    ("header checksum", 10, 12, FieldKind::Number),
    ("source address", 12, 16, FieldKind::Ipv4),
    ("destination address", 16, 20, FieldKind::Ipv4),
];
const IPV6_FIELDS: &[(&str, usize, usize, FieldKind)] = &[
    ("version/traffic class/flow label", 0, 4, FieldKind::Number),
    ("payload length", 4, 6, FieldKind::Number),
    ("next header", 6, 7, FieldKind::Number),
    ("hop limit", 7, 8, FieldKind::Number),
    ("source address", 8, 24, FieldKind::Ipv6),
    ("destination address", 24, 40, FieldKind::Ipv6),
];
const TCP_FIELDS: &[(&str, usize, usize, FieldKind)] = &[
    ("source port", 0, 2, FieldKind::Number),
    ("destination port", 2, 4, FieldKind::Number),
    ("sequence number", 4, 8, FieldKind::Number),
    ("acknowledgment number", 8, 12, FieldKind::Number),
    ("data offset/flags", 12, 14, FieldKind::Number),
    ("window", 14, 16, FieldKind::Number),
    ("checksum", 16, 18, FieldKind::Number),
    ("urgent pointer", 18, 20, FieldKind::Number),
];
const UDP_FIELDS: &[(&str, usize, usize, FieldKind)] = &[
    ("source port", 0, 2, FieldKind::Number),
    ("destination port", 2, 4, FieldKind::Number),
    ("length", 4, 6, FieldKind::Number),
    ("checksum", 6, 8, FieldKind::Number),
];

enum Layer {
    Ip4,
    Ip6,
    Tcp,
    Udp,
}

/// Lays out the packet's headers as named fields.
fn layout(pkt: &[u8]) -> Vec<Field> {
    let mut fields = Vec::new();
    let push = |fields: &mut Vec<Field>, prefix: &str, base: usize, table: &[(&str, usize, usize, FieldKind)]| {
        for &(name, s, e, kind) in table {
            fields.push(Field { name: format!("{prefix}{name}"), start: base + s, end: base + e, kind });
        }
    };
    if pkt.len() < 14 {
        return fields;
    }
    push(&mut fields, "Ethernet ", 0, ETH_FIELDS);
    let mut layers = Vec::new();
    let mut off = 14;
    let mut next = match u16::from_be_bytes([pkt[12], pkt[13]]) {
        0x0800 => Some(Layer::Ip4),
        0x86dd => Some(Layer::Ip6),
        _ => None,
    };
    while let Some(layer) = next.take() {
        let (len, proto) = match layer {
            Layer::Ip4 if pkt.len() >= off + 20 => (((pkt[off] & 0x0f) as usize * 4).max(20), pkt[off + 9]),
            Layer::Ip6 if pkt.len() >= off + 40 => (40, pkt[off + 6]),
            Layer::Tcp if pkt.len() >= off + 20 => (((pkt[off + 12] >> 4) as usize * 4).max(20), 0),
            Layer::Udp if pkt.len() >= off + 8 => (8, 0),
            _ => break,
        };
        let is_ip = matches!(layer, Layer::Ip4 | Layer::Ip6);
        layers.push((layer, off, len));
        off += len;
        if is_ip {
            next = match proto {
                4 => Some(Layer::Ip4),
                41 => Some(Layer::Ip6),
                6 => Some(Layer::Tcp),
                17 => Some(Layer::Udp),
                _ => None,
            };
        }
    }
    let ip_count = layers.iter().filter(|(l, _, _)| matches!(l, Layer::Ip4 | Layer::Ip6)).count();
    let mut ip_seen = 0;
    for (layer, base, len) in &layers {
        match layer {
            Layer::Ip4 | Layer::Ip6 => {
                let depth = match (ip_count, ip_seen) {
                    (1, _) => "",
                    (_, 0) => "outer ",
                    _ => "inner ",
                };
                ip_seen += 1;
                let (family, table) =
                    if matches!(layer, Layer::Ip4) { ("IPv4", IPV4_FIELDS) } else { ("IPv6", IPV6_FIELDS) };
                push(&mut fields, &format!("{depth}{family} "), *base, table);
                if *len > 20 && matches!(layer, Layer::Ip4) {
                    fields.push(Field {
                        name: format!("{depth}IPv4 options"),
                        start: base + 20,
                        end: base + len,
                        kind: FieldKind::Bytes,
                    });
                }
            }
            Layer::Tcp => push(&mut fields, "TCP ", *base, TCP_FIELDS),
            Layer::Udp => push(&mut fields, "UDP ", *base, UDP_FIELDS),
        }
    }
    fields.push(Field { name: "payload".into(), start: off, end: pkt.len(), kind: FieldKind::Bytes });
    fields
}

fn render(kind: FieldKind, bytes: &[u8]) -> String {
    match kind {
        FieldKind::Mac if bytes.len() == 6 => bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":"),
        FieldKind::Ipv4 if bytes.len() == 4 => Ipv4Addr::new(bytes[0], bytes[1], bytes[2], bytes[3]).to_string(),
        FieldKind::Ipv6 if bytes.len() == 16 => {
            Ipv6Addr::from(<[u8; 16]>::try_from(bytes).expect("16 bytes")).to_string()
        }
        FieldKind::Number if bytes.len() <= 4 => {
            let v = bytes.iter().fold(0u32, |acc, b| (acc << 8) | *b as u32);
            format!("{v:#0w$x}", w = 2 + 2 * bytes.len())
        }
        _ => bytes.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" "),
    }
}

/// `None` when the packets are identical; otherwise a readable report, one
/// line per differing field (at most eight), expected vs actual.
pub fn diff_packets(expected: &[u8], actual: &[u8]) -> Option<String> {
    if expected == actual {
        return None;
    }
    let mut out = String::new();
    if expected.len() != actual.len() {
        let _ = writeln!(out, "length: expected {} bytes, got {}", expected.len(), actual.len());
    }
    let mut shown = 0;
    for f in layout(expected) {
        let e = &expected[f.start.min(expected.len())..f.end.min(expected.len())];
        let a = &actual[f.start.min(actual.len())..f.end.min(actual.len())];
        if e != a {
            shown += 1;
            if shown > 8 {
                let _ = writeln!(out, "(more fields differ)");
                break;
            }
            let _ = writeln!(
                out,
                "{} (bytes {}..{}): expected {}, got {}",
                f.name,
                f.start,
                f.end,
                render(f.kind, e),
                if a.is_empty() { "nothing".into() } else { render(f.kind, a) }
            );
        }
    }
    if shown == 0 && expected.len() == actual.len() {
        // Unreachable with a full layout, kept so a diff never comes back empty.
        let first = expected.iter().zip(actual).position(|(e, a)| e != a).unwrap_or(0);
        let _ = writeln!(out, "byte {first} differs");
    }
    Some(out.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPIP packet: Ethernet, outer IPv4 (proto 4), inner IPv4 (proto 6), TCP, payload.
    fn ipip() -> Vec<u8> {
        let mut p = vec![0u8; 14 + 20 + 20 + 20 + 4];
        p[12] = 0x08;
        p[14] = 0x45;
        p[14 + 9] = 4;
        p[14 + 12..14 + 16].copy_from_slice(&[172, 16, 1, 2]);
        p[34] = 0x45;
        p[34 + 9] = 6;
        p[54 + 12] = 0x50;
        p
    }

    #[test]
    fn identical_packets_have_no_diff() {
        assert_eq!(diff_packets(&ipip(), &ipip()), None);
    }

    #[test]
    fn names_the_outer_source_address() {
        let mut actual = ipip();
        actual[14 + 15] = 3;
        let d = diff_packets(&ipip(), &actual).unwrap();
        assert_eq!(d, "outer IPv4 source address (bytes 26..30): expected 172.16.1.2, got 172.16.1.3");
    }

    #[test]
    fn names_inner_and_transport_fields() {
        let mut actual = ipip();
        actual[34 + 8] = 63; // inner TTL
        actual[54 + 1] = 81; // TCP source port
        let d = diff_packets(&ipip(), &actual).unwrap();
        assert!(d.contains("inner IPv4 TTL"), "{d}");
        assert!(d.contains("TCP source port"), "{d}");
    }

    #[test]
    fn reports_length_and_missing_bytes() {
        let expected = ipip();
        let d = diff_packets(&expected, &expected[..60]).unwrap();
        assert!(d.starts_with("length: expected 78 bytes, got 60"), "{d}");
        assert!(d.contains("payload"), "{d}");
    }
}
