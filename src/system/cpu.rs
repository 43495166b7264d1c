//! Which CPUs the process may use, and pinning threads to them.

use anyhow::{Context, Result, bail};

/// CPUs this process may run on, as they were before any thread was
/// pinned: producers pin threads to CPUs other than the run's own.
pub fn allowed_cpus() -> Result<Vec<usize>> {
    static AT_START: std::sync::OnceLock<std::result::Result<Vec<usize>, String>> = std::sync::OnceLock::new();
    AT_START.get_or_init(|| current_affinity().map_err(|e| e.to_string())).clone().map_err(anyhow::Error::msg)
}

/// The calling thread's CPU mask.
fn current_affinity() -> Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        bail!("sched_getaffinity: {}", std::io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect())
}

/// The CPU a run uses when `--cpu` is not given: the last allowed one, which
/// on most machines takes fewer interrupts than CPU 0.
pub fn default_cpu() -> Result<usize> {
    allowed_cpus()?.last().copied().context("this process may run on no CPU")
}

/// Lets the calling thread run on any of `cpus` (threads that work beside
/// the timed one: a tool's output readers, a buffer reader).
pub fn pin_to_cpus(cpus: &[usize]) -> Result<()> {
    // SAFETY: a zeroed set filled with the CPUs given.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for c in cpus {
        unsafe { libc::CPU_SET(*c, &mut set) };
    }
    let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        bail!("pinning to CPUs {cpus:?}: {}", std::io::Error::last_os_error());
    }
    Ok(())
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
