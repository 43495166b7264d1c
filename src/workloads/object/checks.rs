//! What a case says of the program's outputs, whatever path times it: the
//! notes on its input, its expectations checked against the program's own
//! outputs (a mismatch's packets written to a pcap), and the outcome and
//! verdict the record keeps.

use std::path::PathBuf;

use anyhow::Result;

use super::cases::{Case, CaseInput};
use crate::kernel::btf_value::{describe_kernel_struct, kernel_struct_differs};
use crate::kernel::prog_type::{ProgKind, Takes};
use crate::kernel::test_run::RunOutput;
use crate::packet::{diff_packets, pcap};

/// Packets whose flow keys the checks show (a case of many shows its first).
const MAX_SHOWN_KEYS: usize = 4;
use crate::record::{Expected, Outcome, PacketBytes};

/// Where a failed validation writes the expected and actual packets.
fn failure_pcap(workload: &str, case: &str) -> PathBuf {
    let safe = |s: &str| {
        s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect::<String>()
    };
    std::env::temp_dir().join(format!("bpfbench-{}-{}-mismatch.pcap", safe(workload), safe(case)))
}

impl Case {
    /// What the program is given: the packets (or context) and any fields set.
    pub fn input_notes(&self, kind: ProgKind) -> Vec<String> {
        let mut notes = Vec::new();
        match (kind.test_run().map(|r| r.takes), &self.input) {
            (Some(Takes::SocketLookup), _) => notes.push("each packet stands for the socket lookup of its flow (struct bpf_sk_lookup: family, protocol, addresses, ports)".into()),
            (Some(Takes::PacketAndHookState), _) => notes.push("each packet passes the PRE_ROUTING hook of its IP version's family (struct nf_hook_state)".into()),
            (_, CaseInput::SkbFields { shown, .. }) => {
                notes.push(format!("context: __sk_buff with {shown} in every test run"));
            }
            (_, CaseInput::FlowFlags { shown, .. }) => {
                notes.push(format!("flow dissector flags: {shown} in every test run (struct bpf_flow_keys' flags)"));
            }
            (Some(Takes::Packet | Takes::Skb | Takes::PacketAndFlowFlags | Takes::Context { .. }) | None, _) => {}
        }
        if kind.takes_raw_context() {
            notes.push(format!("input: the {}, in every run", self.source));
        } else {
            notes.push(format!(
                "packets: {} ({} packet(s) of {} bytes, cycled per iteration)",
                self.source,
                self.packets.len(),
                self.packets[0].len()
            ));
        }
        notes
    }

    /// The user's expectations against the program's outputs `refs`: what
    /// was checked, or the first mismatch (its packets written to a pcap
    /// named after `workload` and the case).
    pub fn check_outputs(&self, kind: ProgKind, workload: &str, refs: &[RunOutput]) -> Result<Vec<String>> {
        // `first` is the expected packet, or the input when only a verdict was expected.
        let fail = |i: usize, what: String, first: &[u8], first_is: &str| -> anyhow::Error {
            // A context is no packet, nor are flow keys: nothing to write a capture of.
            if kind.takes_no_packet() || kind.outputs_flow_keys() {
                return anyhow::anyhow!("case {}, input {i}: {what}", self.name);
            }
            let path = failure_pcap(workload, &self.name);
            let written = match pcap::write(&path, &[first, &refs[i].packet]) {
                Ok(()) => format!("\n({first_is} and actual output packets written to {})", path.display()),
                Err(e) => format!("\n(writing the packets failed: {reason})", reason = crate::record::error_line(&e)),
            };
            anyhow::anyhow!("case {}, packet {i}: {what}{written}", self.name)
        };
        let mut checks = Vec::new();
        if let Some(v) = self.expect_verdict {
            for (i, r) in refs.iter().enumerate() {
                if r.retval != v.value {
                    let what =
                        format!("verdict {}, expected {}", kind.verdict_name(r.retval), kind.verdict_name(v.value));
                    return Err(fail(i, what, &self.packets[i], "input"));
                }
            }
            checks.push(format!("verdict {} on all {} packet(s), as expected", kind.verdict_name(v.value), refs.len()));
        }
        if let Some(keys) = &self.expect_flow_keys {
            for (i, r) in refs.iter().enumerate() {
                if let Some(diff) = kernel_struct_differs("bpf_flow_keys", &keys.bytes, &r.packet, &keys.given) {
                    return Err(fail(
                        i,
                        format!("flow keys differ from {}: {diff}", keys.shown),
                        &self.packets[i],
                        "input",
                    ));
                }
            }
            checks.push(format!("flow keys of all {} packet(s): {} as expected", refs.len(), keys.shown));
        }
        if kind.outputs_flow_keys() {
            for (i, r) in refs.iter().enumerate().take(MAX_SHOWN_KEYS) {
                let shown = describe_kernel_struct("bpf_flow_keys", &r.packet)
                    .unwrap_or_else(|| "(no kernel BTF to read them)".into());
                checks.push(format!("flow keys of packet {i}: {shown}"));
            }
        }
        if self.expect_packets.is_some() && !self.mask.verdict_only() {
            for (i, r) in refs.iter().enumerate() {
                let want = self.expected_packet(i).expect("expectations present");
                let (blank_want, blank_got) = self.mask.blank(want, &r.packet);
                if let Some(diff) = diff_packets(&blank_want, &blank_got) {
                    let what = format!("output packet differs from the expected one:\n{diff}");
                    return Err(fail(i, what, want, "expected"));
                }
            }
            checks.push(match self.mask.is_empty() {
                true => format!("output packet of all {} packet(s): byte-exact as expected", refs.len()),
                false => format!(
                    "output packet of all {} packet(s): byte-exact as expected outside {}",
                    refs.len(),
                    self.mask
                ),
            });
        }
        if self.mask.verdict_only() {
            checks.push("output packets are not compared (--ignore packet): the verdict alone".into());
        } else if !self.mask.is_empty() {
            checks.push(format!(
                "left out of every comparison of output packets (the two reference runs, the expectations, every checked batch): {}",
                self.mask
            ));
        }
        if self.expect_verdict.is_none() && self.expect_packets.is_none() && self.expect_maps.is_empty() {
            checks.push(
                "no expectation given (--expect, --expect-packet, --expect-map): nothing else was checked".into(),
            );
        }
        Ok(checks)
    }

    /// What the program did with the case's packets, for the record.
    pub fn outcome(&self, kind: ProgKind, refs: &[RunOutput]) -> Outcome {
        Outcome {
            bytes: (!kind.takes_raw_context()).then(|| PacketBytes {
                input: PacketBytes::range(self.packets.iter().map(Vec::len)).unwrap_or_default(),
                output: (!kind.outputs_no_packet())
                    .then(|| PacketBytes::range(refs.iter().map(|r| r.packet.len())))
                    .flatten(),
            }),
            expected: Expected {
                verdict: self.expect_verdict.is_some(),
                packet: self.expect_packets.is_some() && !self.mask.verdict_only(),
                flow_keys: self.expect_flow_keys.is_some(),
                ignored: (!self.mask.is_empty()).then(|| self.mask.to_string()),
                maps: self.expect_maps.iter().map(|e| e.map.clone()).collect(),
            },
        }
    }
}

/// The verdict the outputs share ("XDP_TX"), or each with its count when
/// they differ ("mixed: XDP_TX x2, XDP_PASS x1").
pub fn verdict_summary(kind: ProgKind, refs: &[RunOutput]) -> String {
    let mut verdicts: Vec<(u32, usize)> = Vec::new();
    for r in refs {
        match verdicts.iter_mut().find(|(v, _)| *v == r.retval) {
            Some((_, n)) => *n += 1,
            None => verdicts.push((r.retval, 1)),
        }
    }
    match verdicts.as_slice() {
        [(v, _)] => kind.verdict_name(*v),
        many => format!(
            "mixed: {}",
            many.iter().map(|(v, n)| format!("{} x{n}", kind.verdict_name(*v))).collect::<Vec<_>>().join(", ")
        ),
    }
}
