//! A case: the packets a program is timed on and what it must do with them,
//! as a user gives them (packet specs or a capture, an expected verdict,
//! expected packets), resolved to bytes before anything is loaded.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{Context, Result, bail, ensure};

use crate::kernel::prog_type::{PROG_TYPES, ProgKind, Takes, TestRun, Verdicts};
use crate::kernel::test_run::TestInput;
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

impl ExpectedVerdict {
    /// "XDP_TX", "tc_act_ok", "allow", "1500": a kernel action name, in
    /// any case, or a number. A name is `kind`'s where it has it (BPF_OK is
    /// a flow dissector's and an lwt program's), else the first type's in
    /// [`PROG_TYPES`] that has it.
    pub fn parse(s: &str, kind: ProgKind) -> Result<ExpectedVerdict> {
        let up = s.trim().to_ascii_uppercase();
        let own = PROG_TYPES.iter().filter(|t| t.kind == kind);
        for t in own.chain(&PROG_TYPES) {
            if let Some(TestRun { verdicts: Verdicts::Named(names), .. }) = t.test_run
                && let Some((_, v)) = names.iter().find(|(n, _)| *n == up)
            {
                return Ok(ExpectedVerdict { kind: Some(t.kind), value: *v as u32 });
            }
        }
        if let Ok(value) = up.parse::<u32>() {
            return Ok(ExpectedVerdict { kind: None, value });
        }
        let returns: Vec<String> = PROG_TYPES
            .iter()
            .filter_map(|t| match t.test_run.as_ref()?.verdicts {
                Verdicts::Named(names) => Some(format!(
                    "{} return {}",
                    t.plural,
                    names.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                )),
                Verdicts::BytesToKeep => Some(format!("{} the number of bytes to keep", t.plural)),
                Verdicts::Number => None,
            })
            .collect();
        bail!("--expect {s}: not a verdict; {} (any program: a number)", returns.join("; "))
    }

    /// Whether this verdict can be a return of a `kind` program.
    pub fn fits(&self, kind: ProgKind) -> bool {
        self.kind.is_none_or(|k| k == kind)
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
    /// What each test run is given besides its packet, or instead of it.
    pub input: CaseInput,
    /// What every comparison of an output packet leaves out: the
    /// expectations, the two reference runs, every batch's check.
    pub mask: Mask,
    /// What the maps must hold after each packet ran once from the maps as set up.
    pub expect_maps: Vec<MapExpectation>,
    /// The flow keys a flow dissector must fill, and which of their bytes were given.
    pub expect_flow_keys: Option<ExpectedFlowKeys>,
}

/// What each test run of a case is given besides its packet, or instead
/// of it: one of the forms [`Takes`] names, as the program's type takes it.
#[derive(Debug, Clone)]
pub enum CaseInput {
    /// The packet alone.
    Packet,
    /// The packet, and an `__sk_buff` with the fields `shown` set (`--skb`).
    SkbFields { bytes: Vec<u8>, shown: String },
    /// The packet, and a flow dissector's flow keys with the flags `shown` set (`--flow-flags`).
    FlowFlags { bytes: Vec<u8>, shown: String },
    /// The packet, and a context of its own (the netfilter hook's state it passes).
    PacketAndContext(Vec<Vec<u8>>),
    /// A context per packet, standing for it: an sk_lookup program's lookup of
    /// the packet's flow; a raw tracepoint's or syscall program's `--ctx`.
    Context(Vec<Vec<u8>>),
}

/// The flow keys a flow dissector must fill: the fields given, as bytes.
#[derive(Debug, Clone)]
pub struct ExpectedFlowKeys {
    pub bytes: Vec<u8>,
    pub given: Vec<bool>,
    /// As the user gave them, for messages.
    pub shown: String,
}

/// The kernel's `BPF_FLOW_DISSECTOR_F_*` flags.
const FLOW_FLAGS: [(&str, u32); 3] = [("PARSE_1ST_FRAG", 1), ("STOP_AT_FLOW_LABEL", 2), ("STOP_AT_ENCAP", 4)];

/// A flow dissector's flow keys with `text`'s flags set: the only field its
/// test run may set. "PARSE_1ST_FRAG,STOP_AT_ENCAP" (the
/// `BPF_FLOW_DISSECTOR_F_` prefix optional, any case) or a number.
fn flow_flags(text: &str, what: &str) -> Result<Vec<u8>> {
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
    crate::kernel::btf_value::kernel_struct("bpf_flow_keys", &serde_json::json!({ "flags": flags }), what)
}

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

/// The program a case is resolved for: its type, and its names for messages.
#[derive(Debug, Clone, Copy)]
pub struct ForProgram<'a> {
    pub kind: ProgKind,
    pub name: &'a str,
    /// libbpf's name of its type.
    pub type_name: &'a str,
}

impl CaseSpec {
    /// Resolves the case's packets, input and expectations for `program`,
    /// refusing what its type's test run cannot take or give back; the
    /// default packet stands in when none is given.
    pub fn resolve(&self, program: ForProgram<'_>) -> Result<Case> {
        let ForProgram { kind, name: prog, type_name } = program;
        let case = &self.name;
        let Some(run) = kind.test_run() else {
            bail!(
                "case {case}: '{prog}' is a {type_name} program, which the kernel cannot test-run: it is measured attached"
            )
        };
        let takes = run.takes;
        let given_packets = !self.packets.is_empty() || self.pcap.is_some();
        if kind.takes_raw_context() && given_packets {
            bail!(
                "case {case}: '{prog}' is a {type_name} program, whose test run takes a context and no packet: drop --packet/--pcap and give --ctx"
            );
        }
        if self.ctx.is_some() && !kind.takes_raw_context() {
            bail!(
                "case {case}: --ctx is for {} programs; '{prog}' is {type_name} ({} programs take --skb)",
                ProgKind::labels(|t| t.kind.takes_raw_context()),
                ProgKind::labels(|t| t.kind.has_skb())
            );
        }
        if self.skb.is_some() && !kind.has_skb() {
            bail!(
                "case {case}: skb fields are for {} programs; '{prog}' is {type_name}",
                ProgKind::labels(|t| t.kind.has_skb())
            );
        }
        if !kind.outputs_flow_keys() && (self.expect_flow_keys.is_some() || self.flow_flags.is_some()) {
            bail!("case {case}: --expect-flow-keys and --flow-flags are for flow dissectors; '{prog}' is {type_name}");
        }
        let given_expected = !self.expect_packets.is_empty() || self.expect_pcap.is_some();
        if kind.outputs_no_packet() && given_expected {
            bail!(
                "case {case}: '{prog}' is a {type_name} program, whose test run gives no packet back: drop --expect-packet"
            );
        }
        if kind.outputs_flow_keys() && given_expected {
            bail!(
                "case {case}: '{prog}' is a flow dissector, whose output is its flow keys, not a packet: drop --expect-packet (--expect-flow-keys checks the keys)"
            );
        }
        let expect_verdict = self.expect.as_deref().map(|v| ExpectedVerdict::parse(v, kind)).transpose()?;
        if let Some(v) = expect_verdict
            && let Some(other) = v.kind.filter(|_| !v.fits(kind))
        {
            bail!(
                "case {case}: --expect {} is a verdict of another program type; '{prog}' is {type_name}",
                other.verdict_name(v.value)
            );
        }
        let specs = if given_packets { self.packets.clone() } else { vec![DEFAULT_PACKET.to_string()] };
        let (packets, source) = gather(&specs, self.pcap.as_ref(), "--packet")?;
        ensure!(!packets.is_empty(), "case {case}: no packets");
        let expect_packets = if given_expected {
            let (expected, _) = gather(&self.expect_packets, self.expect_pcap.as_ref(), "--expect-packet")?;
            ensure!(
                expected.len() == 1 || expected.len() == packets.len(),
                "case {case}: {} expected packets for {} input packets; give one for all, or one per input",
                expected.len(),
                packets.len()
            );
            Some(expected)
        } else {
            None
        };
        let mask = Mask::parse(&self.ignore).with_context(|| format!("case {case}"))?;
        let expect_flow_keys = self
            .expect_flow_keys
            .as_ref()
            .map(|v| -> Result<ExpectedFlowKeys> {
                let what = format!("case {case}: --expect-flow-keys");
                let (bytes, given) = crate::kernel::btf_value::expected_kernel_struct("bpf_flow_keys", v, &what)?;
                Ok(ExpectedFlowKeys { bytes, given, shown: v.to_string() })
            })
            .transpose()?;
        let mut resolved = Case {
            mask,
            name: case.clone(),
            source,
            packets,
            expect_verdict,
            expect_packets,
            input: CaseInput::Packet,
            expect_maps: self.expect_maps.clone(),
            expect_flow_keys,
        };
        resolved.input = match takes {
            Takes::Packet => CaseInput::Packet,
            Takes::Skb => match &self.skb {
                Some(fields) => CaseInput::SkbFields {
                    bytes: crate::kernel::btf_value::skb_context(fields, &format!("case {case}: skb"))?,
                    shown: fields.to_string(),
                },
                None => CaseInput::Packet,
            },
            Takes::PacketAndFlowFlags => match &self.flow_flags {
                Some(f) => CaseInput::FlowFlags {
                    bytes: flow_flags(f, &format!("case {case}: --flow-flags"))?,
                    shown: f.clone(),
                },
                None => CaseInput::Packet,
            },
            Takes::PacketAndHookState => CaseInput::PacketAndContext(resolved.contexts("nf_hook_state", hook_state)?),
            Takes::SocketLookup => CaseInput::Context(resolved.contexts("bpf_sk_lookup", socket_lookup)?),
            Takes::Context { max_bytes } => {
                let given = self.ctx.as_ref().map(|v| raw_context(v, &format!("case {case}: ctx"))).transpose()?;
                let bytes = sized_context(case, given.unwrap_or_default(), max_bytes)?;
                resolved.source = format!("context of {} bytes", bytes.len());
                resolved.packets = vec![bytes.clone()];
                CaseInput::Context(vec![bytes])
            }
        };
        Ok(resolved)
    }
}

/// `--ctx`'s bytes within what the type's context holds at most (a raw
/// tracepoint's 12 u64 arguments), zeroes beyond what the case sets so
/// that no program of the chain reads past what the kernel copied in.
fn sized_context(case: &str, mut bytes: Vec<u8>, max_bytes: Option<usize>) -> Result<Vec<u8>> {
    if let Some(max) = max_bytes {
        ensure!(
            bytes.len() <= max,
            "case {case}: the program's context holds at most {max} bytes ({} u64 arguments), not {} bytes",
            max / 8,
            bytes.len()
        );
        bytes.resize(max, 0);
    }
    Ok(bytes)
}

/// The socket lookup of packet `i`'s flow (an sk_lookup program's context:
/// family, protocol, addresses and ports).
fn socket_lookup(case: &str, i: usize, p: &[u8]) -> Result<serde_json::Value> {
    let t = FiveTuple::of_frame(p).with_context(|| {
        format!("case {case}, packet {i}: an sk_lookup program is asked about a TCP or UDP flow over IP; this packet carries none")
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
}

/// The state of the netfilter hook packet `i` passes: the protocol family
/// of its IP version (as the test run requires) and the PRE_ROUTING hook.
fn hook_state(case: &str, i: usize, p: &[u8]) -> Result<serde_json::Value> {
    let pf = match p.get(12..14) {
        Some([0x08, 0x00]) => 2,  // NFPROTO_IPV4
        Some([0x86, 0xdd]) => 10, // NFPROTO_IPV6
        _ => bail!(
            "case {case}, packet {i}: a netfilter program's test run takes IPv4 or IPv6 over Ethernet; this packet is neither"
        ),
    };
    Ok(serde_json::json!({ "hook": 0, "pf": pf }))
}

impl Case {
    /// Each packet's own context, the kernel's `struct type_name` with the
    /// fields `fields(case name, index, packet)` gives.
    fn contexts(
        &self,
        type_name: &str,
        fields: impl Fn(&str, usize, &[u8]) -> Result<serde_json::Value>,
    ) -> Result<Vec<Vec<u8>>> {
        let mut ctxs = Vec::with_capacity(self.packets.len());
        for (i, p) in self.packets.iter().enumerate() {
            let what = format!("case {}, packet {i}", self.name);
            ctxs.push(crate::kernel::btf_value::kernel_struct(type_name, &fields(&self.name, i, p)?, &what)?);
        }
        Ok(ctxs)
    }

    /// What test run `i` of the case is given.
    pub fn input(&self, i: usize) -> TestInput {
        let data = self.packets[i].clone();
        match &self.input {
            CaseInput::Packet => TestInput::Packet { data, ctx: None },
            CaseInput::SkbFields { bytes, .. } | CaseInput::FlowFlags { bytes, .. } => {
                TestInput::Packet { data, ctx: Some(bytes.clone()) }
            }
            CaseInput::PacketAndContext(ctxs) => TestInput::Packet { data, ctx: Some(ctxs[i].clone()) },
            CaseInput::Context(ctxs) => TestInput::Context(ctxs[i].clone()),
        }
    }

    /// The context every test run shares, if the case sets one (an skb
    /// program's fields, a flow dissector's flags).
    pub fn shared_ctx(&self) -> Option<&[u8]> {
        match &self.input {
            CaseInput::SkbFields { bytes, .. } | CaseInput::FlowFlags { bytes, .. } => Some(bytes),
            CaseInput::Packet | CaseInput::PacketAndContext(_) | CaseInput::Context(_) => None,
        }
    }

    /// The packet input `i` must come out as, if one is expected.
    pub fn expected_packet(&self, i: usize) -> Option<&[u8]> {
        self.expect_packets.as_ref().map(|e| if e.len() == 1 { e[0].as_slice() } else { e[i].as_slice() })
    }
}
