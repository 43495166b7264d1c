//! The environment a benchmark runs in: privileges, CPU pinning, kernel
//! version, libbpf's log (for verifier errors) and Ctrl-C.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use libbpf_rs::PrintLevel;

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

/// The oldest kernel whose features the timing loop relies on.
pub const MIN_KERNEL: (u32, u32) = (6, 9);
const MIN_KERNEL_FEATURES: &str =
    "may_goto loops (6.9), global subprograms changing packet data, BPF_PROG_TEST_RUN for XDP";

/// Fails when the kernel is older than the timing loop needs.
pub fn check_kernel() -> Result<()> {
    match kernel_version() {
        Some(v) if v < MIN_KERNEL => bail!(
            "kernel {} is too old: bpfbench needs Linux {}.{} or newer for {}",
            kernel_release(),
            MIN_KERNEL.0,
            MIN_KERNEL.1,
            MIN_KERNEL_FEATURES
        ),
        _ => Ok(()),
    }
}

/// CPUs this process may run on, as they were before any thread was
/// pinned: producers pin threads to CPUs other than the run's own.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    static AT_START: std::sync::OnceLock<std::result::Result<Vec<usize>, String>> = std::sync::OnceLock::new();
    AT_START
        .get_or_init(|| current_affinity().map_err(|e| e.to_string()))
        .clone()
        .map_err(anyhow::Error::msg)
}

/// The calling thread's CPU mask.
fn current_affinity() -> Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// The CPU a run uses when `--cpu` is not given: the last allowed one, which
/// on most machines takes fewer interrupts than CPU 0.
pub fn default_cpu() -> Result<usize> {
    allowed_cpus()?
        .last()
        .copied()
        .context("this process may run on no CPU")
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> Result<()> {
    let allowed = allowed_cpus()?;
    if !allowed.contains(&cpu) {
        bail!(
            "CPU {cpu} is not available to this process; choose one of {}",
            allowed.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
        );
    }
    // SAFETY: as above.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        bail!("pinning to CPU {cpu}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// Number of CPUs the kernel may bring online (per-CPU map slots).
pub fn possible_cpus() -> Result<usize> {
    libbpf_rs::num_possible_cpus().context("reading the number of possible CPUs")
}

static LIBBPF_LOG: Mutex<String> = Mutex::new(String::new());

fn collect_libbpf_log(level: PrintLevel, msg: String) {
    if let Ok(mut log) = LIBBPF_LOG.lock() {
        log.push_str(&msg);
    }
    if level == PrintLevel::Warn && std::env::var_os("BPFBENCH_LIBBPF_DEBUG").is_some() {
        eprint!("{msg}");
    }
}

/// Keeps libbpf's messages (verifier logs among them) for error reports
/// instead of letting them scroll past on stderr.
pub fn capture_libbpf_log() {
    libbpf_rs::set_print(Some((PrintLevel::Debug, collect_libbpf_log)));
}

/// Takes what libbpf logged since the last call.
pub fn take_libbpf_log() -> String {
    LIBBPF_LOG.lock().map(|mut l| std::mem::take(&mut *l)).unwrap_or_default()
}

/// The last `lines` lines of what libbpf logged, for a failed load.
pub fn libbpf_log_tail(lines: usize) -> String {
    let log = take_libbpf_log();
    let all: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Ctrl-C asks the run to stop between batches. Nothing is pinned or
/// attached, so the kernel frees every object when the process exits anyway.
pub fn install_interrupt_handler() {
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            // Second Ctrl-C: leave now; the kernel releases our fds.
            std::process::exit(130);
        }
    });
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
