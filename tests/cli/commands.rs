//! The `bpfbench` command as a user runs it: listing, bad input, JSON output,
//! privileges, the gate, and no BPF object left behind afterwards.

use crate::common;

use std::process::Command;

use bpfbench::history::History;
use common::leftovers::Snapshot;
use common::{bpfbench, run_of, stderr, stdout, temp_dir};

#[test]
fn list_shows_every_scenario_with_its_description() {
    let _machine = common::machine();
    let o = bpfbench(&["list", "xdp-lb"]);
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    for name in ["tcp-v4-lru-hit", "tcp-v4v6-lru-hit", "udp-v4-lru-diverse", "tcp-v4-lru-warmup", "drop-v6-frag"] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let scenario_lines = text.lines().filter(|l| l.starts_with("    ")).count();
    assert_eq!(scenario_lines, 24);
}

#[test]
fn unknown_names_get_one_line_naming_the_valid_ones() {
    let _machine = common::machine();
    for (args, needle, valid) in [
        (
            vec!["run", "--scenario", "tcp-v9"],
            "unknown scenario 'tcp-v9' for xdp-lb",
            "valid scenarios: tcp-v4-lru-hit, tcp-v4-ch,",
        ),
        (
            vec!["run", "--group", "nope"],
            "unknown group 'nope' for xdp-lb",
            "'Single-flow baseline', 'Diverse flows (4K src addrs)'",
        ),
        (vec!["run", "nope"], "unknown workload 'nope'", "valid workloads: xdp-lb, lpm-trie, maps"),
        (vec!["run", "--op", "lookup"], "--op applies to lpm-trie and maps, not to xdp-lb", ""),
        (vec!["run", "lpm-trie", "--map", "hash"], "runs on lpm_trie maps only", "bpfbench run maps --map"),
    ] {
        let o = bpfbench(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains(needle) && err.contains(valid), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: more than one line: {err}");
    }
}

#[test]
fn unprivileged_user_is_told_what_is_needed() {
    let _machine = common::machine();
    // setpriv (util-linux) drops to nobody with no capabilities.
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"])
        .arg(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["run", "--scenario", "tcp-v4-lru-hit", "--samples", "2"])
        .output()
        .expect("setpriv is part of util-linux");
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("needs root, or the capabilities CAP_BPF and CAP_NET_ADMIN"), "{err}");
}

#[test]
fn json_run_reports_validation_samples_and_baseline_then_leaves_nothing_loaded() {
    let _machine = common::machine();
    let dir = temp_dir("cli-json");
    let db = dir.join("h.sqlite");
    let db = db.to_str().unwrap();
    let before = Snapshot::take();
    let o = bpfbench(&[
        "run",
        "--scenario",
        "tcp-v4-lru-hit",
        "--scenario",
        "pass-non-ip",
        "--samples",
        "6",
        "--batch-ms",
        "2",
        "--format",
        "json",
        "--db",
        db,
        "--tag",
        "cli-test",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("stored as run 1"), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(doc["schema"], bpfbench::record::schema());
    let env = &doc["environment"];
    for field in ["kernel", "cpu_model", "git_commit", "clang_version", "host"] {
        assert!(!env[field].as_str().unwrap_or("").is_empty(), "environment.{field} missing: {env}");
    }
    // As the machine has it (distributions differ; some force the JIT on).
    let jit_enable: i64 = std::fs::read_to_string("/proc/sys/net/core/bpf_jit_enable").unwrap().trim().parse().unwrap();
    assert_eq!(env["jit"]["enable"], jit_enable, "{env}");
    assert!(env["loadavg"].as_array().unwrap().len() == 3);
    // The stored run reprints identically.
    let shown = bpfbench(&["show", "cli-test", "--db", db, "--format", "json"]);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&shown.stdout).unwrap(), doc);
    let results = doc["results"].as_array().unwrap();
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["validated"], true, "{r}");
        let p = &r["program"];
        assert!(p["tag"].as_str().unwrap().len() == 16 && p["jited_bytes"].as_u64().unwrap() > 0, "{p}");
        let m = &r["figure"];
        assert!(m["batch_iters"].as_u64().unwrap() >= 64);
        assert_eq!(m["samples_ns"].as_array().unwrap().len(), 6);
        assert_eq!(m["summary"]["n"], 6);
        assert!(m["summary"]["median"].as_f64().unwrap() > 0.0);
        assert!(m["overhead"]["summary"]["median"].as_f64().unwrap() > 0.0);
    }
    // The process has exited: what it loaded must be gone (tests/live/leftovers.rs
    // runs this check with bpffs mounted and unmounted).
    before.assert_nothing_left("bpfbench run");
}

#[test]
fn a_benchmarks_identity_holds_its_timing_mode_and_map_sizes() {
    let _machine = common::machine();
    let dir = temp_dir("cli-identity");
    let db = dir.join("h.sqlite");
    let db = db.to_str().unwrap();
    let quick = ["--samples", "3", "--batch-ms", "1", "--db", db];
    for extra in [&[][..], &["--timing-mode", "bpf-loop"][..]] {
        let mut args = vec!["run", "-s", "pass-non-ip"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&quick);
        let o = bpfbench(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // One scenario in two timing modes: both listed, each under its own name.
    let o = bpfbench(&["history", "--scenario", "pass-non-ip", "--db", db]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("xdp-lb/pass-non-ip@inline") && out.contains("xdp-lb/pass-non-ip@bpf-loop"), "{out}");
    common::assert_plain_aligned(&out);
    // Map runs of two key and value sizes are two benchmarks, not one series.
    for sizes in [["4", "8"], ["16", "64"]] {
        let mut args = vec!["run", "maps", "--map", "hash", "--op", "lookup", "--entries", "1000"];
        args.extend_from_slice(&["--key-size", sizes[0], "--value-size", sizes[1]]);
        args.extend_from_slice(&quick);
        let o = bpfbench(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let out = stdout(&bpfbench(&["history", "--scenario", "hash/lookup/1000", "--db", db]));
    for name in ["maps/hash/lookup/1000[key=4,value=8]", "maps/hash/lookup/1000[key=16,value=64]"] {
        assert!(out.contains(name), "{name} missing:\n{out}");
    }
    let changes = stdout(&bpfbench(&["changes", "--db", db]));
    assert!(changes.contains("[key=16,value=64]"), "{changes}");
}

#[test]
fn verbose_table_shows_calibration_and_histogram() {
    let _machine = common::machine();
    let o = bpfbench(&["run", "-s", "drop-v4-frag", "--samples", "8", "--batch-ms", "2", "-v", "--no-store"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for needle in [
        "Validation: PASS (XDP_DROP)",
        "Proportionality check: 2N/N ratio=",
        "Distribution (ns/op):",
        "| Early exits",
        "drop-v4-frag",
        "loop p50",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn random_keys_with_insert_are_refused_before_anything_loads() {
    let _machine = common::machine();
    let o = bpfbench(&["run", "lpm-trie", "--op", "insert", "--random"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("--random cannot be used with --op insert"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn lpm_trie_prints_the_selftests_line_shape_and_free_as_measured_or_na() {
    let _machine = common::machine();
    let o =
        bpfbench(&["run", "lpm-trie", "--op", "noop,lookup,free", "--samples", "5", "--batch-ms", "2", "--no-store"]);
    let out = stdout(&o);
    assert!(o.status.success(), "{}{}", out, stderr(&o));
    for op in ["noop", "lookup"] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{op}:")))
            .unwrap_or_else(|| panic!("no {op} line:\n{out}"));
        assert!(
            line.contains("throughput")
                && line.contains("M ops/s")
                && line.contains("ops/prod), latency")
                && line.contains(" ns/op  (n=5)"),
            "{line}"
        );
    }
    let free = out.lines().find(|l| l.trim_start().starts_with("free:")).expect("free line");
    assert!(free.contains("N/A (fentry") || free.contains("ms/op") || free.contains("us/op"), "{free}");
}

/// Stores a reference run tagged `tag` whose pass-non-ip median is `ns`.
fn store_reference(db: &str, tag: &str, ns: f64) {
    let mut r = run_of(&[("pass-non-ip", ns)]);
    r.tag = Some(tag.into());
    History::open(std::path::Path::new(db)).unwrap().store(&r).unwrap();
}

/// The gate's plumbing, decided by references far from any real figure: a
/// reference a thousand times slower than the machine can be is beaten; one
/// a thousand times faster fails the gate after every re-measurement.
#[test]
fn repeated_runs_are_stored_and_the_gate_decides_against_their_tag() {
    let _machine = common::machine();
    let dir = temp_dir("cli-gate");
    let db = dir.join("h.sqlite");
    let db = db.to_str().unwrap();
    // Called, as the stored references were timed.
    let quick = ["-s", "pass-non-ip", "--samples", "6", "--batch-ms", "1", "--body", "call", "--db", db];
    // An unknown reference tag is refused before anything is measured.
    let o = bpfbench(&[&["run", "--compare-to", "nope"][..], &quick].concat());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no stored run has tag 'nope'"), "{}", stderr(&o));
    // --repeat stores every round.
    let o = bpfbench(&[&["run", "--repeat", "3", "--tag", "base"][..], &quick].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stderr(&o).matches("stored as run").count(), 3, "{}", stderr(&o));
    assert_eq!(History::open(std::path::Path::new(db)).unwrap().runs_with_tag("base", 10).unwrap().len(), 3);

    store_reference(db, "slow-ref", 20_000.0);
    let o = bpfbench(
        &[&["run", "--compare-to", "slow-ref", "--fail-on-regression", "5", "--no-store"][..], &quick].concat(),
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("xdp-lb/pass-non-ip") && out.contains("tag slow-ref (1 run)") && out.contains("faster"),
        "{out}"
    );
    assert!(!stderr(&o).contains("re-measurement"), "nothing to confirm: {}", stderr(&o));

    store_reference(db, "fast-ref", 0.02);
    let o = bpfbench(
        &[
            &["run", "--compare-to", "fast-ref", "--fail-on-regression", "5", "--confirm", "2", "--no-store"][..],
            &quick,
        ]
        .concat(),
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("slower"), "{out}");
    assert_eq!(err.matches("bpfbench: re-measurement").count(), 2, "two confirmations: {err}");
    assert!(
        err.contains("regression: xdp-lb/pass-non-ip is") && err.contains("beyond --fail-on-regression 5%"),
        "{err}"
    );
}

/// The older whole-run mode (`--whole-runs`); the paired mode is tests/paired/ab.rs.
#[test]
fn ab_interleaves_two_builds_and_compares_their_runs() {
    let _machine = common::machine();
    let me = env!("CARGO_BIN_EXE_bpfbench");
    let o = bpfbench(&["ab", "/nonexistent", me]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent does not exist"), "{}", stderr(&o));
    let o = bpfbench(&["ab", "/", me]);
    assert!(stderr(&o).contains("/ is a folder and") && stderr(&o).contains("give two folders"), "{}", stderr(&o));
    let o = bpfbench(&["ab", me, me, "--", "--format", "csv"]);
    assert!(stderr(&o).contains("--format is set by 'bpfbench ab' itself"), "{}", stderr(&o));
    // The same build against itself, 4 rounds each: never slower beyond 50%.
    let o = bpfbench(&[
        "ab",
        me,
        me,
        "--whole-runs",
        "--rounds",
        "4",
        "--fail-on-regression",
        "50",
        "--",
        "-s",
        "pass-non-ip",
        "--samples",
        "6",
        "--batch-ms",
        "1",
    ]);
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("xdp-lb/pass-non-ip") && out.contains("4v4 runs") && out.contains("interleaved"), "{out}");
    assert_eq!(stderr(&o).matches("bpfbench ab: round").count(), 8, "{}", stderr(&o));
}

/// One `--format` for every command; a form a record does not have is
/// refused in one line before anything runs: each command here names a
/// target that does not exist, which any later step would refuse instead.
#[test]
fn a_form_a_record_lacks_is_refused_before_anything_runs() {
    let _machine = common::machine();
    let none = "/nonexistent/bpfbench.bpf.o";
    for (args, needle) in [
        (
            vec!["live", none, "--format", "gobench", "--no-store"],
            "--format gobench: a live run is written as table, json, csv",
        ),
        (
            vec!["gen", "bpfbench-none", "--count", "1", "--format", "bmf"],
            "--format bmf: a gen run is written as table, json, csv",
        ),
        (
            vec!["verifier", none, "--format", "gobench"],
            "--format gobench: a verifier report is written as table, json, csv",
        ),
        (
            vec!["ab", none, none, "--format", "gobench", "--no-store"],
            "a paired comparison is written as table, json, csv, bmf",
        ),
        (
            vec!["ab", none, none, "--metric", "insns", "--format", "bmf"],
            "a run-against-run comparison is written as table, json, csv, markdown",
        ),
        (
            vec!["compare", "1", "2", "--format", "gobench", "--db", "/nonexistent/h.sqlite"],
            "a run-against-run comparison is written as table, json, csv, markdown",
        ),
    ] {
        common::assert_one_line_error(&args, needle);
    }
}

/// The words of a shell command line (quotes and backslash-newlines only:
/// what the workflow example uses).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

#[test]
fn every_bpfbench_command_of_the_ci_workflow_examples_parses() {
    let _machine = common::machine();
    let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ci/");
    let yaml = ["bpf-bench.yml", "kernel-matrix.yml", "aya-bench.yml", "cilium-tests-bench.yml"]
        .map(|f| std::fs::read_to_string(format!("{folder}{f}")).unwrap())
        .join("\n");
    // Continuation lines joined, GitHub's expressions given a value.
    let mut text = yaml.replace("\\\n", " ");
    while let Some(start) = text.find("${{") {
        let end = text[start..].find("}}").map(|e| start + e + 2).unwrap();
        text.replace_range(start..end, "1");
    }
    let mut checked = 0;
    for line in text.lines() {
        let words = shell_words(line.split(" # ").next().unwrap());
        let Some(at) = words.iter().position(|w| w == "bpfbench") else { continue };
        let mut args: Vec<&str> = words[at + 1..].iter().map(String::as_str).collect();
        // Parsing stops at the first unknown option or bad value, before
        // --help (which goes before a `--`: after it, it is a run argument).
        let help_at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        args.insert(help_at, "--help");
        let o = bpfbench(&args);
        assert!(o.status.success(), "bpfbench {}: {}", args.join(" "), stderr(&o));
        checked += 1;
    }
    assert!(checked >= 7, "bpfbench commands missing from the workflows: {checked} found");
    // A misspelt option is caught the same way.
    assert!(!bpfbench(&["ab", "a.o", "b.o", "--fail-on-regresion", "2", "--help"]).status.success());
}

/// Messages that name the real problem: each of these once blamed
/// something else, or said nothing.
#[test]
fn messages_name_what_is_wrong() {
    let _machine = common::machine();
    let dir = temp_dir("cli-messages");
    // An empty BPFBENCH_DB (a CI secret that is not set) keeps the run in
    // the default history, not in a temporary database SQLite forgets.
    let o = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["run", "-s", "pass-non-ip", "--samples", "4", "--batch-ms", "1", "--sweeps", "1"])
        .env("BPFBENCH_DB", "")
        .env("XDG_DATA_HOME", &*dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let db = dir.join("bpfbench/history.sqlite");
    assert!(stderr(&o).contains(&format!("stored as run 1 in {}", db.display())), "{}", stderr(&o));
    assert_eq!(History::open(&db).unwrap().list(&[], 10).unwrap().len(), 1);

    // Reading commands on a history that is not there: what stores one,
    // and no empty database made where --db was mistyped.
    let missing = dir.join("typo.sqlite");
    let typo = missing.to_str().unwrap();
    for (args, by) in [
        (vec!["history", "--db", typo], "'bpfbench run' stores its runs"),
        (vec!["history", "--ab", "--db", typo], "'bpfbench ab' stores its comparisons"),
        (vec!["show", "--ab", "1", "--db", typo], "'bpfbench ab' stores its comparisons"),
        (vec!["history", "--live", "--db", typo], "'bpfbench live' stores its runs"),
        (vec!["show", "--live", "1", "--db", typo], "'bpfbench live' stores its runs"),
    ] {
        common::assert_one_line_error(&args, "no history yet at");
        assert!(stderr(&bpfbench(&args)).contains(by), "{args:?}");
        assert!(!missing.exists(), "{args:?} made {typo}");
    }

    // A tag whose runs the selection leaves out is not "not a tag".
    let db = dir.join("h.sqlite");
    let dbs = db.to_str().unwrap();
    store_reference(dbs, "main", 50.0);
    store_reference(dbs, "main", 51.0);
    store_reference(dbs, "pr", 52.0);
    let o = bpfbench(&["compare", "main", "pr", "--kernel", "5.4", "--db", dbs]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("tag 'main' has runs in") && stderr(&o).contains("but none with kernel 5.4"),
        "{}",
        stderr(&o)
    );
    // One of the tag's own runs against the tag: said.
    let o = bpfbench(&["compare", "main", "2", "--db", dbs]);
    assert!(stderr(&o).contains("share 1 run"), "{}", stderr(&o));

    // A file that cannot be written names the file asked for and why.
    let o = bpfbench(&["report", "-o", "/nonexistent-bpfbench/x.html", "--db", dbs]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("the folder /nonexistent-bpfbench does not exist"), "{}", stderr(&o));
    assert!(!stderr(&o).contains(".partial"), "{}", stderr(&o));

    // Numbers out of range are the numbers' fault, not the shell's.
    for (value, needle) in [("-1", "must be a positive number, got '-1'"), ("1e9", "must be at most 1000")] {
        let o = bpfbench(&["run", "--batch-ms", value]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(needle) && !stderr(&o).contains("-- -1"), "{}", stderr(&o));
    }
}

/// A busy loop on one CPU, killed when dropped (also when a test fails).
struct Hog(std::process::Child);

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A run that shares its CPU with another task says so; the same run on
/// the idle CPU does not.
#[test]
fn a_run_sharing_its_cpu_with_a_busy_task_is_warned_of() {
    let _machine = common::machine();
    let cpu = bpfbench::system::cpu::default_cpu().unwrap().to_string();
    let args = ["run", "-g", "TCP flags", "--samples", "60", "--no-store", "--cpu", &cpu];
    let idle = bpfbench(&[&args[..], &["--format", "json"]].concat());
    assert!(idle.status.success(), "{}", stderr(&idle));
    let doc: serde_json::Value = serde_json::from_slice(&idle.stdout).unwrap();
    let others = doc["environment"]["others_percent"].as_f64();
    assert!(others.is_some_and(|p| p < 10.0), "nothing else runs during the tests: {}", doc["environment"]);
    let hog = Hog(Command::new("taskset").args(["-c", &cpu, "sh", "-c", "while :; do :; done"]).spawn().unwrap());
    let shared = bpfbench(&args);
    drop(hog);
    assert!(shared.status.success(), "{}", stderr(&shared));
    let text = stdout(&shared);
    assert!(text.contains(&format!("% of CPU {cpu}'s time during the run")), "{text}");
}
