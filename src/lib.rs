//! bpfbench: accurate in-kernel benchmarks of eBPF programs.
//!
//! Layout: `harness` (workload trait, in-BPF timing, runner) drives
//! `workloads` (each with its BPF C beside it); `stats` and `report` know
//! nothing of BPF; `history` stores runs and `compare` decides A/B.

pub mod cli;
pub mod compare;
pub mod harness;
pub mod history;
pub mod report;
pub mod stats;
pub mod workloads;
