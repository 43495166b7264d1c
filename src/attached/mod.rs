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

use anyhow::{Result, bail};

use crate::harness::BatchTiming;
use crate::kernel::bpf_stats::RunStats;
use crate::trigger::TriggerKind;

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

/// A batch of `events` of a trigger timed by the kernel's statistics of
/// the program `fd` (named `name`): its runs and their time, or an error
/// when the events did not run it at all.
pub fn time_events(
    fd: BorrowedFd<'_>,
    name: &str,
    triggers: &mut Triggers,
    kind: &TriggerKind,
    events: u32,
) -> Result<BatchTiming> {
    let started_ns = crate::system::monotonic_ns();
    let trigger = triggers.get(kind)?;
    let counted = runs_during(&[fd], || trigger.fire(u64::from(events)))?[0];
    if counted.run_cnt == 0 {
        bail!("{events} events of {} gave '{name}' no run", kind.describe());
    }
    Ok(BatchTiming { started_ns, elapsed_ns: counted.run_time_ns, iters: counted.run_cnt })
}
