//! Guests of other kernels for the tests: Debian's kernel images (fetched
//! by scripts/kernels.sh) booted by bpfbench's own guest machinery
//! (system::guest, which `bpfbench vm` uses), a script of bpfbench commands
//! run inside, its outputs in a folder kept when a test fails.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use bpfbench::system::guest::{self, kernels_dir};

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
    /// When the test started the guest, in seconds since the epoch.
    began: f64,
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
    /// How long each command took in the guest (the emulator's seconds),
    /// in their order: where a guest test's time goes.
    pub fn command_seconds(&self, names: &[&str]) -> String {
        let done = |n: &str| -> Option<f64> {
            std::fs::read_to_string(self.dir.join(format!("{n}.done"))).ok()?.trim().parse().ok()
        };
        let mut last = done("started");
        let mut parts = Vec::new();
        if let (Some(up), Some(finished)) = (last, names.last().and_then(|n| done(n))) {
            // The guest's clock starts from the host's: near enough to see where a run's time goes.
            parts.push(format!("booted after {:.1} s, ran {:.1} s", up - self.began, finished - up));
        }
        for n in names {
            let end = done(n);
            if let (Some(a), Some(b)) = (last, end) {
                parts.push(format!("{n} {:.1}", b - a));
            }
            last = end;
        }
        parts.join(", ")
    }
    pub fn code(&self, name: &str) -> Option<i32> {
        std::fs::read_to_string(self.dir.join(format!("{name}.rc"))).ok()?.trim().parse().ok()
    }
}

/// Runs `commands` (name, bpfbench arguments) in a guest of `image`
/// (system::guest: KVM where it works, else TCG), each one's output kept
/// under its name; fails the test if the guest does not boot or does not
/// finish within `bound`.
pub fn run(image: &Path, label: &str, commands: &[(&str, Vec<String>)], bound: Duration) -> GuestRun {
    let mut folder = guest::OutputFolder::new(label).unwrap();
    // GuestRun decides whether the outputs stay.
    folder.keep = true;
    let dir = folder.path.clone();
    let bin = env!("CARGO_BIN_EXE_bpfbench");
    // system::guest starts the script in this folder and writes `release`.
    let mut script = "date +%s.%N > $OUT/started.done\n".to_string();
    for (name, args) in commands {
        let words: Vec<String> = std::iter::once(bin.to_string()).chain(args.iter().cloned()).collect();
        script += &format!(
            "{} > $OUT/{name}.out 2> $OUT/{name}.err; echo $? > $OUT/{name}.rc; date +%s.%N > $OUT/{name}.done\n",
            guest::shell_command(&words)
        );
    }
    let started = Instant::now();
    let began = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let accel = guest::accelerator(image);
    eprintln!("guests run under {}", accel.as_str());
    // Tests run guests two at a time: one CPU each is faster (GuestSpec::cpus).
    let spec = guest::GuestSpec { image: image.to_path_buf(), append: None, bound, cpus: 1, plugin: None };
    let never = AtomicBool::new(false);
    if let Err(e) = guest::boot(&spec, accel, &folder, &script, &never) {
        panic!("{label} guest ({}): {e:#}", image.display());
    }
    let kernel_release = std::fs::read_to_string(dir.join("release"))
        .unwrap_or_else(|_| {
            panic!("{label} guest: the script did not run; the console's end: {}", guest::console_tail(&folder, 15))
        })
        .trim()
        .to_string();
    GuestRun { dir, kernel_release, elapsed: started.elapsed(), began }
}
