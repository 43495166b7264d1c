//! Objects pinned in the BPF filesystem by someone else (a user's control
//! plane): bpfbench opens them, and never pins anything itself.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys as sys;

/// Opens the map pinned at `path`.
pub fn open_pinned_map(path: &Path) -> Result<OwnedFd> {
    if !path.exists() {
        bail!("{} does not exist; pin the map there first (bpffs is usually mounted at /sys/fs/bpf)", path.display());
    }
    let c = CString::new(path.as_os_str().as_encoded_bytes()).context("the path holds a NUL byte")?;
    // SAFETY: a valid C string.
    let fd = unsafe { sys::bpf_obj_get(c.as_ptr()) };
    if fd < 0 {
        bail!("{} is not a pinned BPF object: {}", path.display(), std::io::Error::last_os_error());
    }
    // SAFETY: bpf_obj_get returned a new fd we now own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut info: sys::bpf_map_info = unsafe { std::mem::zeroed() };
    let mut len = size_of::<sys::bpf_map_info>() as u32;
    // SAFETY: info is plain data of `len` bytes.
    let rc = unsafe { sys::bpf_map_get_info_by_fd(std::os::fd::AsRawFd::as_raw_fd(&fd), &mut info, &mut len) };
    if rc != 0 {
        bail!("{} is pinned, but not a map", path.display());
    }
    Ok(fd)
}
