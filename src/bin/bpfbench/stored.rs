//! Commands on stored results: `history`, `show` and `compare`.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use bpfbench::compare::{Gate, RunNoise, compare_runs, run_noise_from_history};
use bpfbench::history::{History, resolve_runs};
use bpfbench::report::{self, Format};
use bpfbench::stats::two_sample::Verdict;

use crate::output::{emit, print_comparison};

pub fn history(scenario: Option<&str>, limit: usize, db: &Path) -> Result<ExitCode> {
    if !db.exists() {
        bail!("no history yet at {}; runs are stored there unless --no-store is given", db.display());
    }
    let h = History::open(db)?;
    let benchmark = match scenario {
        None => None,
        Some(s) => match h.benchmarks_named(s)?.as_slice() {
            [] => bail!("no stored run measured '{s}'"),
            [one] => Some(one.clone()),
            many => bail!("'{s}' matches several benchmarks ({}); give the full name", many.join(", ")),
        },
    };
    let runs = h.list(benchmark.as_deref(), limit)?;
    let col = benchmark.as_deref().map(|b| format!("{b}: p50 ns/op [95% CI] n")).unwrap_or_else(|| "benchmarks".into());
    println!("{:>5}  {:<20}  {:<16}  {:<14}  {:<24}  {col}", "run", "started (UTC)", "tag", "commit", "kernel");
    for r in runs {
        let value = match (&benchmark, r.median_ns) {
            (Some(_), Some(m)) => match (r.ci95_ns, r.samples) {
                (Some((lo, hi)), Some(n)) => format!("{m:.2} [{lo:.2}, {hi:.2}] n={n}"),
                _ => format!("{m:.2}"),
            },
            (Some(_), None) => "-".into(),
            (None, _) => r.benchmarks.to_string(),
        };
        println!(
            "{:>5}  {:<20}  {:<16}  {:<14}  {:<24}  {value}",
            r.id,
            utc(r.started_at),
            r.tag.as_deref().unwrap_or("-"),
            r.git_commit,
            r.kernel
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// "YYYY-MM-DD HH:MM:SS" from Unix seconds (civil-from-days, UTC).
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60)
}

pub fn show(run: &str, format: Format, output: Option<&Path>, verbose: bool, db: &Path) -> Result<ExitCode> {
    let (runs, _) = resolve_runs(run, db, 1)?;
    emit(&report::render(&runs[0], format, verbose)?, output)?;
    Ok(ExitCode::SUCCESS)
}

pub fn history_paired(limit: usize, db: &Path) -> Result<ExitCode> {
    if !db.exists() {
        bail!(
            "no history yet at {}; 'bpfbench ab' stores its comparisons there unless --no-store is given",
            db.display()
        );
    }
    let h = History::open(db)?;
    println!(
        "{:>5}  {:<20}  {:<16}  {:>5}  {:<32}  {:<32}  geomean B/A",
        "ab", "started (UTC)", "tag", "cases", "A", "B"
    );
    for (id, r) in h.list_paired(limit)? {
        println!(
            "{id:>5}  {:<20}  {:<16}  {:>5}  {:<32}  {:<32}  {}",
            utc(r.environment.started_at),
            r.tag.as_deref().unwrap_or("-"),
            r.cases.len(),
            r.a,
            r.b,
            r.geomean_ratio.map_or("-".into(), |g| format!(
                "{g:.4} ({} slower, {} faster)",
                r.count(Verdict::Slower),
                r.count(Verdict::Faster)
            ))
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn show_paired(id: &str, format: Format, output: Option<&Path>, db: &Path) -> Result<ExitCode> {
    let Ok(id) = id.parse::<i64>() else {
        bail!("'{id}' is not a paired comparison's id; 'bpfbench history --ab' lists them")
    };
    if !db.exists() {
        bail!("there is no history database at {}", db.display());
    }
    let record = History::open(db)?.load_paired(id)?;
    emit(&bpfbench::report::render_as(&record, format)?, output)?;
    Ok(ExitCode::SUCCESS)
}

pub fn compare(a: &str, b: &str, gate: &Gate, tag_runs: usize, format: Format, db: &Path) -> Result<ExitCode> {
    bpfbench::report::check_format::<bpfbench::record::ComparisonRecord>(format)?;
    let (ra, la) = resolve_runs(a, db, tag_runs)?;
    let (rb, lb) = resolve_runs(b, db, tag_runs)?;
    let noise = if db.exists() { run_noise_from_history(&History::open(db)?, &ra[0])? } else { RunNoise::new() };
    let cmp = compare_runs(&ra, &la, &rb, &lb, gate.threshold(), &noise);
    if cmp.benchmarks.is_empty() && cmp.instructions.is_empty() {
        bail!("{la} and {lb} have no measured or counted benchmark in common");
    }
    print_comparison(&cmp, format, gate)
}
