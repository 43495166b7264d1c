//! Commands on stored results: `history`, `show`, `compare`, `changes`,
//! `import` and `report`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use bpfbench::compare::changes::find_changes;
use bpfbench::compare::{Gate, RunNoise, compare_runs, run_noise_from_history};
use bpfbench::history::{History, Location, RunFilter, Stored, resolve_runs};
use bpfbench::record::RunRecord;
use bpfbench::record::changes::ChangesRecord;
use bpfbench::report::{self, Format, history_table};
use bpfbench::stats::change_points;

use crate::output::{emit, print_comparison};

pub fn history(scenario: Option<&str>, limit: usize, select: &RunFilter, db: &Location) -> Result<ExitCode> {
    let h = History::open_existing(db, Stored::Runs)?;
    // A scenario measured in several modes lists each (a row per run and benchmark).
    let benchmarks = benchmarks_named(&h, scenario)?.unwrap_or_default();
    print!("{}", history_table::runs(&h.list_in(&benchmarks, limit, select)?, &benchmarks));
    Ok(ExitCode::SUCCESS)
}

/// The stored benchmarks `scenario` names (all: None).
fn benchmarks_named(h: &History, scenario: Option<&str>) -> Result<Option<Vec<String>>> {
    let Some(s) = scenario else { return Ok(None) };
    match h.benchmarks_named(s)? {
        names if names.is_empty() => bail!("no stored run measured '{s}'; 'bpfbench history' lists the runs"),
        names => Ok(Some(names)),
    }
}

pub fn changes(
    scenario: Option<&str>,
    select: &RunFilter,
    alpha: f64,
    min_runs: usize,
    format: Format,
    output: Option<&Path>,
    db: &Location,
) -> Result<ExitCode> {
    report::check_format::<ChangesRecord>(format)?;
    if !(alpha > 0.0 && alpha <= 0.5) {
        bail!("--alpha {alpha} is not a significance level: give a probability above 0 and at most 0.5 (e.g. 0.01)");
    }
    if min_runs < 2 {
        bail!("--min-runs {min_runs} is too few: a side of a change needs at least 2 runs to have a spread");
    }
    let h = History::open_existing(db, Stored::Runs)?;
    let benchmarks = benchmarks_named(&h, scenario)?;
    let options = change_points::Options { alpha, min_segment: min_runs, ..Default::default() };
    let record = find_changes(&h, benchmarks.as_deref(), select, &options)?;
    if record.series.is_empty() {
        bail!("no stored run in {db} is selected ({}); 'bpfbench history' lists the runs", record.selection);
    }
    emit(&report::render_as(&record, format)?, output)?;
    Ok(ExitCode::SUCCESS)
}

pub fn import(source: &Location, db: &Location) -> Result<ExitCode> {
    if source == db {
        bail!("{source} is the history to import into too; give another --db (or $BPFBENCH_DB)");
    }
    let from = History::open_existing(source, Stored::Runs)?;
    let done = History::open(db)?.import_from(&from)?;
    eprintln!(
        "bpfbench: imported {} run(s), {} paired comparison(s) and {} live run(s) from {source} into {db}; {} were there already",
        done.runs, done.paired, done.live, done.already
    );
    Ok(ExitCode::SUCCESS)
}

pub fn report(output: &Path, scenario: Option<&str>, select: &RunFilter, db: &Location) -> Result<ExitCode> {
    let h = History::open_existing(db, Stored::Runs)?;
    let benchmarks = benchmarks_named(&h, scenario)?;
    let contents = bpfbench::compare::page::gather(&h, benchmarks.as_deref(), select)?;
    if contents.latest.is_none() && contents.paired.is_empty() && contents.live.is_empty() {
        bail!("no stored result in {db} is selected ({}); 'bpfbench history' lists the runs", contents.selection);
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    emit(&report::html::render(&contents, now)?, Some(output))?;
    Ok(ExitCode::SUCCESS)
}

pub fn show(run: &str, format: Format, output: Option<&Path>, verbose: bool, db: &Location) -> Result<ExitCode> {
    report::check_run_format(format)?;
    let (runs, _) = resolve_runs(run, db, 1, &RunFilter::default())?;
    emit(&report::render(&runs[0], format, verbose)?, output)?;
    Ok(ExitCode::SUCCESS)
}

pub fn history_paired(limit: usize, select: &RunFilter, db: &Location) -> Result<ExitCode> {
    let h = History::open_existing(db, Stored::Paired)?;
    print!("{}", history_table::paired(&h.list_paired_in(limit, select)?));
    Ok(ExitCode::SUCCESS)
}

pub fn show_paired(id: &str, format: Format, output: Option<&Path>, db: &Location) -> Result<ExitCode> {
    let Ok(id) = id.parse::<i64>() else {
        bail!("'{id}' is not a paired comparison's id; 'bpfbench history --ab' lists them")
    };
    let record = History::open_existing(db, Stored::Paired)?.load_paired(id)?;
    emit(&bpfbench::report::render_as(&record, format)?, output)?;
    Ok(ExitCode::SUCCESS)
}

pub fn compare(
    a: &str,
    b: &str,
    gate: &Gate,
    tag_runs: usize,
    select: &RunFilter,
    format: Format,
    db: &Location,
) -> Result<ExitCode> {
    bpfbench::report::check_format::<bpfbench::record::ComparisonRecord>(format)?;
    let (ra, la) = resolve_runs(a, db, tag_runs, select)?;
    let (rb, lb) = resolve_runs(b, db, tag_runs, select)?;
    // The same record on both sides: a tag and one of its own runs, say.
    let same = |x: &RunRecord, y: &RunRecord| serde_json::to_value(x).ok() == serde_json::to_value(y).ok();
    let shared = ra.iter().filter(|x| rb.iter().any(|y| same(x, y))).count();
    if shared > 0 {
        eprintln!(
            "bpfbench: warning: {la} and {lb} share {shared} run{}: a run compared with itself differs in nothing",
            if shared == 1 { "" } else { "s" }
        );
    }
    let noise = if db.exists() { run_noise_from_history(&History::open(db)?, &ra[0])? } else { RunNoise::new() };
    let cmp = compare_runs(&ra, &la, &rb, &lb, gate.threshold(), &noise);
    // Runs timed in different modes (two kernels) still show what changed.
    let modes_differ = cmp.environment_changes.iter().any(|c| c.starts_with("timing mode of "));
    if cmp.benchmarks.is_empty() && cmp.instructions.is_empty() && !modes_differ {
        bail!("{la} and {lb} have no measured or counted benchmark in common");
    }
    print_comparison(&cmp, format, gate)
}
