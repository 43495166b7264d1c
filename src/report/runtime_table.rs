//! Kernel and userspace side by side (`run --runtime both`): each
//! scenario's median in both runtimes and their ratio, from one run.

use super::grid::{self, Grid};
use crate::record::{RunRecord, Runtime, ScenarioRecord};

fn median(r: &ScenarioRecord) -> Option<f64> {
    r.measurement().map(|m| m.summary.median)
}

/// "median (CV, n)" of a side, or why it has none: N/A where it cannot
/// run (the reason is under the main table), failed where it failed.
fn cell(r: &ScenarioRecord) -> String {
    match r.measurement() {
        Some(m) => format!("{:.2} ({:.1}%, n={})", m.summary.median, m.summary.cv * 100.0, m.summary.n),
        None if r.unavailable.is_some() => "N/A".into(),
        None => "failed".into(),
    }
}

/// The table, or nothing when the run has no scenario measured in both.
pub fn render(run: &RunRecord) -> String {
    let pairs: Vec<(&ScenarioRecord, &ScenarioRecord)> = run
        .results
        .iter()
        .filter(|k| k.runtime == Runtime::Kernel)
        .filter_map(|k| {
            run.results
                .iter()
                .find(|u| u.runtime == Runtime::User && u.workload == k.workload && u.name == k.name)
                .map(|u| (k, u))
        })
        .collect();
    if pairs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nKernel vs userspace runtime (median ns/op of this run (CV, samples), loop included in both):\n",
    );
    let mut g = Grid::new(vec![
        grid::left("scenario"),
        grid::right("kernel"),
        grid::right("userspace"),
        grid::right("user/kernel"),
    ]);
    for (k, u) in pairs {
        let ratio = match (median(k), median(u)) {
            (Some(k), Some(u)) if k > 0.0 => format!("{:.2}x", u / k),
            _ => "-".into(),
        };
        g.row(vec![k.name.clone(), cell(k), cell(u), ratio]);
    }
    out.push_str(&g.plain());
    out
}
