//! Programs attached on their real hooks, measured under the trigger that
//! fires them: their runs counted and timed by the kernel's run-time
//! statistics (`bpf_stats`), and what they cost the workload, the trigger
//! timed with them attached against without (the slowdown). Used by the
//! attached workload (your own object) and by `bpfbench overhead` (a
//! running tool's programs, which bpfbench neither loads nor changes).

mod empty;
mod runs;
mod slowdown;
mod triggers;

use std::os::fd::BorrowedFd;

use anyhow::Result;

use crate::kernel::bpf_stats::RunStats;

pub use empty::EmptyOnHook;
pub use runs::{RunsJudged, judge as judge_runs};
pub use slowdown::{SlowdownPlan, measure_slowdown};
pub use triggers::Triggers;

/// Each program's counters, in the order given.
pub fn read_stats(programs: &[BorrowedFd<'_>]) -> Result<Vec<RunStats>> {
    programs.iter().map(|p| RunStats::read(*p)).collect()
}

/// What each program counted while `work` ran: the counters after less before.
pub fn runs_during(programs: &[BorrowedFd<'_>], work: impl FnOnce() -> Result<()>) -> Result<Vec<RunStats>> {
    let before = read_stats(programs)?;
    work()?;
    let after = read_stats(programs)?;
    Ok(after.iter().zip(&before).map(|(a, b)| a.since(*b)).collect())
}
