//! `ab --sysctl`: one workload under two values of a kernel setting, and
//! the setting put back on success, on error, on SIGTERM, and after a
//! SIGKILL by the next run. Unlisted settings are refused in one line.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bpfbench::record::paired::PairedRecord;
use common::{assert_one_line_error, bpfbench, stderr, test_object};

const HARDEN: &str = "/proc/sys/net/core/bpf_jit_harden";
const STATE: &str = "/run/bpfbench/sysctl/net.core.bpf_jit_harden";

fn harden() -> String {
    std::fs::read_to_string(HARDEN).unwrap().trim().to_string()
}

/// Sets bpf_jit_harden for a test, and puts the machine's value back when
/// dropped, also when the test fails.
struct Harden(String);

impl Harden {
    fn set(value: &str) -> Harden {
        let original = harden();
        std::fs::write(HARDEN, value).unwrap();
        Harden(original)
    }
}

impl Drop for Harden {
    fn drop(&mut self) {
        let _ = std::fs::write(HARDEN, &self.0);
        let _ = std::fs::remove_file(STATE);
    }
}

const QUICK: [&str; 9] =
    ["--no-store", "--format", "json", "--max-time", "2", "--min-rounds", "2", "--pairs-per-round", "2"];

#[test]
fn the_setting_changes_per_side_and_comes_back_after_success_and_error() {
    let _machine = common::machine();
    let _restore = Harden::set("1");
    let mut args = vec!["ab", "--sysctl", "net.core.bpf_jit_harden=0,2", "--workload", "xdp-lb", "-s", "pass-non-ip"];
    args.extend(QUICK);
    let out = bpfbench(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let rec: PairedRecord = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((rec.a.as_str(), rec.b.as_str()), ("net.core.bpf_jit_harden=0", "net.core.bpf_jit_harden=2"));
    assert_eq!(rec.cases.len(), 1);
    assert!(rec.cases[0].ratio > 0.0, "{:?}", rec.cases[0]);
    assert_eq!(harden(), "1", "the original value comes back after success");
    assert!(!Path::new(STATE).exists(), "the recorded original is removed");

    // A program the verifier refuses: the setting was changed before the
    // load failed, and comes back all the same.
    let reject = test_object("xdp_reject.bpf.o").display().to_string();
    let mut args = vec!["ab", "--sysctl", "net.core.bpf_jit_harden=2,0", reject.as_str()];
    args.extend(QUICK);
    let out = bpfbench(&args);
    assert!(!out.status.success(), "a refused program fails the comparison");
    assert_eq!(harden(), "1", "the original value comes back after an error: {}", stderr(&out));
    assert!(!Path::new(STATE).exists());
}

/// Starts a long `ab --sysctl` and waits until it has changed the setting.
fn start_long_ab() -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["ab", "--sysctl", "net.core.bpf_jit_harden=0,2", "--workload", "xdp-lb", "-s", "pass-non-ip"])
        .args(["--no-store", "--format", "json", "--max-time", "60", "--min-rounds", "100000"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !(Path::new(STATE).exists() && harden() != "1") {
        assert!(started.elapsed() < Duration::from_secs(20), "ab never changed the setting");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn sigterm_puts_the_setting_back_and_a_run_meanwhile_leaves_it_alone() {
    let _machine = common::machine();
    let _restore = Harden::set("1");
    let child = start_long_ab();
    // Another run while the comparison goes on: the changed setting is
    // that comparison's, not a leftover to restore; a second comparison of
    // the same setting is refused.
    let changed = harden();
    let out = bpfbench(&["run", "-s", "pass-non-ip", "--no-store", "--samples", "3", "--batch-ms", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("restored"), "{}", stderr(&out));
    assert_ne!(harden(), "1", "still the comparison's value (was {changed})");
    assert_one_line_error(
        &["ab", "--sysctl", "net.core.bpf_jit_harden=0,1", "--workload", "xdp-lb", "-s", "pass-non-ip"],
        "is comparing values of net.core.bpf_jit_harden now",
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(harden(), "1");
    assert!(!Path::new(STATE).exists());
}

#[test]
fn a_killed_runs_setting_is_put_back_by_the_next_run() {
    let _machine = common::machine();
    let _restore = Harden::set("1");
    let mut child = start_long_ab();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(harden(), "1", "SIGKILL leaves the setting changed");
    let state = std::fs::read_to_string(STATE).unwrap();
    assert_eq!(state.split_whitespace().next(), Some("1"), "with the original recorded: {state}");
    let out = bpfbench(&["run", "-s", "pass-non-ip", "--no-store", "--samples", "3", "--batch-ms", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("restored net.core.bpf_jit_harden=1"), "{}", stderr(&out));
    assert_eq!(harden(), "1");
    assert!(!Path::new(STATE).exists());
}

#[test]
fn settings_outside_the_list_and_bad_values_are_refused_in_one_line() {
    let _machine = common::machine();
    let before = harden();
    assert_one_line_error(
        &["ab", "--sysctl", "kernel.panic=0,1", "--workload", "xdp-lb"],
        "kernel.panic: not a setting bpfbench changes; it changes net.core.bpf_jit_harden, net.core.bpf_jit_enable",
    );
    assert_one_line_error(
        &["ab", "--sysctl", "net.core.bpf_jit_harden=0,7", "--workload", "xdp-lb"],
        "'7' is not one of its values (0, 1, 2)",
    );
    assert_one_line_error(&["ab", "--sysctl", "net.core.bpf_jit_harden=0,2"], "--sysctl needs what to run");
    let obj = test_object("xdp_pass.bpf.o").display().to_string();
    assert_one_line_error(&["ab", "--sysctl", "net.core.bpf_jit_harden=0,2", &obj, &obj], "not A and B");
    assert_eq!(harden(), before, "a refused request changes nothing");
}
