//! What a packet comparison leaves out (`--ignore`): header fields a
//! program fills from the clock or a counter (a SYN cookie's sequence
//! number, a TCP timestamp, an IPv4 identification), byte ranges, or the
//! whole packet, when the verdict alone is to be compared.
//!
//! A field is found in each packet's own layout (layout.rs), so `ip.id`
//! means every IPv4 header of a tunnel, wherever its options put it.

use std::fmt;
use std::ops::Range;

use anyhow::{Result, bail, ensure};

use super::layout::{keys, layout};

/// Fields a program fills from the clock or a random draw (a SYN cookie's
/// sequence number, a TCP timestamp, an IPv4 identification, a flow label,
/// a source port drawn for a NAT), and the checksums that follow them.
const DRAWN: &[&str] = &["tcp.seq", "tcp.ack", "ts.val", "ts.ecr", "ip.id", "ip6.flow", "tcp.sport", "udp.sport"];
const CHECKSUMS: &[&str] = &["ip.csum", "tcp.csum", "udp.csum"];

/// Where two outputs of one length differ only in fields a clock or a
/// random draw fills (and their checksums), the keys `--ignore` takes for
/// them, in the packet's order; None where any other byte differs.
pub fn drawn_fields(a: &[u8], b: &[u8]) -> Option<Vec<&'static str>> {
    if a.len() != b.len() || a == b {
        return None;
    }
    let fields = layout(a);
    let mut keys = Vec::new();
    for (i, _) in a.iter().zip(b).enumerate().filter(|(_, (x, y))| x != y) {
        let f = fields.iter().find(|f| (f.start..f.end).contains(&i))?;
        if !DRAWN.contains(&f.key) && !CHECKSUMS.contains(&f.key) {
            return None;
        }
        if !keys.contains(&f.key) {
            keys.push(f.key);
        }
    }
    // A checksum alone changes with something else, not with the clock.
    keys.iter().any(|k| DRAWN.contains(k)).then_some(keys)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// A header field by its key ("tcp.seq").
    Field(&'static str),
    /// Bytes from the start of the packet.
    Bytes(Range<usize>),
    /// The whole packet: the verdict alone is compared.
    Packet,
}

/// The parts of output packets a comparison leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mask {
    items: Vec<Item>,
}

impl Mask {
    /// Parses `--ignore` values: field names (`tcp.seq`), byte ranges
    /// (`38..42`, end exclusive) and `packet`.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Mask> {
        let mut items = Vec::new();
        for v in values {
            let v = v.as_ref().trim();
            let item = if v == "packet" {
                Item::Packet
            } else if let Some(key) = keys().into_iter().find(|k| *k == v) {
                Item::Field(key)
            } else if let Some((a, b)) = v.split_once("..") {
                let (Ok(a), Ok(b)) = (a.trim().parse::<usize>(), b.trim().parse::<usize>()) else {
                    bail!("--ignore {v}: a byte range is START..END, e.g. 38..42 (END not included)");
                };
                ensure!(a < b, "--ignore {v}: the range is empty; END comes after START and is not included");
                Item::Bytes(a..b)
            } else {
                bail!(
                    "--ignore {v}: not a field, a byte range (38..42) or 'packet'; the fields are {}",
                    keys().join(", ")
                );
            };
            if !items.contains(&item) {
                items.push(item);
            }
        }
        Ok(Mask { items })
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Only the verdict is compared.
    pub fn verdict_only(&self) -> bool {
        self.items.contains(&Item::Packet)
    }

    /// The byte ranges of `pkt` the mask covers, its fields found in `pkt`'s layout.
    pub fn ranges(&self, pkt: &[u8]) -> Vec<Range<usize>> {
        if self.verdict_only() {
            return std::iter::once(0..pkt.len()).collect();
        }
        let fields = if self.items.iter().any(|i| matches!(i, Item::Field(_))) { layout(pkt) } else { Vec::new() };
        let mut out = Vec::new();
        for item in &self.items {
            match item {
                Item::Field(key) => {
                    out.extend(fields.iter().filter(|f| f.key == *key).map(|f| f.start..f.end.min(pkt.len())))
                }
                Item::Bytes(r) => out.push(r.start.min(pkt.len())..r.end.min(pkt.len())),
                Item::Packet => {}
            }
        }
        out.retain(|r| r.start < r.end);
        out
    }

    /// `expected` and `actual` with the bytes the mask covers zeroed in
    /// both, the fields found in `expected`'s layout: compared (or diffed)
    /// as they are, the covered bytes cannot differ.
    pub fn blank(&self, expected: &[u8], actual: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let (mut e, mut a) = (expected.to_vec(), actual.to_vec());
        for r in self.ranges(expected) {
            for p in [&mut e, &mut a] {
                let end = r.end.min(p.len());
                if r.start < end {
                    p[r.start..end].fill(0);
                }
            }
        }
        (e, a)
    }
}

/// As the user wrote it: "tcp.seq, ts.val, bytes 38..42".
impl fmt::Display for Mask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .items
            .iter()
            .map(|i| match i {
                Item::Field(k) => k.to_string(),
                Item::Bytes(r) => format!("bytes {}..{}", r.start, r.end),
                Item::Packet => "packet".to_string(),
            })
            .collect();
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet, IPv4, TCP with MSS, two NOPs and the timestamp option
    /// (its value at 62..66), 4 bytes of payload.
    fn syn_ack() -> Vec<u8> {
        let mut p = vec![0u8; 14 + 20 + 36 + 4];
        p[12] = 0x08;
        p[14] = 0x45;
        p[14 + 9] = 6;
        p[34 + 12] = 0x90; // data offset 9 words: 16 bytes of options
        p[54..58].copy_from_slice(&[2, 4, 0x05, 0xb4]);
        p[58..62].copy_from_slice(&[1, 1, 8, 10]);
        p[62..66].copy_from_slice(&[0, 0, 0, 7]);
        p
    }

    /// The guide lists every field `--ignore` takes.
    #[test]
    fn every_key_is_documented() {
        let guide = include_str!("../../docs/src/guide/own-program.md");
        for key in keys() {
            assert!(guide.contains(&format!("`{key}`")), "docs/src/guide/own-program.md does not list {key}");
        }
    }

    #[test]
    fn fields_are_found_in_the_packets_own_layout() {
        let m = Mask::parse(&["tcp.seq", "ts.val", "ip.id"]).unwrap();
        assert_eq!(m.ranges(&syn_ack()), vec![38..42, 62..66, 18..20]);
        assert_eq!(m.to_string(), "tcp.seq, ts.val, ip.id");
        // No timestamp option: nothing for ts.val.
        let mut plain = syn_ack();
        plain[60] = 0;
        assert_eq!(Mask::parse(&["ts.val"]).unwrap().ranges(&plain), Vec::<Range<usize>>::new());
    }

    /// `packet` with the low bit of each byte at `at` flipped.
    fn flipped(packet: &[u8], at: &[usize]) -> Vec<u8> {
        let mut out = packet.to_vec();
        for &i in at {
            out[i] ^= 1;
        }
        out
    }

    #[test]
    fn outputs_that_differ_only_where_a_clock_writes_name_the_ignores_that_accept_them() {
        let want = syn_ack();
        let mut got = flipped(&want, &[50, 63]); // tcp.csum, ts.val
        assert_eq!(drawn_fields(&want, &got), Some(vec!["tcp.csum", "ts.val"]));
        // A checksum alone, another field, or another length: no cure.
        assert_eq!(drawn_fields(&want, &flipped(&want, &[50])), None);
        got[30] ^= 1; // ip.dst
        assert_eq!(drawn_fields(&want, &got), None);
        assert_eq!(drawn_fields(&want, &want[..60]), None);
    }

    #[test]
    fn blanked_bytes_cannot_differ_and_others_still_do() {
        let want = syn_ack();
        let mut got = flipped(&want, &[40, 63]); // tcp.seq, ts.val
        let m = Mask::parse(&["tcp.seq", "62..66"]).unwrap();
        let (e, a) = m.blank(&want, &got);
        assert_eq!(e, a);
        got[30] ^= 1; // ip.dst, not ignored
        let (e, a) = m.blank(&want, &got);
        assert!(super::super::diff_packets(&e, &a).unwrap().contains("IPv4 destination address"));
        let verdict_only = Mask::parse(&["packet"]).unwrap();
        assert!(verdict_only.verdict_only());
        let (e, a) = verdict_only.blank(&want, &got);
        assert_eq!(e, a);
    }

    #[test]
    fn bad_values_name_what_is_wrong() {
        let err = |v: &str| Mask::parse(&[v]).unwrap_err().to_string();
        assert!(err("tcp.sequence").contains("the fields are eth.dst"), "{}", err("tcp.sequence"));
        assert!(err("42..38").contains("empty"));
        assert!(err("a..b").contains("START..END"));
    }
}
