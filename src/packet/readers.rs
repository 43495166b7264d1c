//! How a received header of each layer is read back: its bytes as named
//! ranges with the keys `--ignore` takes, its length and the number in it
//! that names the next header. Each layer's entry in `LAYERS` (layers.rs)
//! names its reader here; the packet reader (layout.rs) follows them.

/// How a value of a received header is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FieldKind {
    Mac,
    Ipv4,
    Ipv6,
    Number,
    Bytes,
}

/// How a received header is read back: its bytes as named ranges, its
/// length and what follows it.
pub(super) struct Reader {
    /// As a report names the header: "IPv4" ("outer IPv4 TTL").
    pub title: &'static str,
    /// Its ranges at fixed places: what a report calls them, the key
    /// `--ignore` takes (the same for every header of the layer), start
    /// and end from the header's first byte, and how a value is shown.
    pub fixed: &'static [(&'static str, &'static str, usize, usize, FieldKind)],
    /// Its length, read from `at` (the packet from its first byte on):
    /// None when the bytes are too few for it.
    pub len: fn(at: &[u8]) -> Option<usize>,
    /// What the bytes after `fixed`, up to its length, are.
    pub rest: Rest,
    /// The number in it that names the next header.
    pub next: fn(at: &[u8]) -> Next,
}

/// A header's bytes past its fixed ranges.
pub(super) enum Rest {
    None,
    /// One range: (name, key).
    Bytes(&'static str, &'static str),
    /// TCP's options: the timestamp option's two values as fields of their
    /// own (`ts.val`, `ts.ecr`), the other options' bytes around them.
    TcpOptions,
}

/// What follows a header, as it names it.
pub(super) enum Next {
    EtherType(u16),
    Protocol(u8),
    /// Nothing it names: the payload.
    End,
}

fn be16(at: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([at[i], at[i + 1]])
}

/// `n` when `at` holds that many bytes.
fn fits(at: &[u8], n: usize) -> Option<usize> {
    (at.len() >= n).then_some(n)
}

pub(super) static READ_ETH: Reader = Reader {
    title: "Ethernet",
    fixed: &[
        ("destination MAC", "eth.dst", 0, 6, FieldKind::Mac),
        ("source MAC", "eth.src", 6, 12, FieldKind::Mac),
        ("EtherType", "eth.type", 12, 14, FieldKind::Number),
    ],
    len: |at| fits(at, 14),
    rest: Rest::None,
    next: |at| Next::EtherType(be16(at, 12)),
};

pub(super) static READ_VLAN: Reader = Reader {
    title: "VLAN",
    fixed: &[
        ("priority/DEI/ID", "vlan.tci", 0, 2, FieldKind::Number),
        ("EtherType", "vlan.type", 2, 4, FieldKind::Number),
    ],
    len: |at| fits(at, 4),
    rest: Rest::None,
    next: |at| Next::EtherType(be16(at, 2)),
};

pub(super) static READ_IPV4: Reader = Reader {
    title: "IPv4",
    fixed: &[
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
    ],
    // Its IHL in words, at least the fixed 20 bytes.
    len: |at| fits(at, 20).map(|_| ((at[0] & 0x0f) as usize * 4).max(20)),
    rest: Rest::Bytes("options", "ip.options"),
    next: |at| Next::Protocol(at[9]),
};

/// IPv6's extension headers (hop-by-hop 0, routing 43, fragment 44,
/// destination options 60), read as part of the header they extend: (their
/// length, the protocol after them) from `at`, IPv6's first byte.
fn ipv6_extensions(at: &[u8]) -> (usize, u8) {
    let (mut off, mut proto) = (40, at[6]);
    while matches!(proto, 0 | 43 | 44 | 60) && at.len() >= off + 8 {
        let ext = if proto == 44 { 8 } else { (at[off + 1] as usize + 1) * 8 };
        proto = at[off];
        off += ext;
    }
    (off, proto)
}

pub(super) static READ_IPV6: Reader = Reader {
    title: "IPv6",
    fixed: &[
        ("version/traffic class/flow label", "ip6.flow", 0, 4, FieldKind::Number),
        ("payload length", "ip6.len", 4, 6, FieldKind::Number),
        ("next header", "ip6.nh", 6, 7, FieldKind::Number),
        ("hop limit", "ip6.hlim", 7, 8, FieldKind::Number),
        ("source address", "ip6.src", 8, 24, FieldKind::Ipv6),
        ("destination address", "ip6.dst", 24, 40, FieldKind::Ipv6),
    ],
    len: |at| fits(at, 40).map(|_| ipv6_extensions(at).0),
    rest: Rest::Bytes("extension headers", "ip6.ext"),
    next: |at| Next::Protocol(ipv6_extensions(at).1),
};

pub(super) static READ_TCP: Reader = Reader {
    title: "TCP",
    fixed: &[
        ("source port", "tcp.sport", 0, 2, FieldKind::Number),
        ("destination port", "tcp.dport", 2, 4, FieldKind::Number),
        ("sequence number", "tcp.seq", 4, 8, FieldKind::Number),
        ("acknowledgment number", "tcp.ack", 8, 12, FieldKind::Number),
        ("data offset/flags", "tcp.flags", 12, 14, FieldKind::Number),
        ("window", "tcp.win", 14, 16, FieldKind::Number),
        ("checksum", "tcp.csum", 16, 18, FieldKind::Number),
        ("urgent pointer", "tcp.urg", 18, 20, FieldKind::Number),
    ],
    // Its data offset in words, at least the fixed 20 bytes.
    len: |at| fits(at, 20).map(|_| ((at[12] >> 4) as usize * 4).max(20)),
    rest: Rest::TcpOptions,
    next: |_| Next::End,
};

pub(super) static READ_UDP: Reader = Reader {
    title: "UDP",
    fixed: &[
        ("source port", "udp.sport", 0, 2, FieldKind::Number),
        ("destination port", "udp.dport", 2, 4, FieldKind::Number),
        ("length", "udp.len", 4, 6, FieldKind::Number),
        ("checksum", "udp.csum", 6, 8, FieldKind::Number),
    ],
    len: |at| fits(at, 8),
    rest: Rest::None,
    next: |_| Next::End,
};

pub(super) static READ_ICMP: Reader = Reader {
    title: "ICMP",
    fixed: &[
        ("type", "icmp.type", 0, 1, FieldKind::Number),
        ("code", "icmp.code", 1, 2, FieldKind::Number),
        ("checksum", "icmp.csum", 2, 4, FieldKind::Number),
        // An echo's identifier and sequence number, an error's unused word or MTU.
        ("rest of header", "icmp.rest", 4, 8, FieldKind::Number),
    ],
    len: |at| fits(at, 8),
    rest: Rest::None,
    next: |_| Next::End,
};

pub(super) static READ_ICMPV6: Reader = Reader {
    title: "ICMPv6",
    fixed: &[
        ("type", "icmp6.type", 0, 1, FieldKind::Number),
        ("code", "icmp6.code", 1, 2, FieldKind::Number),
        ("checksum", "icmp6.csum", 2, 4, FieldKind::Number),
        ("rest of header", "icmp6.rest", 4, 8, FieldKind::Number),
    ],
    len: |at| fits(at, 8),
    rest: Rest::None,
    next: |_| Next::End,
};

pub(super) static READ_GRE: Reader = Reader {
    title: "GRE",
    fixed: &[
        ("flags/version", "gre.flags", 0, 2, FieldKind::Number),
        ("protocol", "gre.proto", 2, 4, FieldKind::Number),
    ],
    // A word more for each of the checksum, key and sequence number flags (RFC 2890).
    len: |at| fits(at, 4).map(|_| 4 + 4 * [0x80, 0x20, 0x10].iter().filter(|f| at[0] & **f != 0).count()),
    rest: Rest::Bytes("checksum/key/sequence number", "gre.options"),
    next: |at| Next::EtherType(be16(at, 2)),
};
