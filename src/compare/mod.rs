//! `bpfbench compare`: two runs, benchmark by benchmark, with a verdict each
//! (see stats::compare for the statistics) and the environment differences
//! that could explain a change besides the code.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use std::collections::HashMap;

use crate::history::History;
use crate::report::model::RunReport;
use crate::stats::compare::{Comparison, MIN_RUNS_FOR_NOISE, Verdict, compare_all_with_noise, geomean, spread_of_medians};

/// Run-to-run noise per benchmark: (CV of per-run medians, runs it rests on).
pub type RunNoise = HashMap<String, (f64, usize)>;

/// What the history knows of run-to-run noise for A's benchmarks: stored
/// runs of the same program (tag) on the same kernel and CPU model.
pub fn run_noise_from_history(h: &History, a: &RunReport) -> anyhow::Result<RunNoise> {
    let mut out = RunNoise::new();
    for r in &a.results {
        let Some(p) = &r.program else { continue };
        if let Some(n) = h.run_to_run_noise(&r.benchmark_name(), &p.tag, &a.environment.kernel, &a.environment.cpu_model)? {
            out.insert(r.benchmark_name(), n);
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BenchmarkComparison {
    pub benchmark: String,
    /// "runs": per-run medians compared; "samples": the newest runs' samples.
    pub method: String,
    /// Units compared on each side (runs or samples, per `method`).
    pub n_a: usize,
    pub n_b: usize,
    /// Stored runs the run-to-run noise estimate rests on (0: unknown).
    #[serde(default)]
    pub noise_runs: usize,
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

/// Runs per side from which the comparison works on per-run medians; with
/// fewer it works on the newest runs' samples, widened by run-to-run noise.
pub const MIN_RUNS_PER_SIDE: usize = 3;
/// ... and together at least this many, so Mann-Whitney can reach p < 0.05.
const MIN_RUNS_TOTAL: usize = 8;

/// The medians of `benchmark` in each run (newest first) that measured it,
/// and the newest run's samples.
fn side(runs: &[RunReport], benchmark: &str) -> (Vec<f64>, Option<Vec<f64>>) {
    let mut medians = Vec::new();
    let mut newest = None;
    for r in runs {
        if let Some(m) = r.results.iter().find(|s| s.benchmark_name() == benchmark).and_then(|s| s.measurement.as_ref()) {
            medians.push(m.summary.median);
            newest.get_or_insert_with(|| m.samples_ns.clone());
        }
    }
    (medians, newest)
}

fn measured_names(r: Option<&RunReport>) -> Vec<String> {
    r.map(|r| r.results.iter().filter(|s| s.measurement.is_some()).map(|s| s.benchmark_name()).collect()).unwrap_or_default()
}

/// Compares every benchmark measured in both sides. A side is one run or
/// several (newest first, e.g. all runs with a tag). With enough runs on
/// both sides the unit of comparison is the run (its median), which carries
/// run-to-run noise by construction. Otherwise it is the newest runs'
/// samples, with the interval widened by the run-to-run noise `noise` (from
/// the history) or, failing that, the spread of A's own runs.
pub fn compare_runs(a: &[RunReport], a_label: &str, b: &[RunReport], b_label: &str, threshold: f64, noise: &RunNoise) -> CompareReport {
    let (names_a, names_b) = (measured_names(a.first()), measured_names(b.first()));
    let common: Vec<&String> = names_a.iter().filter(|n| names_b.contains(n)).collect();
    struct Prepared {
        name: String,
        xa: Vec<f64>,
        xb: Vec<f64>,
        method: &'static str,
        noise: Option<(f64, usize)>,
    }
    let prepared: Vec<Prepared> = common
        .iter()
        .map(|name| {
            let (meds_a, newest_a) = side(a, name);
            let (meds_b, newest_b) = side(b, name);
            if meds_a.len() >= MIN_RUNS_PER_SIDE && meds_b.len() >= MIN_RUNS_PER_SIDE && meds_a.len() + meds_b.len() >= MIN_RUNS_TOTAL {
                Prepared { name: name.to_string(), xa: meds_a, xb: meds_b, method: "runs", noise: None }
            } else {
                let own = spread_of_medians(&meds_a).map(|cv| (cv, meds_a.len()));
                Prepared {
                    name: name.to_string(),
                    xa: newest_a.unwrap_or_default(),
                    xb: newest_b.unwrap_or_default(),
                    method: "samples",
                    noise: noise.get(*name).copied().or(own),
                }
            }
        })
        .collect();
    let pairs: Vec<(&[f64], &[f64])> = prepared.iter().map(|p| (p.xa.as_slice(), p.xb.as_slice())).collect();
    let cvs: Vec<Option<f64>> = prepared.iter().map(|p| p.noise.map(|(cv, _)| cv)).collect();
    let results = compare_all_with_noise(&pairs, &cvs, threshold);
    let benchmarks: Vec<BenchmarkComparison> = prepared
        .iter()
        .zip(results)
        .map(|(p, result)| BenchmarkComparison {
            benchmark: p.name.clone(),
            method: p.method.to_string(),
            n_a: p.xa.len(),
            n_b: p.xb.len(),
            noise_runs: p.noise.map_or(0, |(_, runs)| runs),
            result,
        })
        .collect();
    let ratios: Vec<f64> = benchmarks.iter().map(|b| b.result.ratio).collect();
    let (env_a, env_b) = (a.first(), b.first());
    CompareReport {
        schema: "bpfbench.compare/1".into(),
        a: a_label.into(),
        b: b_label.into(),
        threshold,
        geomean_ratio: geomean(&ratios),
        only_in_a: names_a.iter().filter(|n| !names_b.contains(n)).cloned().collect(),
        only_in_b: names_b.iter().filter(|n| !names_a.contains(n)).cloned().collect(),
        environment_changes: match (env_a, env_b) {
            (Some(x), Some(y)) => environment_changes(x, y),
            _ => Vec::new(),
        },
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
            "{:<w$}  {:>12}  {:>12}  {:>8}  {:>17}  {:>7}  {:>14}  {:>9}  verdict (noise threshold ±{:.1}%)",
            "benchmark",
            "A ns/op",
            "B ns/op",
            "B/A",
            "95% CI",
            "p(Holm)",
            "n A v B",
            "run noise",
            self.threshold * 100.0
        );
        for b in &self.benchmarks {
            let r = &b.result;
            let _ = writeln!(
                out,
                "{:<w$}  {:>12.2}  {:>12.2}  {:>8.4}  [{:>6.4}, {:>6.4}]  {:>7.4}  {:>14}  {:>9}  {}",
                b.benchmark,
                r.median_a,
                r.median_b,
                r.ratio,
                r.ratio_ci95.0,
                r.ratio_ci95.1,
                r.p_adjusted,
                format!("{}v{} {}", b.n_a, b.n_b, b.method),
                match (b.method.as_str(), r.run_noise_cv) {
                    ("runs", _) => "in data".to_string(),
                    (_, Some(cv)) => format!("{:.1}%", cv * 100.0),
                    (_, None) => "?".to_string(),
                },
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
        let unknown = self.benchmarks.iter().filter(|b| b.method == "samples" && b.result.run_noise_cv.is_none()).count();
        if unknown > 0 {
            let _ = writeln!(
                out,
                "run noise ?: unknown for {unknown} benchmark(s), so their intervals reflect within-run noise only. Runs of the same build can differ by more than that; store {MIN_RUNS_FOR_NOISE}+ runs of A's code (e.g. --repeat 3 --tag) to account for it, or compare {MIN_RUNS_PER_SIDE}+ runs a side."
            );
        }
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
