//! Change points (`bpfbench changes`) as text and as Markdown.

use std::fmt::Write as _;

use crate::record::changes::{Change, ChangesRecord, Point};

/// "run 17 (abc123, tag main)".
fn run_label(p: &Point) -> String {
    match &p.stamp.tag {
        Some(t) => format!("run {} ({}, tag {t})", p.stamp.run, p.stamp.git_commit),
        None => format!("run {} ({})", p.stamp.run, p.stamp.git_commit),
    }
}

/// A segment's median of run medians with its runs' spread: "108.20 (±2.8 %)".
fn segment(median: f64, spread: Option<f64>) -> String {
    match spread {
        Some(s) => format!("{median:.2} (±{:.1} %)", s * 100.0),
        None => format!("{median:.2}"),
    }
}

fn size(c: &Change) -> String {
    format!("{:+.1} %", (c.ratio - 1.0) * 100.0)
}

fn paired_line(c: &Change) -> Vec<String> {
    c.paired
        .iter()
        .map(|e| {
            format!(
                "ab {}: {} vs {}, B/A {:.4} [{:.4}, {:.4}] over {} loads, {} pairs: {}",
                e.id, e.a, e.b, e.ratio, e.ratio_ci95.0, e.ratio_ci95.1, e.rounds, e.pairs, e.verdict
            )
        })
        .collect()
}

/// Series without a change named in the text form; more are counted.
const QUIET_NAMED: usize = 5;

pub fn render(rec: &ChangesRecord) -> String {
    let mut out = format!("Change points in {} ({})\n", rec.selection, rec.method);
    for s in rec.series.iter().filter(|s| !s.changes.is_empty()) {
        let _ = writeln!(
            out,
            "\n{} on {}: {} runs, {}",
            s.benchmark,
            s.place(),
            s.points.len(),
            match s.changes.len() {
                1 => "1 change".to_string(),
                n => format!("{n} changes"),
            }
        );
        for c in &s.changes {
            let _ = writeln!(
                out,
                "  {} -> {}: {} -> {} ns/op ({}), p = {:.3}, {} | {} runs",
                run_label(&c.before),
                run_label(&c.after),
                segment(c.median_before, c.spread_before),
                segment(c.median_after, c.spread_after),
                size(c),
                c.p_value,
                c.runs_before,
                c.runs_after
            );
            for p in [&c.before, &c.after] {
                if let Some((lo, hi)) = p.ci95_ns {
                    let _ = writeln!(out, "    run {}: {:.2} [{lo:.2}, {hi:.2}] ns/op", p.stamp.run, p.median_ns);
                }
            }
            for line in c.environment_changes.iter().map(|e| format!("changed: {e}")).chain(paired_line(c)) {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    // A block per series without a change buried the changes (68 of them
    // on a small history): they are one line.
    let quiet: Vec<String> = rec
        .series
        .iter()
        .filter(|s| s.changes.is_empty())
        .map(|s| format!("{} on {} ({} runs)", s.benchmark, s.place(), s.points.len()))
        .collect();
    if !quiet.is_empty() {
        let more = quiet.len().saturating_sub(QUIET_NAMED);
        let _ = writeln!(
            out,
            "\n{} series without a change: {}{}",
            quiet.len(),
            quiet[..quiet.len() - more].join(", "),
            if more > 0 { format!(" and {more} more (--format json lists them)") } else { String::new() }
        );
    }
    let _ = writeln!(out, "\n{} series, {} change(s)", rec.series.len(), rec.change_count());
    out
}

/// The changes as a Markdown table a pull request comment can hold (series
/// without a change are counted under it, not listed).
pub fn markdown(rec: &ChangesRecord) -> String {
    let cell = super::markdown_cell;
    let mut out = format!("**bpfbench changes** in {}\n\n", cell(&rec.selection));
    if rec.change_count() > 0 {
        out +=
            "| benchmark | testbed | from | to | median before | median after | change | p | runs | also changed |\n";
        out += "|---|---|---|---|---:|---:|---:|---:|---|---|\n";
        for s in &rec.series {
            for c in &s.changes {
                let also: Vec<String> =
                    c.environment_changes.iter().cloned().chain(paired_line(c)).map(|l| cell(&l)).collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | **{}** | {:.3} | {} / {} | {} |",
                    cell(&s.benchmark),
                    cell(&s.place()),
                    cell(&run_label(&c.before)),
                    cell(&run_label(&c.after)),
                    segment(c.median_before, c.spread_before),
                    segment(c.median_after, c.spread_after),
                    size(c),
                    c.p_value,
                    c.runs_before,
                    c.runs_after,
                    if also.is_empty() { "-".to_string() } else { also.join("; ") }
                );
            }
        }
    }
    let quiet = rec.series.iter().filter(|s| s.changes.is_empty()).count();
    if rec.change_count() > 0 {
        out += "\n";
    }
    let _ = writeln!(
        out,
        "{} change(s) in {} series; {quiet} series without a change. Method: {}.",
        rec.change_count(),
        rec.series.len(),
        rec.method
    );
    out
}
