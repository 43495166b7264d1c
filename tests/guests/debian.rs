//! bpfbench on the kernels users have, each booted as a guest (Debian 11's
//! 5.10, 12's 6.1, 13's 6.12; tests/common/guest.rs): xdp-lb's scenarios,
//! map operations (maps, lpm-trie, and the freeing of a trie, which needs
//! fentry the host refuses) and the encapsulation example validate and
//! produce figures in the mode the kernel allows, a mode it lacks is refused in one line, and so is
//! `gen` without live frames. Times in a TCG guest are an emulator's: these
//! tests check validation, modes and errors, never times.

use crate::common;

use std::time::Duration;

use common::guest::{self, GuestRun};

/// A guest that does not finish within this is killed and the test fails.
const BOUND: Duration = Duration::from_secs(900);

const QUICK: [&str; 7] = ["--no-store", "--samples", "3", "--batch-ms", "1", "--max-time", "2"];

fn args(words: &[&str]) -> Vec<String> {
    words.iter().chain(QUICK.iter()).map(|s| s.to_string()).collect()
}

/// The commands a guest of `suite` runs. Asking for may_goto is for the
/// kernels that lack it (its refusal); on trixie the "lb" run already
/// times in may_goto, and a second load of xdp-lb costs 9 s under TCG.
fn commands(suite: &str) -> Vec<(&'static str, Vec<String>)> {
    let encap = common::test_object("xdp_encap.bpf.o").display().to_string();
    let services = format!("services={}/examples/encap/services.json", env!("CARGO_MANIFEST_DIR"));
    let packet = "eth/ipv4(dst=10.0.0.10)/tcp(dport=80)/payload(32)";
    let mut commands = vec![
        ("features", vec!["features".to_string()]),
        (
            "lb",
            args(&[
                "run",
                "-s",
                "tcp-v4-lru-hit",
                "-s",
                "tcp-v4v6-lru-hit",
                "-s",
                "tcp-v4-ch-diverse",
                "-s",
                "tcp-v6-ch-diverse",
                "-s",
                "pass-non-ip",
                "--format",
                "json",
            ]),
        ),
        (
            "encap",
            args(&["run", &encap, "--map", &services, "--packet", packet, "--expect", "XDP_TX", "--format", "json"]),
        ),
        ("may_goto", args(&["run", "-s", "pass-non-ip", "--timing-mode", "may-goto"])),
        ("gen", vec!["gen".into(), "lo".into(), "--count".into(), "1".into()]),
        ("maps", args(&["run", "maps", "--map", "hash,lru_hash", "--op", "lookup,insert", "--format", "json"])),
        ("lpm", args(&["run", "lpm-trie", "--op", "lookup,update,delete", "--format", "json"])),
        // The host refuses fentry; the guests' kernels allow it.
        ("free", args(&["run", "lpm-trie", "--op", "free", "--format", "json"])),
    ];
    if suite == "trixie" {
        commands.retain(|(name, _)| *name != "may_goto");
    }
    commands
}

/// The run's scenarios validated, were timed, and used `mode`.
fn assert_validated_in(run: &GuestRun, name: &str, mode: &str) {
    assert_eq!(run.code(name), Some(0), "{}: {name}: {}", run.kernel_release, run.stderr(name));
    let record: serde_json::Value = serde_json::from_str(&run.stdout(name)).expect("a JSON run record");
    let results = record["results"].as_array().unwrap();
    assert!(!results.is_empty());
    for r in results {
        assert!(r["error"].is_null(), "{}: {} failed: {}", run.kernel_release, r["name"], r["error"]);
        assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{}: no figure", r["name"]);
        let got = r["timing"]["loop"].as_str().or(r["timing"]["mode"].as_str()).unwrap();
        assert_eq!(got, mode, "{}: {} timed with {got}", run.kernel_release, r["name"]);
    }
}

fn assert_one_line_error(run: &GuestRun, name: &str, needle: &str) {
    let err = run.stderr(name);
    assert_eq!(run.code(name), Some(1), "{}: {name}: {err}", run.kernel_release);
    assert!(err.contains(needle), "{}: {name}: {err}", run.kernel_release);
    assert_eq!(err.trim_end().lines().count(), 1, "{}: {name}: more than one line: {err}", run.kernel_release);
}

/// The encapsulation example validated and was timed inside BPF, in the
/// driver's best loop for the kernel: a bounded loop before may_goto (the
/// driver of your own objects has no bpf_loop variant), may_goto after.
fn assert_encap_validated(run: &GuestRun, mode: &str) {
    assert_validated_in(run, "encap", mode);
}

fn boot(suite: &str) -> Option<GuestRun> {
    let image = guest::kernel(suite)?;
    let commands = commands(suite);
    let run = guest::run(&image, suite, &commands, BOUND);
    let names: Vec<&str> = commands.iter().map(|(n, _)| *n).collect();
    eprintln!(
        "{suite} guest ({}) took {:.0} s; its commands: {}",
        run.kernel_release,
        run.elapsed.as_secs_f64(),
        run.command_seconds(&names)
    );
    Some(run)
}

#[test]
fn debian_11_linux_5_10_times_in_bounded_loops() {
    let _machine = common::machine_shared();
    let Some(run) = boot("bullseye") else { return };
    assert!(run.kernel_release.starts_with("5.10."), "{}", run.kernel_release);
    assert!(run.stdout("features").contains("(--timing-mode auto): bounded"), "{}", run.stdout("features"));
    assert_validated_in(&run, "lb", "bounded");
    assert_encap_validated(&run, "bounded");
    assert_one_line_error(&run, "may_goto", "this kernel lacks may_goto loops");
    assert_one_line_error(&run, "gen", "cannot send XDP live frames");
    assert_validated_in(&run, "maps", "bounded");
    assert_validated_in(&run, "lpm", "bounded");
    assert_validated_in(&run, "free", "traced");
}

#[test]
fn debian_12_linux_6_1_times_with_bpf_loop() {
    let _machine = common::machine_shared();
    let Some(run) = boot("bookworm") else { return };
    assert!(run.kernel_release.starts_with("6.1."), "{}", run.kernel_release);
    assert!(run.stdout("features").contains("(--timing-mode auto): bpf-loop"), "{}", run.stdout("features"));
    assert_validated_in(&run, "lb", "bpf-loop");
    assert_encap_validated(&run, "bounded");
    assert_one_line_error(&run, "may_goto", "this kernel lacks may_goto loops");
    assert_validated_in(&run, "maps", "bpf-loop");
    assert_validated_in(&run, "lpm", "bpf-loop");
    assert_validated_in(&run, "free", "traced");
}

#[test]
fn debian_13_linux_6_12_times_with_may_goto() {
    let _machine = common::machine_shared();
    let Some(run) = boot("trixie") else { return };
    assert!(run.kernel_release.starts_with("6.12."), "{}", run.kernel_release);
    assert_validated_in(&run, "lb", "may-goto");
    assert_encap_validated(&run, "may-goto");
    assert_validated_in(&run, "maps", "may-goto");
    assert_validated_in(&run, "lpm", "may-goto");
    assert_validated_in(&run, "free", "traced");
}
