//! `fuzz-uvm`'s summary: how many programs ran, how they ended, and the
//! kinds of error met most (the panics are the caller's to report).

use std::fmt::Write;

use crate::record::probes::FuzzReport;

/// The summary of a fuzzing run whose mutated programs came from `bases`.
pub fn render(r: &FuzzReport, bases: &[String]) -> String {
    let mut out = format!(
        "{} programs ({} random, {} mutated from xdp-lb's {}) in {:.1} s, {} instructions executed\n",
        r.programs,
        r.random,
        r.mutated,
        bases.join(" and "),
        r.elapsed.as_secs_f64(),
        r.insns
    );
    let _ = writeln!(
        out,
        "  {} ran to their exit; {} stopped with an error naming the instruction ({} by the budget)",
        r.finished, r.refused, r.budget_spent
    );
    let mut kinds: Vec<(&String, &u64)> = r.kinds.iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(a.1));
    for (kind, n) in kinds.iter().take(8) {
        let _ = writeln!(out, "    {n:>9}  {kind}");
    }
    if r.panics.is_empty() {
        out.push_str("  no crash, no hang\n");
    }
    out
}
