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

use std::os::fd::{FromRawFd, OwnedFd};

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys as sys;
use rand::Rng;

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

fn insn(code: u8, imm: i32) -> sys::bpf_insn {
    // SAFETY: zero is a valid instruction to fill in.
    let mut i: sys::bpf_insn = unsafe { std::mem::zeroed() };
    i.code = code;
    i.imm = imm;
    i
}

impl Spacer {
    /// A program and a map of random sizes.
    pub fn random(rng: &mut impl Rng) -> Result<Spacer> {
        // r0 = 0 (BPF_ALU64 | BPF_MOV | BPF_K), ..., exit
        let n = rng.random_range(1..=MAX_PROGRAM_INSNS);
        let mut insns = vec![insn(0xb7, 0); n as usize];
        insns.push(insn(0x95, 0));
        let (name, license) = (c"bench_spacer", c"GPL");
        // SAFETY: valid instructions and C strings live across the call; NULL opts are defaults.
        let fd = unsafe {
            sys::bpf_prog_load(
                sys::BPF_PROG_TYPE_SOCKET_FILTER,
                name.as_ptr(),
                license.as_ptr(),
                insns.as_ptr(),
                insns.len() as _,
                std::ptr::null_mut(),
            )
        };
        if fd < 0 {
            bail!("loading a spacer program: {}", std::io::Error::last_os_error());
        }
        // SAFETY: a new fd we own.
        let program = unsafe { OwnedFd::from_raw_fd(fd) };
        let entries = rng.random_range(1..=MAX_MAP_ENTRIES);
        // SAFETY: a C string name; NULL opts are defaults.
        let fd = unsafe {
            sys::bpf_map_create(sys::BPF_MAP_TYPE_ARRAY, c"bench_spacer".as_ptr(), 4, 8, entries, std::ptr::null())
        };
        if fd < 0 {
            bail!("creating a spacer map: {}", std::io::Error::last_os_error());
        }
        // SAFETY: a new fd we own.
        let map = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Spacer { _program: program, _map: map })
    }
}
