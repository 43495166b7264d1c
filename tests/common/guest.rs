//! Guests of other kernels for the tests: Debian's kernel images (fetched
//! by scripts/kernels.sh) booted with virtme-ng and QEMU, the host's root
//! shared read-only, a script of bpfbench commands run inside, and its
//! outputs written to a folder of the test's own. KVM where it works, else
//! TCG (this project's machines cannot nest KVM guests); a guest that does
//! not finish within its bound is killed with its whole process group.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Where scripts/kernels.sh put the kernels.
pub fn kernels_dir() -> PathBuf {
    std::env::var_os("BPFBENCH_KERNELS").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into())).join(".cache/bpfbench/kernels")
    })
}

/// The kernel image of a Debian suite (bullseye, bookworm, trixie), or why
/// there is none. `BPFBENCH_SKIP_GUESTS=1` skips guest tests on purpose.
pub fn kernel(suite: &str) -> Option<PathBuf> {
    if std::env::var_os("BPFBENCH_SKIP_GUESTS").is_some() {
        eprintln!("skipping the {suite} guest: BPFBENCH_SKIP_GUESTS is set");
        return None;
    }
    let image = kernels_dir().join(suite).join("vmlinuz");
    assert!(
        image.exists(),
        "no {suite} kernel at {}: run scripts/kernels.sh (scripts/setup.sh test does), or set BPFBENCH_SKIP_GUESTS=1",
        image.display()
    );
    for tool in ["vng", "qemu-system-x86_64"] {
        let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output().unwrap();
        assert!(found.status.success(), "{tool} is missing: scripts/setup.sh test installs it");
    }
    Some(image)
}

/// What a guest run left: each command's stdout, stderr and exit code by name.
pub struct GuestRun {
    pub dir: PathBuf,
    pub kernel_release: String,
    pub elapsed: Duration,
}

impl Drop for GuestRun {
    /// The outputs go with a passing test; a failing one keeps them to read.
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl GuestRun {
    pub fn stdout(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.out"))).unwrap_or_default()
    }
    pub fn stderr(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.err"))).unwrap_or_default()
    }
    pub fn code(&self, name: &str) -> Option<i32> {
        std::fs::read_to_string(self.dir.join(format!("{name}.rc"))).ok()?.trim().parse().ok()
    }
}

/// Whether QEMU runs guests under KVM here: tried once per test process
/// with a guest that only exits.
fn kvm_works(image: &Path) -> bool {
    static KVM: OnceLock<bool> = OnceLock::new();
    *KVM.get_or_init(|| {
        if !Path::new("/dev/kvm").exists() {
            return false;
        }
        let dir = std::env::temp_dir().join(format!("bpfbench-guest-kvm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = boot(image, &dir, "echo ok > $OUT/kvm", true, Duration::from_secs(120)).is_ok()
            && std::fs::read_to_string(dir.join("kvm")).is_ok_and(|s| s.trim() == "ok");
        let _ = std::fs::remove_dir_all(&dir);
        eprintln!("guests run under {}", if ok { "KVM" } else { "TCG (KVM failed here)" });
        ok
    })
}

/// Boots `image` and runs `script` (bash; `$OUT` is the writable output
/// folder) within `bound`; kills the guest's whole process group past it.
fn boot(image: &Path, out: &Path, script: &str, kvm: bool, bound: Duration) -> Result<(), String> {
    // What vng and QEMU print, for the report when a guest fails.
    let console = std::fs::File::create(out.join("console.log")).unwrap();
    let mut cmd = Command::new("vng");
    cmd.arg("--run").arg(image).args(["--force-9p", "--memory", "2G", "--cpus", "2"]);
    if !kvm {
        cmd.arg("--disable-kvm");
    }
    // The script goes in a file: vng may pass the command on the kernel's
    // command line, which cuts it at 2 KiB (seen: a guest waiting forever).
    std::fs::write(out.join("script.sh"), format!("export OUT={}\n{script}\n", out.display())).unwrap();
    cmd.arg(format!("--rwdir={}", out.display()))
        .arg("--exec")
        .arg(format!("bash {}/script.sh", out.display()))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .stdout(Stdio::from(console.try_clone().unwrap()))
        .stderr(Stdio::from(console))
        // Its own process group, so a kill reaches QEMU too.
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| format!("starting vng: {e}"))?;
    let started = Instant::now();
    loop {
        // vng's own exit status says nothing of the script (255 after a
        // clean power-off): the script's files say how it went.
        if child.try_wait().unwrap().is_some() {
            return Ok(());
        }
        if started.elapsed() > bound {
            // SAFETY: signalling the process group we created.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            return Err(format!("the guest did not finish within {} s and was killed", bound.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs `commands` (name, bpfbench arguments) in a guest of `image`, each
/// one's output kept under its name; fails the test if the guest does not
/// boot or does not finish within `bound`.
pub fn run(image: &Path, label: &str, commands: &[(&str, Vec<String>)], bound: Duration) -> GuestRun {
    let dir = std::env::temp_dir().join(format!("bpfbench-guest-{label}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let bin = env!("CARGO_BIN_EXE_bpfbench");
    let mut script = String::from("uname -r > $OUT/release\n");
    for (name, args) in commands {
        let quoted: Vec<String> = args.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
        script +=
            &format!("{bin} {} > $OUT/{name}.out 2> $OUT/{name}.err; echo $? > $OUT/{name}.rc; ", quoted.join(" "));
    }
    let started = Instant::now();
    let kvm = kvm_works(image);
    if let Err(e) = boot(image, &dir, &script, kvm, bound) {
        panic!("{label} guest ({}): {e}", image.display());
    }
    let kernel_release = std::fs::read_to_string(dir.join("release"))
        .unwrap_or_else(|_| {
            let console = std::fs::read_to_string(dir.join("console.log")).unwrap_or_default();
            let tail: Vec<&str> = console.lines().rev().take(15).collect();
            panic!(
                "{label} guest: the script did not run; the console's end:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            )
        })
        .trim()
        .to_string();
    GuestRun { dir, kernel_release, elapsed: started.elapsed() }
}
