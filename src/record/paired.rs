//! The record of a paired A/B (`bpfbench ab`): per case, the ratios of
//! batches of A and B taken next to each other on one CPU, in rounds that
//! each set both builds up afresh.

use serde::{Deserialize, Serialize};

use super::Environment;
use crate::stats::two_sample::Verdict;

pub const PAIRED_SCHEMA: &str = "bpfbench.ab/1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairedRecord {
    pub schema: String,
    /// How A and B were given ("xdp_encap.bpf.o", "./bpfbench-before").
    pub a: String,
    pub b: String,
    #[serde(default)]
    pub tag: Option<String>,
    pub environment: Environment,
    /// Relative change below which a difference counts as noise.
    pub threshold: f64,
    pub cases: Vec<PairedCase>,
    /// A suite's cases that could not be compared, and why: a validation
    /// that failed on A or B, a case only one of them has.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_compared: Vec<NotCompared>,
    /// A and B are two builds of a suite (a project's tests, a corpus).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suite: bool,
    /// Geometric mean of the cases' median ratios.
    pub geomean_ratio: Option<f64>,
    /// Ctrl-C ended the comparison; `cases` holds what was finished.
    pub interrupted: bool,
    /// A's and B's guests, when A and B are two kernels (`ab --kernel`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub guests: Vec<crate::record::Guest>,
}

/// A case of two suites that was not compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotCompared {
    pub name: String,
    pub why: String,
    /// It validates on A and fails on B: a failure B brought, which the
    /// gate (`--fail-on-regression`) counts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fails_on_b_only: bool,
}

impl PairedCase {
    /// "412 -> 398": A's and B's timed program's instructions after the
    /// verifier (xlated); "412 (same code)" where the kernel gave both one tag.
    pub fn instructions(&self) -> Option<String> {
        let [a, b] = self.programs.as_ref()?;
        let (na, nb) = (a.size.xlated_bytes / 8, b.size.xlated_bytes / 8);
        Some(if a.tag == b.tag { format!("{na} (same code)") } else { format!("{na} -> {nb}") })
    }

    /// Whether the kernel loaded different code for A and B (their tags differ).
    pub fn code_differs(&self) -> bool {
        self.programs.as_ref().is_some_and(|[a, b]| a.tag != b.tag)
    }

    /// Whether its verdict says B differs from A.
    pub fn moved(&self) -> bool {
        matches!(self.verdict, Verdict::Slower | Verdict::Faster)
    }

    /// What its figures are of, as a run's results name the same benchmark.
    pub fn id(&self) -> crate::record::BenchmarkId {
        crate::record::BenchmarkId::of_case(&self.workload, &self.name, &self.facts, &self.timing)
    }

    /// "workload/case@mode": the identity's text.
    pub fn benchmark_name(&self) -> String {
        self.id().to_string()
    }

    /// "XDP_TX, 86 -> 106": what the program did with the case's packets.
    pub fn output(&self) -> Option<String> {
        let returns = self.returns.as_deref()?;
        Some(match self.bytes {
            Some(b) => format!("{returns}, {b}"),
            None => returns.to_string(),
        })
    }
}

fn table_row() -> crate::record::ScenarioFacts {
    crate::record::ScenarioFacts::TABLE_ROW
}

impl PairedRecord {
    /// Whether its times come from guests under emulation.
    pub fn emulated(&self) -> bool {
        self.guests.iter().any(crate::record::Guest::emulated)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PairedCase {
    pub workload: String,
    pub name: String,
    /// How both builds' batches were timed (documents from before it was
    /// recorded: may_goto).
    #[serde(default)]
    pub timing: crate::record::Timing,
    /// What the case is (a map benchmark's map, key and value size): part
    /// of its identity (documents from before it was recorded: a table row).
    #[serde(default = "table_row")]
    pub facts: crate::record::ScenarioFacts,
    /// What A's program returned ("XDP_TX"; both builds returned it unless
    /// --allow-different-output), and its packets' sizes in and out (own objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returns: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<crate::record::PacketBytes>,
    /// Iterations of every batch, A and B alike.
    pub batch_iters: u32,
    /// Median ns/op of A's and of B's batches, and their 95% intervals
    /// (order statistics of the batches).
    pub median_a: f64,
    pub median_b: f64,
    pub median_a_ci95: (f64, f64),
    pub median_b_ci95: (f64, f64),
    /// B/A: the 20% trimmed mean of the rounds' median pair ratios (in
    /// logs), and its Tukey-McLaughlin 95% interval over rounds (documents
    /// from before 2026-12: the geometric mean, a Student-t interval).
    pub ratio: f64,
    pub ratio_ci95: (f64, f64),
    pub verdict: Verdict,
    /// Why sampling stopped: "decided", "time cap" or "interrupted".
    pub stop: String,
    pub elapsed_s: f64,
    /// Each round's median B/A ratio, in the order taken.
    pub round_ratios: Vec<f64>,
    /// Each pair's B/A ratio, in the order taken (rounds one after another).
    pub ratios: Vec<f64>,
    /// How the rounds spread against the pairs within them (where each
    /// load's code landed, against adjacent batches' noise); None in
    /// documents from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<RoundSpread>,
    /// A's and B's timed program as the kernel loaded it in the first
    /// round (name, tag, instruction sizes, verified instructions), where
    /// the workload names it: why a case moved (more instructions, or the
    /// same tag: the same code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs: Option<[crate::record::ProgramRecord; 2]>,
}

/// The rounds' ratios, lowest and highest, and the spreads (robust SDs, as
/// fractions) of the rounds and of the pairs within a round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundSpread {
    pub low: f64,
    pub high: f64,
    pub between: f64,
    pub within: f64,
}

impl PairedRecord {
    /// How many cases got verdict `v`.
    pub fn count(&self, v: Verdict) -> usize {
        self.cases.iter().filter(|c| c.verdict == v).count()
    }
}
