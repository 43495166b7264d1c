//! The listings of stored results: `history` (runs, one benchmark's
//! medians), `history --ab` (paired comparisons) and `history --live`.

use super::grid::{self, Column, Grid};
use crate::record::RunSummary;
use crate::record::live::LiveRecord;
use crate::record::paired::PairedRecord;
use crate::stats::two_sample::Verdict;

/// Stored runs, newest first; with `benchmarks`, a row per run and benchmark
/// it measured, with the median (a benchmark column when there are several).
pub fn runs(runs: &[RunSummary], benchmarks: &[String]) -> String {
    let mut columns = vec![grid::left("commit"), grid::left("kernel"), grid::left("testbed")];
    match benchmarks {
        [] => columns.push(grid::right("benchmarks")),
        [one] => columns.push(grid::left(format!("{one}: p50 ns/op [95% CI] n"))),
        _ => columns.extend([grid::left("benchmark"), grid::left("p50 ns/op [95% CI] n")]),
    }
    let rows = runs.iter().map(|r| {
        let mut cells =
            vec![r.stamp.git_commit.clone(), r.stamp.kernel.clone(), r.testbed.clone().unwrap_or_else(|| "-".into())];
        let median = match (r.median_ns, r.ci95_ns, r.samples) {
            (Some(m), Some((lo, hi)), Some(n)) => format!("{m:.2} [{lo:.2}, {hi:.2}] n={n}"),
            (Some(m), _, _) => format!("{m:.2}"),
            (None, _, _) => "-".into(),
        };
        match benchmarks {
            [] => cells.push(r.benchmarks.to_string()),
            [_] => cells.push(median),
            _ => cells.extend([r.benchmark.clone().unwrap_or_default(), median]),
        }
        (r.stamp.run, r.stamp.started_at, r.stamp.tag.as_ref(), cells)
    });
    listing("run", columns, rows)
}

/// Stored paired comparisons, newest first, with their geometric-mean ratio.
pub fn paired(rows: &[(i64, PairedRecord)]) -> String {
    let columns = vec![grid::right("cases"), grid::left("A"), grid::left("B"), grid::left("geomean B/A")];
    let rows = rows.iter().map(|(id, r)| {
        let geomean = r.geomean_ratio.map_or("-".into(), |g| {
            format!("{g:.4} ({} slower, {} faster)", r.count(Verdict::Slower), r.count(Verdict::Faster))
        });
        let cells = vec![r.cases.len().to_string(), r.a.clone(), r.b.clone(), geomean];
        (*id, r.environment.started_at, r.tag.as_ref(), cells)
    });
    listing("ab", columns, rows)
}

/// Stored live runs, newest first, with the first step's received rate.
pub fn live(rows: &[(i64, LiveRecord)]) -> String {
    let columns =
        vec![grid::left("program"), grid::left("sweep"), grid::right("steps"), grid::right("Mpps (first step)")];
    let rows = rows.iter().map(|(id, r)| {
        let cells = vec![
            r.program.clone(),
            r.sweep.map_or("-", |v| v.name()).to_string(),
            r.steps.len().to_string(),
            r.steps.first().map_or("-".into(), |s| format!("{:.3}", s.rates.received_pps / 1e6)),
        ];
        (*id, r.environment.started_at, r.tag.as_ref(), cells)
    });
    listing("live", columns, rows)
}

/// A listing of stored records: each record's id (under `id_head`), when
/// it started and its tag, then the kind's `own` columns.
fn listing<'a>(
    id_head: &str,
    own: Vec<Column>,
    rows: impl Iterator<Item = (i64, u64, Option<&'a String>, Vec<String>)>,
) -> String {
    let mut columns = vec![grid::right(id_head), grid::left("started (UTC)"), grid::left("tag")];
    columns.extend(own);
    let mut g = Grid::new(columns);
    for (id, started_at, tag, cells) in rows {
        let mut row = vec![id.to_string(), utc(started_at), tag.map_or("-", String::as_str).to_string()];
        row.extend(cells);
        g.row(row);
    }
    g.plain()
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
