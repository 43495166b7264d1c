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
    /// The run's CPU's (busy, total) ticks and this process's own ticks.
    cpu_at_start: Option<((u64, u64), u64)>,
}

/// (busy, total) ticks of CPU `cpu` in /proc/stat: busy is user, nice,
/// system, irq and softirq time (not idle, iowait or steal).
fn one_cpu_ticks(cpu: usize) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let name = format!("cpu{cpu}");
    let line = text.lines().find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    let f: Vec<u64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    let busy = f.first()? + f.get(1)? + f.get(2)? + f.get(5)? + f.get(6)?;
    Some((busy, f.iter().take(8).sum()))
}

/// This process's user and system ticks (/proc/self/stat, as /proc/stat counts them).
fn own_ticks() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces: fields are counted after its ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn cpu_and_own_ticks(cpu: usize) -> Option<((u64, u64), u64)> {
    Some((one_cpu_ticks(cpu)?, own_ticks()?))
}

/// The share of CPU time, in percent, that others used between two
/// readings of [`cpu_and_own_ticks`]; None over less than a second.
fn others_percent(start: ((u64, u64), u64), end: ((u64, u64), u64)) -> Option<f64> {
    let (((b0, t0), o0), ((b1, t1), o1)) = (start, end);
    let total = t1.checked_sub(t0).filter(|&t| t >= 100)?;
    let others = (b1.saturating_sub(b0)).saturating_sub(o1.saturating_sub(o0));
    Some(others as f64 * 100.0 / total as f64)
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
        others_percent: None,
        features: crate::kernel::features::probe().map(|f| f.record()),
        // Set by `bpfbench vm` on the host, which knows how it booted the guest.
        guest: None,
        testbed: Some(testbed()),
    };
    Capture { environment, jiffies_at_start: cpu_jiffies(), cpu_at_start: cpu_and_own_ticks(cpu) }
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
        env.others_percent = match (self.cpu_at_start, cpu_and_own_ticks(env.cpu)) {
            (Some(a), Some(b)) => others_percent(a, b),
            _ => None,
        };
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn others_are_the_cpus_busy_time_less_our_own() {
        // 200 ticks passed; the CPU was busy for 180 of them, 90 of them ours.
        assert_eq!(others_percent(((1000, 5000), 40), ((1180, 5200), 130)), Some(45.0));
        // Less than a second is too little to tell.
        assert_eq!(others_percent(((0, 0), 0), ((50, 50), 50)), None);
    }

    #[test]
    fn this_cpu_and_this_process_have_ticks() {
        assert!(one_cpu_ticks(0).is_some_and(|(busy, total)| busy <= total && total > 0));
        assert!(own_ticks().is_some());
    }
}
