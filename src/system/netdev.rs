//! Network interfaces as the generator sees them: index by name, and the
//! kernel's transmit counters.

use std::ffi::CString;

use anyhow::{Result, bail};

/// The interface index of `name` in this process's network namespace.
pub fn ifindex(name: &str) -> Result<u32> {
    let Ok(c) = CString::new(name) else { bail!("'{name}' is not an interface name") };
    // SAFETY: a valid C string.
    let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if index == 0 {
        bail!("no network interface '{name}' here; 'ip link' lists them");
    }
    Ok(index)
}

/// An interface's transmit counters (`/sys/class/net/NAME/statistics`).
/// A veth counts frames its peer's XDP took as transmitted, and frames
/// the peer could not take (no XDP program, or a full ring) as dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxCounters {
    pub packets: u64,
    /// tx_dropped + tx_errors.
    pub failed: u64,
}

impl TxCounters {
    /// None when the interface publishes no statistics.
    pub fn read(name: &str) -> Option<TxCounters> {
        let read = |counter: &str| -> Option<u64> {
            std::fs::read_to_string(format!("/sys/class/net/{name}/statistics/{counter}")).ok()?.trim().parse().ok()
        };
        Some(TxCounters { packets: read("tx_packets")?, failed: read("tx_dropped")? + read("tx_errors")? })
    }

    pub fn since(self, start: TxCounters) -> TxCounters {
        TxCounters { packets: self.packets.saturating_sub(start.packets), failed: self.failed.saturating_sub(start.failed) }
    }
}
