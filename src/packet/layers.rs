//! The layers of the packet language, each described once: its name, its
//! fields (how each is read, its default), the numbers a header before it
//! names it by, how its header is written and how a received one is read
//! back ([`LAYERS`]). The spec (spec.rs) parses against these fields and
//! writes packets and their layout through these writers; the packet
//! reader (layout.rs) names a received packet's bytes through the readers,
//! and `--ignore` (mask.rs) takes their keys. Nothing else knows a layer's
//! fields or reads one by position.

use anyhow::{Context, Result, ensure};

use super::readers::{
    READ_ETH, READ_GRE, READ_ICMP, READ_ICMPV6, READ_IPV4, READ_IPV6, READ_TCP, READ_UDP, READ_VLAN, Reader,
};

/// A layer of a parsed spec: its kind and one value per field.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Layer {
    pub kind: Kind,
    /// One value per field of `kind`, in its fields' order; None: derived.
    pub values: Vec<Option<Value>>,
}

impl Layer {
    /// The value of the field named `name` (one of its kind's).
    pub fn value(&self, name: &str) -> &Option<Value> {
        &self.values[self.kind.field(name)]
    }

    pub fn value_mut(&mut self, name: &str) -> &mut Option<Value> {
        let i = self.kind.field(name);
        &mut self.values[i]
    }

    /// The bytes a byte field holds (none where it is a number or unset).
    pub fn bytes(&self, name: &str) -> &[u8] {
        match self.value(name) {
            Some(Value::Bytes(b)) => b,
            _ => &[],
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// A number, address or flag set, or the inclusive range lo..=hi.
    Num {
        lo: u128,
        hi: u128,
    },
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Eth,
    Vlan,
    Ipv4,
    Ipv6,
    Ipv6Frag,
    Tcp,
    Udp,
    Icmp,
    Icmpv6,
    /// Bytes as given, anywhere in the stack (a GUE header, a header the
    /// language has no layer for).
    Raw,
    /// GRE (RFC 2784): its protocol the next layer's EtherType.
    Gre,
    /// VXLAN (RFC 7348): an inner Ethernet frame follows.
    Vxlan,
    /// IPv6 Hop-by-Hop Options (RFC 8200 4.3): options padded to 8 bytes.
    Ipv6Hbh,
    /// IPv6 Destination Options (RFC 8200 4.6), laid out as Hop-by-Hop.
    Ipv6Dst,
    /// Geneve (RFC 8926): its protocol the next layer's EtherType.
    Geneve,
    /// GUE variant 0 (draft-ietf-intarea-gue): its protocol the next layer's IP protocol.
    Gue,
    Payload,
}

/// How a field's text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ty {
    Mac,
    V4,
    V6,
    /// An unsigned integer of this many bits (decimal or 0x hex).
    Int(u32),
    /// TCP flags as letters (FSRPAUEC), or a number.
    TcpFlags,
    /// Bytes written as hex digits.
    Hex,
    /// Bytes written as text (quotes allowed).
    Text,
}

/// A field: its name, type, and default in this language (None: derived
/// from the neighbouring layers).
pub(super) struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub default: Option<&'static str>,
}

const fn f(name: &'static str, ty: Ty, default: Option<&'static str>) -> Field {
    Field { name, ty, default }
}

const ETH: &[Field] = &[
    f("src", Ty::Mac, Some("02:00:00:00:00:01")),
    f("dst", Ty::Mac, Some("02:00:00:00:00:02")),
    f("type", Ty::Int(16), None),
];
const VLAN: &[Field] = &[
    f("id", Ty::Int(12), Some("1")),
    f("pcp", Ty::Int(3), Some("0")),
    f("dei", Ty::Int(1), Some("0")),
    f("type", Ty::Int(16), None),
];
const IPV4: &[Field] = &[
    f("src", Ty::V4, Some("10.0.0.1")),
    f("dst", Ty::V4, Some("10.0.0.2")),
    f("ttl", Ty::Int(8), Some("64")),
    f("tos", Ty::Int(8), Some("0")),
    f("id", Ty::Int(16), Some("0")),
    f("df", Ty::Int(1), Some("0")),
    f("mf", Ty::Int(1), Some("0")),
    f("frag", Ty::Int(13), Some("0")),
    f("proto", Ty::Int(8), None),
    f("options", Ty::Hex, Some("")),
    // Overrides of what is otherwise derived (a selftest's tot_len of 123 in a 54-byte frame).
    f("len", Ty::Int(16), None),
    f("csum", Ty::Int(16), None),
];
const IPV6: &[Field] = &[
    f("src", Ty::V6, Some("fc00::1")),
    f("dst", Ty::V6, Some("fc00::2")),
    f("hlim", Ty::Int(8), Some("64")),
    f("tc", Ty::Int(8), Some("0")),
    f("fl", Ty::Int(20), Some("0")),
    f("nh", Ty::Int(8), None),
];
const IPV6FRAG: &[Field] = &[
    f("off", Ty::Int(13), Some("0")),
    f("m", Ty::Int(1), Some("0")),
    f("id", Ty::Int(32), Some("0")),
    f("nh", Ty::Int(8), None),
];
const TCP: &[Field] = &[
    f("sport", Ty::Int(16), Some("12345")),
    f("dport", Ty::Int(16), Some("80")),
    f("seq", Ty::Int(32), Some("0")),
    f("ack", Ty::Int(32), Some("0")),
    f("flags", Ty::TcpFlags, Some("S")),
    f("win", Ty::Int(16), Some("8192")),
    f("urg", Ty::Int(16), Some("0")),
    // Options, each present only when given, in the order Linux sends a SYN's.
    f("mss", Ty::Int(16), None),
    f("sackok", Ty::Int(1), None),
    f("ts", Ty::Int(32), None),
    f("tsecr", Ty::Int(32), None),
    f("wscale", Ty::Int(8), None),
    f("options", Ty::Hex, Some("")),
    f("csum", Ty::Int(16), None),
];
const UDP: &[Field] = &[
    f("sport", Ty::Int(16), Some("12345")),
    f("dport", Ty::Int(16), Some("53")),
    f("len", Ty::Int(16), None),
    f("csum", Ty::Int(16), None),
];
const ICMP: &[Field] = &[
    f("type", Ty::Int(8), Some("8")),
    f("code", Ty::Int(8), Some("0")),
    f("id", Ty::Int(16), Some("0")),
    f("seq", Ty::Int(16), Some("0")),
];
const ICMPV6: &[Field] = &[
    f("type", Ty::Int(8), Some("128")),
    f("code", Ty::Int(8), Some("0")),
    f("id", Ty::Int(16), Some("0")),
    f("seq", Ty::Int(16), Some("0")),
];
const RAW: &[Field] = &[f("hex", Ty::Hex, Some(""))];
const GRE: &[Field] = &[f("proto", Ty::Int(16), None)];
const VXLAN: &[Field] = &[f("vni", Ty::Int(24), Some("1"))];
const IPV6_OPTIONS: &[Field] = &[f("options", Ty::Hex, Some("")), f("nh", Ty::Int(8), None)];
const GENEVE: &[Field] =
    &[f("vni", Ty::Int(24), Some("1")), f("proto", Ty::Int(16), None), f("options", Ty::Hex, Some(""))];
const GUE: &[Field] = &[f("proto", Ty::Int(8), None)];
const PAYLOAD: &[Field] = &[
    f("len", Ty::Int(16), Some("0")),
    f("fill", Ty::Int(8), Some("0")),
    f("hex", Ty::Hex, Some("")),
    f("text", Ty::Text, Some("")),
];

/// One layer of the language.
pub(super) struct LayerDef {
    pub kind: Kind,
    /// Its name in a spec (`ipv4`).
    pub name: &'static str,
    pub fields: &'static [Field],
    /// The numbers a header before it names it by: (EtherType, IP protocol).
    pub ids: (Option<u16>, Option<u8>),
    /// Its header, written in front of the layers after it.
    pub write: fn(&Header<'_>) -> Result<Vec<u8>>,
    /// How a received header of it is read; None: one the reader takes as
    /// part of another (IPv6's extension headers) or does not know after
    /// the header before it (VXLAN, Geneve and GUE follow UDP by port).
    pub read: Option<&'static Reader>,
}

const fn layer(
    kind: Kind,
    name: &'static str,
    fields: &'static [Field],
    ids: (Option<u16>, Option<u8>),
    write: fn(&Header<'_>) -> Result<Vec<u8>>,
    read: Option<&'static Reader>,
) -> LayerDef {
    LayerDef { kind, name, fields, ids, write, read }
}

/// The Internet checksum (RFC 1071) over the concatenation of `parts`.
pub(super) fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    let mut odd: Option<u8> = None;
    for part in parts {
        for &b in *part {
            match odd.take() {
                Some(hi) => sum += u32::from(u16::from_be_bytes([hi, b])),
                None => odd = Some(b),
            }
        }
    }
    if let Some(hi) = odd {
        sum += u32::from(u16::from_be_bytes([hi, 0]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Every layer, in the order of [`Kind`]'s variants.
pub(super) static LAYERS: [LayerDef; 17] = [
    // Transparent Ethernet Bridging: an Ethernet frame inside GRE.
    layer(Kind::Eth, "eth", ETH, (Some(0x6558), None), write_eth, Some(&READ_ETH)),
    layer(Kind::Vlan, "vlan", VLAN, (Some(0x8100), None), write_vlan, Some(&READ_VLAN)),
    layer(Kind::Ipv4, "ipv4", IPV4, (Some(0x0800), Some(4)), write_ipv4, Some(&READ_IPV4)),
    layer(Kind::Ipv6, "ipv6", IPV6, (Some(0x86dd), Some(41)), write_ipv6, Some(&READ_IPV6)),
    layer(Kind::Ipv6Frag, "ipv6frag", IPV6FRAG, (None, Some(44)), write_ipv6frag, None),
    layer(Kind::Tcp, "tcp", TCP, (None, Some(6)), write_tcp, Some(&READ_TCP)),
    layer(Kind::Udp, "udp", UDP, (None, Some(17)), write_udp, Some(&READ_UDP)),
    layer(Kind::Icmp, "icmp", ICMP, (None, Some(1)), write_icmp, Some(&READ_ICMP)),
    layer(Kind::Icmpv6, "icmpv6", ICMPV6, (None, Some(58)), write_icmp, Some(&READ_ICMPV6)),
    layer(Kind::Raw, "raw", RAW, (None, None), |h| Ok(h.bytes("hex").to_vec()), None),
    layer(Kind::Gre, "gre", GRE, (None, Some(47)), write_gre, Some(&READ_GRE)),
    layer(Kind::Vxlan, "vxlan", VXLAN, (None, None), write_vxlan, None),
    layer(Kind::Ipv6Hbh, "ipv6hbh", IPV6_OPTIONS, (None, Some(0)), write_ipv6_options, None),
    layer(Kind::Ipv6Dst, "ipv6dst", IPV6_OPTIONS, (None, Some(60)), write_ipv6_options, None),
    layer(Kind::Geneve, "geneve", GENEVE, (None, None), write_geneve, None),
    layer(Kind::Gue, "gue", GUE, (None, None), write_gue, None),
    layer(Kind::Payload, "payload", PAYLOAD, (None, None), write_payload, None),
];

impl Kind {
    /// Its entry in [`LAYERS`], which lists the kinds in their order (a test holds it so).
    pub fn def(self) -> &'static LayerDef {
        &LAYERS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    pub fn fields(self) -> &'static [Field] {
        self.def().fields
    }

    /// The index of its field `name`; a name not among them is a bug of the caller's.
    pub fn field(self, name: &str) -> usize {
        self.fields()
            .iter()
            .position(|f| f.name == name)
            .unwrap_or_else(|| panic!("{} has no field {name}", self.name()))
    }

    /// The kind a spec names `name`.
    pub fn named(name: &str) -> Option<Kind> {
        LAYERS.iter().find(|d| d.name == name).map(|d| d.kind)
    }

    /// Every layer's name, for errors.
    pub fn names() -> Vec<&'static str> {
        LAYERS.iter().map(|d| d.name).collect()
    }
}

/// What a layer's writer sees: its values (a range's the packet's pick),
/// the layers around it and the bytes of those after it.
pub(super) struct Header<'a> {
    pub layers: &'a [Layer],
    pub li: usize,
    /// The number field `fi` of layer `li` holds in this packet, if set.
    pub num: &'a dyn Fn(usize, usize) -> Option<u128>,
    /// The layers after this one, as written.
    pub inner: &'a [u8],
}

impl Header<'_> {
    fn layer(&self) -> &Layer {
        &self.layers[self.li]
    }

    /// Field `name`'s number, if given (or defaulted).
    fn given(&self, name: &str) -> Option<u128> {
        (self.num)(self.li, self.layer().kind.field(name))
    }

    /// Field `name`'s number, 0 where unset.
    fn n(&self, name: &str) -> u128 {
        self.given(name).unwrap_or(0)
    }

    fn bytes(&self, name: &str) -> &[u8] {
        self.layer().bytes(name)
    }

    fn next(&self) -> Option<Kind> {
        self.layers.get(self.li + 1).map(|l| l.kind)
    }

    /// The EtherType in field `field`: as given, else the next layer's, else
    /// the local experimental one (IEEE 802).
    fn ethertype(&self, field: &str) -> u16 {
        match (self.given(field), self.next().and_then(|k| k.def().ids.0)) {
            (Some(t), _) => t as u16,
            (None, Some(t)) => t,
            (None, None) => 0x88b5,
        }
    }

    /// The IP protocol in field `field`: as given, else the next layer's,
    /// else "no next header" (RFC 8200).
    fn protocol(&self, field: &str) -> u8 {
        match (self.given(field), self.next().and_then(|k| k.def().ids.1)) {
            (Some(p), _) => p as u8,
            (None, Some(p)) => p,
            (None, None) => 59,
        }
    }

    /// The checksum pseudo-header of this transport layer, from the nearest
    /// IP layer around it.
    fn pseudo_header(&self, proto: u8, len: usize) -> Result<Vec<u8>> {
        let kind = self.layer().kind;
        let ip = (0..self.li)
            .rev()
            .find(|&i| matches!(self.layers[i].kind, Kind::Ipv4 | Kind::Ipv6))
            .with_context(|| format!("{} needs an ipv4 or ipv6 layer around it", kind.name()))?;
        let ip_kind = self.layers[ip].kind;
        let addr = |name: &str| (self.num)(ip, ip_kind.field(name)).unwrap_or(0);
        let (src, dst) = (addr("src"), addr("dst"));
        let mut p = Vec::new();
        if ip_kind == Kind::Ipv4 {
            p.extend_from_slice(&(src as u32).to_be_bytes());
            p.extend_from_slice(&(dst as u32).to_be_bytes());
            p.extend_from_slice(&[0, proto]);
            p.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            p.extend_from_slice(&src.to_be_bytes());
            p.extend_from_slice(&dst.to_be_bytes());
            p.extend_from_slice(&(len as u32).to_be_bytes());
            p.extend_from_slice(&[0, 0, 0, proto]);
        }
        Ok(p)
    }
}

fn write_payload(h: &Header<'_>) -> Result<Vec<u8>> {
    let (hex, text) = (h.bytes("hex"), h.bytes("text"));
    Ok(if !hex.is_empty() {
        hex.to_vec()
    } else if !text.is_empty() {
        text.to_vec()
    } else {
        vec![h.n("fill") as u8; h.n("len") as usize]
    })
}

fn write_gre(h: &Header<'_>) -> Result<Vec<u8>> {
    // No checksum, key or sequence number: flags and version 0.
    let mut header = vec![0, 0];
    header.extend_from_slice(&h.ethertype("proto").to_be_bytes());
    Ok(header)
}

fn write_vxlan(h: &Header<'_>) -> Result<Vec<u8>> {
    // The I flag: the VNI is valid.
    let mut header = vec![0x08, 0, 0, 0];
    header.extend_from_slice(&((h.n("vni") as u32) << 8).to_be_bytes());
    Ok(header)
}

fn write_ipv6_options(h: &Header<'_>) -> Result<Vec<u8>> {
    let options = h.bytes("options");
    // Padded to a whole number of 8 bytes: Pad1 for one byte, PadN for more.
    let padded = (2 + options.len()).div_ceil(8) * 8;
    ensure!(padded <= 2048, "{} options longer than 2046 bytes", h.layer().kind.name());
    let mut header = vec![h.protocol("nh"), (padded / 8 - 1) as u8];
    header.extend_from_slice(options);
    match padded - 2 - options.len() {
        0 => {}
        1 => header.push(0),
        n => {
            header.extend_from_slice(&[1, (n - 2) as u8]);
            header.resize(padded, 0);
        }
    }
    Ok(header)
}

fn write_geneve(h: &Header<'_>) -> Result<Vec<u8>> {
    let options = h.bytes("options");
    ensure!(
        options.len().is_multiple_of(4) && options.len() <= 252,
        "geneve options must be a multiple of 4 bytes, at most 252"
    );
    let mut header = vec![(options.len() / 4) as u8, 0];
    header.extend_from_slice(&h.ethertype("proto").to_be_bytes());
    header.extend_from_slice(&((h.n("vni") as u32) << 8).to_be_bytes());
    header.extend_from_slice(options);
    Ok(header)
}

fn write_gue(h: &Header<'_>) -> Result<Vec<u8>> {
    // Version 0, no control message, no extension fields, no flags.
    Ok(vec![0, h.protocol("proto"), 0, 0])
}

fn write_eth(h: &Header<'_>) -> Result<Vec<u8>> {
    let mut header = h.n("dst").to_be_bytes()[10..].to_vec();
    header.extend_from_slice(&h.n("src").to_be_bytes()[10..]);
    header.extend_from_slice(&h.ethertype("type").to_be_bytes());
    Ok(header)
}

fn write_vlan(h: &Header<'_>) -> Result<Vec<u8>> {
    let tci = (h.n("pcp") << 13 | h.n("dei") << 12 | h.n("id")) as u16;
    let mut header = tci.to_be_bytes().to_vec();
    header.extend_from_slice(&h.ethertype("type").to_be_bytes());
    Ok(header)
}

fn write_ipv4(h: &Header<'_>) -> Result<Vec<u8>> {
    let options = h.bytes("options");
    ensure!(
        options.len().is_multiple_of(4) && options.len() <= 40,
        "ipv4 options must be a multiple of 4 bytes, at most 40"
    );
    let ihl = 5 + options.len() / 4;
    let total = ihl * 4 + h.inner.len();
    ensure!(total <= 0xffff, "the IPv4 packet is longer than 65535 bytes");
    let flags_frag = (h.n("df") << 14 | h.n("mf") << 13 | h.n("frag")) as u16;
    let mut header = vec![0x40 | ihl as u8, h.n("tos") as u8];
    let total = h.given("len").map_or(total as u16, |l| l as u16);
    header.extend_from_slice(&total.to_be_bytes());
    header.extend_from_slice(&(h.n("id") as u16).to_be_bytes());
    header.extend_from_slice(&flags_frag.to_be_bytes());
    header.push(h.n("ttl") as u8);
    header.push(h.protocol("proto"));
    header.extend_from_slice(&[0, 0]);
    header.extend_from_slice(&(h.n("src") as u32).to_be_bytes());
    header.extend_from_slice(&(h.n("dst") as u32).to_be_bytes());
    header.extend_from_slice(options);
    let sum = h.given("csum").map_or_else(|| checksum(&[&header]), |c| c as u16);
    header[10..12].copy_from_slice(&sum.to_be_bytes());
    Ok(header)
}

fn write_ipv6(h: &Header<'_>) -> Result<Vec<u8>> {
    ensure!(h.inner.len() <= 0xffff, "the IPv6 payload is longer than 65535 bytes");
    let first = (6u32 << 28) | (h.n("tc") as u32) << 20 | h.n("fl") as u32;
    let mut header = first.to_be_bytes().to_vec();
    header.extend_from_slice(&(h.inner.len() as u16).to_be_bytes());
    header.push(h.protocol("nh"));
    header.push(h.n("hlim") as u8);
    header.extend_from_slice(&h.n("src").to_be_bytes());
    header.extend_from_slice(&h.n("dst").to_be_bytes());
    Ok(header)
}

fn write_ipv6frag(h: &Header<'_>) -> Result<Vec<u8>> {
    let mut header = vec![h.protocol("nh"), 0];
    header.extend_from_slice(&((h.n("off") << 3 | h.n("m")) as u16).to_be_bytes());
    header.extend_from_slice(&(h.n("id") as u32).to_be_bytes());
    Ok(header)
}

fn write_tcp(h: &Header<'_>) -> Result<Vec<u8>> {
    let options = tcp_options(&|name| h.given(name), h.bytes("options"))?;
    let mut header = (h.n("sport") as u16).to_be_bytes().to_vec();
    header.extend_from_slice(&(h.n("dport") as u16).to_be_bytes());
    header.extend_from_slice(&(h.n("seq") as u32).to_be_bytes());
    header.extend_from_slice(&(h.n("ack") as u32).to_be_bytes());
    header.push(((5 + options.len() / 4) as u8) << 4);
    header.push(h.n("flags") as u8);
    header.extend_from_slice(&(h.n("win") as u16).to_be_bytes());
    header.extend_from_slice(&[0, 0]);
    header.extend_from_slice(&(h.n("urg") as u16).to_be_bytes());
    header.extend_from_slice(&options);
    let sum = match h.given("csum") {
        Some(c) => c as u16,
        None => checksum(&[&h.pseudo_header(6, header.len() + h.inner.len())?, &header, h.inner]),
    };
    header[16..18].copy_from_slice(&sum.to_be_bytes());
    Ok(header)
}

fn write_udp(h: &Header<'_>) -> Result<Vec<u8>> {
    let len = 8 + h.inner.len();
    ensure!(len <= 0xffff, "the UDP datagram is longer than 65535 bytes");
    let mut header = (h.n("sport") as u16).to_be_bytes().to_vec();
    header.extend_from_slice(&(h.n("dport") as u16).to_be_bytes());
    header.extend_from_slice(&h.given("len").map_or(len as u16, |l| l as u16).to_be_bytes());
    header.extend_from_slice(&[0, 0]);
    let sum = match h.given("csum") {
        // As given: 0 is "no checksum".
        Some(c) => c as u16,
        None => {
            let sum = checksum(&[&h.pseudo_header(17, len)?, &header, h.inner]);
            // A zero UDP checksum means "none"; a computed zero is sent as all ones.
            if sum == 0 { 0xffff } else { sum }
        }
    };
    header[6..8].copy_from_slice(&sum.to_be_bytes());
    Ok(header)
}

/// ICMP and ICMPv6 echo-shaped headers; ICMPv6's checksum covers a pseudo-header.
fn write_icmp(h: &Header<'_>) -> Result<Vec<u8>> {
    let mut header = vec![h.n("type") as u8, h.n("code") as u8, 0, 0];
    header.extend_from_slice(&(h.n("id") as u16).to_be_bytes());
    header.extend_from_slice(&(h.n("seq") as u16).to_be_bytes());
    let sum = match h.layer().kind {
        Kind::Icmpv6 => checksum(&[&h.pseudo_header(58, header.len() + h.inner.len())?, &header, h.inner]),
        _ => checksum(&[&header, h.inner]),
    };
    header[2..4].copy_from_slice(&sum.to_be_bytes());
    Ok(header)
}

/// A TCP header's options from its fields (`given`: a field's value, if
/// set), in the order Linux sends a SYN's: MSS, SACK-permitted with the
/// timestamp (or each after two NOPs), a NOP and the window scale; then
/// `raw` bytes; padded with end-of-options to a whole number of words.
pub(super) fn tcp_options(given: &dyn Fn(&str) -> Option<u128>, raw: &[u8]) -> Result<Vec<u8>> {
    let mut o = Vec::new();
    if let Some(mss) = given("mss") {
        o.extend_from_slice(&[2, 4]);
        o.extend_from_slice(&(mss as u16).to_be_bytes());
    }
    let sack = given("sackok").is_some_and(|s| s != 0);
    let ts = given("ts").map(|v| {
        let mut t = vec![8, 10];
        t.extend_from_slice(&(v as u32).to_be_bytes());
        t.extend_from_slice(&(given("tsecr").unwrap_or(0) as u32).to_be_bytes());
        t
    });
    match (sack, ts) {
        (true, Some(t)) => {
            o.extend_from_slice(&[4, 2]);
            o.extend_from_slice(&t);
        }
        (false, Some(t)) => {
            o.extend_from_slice(&[1, 1]);
            o.extend_from_slice(&t);
        }
        (true, None) => o.extend_from_slice(&[1, 1, 4, 2]),
        (false, None) => {
            ensure!(given("tsecr").is_none(), "tcp(tsecr=...) needs ts=... (the timestamp option holds both)")
        }
    }
    if let Some(shift) = given("wscale") {
        o.extend_from_slice(&[1, 3, 3, shift as u8]);
    }
    o.extend_from_slice(raw);
    while o.len() % 4 != 0 {
        o.push(0);
    }
    ensure!(o.len() <= 40, "the TCP options take {} bytes; a header has room for 40", o.len());
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind has one entry, found by its name, and the language's
    /// documentation (spec.rs) names every layer.
    #[test]
    fn every_layer_is_described_once() {
        let doc = include_str!("spec.rs");
        for (i, d) in LAYERS.iter().enumerate() {
            assert!(LAYERS[i + 1..].iter().all(|o| o.kind != d.kind && o.name != d.name), "{} twice", d.name);
            assert_eq!(Kind::named(d.name), Some(d.kind));
            assert!(std::ptr::eq(d.kind.def(), d), "{}", d.name);
            assert!(doc.contains(&format!("`{}`", d.name)), "spec.rs's documentation does not list {}", d.name);
            for (i, f) in d.fields.iter().enumerate() {
                assert_eq!(d.kind.field(f.name), i, "{}.{} twice", d.name, f.name);
            }
        }
    }
}
