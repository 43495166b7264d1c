//! Change points in stored history (`bpfbench changes`): each benchmark's
//! per-run medians on each testbed (host and each guest apart: an emulated
//! guest's times are not the hardware's), in the order the runs were made, split
//! where they shifted (stats::change_points), each change told with the
//! medians on either side, the runs and commits at that point, what else
//! changed there, and the paired comparisons that measured the step.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::history::{History, RunFilter, SeriesKey};
use crate::record::changes::{CHANGES_SCHEMA, Change, ChangesRecord, PairedEvidence, Point, Series};
use crate::stats::change_points::{Options, e_divisive};
use crate::stats::two_sample::spread_of_medians;

/// The change points of every series `selection` admits (of the
/// benchmarks named, where given).
pub fn find_changes(
    history: &History,
    benchmarks: Option<&[String]>,
    selection: &RunFilter,
    options: &Options,
) -> Result<ChangesRecord> {
    let mut by_series: BTreeMap<SeriesKey, Vec<Point>> = BTreeMap::new();
    for (key, point) in history.series_points(selection)? {
        if benchmarks.is_some_and(|b| !b.contains(&key.benchmark)) {
            continue;
        }
        by_series.entry(key).or_default().push(point);
    }
    let paired = history.list_paired(usize::MAX >> 1)?;
    let mut series = Vec::new();
    for (SeriesKey { benchmark, testbed_name: testbed, guest, .. }, points) in by_series {
        let medians: Vec<f64> = points.iter().map(|p| p.median_ns).collect();
        let found = e_divisive(&medians, options);
        let bounds: Vec<usize> =
            std::iter::once(0).chain(found.iter().map(|c| c.index)).chain([points.len()]).collect();
        let mut changes = Vec::new();
        for (k, c) in found.iter().enumerate() {
            let (before, after) = (&points[c.index - 1], &points[c.index]);
            let (seg_before, seg_after) = (&medians[bounds[k]..bounds[k + 1]], &medians[bounds[k + 1]..bounds[k + 2]]);
            let (median_before, median_after) = (median(seg_before), median(seg_after));
            let environment_changes = match (history.load(before.stamp.run), history.load(after.stamp.run)) {
                (Ok(a), Ok(b)) => super::environment_changes(&a, &b),
                _ => Vec::new(),
            };
            let evidence = paired
                .iter()
                .filter(|(_, r)| (before.stamp.started_at..=after.stamp.started_at).contains(&r.environment.started_at))
                .flat_map(|(id, r)| {
                    r.cases.iter().filter(|c| c.benchmark_name() == benchmark).map(move |c| PairedEvidence {
                        id: *id,
                        a: r.a.clone(),
                        b: r.b.clone(),
                        ratio: c.ratio,
                        ratio_ci95: c.ratio_ci95,
                        rounds: c.round_ratios.len(),
                        pairs: c.ratios.len(),
                        verdict: c.verdict.as_str().to_string(),
                    })
                })
                .collect();
            changes.push(Change {
                index: c.index,
                before: before.clone(),
                after: after.clone(),
                median_before,
                median_after,
                runs_before: bounds[k + 1] - bounds[k],
                runs_after: bounds[k + 2] - bounds[k + 1],
                spread_before: spread_of_medians(seg_before),
                spread_after: spread_of_medians(seg_after),
                ratio: median_after / median_before,
                p_value: c.p_value,
                environment_changes,
                paired: evidence,
            });
        }
        series.push(Series { benchmark, testbed, guest, points, changes });
    }
    Ok(ChangesRecord {
        schema: CHANGES_SCHEMA.into(),
        selection: describe(selection),
        method: format!(
            "E-divisive means on the logarithms of per-run medians, oldest first, per benchmark and testbed; \
             permutation test ({} permutations), significance {}, at least {} runs on each side",
            options.permutations, options.alpha, options.min_segment
        ),
        alpha: options.alpha,
        min_segment: options.min_segment,
        series,
    })
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::percentile_sorted(&s, 50.0)
}

/// "testbed ci-large, kernel 6.1", or "all runs".
fn describe(s: &RunFilter) -> String {
    let parts: Vec<String> = [("testbed", &s.testbed), ("kernel", &s.kernel), ("CPU model containing", &s.cpu_model)]
        .iter()
        .filter_map(|(what, v)| v.as_ref().map(|v| format!("{what} {v}")))
        .collect();
    if parts.is_empty() { "all runs".into() } else { parts.join(", ") }
}
