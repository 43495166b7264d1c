//! The command line and what a user reads: commands and their errors, the docs' commands, tables, the code's layers.
//!
//! One test binary per area (fewer links, one copy of the helpers);
//! tests that time programs or change what others see of the kernel hold
//! the machine alone (`common::machine`), the others run side by side.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod docs;
mod layers;
mod packets;
mod tables;
