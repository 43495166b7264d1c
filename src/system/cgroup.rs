//! A cgroup (v2) of bpfbench's own, for programs attached to a cgroup's
//! hooks (sock_addr, sockops, sock, sockopt, sysctl): this process moves
//! into it while they are measured, so only the trigger's sockets and
//! calls fire them, never another process's; it moves back and the cgroup
//! is removed after, also on Ctrl-C. A SIGKILLed run leaves an empty
//! `bpfbench-PID` cgroup, which the next run removes.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The prefix of the cgroups bpfbench makes: `bpfbench-PID`.
const PREFIX: &str = "bpfbench-";

/// This process in a cgroup of its own while this lives.
#[derive(Debug)]
pub struct OwnCgroup {
    path: PathBuf,
    /// The cgroup the process came from, to go back to.
    home: PathBuf,
    dir: OwnedFd,
}

impl OwnCgroup {
    /// Makes `bpfbench-PID` under the cgroup v2 hierarchy and moves this
    /// process into it (every thread: a process's threads share one cgroup).
    pub fn enter() -> Result<OwnCgroup> {
        let root = mount_point()?;
        remove_leftovers_under(&root);
        let home = root.join(own_cgroup()?.trim_start_matches('/'));
        let path = root.join(format!("{PREFIX}{}", std::process::id()));
        if !path.exists() {
            std::fs::create_dir(&path).with_context(|| format!("making the cgroup {}", path.display()))?;
        }
        let dir = std::fs::File::open(&path).with_context(|| format!("opening the cgroup {}", path.display()))?;
        let cgroup = OwnCgroup { path, home, dir: dir.into() };
        move_process(&cgroup.path)?;
        Ok(cgroup)
    }

    /// The cgroup's directory, which cgroup programs attach to.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnCgroup {
    fn drop(&mut self) {
        let _ = move_process(&self.home);
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup`, or
/// `/sys/fs/cgroup/unified` beside v1 controllers).
pub fn mount_point() -> Result<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").context("reading /proc/self/mounts")?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, at, kind) = (f.next()?, f.next()?, f.next()?);
            (kind == "cgroup2").then(|| PathBuf::from(at))
        })
        .next()
        .context("no cgroup v2 hierarchy is mounted (cgroup programs attach to a v2 cgroup): mount one with 'mount -t cgroup2 none /sys/fs/cgroup/unified'")
}

/// This process's cgroup in the v2 hierarchy ("0::/path" in /proc/self/cgroup).
fn own_cgroup() -> Result<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").context("reading /proc/self/cgroup")?;
    text.lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_string))
        .context("/proc/self/cgroup names no cgroup v2 membership")
}

fn move_process(cgroup: &Path) -> Result<()> {
    let procs = cgroup.join("cgroup.procs");
    std::fs::write(&procs, std::process::id().to_string())
        .with_context(|| format!("moving this process into {}", cgroup.display()))
}

/// Removes the cgroups that runs no longer alive made (a SIGKILLed run's);
/// what was removed, a line each.
pub fn remove_leftovers() -> Result<Vec<String>> {
    let Ok(root) = mount_point() else { return Ok(Vec::new()) };
    Ok(remove_leftovers_under(&root))
}

fn remove_leftovers_under(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() || super::other_bpfbench_alive(pid) {
            continue;
        }
        // Empty once its process died; rmdir refuses one that is not.
        if std::fs::remove_dir(e.path()).is_ok() {
            removed.push(format!("removed the cgroup {} a killed run left", e.path().display()));
        }
    }
    removed
}

/// Fails unless `path` is a cgroup v2 directory bpfbench may attach to.
pub fn check_v2(path: &Path) -> Result<()> {
    if !path.join("cgroup.procs").exists() {
        bail!("{} is not a cgroup v2 directory", path.display());
    }
    Ok(())
}
