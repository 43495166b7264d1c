//! Where and with what a run was measured: recorded with every result so a
//! comparison can tell a code change from a machine or kernel change.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::harness::system;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    pub bpfbench_version: String,
    /// `git describe`-style commit of the bpfbench build ("unknown" outside a checkout).
    pub git_commit: String,
    /// clang that compiled the BPF programs, as `--version` prints its first line.
    pub clang_version: String,
    /// Extra BPF compile flags of this build (e.g. -DLB_EXTRA_WORK=4).
    #[serde(default)]
    pub bpf_cflags: String,
    pub kernel: String,
    pub cpu_model: String,
    pub host: String,
    /// net.core.bpf_jit_enable / bpf_jit_harden / bpf_jit_kallsyms, as read.
    pub jit: JitSettings,
    /// The CPU every batch ran on.
    pub cpu: usize,
    /// Seconds since the Unix epoch when the run started.
    pub started_at: u64,
    /// 1-, 5- and 15-minute load averages at the start.
    pub loadavg: [f64; 3],
    /// Share of CPU time stolen by the hypervisor over 200 ms at the start
    /// (None where /proc/stat has no steal column).
    pub steal_percent: Option<f64>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct JitSettings {
    pub enable: Option<i64>,
    pub harden: Option<i64>,
    pub kallsyms: Option<i64>,
}

fn read_int(path: &str) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| c.lines().find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())))
        .unwrap_or_else(|| "unknown CPU".into())
}

fn loadavg() -> [f64; 3] {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut it = text.split_whitespace().map(|v| v.parse().unwrap_or(f64::NAN));
    [it.next().unwrap_or(f64::NAN), it.next().unwrap_or(f64::NAN), it.next().unwrap_or(f64::NAN)]
}

/// (total, steal) jiffies of the aggregate "cpu" line.
fn cpu_jiffies() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = text.lines().next()?.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    Some((fields.iter().sum(), *fields.get(7)?))
}

fn steal_percent() -> Option<f64> {
    let (t0, s0) = cpu_jiffies()?;
    std::thread::sleep(Duration::from_millis(200));
    let (t1, s1) = cpu_jiffies()?;
    (t1 > t0).then(|| (s1 - s0) as f64 * 100.0 / (t1 - t0) as f64)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "unknown".into())
}

/// Version of the clang that built the BPF objects, asked at run time only
/// when the build did not record it.
fn clang_version() -> String {
    let recorded = env!("BPFBENCH_CLANG_VERSION");
    if !recorded.is_empty() {
        return recorded.to_string();
    }
    Command::new("clang-19")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

impl Environment {
    /// Captures the environment at the start of a run on `cpu`.
    pub fn capture(cpu: usize) -> Environment {
        Environment {
            bpfbench_version: env!("CARGO_PKG_VERSION").into(),
            git_commit: env!("BPFBENCH_GIT_COMMIT").into(),
            clang_version: clang_version(),
            bpf_cflags: env!("BPFBENCH_BPF_CFLAGS").into(),
            kernel: system::kernel_release(),
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
            steal_percent: steal_percent(),
        }
    }
}
