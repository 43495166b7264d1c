//! A paired comparison (`bpfbench ab`) for people (a table) and machines
//! (CSV, Bencher Metric Format; JSON is the record itself).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;

use super::columns::{self, Field, Table, value};
use super::export::BmfMeasure;
use super::grid::{self, Grid};
use crate::record::paired::{PairedCase, PairedRecord};

/// "40 loads x 16 pairs, 3.2 s": rounds (each a fresh load of both builds),
/// pairs per round, time taken.
fn rests_on(c: &PairedCase) -> String {
    let per = c.ratios.len() / c.round_ratios.len().max(1);
    format!("{} loads x {per} pairs, {:.1} s", c.round_ratios.len(), c.elapsed_s)
}

/// A case's columns, for every form: both medians, the median ratio with
/// its interval, what it rests on and the verdict (bold in Markdown); what
/// the program did where the workload keeps it (own objects: a case that
/// times an early exit shows it); for machines, the rounds behind it.
fn columns(outputs: bool, instructions: bool) -> Table<PairedCase> {
    let mut fields = columns::ratio_fields(
        PairedCase::benchmark_name,
        |c| c.median_a,
        |c| c.median_b,
        |c| c.ratio,
        |c| c.ratio_ci95,
    );
    fields.push(Field::shown(grid::left("rests on"), |c, _| rests_on(c), vec![]));
    fields.push(Field::shown(
        grid::left("verdict"),
        |c: &PairedCase, md| super::verdict_cell(c.verdict, md) + &stopped(c),
        vec![value("verdict", |c: &PairedCase| c.verdict.as_str().to_string())],
    ));
    if outputs {
        fields.push(Field::shown(
            grid::left("program output"),
            |c, _| c.output().unwrap_or_else(|| "-".into()),
            vec![],
        ));
    }
    if instructions {
        fields.push(Field::shown(
            grid::left("entry instructions"),
            |c, _| c.instructions().unwrap_or_else(|| "-".into()),
            vec![],
        ));
    }
    fields.push(Field::machines_only(vec![
        value("loads", |c: &PairedCase| c.round_ratios.len().to_string()),
        value("pairs", |c: &PairedCase| c.ratios.len().to_string()),
        value("batch_iters", |c: &PairedCase| c.batch_iters.to_string()),
        value("elapsed_s", |c: &PairedCase| format!("{:.2}", c.elapsed_s)),
        value("stop", |c: &PairedCase| c.stop.clone()),
    ]));
    Table { fields }
}

/// The cases as one grid, for both forms, with the geometric mean; a
/// suite's, or two builds of different code, with each timed program's
/// instructions, A's and B's.
fn cases(rec: &PairedRecord, markdown: bool) -> Grid {
    let outputs = rec.cases.iter().any(|c| c.output().is_some());
    // Two builds of different code (two compilers, a commit): each side's
    // instructions beside its time; sysctls or kernels compare one code.
    let instructions = rec.suite || rec.cases.iter().any(PairedCase::code_differs);
    let mut g = columns(outputs, instructions).grid(&rec.cases, markdown);
    if let Some(gm) = rec.geomean_ratio {
        g.row(super::geomean_cells(gm));
    }
    g
}

/// A suite's cases that moved (slower or faster), as a grid.
fn moved(rec: &PairedRecord, markdown: bool) -> Grid {
    let moved: Vec<PairedCase> = rec.cases.iter().filter(|c| c.moved()).cloned().collect();
    columns(false, true).grid(&moved, markdown)
}

/// "412 of 424 cases compared; 12 not compared (2 only in B)".
fn suite_summary(rec: &PairedRecord) -> String {
    let only = rec.not_compared.iter().filter(|n| n.why.starts_with("only in")).count();
    let total = rec.cases.len() + rec.not_compared.len();
    let mut line = format!("{} of {total} cases compared", rec.cases.len());
    if !rec.not_compared.is_empty() {
        let _ = write!(line, "; {} not compared", rec.not_compared.len());
        if only > 0 {
            let _ = write!(line, " ({only} in one build only)");
        }
    }
    line
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
    if let Some(line) = too_few_rounds(rec) {
        let _ = writeln!(out, "{line}");
    }
    // A suite's hundreds of cases: the placement of those that moved.
    for c in rec.cases.iter().filter(|c| !rec.suite || c.moved()) {
        if let Some(line) = placement(c) {
            let _ = writeln!(out, "{}: {line}", c.benchmark_name());
        }
    }
    if rec.suite {
        let _ = writeln!(out, "{}", suite_summary(rec));
        if rec.cases.iter().any(PairedCase::moved) {
            let _ = writeln!(out, "moved:");
            out.push_str(&moved(rec, false).plain());
        }
        for n in &rec.not_compared {
            let _ = writeln!(out, "not compared: {}: {}", n.name, n.why);
        }
    }
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
    if rec.suite {
        suite_markdown(rec, &mut out);
        return out;
    }
    out.push_str(&cases(rec, true).markdown());
    let _ = writeln!(out, "\n{}: {METHOD}.", super::verdict_counts(|v| rec.count(v)));
    if let Some(line) = too_few_rounds(rec) {
        let _ = writeln!(out, "\n{line}");
    }
    let lines: Vec<String> = rec
        .cases
        .iter()
        .filter_map(|c| placement(c).map(|l| format!("- `{}`: {l}", cell(&c.benchmark_name()))))
        .collect();
    if !lines.is_empty() {
        let _ = writeln!(out, "\n{}", lines.join("\n"));
    }
    if rec.interrupted {
        let _ = writeln!(out, "\nInterrupted: {INTERRUPTED}.");
    }
    out
}

/// Two builds of a suite for a pull request: the geomean, the cases that
/// moved with their instructions, every case and those not compared
/// folded away.
fn suite_markdown(rec: &PairedRecord, out: &mut String) {
    let cell = super::markdown_cell;
    let geomean = rec
        .geomean_ratio
        .map_or_else(String::new, |g| format!("geomean B/A **{g:.4}** ({:+.2} %); ", (g - 1.0) * 100.0));
    let _ = writeln!(out, "{geomean}{}; {}.\n", super::verdict_counts(|v| rec.count(v)), suite_summary(rec));
    if rec.cases.iter().any(PairedCase::moved) {
        let _ = writeln!(
            out,
            "Moved (entry instructions: the timed entry program after the verifier, A -> B; it may tail-call others):\n"
        );
        out.push_str(&moved(rec, true).markdown());
    } else {
        let _ = writeln!(out, "No case moved beyond the noise threshold.");
    }
    let _ = writeln!(out, "\n<details><summary>All {} cases</summary>\n", rec.cases.len());
    out.push_str(&cases(rec, true).markdown());
    let _ = writeln!(out, "\n</details>");
    if !rec.not_compared.is_empty() {
        let _ = writeln!(out, "\n<details><summary>{} not compared</summary>\n", rec.not_compared.len());
        for n in &rec.not_compared {
            let _ = writeln!(out, "- `{}`: {}", cell(&n.name), cell(&n.why));
        }
        let _ = writeln!(out, "\n</details>");
    }
    let _ = writeln!(out, "\n{METHOD}.");
    if rec.interrupted {
        let _ = writeln!(out, "\nInterrupted: {INTERRUPTED}.");
    }
}

/// "JIT placement: rounds 0.80-1.25 (SD 2.1%); pairs within a round: SD
/// 0.6%": how far the loads landed from one another, beside the noise of
/// adjacent batches (the verdict rests on the rounds).
fn placement(c: &PairedCase) -> Option<String> {
    let s = c.spread?;
    Some(format!(
        "JIT placement: rounds {:.2}-{:.2} (SD {:.1}%); pairs within a round: SD {:.1}%",
        s.low,
        s.high,
        s.between * 100.0,
        s.within * 100.0
    ))
}

/// " (time cap)" where sampling stopped before a decision.
/// "2 cases ended with fewer than 4 rounds ...": cases a time cap left
/// uncertain however narrow their interval (see `VERDICT_FLOOR`).
fn too_few_rounds(rec: &PairedRecord) -> Option<String> {
    use crate::stats::paired::VERDICT_FLOOR;
    let n = rec.cases.iter().filter(|c| c.round_ratios.len() < VERDICT_FLOOR).count();
    (n > 0).then(|| {
        format!(
            "{n} case(s) ended with fewer than {VERDICT_FLOOR} rounds: too few loads for a verdict (each round is one draw of where the JIT put the code), so uncertain; give them more time (--max-time)"
        )
    })
}

fn stopped(c: &PairedCase) -> String {
    if c.stop == "decided" { String::new() } else { format!(" ({})", c.stop) }
}

/// How the verdicts were reached, for both forms.
const METHOD: &str = "B/A of adjacent batches on one CPU, order ABBA; each round sets both up afresh; 20% trimmed mean of the rounds' median ratios, Tukey-McLaughlin CI over rounds";
const INTERRUPTED: &str = "the cases above are all that was measured";

/// The cases for machines: the same columns' fields, a row per case.
pub fn csv(rec: &PairedRecord) -> Result<String> {
    columns(false, false).csv(&rec.cases)
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
