//! The commands on stored results, from their options: what `history
//! --scenario`, `changes`, `report`, `import` and `compare` read and
//! decide, with the refusals a user gets. The binary prints the records.

use anyhow::{Result, bail};

use crate::compare::changes::find_changes;
use crate::compare::{RunNoise, compare_runs, run_noise_from_history};
use crate::history::{History, Location, RunFilter, Stored, resolve_runs};
use crate::record::changes::ChangesRecord;
use crate::record::page::PageContents;
use crate::record::{ComparisonRecord, RunRecord};
use crate::stats::change_points;

/// The stored benchmarks `scenario` names (all: None); a name no stored
/// run measured is refused.
pub fn benchmarks_named(h: &History, scenario: Option<&str>) -> Result<Option<Vec<String>>> {
    let Some(s) = scenario else { return Ok(None) };
    match h.benchmarks_named(s)? {
        names if names.is_empty() => bail!("no stored run measured '{s}'; 'bpfbench history' lists the runs"),
        names => Ok(Some(names)),
    }
}

/// `bpfbench changes`: where each selected benchmark shifted.
pub fn changes(
    scenario: Option<&str>,
    select: &RunFilter,
    alpha: f64,
    min_runs: usize,
    db: &Location,
) -> Result<ChangesRecord> {
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
    Ok(record)
}

/// `bpfbench import`: copies `source`'s records into `db`; says what it copied.
pub fn import(source: &Location, db: &Location) -> Result<String> {
    if source == db {
        bail!("{source} is the history to import into too; give another --db (or $BPFBENCH_DB)");
    }
    let from = History::open_existing(source, Stored::Runs)?;
    let done = History::open(db)?.import_from(&from)?;
    Ok(format!(
        "imported {} run(s), {} paired comparison(s) and {} live run(s) from {source} into {db}; {} were there already",
        done.runs, done.paired, done.live, done.already
    ))
}

/// `bpfbench report`: what the page shows of the selected history.
pub fn report(scenario: Option<&str>, select: &RunFilter, db: &Location) -> Result<PageContents> {
    let h = History::open_existing(db, Stored::Runs)?;
    let benchmarks = benchmarks_named(&h, scenario)?;
    let contents = crate::compare::page::gather(&h, benchmarks.as_deref(), select)?;
    if contents.latest.is_none() && contents.paired.is_empty() && contents.live.is_empty() {
        bail!("no stored result in {db} is selected ({}); 'bpfbench history' lists the runs", contents.selection);
    }
    Ok(contents)
}

/// A comparison of two stored runs (or tags, or JSON files), and a warning
/// when the two sides share runs.
pub struct StoredComparison {
    pub record: ComparisonRecord,
    pub warning: Option<String>,
}

/// `bpfbench compare A B`: B against A at `threshold` percent.
pub fn compare(
    a: &str,
    b: &str,
    tag_runs: usize,
    select: &RunFilter,
    threshold: f64,
    db: &Location,
) -> Result<StoredComparison> {
    let (ra, la) = resolve_runs(a, db, tag_runs, select)?;
    let (rb, lb) = resolve_runs(b, db, tag_runs, select)?;
    // The same record on both sides: a tag and one of its own runs, say.
    let same = |x: &RunRecord, y: &RunRecord| serde_json::to_value(x).ok() == serde_json::to_value(y).ok();
    let shared = ra.iter().filter(|x| rb.iter().any(|y| same(x, y))).count();
    let warning = (shared > 0).then(|| {
        format!(
            "{la} and {lb} share {shared} run{}: a run compared with itself differs in nothing",
            if shared == 1 { "" } else { "s" }
        )
    });
    let noise = if db.exists() { run_noise_from_history(&History::open(db)?, &ra[0])? } else { RunNoise::new() };
    let record = compare_runs(&ra, &la, &rb, &lb, threshold, &noise);
    // Runs timed in different modes (two kernels) still show what changed.
    let modes_differ = record.environment_changes.iter().any(|c| c.starts_with("timing mode of "));
    if record.deltas.is_empty() && !modes_differ {
        bail!("{la} and {lb} have no measured or counted benchmark in common");
    }
    Ok(StoredComparison { record, warning })
}
