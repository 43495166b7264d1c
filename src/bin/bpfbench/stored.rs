//! Commands on stored results: `history`, `show`, `compare`, `changes`,
//! `import` and `report` (session::stored decides; this prints).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use bpfbench::compare::Gate;
use bpfbench::history::{History, Location, RunFilter, Stored, resolve_runs};
use bpfbench::record::ComparisonRecord;
use bpfbench::record::changes::ChangesRecord;
use bpfbench::report::{self, history_table, render_as};
use bpfbench::session::output::{OutputArgs, emit};
use bpfbench::session::stored;

use crate::output::print_comparison;

pub fn history(scenario: Option<&str>, limit: usize, select: &RunFilter, db: &Location) -> Result<ExitCode> {
    let h = History::open_existing(db, Stored::Runs)?;
    // A scenario measured in several modes lists each (a row per run and benchmark).
    let benchmarks = stored::benchmarks_named(&h, scenario)?.unwrap_or_default();
    print!("{}", history_table::runs(&h.list_in(&benchmarks, limit, select)?, &benchmarks));
    Ok(ExitCode::SUCCESS)
}

pub fn changes(
    scenario: Option<&str>,
    select: &RunFilter,
    (alpha, min_runs): (f64, usize),
    out: &OutputArgs,
    db: &Location,
) -> Result<ExitCode> {
    report::check_format::<ChangesRecord>(out.format)?;
    out.emit(&render_as(&stored::changes(scenario, select, alpha, min_runs, db)?, out.format)?)?;
    Ok(ExitCode::SUCCESS)
}

pub fn import(source: &Location, db: &Location) -> Result<ExitCode> {
    eprintln!("bpfbench: {}", stored::import(source, db)?);
    Ok(ExitCode::SUCCESS)
}

pub fn report(output: &Path, scenario: Option<&str>, select: &RunFilter, db: &Location) -> Result<ExitCode> {
    let contents = stored::report(scenario, select, db)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    emit(&report::html::render(&contents, now)?, Some(output))?;
    Ok(ExitCode::SUCCESS)
}

pub fn show(run: &str, out: &OutputArgs, verbose: bool, db: &Location) -> Result<ExitCode> {
    report::check_run_format(out.format)?;
    let (runs, _) = resolve_runs(run, db, 1, &RunFilter::default())?;
    out.emit(&report::render(&runs[0], out.format, verbose)?)?;
    Ok(ExitCode::SUCCESS)
}

pub fn history_paired(limit: usize, select: &RunFilter, db: &Location) -> Result<ExitCode> {
    let h = History::open_existing(db, Stored::Paired)?;
    print!("{}", history_table::paired(&h.list_paired_in(limit, select)?));
    Ok(ExitCode::SUCCESS)
}

pub fn show_paired(id: &str, out: &OutputArgs, db: &Location) -> Result<ExitCode> {
    let Ok(id) = id.parse::<i64>() else {
        bail!("'{id}' is not a paired comparison's id; 'bpfbench history --ab' lists them")
    };
    let record = History::open_existing(db, Stored::Paired)?.load_paired(id)?;
    out.emit(&render_as(&record, out.format)?)?;
    Ok(ExitCode::SUCCESS)
}

pub fn compare(
    (a, b): (&str, &str),
    gate: &Gate,
    tag_runs: usize,
    select: &RunFilter,
    out: &OutputArgs,
    db: &Location,
) -> Result<ExitCode> {
    report::check_format::<ComparisonRecord>(out.format)?;
    let cmp = stored::compare(a, b, tag_runs, select, gate.threshold(), db)?;
    if let Some(w) = &cmp.warning {
        eprintln!("bpfbench: warning: {w}");
    }
    print_comparison(&cmp.record, out, gate)
}
