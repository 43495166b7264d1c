//! `bpfbench vm`: runs on guest kernels come home, are stored with their
//! kernels and marked as an emulator's times, and make a matrix; a guest
//! that does not boot or does not finish is stopped within its bound with
//! one line naming the kernel (one that dies is booted once more, and its
//! kernel's words given); no QEMU is left, also after Ctrl-C, and a
//! SIGKILLed vm's guest is removed by the next one.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bpfbench::record::matrix::MatrixRecord;
use common::{bpfbench, guest, stderr, stdout, temp_dir};

const QUICK: [&str; 9] = ["--", "-s", "pass-non-ip", "--samples", "3", "--batch-ms", "1", "--max-time", "2"];

/// QEMU processes whose command line names `needle`.
fn qemus(needle: &str) -> Vec<String> {
    let out = Command::new("pgrep").args(["-f", &format!("qemu-system.*{needle}")]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().map(str::to_string).collect()
}

/// Runs bpfbench with `args`; its pid names its guests
/// (`bpfbench-guest-PID-KERNEL`), which tells them from other tests'.
fn bpfbench_pid(args: &[&str]) -> (u32, std::process::Output) {
    let child = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    (pid, child.wait_with_output().unwrap())
}

/// QEMUs bpfbench `pid` left.
fn left_by(pid: u32) -> Vec<String> {
    qemus(&format!("bpfbench-guest-{pid}-"))
}

/// Waits until the QEMU of bpfbench `pid`'s guest of trixie runs (not the
/// short-lived one that tries KVM first).
fn wait_for_guest(pid: u32) {
    let started = Instant::now();
    while qemus(&format!("bpfbench-guest-{pid}-trixie")).is_empty() {
        assert!(started.elapsed() < Duration::from_secs(60), "no guest started");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_matrix_of_a_guest_kernel_and_the_host_is_stored_with_their_kernels_and_rendered() {
    let _machine = common::machine_shared();
    let Some(_) = guest::kernel("bullseye") else { return };
    let dir = temp_dir("vm-matrix");
    let db = dir.join("history.db").display().to_string();
    // A guest and the host: one column emulated, one not (a may_goto
    // guest's runs are tests/guests/debian.rs's; a boot saved).
    let mut args = vec!["vm", "--kernel", "bullseye", "--kernel", "host", "--db", &db, "--format", "json"];
    args.extend(QUICK);
    let out = bpfbench(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let m: MatrixRecord = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(m.columns.len(), 2);
    let mut ids = Vec::new();
    let host = bpfbench::system::kernel_release();
    for (c, release, mode) in [(&m.columns[0], "5.10.", "bounded"), (&m.columns[1], host.as_str(), "may-goto")] {
        let run = c.run.as_ref().unwrap_or_else(|| panic!("{}: {:?}", c.kernel, c.error));
        assert!(run.environment.kernel.starts_with(release), "{}", run.environment.kernel);
        match &run.environment.guest {
            Some(g) => {
                assert!(g.image.ends_with("vmlinuz") && !g.cmdline.is_empty(), "{g:?}");
                assert!(matches!(g.accelerator.as_str(), "kvm" | "tcg"), "{g:?}");
            }
            None => assert_eq!(c.kernel, "host", "only the host's run is no guest's"),
        }
        assert_eq!(run.results.len(), 1);
        assert_eq!(run.results[0].timing.mode_name(), mode);
        assert!(run.results[0].measurement().is_some(), "{:?}", run.results[0].error);
        ids.push(c.stored_as.expect("stored").to_string());
    }
    // The table: a column per kernel, the emulated ones marked, the
    // programs each kernel made.
    let table = bpfbench::report::render_as(&m, bpfbench::report::Format::Table).unwrap();
    for needle in ["xdp-lb/pass-non-ip", " bounded", " may-goto", "xdp-lb: xdp_lb_bounded", "xdp-lb: xdp_lb "] {
        assert!(table.contains(needle), "{needle}:\n{table}");
    }
    let samples = format!("samples per figure: {} 3, {} 3", m.columns[0].heading(), m.columns[1].heading());
    assert!(table.contains(&samples), "{samples}:\n{table}");
    if m.columns[0].run.as_ref().unwrap().environment.emulated() {
        assert!(table.contains("5.10.0-32-amd64*") && table.contains("the emulator's"), "{table}");
    }
    // The history lists both with their kernels; each shows and compares
    // with its emulation named.
    let listed = stdout(&bpfbench(&["history", "--db", &db]));
    assert!(listed.contains("5.10.") && listed.contains(&host), "{listed}");
    let shown = bpfbench(&["show", &ids[0], "--db", &db]);
    let emulated = m.columns[0].run.as_ref().unwrap().environment.emulated();
    assert_eq!(stdout(&shown).contains("EMULATED"), emulated, "{}", stdout(&shown));
    let compared = stdout(&bpfbench(&["compare", &ids[0], &ids[1], "--db", &db]));
    assert!(compared.contains("timing mode of xdp-lb/pass-non-ip: bounded -> may-goto"), "{compared}");
    if emulated {
        assert!(compared.contains("A's times are an emulator's"), "{compared}");
    }
    assert!(!m.columns[1].run.as_ref().unwrap().environment.emulated(), "the host's times are the hardware's");
    // The CSV form of the same matrix (`vm --format csv` renders this record).
    let csv = bpfbench::report::render_as(&m, bpfbench::report::Format::Csv).unwrap();
    assert!(csv.starts_with("kernel,release,emulated,benchmark,mode,status,median_ns"), "{csv}");
    assert!(
        csv.contains(",xdp-lb/pass-non-ip,bounded,ok,") && csv.contains(",xdp-lb/pass-non-ip,may-goto,ok,"),
        "{csv}"
    );
}

#[test]
fn a_guest_that_does_not_boot_or_finish_is_stopped_with_one_line_naming_its_kernel() {
    let _machine = common::machine_shared();
    let Some(_) = guest::kernel("trixie") else { return };
    // Not a kernel: refused before any guest boots, in one line naming it
    // (QEMU's own refusal came padded with the console's NUL bytes).
    let dir = temp_dir("vm-junk");
    let junk = dir.join("vmlinuz");
    std::fs::write(&junk, b"not a kernel").unwrap();
    let junk = junk.display().to_string();
    let out = bpfbench(&["vm", "--kernel", &junk, "--no-store", "--timeout", "60", "--", "-s", "pass-non-ip"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(&junk) && err.contains("not a kernel image"), "{err}");
    assert!(!err.contains('\0') && !err.contains("     "), "{err:?}");

    // A run longer than the bound: killed at the bound, nothing left.
    let started = Instant::now();
    let (pid, out) = bpfbench_pid(&[
        "vm",
        "--kernel",
        "trixie",
        "--no-store",
        "--timeout",
        "10",
        "--",
        "-s",
        "pass-non-ip",
        "--samples",
        "100000",
    ]);
    assert!(started.elapsed() < Duration::from_secs(40), "stopped within the bound: {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("bpfbench: error:")).collect();
    assert_eq!(errors.len(), 1, "{}", stderr(&out));
    assert!(errors[0].contains("trixie: the guest did not finish within 10 s and was killed"), "{}", errors[0]);
    assert!(left_by(pid).is_empty(), "a QEMU is left");

    // A kernel that panics while booting never ran the script: booted
    // once more, then refused with the kernel's words, not a stack trace's
    // last lines. Asked to, it keeps both guests' folders, with the console
    // and QEMU's log of CPU resets. The panic is a missing root: an rdinit
    // that does not exist leaves the kernel without virtme's initramfs and
    // with no root= to mount. Too little memory (mem=40M, then mem=16M
    // nokaslr) panicked here in seconds but hung CI's guests in early boot
    // until the bound, twice; the bound keeps any hang from costing more.
    let out = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args([
            "vm",
            "--kernel",
            "trixie",
            "--append",
            "rdinit=/bpfbench-no-such-init",
            "--timeout",
            "180",
            "--no-store",
            "--",
            "-s",
            "pass-non-ip",
        ])
        .env("BPFBENCH_KEEP_GUEST_FOLDERS", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    let again: Vec<&str> = err.lines().filter(|l| l.ends_with("booting it again")).collect();
    assert_eq!(again.len(), 1, "booted twice: {err}");
    assert!(again[0].contains("the guest died before running bpfbench (the guest kernel said: Kernel panic"), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("bpfbench: error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(
        errors[0].contains(
            "trixie: the guest did not run bpfbench; the guest kernel said: Kernel panic - not syncing: VFS: Unable to mount root fs"
        ),
        "{}",
        errors[0]
    );
    let kept: Vec<&str> = err.lines().filter_map(|l| l.strip_prefix("bpfbench: kept the guest's folder ")).collect();
    assert_eq!(kept.len(), 2, "{err}");
    for folder in kept {
        let folder = std::path::Path::new(folder);
        let console = std::fs::read_to_string(folder.join("console.log")).unwrap();
        assert!(console.contains("Kernel panic"), "{console}");
        let resets = std::fs::read_to_string(folder.join("qemu.log")).unwrap();
        assert!(resets.contains("CPU Reset"), "{resets}");
        std::fs::remove_dir_all(folder).unwrap();
    }
}

/// A QEMU that crashes (here: SIGSEGV, twice) leaves a guest that never
/// powered off: booted once more, then refused saying so; no QEMU left.
#[test]
fn a_guest_whose_qemu_crashes_is_booted_once_more() {
    let _machine = common::machine_shared();
    let Some(_) = guest::kernel("trixie") else { return };
    let child = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args([&["vm", "--kernel", "trixie", "--no-store"][..], &QUICK].concat())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut crashed = Vec::new();
    for _ in 0..2 {
        let started = Instant::now();
        let qemu = loop {
            let now = qemus(&format!("bpfbench-guest-{pid}-trixie"));
            if let Some(q) = now.into_iter().find(|q| !crashed.contains(q)) {
                break q;
            }
            assert!(started.elapsed() < Duration::from_secs(60), "no guest started");
            std::thread::sleep(Duration::from_millis(100));
        };
        // SAFETY: signalling the QEMU of our own child's guest.
        unsafe { libc::kill(qemu.parse().unwrap(), libc::SIGSEGV) };
        crashed.push(qemu);
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    let again: Vec<&str> = err.lines().filter(|l| l.ends_with("booting it again")).collect();
    assert_eq!(again.len(), 1, "booted twice: {err}");
    assert!(again[0].contains("it never powered off and logged no panic, oops or triple fault"), "{err}");
    let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("bpfbench: error:")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert!(errors[0].contains("trixie: the guest did not run bpfbench; it never powered off"), "{}", errors[0]);
    assert!(left_by(pid).is_empty(), "a QEMU is left");
}

#[test]
fn ctrl_c_stops_the_guest_and_a_killed_vms_guest_is_removed_by_the_next() {
    let _machine = common::machine_shared();
    let Some(_) = guest::kernel("trixie") else { return };
    let long = ["vm", "--kernel", "trixie", "--no-store", "--", "-s", "pass-non-ip", "--samples", "100000"];
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_bpfbench"))
            .args(long)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let child = spawn();
    wait_for_guest(child.id());
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(left_by(pid).is_empty(), "Ctrl-C left a QEMU");

    let mut child = spawn();
    let pid = child.id();
    wait_for_guest(pid);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!qemus(&format!("bpfbench-guest-{pid}-trixie")).is_empty(), "SIGKILL leaves the guest running");
    let out = bpfbench(&[&["vm", "--kernel", "host", "--no-store"][..], &QUICK].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("bpfbench (pid {pid}) was killed")), "{}", stderr(&out));
    std::thread::sleep(Duration::from_millis(500));
    assert!(qemus(&format!("bpfbench-guest-{pid}-")).is_empty(), "the next vm removed it");
    let folders = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|d| d.file_name().to_string_lossy().starts_with(&format!("bpfbench-guest-{pid}-")))
        .count();
    assert_eq!(folders, 0, "and its folder");
}

/// `ab --kernel X --kernel X`: two guests of one kernel, a worker in each
/// over a virtio-serial port, are never slower or faster than each other
/// beyond 10 % (emulated time on a host whose two CPUs run at different
/// speeds: the default 1 % called one "slower" in a full-suite run);
/// the record names both guests and their emulation. A kernel that does
/// not boot is one line naming it, and no QEMU is left. The workers run a
/// small object of the tests' own: each round loads it afresh in both
/// guests, where xdp-lb's load took ~9 s under TCG (63 s -> 50 s).
#[test]
fn paired_ab_of_one_kernel_twice_is_never_slower_or_faster() {
    let _machine = common::machine();
    let Some(_) = guest::kernel("trixie") else { return };
    let object = common::test_object("xdp_swap.bpf.o").display().to_string();
    let (pid, out) = bpfbench_pid(&[
        "ab",
        "--kernel",
        "trixie",
        "--kernel",
        "trixie",
        "--no-store",
        "--format",
        "json",
        "--max-time",
        "3",
        "--threshold",
        "10",
        "--",
        &object,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let rec: bpfbench::record::paired::PairedRecord = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec.guests.len(), 2, "{:?}", rec.guests);
    assert!(rec.guests.iter().all(|g| g.image.ends_with("vmlinuz") && !g.cmdline.is_empty()), "{:?}", rec.guests);
    assert_eq!(rec.cases.len(), 1);
    let verdict = rec.cases[0].verdict.as_str();
    assert!(
        verdict == "same" || verdict.starts_with("uncertain"),
        "one kernel against itself: {verdict}, B/A {:.3} {:?}",
        rec.cases[0].ratio,
        rec.cases[0].ratio_ci95
    );
    assert!(rec.cases[0].round_ratios.len() >= 2, "{:?}", rec.cases[0]);
    assert!(left_by(pid).is_empty(), "a QEMU is left");

    let dir = temp_dir("ab-junk");
    let junk = dir.join("vmlinuz");
    std::fs::write(&junk, b"not a kernel").unwrap();
    let junk = junk.display().to_string();
    let (pid, out) =
        bpfbench_pid(&["ab", "--kernel", &junk, "--kernel", "trixie", "--no-store", "--", "-s", "pass-non-ip"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(&junk) && err.contains("not a kernel image"), "{err}");
    assert!(left_by(pid).is_empty(), "a QEMU is left");
    common::assert_one_line_error(
        &["ab", "--kernel", "trixie", "--", "-s", "pass-non-ip"],
        "--kernel takes two kernels",
    );
}

#[test]
fn shards_store_their_kernels_into_one_postgresql_history_and_from_history_makes_the_matrix() {
    let _machine = common::machine_shared();
    let Some(_) = guest::kernel("bullseye") else { return };
    // Two CI jobs' shares of one matrix, storing into one PostgreSQL
    // history under one tag; a third job assembles the matrix.
    let pg = common::pg_server::Postgres::start();
    let db = pg.database("shards");
    for (shard, kernel) in [("1/2", "host"), ("2/2", "bullseye")] {
        let mut args =
            vec!["vm", "--kernel", "host", "--kernel", "bullseye", "--shard", shard, "--db", &db, "--tag", "ci-1"];
        args.extend(QUICK);
        // The kernels are dealt in turn: the first shard gets the first.
        let out = bpfbench(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stderr(&out).contains(&format!("shard {shard}: {kernel}")), "{}", stderr(&out));
    }
    let out = bpfbench(&["vm", "--from-history", "--tag", "ci-1", "--db", &db, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let m: MatrixRecord = serde_json::from_slice(&out.stdout).unwrap();
    // One column per kernel, the older release first, each with its run.
    assert_eq!(m.columns.len(), 2, "{m:?}");
    let runs: Vec<_> = m.columns.iter().map(|c| c.run.as_ref().expect("a stored run")).collect();
    assert!(runs[0].environment.kernel.starts_with("5.10."), "{}", runs[0].environment.kernel);
    assert_eq!(runs[1].environment.kernel, bpfbench::system::kernel_release());
    for run in runs {
        assert!(run.results.iter().any(|r| r.name == "pass-non-ip" && !r.failed()), "{run:?}");
    }
    let table = stdout(&bpfbench(&["vm", "--from-history", "--tag", "ci-1", "--db", &db]));
    assert!(table.contains("5.10.") && table.contains("(host)") && table.contains("pass-non-ip"), "{table}");
    common::assert_one_line_error(
        &["vm", "--from-history", "--tag", "ci-2", "--db", &db],
        "has tag 'ci-2': store the shards' runs with 'bpfbench vm --tag ci-2'",
    );
    common::assert_one_line_error(
        &["vm", "--kernel", "host", "--shard", "2/2", "--no-store"],
        "shard 2/2 gets no kernel",
    );
    // A malformed shard is a usage error, as clap reports them (exit 2).
    let bad = bpfbench(&["vm", "--kernel", "host", "--shard", "3/2"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("'3/2' is not a shard: give I/N, 1 <= I <= N"), "{}", stderr(&bad));
}
