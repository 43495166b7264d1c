//! A tool bpfbench starts and measures as it runs (`bpfbench overhead --
//! opensnoop`): in a process group of its own, on the CPUs other than the
//! timed one, killed by the kernel if bpfbench dies first
//! (PR_SET_PDEATHSIG), and stopped as a user stops it (SIGINT, then
//! SIGKILL). Its standard output is a terminal, as when a user runs it
//! (line-buffered: each line is written when printed), whose lines are
//! counted (a tracing tool prints one per event it reports); its CPU time
//! is read from its threads' schedstat.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

/// How long a tool has to exit after SIGINT before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(3);
/// Stderr lines kept to say why a tool stopped.
const KEPT_LINES: usize = 5;

/// A running tool; stopped when dropped.
pub struct Tool {
    argv: Vec<String>,
    child: Child,
    lines: Arc<AtomicU64>,
    errors: Arc<Mutex<Vec<String>>>,
    readers: Vec<JoinHandle<()>>,
}

impl Tool {
    /// Starts `argv` on `cpus` (none: wherever it likes).
    pub fn start(argv: &[String], cpus: &[usize]) -> Result<Tool> {
        let Some((program, args)) = argv.split_first() else { bail!("no tool to start: give its command after --") };
        let (terminal, screen) = pseudo_terminal()?;
        let mut cmd = Command::new(program);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::from(screen)).stderr(Stdio::piped()).process_group(0);
        let (cpus, tool_cpus) = (cpus.to_vec(), cpus.to_vec());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if !cpus.is_empty() {
                    let mut set: libc::cpu_set_t = std::mem::zeroed();
                    for c in &cpus {
                        libc::CPU_SET(*c, &mut set);
                    }
                    libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().with_context(|| format!("starting {program}"))?;
        let lines = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        // The readers run beside the tool, off the timed CPU.
        let on_tool_cpus = move |cpus: Vec<usize>| {
            if !cpus.is_empty() {
                let _ = super::cpu::pin_to_cpus(&cpus);
            }
        };
        {
            let (lines, cpus) = (lines.clone(), tool_cpus.clone());
            readers.push(std::thread::spawn(move || {
                on_tool_cpus(cpus);
                // The terminal's reads end (EIO) when the tool's side closes.
                let mut buf = [0u8; 4096];
                let mut terminal = std::fs::File::from(terminal);
                while let Ok(n) = std::io::Read::read(&mut terminal, &mut buf) {
                    if n == 0 {
                        break;
                    }
                    lines.fetch_add(buf[..n].iter().filter(|b| **b == b'\n').count() as u64, Ordering::Relaxed);
                }
            }));
        }
        if let Some(err) = child.stderr.take() {
            let (errors, cpus) = (errors.clone(), tool_cpus.clone());
            readers.push(std::thread::spawn(move || {
                on_tool_cpus(cpus);
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    let mut kept = errors.lock().unwrap_or_else(|e| e.into_inner());
                    if kept.len() == KEPT_LINES {
                        kept.remove(0);
                    }
                    kept.push(line);
                }
            }));
        }
        Ok(Tool { argv: argv.to_vec(), child, lines, errors, readers })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn name(&self) -> &str {
        self.argv[0].rsplit('/').next().unwrap_or(&self.argv[0])
    }

    /// Lines the tool wrote to its standard output so far.
    pub fn lines(&self) -> u64 {
        self.lines.load(Ordering::Relaxed)
    }

    /// Fails, naming its last words, when the tool has exited.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            let said = self.errors.lock().unwrap_or_else(|e| e.into_inner()).join("; ");
            bail!(
                "{} exited ({status}){}",
                self.name(),
                if said.is_empty() { String::new() } else { format!(": {said}") }
            );
        }
        Ok(())
    }

    /// Stops the tool: SIGINT to its group, as Ctrl-C would, then SIGKILL.
    fn stop(&mut self) {
        let group = -(self.child.id() as i32);
        // SAFETY: signals to the tool's own process group.
        unsafe { libc::kill(group, libc::SIGINT) };
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // SAFETY: as above; what is left of the group dies.
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
    }
}

impl Drop for Tool {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A pseudo-terminal: (bpfbench's side, the tool's), neither inherited by
/// other children.
fn pseudo_terminal() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let (mut ours, mut theirs) = (0, 0);
    // SAFETY: two ints for the new descriptors; no name, settings or size asked.
    let rc = unsafe { libc::openpty(&mut ours, &mut theirs, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    if rc != 0 {
        bail!("making a terminal for the tool's output: {}", std::io::Error::last_os_error());
    }
    // SAFETY: two new descriptors this process owns.
    let (ours, theirs) =
        unsafe { (std::os::fd::OwnedFd::from_raw_fd(ours), std::os::fd::OwnedFd::from_raw_fd(theirs)) };
    for fd in [&ours, &theirs] {
        // SAFETY: the descriptor's own flags.
        unsafe { libc::fcntl(std::os::fd::AsRawFd::as_raw_fd(fd), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok((ours, theirs))
}

/// CPU time process `pid`'s threads have run, in ns (schedstat's first field, summed).
pub fn cpu_ns(pid: u32) -> Result<u64> {
    let tasks = format!("/proc/{pid}/task");
    let mut total = 0;
    for t in std::fs::read_dir(&tasks).with_context(|| format!("reading {tasks}"))?.flatten() {
        if let Some(ns) = std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()))
        {
            total += ns;
        }
    }
    Ok(total)
}
