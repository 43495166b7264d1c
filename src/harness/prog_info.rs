//! What the kernel made of a loaded program: tag and instruction sizes,
//! recorded with each result (a changed tag means changed code).

use std::os::fd::{AsRawFd, BorrowedFd};

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys;

use crate::record::ProgramRecord;

pub fn program_record(fd: BorrowedFd<'_>) -> Result<ProgramRecord> {
    // SAFETY: zero is a valid bpf_prog_info; the kernel fills at most `len` bytes.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libbpf_sys::bpf_prog_info>() as u32;
    let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    if rc != 0 {
        bail!("BPF_OBJ_GET_INFO_BY_FD: {}", std::io::Error::last_os_error());
    }
    let name: Vec<u8> = info.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    Ok(ProgramRecord {
        name: String::from_utf8_lossy(&name).into_owned(),
        tag: info.tag.iter().map(|b| format!("{b:02x}")).collect(),
        xlated_bytes: info.xlated_prog_len,
        jited_bytes: info.jited_prog_len,
    })
}
