//! What the generator's XDP program writes into each frame: the template
//! packet and, for every range of the spec, where the field sits, its
//! span, and the checksums that cover it (RFC 1624 incremental updates).

use std::path::Path;

use anyhow::{Result, bail, ensure};

use crate::packet::PacketSpec;
use crate::packet::spec::RangeLayout;

/// Fields and checksums the BPF program can vary (see gen.bpf.c).
pub const MAX_FIELDS: usize = 8;
pub const MAX_CHECKSUMS: usize = 4;

/// One spec, ready for the generator.
#[derive(Debug, Clone)]
pub struct FlowPlan {
    pub spec_text: String,
    /// The spec's first packet: every range at its low end.
    pub template: Vec<u8>,
    pub layout: RangeLayout,
    /// Distinct flows: the product of the ranges' spans.
    pub flows: u64,
}

/// The one's complement sum of the 16-bit words of `v` (`width` bytes).
fn word_sum(v: u32, width: usize) -> u32 {
    if width == 4 { (v >> 16) + (v & 0xffff) } else { v & 0xffff }
}

fn fold(mut sum: u32) -> u32 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

impl FlowPlan {
    pub fn new(spec: &PacketSpec) -> Result<FlowPlan> {
        let layout = spec.range_layout()?;
        ensure!(
            layout.fields.len() <= MAX_FIELDS,
            "'{spec}' has {} ranges; the generator varies at most {MAX_FIELDS}",
            layout.fields.len()
        );
        ensure!(
            layout.checksums.len() <= MAX_CHECKSUMS,
            "'{spec}' has ranges under {} checksums; at most {MAX_CHECKSUMS}",
            layout.checksums.len()
        );
        let flows = layout.fields.iter().try_fold(1u64, |acc, f| acc.checked_mul(u64::from(f.hi - f.lo) + 1));
        let flows = flows
            .filter(|&n| n < 1 << 48)
            .ok_or_else(|| anyhow::anyhow!("'{spec}' stands for more than 2^48 flows; narrow a range"))?;
        Ok(FlowPlan { spec_text: spec.to_string(), template: spec.packet(0)?, layout, flows })
    }

    /// A packet sent as it is (from a capture): one flow, nothing varied.
    pub fn fixed(label: String, packet: Vec<u8>) -> FlowPlan {
        FlowPlan { spec_text: label, template: packet, layout: RangeLayout::default(), flows: 1 }
    }

    /// The plans `gen` is asked for: each packet of the capture at `pcap`,
    /// as it is; else each of `packets` (default: a UDP packet) padded to
    /// `size`.
    pub fn all(pcap: Option<&Path>, packets: &[String], size: Option<usize>) -> Result<Vec<FlowPlan>> {
        if let Some(path) = pcap {
            if size.is_some() {
                bail!("--size pads --packet specs; a capture's packets are sent as they are");
            }
            let captured = crate::packet::pcap::read(path)?;
            if captured.is_empty() {
                bail!("{} holds no packets", path.display());
            }
            return Ok(captured
                .into_iter()
                .enumerate()
                .map(|(i, p)| FlowPlan::fixed(format!("{} #{}", path.display(), i + 1), p))
                .collect());
        }
        let default = ["eth/ipv4/udp/payload(18)".to_string()];
        let texts = if packets.is_empty() { &default[..] } else { packets };
        texts
            .iter()
            .map(|t| {
                let spec = PacketSpec::parse_flows(t)?;
                let spec = match size {
                    Some(size) => spec.with_frame_size(size)?,
                    None => spec,
                };
                FlowPlan::new(&spec)
            })
            .collect()
    }

    /// The template's checksum at `offset`, complemented: the sum the
    /// incremental update starts from.
    pub fn checksum_start(&self, offset: usize) -> u32 {
        u32::from(!u16::from_be_bytes([self.template[offset], self.template[offset + 1]]))
    }

    /// The complemented sum of the template's words of field `i`.
    pub fn old_complement(&self, i: usize) -> u32 {
        let f = &self.layout.fields[i];
        if f.width == 4 { (!(f.lo >> 16) & 0xffff) + (!f.lo & 0xffff) } else { !f.lo & 0xffff }
    }

    /// Frame `k` as the BPF program writes it: the same arithmetic, in
    /// Rust, so tests can hold it against the spec's own packet `k`.
    pub fn frame(&self, k: u64) -> Vec<u8> {
        let mut p = self.template.clone();
        let mut acc = vec![0u32; self.layout.checksums.len()];
        let mut rest = k;
        for (i, f) in self.layout.fields.iter().enumerate() {
            let span = u64::from(f.hi - f.lo) + 1;
            let v = f.lo + (rest % span) as u32;
            rest /= span;
            p[f.offset..f.offset + f.width].copy_from_slice(&v.to_be_bytes()[4 - f.width..]);
            for &c in &f.checksums {
                acc[c] += word_sum(v, f.width) + self.old_complement(i);
            }
        }
        for (c, spot) in self.layout.checksums.iter().enumerate() {
            let mut res = !(fold(self.checksum_start(spot.offset) + acc[c]) as u16);
            if spot.udp && res == 0 {
                res = 0xffff;
            }
            p[spot.offset..spot.offset + 2].copy_from_slice(&res.to_be_bytes());
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_all(text: &str) {
        let spec = PacketSpec::parse(text).unwrap();
        let plan = FlowPlan::new(&spec).unwrap();
        assert_eq!(plan.flows, spec.count());
        for k in 0..spec.count() {
            assert_eq!(plan.frame(k), spec.packet(k).unwrap(), "{text}: packet {k}");
        }
    }

    #[test]
    fn incremental_frames_equal_the_specs_packets() {
        check_all(
            "eth/ipv4(src=10.0.0.1-10.0.1.20,dst=192.168.0.250-192.168.1.3)/udp(sport=65530-65535,dport=53)/payload(7)",
        );
        check_all(
            "eth/vlan(id=5)/ipv6(src=fc00::fffe-fc00::1:2,dst=2001:db8::1)/tcp(sport=1-3,dport=79-81,flags=A)/payload(3)",
        );
        check_all("eth/ipv4(src=1.1.1.1-1.1.1.3)/ipv4(dst=10.0.0.0-10.0.0.255)/udp(sport=0-1)");
        check_all("eth/ipv6(dst=fc00::1-fc00::40)/icmpv6");
        check_all("eth/ipv4(options=01010101,src=0.0.0.0-0.0.1.0)/tcp(dport=0-2)");
    }

    #[test]
    fn ranges_beyond_the_packet_limit_are_flows() {
        let spec = PacketSpec::parse_flows("eth/ipv4(src=10.0.0.0-10.0.255.255)/udp(sport=1000-1999)").unwrap();
        let plan = FlowPlan::new(&spec).unwrap();
        assert_eq!(plan.flows, 65_536 * 1000);
        for k in [0, 1, 65_535, 65_536, 12_345_678, plan.flows - 1] {
            assert_eq!(plan.frame(k), spec.packet(k).unwrap());
        }
    }

    #[test]
    fn other_ranges_are_refused_by_name() {
        let err = |s: &str| FlowPlan::new(&PacketSpec::parse_flows(s).unwrap()).unwrap_err().to_string();
        assert!(err("eth/ipv4(ttl=1-3)/udp").contains("ipv4.ttl"), "{}", err("eth/ipv4(ttl=1-3)/udp"));
        assert!(err("eth/ipv6(src=fc00::1-fc01::1)/udp").contains("last 32 bits"));
    }
}
