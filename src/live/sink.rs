//! The return path's sink: what the program under test sends back
//! (XDP_TX) arrives at the generator's end of the veth, where a
//! two-instruction XDP_DROP program frees it at once. Without a program
//! there, the veth would refuse the frames (a veth takes XDP frames only
//! into a peer running XDP) and the host's stack would see the rest.

use std::os::fd::{FromRawFd, OwnedFd};

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys as sys;

const XDP_DROP: i32 = 1;

/// Loads `r0 = XDP_DROP; exit`.
pub fn load_drop_program() -> Result<OwnedFd> {
    // SAFETY: zero is a valid instruction to fill in.
    let mut mov: sys::bpf_insn = unsafe { std::mem::zeroed() };
    mov.code = (sys::BPF_ALU64 | sys::BPF_MOV | sys::BPF_K) as u8;
    mov.imm = XDP_DROP;
    // SAFETY: as above.
    let mut exit: sys::bpf_insn = unsafe { std::mem::zeroed() };
    exit.code = (sys::BPF_JMP | sys::BPF_EXIT) as u8;
    let insns = [mov, exit];
    // SAFETY: valid instructions, name and license; no options.
    let fd = unsafe {
        sys::bpf_prog_load(sys::BPF_PROG_TYPE_XDP, c"bpfbench_sink".as_ptr(), c"GPL".as_ptr(), insns.as_ptr(), insns.len() as _, std::ptr::null_mut())
    };
    if fd < 0 {
        bail!("loading the return path's XDP_DROP program: {}", std::io::Error::from_raw_os_error(-fd));
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
