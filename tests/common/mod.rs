//! Helpers shared by the integration tests: kernel set-up, quick sampling,
//! synthetic records, temporary paths and running the binary.

#![allow(dead_code)]

pub mod guest;
pub mod leftovers;
pub mod pg_server;

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;

use bpfbench::harness::runner::Runner;
use bpfbench::harness::{ScenarioInfo, Workload};
use bpfbench::kernel::libbpf_log;
use bpfbench::record::paired::{PAIRED_SCHEMA, PairedCase, PairedRecord};
use bpfbench::record::{
    Calibration, Environment, Figure, Measurement, Overhead, RunRecord, Sampling, ScenarioFacts, ScenarioRecord, schema,
};
use bpfbench::stats::Summary;
use bpfbench::stats::two_sample::Verdict;
use bpfbench::system::{self, cpu};

/// The machine, held for a test. Tests run side by side (two threads on
/// this machine's two CPUs) unless they hold it: one that times programs,
/// or changes what other tests see of the kernel (interfaces, pins,
/// sysctls, leftovers' snapshots), holds it alone ([`machine`]); guests'
/// tests, which load the CPUs but time nothing of the host's, share it
/// with each other ([`machine_shared`]); pure tests take nothing. An flock,
/// so test binaries run at once (cargo nextest) keep to it too.
pub struct Machine(std::fs::File);

fn lock_machine(how: libc::c_int) -> Machine {
    use std::os::fd::AsRawFd;
    let path = std::env::temp_dir().join("bpfbench-tests.lock");
    let file = std::fs::File::options().create(true).truncate(false).write(true).open(&path).unwrap();
    // SAFETY: an open file of ours; the lock goes with it when it closes.
    let rc = unsafe { libc::flock(file.as_raw_fd(), how) };
    assert_eq!(rc, 0, "locking {}: {}", path.display(), std::io::Error::last_os_error());
    Machine(file)
}

/// The machine alone, for a test that times programs or changes the kernel's state.
pub fn machine() -> Machine {
    lock_machine(libc::LOCK_EX)
}

/// The machine shared with other guests' tests (never with a timed test).
pub fn machine_shared() -> Machine {
    lock_machine(libc::LOCK_SH)
}

/// Pins this thread as a run would and returns its CPU.
pub fn prepared_cpu() -> usize {
    system::check_privileges().expect("kernel tests run as root (CI does)");
    let cpu = cpu::default_cpu().unwrap();
    cpu::pin_to_cpu(cpu).unwrap();
    libbpf_log::capture();
    cpu
}

/// The scenario of `w` called `name`.
pub fn scenario(w: &dyn Workload, name: &str) -> ScenarioInfo {
    w.scenarios().iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no scenario {name}")).clone()
}

/// A runner with few, short samples, that no Ctrl-C stops.
pub fn quick_runner(samples: u64, batch_ms: f64) -> Runner {
    static NEVER: AtomicBool = AtomicBool::new(false);
    Runner::new(Sampling { samples, batch_ms, warmup_s: 0.02, max_scenario_s: 5.0, sweeps: 1 }, false, &NEVER)
}

/// A fresh directory for one test's files, removed when dropped (also
/// when the test fails).
pub struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("bpfbench-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// Copies the encapsulation example (examples/encap) into `dir` and
/// compiles its object there, as the README says.
pub fn compile_example(dir: &std::path::Path) {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/encap");
    for f in ["xdp_encap.bpf.c", "services.json", "bench.toml"] {
        std::fs::copy(example.join(f), dir.join(f)).unwrap();
    }
    let cc = Command::new("clang-19")
        .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"])
        .arg(dir.join("xdp_encap.bpf.c"))
        .arg("-o")
        .arg(dir.join("xdp_encap.bpf.o"))
        .output()
        .unwrap();
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
}

/// Runs the bpfbench binary with `args`.
pub fn bpfbench<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bpfbench")).args(args).output().expect("running bpfbench")
}

/// Runs bpfbench with `args` and asserts it fails (exit 1) with one line
/// on stderr that contains `needle`.
pub fn assert_one_line_error(args: &[&str], needle: &str) {
    let o = bpfbench(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: more than one line: {err}");
    assert_says_every_reason(&err);
}

/// An error line whose every cause has a reason: none ends at its colon,
/// none is missing (bpfbench says "(no reason given)" where one is, which
/// the bad inputs' tests hold to never be needed).
pub fn assert_says_every_reason(err: &str) {
    let line = err.trim_end();
    assert!(!line.ends_with(':') && !line.contains(": :"), "an empty reason: {err}");
    assert!(!line.contains("(no reason given)"), "a cause gave no reason: {err}");
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Deterministic noise around `center` (uniform, ±5%).
pub fn samples(center: f64, seed: u64) -> Vec<f64> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..200)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            center * (1.0 + ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.1)
        })
        .collect()
}

/// A measured xdp-lb scenario with these samples.
pub fn record(name: &str, samples: Vec<f64>) -> ScenarioRecord {
    let summary = Summary::of(&samples).unwrap();
    ScenarioRecord {
        workload: "xdp-lb".into(),
        name: name.into(),
        group: "g".into(),
        description: "d".into(),
        facts: ScenarioFacts::TABLE_ROW,
        timing: Default::default(),
        unavailable: None,
        validated: true,
        verdict: Some("XDP_TX".into()),
        outcome: None,
        checks: vec![],
        notes: vec![],
        error: None,
        program: None,
        attached: None,
        figure: Some(Figure::Time(Measurement {
            batch_iters: 1000,
            calibration: Calibration {
                estimate_ns_per_op: 10.0,
                proportionality_ratio: 2.0,
                proportionality_ci: Some((1.98, 2.02)),
                proportionality_pairs: 9,
                proportional: true,
            },
            overhead: Overhead {
                key: "k".into(),
                batch_iters: 1000,
                samples_ns: samples.clone(),
                summary: summary.clone(),
            },
            samples_ns: samples,
            summary,
            warnings: vec![],
            noise: None,
            observations: vec![],
        })),
        runtime: Default::default(),
    }
}

/// A synthetic run of two xdp-lb benchmarks, their medians scaled by `scale`.
pub fn run(tag: Option<&str>, scale: f64) -> RunRecord {
    RunRecord {
        schema: schema(),
        tag: tag.map(String::from),
        environment: Environment { kernel: "6.18".into(), git_commit: "abc".into(), ..Default::default() },
        options: Sampling::default(),
        results: vec![
            record("tcp-v4-lru-hit", samples(50.0 * scale, 1)),
            record("tcp-v4-lru-miss", samples(300.0 * scale, 2)),
        ],
        interrupted: false,
    }
}

/// `run` with only the scenarios named, each with these medians.
pub fn run_of(named: &[(&str, f64)]) -> RunRecord {
    let mut r = run(None, 1.0);
    r.results = named.iter().enumerate().map(|(i, (n, m))| record(n, samples(*m, i as u64 + 1))).collect();
    r
}

/// A test object build.rs compiled from tests/objects or examples.
pub fn test_object(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("OUT_DIR"), "/test-objects")).join(name)
}

/// `tests/objects/NAME.bpf.c` built into `dir/out` as the A/B guide builds
/// it by compiler: `clang-19`, or `bpf-gcc` (GCC 12's BPF backend, Debian's
/// `gcc-bpf`, which `scripts/setup.sh test` installs) with BTF (`-gbtf`)
/// and the system's headers after its own (its BPF sysroot has none).
pub fn built_with(compiler: &str, name: &str, dir: &std::path::Path, out: &str) -> PathBuf {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/objects").join(format!("{name}.bpf.c"));
    let to = dir.join(out);
    let flags: &[&str] = match compiler {
        "clang-19" => &["-O2", "-g", "--target=bpf", "-mcpu=v3", "-I/usr/include/x86_64-linux-gnu", "-c"],
        "bpf-gcc" => {
            &["-O2", "-gbtf", "-mcpu=v3", "-I/usr/include/x86_64-linux-gnu", "-idirafter", "/usr/include", "-c"]
        }
        other => panic!("no flags for {other}"),
    };
    let cc = Command::new(compiler)
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&to)
        .output()
        .unwrap_or_else(|e| panic!("{compiler}: {e}; scripts/setup.sh test installs it (gcc-bpf: bpf-gcc)"));
    assert!(cc.status.success(), "{compiler} {name}: {}", String::from_utf8_lossy(&cc.stderr));
    to
}

/// [`test_object`] as a command's argument.
pub fn object(name: &str) -> String {
    test_object(name).to_string_lossy().into_owned()
}

/// A BPF filesystem of the test's own, mounted on a fresh directory and
/// unmounted (with whatever was pinned in it) when dropped, also when the
/// test fails: tests never pin into the machine's /sys/fs/bpf.
pub struct Bpffs(pub PathBuf);

impl Bpffs {
    pub fn mount(name: &str) -> Bpffs {
        let dir = std::env::temp_dir().join(format!("bpfbench-test-bpffs-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = |s: &str| std::ffi::CString::new(s).unwrap();
        let target = c(dir.to_str().unwrap());
        // SAFETY: valid C strings; mounting needs root, which the kernel tests have.
        let rc = unsafe { libc::mount(c("bpf").as_ptr(), target.as_ptr(), c("bpf").as_ptr(), 0, std::ptr::null()) };
        assert_eq!(rc, 0, "mounting bpffs on {}: {}", dir.display(), std::io::Error::last_os_error());
        Bpffs(dir)
    }
}

impl Drop for Bpffs {
    fn drop(&mut self) {
        let target = std::ffi::CString::new(self.0.to_str().unwrap()).unwrap();
        // SAFETY: a path we mounted.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Whether the BPF filesystem is mounted at /sys/fs/bpf, as systemd mounts
/// it at boot on most distributions, or not, as on a bare VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysBpffs {
    Unmounted,
    Mounted,
}

const BPF_FS_MAGIC: i64 = 0xcafe4a11;

/// Whether a BPF filesystem is mounted at /sys/fs/bpf as this thread sees it.
pub fn sys_bpffs() -> SysBpffs {
    let path = std::ffi::CString::new("/sys/fs/bpf").unwrap();
    // SAFETY: a valid path and an out-parameter of the right type.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statfs(path.as_ptr(), &mut fs) };
    if rc == 0 && fs.f_type as i64 == BPF_FS_MAGIC { SysBpffs::Mounted } else { SysBpffs::Unmounted }
}

/// Runs `f` on a thread of its own, in a mount namespace of its own in
/// which /sys/fs/bpf is as `state` says: mounted there if the machine has
/// it unmounted, unmounted there if the machine has it mounted. The
/// machine's own mounts are never touched, and whatever is pinned in a
/// bpffs mounted here goes with the namespace when the thread ends, also
/// when `f` panics. Child processes started by `f` share the namespace.
pub fn with_sys_bpffs<T: Send>(state: SysBpffs, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        let thread = s.spawn(move || {
            let c = |s: &str| std::ffi::CString::new(s).unwrap();
            let sys_bpf = c("/sys/fs/bpf");
            // SAFETY: plain syscalls on valid C strings; only this thread
            // (and its children) enter the new namespace.
            unsafe {
                assert_eq!(
                    libc::unshare(libc::CLONE_NEWNS),
                    0,
                    "unshare(CLONE_NEWNS): {}",
                    std::io::Error::last_os_error()
                );
                // Mounts made here must not propagate back to the machine.
                let rc = libc::mount(
                    std::ptr::null(),
                    c("/").as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_SLAVE,
                    std::ptr::null(),
                );
                assert_eq!(rc, 0, "making / a slave mount: {}", std::io::Error::last_os_error());
                match (state, sys_bpffs()) {
                    (SysBpffs::Mounted, SysBpffs::Unmounted) => {
                        let rc =
                            libc::mount(c("bpf").as_ptr(), sys_bpf.as_ptr(), c("bpf").as_ptr(), 0, std::ptr::null());
                        assert_eq!(rc, 0, "mounting bpffs on /sys/fs/bpf: {}", std::io::Error::last_os_error());
                    }
                    (SysBpffs::Unmounted, SysBpffs::Mounted) => {
                        // Every mount stacked there, as systemd's may be more than one.
                        while sys_bpffs() == SysBpffs::Mounted {
                            assert_eq!(
                                libc::umount2(sys_bpf.as_ptr(), libc::MNT_DETACH),
                                0,
                                "unmounting /sys/fs/bpf: {}",
                                std::io::Error::last_os_error()
                            );
                        }
                    }
                    _ => {}
                }
            }
            assert_eq!(sys_bpffs(), state);
            f()
        });
        thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The rows of the Markdown tables in `md` (header and separator rows
/// included), each split into its trimmed cells.
pub fn markdown_rows(md: &str) -> Vec<Vec<String>> {
    md.lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect())
        .collect()
}

/// A stored-looking paired comparison: one xdp-lb case, B 2 % slower.
pub fn paired_record() -> PairedRecord {
    let case = PairedCase {
        workload: "xdp-lb".into(),
        name: "tcp-v4-lru-hit".into(),
        timing: Default::default(),
        facts: ScenarioFacts::TABLE_ROW,
        returns: None,
        bytes: None,
        batch_iters: 5000,
        median_a: 150.0,
        median_b: 153.0,
        median_a_ci95: (149.0, 151.0),
        median_b_ci95: (152.0, 154.0),
        ratio: 1.02,
        ratio_ci95: (1.012, 1.028),
        verdict: Verdict::Slower,
        stop: "decided".into(),
        elapsed_s: 4.2,
        round_ratios: vec![1.01, 1.03, 1.02, 1.02],
        ratios: vec![1.0, 1.02, 1.03, 1.04],
        spread: None,
        programs: None,
    };
    PairedRecord {
        schema: PAIRED_SCHEMA.into(),
        a: "a.bpf.o".into(),
        b: "b.bpf.o".into(),
        tag: Some("pr-1".into()),
        environment: run(None, 1.0).environment,
        threshold: 0.01,
        geomean_ratio: Some(1.02),
        cases: vec![case],
        not_compared: Vec::new(),
        suite: false,
        interrupted: false,
        guests: Vec::new(),
    }
}

/// Cells of a plain table line: (start, end) of each run of text between
/// gaps of two or more spaces.
fn plain_cells(line: &str) -> Vec<(usize, usize)> {
    let chars: Vec<char> = line.chars().collect();
    let mut cells = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == ' ' {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && !(chars[i] == ' ' && chars.get(i + 1).is_none_or(|c| *c == ' ')) {
            i += 1;
        }
        cells.push((start, i));
    }
    cells
}

/// Fails unless every line of the plain table `block` (its first line the
/// heading) puts each cell where a column of the heading starts (a
/// left-aligned column) or ends (a right-aligned one), in the heading's
/// order: a row pushed right by a wide cell fails.
pub fn assert_plain_aligned(block: &str) {
    let mut lines = block.lines().filter(|l| !l.trim().is_empty());
    let head = plain_cells(lines.next().expect("a heading"));
    for line in lines {
        let mut column = 0;
        for (start, end) in plain_cells(line) {
            let found = (column..head.len()).find(|&j| head[j].0 == start || head[j].1 == end);
            let Some(j) = found else {
                panic!("a cell at {start}..{end} of {line:?} is in no column of the heading:\n{block}");
            };
            column = j + 1;
        }
    }
}

/// Fails unless every row of the boxed table `text` has its bars where
/// the rules have their corners (a spanning row: its first, second and
/// last bar).
pub fn assert_boxed_aligned(text: &str) {
    let marks = |l: &str, c: char| l.chars().enumerate().filter(|(_, x)| *x == c).map(|(i, _)| i).collect::<Vec<_>>();
    let rule = text.lines().find(|l| l.starts_with("+-")).expect("a rule");
    let corners = marks(rule, '+');
    for l in text.lines() {
        if l.starts_with('+') {
            assert_eq!(marks(l, '+'), corners, "{l:?} in\n{text}");
        } else if l.starts_with('|') {
            let bars = marks(l, '|');
            if bars.len() == corners.len() {
                assert_eq!(bars, corners, "{l:?} in\n{text}");
            } else {
                let ends = [bars[0], bars[1], *bars.last().unwrap()];
                assert_eq!(ends, [corners[0], corners[1], *corners.last().unwrap()], "{l:?} in\n{text}");
            }
        }
    }
}

/// The kernel tree whose selftests' programs the corpus builds
/// (`scripts/setup.sh test` installs Debian's linux-source-6.12).
pub const LINUX_SOURCE: &str = "/usr/src/linux-source-6.12.tar.xz";

/// A copy of examples/corpus in `dir` (its spec files and maps) whose
/// build/ holds the kernel selftests' three programs, built by
/// `build.sh --linux` as the corpus README says, and nothing else: the
/// specs of Katran, xdp-tools and Cilium stand unbuilt whatever this
/// machine has built. Returns the copy's folder.
/// Adds the corpus's libbpf-tools specs to the copy `to` of the corpus.
pub fn copy_tool_specs(to: &std::path::Path) {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/corpus");
    for e in std::fs::read_dir(&corpus).unwrap() {
        let p = e.unwrap().path();
        if p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libbpf-tools-")) {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// bpfbench's corpus in `dir/examples/corpus` (its specs and maps, the
/// tools' left out), the kernel selftests' programs built by build.sh.
pub fn corpus_with_selftests(dir: &std::path::Path) -> PathBuf {
    corpus_built_with(dir, "")
}

/// [`corpus_with_selftests`], the selftests' programs built with `cflags`
/// added (build.sh's BPF_CFLAGS: `-mcpu=v2`).
pub fn corpus_built_with(dir: &std::path::Path, cflags: &str) -> PathBuf {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/corpus");
    let to = dir.join("examples/corpus");
    std::fs::create_dir_all(to.join("maps")).unwrap();
    for e in std::fs::read_dir(&corpus).unwrap().chain(std::fs::read_dir(corpus.join("maps")).unwrap()) {
        let p = e.unwrap().path();
        // The tools' specs run tools for minutes: copy_tool_specs adds them.
        let tool = p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libbpf-tools-"));
        if p.extension().is_some_and(|x| x == "toml" || x == "json") && !tool {
            std::fs::copy(&p, to.join(p.strip_prefix(&corpus).unwrap())).unwrap();
        }
    }
    assert!(
        std::path::Path::new(LINUX_SOURCE).exists(),
        "{LINUX_SOURCE} is missing: scripts/setup.sh test installs it (apt-get install linux-source-6.12)"
    );
    let build = Command::new(corpus.join("build.sh"))
        .args(["--linux", LINUX_SOURCE, "--out"])
        .arg(to.join("build"))
        .env("BPF_CFLAGS", cflags)
        .output()
        .unwrap();
    assert!(build.status.success(), "build.sh --linux: {}", String::from_utf8_lossy(&build.stderr));
    to
}
