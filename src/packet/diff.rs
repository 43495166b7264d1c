//! Byte-exact packet comparison that names the header field that differs.
//!
//! The layout is read from the expected packet (layout.rs: Ethernet, then
//! each header its readers know, nested for tunnels), so a mismatch reads like
//! "outer IPv4 source address (bytes 26..30): expected 172.16.112.110, got 172.16.112.111".

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::layout::layout;
use super::readers::FieldKind;

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
