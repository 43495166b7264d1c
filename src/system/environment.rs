//! Captures the environment a run records: build, kernel, CPU, JIT settings,
//! load, and the hypervisor's steal time during the run.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::record::{Environment, JitSettings, Testbed};

fn read_int(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string()))
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn loadavg() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = text.split_whitespace().map(|v| v.parse().unwrap_or(f64::NAN));
    [it.next().unwrap_or(f64::NAN), it.next().unwrap_or(f64::NAN), it.next().unwrap_or(f64::NAN)]
}

/// (total, steal) jiffies of the aggregate "cpu" line of /proc/stat.
fn cpu_jiffies() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = text.lines().next()?.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    Some((fields.iter().sum(), *fields.get(7)?))
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// This machine as a testbed: named by $BPFBENCH_TESTBED, else by its host
/// name; its id is a hash of that name where one is given (so identical CI
/// runners count as one testbed) or of /etc/machine-id (a host renamed keeps
/// its history; machine-id(5) asks for the id to be hashed, not shown).
pub fn testbed() -> Testbed {
    let named = std::env::var("BPFBENCH_TESTBED").ok().map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    let machine_id = std::fs::read_to_string("/etc/machine-id").ok().map(|m| m.trim().to_string());
    let key = match (&named, machine_id) {
        (Some(name), _) => format!("name:{name}"),
        (None, Some(id)) if !id.is_empty() => format!("machine-id:{id}"),
        (None, _) => format!("host:{}", host_name()),
    };
    Testbed {
        id: format!("{:016x}", fnv1a64(&format!("bpfbench-testbed/{key}"))),
        name: named.unwrap_or_else(host_name),
    }
}

/// FNV-1a: a hash that stays the same across builds and Rust versions.
fn fnv1a64(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The environment of a run in progress; `finish` completes it.
pub struct Capture {
    environment: Environment,
    jiffies_at_start: Option<(u64, u64)>,
}

/// Starts capturing the environment of a run on `cpu`.
pub fn start(cpu: usize) -> Capture {
    let environment = Environment {
        bpfbench_version: env!("CARGO_PKG_VERSION").into(),
        git_commit: env!("BPFBENCH_GIT_COMMIT").into(),
        clang_version: env!("BPFBENCH_CLANG_VERSION").into(),
        bpf_cflags: env!("BPFBENCH_BPF_CFLAGS").into(),
        kernel: super::kernel_release(),
        cpu_model: cpu_model(),
        host: host_name(),
        jit: JitSettings {
            enable: read_int("/proc/sys/net/core/bpf_jit_enable"),
            harden: read_int("/proc/sys/net/core/bpf_jit_harden"),
            kallsyms: read_int("/proc/sys/net/core/bpf_jit_kallsyms"),
        },
        cpu,
        started_at: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
        loadavg: loadavg(),
        steal_percent: None,
        features: crate::kernel::features::probe().map(|f| f.record()),
        // Set by `bpfbench vm` on the host, which knows how it booted the guest.
        guest: None,
        testbed: Some(testbed()),
    };
    Capture { environment, jiffies_at_start: cpu_jiffies() }
}

impl Capture {
    /// The environment, with the share of CPU time the hypervisor stole
    /// while the run went on (None where /proc/stat has no steal column or
    /// too little time passed to tell).
    pub fn finish(self) -> Environment {
        let mut env = self.environment;
        env.steal_percent = match (self.jiffies_at_start, cpu_jiffies()) {
            (Some((t0, s0)), Some((t1, s1))) if t1 > t0 => Some((s1 - s0) as f64 * 100.0 / (t1 - t0) as f64),
            _ => None,
        };
        env
    }
}
