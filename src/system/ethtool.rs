//! An interface's driver statistics (what `ethtool -S` prints), read with
//! the SIOCETHTOOL ioctl: for a veth, the XDP verdict counts of its queues.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::record::live::XdpVerdicts;
use anyhow::{Result, bail};

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;

#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut c_void,
    _pad: [u8; 16],
}

fn ethtool(sock: &OwnedFd, iface: &str, data: *mut c_void) -> Result<()> {
    let mut req = IfReq { name: [0; libc::IFNAMSIZ], data, _pad: [0; 16] };
    if iface.len() >= libc::IFNAMSIZ {
        bail!("'{iface}' is too long for an interface name");
    }
    req.name[..iface.len()].copy_from_slice(iface.as_bytes());
    // SAFETY: a valid ifreq whose data points at a buffer sized for the command.
    if unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL, &mut req) } != 0 {
        bail!("ethtool statistics of {iface}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Every (name, value) statistic the driver of `iface` keeps, read in the
/// calling thread's network namespace.
pub fn driver_stats(iface: &str) -> Result<Vec<(String, u64)>> {
    // SAFETY: a plain socket call; the fd is owned below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        bail!("opening a socket for ethtool: {}", std::io::Error::last_os_error());
    }
    // SAFETY: a new fd we own.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    // ethtool_sset_info: cmd, reserved, sset_mask, then one u32 per set asked.
    let mut info = [0u32; 5];
    info[0] = ETHTOOL_GSSET_INFO;
    info[2] = 1 << ETH_SS_STATS;
    ethtool(&sock, iface, info.as_mut_ptr().cast())?;
    let n = info[4] as usize;
    // ethtool_gstrings: cmd, string_set, len, then the names.
    let mut strings = vec![0u8; 12 + n * ETH_GSTRING_LEN];
    strings[0..4].copy_from_slice(&ETHTOOL_GSTRINGS.to_ne_bytes());
    strings[4..8].copy_from_slice(&ETH_SS_STATS.to_ne_bytes());
    strings[8..12].copy_from_slice(&(n as u32).to_ne_bytes());
    ethtool(&sock, iface, strings.as_mut_ptr().cast())?;
    // ethtool_stats: cmd, n_stats, then the u64 values.
    let mut values = vec![0u64; 1 + n];
    values[0] = u64::from(ETHTOOL_GSTATS) | (n as u64) << 32;
    ethtool(&sock, iface, values.as_mut_ptr().cast())?;
    Ok((0..n)
        .map(|i| {
            let raw = &strings[12 + i * ETH_GSTRING_LEN..12 + (i + 1) * ETH_GSTRING_LEN];
            let name = String::from_utf8_lossy(raw.split(|&b| b == 0).next().unwrap_or(raw)).into_owned();
            (name, values[1 + i])
        })
        .collect())
}

/// The sum of the statistics whose names end in `suffix` (one per queue).
pub fn sum_ending(stats: &[(String, u64)], suffix: &str) -> u64 {
    stats.iter().filter(|(n, _)| n.ends_with(suffix)).map(|(_, v)| v).sum()
}

/// What a veth's XDP did with the frames it received, summed over its
/// queues (the veth driver's `rx_queue_N_xdp_*` statistics), read for
/// `iface` in the calling thread's namespace.
pub fn xdp_verdicts(iface: &str) -> Result<XdpVerdicts> {
    let stats = driver_stats(iface)?;
    let sum = |s: &str| sum_ending(&stats, s);
    let packets = sum("_xdp_packets");
    if !stats.iter().any(|(n, _)| n.ends_with("_xdp_packets")) {
        bail!("{iface} keeps no per-queue XDP statistics (a veth does)");
    }
    let (drop, tx, redirect) = (sum("_xdp_drops"), sum("_xdp_tx"), sum("_xdp_redirect"));
    Ok(XdpVerdicts {
        packets,
        pass: packets.saturating_sub(drop + tx + redirect + sum("_xdp_tx_errors")),
        drop,
        tx,
        redirect,
        tx_errors: sum("_xdp_tx_errors"),
    })
}
