//! Text output of operation benchmarks (the map workloads): one line per
//! operation in the shape of the kernel selftests' LPM-trie bench
//! ("throughput X ± Y M ops/s (Z M ops/prod), latency W ns/op") plus the
//! sample count, then, for several map types or sizes, a matrix (map type x
//! op) per size and a size sweep per op.

use std::fmt::Write as _;

use crate::record::{MapFacts, RunRecord, Runtime, ScenarioRecord, Unit};
use crate::stats::Summary;

/// `ops_per_s` in the largest unit that keeps it at or above 1.
fn rate(ops_per_s: f64) -> (f64, &'static str) {
    scaled(ops_per_s, ["M", "K", " "])
}

fn duration(ns: f64) -> (f64, &'static str) {
    scaled(ns, ["ms", "us", "ns"])
}

/// `x` in millions, thousands or ones, the largest that keeps it at or
/// above 1, with that unit's name.
fn scaled(x: f64, [millions, thousands, ones]: [&'static str; 3]) -> (f64, &'static str) {
    if x >= 1e6 {
        (x / 1e6, millions)
    } else if x >= 1e3 {
        (x / 1e3, thousands)
    } else {
        (x, ones)
    }
}

/// One line in the selftests' shape, per operation as the matrices, `ab`
/// and the history give it (for `drain`, per deleted key), with what a
/// whole map took where the scenario's unit is one. Throughput is total
/// over producers.
fn seed_line(r: &ScenarioRecord, label_w: usize) -> String {
    let label = format!("{:>label_w$}", super::table::label_with_timing(r));
    if let Some(why) = &r.unavailable {
        return format!("{label}: N/A ({why})\n");
    }
    let Some(m) = r.measurement() else {
        let why = r.error.as_deref().unwrap_or("no result");
        return format!("{label}: FAILED ({why})\n");
    };
    let producers = f64::from(r.facts.producers);
    // Throughput per sample, so its spread is the spread of throughput.
    let tput: Vec<f64> = m.samples_ns.iter().map(|ns| producers * 1e9 / ns).collect();
    let sd = Summary::of(&tput).map_or(0.0, |t| t.stddev);
    let total = producers * 1e9 / m.summary.median;
    let (t, tu) = rate(total);
    let (p, pu) = rate(total / producers);
    let (lat, lu) = duration(m.summary.median);
    let whole = match r.facts.unit {
        Unit::Op => String::new(),
        Unit::Map { keys } => {
            let (w, wu) = duration(m.summary.median * keys as f64);
            format!("; {w:.3} {wu} per map of {keys} keys")
        }
    };
    format!(
        "{label}: throughput {t:8.3} ± {:.3} {tu} ops/s ({p:7.3}{pu} ops/prod), latency {lat:8.3} {lu}/op  (n={}{whole})\n",
        sd / (total / t),
        m.summary.n
    )
}

fn cell(r: Option<&&ScenarioRecord>) -> String {
    match r {
        None => "-".into(),
        Some(r) if r.unavailable.is_some() => "n/a".into(),
        Some(r) => match r.measurement() {
            Some(m) => format!("{:.1}", m.summary.median),
            None => "FAILED".into(),
        },
    }
}

fn grid(out: &mut String, title: &str, rows: &[String], cols: &[String], get: impl Fn(&str, &str) -> String) {
    let mut columns = vec![super::grid::left(title)];
    columns.extend(cols.iter().map(|c| super::grid::right(c.as_str())));
    let mut g = super::grid::Grid::new(columns);
    for r in rows {
        let mut cells = vec![r.clone()];
        cells.extend(cols.iter().map(|c| get(r, c)));
        g.row(cells);
    }
    out.push_str(&g.plain());
}

/// Distinct values of `field` over the map scenarios, in first-seen order.
fn distinct(rs: &[&ScenarioRecord], field: impl Fn(&MapFacts) -> String) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for m in rs.iter().filter_map(|r| r.facts.map.as_ref()) {
        let x = field(m);
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

/// How a title names the runtime its figures come from.
fn runtime_label(runtime: Runtime) -> &'static str {
    match runtime {
        Runtime::Kernel => ", kernel",
        Runtime::User => ", userspace runtime",
    }
}

/// Matrix (map type x op) per size, then latency against size per op;
/// `whose` names the runtime in the titles where a run has two.
fn matrices(out: &mut String, rs: &[&ScenarioRecord], whose: &str) {
    let maps = distinct(rs, |m| m.map_type.clone());
    let ops = distinct(rs, |m| m.op.clone());
    let sizes = distinct(rs, |m| m.entries.to_string());
    let find = |map: &str, op: &str, e: &str| {
        rs.iter().find(|r| {
            r.facts.map.as_ref().is_some_and(|m| m.map_type == map && m.op == op && m.entries.to_string() == e)
        })
    };
    let rows: Vec<String> = maps.iter().map(|s| s.to_string()).collect();
    for e in &sizes {
        let _ = writeln!(out, "\nMedian latency, ns/op, {e} entries{whose} (map type x operation):");
        let cols: Vec<String> = ops.iter().map(|s| s.to_string()).collect();
        grid(out, "map", &rows, &cols, |m, o| cell(find(m, o, e)));
    }
    if sizes.len() > 1 {
        for op in &ops {
            let _ = writeln!(out, "\nMedian {op} latency, ns/op, by entries{whose}:");
            let cols: Vec<String> = sizes.iter().map(|s| s.to_string()).collect();
            grid(out, "map", &rows, &cols, |m, e| cell(find(m, op, e)));
        }
    }
}

pub fn render_run(report: &RunRecord, verbose: bool) -> String {
    let mut out = String::new();
    if verbose {
        for r in &report.results {
            out.push_str(&super::table::details(r));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "bpfbench {} on {} (kernel {}), CPU {}; time measured inside BPF",
        report.environment.bpfbench_version,
        report.environment.cpu_model,
        report.environment.kernel,
        report.environment.cpu
    );
    out.push_str(&super::table::emulation_note(&report.environment));
    let rs: Vec<&ScenarioRecord> = report.results.iter().collect();
    let label_w = rs.iter().map(|r| super::table::label_with_timing(r).len()).max().unwrap_or(9).max(9);
    for r in &rs {
        out.push_str(&seed_line(r, label_w));
    }
    // Each runtime's figures apart: a matrix mixing them would compare nothing.
    for runtime in [Runtime::Kernel, Runtime::User] {
        let mine: Vec<&ScenarioRecord> = rs.iter().copied().filter(|r| r.runtime == runtime).collect();
        let whose = if mine.len() == rs.len() { "" } else { runtime_label(runtime) };
        // A matrix pays off once there is more than one map type or size.
        let several = |f: fn(&MapFacts) -> String| distinct(&mine, f).len() > 1;
        if several(|m| m.map_type.clone()) || several(|m| m.entries.to_string()) {
            matrices(&mut out, &mine, whose);
        }
        if let Some(loop_ns) = mine.iter().find_map(|r| r.measurement().map(|m| m.overhead.summary.median)) {
            let _ = writeln!(
                out,
                "\nHarness loop alone{whose} (empty call): {loop_ns:.2} ns/op, included in every latency above (noop shows it too)."
            );
        }
    }
    out.push_str(&super::runtime_table::render(report));
    for r in &rs {
        let label = super::table::label_with_timing(r);
        if let (Some(e), None) = (&r.error, &r.unavailable) {
            let _ = writeln!(out, "{label}: {e}");
        }
        for w in r.measurement().iter().flat_map(|m| &m.warnings) {
            let _ = writeln!(out, "warning: {label}: {w}");
        }
    }
    out.push_str(&super::table::noise_summary(&report.results, report.environment.cpu, verbose));
    out.push_str(&super::table::shared_cpu_warning(&report.environment));
    if report.interrupted {
        out.push_str("\ninterrupted: the results above are those finished before Ctrl-C\n");
    }
    out
}
