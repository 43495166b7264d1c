//! Gathers what the HTML report shows from a history: the newest run, the
//! newest on each kernel, paired comparisons, live sweeps, and every
//! benchmark's change points.

use anyhow::Result;

use super::changes::find_changes;
use crate::history::{History, RunFilter};
use crate::record::page::PageContents;
use crate::stats::change_points::Options;

/// How many of the newest paired comparisons and live sweeps are shown.
const NEWEST: usize = 5;

/// Reads what the report shows from `history`, of the runs `selection`
/// admits (trends: of the benchmarks named, where given).
pub fn gather(history: &History, benchmarks: Option<&[String]>, selection: &RunFilter) -> Result<PageContents> {
    let runs = history.list_in(&[], usize::MAX >> 1, selection)?;
    let latest = runs.first().map(|r| Ok::<_, anyhow::Error>((r.stamp.run, history.load(r.stamp.run)?))).transpose()?;
    let mut newest_per_kernel: Vec<i64> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in &runs {
        if seen.insert(r.stamp.kernel.clone()) {
            newest_per_kernel.push(r.stamp.run);
        }
    }
    let kernels = newest_per_kernel.iter().map(|&id| Ok((id, history.load(id)?))).collect::<Result<Vec<_>>>()?;
    let paired = history.list_paired_in(NEWEST, selection)?;
    let live = history
        .list_live_in(usize::MAX >> 1, selection)?
        .into_iter()
        .filter(|(_, r)| r.sweep.is_some() && !r.steps.is_empty())
        .take(NEWEST)
        .collect();
    let changes = find_changes(history, benchmarks, selection, &Options::default())?;
    Ok(PageContents {
        source: history.location().to_string(),
        selection: changes.selection.clone(),
        latest,
        kernels,
        paired,
        live,
        changes,
    })
}
