//! bpfbench: accurate in-kernel benchmarks of eBPF programs.
//!
//! Layers, each using only those listed before it:
//! - `stats`: summaries and two-sample tests of plain numbers (no BPF);
//! - `record`: the results model a run fills and everything else reads;
//! - `system`: probes of the machine and process set-up (CPUs, privileges,
//!   environment capture, Ctrl-C);
//! - `packet`: packet comparison shared by packet workloads;
//! - `harness`: the workload traits, the runner that owns time, the host
//!   side of the in-BPF timing loop;
//! - `workloads`: each workload in its own folder, BPF C beside its driver,
//!   registered in one line;
//! - `report` renders records; `history` stores them; `compare` decides
//!   between runs; `session` runs a workload's rounds, stores and gates them.

pub mod compare;
pub mod harness;
pub mod history;
pub mod live;
pub mod object_file;
pub mod packet;
pub mod record;
pub mod report;
pub mod session;
pub mod stats;
pub mod system;
pub mod traffic;
pub mod uvm;
pub mod workloads;

/// Includes the libbpf-rs skeleton that build.rs generated for
/// `src/**/NAME.bpf.c`, as a module named `skel`.
#[macro_export]
macro_rules! bpf_skeleton {
    ($name:literal) => {
        #[allow(clippy::all, dead_code, unused_imports, non_camel_case_types, non_snake_case, non_upper_case_globals)]
        pub(crate) mod skel {
            include!(concat!(env!("OUT_DIR"), "/", $name, ".skel.rs"));
        }
    };
}

/// The bytes of the BPF object build.rs compiled from `src/**/NAME.bpf.c`,
/// for loading through libbpf directly (the skeleton keeps its copy private).
#[macro_export]
macro_rules! bpf_object_bytes {
    ($name:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".bpf.o"))
    };
}
