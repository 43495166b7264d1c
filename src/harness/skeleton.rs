//! Loading libbpf-rs skeletons, and owned handles on their parts.
//!
//! Workloads keep duplicated descriptors of their skeleton's programs and
//! maps, so their state does not borrow the skeleton (which borrows its
//! open-object storage).

use std::os::fd::{AsFd, OwnedFd};

use anyhow::{Context, Result, anyhow};
use libbpf_rs::skel::OpenSkel;
use libbpf_rs::{MapCore, MapHandle};

use crate::system::libbpf_log;

/// Lines of the verifier's log an error shows.
const VERIFIER_LOG_LINES: usize = 25;

/// Loads an opened skeleton; when the kernel refuses it, the error names
/// `what` and carries the tail of the verifier's log.
pub fn load<'obj, O: OpenSkel<'obj>>(open: O, what: &str) -> Result<O::Output> {
    libbpf_log::take();
    open.load()
        .map_err(|e| anyhow!("the kernel refused {what} ({e}); verifier log tail:\n{}", libbpf_log::tail(VERIFIER_LOG_LINES)))
}

/// An owned handle on a skeleton map.
pub fn map_handle<T: std::fmt::Debug>(map: &libbpf_rs::MapImpl<'_, T>) -> Result<MapHandle> {
    MapHandle::try_from(map).with_context(|| format!("duplicating map {:?}", map.name()))
}

/// An owned handle on the map behind `fd` (opened again by its id).
pub fn map_handle_from_fd(fd: std::os::fd::BorrowedFd<'_>) -> Result<MapHandle> {
    let info = libbpf_rs::MapInfo::new(fd).context("reading a map's info")?;
    MapHandle::from_map_id(info.info.id).context("opening a map by its id")
}

/// An owned descriptor of a loaded skeleton program.
pub fn prog_fd(p: &libbpf_rs::Program<'_>) -> Result<OwnedFd> {
    p.as_fd().try_clone_to_owned().context("duplicating program fd")
}

/// Declares skeleton types plain bytes (`bytemuck::Pod`), so they can be
/// written to and read from maps as they are.
///
/// Only for types libbpf-cargo generated from BTF: `#[repr(C)]` structs with
/// an explicit field for every padding gap, and enums as
/// `#[repr(transparent)]` integers. Not for structs holding a union whose
/// members differ in size (the bytes beyond the smallest member can be
/// uninitialised).
#[macro_export]
macro_rules! impl_pod {
    ($($t:ty),+ $(,)?) => {$(
        // SAFETY: see the macro's documentation: every bit pattern is a
        // valid value and no byte of the type is padding.
        unsafe impl bytemuck::Zeroable for $t {}
        unsafe impl bytemuck::Pod for $t {}
    )+};
}
