//! Spacers: kernel memory of a random size held while a build loads, so
//! that its JIT image and maps land somewhere new.
//!
//! The kernel's allocators are first-fit: a program or map loaded right
//! after another was freed takes the freed place. Loading a build afresh
//! then lands where the last load was, and a paired comparison's rounds
//! all share one placement, whose speed differs from another's by a
//! percent or two (measured: identical load-balancer builds sat 1% apart
//! for a whole process). A spacer of random size, allocated before a load
//! and freed after it, moves where the load lands.

use std::os::fd::OwnedFd;

use anyhow::{Context, Result};
use rand::Rng;

use crate::kernel::load;

/// Spacer programs are up to this many instructions: about 8 KB of JIT
/// image at 2 bytes each, past the 4 KB over which code addresses map onto
/// instruction-cache sets.
const MAX_PROGRAM_INSNS: u32 = 4096;
/// Spacer maps are arrays of up to this many 8-byte values (2 MB).
const MAX_MAP_ENTRIES: u32 = 256 * 1024;

/// Memory held until dropped.
pub struct Spacer {
    _program: OwnedFd,
    _map: OwnedFd,
}

impl Spacer {
    /// A program and a map of random sizes.
    pub fn random(rng: &mut impl Rng) -> Result<Spacer> {
        let program = load::filler_program(c"bench_spacer", rng.random_range(1..=MAX_PROGRAM_INSNS))
            .context("loading a spacer program")?;
        let map = load::filler_map(c"bench_spacer", rng.random_range(1..=MAX_MAP_ENTRIES))
            .context("creating a spacer map")?;
        Ok(Spacer { _program: program, _map: map })
    }
}
