//! A comparison as a compact table in the manner of benchstat, and the
//! gate's verdicts as one line each.

use std::fmt::Write as _;

use anyhow::Result;

use super::columns::{self, Field, Table, value};
use super::grid::{self, Grid};
use crate::record::{BenchmarkComparison, ComparisonRecord, InstructionDelta, Method, Metric};
use crate::stats::two_sample::Verdict;
use crate::stats::two_sample::{ASSUMED_RUN_CV, MIN_RUNS_FOR_NOISE, MIN_RUNS_PER_SIDE};

pub fn render(cmp: &ComparisonRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}\nB: {}", cmp.a, cmp.b);
    for metric in shown(cmp) {
        match metric {
            Metric::Time => times(cmp, &mut out),
            Metric::Insns => instructions(cmp, &mut out),
            Metric::KernelInsns => kernel_instructions(cmp, &mut out),
        }
    }
    for n in &cmp.only_in_a {
        let _ = writeln!(out, "only in A: {n}");
    }
    for n in &cmp.only_in_b {
        let _ = writeln!(out, "only in B: {n}");
    }
    for c in &cmp.environment_changes {
        let _ = writeln!(out, "changed: {c}");
    }
    out
}

/// The metrics a comparison's tables show: those compared, or an empty
/// table of times when nothing was.
fn shown(cmp: &ComparisonRecord) -> Vec<Metric> {
    let metrics = cmp.metrics();
    if metrics.is_empty() { vec![Metric::Time] } else { metrics }
}

/// "2 more, 1 fewer, 5 same": counts' verdicts, as the metric compares them.
fn count_verdicts(cmp: &ComparisonRecord, metric: Metric) -> String {
    let n = |v| cmp.count(metric, v);
    format!("{} more, {} fewer, {} same", n(Verdict::Slower), n(Verdict::Faster), n(Verdict::Same))
}

/// Changed source lines shown per benchmark.
const CHANGED_LINES: usize = 8;

/// Instruction counts per packet, with exact deltas and what changed in
/// helper calls, map operations and source lines.
fn instructions(cmp: &ComparisonRecord, out: &mut String) {
    out.push_str(&instruction_grid(cmp, true).plain());
    let _ = writeln!(
        out,
        "{} (BPF instructions per packet, counted by the userspace runtime: exact, no noise)",
        count_verdicts(cmp, Metric::Insns)
    );
}

/// Functions shown per benchmark whose kernel instructions changed.
const CHANGED_FUNCTIONS: usize = 8;

/// Kernel instruction counts per packet (TCG plugin), with the functions
/// whose share changed, largest change first, and a verdict line.
fn kernel_instructions(cmp: &ComparisonRecord, out: &mut String) {
    let num = |v: f64| format!("{v:.1}");
    let grid = instruction_columns().grid_noted(cmp.counts(Metric::KernelInsns), false, |d, g| {
        let mut changed: Vec<(&String, &(f64, f64))> = d.changed.iter().collect();
        changed.sort_by(|x, y| (y.1.1 - y.1.0).abs().total_cmp(&(x.1.1 - x.1.0).abs()).then(x.0.cmp(y.0)));
        for (what, (a, b)) in changed.iter().filter(|(_, (a, b))| a != b).take(CHANGED_FUNCTIONS) {
            g.note(format!("    {what}: {} -> {} per packet", num(*a), num(*b)));
        }
        if let Some((a, b)) = d.jit.filter(|(a, b)| a != b) {
            g.note(format!("    JIT images, the loop's taken off: {} -> {} per packet", num(a), num(b)));
        }
        // Data accesses repeat within 0.05 a packet and misses nearly:
        // a line for changes beyond that (docs/src/guide/kernels.md).
        let changed = |a: &crate::record::DataAccesses, b: &crate::record::DataAccesses| {
            (a.reads - b.reads).abs() >= 0.5
                || (a.writes - b.writes).abs() >= 0.5
                || (a.d1_misses - b.d1_misses).abs() >= 0.25
                || (a.ll_misses - b.ll_misses).abs() >= 0.25
        };
        if let Some((a, b)) = d.memory.filter(|(a, b)| changed(a, b)) {
            let cell = |x| super::matrix_table::data_accesses(x, &Default::default());
            g.note(format!("    data accesses: {} -> {} per packet", cell(&a), cell(&b)));
        }
    });
    out.push_str("\nkernel instructions per packet (JIT images and kernel functions, counted under TCG):\n");
    out.push_str(&grid.plain());
    let _ = writeln!(
        out,
        "{} (the same JIT count, totals within {:.1} % or {} a packet: a kernel's counts repeat that closely)",
        count_verdicts(cmp, Metric::KernelInsns),
        crate::record::KERNEL_INSNS_SAME * 100.0,
        crate::record::KERNEL_INSNS_FLOOR
    );
}

/// Instruction counts per benchmark: A's, B's, the change and B/A.
fn instruction_columns() -> Table<InstructionDelta> {
    let num = |v: f64| crate::report::insns_table::per_packet(v, 1);
    let full = |v: f64| format!("{v:.4}");
    Table {
        fields: vec![
            Field::shown(
                grid::left("benchmark"),
                |d: &InstructionDelta, _| d.benchmark.clone(),
                vec![value("benchmark", |d: &InstructionDelta| d.benchmark.clone())],
            ),
            Field::shown(
                grid::right("A insns/pkt"),
                move |d: &InstructionDelta, _| num(d.a),
                vec![value("a_insns_per_packet", move |d: &InstructionDelta| full(d.a))],
            ),
            Field::shown(
                grid::right("B insns/pkt"),
                move |d: &InstructionDelta, _| num(d.b),
                vec![value("b_insns_per_packet", move |d: &InstructionDelta| full(d.b))],
            ),
            Field::shown(
                grid::right("delta"),
                move |d: &InstructionDelta, _| {
                    if d.delta() > 0.0 { format!("+{}", num(d.delta())) } else { num(d.delta()) }
                },
                vec![value("delta", move |d: &InstructionDelta| full(d.delta()))],
            ),
            Field::shown(
                grid::right("B/A"),
                |d: &InstructionDelta, _| format!("{:.4}", d.ratio()),
                vec![value("ratio", |d: &InstructionDelta| format!("{:.6}", d.ratio()))],
            ),
        ],
    }
}

/// Instruction counts per benchmark; `detail` adds what changed in helper
/// calls, map operations and source lines under each row.
fn instruction_grid(cmp: &ComparisonRecord, detail: bool) -> Grid {
    let num = |v: f64| crate::report::insns_table::per_packet(v, 1);
    instruction_columns().grid_noted(cmp.counts(Metric::Insns), false, |d, g| {
        if !detail {
            return;
        }
        for (what, (a, b)) in &d.changed {
            g.note(format!("    {what}: {} -> {} per packet", num(*a), num(*b)));
        }
        // The source lines whose instructions changed, largest change first.
        let mut lines: Vec<(&String, &(f64, f64))> = d.lines.iter().collect();
        lines.sort_by(|x, y| (y.1.1 - y.1.0).abs().total_cmp(&(x.1.1 - x.1.0).abs()).then(x.0.cmp(y.0)));
        for (line, (a, b)) in lines.iter().take(CHANGED_LINES) {
            let change = b - a;
            let sign = if change > 0.0 { "+" } else { "" };
            g.note(format!("    {sign}{} insns/packet at {line}", num(change)));
        }
        if lines.len() > CHANGED_LINES {
            g.note(format!("    ... {} more lines changed (--format json lists them)", lines.len() - CHANGED_LINES));
        }
    })
}

/// A timed benchmark's columns, for every form: the ratio's, the corrected
/// p-value, what the verdict rests on, the run-to-run noise it allowed for,
/// and the verdict (bold in Markdown).
fn time_columns() -> Table<BenchmarkComparison> {
    let mut fields = columns::ratio_fields(
        |b: &BenchmarkComparison| b.benchmark.clone(),
        |b| b.result.median_a,
        |b| b.result.median_b,
        |b| b.result.ratio,
        |b| b.result.ratio_ci95,
    );
    fields.extend([
        Field::shown(
            grid::right("p (Holm)"),
            |b: &BenchmarkComparison, _| format!("{:.4}", b.result.p_adjusted),
            vec![value("p_holm", |b: &BenchmarkComparison| format!("{:.6}", b.result.p_adjusted))],
        ),
        Field::shown(
            grid::left("rests on"),
            |b, _| rests_on(b),
            vec![
                value("n_a", |b: &BenchmarkComparison| b.n_a.to_string()),
                value("n_b", |b: &BenchmarkComparison| b.n_b.to_string()),
                value("rests_on", |b: &BenchmarkComparison| b.method.as_str().to_string()),
            ],
        ),
        Field::shown(
            grid::right("run noise"),
            |b, _| run_noise(b),
            vec![value("run_noise_cv", |b: &BenchmarkComparison| {
                b.result.run_noise_cv.map_or_else(String::new, |cv| format!("{cv:.5}"))
            })],
        ),
        Field::shown(
            grid::left("verdict"),
            |b: &BenchmarkComparison, md| super::verdict_cell(b.result.verdict, md),
            vec![value("verdict", |b: &BenchmarkComparison| b.result.verdict.as_str().to_string())],
        ),
    ]);
    Table { fields }
}

/// The timed benchmarks with their statistics, for both forms, and the geometric mean.
fn time_grid(cmp: &ComparisonRecord, markdown: bool) -> Grid {
    let mut g = time_columns().grid(cmp.times(), markdown);
    if let Some(gm) = cmp.geomean_ratio {
        g.row(super::geomean_cells(gm));
    }
    g
}

/// The comparison for machines: a row per benchmark with the table's
/// columns, of the first metric compared (one table: a CSV has one header).
pub fn csv(cmp: &ComparisonRecord) -> Result<String> {
    match shown(cmp)[0] {
        Metric::Time => time_columns().csv(cmp.times()),
        metric @ (Metric::Insns | Metric::KernelInsns) => instruction_columns().csv(cmp.counts(metric)),
    }
}

/// The timed benchmarks, with their statistics.
fn times(cmp: &ComparisonRecord, out: &mut String) {
    out.push_str(&time_grid(cmp, false).plain());
    let _ = writeln!(
        out,
        "{} ({METHOD}; noise threshold ±{:.1}%)",
        super::verdict_counts(|v| cmp.count(Metric::Time, v)),
        cmp.threshold * 100.0
    );
    if let Some(note) = assumed_noise_note(cmp) {
        let _ = writeln!(out, "{note}");
    }
}

/// How the verdicts were reached, for both forms.
const METHOD: &str = "medians of in-BPF ns/op samples; Mann-Whitney U, Holm-corrected, bootstrap CI of the ratio";

/// What a verdict rests on: "5v5 runs", "200v200 samples".
fn rests_on(b: &BenchmarkComparison) -> String {
    format!("{}v{} {}", b.n_a, b.n_b, b.method.as_str())
}

/// The run-to-run noise a verdict allowed for.
fn run_noise(b: &BenchmarkComparison) -> String {
    let r = &b.result;
    match (b.method, r.run_noise_cv) {
        (Method::Runs, _) => "in data".to_string(),
        (_, Some(cv)) if r.run_noise_assumed => format!("~{:.1}%", cv * 100.0),
        (_, Some(cv)) => format!("{:.1}%", cv * 100.0),
        (_, None) => "?".to_string(),
    }
}

/// Why verdicts resting on assumed noise call only large changes.
fn assumed_noise_note(cmp: &ComparisonRecord) -> Option<String> {
    let assumed = cmp.times().filter(|b| b.result.run_noise_assumed).count();
    (assumed > 0).then(|| {
        format!(
            "run noise ~{:.1}%: assumed for {assumed} benchmark(s) compared one run a side with no stored runs of A's code: \
             their samples cannot tell a code change from the machine changing speed between the runs, so only changes beyond about 1.5x are called. \
             Compare {MIN_RUNS_PER_SIDE}+ runs a side (--repeat {MIN_RUNS_PER_SIDE}), store {MIN_RUNS_FOR_NOISE}+ runs of A's code under one tag, or use 'bpfbench ab'.",
            ASSUMED_RUN_CV * 100.0
        )
    })
}

/// The comparison as Markdown a pull request comment can hold: the timed
/// benchmarks with their verdicts and what each rests on, the instruction
/// counts, and what else differs between A and B.
pub fn markdown(cmp: &ComparisonRecord) -> String {
    let cell = super::markdown_cell;
    let mut out = format!(
        "**bpfbench compare**: A `{}` against B `{}` (noise threshold ±{:.1} %)\n\n",
        cell(&cmp.a),
        cell(&cmp.b),
        cmp.threshold * 100.0
    );
    for metric in cmp.metrics() {
        match metric {
            Metric::Time => {
                out += &time_grid(cmp, true).markdown();
                let _ = writeln!(out, "\n{}: {METHOD}.", super::verdict_counts(|v| cmp.count(Metric::Time, v)));
                if let Some(note) = assumed_noise_note(cmp) {
                    let _ = writeln!(out, "\n> {note}");
                }
            }
            Metric::Insns => {
                out += "\n";
                out += &instruction_grid(cmp, false).markdown();
                let _ = writeln!(
                    out,
                    "\n{}: BPF instructions per packet, counted by the userspace runtime: exact, no noise.",
                    count_verdicts(cmp, Metric::Insns)
                );
            }
            Metric::KernelInsns => {
                out += "\n";
                out += &instruction_columns().grid(cmp.counts(Metric::KernelInsns), true).markdown();
                let _ = writeln!(
                    out,
                    "\n{}: the kernel's native instructions per packet, counted under TCG.",
                    count_verdicts(cmp, Metric::KernelInsns)
                );
            }
        }
    }
    let others: Vec<String> = (cmp.only_in_a.iter().map(|n| format!("only in A: `{}`", cell(n))))
        .chain(cmp.only_in_b.iter().map(|n| format!("only in B: `{}`", cell(n))))
        .chain(cmp.environment_changes.iter().map(|c| format!("changed: {}", cell(c))))
        .collect();
    if !others.is_empty() {
        out += "\n";
        for line in others {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

/// The line the gate prints for a confirmed regression.
pub fn instruction_regression_line(d: &InstructionDelta, against: &str, limit_pct: f64) -> String {
    format!(
        "regression: {} executes {:+.1}% instructions per packet against {against} ({} -> {}), beyond --fail-on-regression {limit_pct}%",
        d.benchmark,
        (d.ratio() - 1.0) * 100.0,
        crate::report::insns_table::per_packet(d.a, 1),
        crate::report::insns_table::per_packet(d.b, 1)
    )
}

pub fn regression_line(b: &BenchmarkComparison, against: &str, limit_pct: f64) -> String {
    let r = &b.result;
    format!(
        "regression: {} is {:.1}% slower than {against} (95% CI {:.1}%..{:.1}%), beyond --fail-on-regression {limit_pct}%",
        b.benchmark,
        (r.ratio - 1.0) * 100.0,
        (r.ratio_ci95.0 - 1.0) * 100.0,
        (r.ratio_ci95.1 - 1.0) * 100.0
    )
}
