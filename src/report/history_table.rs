//! The listings of stored results: `history` (runs, one benchmark's
//! medians), `history --ab` (paired comparisons) and `history --live`.

use std::fmt::Write;

use crate::history::RunSummary;
use crate::record::live::LiveRecord;
use crate::record::paired::PairedRecord;
use crate::stats::two_sample::Verdict;

/// Stored runs, newest first; with `benchmark`, its median per run.
pub fn runs(runs: &[RunSummary], benchmark: Option<&str>) -> String {
    let col = benchmark.map(|b| format!("{b}: p50 ns/op [95% CI] n")).unwrap_or_else(|| "benchmarks".into());
    let mut out = format!(
        "{:>5}  {:<20}  {:<16}  {:<14}  {:<24}  {:<16}  {col}\n",
        "run", "started (UTC)", "tag", "commit", "kernel", "testbed"
    );
    for r in runs {
        let value = match (benchmark, r.median_ns) {
            (Some(_), Some(m)) => match (r.ci95_ns, r.samples) {
                (Some((lo, hi)), Some(n)) => format!("{m:.2} [{lo:.2}, {hi:.2}] n={n}"),
                _ => format!("{m:.2}"),
            },
            (Some(_), None) => "-".into(),
            (None, _) => r.benchmarks.to_string(),
        };
        let _ = writeln!(
            out,
            "{:>5}  {:<20}  {:<16}  {:<14}  {:<24}  {:<16}  {value}",
            r.id,
            utc(r.started_at),
            r.tag.as_deref().unwrap_or("-"),
            r.git_commit,
            r.kernel,
            r.testbed.as_deref().unwrap_or("-")
        );
    }
    out
}

/// Stored paired comparisons, newest first, with their geometric-mean ratio.
pub fn paired(rows: &[(i64, PairedRecord)]) -> String {
    let mut out = format!(
        "{:>5}  {:<20}  {:<16}  {:>5}  {:<32}  {:<32}  geomean B/A\n",
        "ab", "started (UTC)", "tag", "cases", "A", "B"
    );
    for (id, r) in rows {
        let geomean = r.geomean_ratio.map_or("-".into(), |g| {
            format!("{g:.4} ({} slower, {} faster)", r.count(Verdict::Slower), r.count(Verdict::Faster))
        });
        let _ = writeln!(
            out,
            "{id:>5}  {:<20}  {:<16}  {:>5}  {:<32}  {:<32}  {geomean}",
            utc(r.environment.started_at),
            r.tag.as_deref().unwrap_or("-"),
            r.cases.len(),
            r.a,
            r.b,
        );
    }
    out
}

/// Stored live runs, newest first, with the first step's received rate.
pub fn live(rows: &[(i64, LiveRecord)]) -> String {
    let mut out = format!(
        "{:>5}  {:<20}  {:<16}  {:<32}  {:<10}  {:>5}  Mpps (first step)\n",
        "live", "started (UTC)", "tag", "program", "sweep", "steps"
    );
    for (id, r) in rows {
        let _ = writeln!(
            out,
            "{id:>5}  {:<20}  {:<16}  {:<32}  {:<10}  {:>5}  {}",
            utc(r.environment.started_at),
            r.tag.as_deref().unwrap_or("-"),
            r.program,
            r.sweep.map_or("-", |v| v.name()),
            r.steps.len(),
            r.steps.first().map_or("-".into(), |s| format!("{:.3}", s.received_pps / 1e6))
        );
    }
    out
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

#[cfg(test)]
mod tests {
    #[test]
    fn utc_dates_cross_leap_days_and_centuries() {
        assert_eq!(super::utc(0), "1970-01-01 00:00:00");
        assert_eq!(super::utc(951_782_400), "2000-02-29 00:00:00");
        assert_eq!(super::utc(1_795_464_000 + 3661), "2026-11-23 21:01:01");
    }
}
