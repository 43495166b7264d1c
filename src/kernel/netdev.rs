//! Network interfaces as the generator sees them: index by name, the
//! kernel's transmit counters, and attaching XDP programs.

use std::ffi::CString;
use std::os::fd::{FromRawFd, OwnedFd};

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys;

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

/// How a program is attached to an interface's XDP hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (veth has native XDP).
    Native,
    /// Generic XDP, after the kernel built an skb.
    Generic,
}

/// Attaches an XDP program to `iface` (in the caller's namespace) with a BPF link.
pub fn attach_xdp(prog_fd: i32, iface: &str, mode: XdpMode) -> Result<OwnedFd> {
    let c = CString::new(iface).context("interface name")?;
    // SAFETY: a valid C string.
    let ifindex = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if ifindex == 0 {
        bail!("no interface {iface} to attach to");
    }
    // SAFETY: zero is a valid bit pattern for the options struct.
    let mut opts: libbpf_sys::bpf_link_create_opts = unsafe { std::mem::zeroed() };
    opts.sz = size_of::<libbpf_sys::bpf_link_create_opts>() as _;
    opts.flags = match mode {
        XdpMode::Native => libbpf_sys::XDP_FLAGS_DRV_MODE,
        XdpMode::Generic => libbpf_sys::XDP_FLAGS_SKB_MODE,
    };
    // SAFETY: valid fds and options.
    let link = unsafe { libbpf_sys::bpf_link_create(prog_fd, ifindex as i32, libbpf_sys::BPF_XDP, &opts) };
    if link < 0 {
        let e = std::io::Error::last_os_error();
        bail!("attaching XDP ({mode:?}) to {iface}: {e}");
    }
    // SAFETY: a new fd we own.
    Ok(unsafe { OwnedFd::from_raw_fd(link) })
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
        TxCounters {
            packets: self.packets.saturating_sub(start.packets),
            failed: self.failed.saturating_sub(start.failed),
        }
    }
}
