//! The machine and the process: privileges, kernel version, CPUs, libbpf's
//! log, Ctrl-C, kernel settings a comparison changes, and the environment a
//! run records. Nothing here knows about workloads or reports.

pub mod cgroup;
pub mod cpu;
pub mod environment;
pub mod ethtool;
pub mod guest;
pub mod interrupt;
pub mod sysctl;
pub mod tcg_counter;
pub mod tool;
pub mod tracefs;

use anyhow::{Context, Result, bail};

/// Linux capability numbers (uapi/linux/capability.h).
const CAP_NET_ADMIN: u32 = 12;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_BPF: u32 = 39;

/// Fails with one line saying what is missing unless the process may load
/// BPF programs and run them with BPF_PROG_TEST_RUN.
pub fn check_privileges() -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    let has = |cap: u32| cap_eff & (1u64 << cap) != 0;
    if has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_NET_ADMIN)) {
        return Ok(());
    }
    bail!(
        "bpfbench needs root, or the capabilities CAP_BPF and CAP_NET_ADMIN, to load and test-run BPF programs: run it with sudo"
    )
}

/// When process `pid` started, in clock ticks since boot (None: no such process).
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state is field 3, starttime field 22.
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// Whether process `pid`, other than this one, still runs and started no
/// later than process `made`, which it would have started: a guest's
/// owner (a pid reused after its owner was killed started later). Unlike
/// [`other_bpfbench_alive`], the owner may be any program that uses
/// bpfbench's library (the guests' tests boot guests in-process).
pub fn owner_alive(pid: u32, made: Option<u32>) -> bool {
    let started_first = |owner: u64| made.and_then(process_start).is_none_or(|child| owner <= child);
    pid != std::process::id() && process_start(pid).is_some_and(started_first)
}

/// Whether process `pid` is a bpfbench other than this one that still
/// runs: what a leftover's owner must not be for the leftover to be removed.
pub fn other_bpfbench_alive(pid: u32) -> bool {
    pid != std::process::id()
        && std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim().starts_with("bpfbench"))
}

/// CLOCK_MONOTONIC in nanoseconds: the clock bpf_ktime_get_ns reads.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// (major, minor) of the running kernel.
pub fn kernel_version() -> Option<(u32, u32)> {
    let release = kernel_release();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

pub fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Readies the process for timing on `cpu` (default: the last allowed
/// CPU): privileges, pinning, libbpf's log and Ctrl-C. Returns the CPU.
/// (What the kernel can time with is probed where programs are loaded:
/// `kernel::features`.)
pub fn prepare_for_timing(cpu: Option<usize>) -> Result<usize> {
    check_privileges()?;
    // A setting a killed `ab --sysctl` left changed would skew every figure.
    sysctl::restore_leftovers()?;
    let cpu = match cpu {
        Some(c) => c,
        None => cpu::default_cpu()?,
    };
    cpu::pin_to_cpu(cpu)?;
    crate::kernel::libbpf_log::capture();
    interrupt::install_handler();
    Ok(cpu)
}

/// Raises this process's limit of open descriptors to at least `wanted`
/// (soft and hard: root may raise the hard limit up to fs.nr_open). A test
/// framework's objects stay loaded together, each a descriptor per program
/// and map: Cilium's 87 test files hold ~15,000, near the usual 20,000.
/// Returns the limit now; a refusal leaves the limit as it was.
pub fn raise_open_files(wanted: u64) -> u64 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: a plain syscall filling the struct.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    if lim.rlim_cur >= wanted {
        return lim.rlim_cur;
    }
    let raised = libc::rlimit { rlim_cur: wanted, rlim_max: lim.rlim_max.max(wanted) };
    // SAFETY: as above; failure changes nothing.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        return wanted;
    }
    let soft = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &soft) } == 0 { lim.rlim_max } else { lim.rlim_cur }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guests_owner_is_alive_only_while_it_runs_and_if_it_started_first() {
        let me = std::process::id();
        let parent = std::os::unix::process::parent_id();
        // The parent started before this process: the owner of what this process made.
        assert!(owner_alive(parent, Some(me)));
        assert!(owner_alive(parent, None));
        // A process started after this one cannot own what this one made (a
        // reused pid); start times count clock ticks, so it starts ticks later.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut later = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        assert!(!owner_alive(later.id(), Some(me)));
        assert!(owner_alive(later.id(), None));
        let gone = later.id();
        later.kill().unwrap();
        later.wait().unwrap();
        assert!(!owner_alive(gone, None), "a reaped process owns nothing");
        // This process never counts: its own leftovers are its to remove.
        assert!(!owner_alive(me, None));
    }
}
