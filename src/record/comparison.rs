//! The record of a comparison between two runs (or sets of runs): one delta
//! per benchmark both measured, of its metric's figure, as `compare` decides
//! it and reports render it.

use serde::{Deserialize, Serialize};

use super::{Compared, Metric};
use crate::stats::two_sample::{Comparison, Verdict};

/// Version 2: one list of deltas tagged by metric (version 1 had three
/// lists, `benchmarks`, `instructions` and `kernel_instructions`).
/// Comparisons are printed, not stored, so no reader of version 1 is kept.
pub const COMPARISON_SCHEMA: &str = "bpfbench.compare/2";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComparisonRecord {
    pub schema: String,
    /// How A and B were named on the command line ("run 3", "tag main", a file).
    pub a: String,
    pub b: String,
    /// Relative change below which a difference in time counts as noise.
    pub threshold: f64,
    /// One per benchmark both sides measured, by metric: time first, then
    /// BPF instructions, then kernel instructions.
    pub deltas: Vec<Delta>,
    /// Geometric mean of the ratios B/A over the benchmarks timed.
    pub geomean_ratio: Option<f64>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Environment facts that differ between A and B ("kernel: x -> y").
    pub environment_changes: Vec<String>,
}

/// One benchmark's figures in A and B, of one metric.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "metric", rename_all = "kebab-case")]
pub enum Delta {
    /// Times: medians, an interval and a verdict against the noise.
    Time(BenchmarkComparison),
    /// BPF instructions per packet (`--metric insns`): exact, so no statistics.
    Insns(InstructionDelta),
    /// The kernel's native instructions per packet (`--metric
    /// kernel-insns`); `changed` holds the functions (the JIT images as
    /// one) whose share changed.
    KernelInsns(InstructionDelta),
}

impl Delta {
    pub fn metric(&self) -> Metric {
        match self {
            Delta::Time(_) => Metric::Time,
            Delta::Insns(_) => Metric::Insns,
            Delta::KernelInsns(_) => Metric::KernelInsns,
        }
    }

    pub fn benchmark(&self) -> &str {
        match self {
            Delta::Time(b) => &b.benchmark,
            Delta::Insns(d) | Delta::KernelInsns(d) => &d.benchmark,
        }
    }

    /// B against A, told apart as the metric's description says: a time's
    /// verdict; for counts, slower is more and faster fewer, exactly or
    /// beyond the floor within which kernel counts repeat.
    pub fn verdict(&self) -> Verdict {
        let counts = match self {
            Delta::Time(b) => return b.result.verdict,
            Delta::Insns(d) | Delta::KernelInsns(d) => d,
        };
        let same = match self.metric().def().compared {
            Compared::WithinAFloor => counts.kernel_same(),
            Compared::Exactly | Compared::Statistically => counts.a == counts.b,
        };
        match (same, counts.b > counts.a) {
            (true, _) => Verdict::Same,
            (false, true) => Verdict::Slower,
            (false, false) => Verdict::Faster,
        }
    }

    pub fn time(&self) -> Option<&BenchmarkComparison> {
        match self {
            Delta::Time(b) => Some(b),
            _ => None,
        }
    }

    pub fn counts(&self) -> Option<&InstructionDelta> {
        match self {
            Delta::Time(_) => None,
            Delta::Insns(d) | Delta::KernelInsns(d) => Some(d),
        }
    }
}

impl ComparisonRecord {
    /// The deltas of `metric`, in order.
    pub fn of(&self, metric: Metric) -> impl Iterator<Item = &Delta> {
        self.deltas.iter().filter(move |d| d.metric() == metric)
    }

    /// The timed benchmarks' comparisons.
    pub fn times(&self) -> impl Iterator<Item = &BenchmarkComparison> {
        self.deltas.iter().filter_map(Delta::time)
    }

    /// The counts of `metric` (insns or kernel-insns).
    pub fn counts(&self, metric: Metric) -> Vec<&InstructionDelta> {
        self.of(metric).filter_map(Delta::counts).collect()
    }

    /// How many benchmarks of `metric` got verdict `v`.
    pub fn count(&self, metric: Metric, v: Verdict) -> usize {
        self.of(metric).filter(|d| d.verdict() == v).count()
    }

    /// The metrics compared, in `Metric`'s order.
    pub fn metrics(&self) -> Vec<Metric> {
        Metric::ALL.into_iter().filter(|m| self.of(*m).next().is_some()).collect()
    }
}

/// One benchmark's instruction counts per packet in A and B, and what changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstructionDelta {
    pub benchmark: String,
    pub a: f64,
    pub b: f64,
    /// Helper calls and map operations per packet whose count changed: (A, B).
    pub changed: std::collections::BTreeMap<String, (f64, f64)>,
    /// Instructions per packet by source line ("file: text", so that lines
    /// moved by an edit still match) where they changed: (A, B). Only when
    /// both counts kept their lines.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub lines: std::collections::BTreeMap<String, (f64, f64)>,
    /// Kernel counts only: the JIT images' instructions per packet, the
    /// empty loop's taken off: (A, B). They repeat exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jit: Option<(f64, f64)>,
    /// Kernel counts only: data accesses and simulated cache misses per
    /// packet, the empty loop's taken off: (A, B), when both sides counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<(crate::record::DataAccesses, crate::record::DataAccesses)>,
}

impl InstructionDelta {
    pub fn delta(&self) -> f64 {
        self.b - self.a
    }

    /// B/A (1 when A counted none).
    pub fn ratio(&self) -> f64 {
        if self.a > 0.0 { self.b / self.a } else { 1.0 }
    }

    /// The counts of `a` and `b` (same benchmark), per packet.
    pub fn between(
        benchmark: String,
        a: &crate::record::InstructionCount,
        b: &crate::record::InstructionCount,
    ) -> InstructionDelta {
        let per = |c: &crate::record::InstructionCount, n: i64| n as f64 / c.packets.max(1) as f64;
        let mut changed = std::collections::BTreeMap::new();
        let keys: std::collections::BTreeSet<&String> =
            a.helpers.keys().chain(a.map_ops.keys()).chain(b.helpers.keys()).chain(b.map_ops.keys()).collect();
        for k in keys {
            let get = |c: &crate::record::InstructionCount| {
                per(c, c.helpers.get(k).or_else(|| c.map_ops.get(k)).copied().unwrap_or(0))
            };
            let (x, y) = (get(a), get(b));
            if x != y {
                changed.insert(k.clone(), (x, y));
            }
        }
        let mut lines = std::collections::BTreeMap::new();
        if !a.lines.is_empty() && !b.lines.is_empty() {
            let file_of =
                |l: &crate::record::LineCount| l.at.rsplit_once(':').map_or(l.at.clone(), |(f, _)| f.to_string());
            let files = |c: &crate::record::InstructionCount| -> std::collections::BTreeSet<String> {
                c.lines.iter().map(file_of).collect()
            };
            let (fa, fb) = (files(a), files(b));
            // Two builds of one program from files of their own names
            // (before.bpf.c, after.bpf.c): the one file only A has and the
            // one only B has are the same file, named as A names it.
            let renamed = match (
                fa.difference(&fb).collect::<Vec<_>>().as_slice(),
                fb.difference(&fa).collect::<Vec<_>>().as_slice(),
            ) {
                ([only_a], [only_b]) => Some(((*only_b).clone(), (*only_a).clone())),
                _ => None,
            };
            let by_text = |c: &crate::record::InstructionCount| {
                let mut m: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
                for l in &c.lines {
                    let mut file = file_of(l);
                    if let Some((from, to)) = &renamed
                        && file == *from
                    {
                        file = to.clone();
                    }
                    *m.entry(format!("{file}: {}", l.text)).or_default() += l.insns;
                }
                m
            };
            let (la, lb) = (by_text(a), by_text(b));
            for k in la.keys().chain(lb.keys()).collect::<std::collections::BTreeSet<_>>() {
                let (x, y) = (per(a, la.get(k).copied().unwrap_or(0)), per(b, lb.get(k).copied().unwrap_or(0)));
                if x != y {
                    lines.insert(k.clone(), (x, y));
                }
            }
        }
        InstructionDelta { benchmark, a: a.per_packet(), b: b.per_packet(), changed, lines, jit: None, memory: None }
    }
}

/// Kernel instruction counts within this share of each other, with the
/// same JIT count, are the same: the JIT image repeats exactly, and the
/// rest within 0.41 % on two boots of one kernel (docs/src/guide/kernels.md).
pub const KERNEL_INSNS_SAME: f64 = 0.005;

/// ... or within this many a packet, whatever the total: a batch's one
/// event of up to 250 instructions (a tick's accounting on the way out of
/// the system call) over its 1,000 packets (seen: 2.08 and 2.16 for one
/// program on two boots).
pub const KERNEL_INSNS_FLOOR: f64 = 0.25;

/// The key under which a delta's JIT images are summed (their names carry
/// tags, which differ between builds and kernels).
pub const JIT_IMAGES: &str = "JIT images";

/// Per-function changes below this many instructions a packet are noise.
const KERNEL_CHANGE_FLOOR: f64 = 0.05;

impl InstructionDelta {
    /// Kernel counts of `a` and `b` (same benchmark), per packet: their
    /// totals, and each function whose share changed.
    pub fn between_kernels(
        benchmark: String,
        a: &crate::record::KernelCounts,
        b: &crate::record::KernelCounts,
    ) -> InstructionDelta {
        let by_function = |c: &crate::record::KernelCounts| {
            let mut m: std::collections::BTreeMap<String, f64> = std::collections::BTreeMap::new();
            for (name, n) in &c.symbols {
                let key = if name.starts_with("bpf_prog_") { JIT_IMAGES.to_string() } else { name.clone() };
                *m.entry(key).or_default() += n;
            }
            m
        };
        let (fa, fb) = (by_function(a), by_function(b));
        let mut changed = std::collections::BTreeMap::new();
        for k in fa.keys().chain(fb.keys()).collect::<std::collections::BTreeSet<_>>() {
            let (x, y) = (fa.get(k).copied().unwrap_or(0.0), fb.get(k).copied().unwrap_or(0.0));
            if (x - y).abs() >= KERNEL_CHANGE_FLOOR || (k == JIT_IMAGES && x != y) {
                changed.insert(k.clone(), (x, y));
            }
        }
        InstructionDelta {
            benchmark,
            a: a.total(),
            b: b.total(),
            changed,
            lines: Default::default(),
            jit: Some((a.jit, b.jit)),
            memory: a.memory.as_ref().zip(b.memory.as_ref()).map(|(a, b)| (a.total, b.total)),
        }
    }

    /// Whether two kernel counts are the same: the same JIT count, the
    /// totals within [`KERNEL_INSNS_SAME`] or [`KERNEL_INSNS_FLOOR`].
    pub fn kernel_same(&self) -> bool {
        let slack = (KERNEL_INSNS_SAME * self.a.max(self.b)).max(KERNEL_INSNS_FLOOR);
        self.jit.is_none_or(|(a, b)| a == b) && (self.b - self.a).abs() <= slack
    }
}

/// What the comparison of one benchmark rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Per-run medians, several runs a side: run-to-run shifts are in the data.
    Runs,
    /// The newest runs' samples, the interval widened by run-to-run noise.
    Samples,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Runs => "runs",
            Method::Samples => "samples",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchmarkComparison {
    pub benchmark: String,
    pub method: Method,
    /// Units compared on each side (runs or samples, per `method`).
    pub n_a: usize,
    pub n_b: usize,
    /// Stored runs the run-to-run noise estimate rests on (0: unknown).
    #[serde(default)]
    pub noise_runs: usize,
    #[serde(flatten)]
    pub result: Comparison,
}

#[cfg(test)]
mod kernel_tests {
    use super::*;
    use crate::record::KernelCounts;

    fn counts(jit: f64, kernel: f64) -> KernelCounts {
        KernelCounts {
            jit,
            kernel,
            harness: 37.0,
            round_totals: vec![],
            symbols: vec![("bpf_prog_aa_x".into(), jit)],
            memory: None,
            mechanism: None,
        }
    }

    fn delta(a: f64, b: f64) -> InstructionDelta {
        InstructionDelta {
            benchmark: "x".into(),
            a,
            b,
            changed: Default::default(),
            lines: Default::default(),
            jit: Some((2.0, 2.0)),
            memory: None,
        }
    }

    #[test]
    fn counts_are_told_apart_as_their_metric_compares_them() {
        // 100 against 100.2: one BPF instruction in 500 packets is a change
        // (exact), a kernel's 0.2 a packet is within its floor.
        assert_eq!(Delta::Insns(delta(100.0, 100.2)).verdict(), Verdict::Slower);
        assert_eq!(Delta::KernelInsns(delta(100.0, 100.2)).verdict(), Verdict::Same);
        assert_eq!(Delta::Insns(delta(100.0, 100.0)).verdict(), Verdict::Same);
        assert_eq!(Delta::KernelInsns(delta(100.0, 90.0)).verdict(), Verdict::Faster);
    }

    #[test]
    fn a_delta_is_written_and_read_with_its_metric() {
        let time = Delta::Time(BenchmarkComparison {
            benchmark: "t".into(),
            method: Method::Samples,
            n_a: 3,
            n_b: 4,
            noise_runs: 0,
            result: Comparison {
                median_a: 1.0,
                median_b: 2.0,
                ratio: 2.0,
                ratio_ci95: (1.9, 2.1),
                p_value: 0.01,
                p_adjusted: 0.02,
                run_noise_cv: None,
                run_noise_assumed: false,
                verdict: Verdict::Slower,
            },
        });
        for d in [time, Delta::Insns(delta(1.0, 2.0)), Delta::KernelInsns(delta(3.0, 4.0))] {
            let json = serde_json::to_value(&d).unwrap();
            assert_eq!(json["metric"], d.metric().name(), "{json}");
            let back: Delta = serde_json::from_value(json.clone()).unwrap();
            assert_eq!((back.metric(), back.benchmark(), back.verdict()), (d.metric(), d.benchmark(), d.verdict()));
            assert_eq!(serde_json::to_value(&back).unwrap(), json);
        }
    }

    #[test]
    fn kernel_counts_are_the_same_only_with_the_same_jit_count_and_close_totals() {
        let same =
            |a: KernelCounts, b: KernelCounts| InstructionDelta::between_kernels("x".into(), &a, &b).kernel_same();
        assert!(same(counts(392.0, 537.0), counts(392.0, 537.08)), "a tick's accounting is noise");
        assert!(same(counts(2.0, 0.08), counts(2.0, 0.16)), "the floor holds for tiny totals");
        assert!(!same(counts(392.0, 537.0), counts(393.0, 537.0)), "one JIT instruction more is a change");
        assert!(!same(counts(392.0, 537.0), counts(392.0, 545.0)), "0.86 % more in the kernel is a change");
    }
}
