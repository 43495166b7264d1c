//! What the kernel made of a loaded program: tag, instruction sizes and
//! verified instructions, recorded with each result (a changed tag means
//! changed code).

use std::os::fd::{AsRawFd, BorrowedFd};

use anyhow::{Result, bail};
use libbpf_rs::libbpf_sys;

use crate::record::{ProgramRecord, ProgramSize, VerifierStats};

pub(crate) fn prog_info(fd: BorrowedFd<'_>) -> Result<libbpf_sys::bpf_prog_info> {
    // SAFETY: zero is a valid bpf_prog_info; the kernel fills at most `len` bytes.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<libbpf_sys::bpf_prog_info>() as u32;
    let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    if rc != 0 {
        bail!("BPF_OBJ_GET_INFO_BY_FD: {}", std::io::Error::last_os_error());
    }
    Ok(info)
}

/// The ids of the maps the loaded program uses.
pub fn map_ids(fd: BorrowedFd<'_>) -> Result<Vec<u32>> {
    let n = prog_info(fd)?.nr_map_ids;
    let mut ids = vec![0u32; n as usize];
    // SAFETY: zero is a valid bpf_prog_info; the kernel writes at most `nr_map_ids` ids.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    info.nr_map_ids = n;
    info.map_ids = ids.as_mut_ptr() as u64;
    let mut len = size_of::<libbpf_sys::bpf_prog_info>() as u32;
    let rc = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
    if rc != 0 {
        bail!("BPF_OBJ_GET_INFO_BY_FD: {}", std::io::Error::last_os_error());
    }
    ids.truncate(info.nr_map_ids.min(n) as usize);
    Ok(ids)
}

/// The kernel's id of the loaded program: what a prog array holding it gives back.
pub fn prog_id(fd: BorrowedFd<'_>) -> Result<u32> {
    Ok(prog_info(fd)?.id)
}

/// The program's record; its verifier figures are those the kernel keeps
/// (verified instructions) unless `stats` from the load log are given.
pub fn program_record(fd: BorrowedFd<'_>, stats: Option<VerifierStats>) -> Result<ProgramRecord> {
    let info = prog_info(fd)?;
    let name: Vec<u8> = info.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    let mut verifier = stats.unwrap_or_default();
    if verifier.processed_insns.is_none() && info.verified_insns > 0 {
        verifier.processed_insns = Some(info.verified_insns.into());
    }
    Ok(ProgramRecord {
        name: String::from_utf8_lossy(&name).into_owned(),
        tag: info.tag.iter().map(|b| format!("{b:02x}")).collect(),
        size: ProgramSize { xlated_bytes: info.xlated_prog_len, jited_bytes: info.jited_prog_len },
        verifier: Some(verifier),
    })
}

/// Completes log statistics with what the kernel keeps about the program.
pub fn fill_from_kernel(fd: BorrowedFd<'_>, stats: &mut VerifierStats) -> Result<()> {
    let info = prog_info(fd)?;
    if stats.processed_insns.is_none() && info.verified_insns > 0 {
        stats.processed_insns = Some(info.verified_insns.into());
    }
    Ok(())
}

/// Every loaded program's JIT images, as kallsyms would name them
/// (`bpf_prog_<tag>_<name>`; a subprogram's with `[N]`): (start, length,
/// name). From the programs' info, which root reads whatever
/// `net.core.bpf_jit_kallsyms` and `bpf_jit_harden` say (kallsyms hides
/// the images when hardening is on).
pub fn jit_images() -> Vec<(u64, u32, String)> {
    let opts =
        libbpf_rs::query::ProgInfoQueryOptions::default().include_jited_ksyms(true).include_jited_func_lens(true);
    let mut images = Vec::new();
    for p in libbpf_rs::query::ProgInfoIter::with_query_opts(opts) {
        let tag: String = p.tag.0.iter().map(|b| format!("{b:02x}")).collect();
        let name = p.name.to_string_lossy();
        for (i, (addr, len)) in p.jited_ksyms.iter().zip(&p.jited_func_lens).enumerate() {
            let label = if i == 0 { format!("bpf_prog_{tag}_{name}") } else { format!("bpf_prog_{tag}_{name}[{i}]") };
            images.push((*addr as u64, *len, label));
        }
    }
    images
}
