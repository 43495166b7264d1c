//! bpfbench: accurate in-kernel benchmarks of eBPF programs.
//!
//! Layers, lowest first. A module uses only modules of lower layers (never
//! one of its own layer), and only `kernel` uses `libbpf_sys`;
//! `tests/cli/layers.rs` reads this list and fails on an import against it.
//!
//! 1. `stats`, `packet`, `insn`: numbers, packets and BPF instructions as data;
//! 2. `record`: the plain results model a run fills and everything else reads;
//! 3. `analysis`: figures derived from raw counts (kernel instructions by symbol);
//! 4. `kernel`: the one boundary to the kernel (libbpf, BPF syscalls);
//! 5. `system`: the machine and the process (CPUs, privileges, environment, Ctrl-C);
//! 6. `uvm`: the userspace runtime (interpreter, JIT, maps, helpers);
//! 7. `harness`, `history`, `traffic`, `trigger`: the workload traits, runner and
//!    timing loop; stored runs; the traffic generator; what fires attached programs;
//! 8. `compare`, `live`, `engine`, `attached`: decisions between runs; live runs
//!    on a veth; the timing engine that times any loaded program (in BPF or per
//!    call); programs on their real hooks under a trigger (bpf_stats, slowdown);
//! 9. `report`: rendering records (the output formats);
//! 10. `session`: a run or a paired comparison from its command-line options,
//!     stored and gated;
//! 11. `workloads`: each workload in its own folder, BPF C beside its driver,
//!     registered in one line.

pub mod analysis;
pub mod attached;
pub mod compare;
pub mod engine;
pub mod harness;
pub mod history;
pub mod insn;
pub mod kernel;
pub mod live;
pub mod packet;
pub mod record;
pub mod report;
pub mod session;
pub mod stats;
pub mod system;
pub mod traffic;
pub mod trigger;
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
