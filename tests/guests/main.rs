//! Other kernels booted as guests: Debian's kernels running bpfbench, and `bpfbench vm`.
//!
//! One test binary per area (fewer links, one copy of the helpers);
//! tests that time programs or change what others see of the kernel hold
//! the machine alone (`common::machine`), the others run side by side.

#[path = "../common/mod.rs"]
mod common;

mod attached;
mod debian;
mod kernel_insns;
mod vm;
