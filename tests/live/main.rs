//! Live frames on veths: live runs, the generator, and what a run leaves behind.
//!
//! One test binary per area (fewer links, one copy of the helpers);
//! tests that time programs or change what others see of the kernel hold
//! the machine alone (`common::machine`), the others run side by side.

#[path = "../common/mod.rs"]
mod common;

mod generator;
mod leftovers;
mod live;
