//! Commands on stored results: `history`, `show` and `compare`, and the
//! output helpers `run` shares with them.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use bpfbench::cli::{CompareFormat, GateArgs};
use bpfbench::compare::{CompareReport, compare_runs, run_noise_from_history};
use bpfbench::history::History;
use bpfbench::report::model::{RunReport, parse_report};
use bpfbench::report::{self, Format};

/// Writes `text` to `path` (whole or not at all), or to standard output.
pub fn emit(text: &str, path: Option<&Path>) -> Result<()> {
    match path {
        None => {
            print!("{text}");
            Ok(())
        }
        Some(p) => {
            let tmp = p.with_extension("partial");
            std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
            std::fs::rename(&tmp, p).with_context(|| format!("writing {}", p.display()))?;
            eprintln!("bpfbench: wrote {}", p.display());
            Ok(())
        }
    }
}

fn gate_fails(cmp: &CompareReport, gate: &GateArgs) -> bool {
    let Some(pct) = gate.fail_on_regression else { return false };
    let bad = cmp.regressions(pct);
    for b in &bad {
        eprintln!(
            "bpfbench: regression: {} is {:.1}% slower (95% CI {:.1}%..{:.1}%), beyond --fail-on-regression {pct}%",
            b.benchmark,
            (b.result.ratio - 1.0) * 100.0,
            (b.result.ratio_ci95.0 - 1.0) * 100.0,
            (b.result.ratio_ci95.1 - 1.0) * 100.0
        );
    }
    !bad.is_empty()
}

/// Runs named on the command line, newest first: a JSON file or a run id
/// (one run), or a tag (up to `tag_runs` of its newest runs).
pub fn resolve_runs(spec: &str, db: &Path, tag_runs: usize) -> Result<(Vec<RunReport>, String)> {
    let path = Path::new(spec);
    if path.is_file() {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {spec}"))?;
        let report = parse_report(&text).with_context(|| format!("{spec} cannot be compared"))?;
        return Ok((vec![report], spec.to_string()));
    }
    if !db.exists() {
        bail!("'{spec}' is not a file, and there is no history database at {} to look it up in", db.display());
    }
    let h = History::open(db)?;
    if let Ok(id) = spec.parse::<i64>() {
        return Ok((vec![h.load(id)?], format!("run {id}")));
    }
    let ids = h.runs_with_tag(spec, tag_runs)?;
    if ids.is_empty() {
        bail!("'{spec}' is not a file, a run id or a tag in {}; see 'bpfbench history'", db.display());
    }
    let label = match ids.as_slice() {
        [one] => format!("run {one} (tag {spec})"),
        many => format!("tag {spec}: {} runs, {}..{}", many.len(), many[many.len() - 1], many[0]),
    };
    let runs = ids.iter().map(|&id| h.load(id)).collect::<Result<Vec<_>>>()?;
    Ok((runs, label))
}

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
fn utc(secs: u64) -> String {
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
    let report = &runs[0];
    emit(&report::render(report, format, verbose)?, output)?;
    Ok(ExitCode::SUCCESS)
}

pub fn compare(a: &str, b: &str, gate: &GateArgs, format: CompareFormat, db: &Path) -> Result<ExitCode> {
    if !(gate.threshold.is_finite() && gate.threshold >= 0.0) {
        bail!("--threshold must be a percentage of at least 0, got {}", gate.threshold);
    }
    let (ra, la) = resolve_runs(a, db, gate.tag_runs as usize)?;
    let (rb, lb) = resolve_runs(b, db, gate.tag_runs as usize)?;
    let noise = if db.exists() { run_noise_from_history(&History::open(db)?, &ra[0])? } else { Default::default() };
    let cmp = compare_runs(&ra, &la, &rb, &lb, gate.threshold / 100.0, &noise);
    if cmp.benchmarks.is_empty() {
        bail!("{la} and {lb} have no measured benchmark in common");
    }
    print_comparison(&cmp, format, gate)
}

/// Prints a comparison and applies --fail-on-regression.
pub fn print_comparison(cmp: &CompareReport, format: CompareFormat, gate: &GateArgs) -> Result<ExitCode> {
    match format {
        CompareFormat::Table => print!("{}", cmp.render()),
        CompareFormat::Json => println!("{}", serde_json::to_string_pretty(cmp)?),
    }
    Ok(if gate_fails(cmp, gate) { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
