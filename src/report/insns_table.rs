//! Instruction counts (`run --metric insns`): per packet, the BPF
//! instructions the userspace runtime executed, helper calls and map
//! operations; with -v, each helper and map operation.

use std::fmt::Write as _;

use super::grid::{self, Grid};
use crate::record::{InstructionCount, LineCount, RunRecord, ScenarioRecord};

/// A count per packet, whole numbers without decimals (most paths).
pub fn per_packet(total: f64, packets: u64) -> String {
    let v = total / packets.max(1) as f64;
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.4}") }
}

fn insns(c: &InstructionCount) -> String {
    per_packet(c.body_insns as f64 - c.loop_insns as f64, c.packets)
}

/// A scenario's row of counts, or the reason it has none.
fn row(g: &mut Grid, r: &ScenarioRecord) {
    match r.instructions() {
        Some(c) => {
            let helpers: i64 = c.helpers.values().sum();
            let ops: i64 = c.map_ops.values().sum();
            g.row(vec![
                r.name.clone(),
                c.packets.to_string(),
                insns(c),
                per_packet(helpers as f64, c.packets),
                per_packet(ops as f64, c.packets),
            ]);
        }
        None => {
            let why = match (&r.unavailable, &r.error) {
                (Some(u), _) => format!("N/A ({u})"),
                (None, Some(e)) => e.clone(),
                (None, None) => "not counted".into(),
            };
            g.spanning(r.name.clone(), why);
        }
    }
}

/// Lines a profile shows unless verbose.
const HOTTEST_LINES: usize = 15;

/// `--profile`: the source lines, most instructions first (most time
/// first when time was sampled), and the helpers' share of the time.
fn profile(out: &mut String, c: &InstructionCount, verbose: bool) {
    if c.lines.is_empty() {
        return;
    }
    let total = (c.body_insns as f64 - c.loop_insns as f64).max(1.0);
    let time = c.time.as_ref().filter(|t| t.samples > 0);
    let time_share = |samples: u64| time.map(|t| 100.0 * samples as f64 / t.samples as f64);
    if let Some(t) = time {
        let b = &t.batches;
        let _ = writeln!(
            out,
            "      time: {} samples ({} more outside the program) over {} batches in the userspace JIT, {:.1} ns/packet (median, 95% CI [{:.1}, {:.1}]); shares within ±{:.1} points (95%, binomial)",
            t.samples,
            t.outside,
            b.n,
            b.median,
            b.median_ci95.0,
            b.median_ci95.1,
            crate::stats::share_halfwidth_95(t.samples)
        );
        for (helper, n) in t.helpers.iter().chain(&t.map_ops) {
            let share = 100.0 * *n as f64 / t.samples as f64;
            let _ = writeln!(
                out,
                "      in {helper:<37} {share:>5.1}% of the time, {:.1} ns/packet",
                share / 100.0 * b.median
            );
        }
    }
    let mut lines: Vec<&LineCount> = c.lines.iter().collect();
    lines.sort_by(|a, b| b.samples.cmp(&a.samples).then(b.insns.cmp(&a.insns)).then_with(|| a.at.cmp(&b.at)));
    let shown = if verbose { lines.len() } else { lines.len().min(HOTTEST_LINES) };
    let w = lines[..shown].iter().map(|l| l.at.len()).max().unwrap_or(4).max(4);
    let time_head = if time.is_some() { format!(" {:>6} {:>9}", "time", "ns/packet") } else { String::new() };
    let _ = writeln!(out, "      {:<w$} {:>12} {:>6}{time_head}  source", "line", "insns/packet", "share");
    for l in &lines[..shown] {
        let share = 100.0 * l.insns as f64 / total;
        let timed = match (time_share(l.samples), time) {
            (Some(ts), Some(t)) => format!(" {ts:>5.1}% {:>9.1}", ts / 100.0 * t.batches.median),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "      {:<w$} {:>12} {share:>5.1}%{timed}  {}",
            l.at,
            per_packet(l.insns as f64, c.packets),
            l.text
        );
    }
    if shown < lines.len() {
        let rest: i64 = lines[shown..].iter().map(|l| l.insns).sum();
        let rest_time = time_share(lines[shown..].iter().map(|l| l.samples).sum())
            .map(|t| format!(" and {t:.1}% of the time"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "      ... {} more lines, {:.1}% of the instructions{rest_time} (-v shows every line)",
            lines.len() - shown,
            100.0 * rest as f64 / total
        );
    }
}

/// The whole run as text.
pub fn render_run(run: &RunRecord, verbose: bool) -> String {
    let mut out = format!(
        "bpfbench {}: BPF instructions per packet, counted by the userspace runtime (the same on every run and machine)\n",
        run.environment.bpfbench_version
    );
    let mut groups: Vec<&str> = Vec::new();
    for r in &run.results {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    let mut grid = Grid::new(vec![
        grid::left("scenario"),
        grid::right("packets"),
        grid::right("insns/packet"),
        grid::right("helpers/packet"),
        grid::right("map ops/packet"),
    ]);
    for g in groups {
        grid.section(g);
        for r in run.results.iter().filter(|r| r.group == g) {
            row(&mut grid, r);
            if let Some(c) = r.instructions() {
                let mut detail = String::new();
                if verbose || !c.lines.is_empty() {
                    for (name, n) in c.helpers.iter().chain(&c.map_ops) {
                        let _ = writeln!(detail, "      {name:<40} {:>10} /packet", per_packet(*n as f64, c.packets));
                    }
                }
                profile(&mut detail, c, verbose);
                detail.lines().for_each(|l| grid.note(l));
            }
        }
    }
    out.push_str(&grid.plain());
    if run.results.iter().any(|r| r.instructions().is_some_and(|c| !c.lines.is_empty())) {
        out.push_str("\nline: the body's instructions per packet on that source line less the empty loop's (lines of the batch loop mostly cancel out); share: of insns/packet.\n");
        out.push_str("time: the share of the sampling profiler's samples (every 97 us, in the body's timed batches in the JIT) in that line's code or in helpers it called; ns/packet: that share of the batches' median ns/packet, the loop's own cost included.\n");
    }
    out.push_str("\ninsns/packet: instructions of N iterations of the body (2N less N), less as many of the empty loop; paths that move the packet head include the loop's restore of it.\n");
    if run.interrupted {
        out.push_str("\ninterrupted: the results above are those finished before Ctrl-C\n");
    }
    out
}
