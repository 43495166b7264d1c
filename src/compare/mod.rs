//! `bpfbench compare`: two runs, benchmark by benchmark, with a verdict each
//! (see stats::compare for the statistics) and the environment differences
//! that could explain a change besides the code.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::report::model::RunReport;
use crate::stats::compare::{Comparison, Verdict, compare_all, geomean};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchmarkComparison {
    pub benchmark: String,
    pub n_a: usize,
    pub n_b: usize,
    #[serde(flatten)]
    pub result: Comparison,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompareReport {
    pub schema: String,
    /// How A and B were named on the command line ("run 3", "tag main", a file).
    pub a: String,
    pub b: String,
    /// Relative change below which a difference counts as noise.
    pub threshold: f64,
    pub benchmarks: Vec<BenchmarkComparison>,
    /// Geometric mean of the ratios B/A over the benchmarks compared.
    pub geomean_ratio: Option<f64>,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// Environment facts that differ between A and B ("kernel: x -> y").
    pub environment_changes: Vec<String>,
}

fn environment_changes(a: &RunReport, b: &RunReport) -> Vec<String> {
    let (ea, eb) = (&a.environment, &b.environment);
    let mut out = Vec::new();
    let mut diff = |what: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{what}: {x} -> {y}"));
        }
    };
    diff("bpfbench commit", ea.git_commit.clone(), eb.git_commit.clone());
    diff("BPF cflags", ea.bpf_cflags.clone(), eb.bpf_cflags.clone());
    diff("clang", ea.clang_version.clone(), eb.clang_version.clone());
    diff("kernel", ea.kernel.clone(), eb.kernel.clone());
    diff("CPU model", ea.cpu_model.clone(), eb.cpu_model.clone());
    diff("host", ea.host.clone(), eb.host.clone());
    diff("JIT settings", format!("{:?}", ea.jit), format!("{:?}", eb.jit));
    for rb in &b.results {
        let Some(ra) = a.results.iter().find(|r| r.benchmark_name() == rb.benchmark_name()) else { continue };
        if let (Some(pa), Some(pb)) = (&ra.program, &rb.program)
            && pa.tag != pb.tag
        {
            out.push(format!(
                "{}: program {} changed (tag {} -> {}, jited {} -> {} bytes)",
                rb.benchmark_name(),
                pb.name,
                pa.tag,
                pb.tag,
                pa.jited_bytes,
                pb.jited_bytes
            ));
        }
    }
    out
}

/// Compares every benchmark measured in both runs.
pub fn compare_runs(a: &RunReport, a_label: &str, b: &RunReport, b_label: &str, threshold: f64) -> CompareReport {
    let measured = |r: &RunReport| -> Vec<(String, Vec<f64>)> {
        r.results.iter().filter_map(|s| s.measurement.as_ref().map(|m| (s.benchmark_name(), m.samples_ns.clone()))).collect()
    };
    let (ma, mb) = (measured(a), measured(b));
    let common: Vec<(&String, &Vec<f64>, &Vec<f64>)> =
        ma.iter().filter_map(|(name, sa)| mb.iter().find(|(n, _)| n == name).map(|(_, sb)| (name, sa, sb))).collect();
    let pairs: Vec<(&[f64], &[f64])> = common.iter().map(|(_, sa, sb)| (sa.as_slice(), sb.as_slice())).collect();
    let results = compare_all(&pairs, threshold);
    let benchmarks: Vec<BenchmarkComparison> = common
        .iter()
        .zip(results)
        .map(|((name, sa, sb), result)| BenchmarkComparison { benchmark: name.to_string(), n_a: sa.len(), n_b: sb.len(), result })
        .collect();
    let ratios: Vec<f64> = benchmarks.iter().map(|b| b.result.ratio).collect();
    CompareReport {
        schema: "bpfbench.compare/1".into(),
        a: a_label.into(),
        b: b_label.into(),
        threshold,
        geomean_ratio: geomean(&ratios),
        only_in_a: ma.iter().filter(|(n, _)| !mb.iter().any(|(m, _)| m == n)).map(|(n, _)| n.clone()).collect(),
        only_in_b: mb.iter().filter(|(n, _)| !ma.iter().any(|(m, _)| m == n)).map(|(n, _)| n.clone()).collect(),
        environment_changes: environment_changes(a, b),
        benchmarks,
    }
}

impl CompareReport {
    /// Benchmarks confidently slower by more than `pct` percent: the whole
    /// interval above 1 + pct/100, and a significant difference.
    pub fn regressions(&self, pct: f64) -> Vec<&BenchmarkComparison> {
        self.benchmarks
            .iter()
            .filter(|b| b.result.verdict == Verdict::Slower && b.result.ratio_ci95.0 > 1.0 + pct / 100.0)
            .collect()
    }

    /// A compact table in the manner of benchstat.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let w = self.benchmarks.iter().map(|b| b.benchmark.len()).max().unwrap_or(9).max(9);
        let _ = writeln!(out, "A: {}\nB: {}", self.a, self.b);
        let _ = writeln!(
            out,
            "{:<w$}  {:>12}  {:>12}  {:>8}  {:>17}  {:>7}  verdict (noise threshold ±{:.1}%)",
            "benchmark",
            "A ns/op",
            "B ns/op",
            "B/A",
            "95% CI",
            "p(Holm)",
            self.threshold * 100.0
        );
        for b in &self.benchmarks {
            let r = &b.result;
            let _ = writeln!(
                out,
                "{:<w$}  {:>12.2}  {:>12.2}  {:>8.4}  [{:>6.4}, {:>6.4}]  {:>7.4}  {}",
                b.benchmark,
                r.median_a,
                r.median_b,
                r.ratio,
                r.ratio_ci95.0,
                r.ratio_ci95.1,
                r.p_adjusted,
                r.verdict.as_str()
            );
        }
        if let Some(g) = self.geomean_ratio {
            let _ = writeln!(out, "{:<w$}  {:>12}  {:>12}  {:>8.4}  ({:+.2}%)", "geomean", "", "", g, (g - 1.0) * 100.0);
        }
        let counts = |v: Verdict| self.benchmarks.iter().filter(|b| b.result.verdict == v).count();
        let _ = writeln!(
            out,
            "{} slower, {} faster, {} same, {} uncertain (medians of in-BPF ns/op samples; Mann-Whitney U, Holm-corrected, bootstrap CI of the ratio)",
            counts(Verdict::Slower),
            counts(Verdict::Faster),
            counts(Verdict::Same),
            counts(Verdict::Uncertain)
        );
        for n in &self.only_in_a {
            let _ = writeln!(out, "only in A: {n}");
        }
        for n in &self.only_in_b {
            let _ = writeln!(out, "only in B: {n}");
        }
        for c in &self.environment_changes {
            let _ = writeln!(out, "changed: {c}");
        }
        out
    }
}
