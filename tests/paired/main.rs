//! Paired comparisons: builds, objects and sysctls compared round by round.
//!
//! One test binary per area (fewer links, one copy of the helpers);
//! tests that time programs or change what others see of the kernel hold
//! the machine alone (`common::machine`), the others run side by side.

#[path = "../common/mod.rs"]
mod common;

mod ab;
mod compilers;
mod suites;
mod sysctl;
