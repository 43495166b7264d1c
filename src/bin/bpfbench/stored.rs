//! Commands on stored results: `history`, `show`, `compare`, `changes`,
//! `import` and `report` (session::stored decides; this prints).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use bpfbench::compare::Gate;
use bpfbench::history::{History, Location, RunFilter, Stored, resolve_runs};
use bpfbench::record::ComparisonRecord;
use bpfbench::record::changes::ChangesRecord;
use bpfbench::report::{self, history_table, render_as};
use bpfbench::session::output::{OutputArgs, emit};
use bpfbench::session::stored;

use crate::output::print_comparison;

/// `history`, `history --ab` or `history --live`: the stored records of one kind, newest first.
pub fn history(
    what: Stored,
    scenario: Option<&str>,
    limit: usize,
    select: &RunFilter,
    db: &Location,
) -> Result<ExitCode> {
    let h = History::open_existing(db, what)?;
    let listing = match what {
        Stored::Runs => {
            // A scenario measured in several modes lists each (a row per run and benchmark).
            let benchmarks = stored::benchmarks_named(&h, scenario)?.unwrap_or_default();
            history_table::runs(&h.list_in(&benchmarks, limit, select)?, &benchmarks)
        }
        Stored::Paired => history_table::paired(&h.list_paired_in(limit, select)?),
        Stored::Live => history_table::live(&h.list_live_in(limit, select)?),
    };
    print!("{listing}");
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

/// `show`, `show --ab` or `show --live`: one stored record.
pub fn show(what: Stored, id: &str, out: &OutputArgs, verbose: bool, db: &Location) -> Result<ExitCode> {
    let rendered = match what {
        Stored::Runs => {
            report::check_run_format(out.format)?;
            let (runs, _) = resolve_runs(id, db, 1, &RunFilter::default())?;
            report::render(&runs[0], out.format, verbose)?
        }
        Stored::Paired => render_as(&History::open_existing(db, what)?.load_paired(what.parse_id(id)?)?, out.format)?,
        Stored::Live => render_as(&History::open_existing(db, what)?.load_live(what.parse_id(id)?)?, out.format)?,
    };
    out.emit(&rendered)?;
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
