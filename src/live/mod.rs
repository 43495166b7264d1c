//! `bpfbench live`: the program under test attached to a real interface
//! (one end of a veth pair in a namespace of bpfbench's own) while the
//! traffic generator sends to it, measured per step of a sweep: offered
//! and received packets per second, the program's verdicts, and its
//! ns/packet from the kernel's `bpf_stats`.
//!
//! A program reaches this module through [`LiveProgram`]: the built-in load
//! balancer and a user's own object each implement it beside their other
//! code; this module knows neither.

pub mod attached;
pub mod run;
pub mod sink;
pub mod sweep;

use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;

use anyhow::Result;

use crate::record::live::{CrossCheck, LiveStep, StepRatio};
pub use attached::{Attached, LiveSettings};
pub use run::{LiveObserver, LivePlan, run};
pub use sweep::Sweep;

/// A program `bpfbench live` can attach and read.
pub trait LiveProgram {
    /// What results call it ("xdp-lb", "xdp_pass in pass.bpf.o").
    fn label(&self) -> String;
    /// The loaded XDP program.
    fn prog(&self) -> BorrowedFd<'_>;
    /// The packet spec sent when the user gives none.
    fn default_packet(&self) -> String;
    /// Readies the program for a step (the load balancer empties its
    /// connection tables, so every step starts cold and warms up alike).
    fn reset(&mut self) -> Result<()>;
    /// The program's own counters so far, by name (the load balancer's
    /// LRU hits and misses); a step records how much each grew.
    fn counters(&self) -> Result<BTreeMap<String, u64>> {
        Ok(BTreeMap::new())
    }
    /// Figures the program makes of a step's `counters` (how much each
    /// grew) when the step sent `flows` distinct flows, each with what it
    /// predicts (the load balancer: its LRU hit rate against entries / flows).
    fn ratios(&self, _counters: &BTreeMap<String, u64>, _flows: u64) -> Vec<StepRatio> {
        Vec::new()
    }
    /// Whether the program sets `steps`' live figures beside in-BPF
    /// figures of its own (the load balancer does, for steps that saw its
    /// connection table).
    fn cross_checks(&self, _steps: &[LiveStep]) -> bool {
        false
    }
    /// The live figures of `steps` beside the program's in-BPF figures,
    /// timed on `cpu` after the live steps.
    fn cross_check(&mut self, _steps: &[LiveStep], _cpu: usize) -> Result<CrossCheck> {
        anyhow::bail!("{} has no in-BPF figures to set beside the live ones", self.label())
    }
}
