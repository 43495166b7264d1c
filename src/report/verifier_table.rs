//! `bpfbench verifier` output: per program, whether it loads and what the
//! verifier reported; with two objects, side by side with deltas, as
//! veristat's compare mode shows them.

use std::fmt::Write as _;

use anyhow::Result;
use serde::Serialize;

use crate::record::verifier::{ObjectVerification, ProgramVerification, VerifierReport};

/// One figure of a program, as a number to show and compare.
struct Metric {
    name: &'static str,
    get: fn(&ProgramVerification) -> Option<u64>,
}

const METRICS: [Metric; 7] = [
    Metric { name: "insns", get: |p| p.stats.processed_insns },
    Metric { name: "total states", get: |p| p.stats.total_states },
    Metric { name: "peak states", get: |p| p.stats.peak_states },
    Metric { name: "stack", get: |p| p.stats.stack_depth.as_ref().map(|d| d.iter().map(|&x| u64::from(x)).sum()) },
    Metric { name: "time us", get: |p| p.stats.verification_time_us },
    Metric { name: "xlated", get: |p| p.size.map(|s| u64::from(s.xlated_bytes)) },
    Metric { name: "jited", get: |p| p.size.map(|s| u64::from(s.jited_bytes)) },
];

fn verdict(p: &ProgramVerification) -> &'static str {
    if p.loaded { "loads" } else { "refused" }
}

fn show(v: Option<u64>) -> String {
    v.map_or_else(|| "-".into(), |v| v.to_string())
}

fn one(out: &mut String, o: &ObjectVerification) {
    let _ = writeln!(out, "{}", o.path);
    let w = o.programs.iter().map(|p| p.name.len()).max().unwrap_or(7).max(7);
    let _ = write!(out, "  {:<w$}  {:<10}  {:<7}", "program", "type", "verdict");
    for m in &METRICS {
        let _ = write!(out, "  {:>12}", m.name);
    }
    out.push('\n');
    for p in &o.programs {
        let _ = write!(out, "  {:<w$}  {:<10}  {:<7}", p.name, p.prog_type, verdict(p));
        for m in &METRICS {
            let _ = write!(out, "  {:>12}", show((m.get)(p)));
        }
        out.push('\n');
        if let Some(e) = &p.error {
            let _ = writeln!(out, "  {:<w$}  refused: {e}", "");
        }
    }
}

fn delta(a: Option<u64>, b: Option<u64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => {
            let d = b as i128 - a as i128;
            let pct = if a > 0 { format!(", {:+.1}%", d as f64 * 100.0 / a as f64) } else { String::new() };
            format!("{a} -> {b} ({d:+}{pct})")
        }
        (a, b) => format!("{} -> {}", show(a), show(b)),
    }
}

fn compared(out: &mut String, a: &ObjectVerification, b: &ObjectVerification) {
    let _ = writeln!(out, "A: {}\nB: {}", a.path, b.path);
    let mut names: Vec<&str> = a.programs.iter().map(|p| p.name.as_str()).collect();
    names.extend(b.programs.iter().map(|p| p.name.as_str()).filter(|n| !a.programs.iter().any(|p| p.name == *n)));
    for name in names {
        let (pa, pb) = (a.programs.iter().find(|p| p.name == name), b.programs.iter().find(|p| p.name == name));
        let vd = |p: Option<&ProgramVerification>| p.map_or("absent", verdict);
        let _ = writeln!(out, "{name}: {} -> {}", vd(pa), vd(pb));
        for m in &METRICS {
            let _ = writeln!(out, "  {:<13} {}", m.name, delta(pa.and_then(m.get), pb.and_then(m.get)));
        }
        for (side, p) in [("A", pa), ("B", pb)] {
            if let Some(e) = p.and_then(|p| p.error.as_ref()) {
                let _ = writeln!(out, "  {side} refused: {e}");
            }
        }
    }
}

/// The report as text: one object's table, or A against B.
pub fn render(report: &VerifierReport) -> String {
    let mut out = String::new();
    match report.objects.as_slice() {
        [a, b] => compared(&mut out, a, b),
        objects => objects.iter().for_each(|o| one(&mut out, o)),
    }
    out.push_str("insns: instructions the verifier processed; states: verifier states (total, peak); stack: bytes over all frames; xlated/jited: program bytes.\n");
    out
}

#[derive(Serialize)]
struct Row<'a> {
    object: &'a str,
    program: &'a str,
    section: &'a str,
    prog_type: &'a str,
    loaded: bool,
    error: &'a str,
    processed_insns: Option<u64>,
    total_states: Option<u64>,
    peak_states: Option<u64>,
    max_states_per_insn: Option<u64>,
    stack_depth: String,
    verification_time_us: Option<u64>,
    xlated_bytes: Option<u32>,
    jited_bytes: Option<u32>,
}

/// One CSV row per object and program.
pub fn csv(report: &VerifierReport) -> Result<String> {
    super::csv_of(report.objects.iter().flat_map(|o| {
        o.programs.iter().map(move |p| Row {
            object: &o.path,
            program: &p.name,
            section: &p.section,
            prog_type: &p.prog_type,
            loaded: p.loaded,
            error: p.error.as_deref().unwrap_or(""),
            processed_insns: p.stats.processed_insns,
            total_states: p.stats.total_states,
            peak_states: p.stats.peak_states,
            max_states_per_insn: p.stats.max_states_per_insn,
            stack_depth: p
                .stats
                .stack_depth
                .as_ref()
                .map(|d| d.iter().map(u32::to_string).collect::<Vec<_>>().join("+"))
                .unwrap_or_default(),
            verification_time_us: p.stats.verification_time_us,
            xlated_bytes: p.size.map(|s| s.xlated_bytes),
            jited_bytes: p.size.map(|s| s.jited_bytes),
        })
    }))
}
