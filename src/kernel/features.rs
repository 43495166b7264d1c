//! Kernel features bpfbench uses where they exist, probed at run time so a
//! missing one is reported with the kernel's reason, never faked.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};

crate::bpf_skeleton!("tracing_probe");

/// Whether the kernel loads and attaches fentry/fexit programs; the
/// error is the kernel's refusal, in one line.
pub fn tracing_programs() -> Result<(), String> {
    let mut storage = MaybeUninit::uninit();
    let open = skel::TracingProbeSkelBuilder::default()
        .open(&mut storage)
        .map_err(|e| format!("opening a tracing program: {e}"))?;
    let skel = open.load().map_err(|e| format!("fentry programs are refused by the kernel: {e}"))?;
    skel.progs.tracing_probe.attach().map(drop).map_err(|e| format!("fentry programs cannot be attached: {e}"))
}
