//! Programs that only return a constant (`r0 = value; exit`): the empty
//! program per-call timing subtracts, and live runs' return-path sink.

use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys as sys;

/// Loads a program of `prog_type` that returns `value`, with the attach
/// type and flags its companion program was loaded with.
pub fn load(
    prog_type: sys::bpf_prog_type,
    name: &CStr,
    value: i32,
    attach: sys::bpf_attach_type,
    flags: u32,
) -> Result<OwnedFd> {
    // SAFETY: zero is a valid instruction to fill in.
    let mut mov: sys::bpf_insn = unsafe { std::mem::zeroed() };
    mov.code = (sys::BPF_ALU64 | sys::BPF_MOV | sys::BPF_K) as u8;
    mov.imm = value;
    // SAFETY: as above.
    let mut exit: sys::bpf_insn = unsafe { std::mem::zeroed() };
    exit.code = (sys::BPF_JMP | sys::BPF_EXIT) as u8;
    let insns = [mov, exit];
    // SAFETY: zero is a valid opts; the kernel reads `sz` first.
    let mut opts: sys::bpf_prog_load_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<sys::bpf_prog_load_opts>() as _;
    opts.expected_attach_type = attach;
    opts.prog_flags = flags;
    // SAFETY: valid instructions, name, license and options.
    let fd = unsafe {
        sys::bpf_prog_load(prog_type, name.as_ptr(), c"GPL".as_ptr(), insns.as_ptr(), insns.len() as _, &mut opts)
    };
    if fd < 0 {
        bail!(
            "loading {} (a program returning {value}): {}",
            name.to_string_lossy(),
            std::io::Error::from_raw_os_error(-fd)
        );
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
