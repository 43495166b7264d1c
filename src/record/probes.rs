//! What the machine and the tool's own checks showed, as plain data that
//! `report` renders: the timing loop's candidate constructs (`bpfbench
//! loops`), the running kernel's capabilities (`bpfbench features`) and a
//! fuzz run of the userspace runtime (`bpfbench fuzz-uvm`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::stats::Summary;

/// One candidate's cost per iteration around an empty inlined body.
#[derive(Debug, Clone)]
pub struct LoopCost {
    pub construct: &'static str,
    pub iters: u32,
    pub summary: Summary,
}

/// What the running kernel accepted; each `Err` is the reason it did not.
#[derive(Debug, Clone)]
pub struct Capabilities {
    pub may_goto: Result<(), String>,
    pub bpf_loop: Result<(), String>,
    pub bounded_loops: Result<(), String>,
    pub global_subprog_changes_packet: Result<(), String>,
    pub xdp_live_frames: Result<(), String>,
    pub bpf_stats: Result<(), String>,
    pub btf: Result<(), String>,
}

/// What a fuzz run saw.
#[derive(Debug, Default)]
pub struct FuzzReport {
    pub programs: u64,
    pub random: u64,
    pub mutated: u64,
    /// Ran to their exit with a verdict.
    pub finished: u64,
    /// Stopped with an error naming an instruction.
    pub refused: u64,
    /// Of those, stopped by the instruction budget.
    pub budget_spent: u64,
    pub insns: u64,
    pub elapsed: Duration,
    /// Panics: (program number, message). Any is a defect.
    pub panics: Vec<(u64, String)>,
    /// Errors by their kind (the message without the instruction), the most common first.
    pub kinds: BTreeMap<String, u64>,
}
