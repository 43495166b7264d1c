//! What a bpfbench run could leave behind, and nothing else of the machine's:
//! BPF programs, maps and links made since a snapshot that no process holds
//! any more (so only a pin, an attachment or a leaked holder keeps them),
//! pins that appeared in any BPF filesystem, and namespaces and veths named
//! bpfbench that appeared.
//!
//! Only what appeared since the snapshot counts. A typical distribution has
//! BPF objects of its own (systemd's cgroup programs; the kernel's
//! `bpf_preload` pins `maps.debug` and `progs.debug` into every bpffs mount),
//! and other tests of this process may hold objects while this one checks:
//! none of them is bpfbench's leftover.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use libbpf_rs::query::{LinkInfoIter, MapInfoIter, ProgInfoIter, ProgInfoQueryOptions};

/// The kernel's objects and the system's names at one moment.
pub struct Snapshot {
    /// The highest program, map and link id then: the kernel hands out ids
    /// in increasing order, so a larger one was made afterwards.
    max_prog: u32,
    max_map: u32,
    max_link: u32,
    pins: BTreeSet<PathBuf>,
    names: BTreeSet<String>,
}

impl Snapshot {
    pub fn take() -> Snapshot {
        Snapshot {
            max_prog: ProgInfoIter::default().map(|p| p.id).max().unwrap_or(0),
            max_map: MapInfoIter::default().map(|m| m.id).max().unwrap_or(0),
            max_link: LinkInfoIter::default().map(|l| l.id).max().unwrap_or(0),
            pins: pins(),
            names: bpfbench_names(),
        }
    }

    /// What appeared since the snapshot and is still there, described one
    /// per line. The kernel frees an object a grace period after its last
    /// holder goes, so this looks again for up to 5 s before it answers.
    pub fn left(&self) -> Vec<String> {
        let start = Instant::now();
        loop {
            let left = self.left_now();
            if left.is_empty() || start.elapsed() > Duration::from_secs(5) {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Panics, naming them, if anything appeared since the snapshot and stayed.
    pub fn assert_nothing_left(&self, after: &str) {
        let left = self.left();
        assert!(left.is_empty(), "{after} left: {left:#?}");
    }

    /// What appeared since the snapshot and is still there, without waiting.
    pub fn left_now(&self) -> Vec<String> {
        let held = Held::now();
        let mut left = Vec::new();
        let query = ProgInfoQueryOptions::default().include_map_ids(true);
        let progs: Vec<_> = ProgInfoIter::with_query_opts(query).collect();
        let links: Vec<_> = LinkInfoIter::default().collect();
        // What a held link or program keeps alive is held too.
        let held_progs: BTreeSet<u32> = held
            .progs
            .iter()
            .copied()
            .chain(links.iter().filter(|l| held.links.contains(&l.id)).map(|l| l.prog_id))
            .collect();
        let held_maps: BTreeSet<u32> = held
            .maps
            .iter()
            .copied()
            .chain(progs.iter().filter(|p| held_progs.contains(&p.id)).flat_map(|p| p.map_ids.clone()))
            .collect();
        for l in links.iter().filter(|l| l.id > self.max_link && !held.links.contains(&l.id)) {
            left.push(format!("link {} (program {})", l.id, l.prog_id));
        }
        for p in progs.iter().filter(|p| p.id > self.max_prog && !held_progs.contains(&p.id)) {
            left.push(format!("program {} (id {})", p.name.to_string_lossy(), p.id));
        }
        for m in MapInfoIter::default().filter(|m| m.id > self.max_map && !held_maps.contains(&m.id)) {
            left.push(format!("map {} (id {})", m.name.to_string_lossy(), m.id));
        }
        left.extend(pins().difference(&self.pins).map(|p| format!("pinned {}", p.display())));
        left.extend(bpfbench_names().difference(&self.names).cloned());
        left
    }
}

/// The BPF objects some living process has a descriptor of.
struct Held {
    progs: BTreeSet<u32>,
    maps: BTreeSet<u32>,
    links: BTreeSet<u32>,
}

impl Held {
    fn now() -> Held {
        let mut held = Held { progs: BTreeSet::new(), maps: BTreeSet::new(), links: BTreeSet::new() };
        let Ok(procs) = std::fs::read_dir("/proc") else { return held };
        for p in procs.flatten() {
            let Ok(fds) = std::fs::read_dir(p.path().join("fdinfo")) else { continue };
            for fd in fds.flatten() {
                // A process may exit, or close the descriptor, while we read.
                let Ok(info) = std::fs::read_to_string(fd.path()) else { continue };
                for line in info.lines() {
                    let Some((key, value)) = line.split_once(':') else { continue };
                    let Ok(id) = value.trim().parse::<u32>() else { continue };
                    match key {
                        "prog_id" => held.progs.insert(id),
                        "map_id" => held.maps.insert(id),
                        "link_id" => held.links.insert(id),
                        _ => false,
                    };
                }
            }
        }
        held
    }
}

/// Every file in every BPF filesystem this process sees mounted.
pub fn pins() -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    for mount in bpffs_mounts() {
        walk(&mount, &mut found);
    }
    found
}

fn walk(dir: &Path, found: &mut BTreeSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let path = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&path, found);
        }
        found.insert(path);
    }
}

/// Mount points of type `bpf` in this thread's mount namespace.
pub fn bpffs_mounts() -> Vec<PathBuf> {
    // /proc/thread-self: a test may have a mount namespace of its own thread.
    let info = std::fs::read_to_string("/proc/thread-self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| {
            let (before, after) = l.split_once(" - ")?;
            let point = before.split(' ').nth(4)?;
            (after.split(' ').next()? == "bpf").then(|| PathBuf::from(unescape(point)))
        })
        .collect()
}

/// mountinfo writes space, tab, newline and backslash as octal escapes.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        match rest.get(i + 1..i + 4).and_then(|o| u8::from_str_radix(o, 8).ok()) {
            Some(b) => {
                out.push(b as char);
                rest = &rest[i + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out + rest
}

/// Network namespaces, interfaces and cgroups whose names say bpfbench,
/// and files of the triggers (`/dev/shm/bpfbench-trigger-PID`).
pub fn bpfbench_names() -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    if let Ok(root) = bpfbench::system::cgroup::mount_point()
        && let Ok(entries) = std::fs::read_dir(&root)
    {
        found.extend(
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("bpfbench"))
                .map(|n| format!("cgroup {}", root.join(n).display())),
        );
    }
    if let Ok(entries) = std::fs::read_dir("/dev/shm") {
        found.extend(
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("bpfbench"))
                .map(|n| format!("file /dev/shm/{n}")),
        );
    }
    if let Ok(entries) = std::fs::read_dir("/run/netns") {
        found.extend(
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("bpfbench"))
                .map(|n| format!("netns {n}")),
        );
    }
    let links = Command::new("ip").args(["-o", "link"]).output().expect("ip (iproute2)").stdout;
    let links = String::from_utf8_lossy(&links);
    found.extend(
        links
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .map(|n| n.split('@').next().unwrap_or(n))
            .filter(|n| n.starts_with("bpfbench"))
            .map(|n| format!("interface {n}")),
    );
    found
}
