//! Measuring in the kernel: the runner, the kernel boundary, the map suites, timing modes, the body inline, a user's own objects, programs attached on their hooks.
//!
//! One test binary per area (fewer links, one copy of the helpers);
//! tests that time programs or change what others see of the kernel hold
//! the machine alone (`common::machine`), the others run side by side.

#[path = "../common/mod.rs"]
mod common;

mod attached;
mod aya;
mod corpus;
mod framework_tests;
mod inline;
mod kernel;
mod maps;
mod objects;
mod runner;
mod state_checks;
mod timing_modes;
