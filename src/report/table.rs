//! Text output: one table per scenario group, as the selftests' run script
//! prints them, with the loop's own cost beside every result; `-v` adds
//! validation, calibration and a histogram per scenario.

use std::fmt::Write as _;

use super::grid::{self, Grid};
use crate::record::{LoopConstruct, Noise, RunRecord, Runtime, ScenarioRecord, Timing};
use crate::stats::render_histogram;

/// The figures' columns after the name (and the timing column, where rows differ in it).
const FIGURES: [&str; 9] = ["n", "p50", "stddev", "CV", "min", "p90", "p99", "max", "loop p50"];

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

/// A row's label: the scenario, marked when it ran in the userspace runtime.
pub(super) fn label(r: &ScenarioRecord) -> String {
    match r.runtime {
        Runtime::Kernel => r.name.clone(),
        Runtime::User => format!("{} (user)", r.name),
    }
}

/// The label with the timing mode where it is not the may_goto loop
/// (lines that are not in a table with a timing column).
pub(super) fn label_with_timing(r: &ScenarioRecord) -> String {
    match r.timing {
        Timing::MAY_GOTO => label(r),
        ref other => format!("{} ({})", label(r), other.label()),
    }
}

/// The timing most rows share: described once in the heading, and a
/// column only when some row differs.
fn common_timing(results: &[ScenarioRecord]) -> Option<&Timing> {
    let mut counts: Vec<(&Timing, usize)> = Vec::new();
    for r in results.iter().filter(|r| r.validated) {
        match counts.iter_mut().find(|(t, _)| t.label() == r.timing.label()) {
            Some((_, n)) => *n += 1,
            None => counts.push((&r.timing, 1)),
        }
    }
    // The first of the most common, so ties go to the first row's.
    let most = counts.iter().map(|(_, n)| *n).max()?;
    counts.iter().find(|(_, n)| *n == most).map(|(t, _)| *t)
}

/// How the heading says a run was timed.
fn describe(t: &Timing) -> String {
    match t {
        Timing::InBpf { construct, body, .. } => {
            let looped = match construct {
                LoopConstruct::MayGoto => "may_goto loop",
                LoopConstruct::BpfLoop => "bpf_loop helper",
                LoopConstruct::Bounded => "bounded loop",
            };
            let body = match body {
                crate::record::Body::Call => "body called",
                crate::record::Body::Inline => "body inline",
            };
            format!("timed inside BPF ({looped}, {body})")
        }
        Timing::Chain { .. } => "timed inside BPF (a tail-call chain entered from a bounded loop)".into(),
        Timing::PerCall { host_timed: true, .. } => "timed per call (BPF_PROG_TEST_RUN, by the host)".into(),
        Timing::PerCall { .. } => "timed per call (BPF_PROG_TEST_RUN, by the kernel)".into(),
        Timing::Traced { function } => format!("timed by fentry/fexit on {function}"),
        Timing::BpfStats { .. } => "ns per run of programs attached on their hooks, from bpf_stats".into(),
    }
}

/// Which optional columns a run's table has.
#[derive(Clone, Copy)]
struct Columns {
    /// The timing mode, where rows differ in it.
    timing: bool,
    /// What a user's program did: verdict, bytes in and out, what was expected.
    outcome: bool,
    /// An attached program's runs per event of its trigger.
    attached: bool,
}

fn scenario_row(grid: &mut Grid, r: &ScenarioRecord, columns: Columns) {
    let mut cells = vec![label(r)];
    if columns.timing {
        cells.push(if r.validated { r.timing.label().to_string() } else { "-".into() });
    }
    if columns.outcome {
        let o = r.outcome.as_ref();
        cells.extend([
            r.verdict.clone().unwrap_or_else(|| "-".into()),
            o.and_then(|o| o.bytes).map_or_else(|| "-".into(), |b| b.to_string()),
            o.map_or_else(|| "-".into(), |o| o.expected.to_string()),
        ]);
    }
    if columns.attached {
        cells.push(r.attached.as_ref().map_or_else(|| "-".into(), |a| format!("{:.2}", a.runs_per_event())));
    }
    match r.measurement() {
        Some(m) => {
            let s = &m.summary;
            let f = |v: f64| format!("{v:.2}");
            cells.extend([
                s.n.to_string(),
                f(s.p50),
                f(s.stddev),
                format!("{:.2}%", s.cv * 100.0),
                f(s.min),
                f(s.p90),
                f(s.p99),
                f(s.max),
                f(m.overhead.summary.p50),
            ]);
            grid.row(cells);
        }
        None => {
            let why = match &r.unavailable {
                Some(_) => "N/A (see below)",
                None if r.validated => "MEASUREMENT FAILED",
                None => "VALIDATION FAILED",
            };
            grid.spanning(cells.remove(0), why);
        }
    }
}

/// The rows of the run as one grid, a section per scenario group.
fn run_grid(report: &RunRecord, groups: &[&str], columns: Columns) -> Grid {
    let mut headings = vec![grid::left("scenario")];
    if columns.timing {
        headings.push(grid::left("timing"));
    }
    if columns.outcome {
        headings.extend([grid::left("verdict"), grid::right("bytes"), grid::left("expected")]);
    }
    if columns.attached {
        headings.push(grid::right("runs/event"));
    }
    headings.extend(FIGURES.iter().map(|h| grid::right(*h)));
    let mut g = Grid::new(headings);
    for group in groups {
        g.section(*group);
        for r in report.results.iter().filter(|r| r.group == *group) {
            scenario_row(&mut g, r, columns);
        }
    }
    g
}

/// What the outcome columns mean, and the one line on cases that expected
/// nothing (their verdict may be an exit the user did not mean to time).
fn outcome_notes(results: &[ScenarioRecord]) -> String {
    let mut out = String::from(
        "verdict, bytes: what the program returned and its packets' sizes in -> out, as validation saw them; expected: what --expect, --expect-packet, --expect-map and --expect-flow-keys checked (ignored: what --ignore left out of every comparison).\n",
    );
    let unchecked: Vec<String> = results
        .iter()
        .filter(|r| r.validated && r.outcome.as_ref().is_some_and(|o| o.expected.nothing()))
        .map(|r| format!("{} ({})", label(r), r.verdict.as_deref().unwrap_or("?")))
        .collect();
    if !unchecked.is_empty() {
        let _ = writeln!(
            out,
            "nothing expected of {}: only that the program repeats its verdict and output was checked; if that is not the path you mean to time, say which with --expect (and --expect-packet), or expect = in a spec file.",
            unchecked.join(", ")
        );
    }
    out
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
    if let Some(m) = r.measurement() {
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
            Timing::BpfStats { point, trigger } => {
                let _ = writeln!(
                    out,
                    "  Attached at {point}, fired by {trigger}; bpf_stats' run_time_ns over run_cnt per batch: {} samples, {} events/batch",
                    s.n, m.batch_iters
                );
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
        if let Some(n) = &m.noise {
            let _ = writeln!(
                out,
                "    spread: CV {:.2}% against the empty loop's {:.2}% in the same sweeps; median uncertain by ±{:.2}% ({})",
                n.cv * 100.0,
                n.machine_cv * 100.0,
                n.median_uncertainty * 100.0,
                if n.noisier { "noisier than the machine" } else { "within what this machine does" }
            );
        }
        for o in &m.observations {
            let _ = writeln!(out, "    {o}");
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

/// One line on the rows that spread more than the machine did (the run's
/// empty loop), naming the first few; with `verbose`, a line per row.
pub(super) fn noise_summary(results: &[ScenarioRecord], cpu: usize, verbose: bool) -> String {
    let judged: Vec<(&ScenarioRecord, Noise)> =
        results.iter().filter_map(|r| r.measurement()?.noise.map(|n| (r, n))).collect();
    let noisy: Vec<&(&ScenarioRecord, Noise)> = judged.iter().filter(|(_, n)| n.noisier).collect();
    if noisy.is_empty() {
        return String::new();
    }
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let mut out = String::new();
    if verbose {
        for (r, n) in &noisy {
            let _ = writeln!(
                out,
                "noisy: {}: CV {} against the empty loop's {}; median uncertain by ±{}",
                label(r),
                pct(n.cv),
                pct(n.machine_cv),
                pct(n.median_uncertainty)
            );
        }
    }
    const NAMED: usize = 3;
    let mut named: Vec<String> =
        noisy.iter().take(NAMED).map(|(r, n)| format!("{} (±{})", label(r), pct(n.median_uncertainty))).collect();
    if noisy.len() > NAMED {
        named.push(format!("{} more", noisy.len() - NAMED));
    }
    let _ = writeln!(
        out,
        "warning: {} of {} rows spread more than this run's empty loop did (CV over {}x the loop's and over {}), their medians uncertain by more than ±{}: {}; was something else running on CPU {cpu}?{}",
        noisy.len(),
        judged.len(),
        Noise::FACTOR,
        pct(Noise::FLOOR),
        pct(Noise::UNCERTAIN),
        named.join(", "),
        if verbose { "" } else { " (-v: each row)" }
    );
    out
}

/// Other tasks' share of the run's CPU above which a run says so.
const SHARED_CPU_PERCENT: f64 = 10.0;

/// A line when other tasks used the run's CPU for much of the run. The
/// batches run with preemption off, so they are seldom cut into, but such
/// a task shares caches, branch predictors and the clock's speed with them.
pub(super) fn shared_cpu_warning(env: &crate::record::Environment) -> String {
    match env.others_percent {
        Some(p) if p > SHARED_CPU_PERCENT => format!(
            "warning: other tasks used {p:.0}% of CPU {}'s time during the run: the figures shared the CPU with them; measure on an idle CPU (--cpu)\n",
            env.cpu
        ),
        _ => String::new(),
    }
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
    let common = common_timing(&report.results);
    let timing_column =
        report.results.iter().any(|r| r.validated && Some(r.timing.label()) != common.map(Timing::label));
    let columns = Columns {
        timing: timing_column,
        outcome: report.results.iter().any(|r| r.outcome.is_some()),
        attached: report.results.iter().any(|r| r.attached.is_some()),
    };
    let how = match common {
        Some(t) if timing_column => format!(", {}, except where the timing column says otherwise", describe(t)),
        Some(t) => format!(", {}", describe(t)),
        None => String::new(),
    };
    let _ = writeln!(
        out,
        "bpfbench {} on {} (kernel {}), CPU {}; ns/op{how}",
        report.environment.bpfbench_version,
        report.environment.cpu_model,
        report.environment.kernel,
        report.environment.cpu,
    );
    out.push_str(&emulation_note(&report.environment));
    out.push_str(&run_grid(report, &groups, columns).boxed());
    if report.results.iter().any(|r| !matches!(r.timing, Timing::BpfStats { .. })) {
        out.push_str("loop p50: the timing loop's own ns/op (empty body, same reset block), measured in this run and included in p50.\n");
    }
    if columns.outcome {
        out.push_str(&outcome_notes(&report.results));
    }
    out.push_str(&super::attached_table::render(&report.results));
    out.push_str(&super::runtime_table::render(report));
    if report
        .results
        .iter()
        .any(|r| matches!(r.timing.construct(), Some(LoopConstruct::BpfLoop | LoopConstruct::Bounded)))
    {
        out.push_str(
            "bpf_loop, bounded loop: timed in BPF with the loop this kernel has instead of may_goto; loop p50 is that loop's own cost.\n",
        );
    }
    if report.results.iter().any(|r| matches!(r.timing, Timing::PerCall { host_timed: true, .. })) {
        out.push_str(
            "per call, host-timed: the kernel reports no time for raw tracepoint and syscall test runs, so the host times each BPF_PROG_TEST_RUN around its system call; loop p50 is an empty program's, timed the same way. Not comparable with in-BPF or kernel-timed figures.\n",
        );
    }
    if report.results.iter().any(|r| matches!(r.timing, Timing::PerCall { host_timed: false, .. })) {
        out.push_str(
            "per call: one BPF_PROG_TEST_RUN per packet, timed by the kernel around the program; loop p50 is then an empty program's test run. Not comparable with in-BPF figures.\n",
        );
    }
    out.push_str(&per_call_reasons(&report.results));
    out.push_str(&state_dependent_rows(&report.results));
    // Rows that cannot run for one reason (a spec not built, a program type
    // the userspace runtime lacks) share one line.
    for (why, rows) in by_reason(report.results.iter().filter_map(|r| Some((r.unavailable.as_deref()?, label(r))))) {
        let _ = writeln!(out, "\n{}: N/A ({why})", rows_phrase(&rows));
    }
    for r in &report.results {
        if let Some(e) = &r.error {
            let _ = writeln!(out, "\n{}: {}", label(r), e);
        }
        if let Some(m) = r.measurement() {
            for w in &m.warnings {
                let _ = writeln!(out, "warning: {}: {w}", label(r));
            }
        }
    }
    out.push_str(&noise_summary(&report.results, report.environment.cpu, verbose));
    out.push_str(&shared_cpu_warning(&report.environment));
    if report.interrupted {
        out.push_str("\ninterrupted: the results above are those finished before Ctrl-C\n");
    }
    out
}

/// Why rows were timed per call: one line a reason, naming its rows (a
/// test suite's fresh rows share one reason).
fn per_call_reasons(results: &[ScenarioRecord]) -> String {
    let reasons = by_reason(results.iter().filter_map(|r| match &r.timing {
        Timing::PerCall { reason, .. } => Some((reason.as_str(), label(r))),
        _ => None,
    }));
    let mut out = String::new();
    for (why, rows) in reasons {
        // "a, b: timed ..." names its rows; "14 rows (a, ...) timed ..." counts them.
        let sep = if rows.len() <= FEW_ROWS { ":" } else { "" };
        let _ = writeln!(out, "{}{sep} timed per call because {why}", rows_phrase(&rows));
    }
    out
}

/// (reason, row) pairs gathered by reason, in the order reasons first appear.
fn by_reason<'a>(pairs: impl Iterator<Item = (&'a str, String)>) -> Vec<(&'a str, Vec<String>)> {
    let mut reasons: Vec<(&str, Vec<String>)> = Vec::new();
    for (why, row) in pairs {
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, rows)) => rows.push(row),
            None => reasons.push((why, vec![row])),
        }
    }
    reasons
}

/// Rows up to this many are named in a line about them; more are counted.
const FEW_ROWS: usize = 3;

/// Rows named: a few by name, many counted ("14 rows (ipv4, ...)").
fn rows_phrase(rows: &[String]) -> String {
    match rows {
        few if few.len() <= FEW_ROWS => few.join(", "),
        many => format!("{} rows ({}, ...)", many.len(), many[0]),
    }
}

/// The rows whose program takes another path on later packets than on
/// its first (a test suite's steady rows): their verdict says so.
fn state_dependent_rows(results: &[ScenarioRecord]) -> String {
    let rows: Vec<String> = results
        .iter()
        .filter(|r| r.verdict.as_deref().is_some_and(|v| v.ends_with("(state-dependent)")))
        .map(label)
        .collect();
    match rows.is_empty() {
        true => String::new(),
        false => format!(
            "state-dependent (later packets take another path than the first, or fail the test's own check; -v says how): {}\n",
            rows.join(", ")
        ),
    }
}
