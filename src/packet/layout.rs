//! A packet's headers as named byte ranges (Ethernet, then IPv4/IPv6
//! headers, nested for tunnels, then TCP with its options, or UDP), read
//! from the bytes: what a comparison names when a field differs
//! (diff.rs) and what `--ignore` leaves out of it (mask.rs).

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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldKind {
    Mac,
    Ipv4,
    Ipv6,
    Number,
    Bytes,
}

const ETH_FIELDS: &[(&str, &str, usize, usize, FieldKind)] = &[
    ("destination MAC", "eth.dst", 0, 6, FieldKind::Mac),
    ("source MAC", "eth.src", 6, 12, FieldKind::Mac),
    ("EtherType", "eth.type", 12, 14, FieldKind::Number),
];
const IPV4_FIELDS: &[(&str, &str, usize, usize, FieldKind)] = &[
    ("version/IHL", "ip.ihl", 0, 1, FieldKind::Number),
    ("ToS", "ip.tos", 1, 2, FieldKind::Number),
    ("total length", "ip.len", 2, 4, FieldKind::Number),
    ("identification", "ip.id", 4, 6, FieldKind::Number),
    ("flags/fragment offset", "ip.frag", 6, 8, FieldKind::Number),
    ("TTL", "ip.ttl", 8, 9, FieldKind::Number),
    ("protocol", "ip.proto", 9, 10, FieldKind::Number),
    ("header checksum", "ip.csum", 10, 12, FieldKind::Number),
    ("source address", "ip.src", 12, 16, FieldKind::Ipv4),
    ("destination address", "ip.dst", 16, 20, FieldKind::Ipv4),
];
const IPV6_FIELDS: &[(&str, &str, usize, usize, FieldKind)] = &[
    ("version/traffic class/flow label", "ip6.flow", 0, 4, FieldKind::Number),
    ("payload length", "ip6.len", 4, 6, FieldKind::Number),
    ("next header", "ip6.nh", 6, 7, FieldKind::Number),
    ("hop limit", "ip6.hlim", 7, 8, FieldKind::Number),
    ("source address", "ip6.src", 8, 24, FieldKind::Ipv6),
    ("destination address", "ip6.dst", 24, 40, FieldKind::Ipv6),
];
const TCP_FIELDS: &[(&str, &str, usize, usize, FieldKind)] = &[
    ("source port", "tcp.sport", 0, 2, FieldKind::Number),
    ("destination port", "tcp.dport", 2, 4, FieldKind::Number),
    ("sequence number", "tcp.seq", 4, 8, FieldKind::Number),
    ("acknowledgment number", "tcp.ack", 8, 12, FieldKind::Number),
    ("data offset/flags", "tcp.flags", 12, 14, FieldKind::Number),
    ("window", "tcp.win", 14, 16, FieldKind::Number),
    ("checksum", "tcp.csum", 16, 18, FieldKind::Number),
    ("urgent pointer", "tcp.urg", 18, 20, FieldKind::Number),
];
const UDP_FIELDS: &[(&str, &str, usize, usize, FieldKind)] = &[
    ("source port", "udp.sport", 0, 2, FieldKind::Number),
    ("destination port", "udp.dport", 2, 4, FieldKind::Number),
    ("length", "udp.len", 4, 6, FieldKind::Number),
    ("checksum", "udp.csum", 6, 8, FieldKind::Number),
];

enum Layer {
    Ip4,
    Ip6,
    Tcp,
    Udp,
}

/// Lays out the packet's headers as named fields.
pub(super) fn layout(pkt: &[u8]) -> Vec<Field> {
    let mut fields = Vec::new();
    let push = |fields: &mut Vec<Field>,
                prefix: &str,
                base: usize,
                table: &[(&str, &'static str, usize, usize, FieldKind)]| {
        for &(name, key, s, e, kind) in table {
            fields.push(Field { name: format!("{prefix}{name}"), key, start: base + s, end: base + e, kind });
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
        let (len, mut proto) = match layer {
            Layer::Ip4 if pkt.len() >= off + 20 => (((pkt[off] & 0x0f) as usize * 4).max(20), pkt[off + 9]),
            Layer::Ip6 if pkt.len() >= off + 40 => (40, pkt[off + 6]),
            Layer::Tcp if pkt.len() >= off + 20 => (((pkt[off + 12] >> 4) as usize * 4).max(20), 0),
            Layer::Udp if pkt.len() >= off + 8 => (8, 0),
            _ => break,
        };
        let (is_ip, is_ip6) = (matches!(layer, Layer::Ip4 | Layer::Ip6), matches!(layer, Layer::Ip6));
        layers.push((layer, off, len));
        off += len;
        if is_ip6 {
            // Extension headers (hop-by-hop 0, routing 43, fragment 44,
            // destination options 60): stepped over, to what they carry.
            while matches!(proto, 0 | 43 | 44 | 60) && pkt.len() >= off + 8 {
                let ext = if proto == 44 { 8 } else { (pkt[off + 1] as usize + 1) * 8 };
                proto = pkt[off];
                off += ext;
            }
        }
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
                        key: "ip.options",
                        start: base + 20,
                        end: base + len,
                        kind: FieldKind::Bytes,
                    });
                }
            }
            Layer::Tcp => {
                push(&mut fields, "TCP ", *base, TCP_FIELDS);
                if *len > 20 {
                    tcp_options(&mut fields, pkt, base + 20, base + len);
                }
            }
            Layer::Udp => push(&mut fields, "UDP ", *base, UDP_FIELDS),
        }
    }
    fields.push(Field { name: "payload".into(), key: "payload", start: off, end: pkt.len(), kind: FieldKind::Bytes });
    fields
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

    #[test]
    fn ipv6_extension_headers_are_stepped_over_to_the_transport_header() {
        for spec in ["eth/ipv6/tcp(seq=7)", "eth/ipv6/ipv6hbh(options=05020000)/ipv6dst/ipv6frag/tcp(seq=7)"] {
            let pkt = PacketSpec::parse(spec).unwrap().packet(0).unwrap();
            let seq = layout(&pkt).into_iter().find(|f| f.key == "tcp.seq").unwrap_or_else(|| panic!("{spec}"));
            assert_eq!(&pkt[seq.start..seq.end], &7u32.to_be_bytes(), "{spec}");
        }
    }
}
