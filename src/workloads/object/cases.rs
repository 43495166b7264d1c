//! A case: the packets a program is timed on and what it must do with them,
//! as a user gives them (packet specs or a capture, an expected verdict,
//! expected packets), resolved to bytes before anything is loaded.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{Context, Result, bail, ensure};

use crate::kernel::object::ProgKind;
use crate::kernel::test_run::{TC_ACTIONS, TestInput, tc_action_name, xdp_action_name};
use crate::packet::mask::Mask;
use crate::packet::{FiveTuple, PacketSpec, pcap};

use super::map_state::MapExpectation;

/// The packet used when a case names none: a small IPv4 UDP datagram.
pub const DEFAULT_PACKET: &str = "eth/ipv4/udp/payload(18)";

/// A case as written: on the command line or in a spec file.
#[derive(Debug, Clone, Default)]
pub struct CaseSpec {
    pub name: String,
    pub packets: Vec<String>,
    pub pcap: Option<PathBuf>,
    pub expect: Option<String>,
    pub expect_packets: Vec<String>,
    pub expect_pcap: Option<PathBuf>,
    /// `__sk_buff` fields the test runs set (skb programs), as a JSON object.
    pub skb: Option<serde_json::Value>,
    /// The context of a raw tracepoint or syscall program (`--ctx`): a JSON
    /// array of integers (u64 each) or a string of hex bytes.
    pub ctx: Option<serde_json::Value>,
    /// What the packet comparisons leave out (`--ignore`).
    pub ignore: Vec<String>,
    /// What the maps must hold after the case's packets (`--expect-map`).
    pub expect_maps: Vec<MapExpectation>,
    /// Fields of the flow keys a flow dissector must fill (`--expect-flow-keys`).
    pub expect_flow_keys: Option<serde_json::Value>,
    /// A flow dissector's input flags (`--flow-flags`).
    pub flow_flags: Option<String>,
}

/// An expected verdict: a kernel action name of one program kind, or a
/// number (any kind: a socket filter's bytes to keep, cgroup_skb's 1 or 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedVerdict {
    /// `None` for a number.
    pub kind: Option<ProgKind>,
    pub value: u32,
}

const XDP_ACTIONS: [&str; 5] = ["XDP_ABORTED", "XDP_DROP", "XDP_PASS", "XDP_TX", "XDP_REDIRECT"];
/// cgroup_skb's verdicts (bit 1, congestion notification, aside).
const CGROUP_SKB_VERDICTS: [&str; 2] = ["DENY", "ALLOW"];
/// A flow dissector's verdicts.
const FLOW_DISSECTOR_VERDICTS: [(&str, u32); 3] =
    [("BPF_OK", 0), ("BPF_DROP", 2), ("BPF_FLOW_DISSECTOR_CONTINUE", 129)];

impl ExpectedVerdict {
    /// "XDP_TX", "tc_act_ok", "allow", "1500": a kernel action name, in any
    /// case, or a number.
    pub fn parse(s: &str) -> Result<ExpectedVerdict> {
        let up = s.trim().to_ascii_uppercase();
        if let Some(i) = XDP_ACTIONS.iter().position(|a| *a == up) {
            return Ok(ExpectedVerdict { kind: Some(ProgKind::Xdp), value: i as u32 });
        }
        if let Some((_, v)) = TC_ACTIONS.iter().find(|(n, _)| *n == up) {
            return Ok(ExpectedVerdict { kind: Some(ProgKind::Tc), value: *v as u32 });
        }
        if let Some(i) = CGROUP_SKB_VERDICTS.iter().position(|a| *a == up) {
            return Ok(ExpectedVerdict { kind: Some(ProgKind::CgroupSkb), value: i as u32 });
        }
        if let Some(i) = ["NF_DROP", "NF_ACCEPT"].iter().position(|a| *a == up) {
            return Ok(ExpectedVerdict { kind: Some(ProgKind::Netfilter), value: i as u32 });
        }
        if let Some(i) = ["SK_DROP", "SK_PASS"].iter().position(|a| *a == up) {
            return Ok(ExpectedVerdict { kind: Some(ProgKind::SkLookup), value: i as u32 });
        }
        if let Some((_, v)) = FLOW_DISSECTOR_VERDICTS.iter().find(|(n, _)| *n == up) {
            return Ok(ExpectedVerdict { kind: Some(ProgKind::FlowDissector), value: *v });
        }
        if let Ok(value) = up.parse::<u32>() {
            return Ok(ExpectedVerdict { kind: None, value });
        }
        let tc: Vec<&str> = TC_ACTIONS.iter().map(|(n, _)| *n).collect();
        bail!(
            "--expect {s}: not a verdict; XDP programs return {}, tc programs {}, cgroup_skb programs ALLOW or DENY, flow dissectors BPF_OK or BPF_DROP, sk_lookup programs SK_PASS or SK_DROP, netfilter programs NF_ACCEPT or NF_DROP, socket filters the number of bytes to keep (any program: a number)",
            XDP_ACTIONS.join(", "),
            tc.join(", ")
        )
    }

    /// Whether this verdict can be a return of a `kind` program.
    pub fn fits(&self, kind: ProgKind) -> bool {
        self.kind.is_none_or(|k| k == kind)
    }
}

/// The name of verdict `value` for programs of `kind`.
pub fn verdict_name(kind: ProgKind, value: u32) -> String {
    match kind {
        ProgKind::Xdp => xdp_action_name(value),
        ProgKind::Tc => tc_action_name(value),
        ProgKind::SocketFilter if value == 0 => "0 (drop)".into(),
        ProgKind::SocketFilter => format!("{value} (keep up to {value} bytes)"),
        ProgKind::CgroupSkb => match value {
            0 | 1 => CGROUP_SKB_VERDICTS[value as usize].into(),
            v => format!("{v}"),
        },
        ProgKind::Netfilter => match value {
            0 => "NF_DROP".into(),
            1 => "NF_ACCEPT".into(),
            v => format!("{v}"),
        },
        ProgKind::SkLookup => match value {
            0 => "SK_DROP".into(),
            1 => "SK_PASS".into(),
            v => format!("{v}"),
        },
        ProgKind::RawTracepoint | ProgKind::Syscall => format!("{value}"),
        ProgKind::FlowDissector => FLOW_DISSECTOR_VERDICTS
            .iter()
            .find(|(_, v)| *v == value)
            .map_or_else(|| format!("{value}"), |(n, _)| n.to_string()),
    }
}

/// A case resolved to bytes.
#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    /// Where the packets came from, for records and messages.
    pub source: String,
    pub packets: Vec<Vec<u8>>,
    pub expect_verdict: Option<ExpectedVerdict>,
    /// One expected output per input packet, or one for all of them.
    pub expect_packets: Option<Vec<Vec<u8>>>,
    /// The test runs' context, when the case sets fields.
    pub ctx: Option<SkbContext>,
    /// Each packet's own context, for the types whose context depends on
    /// the packet ([`Case::use_lookups`], [`Case::use_hook_states`]), or the
    /// case's own ([`Case::use_raw_context`]).
    pub contexts: Option<PacketContexts>,
    /// `--ctx` as bytes, for the types that take it.
    pub raw_ctx: Option<Vec<u8>>,
    /// What every comparison of an output packet leaves out: the
    /// expectations, the two reference runs, every batch's check.
    pub mask: Mask,
    /// What the maps must hold after each packet ran once from the maps as set up.
    pub expect_maps: Vec<MapExpectation>,
    /// The flow keys a flow dissector must fill, and which of their bytes were given.
    pub expect_flow_keys: Option<ExpectedFlowKeys>,
    /// A flow dissector's input: its flow keys with the flags set.
    pub flow_flags: Option<FlowFlags>,
}

/// The flow keys a flow dissector must fill: the fields given, as bytes.
#[derive(Debug, Clone)]
pub struct ExpectedFlowKeys {
    pub bytes: Vec<u8>,
    pub given: Vec<bool>,
    /// As the user gave them, for messages.
    pub shown: String,
}

/// The flags a flow dissector's test runs pass in (`struct bpf_flow_keys`'
/// `flags`, the only field a test run may set).
#[derive(Debug, Clone)]
pub struct FlowFlags {
    pub ctx: Vec<u8>,
    pub names: String,
}

/// The kernel's `BPF_FLOW_DISSECTOR_F_*` flags.
const FLOW_FLAGS: [(&str, u32); 3] = [("PARSE_1ST_FRAG", 1), ("STOP_AT_FLOW_LABEL", 2), ("STOP_AT_ENCAP", 4)];

impl FlowFlags {
    /// "PARSE_1ST_FRAG,STOP_AT_ENCAP" (the `BPF_FLOW_DISSECTOR_F_` prefix
    /// optional, any case) or a number.
    pub fn parse(text: &str, what: &str) -> Result<FlowFlags> {
        let mut flags = 0u32;
        for word in text.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let up = word.to_ascii_uppercase();
            let name = up.trim_start_matches("BPF_FLOW_DISSECTOR_F_");
            flags |= match (FLOW_FLAGS.iter().find(|(n, _)| *n == name), word.parse::<u32>()) {
                (Some((_, bit)), _) => *bit,
                (None, Ok(n)) => n,
                (None, Err(_)) => bail!(
                    "{what} {word}: not a flow dissector flag; the flags are {} (or a number)",
                    FLOW_FLAGS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ),
            };
        }
        let ctx = super::btf_value::kernel_struct("bpf_flow_keys", &serde_json::json!({ "flags": flags }), what)?;
        Ok(FlowFlags { ctx, names: text.to_string() })
    }
}

/// Bytes a raw tracepoint's test run is given: its 12 possible u64
/// arguments, whatever the case sets (zero beyond), so that no program of
/// the chain reads past what the kernel copied in.
const RAW_TP_ARGS_BYTES: usize = 12 * 8;

/// `--ctx`'s bytes: integers as native u64s, or a hex string as it reads.
fn raw_context(v: &serde_json::Value, what: &str) -> Result<Vec<u8>> {
    match v {
        serde_json::Value::Array(items) => items
            .iter()
            .map(|i| {
                i.as_u64()
                    .or_else(|| i.as_i64().map(|n| n as u64))
                    .map(|n| n.to_ne_bytes())
                    .with_context(|| format!("{what}: {i} is not an integer; give integers (u64 each) or a hex string"))
            })
            .collect::<Result<Vec<_>>>()
            .map(|words| words.concat()),
        serde_json::Value::String(hex) => crate::packet::spec::hex_bytes(hex)
            .with_context(|| format!("{what}: '{hex}' is not hex bytes; give integers (u64 each) or a hex string")),
        other => bail!("{what}: {other} is neither a list of integers nor a hex string"),
    }
}

/// A context per packet, and whether the packet goes along with it.
#[derive(Debug, Clone)]
pub struct PacketContexts {
    pub ctxs: Vec<Vec<u8>>,
    pub with_packet: bool,
}

/// An skb program's test-run context: `__sk_buff` with some fields set.
#[derive(Debug, Clone)]
pub struct SkbContext {
    pub bytes: Vec<u8>,
    /// The fields as given, for notes.
    pub fields: String,
}

/// Packets from specs (each may stand for several) and a capture.
fn gather(specs: &[String], capture: Option<&PathBuf>, what: &str) -> Result<(Vec<Vec<u8>>, String)> {
    let mut packets = Vec::new();
    let mut sources = Vec::new();
    for s in specs {
        let spec = PacketSpec::parse(s).with_context(|| format!("{what} '{s}'"))?;
        packets.extend(spec.packets().with_context(|| format!("{what} '{s}'"))?);
        sources.push(spec.to_string());
    }
    if let Some(p) = capture {
        packets.extend(pcap::read(p)?);
        sources.push(p.display().to_string());
    }
    Ok((packets, sources.join(" + ")))
}

impl CaseSpec {
    /// Resolves the case's packets and expectations; the default packet
    /// stands in when none is given.
    pub fn resolve(&self) -> Result<Case> {
        let specs = if self.packets.is_empty() && self.pcap.is_none() {
            vec![DEFAULT_PACKET.to_string()]
        } else {
            self.packets.clone()
        };
        let (packets, source) = gather(&specs, self.pcap.as_ref(), "--packet")?;
        ensure!(!packets.is_empty(), "case {}: no packets", self.name);
        let expect_verdict = self.expect.as_deref().map(ExpectedVerdict::parse).transpose()?;
        let expect_packets = if self.expect_packets.is_empty() && self.expect_pcap.is_none() {
            None
        } else {
            let (expected, _) = gather(&self.expect_packets, self.expect_pcap.as_ref(), "--expect-packet")?;
            ensure!(
                expected.len() == 1 || expected.len() == packets.len(),
                "case {}: {} expected packets for {} input packets; give one for all, or one per input",
                self.name,
                expected.len(),
                packets.len()
            );
            Some(expected)
        };
        let ctx = self
            .skb
            .as_ref()
            .map(|fields| -> Result<SkbContext> {
                let bytes = super::btf_value::skb_context(fields, &format!("case {}: skb", self.name))?;
                Ok(SkbContext { bytes, fields: fields.to_string() })
            })
            .transpose()?;
        let raw_ctx = self.ctx.as_ref().map(|v| raw_context(v, &format!("case {}: ctx", self.name))).transpose()?;
        let mask = Mask::parse(&self.ignore).with_context(|| format!("case {}", self.name))?;
        Ok(Case {
            mask,
            name: self.name.clone(),
            source,
            packets,
            expect_verdict,
            expect_packets,
            ctx,
            contexts: None,
            raw_ctx,
            expect_maps: self.expect_maps.clone(),
            expect_flow_keys: self
                .expect_flow_keys
                .as_ref()
                .map(|v| -> Result<ExpectedFlowKeys> {
                    let what = format!("case {}: --expect-flow-keys", self.name);
                    let (bytes, given) = super::btf_value::expected_kernel_struct("bpf_flow_keys", v, &what)?;
                    Ok(ExpectedFlowKeys { bytes, given, shown: v.to_string() })
                })
                .transpose()?,
            flow_flags: self
                .flow_flags
                .as_deref()
                .map(|f| FlowFlags::parse(f, &format!("case {}: --flow-flags", self.name)))
                .transpose()?,
        })
    }
}

impl Case {
    /// Makes each packet stand for the socket lookup of its flow (an
    /// sk_lookup program's context: family, protocol, addresses and ports).
    pub fn use_lookups(&mut self) -> Result<()> {
        self.use_contexts("bpf_sk_lookup", false, |name, i, p| {
            let t = FiveTuple::of_frame(p).with_context(|| {
                format!("case {name}, packet {i}: an sk_lookup program is asked about a TCP or UDP flow over IP; this packet carries none")
            })?;
            let (family, remote, local) = match t.remote {
                IpAddr::V4(_) => (2, "remote_ip4", "local_ip4"),
                IpAddr::V6(_) => (10, "remote_ip6", "local_ip6"),
            };
            Ok(serde_json::json!({
                "family": family,
                "protocol": t.protocol,
                remote: t.remote.to_string(),
                "remote_port": t.remote_port,
                local: t.local.to_string(),
                "local_port": t.local_port,
            }))
        })
    }

    /// Makes the case's `--ctx` (none: zeroes) the only input of a raw
    /// tracepoint or syscall program, standing for its packet too.
    pub fn use_raw_context(&mut self, kind: ProgKind) -> Result<()> {
        let mut bytes = self.raw_ctx.clone().unwrap_or_default();
        if kind == ProgKind::RawTracepoint {
            ensure!(
                bytes.len() <= RAW_TP_ARGS_BYTES,
                "case {}: a raw tracepoint takes at most 12 arguments ({RAW_TP_ARGS_BYTES} bytes), not {} bytes",
                self.name,
                bytes.len()
            );
            bytes.resize(RAW_TP_ARGS_BYTES, 0);
        }
        self.source = format!("context of {} bytes", bytes.len());
        self.packets = vec![bytes.clone()];
        self.contexts = Some(PacketContexts { ctxs: vec![bytes], with_packet: false });
        Ok(())
    }

    /// Gives each packet the state of the netfilter hook it passes: the
    /// protocol family of its IP version (as the test run requires) and the
    /// PRE_ROUTING hook.
    pub fn use_hook_states(&mut self) -> Result<()> {
        self.use_contexts("nf_hook_state", true, |name, i, p| {
            let pf = match p.get(12..14) {
                Some([0x08, 0x00]) => 2,  // NFPROTO_IPV4
                Some([0x86, 0xdd]) => 10, // NFPROTO_IPV6
                _ => bail!(
                    "case {name}, packet {i}: a netfilter program's test run takes IPv4 or IPv6 over Ethernet; this packet is neither"
                ),
            };
            Ok(serde_json::json!({ "hook": 0, "pf": pf }))
        })
    }

    /// Gives each packet its own context, the kernel's `struct type_name`
    /// with the fields `fields(case name, index, packet)` gives.
    fn use_contexts(
        &mut self,
        type_name: &str,
        with_packet: bool,
        fields: impl Fn(&str, usize, &[u8]) -> Result<serde_json::Value>,
    ) -> Result<()> {
        let mut ctxs = Vec::with_capacity(self.packets.len());
        for (i, p) in self.packets.iter().enumerate() {
            let what = format!("case {}, packet {i}", self.name);
            ctxs.push(super::btf_value::kernel_struct(type_name, &fields(&self.name, i, p)?, &what)?);
        }
        self.contexts = Some(PacketContexts { ctxs, with_packet });
        Ok(())
    }

    /// What test run `i` of the case is given.
    pub fn input(&self, i: usize) -> TestInput {
        match &self.contexts {
            Some(c) if c.with_packet => {
                TestInput::Packet { data: self.packets[i].clone(), ctx: Some(c.ctxs[i].clone()) }
            }
            Some(c) => TestInput::Context(c.ctxs[i].clone()),
            None => TestInput::Packet { data: self.packets[i].clone(), ctx: self.ctx_bytes().map(<[u8]>::to_vec) },
        }
    }

    /// The test runs' context bytes, if the case sets fields (an skb
    /// program's) or flags (a flow dissector's).
    pub fn ctx_bytes(&self) -> Option<&[u8]> {
        self.ctx.as_ref().map(|c| c.bytes.as_slice()).or(self.flow_flags.as_ref().map(|f| f.ctx.as_slice()))
    }

    /// The packet input `i` must come out as, if one is expected.
    pub fn expected_packet(&self, i: usize) -> Option<&[u8]> {
        self.expect_packets.as_ref().map(|e| if e.len() == 1 { e[0].as_slice() } else { e[i].as_slice() })
    }
}
