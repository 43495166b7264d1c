//! The packet language: test packets in a compact, scapy-like text form,
//!
//! ```text
//! eth/ipv4(src=10.0.0.1,dst=10.0.0.10)/tcp(sport=31337,dport=80,flags=A)/payload(64)
//! ```
//!
//! Layers are written outermost first and separated by `/`: `eth`, `vlan`,
//! `ipv4`, `ipv6`, `ipv6hbh`, `ipv6dst`, `ipv6frag`, `tcp`, `udp`, `icmp`,
//! `icmpv6`, `gre`, `vxlan`, `geneve`, `gue`, `raw`, `payload`.
//! Every field has a default; type, protocol and length fields follow from
//! the layers around them, and every checksum is computed. Any number or
//! address may be a range, `src=10.0.0.1-10.0.15.255` or `sport=1024-2047`:
//! a spec stands for one packet per combination of its ranges (the first
//! range varies fastest), at most [`MAX_PACKETS`].

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use anyhow::{Context, Result, bail, ensure};

use super::layers::{Header, Kind, Layer, Ty, Value};

/// Packets one spec may stand for.
pub const MAX_PACKETS: u64 = 65_536;

/// A parsed spec: its layers, each field holding a value or a range.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketSpec {
    text: String,
    layers: Vec<Layer>,
}

/// Splits `s` at `sep` outside parentheses and quotes.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let (mut depth, mut quoted, mut start, mut out) = (0i32, false, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '(' if !quoted => depth += 1,
            ')' if !quoted => depth -= 1,
            c if c == sep && depth == 0 && !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_int(s: &str, bits: u32) -> Result<u128> {
    let v = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u128::from_str_radix(hex, 16),
        None => s.parse::<u128>(),
    }
    .ok()
    .with_context(|| format!("'{s}' is not a number"))?;
    ensure!(bits >= 128 || v < 1u128 << bits, "{s} does not fit in {bits} bits");
    Ok(v)
}

/// The six bytes of a MAC address written `aa:bb:cc:dd:ee:ff`.
pub fn mac_bytes(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    let mut out = [0u8; 6];
    for (o, p) in out.iter_mut().zip(parts) {
        *o = u8::from_str_radix(p, 16).ok()?;
    }
    Some(out)
}

/// Bytes written as hex digits, optionally after `0x`, with any of
/// ` :-_` between them.
pub fn hex_bytes(s: &str) -> Option<Vec<u8>> {
    let digits: String =
        s.trim().trim_start_matches("0x").chars().filter(|c| !matches!(c, ' ' | ':' | '-' | '_')).collect();
    if digits.is_empty() || !digits.len().is_multiple_of(2) {
        return None;
    }
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(&digits[i..i + 2], 16).ok()).collect()
}

fn parse_mac(s: &str) -> Result<u128> {
    let b = mac_bytes(s).with_context(|| format!("'{s}' is not a MAC address (six hex bytes separated by ':')"))?;
    Ok(b.iter().fold(0u128, |acc, &x| (acc << 8) | x as u128))
}

fn parse_hex(s: &str) -> Result<Vec<u8>> {
    if s.trim().is_empty() {
        return Ok(Vec::new());
    }
    hex_bytes(s).with_context(|| format!("'{s}' is not hex bytes"))
}

fn parse_flags(s: &str) -> Result<u128> {
    if let Ok(n) = parse_int(s, 8) {
        return Ok(n);
    }
    s.chars().try_fold(0u128, |acc, c| {
        let bit = match c.to_ascii_uppercase() {
            'F' => 0x01,
            'S' => 0x02,
            'R' => 0x04,
            'P' => 0x08,
            'A' => 0x10,
            'U' => 0x20,
            'E' => 0x40,
            'C' => 0x80,
            _ => bail!("'{s}' is not a set of TCP flags (letters of FSRPAUEC)"),
        };
        Ok(acc | bit)
    })
}

/// One scalar of type `ty`.
fn parse_scalar(ty: Ty, s: &str) -> Result<u128> {
    match ty {
        Ty::Mac => parse_mac(s),
        Ty::V4 => {
            Ok(u32::from(s.parse::<Ipv4Addr>().ok().with_context(|| format!("'{s}' is not an IPv4 address"))?) as u128)
        }
        Ty::V6 => Ok(u128::from(s.parse::<Ipv6Addr>().ok().with_context(|| format!("'{s}' is not an IPv6 address"))?)),
        Ty::Int(bits) => parse_int(s, bits),
        Ty::TcpFlags => parse_flags(s),
        Ty::Hex | Ty::Text => unreachable!("byte fields have no scalar"),
    }
}

fn parse_value(ty: Ty, s: &str) -> Result<Value> {
    let s = s.trim();
    match ty {
        Ty::Hex => Ok(Value::Bytes(parse_hex(s)?)),
        Ty::Text => Ok(Value::Bytes(s.trim_matches('"').as_bytes().to_vec())),
        _ => {
            // A range is "lo-hi"; TCP flags never take one (letters only).
            if ty != Ty::TcpFlags
                && let Some((lo, hi)) = s.split_once('-')
            {
                let (lo, hi) = (parse_scalar(ty, lo.trim())?, parse_scalar(ty, hi.trim())?);
                ensure!(lo <= hi, "range {s} runs backwards");
                return Ok(Value::Num { lo, hi });
            }
            let v = parse_scalar(ty, s)?;
            Ok(Value::Num { lo: v, hi: v })
        }
    }
}

fn parse_layer(text: &str) -> Result<Layer> {
    let text = text.trim();
    let (name, args) = match text.split_once('(') {
        Some((name, rest)) => {
            let args = rest.strip_suffix(')').with_context(|| format!("'{text}' has no closing parenthesis"))?;
            (name.trim(), Some(args))
        }
        None => (text, None),
    };
    let kind = Kind::named(name)
        .with_context(|| format!("unknown layer '{name}'; layers are {}", Kind::names().join(", ")))?;
    let fields = kind.fields();
    let mut values: Vec<Option<Value>> =
        fields.iter().map(|f| f.default.map(|d| parse_value(f.ty, d).expect("defaults parse"))).collect();
    for arg in args.map(|a| split_top(a, ',')).unwrap_or_default().into_iter().filter(|a| !a.trim().is_empty()) {
        let (key, value) = match arg.split_once('=') {
            Some((k, v)) => (k.trim(), v),
            // payload(64) means payload(len=64); payload("text") means text.
            None if kind == Kind::Payload && arg.trim().starts_with('"') => ("text", arg),
            None if kind == Kind::Payload => ("len", arg),
            None => bail!("'{arg}' in {name}(...) is not field=value"),
        };
        let i = fields.iter().position(|f| f.name == key).with_context(|| {
            format!(
                "{name} has no field '{key}'; its fields are {}",
                fields.iter().map(|f| f.name).collect::<Vec<_>>().join(", ")
            )
        })?;
        values[i] = Some(parse_value(fields[i].ty, value).with_context(|| format!("{name}({key}=...)"))?);
    }
    Ok(Layer { kind, values })
}

impl PacketSpec {
    /// Parses a spec; errors name the layer and field at fault.
    pub fn parse(text: &str) -> Result<PacketSpec> {
        let spec = Self::parse_flows(text)?;
        let n = spec.count();
        ensure!(n <= MAX_PACKETS, "'{}' stands for {n} packets; at most {MAX_PACKETS} — narrow a range", spec.text);
        Ok(spec)
    }

    /// Parses a spec whose ranges may stand for any number of packets: the
    /// traffic generator writes each frame's flow in BPF from
    /// [`PacketSpec::range_layout`] and never lists the packets.
    pub fn parse_flows(text: &str) -> Result<PacketSpec> {
        let layers = split_top(text, '/').into_iter().map(parse_layer).collect::<Result<Vec<_>>>()?;
        ensure!(!layers.is_empty() && layers[0].kind == Kind::Eth, "a packet starts with eth");
        for (i, l) in layers.iter().enumerate() {
            // An inner frame: after a tunnel's header, or bytes that stand for one.
            ensure!(
                i == 0
                    || l.kind != Kind::Eth
                    || matches!(layers[i - 1].kind, Kind::Vxlan | Kind::Geneve | Kind::Gre | Kind::Raw),
                "eth may only be the first layer, or follow vxlan, geneve, gre or raw (a tunnel's inner frame)"
            );
            ensure!(l.kind != Kind::Payload || i + 1 == layers.len(), "payload must be the last layer");
        }
        Ok(PacketSpec { text: text.trim().to_string(), layers })
    }

    /// How many packets the spec stands for (the product of its ranges).
    pub fn count(&self) -> u64 {
        self.ranges()
            .iter()
            .fold(1u64, |acc, &(_, _, lo, hi)| acc.saturating_mul((hi - lo).min(u64::MAX as u128 - 1) as u64 + 1))
    }

    /// (layer, field, lo, hi) of every range, in spec order.
    fn ranges(&self) -> Vec<(usize, usize, u128, u128)> {
        let mut out = Vec::new();
        for (li, l) in self.layers.iter().enumerate() {
            for (fi, v) in l.values.iter().enumerate() {
                if let Some(Value::Num { lo, hi }) = v
                    && lo != hi
                {
                    out.push((li, fi, *lo, *hi));
                }
            }
        }
        out
    }

    /// Every packet the spec stands for, in order.
    pub fn packets(&self) -> Result<Vec<Vec<u8>>> {
        (0..self.count()).map(|k| self.packet(k)).collect()
    }

    /// Packet number `k` (0-based): the ranges read as the digits of `k`,
    /// the first range the fastest.
    pub fn packet(&self, k: u64) -> Result<Vec<u8>> {
        let mut rest = k as u128;
        let mut picked: Vec<(usize, usize, u128)> = Vec::new();
        for (li, fi, lo, hi) in self.ranges() {
            let n = hi - lo + 1;
            picked.push((li, fi, lo + rest % n));
            rest /= n;
        }
        let num = |li: usize, fi: usize| -> Option<u128> {
            if let Some(&(_, _, v)) = picked.iter().find(|p| p.0 == li && p.1 == fi) {
                return Some(v);
            }
            match &self.layers[li].values[fi] {
                Some(Value::Num { lo, .. }) => Some(*lo),
                _ => None,
            }
        };
        Ok(self.serialize(&num)?.0)
    }

    /// Writes the packet whose field values `num` gives, innermost layer
    /// first, each layer by its own writer; with the length of each
    /// layer's header, outermost first.
    fn serialize(&self, num: &dyn Fn(usize, usize) -> Option<u128>) -> Result<(Vec<u8>, Vec<usize>)> {
        let mut out: Vec<u8> = Vec::new();
        let mut lengths = vec![0; self.layers.len()];
        for li in (0..self.layers.len()).rev() {
            let header = Header { layers: &self.layers, li, num, inner: &out };
            let mut bytes = (self.layers[li].kind.def().write)(&header)?;
            lengths[li] = bytes.len();
            bytes.extend_from_slice(&out);
            out = bytes;
        }
        Ok((out, lengths))
    }
}

/// A field a range varies: where it sits in the packet and which checksums
/// cover it, so that a frame's flow can be written in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSpot {
    /// `layer.field`, as the spec names it (`ipv4.src`, `udp.dport`).
    pub name: String,
    /// Byte offset of the varied big-endian bytes in the packet.
    pub offset: usize,
    /// 2 (ports) or 4 (IPv4 addresses, and the last 4 bytes of IPv6 ones).
    pub width: usize,
    /// The range, as the `width` varied bytes read (first is the template's).
    pub lo: u32,
    pub hi: u32,
    /// Indexes into [`RangeLayout::checksums`] of the checksums covering it.
    pub checksums: Vec<usize>,
}

/// A checksum field that covers a varied field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumSpot {
    pub offset: usize,
    /// UDP's: a computed zero is sent as 0xffff (zero means "none").
    pub udp: bool,
}

/// Where a spec's ranges and the checksums over them sit in its packets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RangeLayout {
    /// In spec order: packet `k`'s values are the digits of `k`, first fastest.
    pub fields: Vec<RangeSpot>,
    pub checksums: Vec<ChecksumSpot>,
}

impl PacketSpec {
    /// Byte offset of each layer's header in the packet, from its first
    /// packet as the layers' writers write it (a range moves no header).
    fn layer_offsets(&self) -> Result<Vec<usize>> {
        let num = |li: usize, fi: usize| match &self.layers[li].values[fi] {
            Some(Value::Num { lo, .. }) => Some(*lo),
            _ => None,
        };
        let (_, lengths) = self.serialize(&num)?;
        Ok(lengths.iter().scan(0, |at, len| Some(std::mem::replace(at, *at + len))).collect())
    }

    /// The spec's ranges as places in the packet. Only addresses and ports
    /// can vary this way (an IPv6 range only in its last 32 bits); any other
    /// range is an error naming it.
    pub fn range_layout(&self) -> Result<RangeLayout> {
        let offsets = self.layer_offsets()?;
        let mut layout = RangeLayout::default();
        let checksum_at = |layout: &mut RangeLayout, offset: usize, udp: bool| -> usize {
            if let Some(i) = layout.checksums.iter().position(|c| c.offset == offset) {
                return i;
            }
            layout.checksums.push(ChecksumSpot { offset, udp });
            layout.checksums.len() - 1
        };
        for (li, fi, lo, hi) in self.ranges() {
            let kind = self.layers[li].kind;
            let field = kind.fields()[fi].name;
            let name = format!("{}.{field}", kind.name());
            let base = offsets[li];
            let (offset, width) = match (kind, field) {
                (Kind::Ipv4, "src") => (base + 12, 4),
                (Kind::Ipv4, "dst") => (base + 16, 4),
                (Kind::Ipv6, "src") => (base + 8 + 12, 4),
                (Kind::Ipv6, "dst") => (base + 24 + 12, 4),
                (Kind::Tcp | Kind::Udp, "sport") => (base, 2),
                (Kind::Tcp | Kind::Udp, "dport") => (base + 2, 2),
                _ => bail!(
                    "a range in {name} cannot vary per frame: only addresses and ports can; give one --packet per value instead"
                ),
            };
            ensure!(lo >> 32 == hi >> 32, "the {name} range {} spans more than its last 32 bits; narrow it", self.text);
            let mut checksums = Vec::new();
            match kind {
                Kind::Ipv4 | Kind::Ipv6 => {
                    if kind == Kind::Ipv4 {
                        checksums.push(checksum_at(&mut layout, base + 10, false));
                    }
                    // The transport layer whose pseudo-header takes these addresses.
                    let transport = self.layers[li + 1..]
                        .iter()
                        .position(|l| matches!(l.kind, Kind::Ipv4 | Kind::Ipv6 | Kind::Tcp | Kind::Udp | Kind::Icmpv6))
                        .map(|i| li + 1 + i)
                        .filter(|&t| !matches!(self.layers[t].kind, Kind::Ipv4 | Kind::Ipv6));
                    if let Some(t) = transport {
                        checksums.push(match self.layers[t].kind {
                            Kind::Tcp => checksum_at(&mut layout, offsets[t] + 16, false),
                            Kind::Udp => checksum_at(&mut layout, offsets[t] + 6, true),
                            _ => checksum_at(&mut layout, offsets[t] + 2, false),
                        });
                    }
                }
                Kind::Tcp => checksums.push(checksum_at(&mut layout, base + 16, false)),
                _ => checksums.push(checksum_at(&mut layout, base + 6, true)),
            }
            layout.fields.push(RangeSpot { name, offset, width, lo: lo as u32, hi: hi as u32, checksums });
        }
        Ok(layout)
    }

    /// The same spec with its payload grown so that the packet is `size`
    /// bytes long (an Ethernet frame without its FCS).
    pub fn with_frame_size(&self, size: usize) -> Result<PacketSpec> {
        let len = self.packet(0)?.len();
        ensure!(size >= len, "--size {size} is shorter than the packet's {len} bytes; give at least {len}");
        let extra = (size - len) as u128;
        let mut spec = self.clone();
        match spec.layers.last_mut() {
            Some(l) if l.kind == Kind::Payload => {
                ensure!(
                    l.bytes("hex").is_empty() && l.bytes("text").is_empty() || extra == 0,
                    "--size cannot pad a payload given as hex or text; give payload(LEN) instead"
                );
                if let Some(Value::Num { lo, hi }) = l.value_mut("len") {
                    *lo += extra;
                    *hi += extra;
                }
            }
            _ if extra > 0 => spec.layers.push(parse_layer(&format!("payload({extra})"))?),
            _ => {}
        }
        spec.text = format!("{} (padded to {size} bytes)", self.text);
        Ok(spec)
    }

    /// The same spec with `field` of its first layer among `layers` taking
    /// `count` values, counting up from the value it has (its range's low
    /// end); a count of 1 fixes it there. Sweeps make their steps so.
    pub fn with_field_values(&self, layers: &[&str], field: &str, count: u64) -> Result<PacketSpec> {
        ensure!(count >= 1, "a field takes at least one value");
        let mut spec = self.clone();
        let layer = spec
            .layers
            .iter_mut()
            .find(|l| layers.contains(&l.kind.name()))
            .with_context(|| format!("'{}' has no {} layer to vary", self.text, layers.join(" or ")))?;
        let fields = layer.kind.fields();
        let i = fields
            .iter()
            .position(|f| f.name == field)
            .with_context(|| format!("{} has no field '{field}'", layer.kind.name()))?;
        let bits = match fields[i].ty {
            Ty::V4 => 32,
            Ty::V6 => 128,
            Ty::Int(bits) => bits,
            _ => bail!("{}({field}) is not a number or address", layer.kind.name()),
        };
        let lo = match &layer.values[i] {
            Some(Value::Num { lo, .. }) => *lo,
            _ => 0,
        };
        let hi = lo + u128::from(count - 1);
        ensure!(
            bits >= 128 || hi < 1u128 << bits,
            "{count} values of {}({field}) from its value {lo} do not fit in {bits} bits",
            layer.kind.name()
        );
        layer.values[i] = Some(Value::Num { lo, hi });
        let name = layer.kind.name();
        spec.text = format!("{} with {count} {name} {field} values", self.text);
        Ok(spec)
    }
}

impl fmt::Display for PacketSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::layers::checksum;
    use etherparse::{NetSlice, SlicedPacket, TransportSlice};

    fn one(spec: &str) -> Vec<u8> {
        let s = PacketSpec::parse(spec).unwrap();
        assert_eq!(s.count(), 1);
        s.packet(0).unwrap()
    }

    #[test]
    fn the_issue_example_builds_a_valid_tcp_packet() {
        let p = one("eth/ipv4(src=10.0.0.1,dst=10.0.0.10)/tcp(sport=31337,dport=80,flags=A)/payload(64)");
        assert_eq!(p.len(), 14 + 20 + 20 + 64);
        let s = SlicedPacket::from_ethernet(&p).unwrap();
        let Some(NetSlice::Ipv4(ip)) = s.net else { panic!("no IPv4") };
        let h = ip.header().to_header();
        assert_eq!(h.source, [10, 0, 0, 1]);
        assert_eq!(h.destination, [10, 0, 0, 10]);
        assert_eq!(h.header_checksum, h.calc_header_checksum());
        let Some(TransportSlice::Tcp(tcp)) = s.transport else { panic!("no TCP") };
        assert!(tcp.ack() && !tcp.syn());
        assert_eq!((tcp.source_port(), tcp.destination_port()), (31337, 80));
        let want = tcp.to_header().calc_checksum_ipv4(&h, tcp.payload()).unwrap();
        assert_eq!(tcp.checksum(), want);
    }

    #[test]
    fn a_sweep_step_widens_a_field_from_its_value() {
        let base = PacketSpec::parse_flows("eth/ipv4(src=10.0.0.1)/udp(sport=1000)/payload(4)").unwrap();
        let ports = base.with_field_values(&["tcp", "udp"], "sport", 2000).unwrap();
        assert_eq!(ports.count(), 2000);
        assert_eq!(&ports.packet(1999).unwrap()[34..36], &2999u16.to_be_bytes());
        let srcs = base.with_field_values(&["ipv4", "ipv6"], "src", 300).unwrap();
        assert_eq!(&srcs.packet(299).unwrap()[26..30], &[10, 0, 1, 44]);
        assert_eq!(base.with_field_values(&["udp"], "sport", 1).unwrap().count(), 1);
        assert!(base.with_field_values(&["udp"], "sport", 65_000).is_err(), "past 65535");
        assert!(base.with_field_values(&["tcp"], "sport", 2).is_err(), "no tcp layer");
    }

    #[test]
    fn udp_and_icmp_checksums_match_etherparse() {
        let p = one("eth/ipv6(src=2001:db8::1,dst=2001:db8::2)/udp(sport=1,dport=2)/payload(text=\"hi there\")");
        let s = SlicedPacket::from_ethernet(&p).unwrap();
        let Some(NetSlice::Ipv6(ip)) = s.net else { panic!("no IPv6") };
        let Some(TransportSlice::Udp(udp)) = s.transport else { panic!("no UDP") };
        assert_eq!(udp.payload(), b"hi there");
        assert_eq!(
            udp.checksum(),
            udp.to_header().calc_checksum_ipv6(&ip.header().to_header(), udp.payload()).unwrap()
        );
        let p = one("eth/ipv4/icmp(id=7,seq=1)/payload(4)");
        assert_eq!(checksum(&[&p[34..]]), 0, "ICMP checksum covers header and data");
        let p = one("eth/ipv6/icmpv6(id=7,seq=1)");
        let s = SlicedPacket::from_ethernet(&p).unwrap();
        let Some(TransportSlice::Icmpv6(icmp)) = s.transport else { panic!("no ICMPv6") };
        let Some(NetSlice::Ipv6(ip)) = s.net else { panic!("no IPv6") };
        let h = ip.header().to_header();
        assert_eq!(icmp.checksum(), icmp.icmp_type().calc_checksum(h.source, h.destination, icmp.payload()).unwrap());
    }

    #[test]
    fn types_and_protocols_follow_the_layers() {
        let p = one("eth/vlan(id=100,pcp=3)/ipv6/ipv6frag(m=1,id=0x1234)/tcp");
        assert_eq!(&p[12..14], &[0x81, 0x00], "eth type: VLAN");
        assert_eq!(u16::from_be_bytes([p[14], p[15]]), 3 << 13 | 100, "VLAN TCI");
        assert_eq!(&p[16..18], &[0x86, 0xdd], "VLAN type: IPv6");
        assert_eq!(p[18 + 6], 44, "IPv6 next header: Fragment");
        assert_eq!(p[58], 6, "Fragment next header: TCP");
        assert_eq!(&p[60..62], &[0, 1], "M flag");
        let tunnel = one("eth/ipv4(src=1.1.1.1,dst=2.2.2.2)/ipv4/udp");
        assert_eq!(tunnel[14 + 9], 4, "IPIP");
        assert_eq!(u16::from_be_bytes([tunnel[16], tunnel[17]]), 20 + 20 + 8, "outer total length");
        let opts = one("eth/ipv4(options=01010101,mf=1,df=1)/tcp");
        assert_eq!(opts[14], 0x46, "ihl 6");
        assert_eq!(&opts[20..22], &[0x60, 0x00], "DF and MF");
    }

    #[test]
    fn ranges_make_one_packet_per_combination() {
        let s = PacketSpec::parse("eth/ipv4(src=10.0.0.1-10.0.0.4)/udp(sport=1000-1002)").unwrap();
        assert_eq!(s.count(), 12);
        let packets = s.packets().unwrap();
        let flows: std::collections::BTreeSet<(Vec<u8>, Vec<u8>)> =
            packets.iter().map(|p| (p[26..30].to_vec(), p[34..36].to_vec())).collect();
        assert_eq!(flows.len(), 12, "all distinct");
        // The first range varies fastest.
        assert_eq!(&packets[1][26..30], &[10, 0, 0, 2]);
        assert_eq!(&packets[4][34..36], &1001u16.to_be_bytes());
        let big = PacketSpec::parse("eth/ipv4(src=10.0.0.1-10.0.15.255)/tcp(sport=1024-65535)");
        assert!(big.unwrap_err().to_string().contains("at most 65536"));
    }

    #[test]
    fn derived_lengths_and_checksums_can_be_given() {
        // A selftest's packet: tot_len 123 in a 54-byte frame, a checksum of its choosing.
        let p = one("eth/ipv4(len=123, csum=0x1234)/tcp(csum=0xbeef)");
        assert_eq!(p.len(), 54);
        assert_eq!((&p[16..18], &p[24..26], &p[50..52]), (&[0, 123][..], &[0x12, 0x34][..], &[0xbe, 0xef][..]));
        let u = one("eth/ipv4/udp(len=9, csum=0)/payload(4)");
        assert_eq!((&u[38..40], &u[40..42]), (&[0, 9][..], &[0, 0][..]));
        // Not given: derived as before.
        let d = one("eth/ipv4/udp/payload(4)");
        assert_eq!(&d[38..40], &[0, 12]);
        assert_ne!(&d[40..42], &[0, 0]);
    }

    #[test]
    fn bad_specs_are_named() {
        let err = |s: &str| PacketSpec::parse(s).unwrap_err().to_string();
        assert!(err("eth/ipv5").contains("unknown layer 'ipv5'"), "{}", err("eth/ipv5"));
        assert!(err("eth/ipv4(srcc=1.2.3.4)").contains("ipv4 has no field 'srcc'"));
        assert!(
            format!("{:#}", PacketSpec::parse("eth/ipv4(src=1.2.3)").unwrap_err())
                .contains("'1.2.3' is not an IPv4 address")
        );
        assert!(
            format!("{:#}", PacketSpec::parse("eth/tcp(sport=70000)").unwrap_err()).contains("does not fit in 16 bits")
        );
        assert!(err("ipv4/tcp").contains("starts with eth"));
        assert!(err("eth/payload(4)/tcp").contains("payload must be the last layer"));
        assert!(
            format!("{:#}", PacketSpec::parse("eth/udp").unwrap().packet(0).unwrap_err())
                .contains("udp needs an ipv4 or ipv6 layer")
        );
    }

    /// The ranges' places come from the layers' own writers: in a tunnel
    /// with IPv4 options and TCP options, the inner addresses and ports
    /// sit where etherparse finds them, and their checksums are the
    /// inner IPv6's TCP checksum.
    #[test]
    fn range_places_are_where_the_written_headers_put_them() {
        let text =
            "eth/ipv4(options=01010101)/udp/vxlan/eth/ipv6(src=fc00::1-fc00::4)/tcp(mss=1460,sport=1-9)/payload(8)";
        let spec = PacketSpec::parse(text).unwrap();
        let packet = spec.packet(0).unwrap();
        let inner = 14 + 24 + 8 + 8;
        let s = SlicedPacket::from_ethernet(&packet[inner..]).unwrap();
        let Some(NetSlice::Ipv6(ip)) = s.net else { panic!("no inner ipv6") };
        assert_eq!(ip.header().source_addr(), "fc00::1".parse::<std::net::Ipv6Addr>().unwrap());
        let layout = spec.range_layout().unwrap();
        let (tcp_at, ip_at) = (inner + 14 + 40, inner + 14);
        assert_eq!(layout.fields[0].offset, ip_at + 8 + 12, "{layout:?}");
        assert_eq!(layout.fields[1].offset, tcp_at, "{layout:?}");
        // The TCP header with its MSS option is 24 bytes; its checksum at 16.
        assert_eq!(packet[tcp_at + 12] >> 4, 6);
        assert_eq!(layout.checksums, vec![ChecksumSpot { offset: tcp_at + 16, udp: false }]);
    }
}
