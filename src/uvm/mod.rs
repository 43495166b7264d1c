//! The userspace runtime: the same BPF object run outside the kernel.
//!
//! An object is opened and prepared by libbpf exactly as for the kernel
//! ([`crate::kernel::prepared`]: maps created, CO-RE, subprogram and map
//! relocations done), and each program's final instructions are taken from
//! it ([`crate::insn::Insn`]); the kernel then loads the object as usual.
//! Two engines run the instructions ([`runtime::UserRuntime`] picks):
//! - [`jit`], x86-64 code for the programs the kernel's verifier accepted,
//!   which is what `--runtime user` times;
//! - [`interp::Interpreter`], which checks every access against the
//!   regions it handed out and counts what it executes (`--metric insns`,
//!   `fuzz-uvm`, anything unverified).
//!
//! Both use the maps of [`maps`] (array, hash, LRU with the kernel's
//! eviction, LPM, maps of maps, per-CPU arrays and hashes, global data),
//! copied from the kernel's after setup, and the helpers of [`helpers`].

pub mod fuzz;
pub mod helpers;
pub mod interp;
pub mod jit;
pub mod maps;
pub mod memory;
pub mod runtime;
pub mod sampler;
pub mod tc;
pub mod uapi;
pub mod xdp;

/// What a run on a packet (XDP, tc) returned and left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketOutcome {
    pub verdict: u32,
    pub packet: Vec<u8>,
}

/// A userspace run as the harness compares runs (no kernel timing: 0).
impl From<PacketOutcome> for crate::kernel::test_run::RunOutput {
    fn from(out: PacketOutcome) -> Self {
        Self { retval: out.verdict, packet: out.packet, duration_ns: 0 }
    }
}
pub use interp::{Counts, Interpreter, VmError};

/// What the userspace runtime does not have (a map type), which a program
/// needs: the program runs in the kernel only.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Lacks(pub String);

/// Whether `e` stops at something this runtime does not have (a helper,
/// kfunc or map type), rather than at a fault of the program or the runtime.
pub fn lacks(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<Lacks>() || c.downcast_ref::<VmError>().is_some_and(VmError::lacks))
}
pub use runtime::{RunCounts, UserRuntime};
