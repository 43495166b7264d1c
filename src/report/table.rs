//! Text output: one table per scenario group, as the selftests' run script
//! prints them, with the loop's own cost beside every result; `-v` adds
//! validation, calibration and a histogram per scenario.

use std::fmt::Write as _;

use crate::record::{LoopConstruct, RunRecord, Runtime, ScenarioRecord, Timing};
use crate::stats::render_histogram;

const NAME_W: usize = 34;
const COLS: [(&str, usize); 9] = [
    ("n", 6),
    ("p50", 10),
    ("stddev", 9),
    ("CV", 8),
    ("min", 10),
    ("p90", 10),
    ("p99", 10),
    ("max", 10),
    ("loop p50", 10),
];

fn rule() -> String {
    let mut s = format!("+{}", "-".repeat(NAME_W));
    for (_, w) in COLS {
        s.push('+');
        s.push_str(&"-".repeat(w));
    }
    s + "+\n"
}

fn row(name: &str, cells: &[String]) -> String {
    let mut s = format!("| {:<w$} ", name, w = NAME_W - 2);
    for ((_, w), c) in COLS.iter().zip(cells) {
        let _ = write!(s, "| {:>w$} ", c, w = w - 2);
    }
    s + "|\n"
}

/// The line that says a run's times are an emulator's (a guest under TCG),
/// or nothing.
pub(super) fn emulation_note(env: &crate::record::Environment) -> String {
    match &env.guest {
        Some(g) if g.emulated() => format!(
            "EMULATED: a guest of {} under QEMU's TCG; its times are the emulator's, not the hardware's (validation, verifier and JIT figures stay exact)\n",
            g.image
        ),
        _ => String::new(),
    }
}

/// A row's label: the scenario, marked when it was timed per call or ran
/// in the userspace runtime.
pub(super) fn label(r: &ScenarioRecord) -> String {
    let name = match r.runtime {
        Runtime::Kernel => r.name.clone(),
        Runtime::User => format!("{} (user)", r.name),
    };
    match r.timing {
        Timing::MAY_GOTO => name,
        ref other => format!("{name} ({})", other.label()),
    }
}

fn scenario_row(r: &ScenarioRecord) -> String {
    match &r.measurement {
        Some(m) => {
            let s = &m.summary;
            let f = |v: f64| format!("{v:.2}");
            row(
                &label(r),
                &[
                    s.n.to_string(),
                    f(s.p50),
                    f(s.stddev),
                    format!("{:.2}%", s.cv * 100.0),
                    f(s.min),
                    f(s.p90),
                    f(s.p99),
                    f(s.max),
                    f(m.overhead.summary.p50),
                ],
            )
        }
        None => {
            let why = match &r.unavailable {
                Some(_) => "N/A (see below)",
                None if r.validated => "MEASUREMENT FAILED",
                None => "VALIDATION FAILED",
            };
            let mut s = format!("| {:<w$} ", label(r), w = NAME_W - 2);
            let width: usize = COLS.iter().map(|(_, w)| w + 1).sum::<usize>() - 1;
            let _ = write!(s, "| {:<w$} ", why, w = width - 2);
            s + "|\n"
        }
    }
}

pub(crate) fn details(r: &ScenarioRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nScenario: {} - {}", r.name, r.description);
    if let Some(why) = &r.unavailable {
        let _ = writeln!(out, "  N/A: {why}");
    } else if r.validated {
        let _ = writeln!(out, "  Validation: PASS ({})", r.verdict.as_deref().unwrap_or("?"));
        for c in &r.checks {
            let _ = writeln!(out, "    {c}");
        }
        for n in &r.notes {
            let _ = writeln!(out, "  {n}");
        }
    }
    if let Some(m) = &r.measurement {
        let s = &m.summary;
        let _ = writeln!(
            out,
            "  Calibration: {:.1} ns/op, batch_iters={} (~{:.1} ms/batch)",
            m.calibration.estimate_ns_per_op,
            m.batch_iters,
            m.calibration.estimate_ns_per_op * m.batch_iters as f64 / 1e6
        );
        let c = &m.calibration;
        let interval = match c.proportionality_ci {
            Some((lo, hi)) => format!(", 95% CI {lo:.3}-{hi:.3} over {} pairs", c.proportionality_pairs),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "  Proportionality check: 2N/N ratio={:.4}{interval} ({})",
            c.proportionality_ratio,
            if c.proportional { "ok" } else { "OFF" }
        );
        match &r.timing {
            Timing::InBpf { construct, body, why_called } => {
                let _ = writeln!(
                    out,
                    "  In-BPF timing ({} loop, body {}): {} samples, {} ops/batch",
                    construct.as_str(),
                    body.as_str(),
                    s.n,
                    m.batch_iters
                );
                if let Some(why) = why_called {
                    let _ = writeln!(out, "    called, not inline: {why}");
                }
            }
            Timing::Chain { tail_calls, per_run } => {
                let _ = writeln!(
                    out,
                    "  In-BPF timing of a chain (entered by a tail call from a bounded loop; {tail_calls} tail calls per pass, {per_run} passes per test run): {} samples, {} ops/batch",
                    s.n, m.batch_iters
                );
            }
            Timing::PerCall { reason, host_timed } => {
                let who = if *host_timed { "host-timed" } else { "kernel-timed" };
                let _ = writeln!(
                    out,
                    "  Per-call timing ({who} BPF_PROG_TEST_RUN per packet), because {reason}: {} samples",
                    s.n
                );
            }
            Timing::Traced { function } => {
                let _ = writeln!(out, "  Timed by fentry/fexit on {function}: {} samples", s.n);
            }
        }
        let _ = writeln!(
            out,
            "    median {:.2} ns/op (95% CI {:.2}..{:.2}), stddev {:.2}, CV {:.2}% [min {:.2}, max {:.2}]",
            s.median,
            s.median_ci95.0,
            s.median_ci95.1,
            s.stddev,
            s.cv * 100.0,
            s.min,
            s.max
        );
        let _ = writeln!(
            out,
            "    p50 {:.2}, p75 {:.2}, p90 {:.2}, p95 {:.2}, p99 {:.2}",
            s.p50, s.p75, s.p90, s.p95, s.p99
        );
        if s.outliers_low + s.outliers_high > 0 {
            let _ = writeln!(out, "    outliers (kept): {} low, {} high", s.outliers_low, s.outliers_high);
        }
        if let Some(note) = s.skew_note() {
            let _ = writeln!(out, "    NOTE: {note}");
        }
        let b = &m.overhead;
        let _ = writeln!(
            out,
            "  Loop overhead [{}]: median {:.2} ns/op, CV {:.2}%, {} samples of {} iterations (included above, not subtracted)",
            b.key,
            b.summary.median,
            b.summary.cv * 100.0,
            b.summary.n,
            b.batch_iters
        );
        let _ = writeln!(out, "\n  Distribution (ns/op):");
        out.push_str(&render_histogram(&m.samples_ns));
    }
    out
}

/// The whole run as text.
pub fn render_run(report: &RunRecord, verbose: bool) -> String {
    let mut out = String::new();
    let mut groups: Vec<&str> = Vec::new();
    for r in &report.results {
        if !groups.contains(&r.group.as_str()) {
            groups.push(&r.group);
        }
    }
    if verbose {
        for r in &report.results {
            out.push_str(&details(r));
        }
        out.push('\n');
    }
    let other_modes = report.results.iter().any(|r| r.timing != Timing::MAY_GOTO);
    let _ = writeln!(
        out,
        "bpfbench {} on {} (kernel {}), CPU {}; ns/op measured inside BPF{}",
        report.environment.bpfbench_version,
        report.environment.cpu_model,
        report.environment.kernel,
        report.environment.cpu,
        if other_modes { " (may_goto loop), except rows marked with their mode" } else { "" }
    );
    out.push_str(&emulation_note(&report.environment));
    for g in &groups {
        out.push_str(&rule());
        out.push_str(&row(g, &COLS.map(|(n, _)| n.to_string())));
        out.push_str(&rule());
        for r in report.results.iter().filter(|r| r.group == *g) {
            out.push_str(&scenario_row(r));
        }
    }
    if !groups.is_empty() {
        out.push_str(&rule());
    }
    out.push_str("loop p50: the timing loop's own ns/op (empty body, same reset block), measured in this run and included in p50.\n");
    out.push_str(&super::runtime_table::render(report));
    if report
        .results
        .iter()
        .any(|r| matches!(r.timing.construct(), Some(LoopConstruct::BpfLoop | LoopConstruct::Bounded)))
    {
        out.push_str(
            "(bpf_loop), (bounded loop): timed in BPF with the loop this kernel has instead of may_goto; loop p50 is that loop's own cost.\n",
        );
    }
    if report.results.iter().any(|r| matches!(r.timing, Timing::PerCall { host_timed: true, .. })) {
        out.push_str(
            "(per call, host-timed): the kernel reports no time for raw tracepoint and syscall test runs, so the host times each BPF_PROG_TEST_RUN around its system call; loop p50 is an empty program's, timed the same way. Not comparable with in-BPF or kernel-timed figures.\n",
        );
    }
    if report.results.iter().any(|r| matches!(r.timing, Timing::PerCall { host_timed: false, .. })) {
        out.push_str(
            "(per call): one BPF_PROG_TEST_RUN per packet, timed by the kernel around the program; loop p50 is then an empty program's test run. Not comparable with in-BPF figures.\n",
        );
    }
    for r in &report.results {
        if let Timing::PerCall { reason, .. } = &r.timing {
            let _ = writeln!(out, "{}: timed per call because {reason}", label(r));
        }
        if let Some(why) = &r.unavailable {
            let _ = writeln!(out, "\n{}: N/A ({why})", label(r));
        }
        if let Some(e) = &r.error {
            let _ = writeln!(out, "\n{}: {}", label(r), e);
        }
        if let Some(m) = &r.measurement {
            for w in &m.warnings {
                let _ = writeln!(out, "warning: {}: {w}", label(r));
            }
        }
    }
    if report.interrupted {
        out.push_str("\ninterrupted: the results above are those finished before Ctrl-C\n");
    }
    out
}
