//! Workloads keep duplicated descriptors of their skeleton's programs and
//! maps, so their state does not borrow the skeleton (which borrows its
//! open-object storage). These turn skeleton parts into owned descriptors.

use std::os::fd::{AsFd, OwnedFd};

use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapHandle};

/// An owned handle on a skeleton map.
pub fn map_handle<T: std::fmt::Debug>(map: &libbpf_rs::MapImpl<'_, T>) -> Result<MapHandle> {
    MapHandle::try_from(map).with_context(|| format!("duplicating map {:?}", map.name()))
}

/// An owned descriptor of a loaded skeleton program.
pub fn prog_fd(p: &libbpf_rs::Program<'_>) -> Result<OwnedFd> {
    p.as_fd().try_clone_to_owned().context("duplicating program fd")
}
