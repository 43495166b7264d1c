//! What a user's program did with a case's packets, as validation saw it:
//! the sizes in and out, and which of it the user's expectations checked.
//! A table shows it beside the figures, so that a case that times the wrong
//! path (a packet that misses the service: XDP_PASS, size unchanged) shows.

use std::fmt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Bytes of the packets before and after the program; `None` for
    /// programs that take no packet (a raw tracepoint's arguments).
    pub bytes: Option<PacketBytes>,
    /// What the user's expectations checked beyond the program repeating itself.
    pub expected: Expected,
}

/// The smallest and largest packet of a case, in bytes, going in and coming
/// out; `output` is `None` for programs whose test run returns no packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PacketBytes {
    pub input: (usize, usize),
    pub output: Option<(usize, usize)>,
}

impl PacketBytes {
    /// The range of `sizes`: (smallest, largest).
    pub fn range(sizes: impl IntoIterator<Item = usize>) -> Option<(usize, usize)> {
        sizes.into_iter().fold(None, |acc, n| match acc {
            None => Some((n, n)),
            Some((lo, hi)) => Some((lo.min(n), hi.max(n))),
        })
    }
}

fn range_text((lo, hi): (usize, usize)) -> String {
    if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") }
}

impl fmt::Display for PacketBytes {
    /// "54 -> 74", "54-60 -> 54-60", or "54" when nothing comes out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.output {
            Some(out) => write!(f, "{} -> {}", range_text(self.input), range_text(out)),
            None => f.write_str(&range_text(self.input)),
        }
    }
}

/// Which expectations a case had: `--expect` (the verdict) and
/// `--expect-packet` (the output, byte for byte), and what `--ignore` left
/// out of every comparison of output packets.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected {
    pub verdict: bool,
    pub packet: bool,
    /// "tcp.seq, ts.val"; `None`: nothing was left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
    /// The maps whose entries were checked after the case (`--expect-map`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<String>,
    /// A flow dissector's keys were checked (`--expect-flow-keys`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flow_keys: bool,
}

impl Expected {
    pub fn nothing(&self) -> bool {
        !self.verdict && !self.packet && self.maps.is_empty() && !self.flow_keys
    }
}

impl fmt::Display for Expected {
    /// "verdict, packet", "verdict", "packet", "flow keys", "maps (flows)"
    /// or "nothing", then what was left out: "verdict, packet (ignored: tcp.seq)".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let maps = (!self.maps.is_empty()).then(|| format!("maps ({})", self.maps.join(", ")));
        let parts: Vec<&str> = [
            self.verdict.then_some("verdict"),
            self.packet.then_some("packet"),
            self.flow_keys.then_some("flow keys"),
            maps.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect();
        f.write_str(if parts.is_empty() { "nothing".to_string() } else { parts.join(", ") }.as_str())?;
        match &self.ignored {
            Some(ignored) => write!(f, " (ignored: {ignored})"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_in_and_out() {
        let b = PacketBytes { input: (54, 54), output: Some((74, 74)) };
        assert_eq!(b.to_string(), "54 -> 74");
        let b = PacketBytes { input: (54, 60), output: None };
        assert_eq!(b.to_string(), "54-60");
        assert_eq!(PacketBytes::range([60, 54, 58]), Some((54, 60)));
        assert_eq!(PacketBytes::range([]), None);
    }

    #[test]
    fn expectations_name_what_was_checked() {
        let both = Expected { verdict: true, packet: true, ..Default::default() };
        assert_eq!(both.to_string(), "verdict, packet");
        let masked = Expected { ignored: Some("tcp.seq, ts.val".into()), ..both.clone() };
        assert_eq!(masked.to_string(), "verdict, packet (ignored: tcp.seq, ts.val)");
        let maps = Expected { verdict: true, maps: vec!["flows".into(), "stats".into()], ..Default::default() };
        assert_eq!(maps.to_string(), "verdict, maps (flows, stats)");
        assert!(!maps.nothing());
        assert_eq!(Expected::default().to_string(), "nothing");
        assert!(Expected::default().nothing());
    }
}
