//! The network bpfbench builds for live runs and tests: a namespace of its
//! own holding one end of a veth pair, the other end here. The generator
//! sends out of the outer end; the program under test (or a counter) sits
//! in XDP on the inner end.
//!
//! Everything is named after the process (`bpfbench-PID` for the
//! namespace, `bpfbenchHEXPIDg`/`...d` for the veths: interface names have
//! at most 15 bytes), so a later run can tell an earlier, dead run's
//! leftovers from a live run's and remove them. Programs are attached
//! through BPF links, which the kernel detaches when the process ends,
//! however it ends; the namespace and the veths are removed on drop, and
//! after a SIGKILL by the next run.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::process::Command;

use anyhow::{Context, Result, bail};

pub use crate::kernel::netdev::XdpMode;
use crate::kernel::netdev::attach_xdp;

/// What every name bpfbench gives a namespace or interface starts with.
pub const NAME_PREFIX: &str = "bpfbench";
/// The veths' MTU: a 1500-byte packet plus an IPv6 encapsulation fits.
const LINK_MTU: &str = "2000";
/// Where `ip netns` keeps named namespaces.
const NETNS_DIR: &str = "/run/netns";

/// A namespace and a veth pair, removed on drop.
#[derive(Debug)]
pub struct Topology {
    pub netns: String,
    /// The end in this process's namespace, where the generator sends.
    pub outer: String,
    /// The end inside the namespace, where the program under test runs.
    pub inner: String,
}

/// Runs `ip` with `args`; its error output becomes the error.
fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip").args(args).output().context("running 'ip' (iproute2); install it")?;
    if !out.status.success() {
        bail!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The pid a bpfbench name carries, if it is one of ours.
fn owner_of_netns(name: &str) -> Option<u32> {
    name.strip_prefix("bpfbench-")?.parse().ok()
}

fn owner_of_link(name: &str) -> Option<u32> {
    let hex = name.strip_prefix(NAME_PREFIX)?.strip_suffix(['g', 'd'])?;
    u32::from_str_radix(hex, 16).ok()
}

/// Removes the namespaces and veths of bpfbench runs that are gone (killed
/// before they could clean up); returns what was removed.
pub fn remove_leftovers() -> Result<Vec<String>> {
    let mut removed = Vec::new();
    // Links first: deleting one end of a veth deletes both at once, where a
    // namespace's veths go only when the kernel gets round to freeing it.
    let links = ip(&["-o", "link", "show"])?;
    for line in links.lines() {
        let Some(name) = line.split(": ").nth(1).map(|n| n.split('@').next().unwrap_or(n)) else { continue };
        if let Some(pid) = owner_of_link(name)
            && !pid_alive(pid)
        {
            ip(&["link", "del", name]).ok();
            removed.push(format!("veth {name}"));
        }
    }
    if let Ok(entries) = std::fs::read_dir(NETNS_DIR) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = owner_of_netns(&name)
                && !pid_alive(pid)
            {
                ip(&["netns", "del", &name])?;
                removed.push(format!("netns {name}"));
            }
        }
    }
    Ok(removed)
}

impl Topology {
    /// Builds the namespace and the veth pair, both ends up, after
    /// removing what dead runs left.
    pub fn create() -> Result<Topology> {
        for what in remove_leftovers()? {
            eprintln!("bpfbench: removed {what}, left by a run that was killed");
        }
        let pid = std::process::id();
        let t = Topology {
            netns: format!("bpfbench-{pid}"),
            outer: format!("{NAME_PREFIX}{pid:x}g"),
            inner: format!("{NAME_PREFIX}{pid:x}d"),
        };
        if std::path::Path::new(NETNS_DIR).join(&t.netns).exists() {
            bail!("network namespace {} exists already: one live topology per process", t.netns);
        }
        ip(&["netns", "add", &t.netns])?;
        // From here on, drop removes whatever part was made.
        // A queue per CPU on each end: a veth hands a frame to the receive
        // ring of the sending CPU's queue, so senders on several CPUs do not
        // share (and overflow) one ring.
        let queues = crate::system::cpu::possible_cpus()?.max(1).to_string();
        ip(&[
            "link",
            "add",
            &t.outer,
            "numtxqueues",
            &queues,
            "numrxqueues",
            &queues,
            "type",
            "veth",
            "peer",
            "name",
            &t.inner,
            "numtxqueues",
            &queues,
            "numrxqueues",
            &queues,
            "netns",
            &t.netns,
        ])?;
        // No IPv6 on the pair: its neighbour discovery and MLD frames would
        // mix with the generator's in every count.
        disable_ipv6(&t.outer)?;
        let inner = t.inner.clone();
        t.in_netns(move || disable_ipv6(&inner))?;
        // Room above 1500 bytes: a load balancer encapsulates full-size
        // frames and sends them back (XDP_TX), which a veth refuses past
        // the peer's MTU. Still within what veth allows plain XDP (~3.5 KB).
        ip(&["link", "set", &t.outer, "mtu", LINK_MTU, "up"])?;
        ip(&["-n", &t.netns, "link", "set", &t.inner, "mtu", LINK_MTU, "up"])?;
        ip(&["-n", &t.netns, "link", "set", "lo", "up"])?;
        Ok(t)
    }

    /// Gives the pair addresses for traffic through the kernel's stack (TCP
    /// mode's connection): the outer end ::1/.1, the inner ::2/.2 of a
    /// subnet picked by the process id, so concurrent runs do not share
    /// one. IPv4 takes a /30 of 198.18.0.0/15 (RFC 2544's benchmarking
    /// range); IPv6 a /64 of a unique-local prefix, and turns IPv6 on.
    pub fn add_addresses(&self, ipv6: bool) -> Result<(IpAddr, IpAddr)> {
        let pid = std::process::id();
        let (outer, inner, prefix): (IpAddr, IpAddr, u8) = if ipv6 {
            let net = |host: u16| Ipv6Addr::new(0xfd62, 0x7066, 0x6265, (pid >> 16) as u16, pid as u16, 0, 0, host);
            enable_ipv6(&self.outer)?;
            let inner = self.inner.clone();
            self.in_netns(move || enable_ipv6(&inner))?;
            (net(1).into(), net(2).into(), 64)
        } else {
            let base = u32::from(Ipv4Addr::new(198, 18, 0, 0)) + pid % (1 << 15) * 4;
            (Ipv4Addr::from(base + 1).into(), Ipv4Addr::from(base + 2).into(), 30)
        };
        // nodad: the address is usable at once, not after duplicate detection.
        let nodad: &[&str] = if ipv6 { &["nodad"] } else { &[] };
        ip(&[&["addr", "add", &format!("{outer}/{prefix}"), "dev", &self.outer], nodad].concat())?;
        ip(&[&["-n", &self.netns, "addr", "add", &format!("{inner}/{prefix}"), "dev", &self.inner], nodad].concat())?;
        Ok((outer, inner))
    }

    /// Runs `f` on a thread that entered the namespace (a thread's network
    /// namespace is its own; the process's stays where it was).
    pub fn in_netns<T: Send>(&self, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
        let path = std::path::Path::new(NETNS_DIR).join(&self.netns);
        std::thread::scope(|s| {
            s.spawn(|| -> Result<T> {
                let ns = std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
                // SAFETY: a namespace fd we hold; only this thread moves.
                if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    bail!("entering network namespace {}: {}", self.netns, std::io::Error::last_os_error());
                }
                f()
            })
            .join()
            .map_err(|_| anyhow::anyhow!("a thread in namespace {} panicked", self.netns))?
        })
    }

    /// Attaches `prog` to the inner end's XDP hook; detached when the
    /// returned link is dropped (or the process ends).
    pub fn attach_inner(&self, prog: BorrowedFd<'_>, mode: XdpMode) -> Result<OwnedFd> {
        let fd = prog.as_raw_fd();
        let inner = self.inner.clone();
        self.in_netns(move || attach_xdp(fd, &inner, mode))
    }

    /// Attaches `prog` to the outer end's XDP hook (to take what comes back).
    pub fn attach_outer(&self, prog: BorrowedFd<'_>, mode: XdpMode) -> Result<OwnedFd> {
        attach_xdp(prog.as_raw_fd(), &self.outer, mode)
    }
}

/// Turns IPv6 off on `iface`, in the calling thread's namespace.
fn disable_ipv6(iface: &str) -> Result<()> {
    set_ipv6_disabled(iface, "1")
}

fn enable_ipv6(iface: &str) -> Result<()> {
    set_ipv6_disabled(iface, "0")
}

fn set_ipv6_disabled(iface: &str, value: &str) -> Result<()> {
    let path = format!("/proc/sys/net/ipv6/conf/{iface}/disable_ipv6");
    match std::fs::write(&path, value) {
        // A kernel without IPv6 sends no IPv6 frames either.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r.with_context(|| format!("writing {path}")),
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // Deleting one veth end deletes both now; the namespace then goes empty.
        let _ = ip(&["link", "del", &self.outer]);
        if let Err(e) = ip(&["netns", "del", &self.netns]) {
            eprintln!(
                "bpfbench: could not remove namespace {}: {reason}",
                self.netns,
                reason = crate::record::error_line(&e)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_whose_they_are() {
        assert_eq!(owner_of_link("bpfbench1a2bg"), Some(0x1a2b));
        assert_eq!(owner_of_link("bpfbench1a2bd"), Some(0x1a2b));
        assert_eq!(owner_of_link("eth0"), None);
        assert_eq!(owner_of_link("bpfbenchxyzg"), None);
        assert_eq!(owner_of_netns("bpfbench-4242"), Some(4242));
        assert_eq!(owner_of_netns("bpfbench-x"), None);
        let longest = format!("{NAME_PREFIX}{:x}g", 4_194_304u32);
        assert!(longest.len() <= 15, "{longest} fits IFNAMSIZ");
    }
}
