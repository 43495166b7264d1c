//! A paired comparison (`bpfbench ab`) for people (a table) and machines
//! (CSV, Bencher Metric Format; JSON is the record itself).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;

use super::export::BmfMeasure;
use super::grid::{self, Grid};
use crate::record::paired::{PairedCase, PairedRecord};

/// "40 loads x 16 pairs, 3.2 s": rounds (each a fresh load of both builds),
/// pairs per round, time taken.
fn rests_on(c: &PairedCase) -> String {
    let per = c.ratios.len() / c.round_ratios.len().max(1);
    format!("{} loads x {per} pairs, {:.1} s", c.round_ratios.len(), c.elapsed_s)
}

/// The cases as one grid, for both forms: both medians, the median ratio
/// with its interval, what it rests on and the verdict (bold in Markdown).
fn cases(rec: &PairedRecord, markdown: bool) -> Grid {
    let mut columns = super::ratio_columns();
    columns.extend([grid::left("rests on"), grid::left("verdict")]);
    // What the program did, where the workload keeps it (own objects): a
    // case that times an early exit shows it.
    let outputs = rec.cases.iter().any(|c| c.output().is_some());
    if outputs {
        columns.push(grid::left("program output"));
    }
    let mut g = Grid::new(columns);
    for c in &rec.cases {
        let mut cells = super::ratio_cells(c.benchmark_name(), c.median_a, c.median_b, c.ratio, c.ratio_ci95);
        cells.extend([rests_on(c), super::verdict_cell(c.verdict, markdown) + &stopped(c)]);
        if outputs {
            cells.push(c.output().unwrap_or_else(|| "-".into()));
        }
        g.row(cells);
    }
    if let Some(gm) = rec.geomean_ratio {
        g.row(super::geomean_cells(gm));
    }
    g
}

/// One line per case: both medians, the median ratio with its interval,
/// the verdict, and what it rests on.
pub fn table(rec: &PairedRecord) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {}\nB: {}", rec.a, rec.b);
    for (side, g) in ["A", "B"].iter().zip(&rec.guests) {
        let _ =
            writeln!(out, "   {side}: a guest ({}) of {}, command line: {}", g.accelerator, g.image, g.own_cmdline());
    }
    if rec.emulated() {
        let _ = writeln!(
            out,
            "EMULATED: the guests ran under QEMU's TCG; ns/op are the emulator's, not the hardware's (the ratios compare the kernels under emulation)"
        );
    }
    out.push_str(&cases(rec, false).plain());
    let _ = writeln!(
        out,
        "{} ({METHOD}; noise threshold ±{:.1}%)",
        super::verdict_counts(|v| rec.count(v)),
        rec.threshold * 100.0
    );
    if rec.interrupted {
        let _ = writeln!(out, "interrupted: {INTERRUPTED}");
    }
    out
}

/// The comparison as a Markdown table a pull request comment can hold:
/// what was compared, each case's medians, ratio, interval, what the
/// verdict rests on and the verdict, and how the verdicts were reached.
pub fn markdown(rec: &PairedRecord) -> String {
    let cell = super::markdown_cell;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "**bpfbench ab**: A `{}` against B `{}` (noise threshold ±{:.1} %)\n",
        cell(&rec.a),
        cell(&rec.b),
        rec.threshold * 100.0
    );
    if rec.emulated() {
        let _ = writeln!(
            out,
            "> EMULATED: the guests ran under QEMU's TCG; ns/op are the emulator's, not the hardware's.\n"
        );
    }
    out.push_str(&cases(rec, true).markdown());
    let _ = writeln!(out, "\n{}: {METHOD}.", super::verdict_counts(|v| rec.count(v)));
    if rec.interrupted {
        let _ = writeln!(out, "\nInterrupted: {INTERRUPTED}.");
    }
    out
}

/// " (time cap)" where sampling stopped before a decision.
fn stopped(c: &PairedCase) -> String {
    if c.stop == "decided" { String::new() } else { format!(" ({})", c.stop) }
}

/// How the verdicts were reached, for both forms.
const METHOD: &str = "B/A of adjacent batches on one CPU, order ABBA; each round sets both up afresh; geometric mean of the rounds' median ratios, Student-t CI over rounds";
const INTERRUPTED: &str = "the cases above are all that was measured";

pub fn csv(rec: &PairedRecord) -> Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "benchmark",
        "median_a_ns",
        "median_b_ns",
        "ratio",
        "ci95_low",
        "ci95_high",
        "verdict",
        "loads",
        "pairs",
        "batch_iters",
        "elapsed_s",
        "stop",
    ])?;
    for c in &rec.cases {
        w.write_record([
            c.benchmark_name(),
            format!("{:.3}", c.median_a),
            format!("{:.3}", c.median_b),
            format!("{:.5}", c.ratio),
            format!("{:.5}", c.ratio_ci95.0),
            format!("{:.5}", c.ratio_ci95.1),
            c.verdict.as_str().to_string(),
            c.round_ratios.len().to_string(),
            c.ratios.len().to_string(),
            c.batch_iters.to_string(),
            format!("{:.2}", c.elapsed_s),
            c.stop.clone(),
        ])?;
    }
    Ok(String::from_utf8(w.into_inner()?)?)
}

/// B's latency and the B/A ratio per benchmark, for Bencher's thresholds.
pub fn bmf(rec: &PairedRecord) -> BTreeMap<String, BTreeMap<String, BmfMeasure>> {
    rec.cases
        .iter()
        .map(|c| {
            let mut measures = BTreeMap::new();
            measures.insert(
                "latency".to_string(),
                BmfMeasure { value: c.median_b, lower_value: c.median_b_ci95.0, upper_value: c.median_b_ci95.1 },
            );
            measures.insert(
                "ratio".to_string(),
                BmfMeasure { value: c.ratio, lower_value: c.ratio_ci95.0, upper_value: c.ratio_ci95.1 },
            );
            (c.benchmark_name(), measures)
        })
        .collect()
}

/// The gate's line for a case confidently slower than allowed.
pub fn regression_line(c: &PairedCase, limit_pct: f64) -> String {
    format!(
        "regression: {} is {:+.1}% slower in B (95% CI [{:+.1}%, {:+.1}%], over the {:.1}% limit; {} loads)",
        c.benchmark_name(),
        (c.ratio - 1.0) * 100.0,
        (c.ratio_ci95.0 - 1.0) * 100.0,
        (c.ratio_ci95.1 - 1.0) * 100.0,
        limit_pct,
        c.round_ratios.len()
    )
}
