//! Exports other tools read: Bencher Metric Format (BMF) JSON, Go benchmark
//! lines for benchstat, and CSV.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;
use serde::Serialize;

use crate::record::RunRecord;

/// One BMF measure: Bencher's `{value, lower_value, upper_value}`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct BmfMeasure {
    pub value: f64,
    pub lower_value: f64,
    pub upper_value: f64,
}

/// benchmark name -> measure name -> measure. `latency` is the median ns/op
/// with the bounds of its 95% confidence interval; `throughput` is ops/s
/// over all producers, with the same interval inverted; `instructions` is
/// BPF instructions per packet (`--metric insns`), exact.
pub fn bmf(report: &RunRecord) -> BTreeMap<String, BTreeMap<String, BmfMeasure>> {
    let mut out = BTreeMap::new();
    for r in &report.results {
        let mut measures = BTreeMap::new();
        // Exact: the bounds are the value.
        let exact = |v: f64| BmfMeasure { value: v, lower_value: v, upper_value: v };
        if let Some(c) = r.instructions() {
            measures.insert("instructions".to_string(), exact(c.per_packet()));
        }
        // An attached program's: its runs per event, and on the row that
        // carries them, the trigger's slowdown and a tool's own CPU time.
        if let Some(a) = &r.attached {
            measures.insert("runs_per_event".to_string(), exact(a.runs_per_event()));
            if let Some(sd) = &a.slowdown {
                let (lo, hi) = sd.differences.median_ci95;
                measures.insert(
                    "slowdown".to_string(),
                    BmfMeasure { value: sd.ns_per_event(), lower_value: lo, upper_value: hi },
                );
            }
            if let Some(t) = &a.tool {
                measures.insert("tool_cpu".to_string(), exact(t.cpu_ns_per_event));
            }
        }
        let Some(m) = r.measurement() else {
            if !measures.is_empty() {
                out.insert(r.benchmark_name(), measures);
            }
            continue;
        };
        let s = &m.summary;
        let (lo, hi) = s.median_ci95;
        let p = f64::from(r.facts.producers);
        measures.insert("latency".to_string(), BmfMeasure { value: s.median, lower_value: lo, upper_value: hi });
        measures.insert(
            "throughput".to_string(),
            BmfMeasure { value: p * 1e9 / s.median, lower_value: p * 1e9 / hi, upper_value: p * 1e9 / lo },
        );
        out.insert(r.benchmark_name(), measures);
    }
    out
}

/// "xdp-lb" -> "XdpLb": Go benchmark names start with an upper-case letter.
fn go_name(workload: &str) -> String {
    workload
        .split(['-', '_'])
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

/// One line per sample, so benchstat sees the samples (not only a summary):
/// `BenchmarkXdpLb/tcp-v4-lru-hit  <iterations>  <ns> ns/op`.
pub fn gobench(report: &RunRecord) -> String {
    let env = &report.environment;
    let mut out = String::new();
    let _ = writeln!(out, "goos: linux\ngoarch: {}\npkg: bpfbench\ncpu: {}", std::env::consts::ARCH, env.cpu_model);
    let _ = writeln!(out, "kernel: {}\ncommit: {}", env.kernel, env.git_commit);
    for r in &report.results {
        let Some(m) = r.measurement() else { continue };
        let name = format!(
            "Benchmark{}/{}{}",
            go_name(&r.workload),
            r.name.replace(char::is_whitespace, "_"),
            r.timing.suffix()
        );
        for ns in &m.samples_ns {
            let _ = writeln!(out, "{name}\t{}\t{ns:.3} ns/op", m.batch_iters);
        }
    }
    out
}

#[derive(Serialize)]
struct CsvRow<'a> {
    workload: &'a str,
    scenario: &'a str,
    params: String,
    timing: &'static str,
    validated: bool,
    unavailable: &'a str,
    error: &'a str,
    n: Option<usize>,
    median_ns: Option<f64>,
    ci95_low_ns: Option<f64>,
    ci95_high_ns: Option<f64>,
    mean_ns: Option<f64>,
    stddev_ns: Option<f64>,
    cv: Option<f64>,
    min_ns: Option<f64>,
    p90_ns: Option<f64>,
    p99_ns: Option<f64>,
    max_ns: Option<f64>,
    loop_median_ns: Option<f64>,
    batch_iters: Option<u32>,
    runtime: &'static str,
    insns_per_packet: Option<f64>,
    /// Attached programs: runs per event of the trigger, the trigger's
    /// slowdown (ns per event, 95% CI) and its time alone, a tool's CPU.
    runs_per_event: Option<f64>,
    slowdown_ns: Option<f64>,
    slowdown_ci95_low_ns: Option<f64>,
    slowdown_ci95_high_ns: Option<f64>,
    trigger_alone_ns: Option<f64>,
    tool_cpu_ns_per_event: Option<f64>,
}

/// One row per scenario with its summary statistics.
pub fn csv(report: &RunRecord) -> Result<String> {
    super::csv_of(report.results.iter().map(|r| {
        let m = r.measurement();
        let s = m.map(|m| &m.summary);
        let a = r.attached.as_ref();
        let slowdown = a.and_then(|a| a.slowdown.as_ref());
        CsvRow {
            workload: &r.workload,
            scenario: &r.name,
            params: r.facts.describe().iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "),
            timing: r.timing.label(),
            validated: r.validated,
            unavailable: r.unavailable.as_deref().unwrap_or(""),
            error: r.error.as_deref().unwrap_or(""),
            n: s.map(|s| s.n),
            median_ns: s.map(|s| s.median),
            ci95_low_ns: s.map(|s| s.median_ci95.0),
            ci95_high_ns: s.map(|s| s.median_ci95.1),
            mean_ns: s.map(|s| s.mean),
            stddev_ns: s.map(|s| s.stddev),
            cv: s.map(|s| s.cv),
            min_ns: s.map(|s| s.min),
            p90_ns: s.map(|s| s.p90),
            p99_ns: s.map(|s| s.p99),
            max_ns: s.map(|s| s.max),
            loop_median_ns: m.map(|m| m.overhead.summary.median),
            batch_iters: m.map(|m| m.batch_iters),
            runtime: r.runtime.label(),
            insns_per_packet: r.instructions().map(|c| c.per_packet()),
            runs_per_event: a.map(|a| a.runs_per_event()),
            slowdown_ns: slowdown.map(|s| s.ns_per_event()),
            slowdown_ci95_low_ns: slowdown.map(|s| s.differences.median_ci95.0),
            slowdown_ci95_high_ns: slowdown.map(|s| s.differences.median_ci95.1),
            trigger_alone_ns: slowdown.map(|s| s.detached.median),
            tool_cpu_ns_per_event: a.and_then(|a| Some(a.tool.as_ref()?.cpu_ns_per_event)),
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::go_name;

    #[test]
    fn go_names_are_capitalised_words() {
        assert_eq!(go_name("xdp-lb"), "XdpLb");
        assert_eq!(go_name("lpm-trie"), "LpmTrie");
        assert_eq!(go_name("maps"), "Maps");
    }
}
