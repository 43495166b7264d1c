//! The kernel's run-time statistics of attached programs (`bpf_stats`):
//! with them on, every run of every BPF program reads the clock before and
//! after and adds the difference to the program's `run_time_ns`, and one
//! to its `run_cnt`. bpfbench turns them on through `BPF_ENABLE_STATS`,
//! whose fd keeps them on only while it is open, never through the
//! `kernel.bpf_stats_enabled` sysctl, which would outlive a killed run.

use std::os::fd::{BorrowedFd, FromRawFd, OwnedFd};

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys as sys;

/// Run-time statistics on while this lives (the fd's close turns them off
/// unless someone else holds them on).
#[derive(Debug)]
pub struct StatsEnabled(#[allow(dead_code)] OwnedFd);

/// Turns the run-time statistics on for as long as the result lives.
pub fn enable() -> Result<StatsEnabled> {
    // SAFETY: a plain syscall wrapper.
    let fd = unsafe { sys::bpf_enable_stats(sys::BPF_STATS_RUN_TIME) };
    if fd < 0 {
        bail!(
            "turning on BPF run-time statistics (BPF_ENABLE_STATS): {}; it needs Linux 5.8 or newer and CAP_SYS_ADMIN",
            std::io::Error::last_os_error()
        );
    }
    // SAFETY: a new fd we own.
    Ok(StatsEnabled(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// One program's counters as the kernel keeps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Nanoseconds spent in the program, clock reads excluded.
    pub run_time_ns: u64,
    /// Runs counted while the statistics were on.
    pub run_cnt: u64,
    /// Runs skipped because the program was already running on the CPU.
    pub recursion_misses: u64,
}

impl RunStats {
    /// The counters of the program behind `prog`.
    pub fn read(prog: BorrowedFd<'_>) -> Result<RunStats> {
        let info = super::prog_info::prog_info(prog)?;
        Ok(RunStats { run_time_ns: info.run_time_ns, run_cnt: info.run_cnt, recursion_misses: info.recursion_misses })
    }

    /// What was counted since `start`.
    pub fn since(self, start: RunStats) -> RunStats {
        RunStats {
            run_time_ns: self.run_time_ns.saturating_sub(start.run_time_ns),
            run_cnt: self.run_cnt.saturating_sub(start.run_cnt),
            recursion_misses: self.recursion_misses.saturating_sub(start.recursion_misses),
        }
    }

    /// Mean nanoseconds per run (None without runs).
    pub fn ns_per_run(self) -> Option<f64> {
        (self.run_cnt > 0).then(|| self.run_time_ns as f64 / self.run_cnt as f64)
    }
}
