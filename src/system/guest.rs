//! Guests of other kernels: a kernel image booted with virtme-ng and QEMU,
//! the host's root shared read-only over 9p, one writable folder for the
//! guest's outputs, and a bash script run inside. KVM where it works, else
//! TCG (this project's machines cannot nest KVM guests), in which case the
//! guest's times are an emulator's.
//!
//! A guest never outlives its bound or the run: QEMU runs in a process
//! group of its own, killed past the bound, when the run is interrupted
//! (the second Ctrl-C's exit path too), and, after a SIGKILL, by the next
//! run that boots a guest ([`remove_leftovers`]), which finds it by its
//! output folder's name.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::record::Guest;

/// Output folders are named `bpfbench-guest-<pid>-<label>` under the temp
/// folder: QEMU's command line carries the name, which is how a later run
/// tells a guest whose bpfbench is gone.
const FOLDER_PREFIX: &str = "bpfbench-guest-";

/// How a guest's CPU runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accelerator {
    Kvm,
    /// QEMU's emulator: times are not the hardware's.
    Tcg,
}

impl Accelerator {
    pub fn as_str(self) -> &'static str {
        match self {
            Accelerator::Kvm => "kvm",
            Accelerator::Tcg => "tcg",
        }
    }
}

/// Where scripts/kernels.sh puts Debian's kernels.
pub fn kernels_dir() -> PathBuf {
    std::env::var_os("BPFBENCH_KERNELS").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache/bpfbench/kernels")
    })
}

/// A kernel image: a path to a bzImage/vmlinuz, or the name of a kernel
/// scripts/kernels.sh fetched (a Debian suite such as `bookworm`, or a
/// release such as `6.1.0-56-amd64`).
pub fn resolve_image(name: &str) -> Result<PathBuf> {
    let path = Path::new(name);
    if path.is_file() {
        if !is_kernel_image(path) {
            bail!(
                "--kernel {name}: not a kernel image (no x86 boot header, not ELF); give a bzImage, vmlinuz or vmlinux"
            );
        }
        return Ok(path.to_path_buf());
    }
    let fetched = kernels_dir().join(name).join("vmlinuz");
    if !name.contains('/') && fetched.is_file() {
        return Ok(fetched);
    }
    bail!(
        "--kernel {name}: no such kernel image; give a vmlinuz path, or a kernel scripts/kernels.sh fetched into {} (bullseye, bookworm, trixie)",
        kernels_dir().display()
    )
}

/// Whether `path` starts as an x86 kernel image does: the boot protocol's
/// "HdrS" at offset 0x202 (every bzImage since 2.6; a vmlinuz is one), or
/// an ELF vmlinux (QEMU boots one by its PVH note).
fn is_kernel_image(path: &Path) -> bool {
    use std::io::Read as _;
    let mut head = [0u8; 0x206];
    if std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_err() {
        return false;
    }
    &head[0x202..0x206] == b"HdrS" || head.starts_with(b"\x7fELF")
}

/// Fails in one line unless virtme-ng and QEMU are installed.
pub fn check_tools() -> Result<()> {
    for tool in ["vng", "qemu-system-x86_64"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output()?;
        if !found.status.success() {
            bail!(
                "{tool} is missing: guests need virtme-ng (pip) and qemu-system-x86 (apt); scripts/setup.sh installs both"
            );
        }
    }
    Ok(())
}

/// Fails in one line unless the installed QEMU loads `plugin`: QEMU loads
/// it with `probe=on`, on which the plugin says so and refuses, and QEMU
/// exits at once. A QEMU built without plugins, one speaking another
/// plugin API version, or a file that is not the plugin are refused here,
/// with QEMU's own words, instead of as a guest that never boots.
pub fn check_plugin(plugin: &Path) -> Result<()> {
    let out = Command::new("timeout")
        .args(["30", "qemu-system-x86_64", "-M", "none", "-display", "none", "-nodefaults", "-accel", "tcg", "-plugin"])
        .arg(format!("{},{}", plugin.display(), bpfbench_tcg_protocol::PROBE_ARG))
        .stdin(Stdio::null())
        .output()
        .context("starting qemu-system-x86_64")?;
    if String::from_utf8_lossy(&out.stdout).contains(bpfbench_tcg_protocol::PROBED) {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim().to_string();
    bail!(
        "the installed QEMU does not load bpfbench's TCG plugin ({said}): --metric kernel-insns needs a qemu-system-x86_64 built with plugin support, API version 1 (Debian 12's qemu-system-x86 7.2, which scripts/setup.sh installs)"
    )
}

/// Process groups of guests running now, for the hard-exit path.
static RUNNING: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Kills every guest this process started that still runs: the path the
/// second Ctrl-C takes, which exits without running drops.
pub fn kill_running() {
    if let Ok(groups) = RUNNING.lock() {
        for g in groups.iter() {
            // SAFETY: signalling process groups this process created.
            unsafe { libc::kill(-g, libc::SIGKILL) };
        }
    }
}

/// Kills QEMU processes of guests whose bpfbench is gone (SIGKILLed), and
/// removes their folders. Returns what it removed.
pub fn remove_leftovers() -> Vec<String> {
    let mut removed = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else { return removed };
    for p in procs.flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(cmdline) = std::fs::read(p.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains("qemu-system") {
            continue;
        }
        let Some(owner) = cmdline
            .split(FOLDER_PREFIX)
            .nth(1)
            .and_then(|rest| rest.split('-').next())
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if owner != std::process::id() && !super::owner_alive(owner, Some(pid as u32)) {
            // SAFETY: a QEMU of a guest folder whose bpfbench is gone.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            removed.push(format!("QEMU process {pid} of a guest whose bpfbench (pid {owner}) was killed"));
        }
    }
    if let Ok(dirs) = std::fs::read_dir(std::env::temp_dir()) {
        for d in dirs.flatten() {
            let name = d.file_name().to_string_lossy().into_owned();
            let owner = name.strip_prefix(FOLDER_PREFIX).and_then(|r| r.split('-').next()?.parse::<u32>().ok());
            // A folder outlives its QEMU: its owner is alive while its pid runs.
            if owner.is_some_and(|o| o != std::process::id() && !super::owner_alive(o, None)) {
                let _ = std::fs::remove_dir_all(d.path());
                removed.push(format!("guest folder {}", d.path().display()));
            }
        }
    }
    removed
}

/// The guest's vCPUs emulated in turn on one thread. With a thread each
/// (QEMU's default), a 6.12 guest that attached and detached the kprobes
/// and fentry programs of many libbpf-tools in a row died twice, an hour
/// in, of "Oops: int3" (the kernel patches its text through a breakpoint
/// and syncs the other CPUs; under multi-threaded TCG one of them met a
/// breakpoint no longer registered, we suppose). On one thread the same
/// run finished in 19 minutes, and a guest's boot and run took as long.
const TCG_ONE_THREAD: &str = "-accel tcg,thread=single";

/// A guest to boot.
#[derive(Debug, Clone)]
pub struct GuestSpec {
    pub image: PathBuf,
    /// More kernel command line (`--append`).
    pub append: Option<String>,
    /// A guest that has not finished by then is killed.
    pub bound: Duration,
    /// Its virtual CPUs. One guest alone boots faster under TCG with two
    /// (16.6 s against 20.4 s for Debian 13's kernel); guests side by side
    /// are faster with one each (three Debian guests, two at a time: 126 s
    /// against 163 s), as QEMU's own thread wants a core too.
    pub cpus: u32,
    /// A TCG plugin QEMU loads, with its arguments: `PATH,out=FILE`
    /// (bpfbench's instruction counter, system::tcg_counter).
    pub plugin: Option<String>,
}

/// Set (to anything), every guest's folder is kept: its script, console,
/// and what the run wrote (to see why a guest failed).
pub const KEEP_ENV: &str = "BPFBENCH_KEEP_GUEST_FOLDERS";

/// A guest's writable folder: created empty, removed when dropped unless kept.
pub struct OutputFolder {
    pub path: PathBuf,
    /// Left where it is when dropped (for whoever made it to remove).
    pub keep: bool,
}

impl OutputFolder {
    /// The folder for a guest named `label` (any text: kept to letters and digits).
    pub fn new(label: &str) -> Result<OutputFolder> {
        let label: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        let path = std::env::temp_dir().join(format!("{FOLDER_PREFIX}{}-{label}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(OutputFolder { path, keep: false })
    }

    pub fn read(&self, name: &str) -> Option<String> {
        std::fs::read_to_string(self.path.join(name)).ok()
    }

    /// The last line of the file `name` that is not blank (a message).
    pub fn last_line(&self, name: &str) -> Option<String> {
        self.read(name)?.lines().rev().find(|l| !l.trim().is_empty()).map(str::to_string)
    }

    /// The guest of `image` that [`start`] booted with this folder, as runs
    /// record it: its command line is here once the guest has booted.
    pub fn guest(&self, image: &Path, accel: Accelerator) -> Guest {
        Guest {
            image: image.display().to_string(),
            cmdline: self.read("cmdline").unwrap_or_default().trim().to_string(),
            accelerator: accel.as_str().to_string(),
        }
    }
}

/// `words` as one bash command line, each word single-quoted.
pub fn shell_command(words: &[String]) -> String {
    words.iter().map(|w| format!("'{}'", w.replace('\'', "'\\''"))).collect::<Vec<_>>().join(" ")
}

impl Drop for OutputFolder {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if std::env::var_os(KEEP_ENV).is_none() {
            let _ = std::fs::remove_dir_all(&self.path);
            return;
        }
        // For the user, under a name of its own: the next guest of this
        // label reuses the folder's name, and the next bpfbench removes
        // the folders of an owner that is gone.
        static KEPT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = KEPT.fetch_add(1, Ordering::Relaxed);
        let name = self.path.file_name().unwrap_or_default().to_string_lossy().replace(FOLDER_PREFIX, "");
        let kept = self.path.with_file_name(format!("bpfbench-kept-guest-{name}-{n}"));
        match std::fs::rename(&self.path, &kept) {
            Ok(()) => eprintln!("bpfbench: kept the guest's folder {}", kept.display()),
            Err(e) => eprintln!("bpfbench: could not keep the guest's folder {}: {e}", self.path.display()),
        }
    }
}

/// How long a KVM guest that only writes a file may take: one boots in a
/// few seconds where KVM works.
const KVM_PROBE_BOUND: Duration = Duration::from_secs(20);

/// Whether QEMU runs guests of `image` under KVM here: tried once per
/// boot of this machine with a guest that only writes a file, the answer
/// kept for later runs ([`remembered_accelerator`]). Nested KVM fails in
/// more than one way: QEMU exits ("failed to set MSR 0x10a"), KVM stops
/// the guest with an emulation error and QEMU waits, paused, for ever
/// ("KVM internal error"): the probe stops at either; or the guest spins
/// without a word (Debian's 5.10 and 6.1 here), which only the bound ends.
pub fn accelerator(image: &Path) -> Accelerator {
    static ACCEL: OnceLock<Accelerator> = OnceLock::new();
    *ACCEL.get_or_init(|| {
        if !Path::new("/dev/kvm").exists() {
            return Accelerator::Tcg;
        }
        let boot = boot_id();
        if let Some(known) = remembered_accelerator(ACCELERATOR_FILE, boot.as_deref()) {
            return known;
        }
        // A probe that could not start a guest decided nothing: not kept.
        let Some(probed) = probe_kvm(image) else { return Accelerator::Tcg };
        if let Some(boot) = boot {
            remember_accelerator(ACCELERATOR_FILE, &boot, probed);
        }
        probed
    })
}

/// Where the probe's answer waits for the next run: /run is emptied at
/// boot, and the file names the boot it was found in. A probe of a kernel
/// that spins under a broken KVM costs its whole bound (20 s), which every
/// `vm` and `ab --kernel` run, and each guest test's process, paid again.
const ACCELERATOR_FILE: &str = "/run/bpfbench/accelerator";

/// This boot of the machine (the kernel's random boot id).
fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok().map(|s| s.trim().to_string())
}

/// The accelerator `file` holds for `boot`, if it holds one for this boot.
fn remembered_accelerator(file: impl AsRef<Path>, boot: Option<&str>) -> Option<Accelerator> {
    let text = std::fs::read_to_string(file).ok()?;
    let (of_boot, accel) = text.trim().split_once(' ')?;
    if Some(of_boot) != boot {
        return None;
    }
    [Accelerator::Kvm, Accelerator::Tcg].into_iter().find(|a| a.as_str() == accel)
}

/// Keeps `accel` in `file` for `boot`; a run that cannot write it probes
/// again next time, nothing worse.
fn remember_accelerator(file: impl AsRef<Path>, boot: &str, accel: Accelerator) {
    let file = file.as_ref();
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // Written whole then renamed, so a concurrent reader sees all or nothing.
    let partial = file.with_extension(format!("{}", std::process::id()));
    if std::fs::write(&partial, format!("{boot} {}\n", accel.as_str())).is_ok() {
        let _ = std::fs::rename(&partial, file);
    }
}

/// Boots `image` under KVM with a script that only writes a file: KVM
/// works here if the file is written within [`KVM_PROBE_BOUND`]; `None`
/// when no guest could be started to tell.
fn probe_kvm(image: &Path) -> Option<Accelerator> {
    let out = OutputFolder::new("kvm-probe").ok()?;
    let spec = GuestSpec { image: image.to_path_buf(), append: None, bound: KVM_PROBE_BOUND, cpus: 1, plugin: None };
    let mut guest = start(&spec, Accelerator::Kvm, &out, "echo ok > $OUT/kvm", None).ok()?;
    let started = Instant::now();
    while !guest.exited() && started.elapsed() < KVM_PROBE_BOUND {
        let console = out.read("console.log").unwrap_or_default();
        if console.contains("KVM internal error") || console.contains("failed to set MSR") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Killed here if it still runs.
    drop(guest);
    let ok = out.read("kvm").is_some_and(|s| s.trim() == "ok");
    Some(if ok { Accelerator::Kvm } else { Accelerator::Tcg })
}

/// Boots `spec` and runs `script` (bash, in this process's folder; `$OUT`
/// is the writable folder `out`, where the guest's `release` and `cmdline`
/// are written first) until it ends, the bound passes or `stop` is set; the guest is
/// killed with its whole process group in the last two cases.
pub fn boot(spec: &GuestSpec, accel: Accelerator, out: &OutputFolder, script: &str, stop: &AtomicBool) -> Result<()> {
    start(spec, accel, out, script, None)?.wait(spec.bound, stop)
}

/// The name of the virtio-serial port [`start`] gives a guest: the guest
/// finds its device by this name under /sys/class/virtio-ports.
pub const PORT_NAME: &str = "bpfbench.port";

/// A guest that is running; killed with its QEMU when dropped.
pub struct RunningGuest {
    child: std::process::Child,
    group: i32,
}

/// Starts a guest of `spec` running `script` (see [`boot`]); `port`
/// (`Some(socket)`) gives it a virtio-serial port named [`PORT_NAME`] that
/// QEMU connects to the listening Unix socket `socket`.
pub fn start(
    spec: &GuestSpec,
    accel: Accelerator,
    out: &OutputFolder,
    script: &str,
    port: Option<&Path>,
) -> Result<RunningGuest> {
    // What vng and QEMU print, for the message when a guest fails.
    let console = std::fs::File::create(out.path.join("console.log"))?;
    let mut cmd = Command::new("vng");
    cmd.arg("--run").arg(&spec.image).args(["--force-9p", "--memory", "2G", "--cpus", &spec.cpus.to_string()]);
    if accel == Accelerator::Tcg {
        cmd.arg("--disable-kvm");
    }
    // The kernel's console goes to the console file too (vng's --verbose),
    // with only errors and worse (loglevel=4: 30 lines a boot, no slower):
    // a guest that panics or oopses before the script runs says why.
    // A loglevel in `append` comes later and wins.
    cmd.arg("--verbose").arg("--append").arg(match &spec.append {
        Some(append) => format!("loglevel=4 {append}"),
        None => "loglevel=4".to_string(),
    });
    let mut qemu_opts = vec![format!("-d cpu_reset -D {}", out.path.join(QEMU_LOG).display())];
    if accel == Accelerator::Tcg {
        qemu_opts.push(TCG_ONE_THREAD.to_string());
    }
    if let Some(socket) = port {
        qemu_opts.push(format!(
            "-device virtio-serial-pci,id=bpfbench_serial -chardev socket,id=bpfbench_port,path={} -device virtserialport,bus=bpfbench_serial.0,chardev=bpfbench_port,name={PORT_NAME}",
            socket.display()
        ));
    }
    if let Some(plugin) = &spec.plugin {
        qemu_opts.push(format!("-plugin {plugin}"));
    }
    cmd.arg(format!("--qemu-opts={}", qemu_opts.join(" ")));
    // The script goes in a file: vng may pass the command on the kernel's
    // command line, which cuts it at 2 KiB (seen: a guest waiting forever).
    // It starts in this process's folder, so that relative paths mean what
    // they mean here, after noting the guest's release and command line.
    let prologue = format!(
        "export OUT={}\ncd {}\nuname -r > $OUT/release\ncat /proc/cmdline > $OUT/cmdline\n",
        out.path.display(),
        shell_command(&[std::env::current_dir()?.display().to_string()])
    );
    std::fs::write(out.path.join("script.sh"), format!("{prologue}{script}\n"))?;
    cmd.arg(format!("--rwdir={}", out.path.display()))
        .arg("--exec")
        .arg(format!("bash {}/script.sh", out.path.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::from(console.try_clone()?))
        .stderr(Stdio::from(console))
        // Its own process group, so a kill reaches QEMU too, and a Ctrl-C
        // at the terminal reaches only bpfbench, which decides. QEMU
        // inherits this process's CPU affinity.
        .process_group(0);
    let child = cmd.spawn().context("starting vng")?;
    let group = child.id() as i32;
    RUNNING.lock().expect("not poisoned").push(group);
    Ok(RunningGuest { child, group })
}

impl RunningGuest {
    /// Whether the guest has powered off.
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_some()
    }

    /// Waits until the guest powers off, `bound` passes or `stop` is set
    /// (then it is killed).
    pub fn wait(mut self, bound: Duration, stop: &AtomicBool) -> Result<()> {
        let started = Instant::now();
        loop {
            // vng's exit status says nothing (255 after a clean power-off,
            // and after QEMU, its grandchild, crashed): the script's files
            // and the console say how it went.
            if self.exited() {
                return Ok(());
            }
            if stop.load(Ordering::Relaxed) {
                bail!("the run was interrupted; the guest was killed");
            }
            if started.elapsed() > bound {
                bail!("the guest did not finish within {} s and was killed", bound.as_secs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for RunningGuest {
    fn drop(&mut self) {
        if !self.exited() {
            // SAFETY: signalling the process group we created.
            unsafe { libc::kill(-self.group, libc::SIGKILL) };
            let _ = self.child.wait();
        }
        if let Ok(mut groups) = RUNNING.lock() {
            groups.retain(|g| *g != self.group);
        }
    }
}

/// The console's last lines, for a message about a guest that failed.
pub fn console_tail(out: &OutputFolder, lines: usize) -> String {
    tail_of(&out.read("console.log").unwrap_or_default(), lines)
}

/// What became of a guest that failed: the guest kernel's first panic or
/// oops line if it printed one (a stack trace's end says nothing), else
/// that its CPU triple-faulted if QEMU's log says so (a reset the kernel
/// cannot print), else the console's last three lines, said to come from
/// a guest that never powered off where the kernel did not print that it
/// did (QEMU crashed or was killed).
pub fn what_happened(out: &OutputFolder) -> String {
    happened(&out.read("console.log").unwrap_or_default(), &out.read(QEMU_LOG).unwrap_or_default())
}

/// QEMU's log of CPU resets in a guest's folder (`-d cpu_reset`).
const QEMU_LOG: &str = "qemu.log";

/// What a kernel prints as it powers off (at any loglevel but 0).
const POWERED_OFF: &str = "reboot: Power down";

/// How a kernel starts the line that says it failed.
const KERNEL_FAILURES: [&str; 5] = ["Kernel panic", "BUG:", "Oops:", "general protection fault", "kernel BUG"];

fn happened(console: &str, qemu_log: &str) -> String {
    let failure = console.lines().find_map(|line| {
        let at = KERNEL_FAILURES.iter().filter_map(|f| line.find(f)).min()?;
        Some(line[at..].trim().to_string())
    });
    match failure {
        Some(line) => format!("the guest kernel said: {}", tail_of(&line, 1)),
        None if qemu_log.contains("Triple fault") => "its CPU triple-faulted and QEMU reset it".to_string(),
        None if console.contains(POWERED_OFF) => format!("the console's last lines: {}", tail_of(console, 3)),
        None => format!(
            "it never powered off and logged no panic, oops or triple fault; the console's last lines: {}",
            tail_of(console, 3)
        ),
    }
}

/// The last `lines` lines of `console` with text, without control
/// characters (a console that never started holds NUL bytes, which a
/// terminal shows as a long run of spaces).
fn tail_of(console: &str, lines: usize) -> String {
    let clean: String = console.chars().filter(|c| *c == '\n' || !c.is_control()).collect();
    let tail: Vec<&str> = clean.lines().map(str::trim).rev().filter(|l| !l.is_empty()).take(lines).collect();
    tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_no_kernel_is_refused_and_a_console_tail_has_no_control_bytes() {
        let e = resolve_image("/etc/passwd").unwrap_err().to_string();
        assert!(e.contains("not a kernel image"), "{e}");
        assert_eq!(
            tail_of("booting\n\0\0\0\0qemu: invalid kernel header\n", 3),
            "booting | qemu: invalid kernel header"
        );
    }

    #[test]
    fn what_happened_is_the_kernels_panic_line_else_a_triple_fault_else_the_consoles_end() {
        let panicked = "[    0.767013] Kernel panic - not syncing: System is deadlocked on memory\n[    0.767954]  <TASK>\n[    0.769063]  </TASK>\n";
        let reset = "CPU Reset (CPU 0)\nTriple fault\nCPU Reset (CPU 0)\n";
        assert_eq!(
            happened(panicked, reset),
            "the guest kernel said: Kernel panic - not syncing: System is deadlocked on memory"
        );
        assert_eq!(happened("a\nb\nc\nd\n", reset), "its CPU triple-faulted and QEMU reset it");
        let powered_off = "a\nb\n[   10.9] reboot: Power down\n";
        assert_eq!(
            happened(powered_off, "CPU Reset (CPU 0)\n"),
            "the console's last lines: a | b | [   10.9] reboot: Power down"
        );
        assert_eq!(
            happened("a\nb\n", "CPU Reset (CPU 0)\n"),
            "it never powered off and logged no panic, oops or triple fault; the console's last lines: a | b"
        );
    }

    #[test]
    fn the_probes_answer_holds_for_the_boot_it_was_found_in_only() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("kept/accelerator");
        assert_eq!(remembered_accelerator(&file, Some("boot-a")), None, "nothing kept yet");
        remember_accelerator(&file, "boot-a", Accelerator::Tcg);
        assert_eq!(remembered_accelerator(&file, Some("boot-a")), Some(Accelerator::Tcg));
        assert_eq!(remembered_accelerator(&file, Some("boot-b")), None, "another boot probes again");
        assert_eq!(remembered_accelerator(&file, None), None, "an unknown boot probes again");
        remember_accelerator(&file, "boot-b", Accelerator::Kvm);
        assert_eq!(remembered_accelerator(&file, Some("boot-b")), Some(Accelerator::Kvm));
        std::fs::write(&file, "boot-b qemu\n").unwrap();
        assert_eq!(remembered_accelerator(&file, Some("boot-b")), None, "an answer it cannot read");
    }
}
