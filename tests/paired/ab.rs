//! The paired A/B against the real kernel: a clearly slowed object is
//! called slower and a copy is not; different outputs are refused with
//! the place named; built-in workloads take other builds of their object;
//! two executables take turns through workers; a stored comparison comes
//! back as it was printed; a time cap never ends a case before its
//! second round, and a case it ends before the fourth gets no verdict.
//! Statistical checks use generous margins.

use crate::common;

use std::path::PathBuf;

use bpfbench::record::paired::PairedRecord;
use bpfbench::stats::two_sample::Verdict;
use common::{bpfbench, object, stderr, stdout, temp_dir};

/// An object build.rs compiled for a built-in workload.
fn builtin_object(name: &str) -> PathBuf {
    PathBuf::from(concat!(env!("OUT_DIR"))).join(format!("{name}.bpf.o"))
}

/// Copies `from` to a file of its own in `dir` (a second, identical build).
fn copy(from: &str, dir: &std::path::Path, name: &str) -> String {
    let to = dir.join(name);
    std::fs::copy(from, &to).unwrap();
    to.to_string_lossy().into_owned()
}

/// `bpfbench ab ARGS --no-store --format json` with short cases: (exit code, record, stderr).
fn ab(args: &[&str]) -> (Option<i32>, Option<PairedRecord>, String) {
    let mut all = vec!["ab", "--no-store", "--format", "json", "--max-time", "3"];
    all.extend_from_slice(args);
    let o = bpfbench(&all);
    (o.status.code(), serde_json::from_slice(&o.stdout).ok(), stderr(&o))
}

#[test]
fn a_clearly_slowed_object_is_slower_and_an_identical_copy_is_not() {
    let _machine = common::machine();
    let dir = temp_dir("ab-objects");
    let a = object("xdp_swap.bpf.o");
    let (code, rec, err) = ab(&[&a, &object("xdp_swap_slow.bpf.o")]);
    assert_eq!(code, Some(0), "{err}");
    let c = &rec.unwrap().cases[0];
    assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
    assert!(c.ratio > 1.2 && c.ratio_ci95.0 > 1.1, "{c:?}");
    assert!(c.ratios.len() >= 100 && c.median_b > c.median_a, "{c:?}");
    // The rounds' spread beside the pairs': the lowest and highest round
    // hold the ratio between them, and both spreads are fractions.
    let s = c.spread.expect("the spread is recorded");
    assert!(s.low <= c.ratio && c.ratio <= s.high, "{s:?}");
    assert!((0.0..0.5).contains(&s.between) && (0.0..0.5).contains(&s.within), "{s:?}");
    let o = bpfbench(&["ab", "--no-store", &a, &object("xdp_swap_slow.bpf.o")]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("xdp_swap/xdp_swap@inline: JIT placement: rounds "), "{text}");
    assert!(text.contains("20% trimmed mean of the rounds' median ratios"), "{text}");

    // The same code loaded twice: no confident verdict at a 5% threshold.
    let same = copy(&a, &dir, "xdp_swap_copy.bpf.o");
    let (code, rec, err) = ab(&[&a, &same, "--threshold", "5"]);
    assert_eq!(code, Some(0), "{err}");
    let c = &rec.unwrap().cases[0];
    assert!(matches!(c.verdict, Verdict::Same | Verdict::Uncertain), "{c:?}");
    assert!((c.ratio - 1.0).abs() < 0.05, "{c:?}");
}

#[test]
fn two_builds_of_a_tracing_object_compare_on_its_hook() {
    let _machine = common::machine();
    let dir = temp_dir("ab-attached");
    let a = object("tp_getppid.bpf.o");
    // The same count with a 200-round mix after it: slower per run, by
    // bpf_stats (the slowdown's phases left out: ab compares ns per run).
    let (code, rec, err) = ab(&["--no-slowdown", &a, &object("tp_getppid_slow.bpf.o")]);
    assert_eq!(code, Some(0), "{err}");
    let c = &rec.unwrap().cases[0];
    assert_eq!((c.workload.as_str(), c.name.as_str()), ("tp_getppid", "count_getppid"), "{c:?}");
    assert!(matches!(c.timing, bpfbench::record::Timing::BpfStats { .. }), "{c:?}");
    assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
    assert!(c.ratio > 1.2 && c.median_b > c.median_a, "{c:?}");
    // A second build of the same object: no confident verdict at 5 %.
    let same = copy(&a, &dir, "tp_getppid_copy.bpf.o");
    let (code, rec, err) = ab(&["--no-slowdown", &a, &same, "--threshold", "5"]);
    assert_eq!(code, Some(0), "{err}");
    let c = &rec.unwrap().cases[0];
    assert!(matches!(c.verdict, Verdict::Same | Verdict::Uncertain), "{c:?}");
}

#[test]
fn a_time_cap_shorter_than_two_rounds_still_takes_two() {
    let _machine = common::machine();
    // An interval needs two rounds; a cap that ends before the second (slow
    // guests under emulation did) must not end the case without a result.
    // And two rounds are too few for a verdict, even of a build 3.5 times
    // slower: two loads may have landed alike.
    let (a, b) = (object("xdp_swap.bpf.o"), object("xdp_swap_slow.bpf.o"));
    let o = bpfbench(&["ab", "--no-store", "--format", "json", "--max-time", "0.001", &a, &b]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rec: PairedRecord = serde_json::from_slice(&o.stdout).unwrap();
    let c = &rec.cases[0];
    assert_eq!((c.stop.as_str(), c.round_ratios.len()), ("time cap", 2), "{c:?}");
    assert!(c.ratio > 1.5 && c.ratio_ci95.0 > 1.01, "{c:?}");
    assert_eq!(c.verdict, Verdict::Uncertain, "{c:?}");
    let table = stdout(&bpfbench(&["ab", "--no-store", "--max-time", "0.001", &a, &b]));
    assert!(table.contains("1 case(s) ended with fewer than 4 rounds"), "{table}");
}

#[test]
fn the_gate_fails_a_regression_beyond_its_limit_only() {
    let _machine = common::machine();
    let (a, b) = (object("xdp_swap.bpf.o"), object("xdp_swap_slow.bpf.o"));
    let (code, _, err) = ab(&[&a, &b, "--fail-on-regression", "5"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("regression: xdp_swap/xdp_swap@inline is +") && err.contains("over the 5.0% limit"), "{err}");
    // B faster than A is no regression.
    let (code, _, err) = ab(&[&b, &a, "--fail-on-regression", "5"]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn different_outputs_are_refused_with_the_place_named() {
    let _machine = common::machine();
    let (swap, pass) = (object("xdp_swap.bpf.o"), object("xdp_pass.bpf.o"));
    // Program names differ, so the case is named explicitly for both.
    let o = bpfbench(&["ab", &swap, &pass, "--no-store"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("B (") && err.contains("has no case 'xdp_swap'"), "{err}");
    let dir = temp_dir("ab-differ");
    let spec = |obj: &str, prog: &str| {
        let path = dir.join(format!("{prog}.toml"));
        std::fs::write(&path, format!("object = \"{obj}\"\nprogram = \"{prog}\"\n[[case]]\nname = \"ping\"\npacket = \"eth/ipv4/udp/payload(8)\"\n")).unwrap();
        path.to_string_lossy().into_owned()
    };
    let (code, _, err) = ab(&[&spec(&swap, "xdp_swap"), &spec(&pass, "xdp_pass")]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("ping: A and B do not do the same: verdict: A XDP_TX, B XDP_PASS")
            && err.contains("--allow-different-output"),
        "{err}"
    );
}

#[test]
fn built_in_workloads_compare_two_builds_of_their_object() {
    let _machine = common::machine();
    let dir = temp_dir("ab-builtin");
    let lb = builtin_object("xdp_lb").to_string_lossy().into_owned();
    let lb2 = copy(&lb, &dir, "xdp_lb_copy.bpf.o");
    let (code, rec, err) =
        ab(&["--workload", "xdp-lb", &lb, &lb2, "-s", "tcp-v4-lru-hit", "-s", "tcp-v6-ch", "--threshold", "5"]);
    assert_eq!(code, Some(0), "{err}");
    let rec = rec.unwrap();
    assert_eq!(rec.cases.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["tcp-v4-lru-hit", "tcp-v6-ch"]);
    assert!(
        rec.cases.iter().all(|c| c.workload == "xdp-lb" && matches!(c.verdict, Verdict::Same | Verdict::Uncertain)),
        "{rec:?}"
    );
    // Each case names the mode both builds were timed in (the best this kernel has).
    let best = bpfbench::kernel::features::probe().unwrap().best_loop().unwrap();
    assert!(rec.cases.iter().all(|c| c.timing.construct() == Some(best)), "{rec:?}");

    let ops = builtin_object("map_ops").to_string_lossy().into_owned();
    let ops2 = copy(&ops, &dir, "map_ops_copy.bpf.o");
    let (code, rec, err) = ab(&[
        "--workload",
        "maps",
        &ops,
        &ops2,
        "--map",
        "hash",
        "--op",
        "lookup",
        "--entries",
        "1000",
        "--threshold",
        "5",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(rec.unwrap().cases[0].name, "hash/lookup/1000");

    // Another program's object is refused by name before anything is timed.
    let swap = object("xdp_swap.bpf.o");
    let (code, _, err) = ab(&["--workload", "xdp-lb", &swap, &swap]);
    assert_eq!(code, Some(1));
    assert!(err.contains("has no program 'xdp_lb'") && err.contains("built from this bpfbench's source"), "{err}");
    let (code, _, err) = ab(&["--workload", "nonesuch", &swap, &swap]);
    assert_eq!(code, Some(1));
    assert!(err.contains("unknown workload 'nonesuch'"), "{err}");
}

#[test]
fn two_executables_take_turns_through_workers() {
    let _machine = common::machine();
    let exe = env!("CARGO_BIN_EXE_bpfbench");
    let (code, rec, err) = ab(&[exe, exe, "--threshold", "5", "--", "-s", "tcp-v4-lru-hit"]);
    assert_eq!(code, Some(0), "{err}");
    let c = &rec.unwrap().cases[0];
    assert_eq!((c.workload.as_str(), c.name.as_str()), ("xdp-lb", "tcp-v4-lru-hit"));
    assert!(matches!(c.verdict, Verdict::Same | Verdict::Uncertain) && c.ratios.len() >= 100, "{c:?}");
    // A file that is no bpfbench cannot serve.
    let o = bpfbench(&["ab", "/bin/true", exe, "--no-store"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/bin/true did not start as a paired-comparison worker"), "{}", stderr(&o));
    // A BPF object and an executable are not two builds of one thing.
    let o = bpfbench(&["ab", &object("xdp_swap.bpf.o"), exe, "--no-store"]);
    assert!(stderr(&o).contains("A and B must be of one kind"), "{}", stderr(&o));
}

#[test]
fn a_stored_comparison_comes_back_as_printed() {
    let _machine = common::machine();
    let dir = temp_dir("ab-store");
    let db = dir.join("h.sqlite").to_string_lossy().into_owned();
    let (a, b) = (object("xdp_swap.bpf.o"), object("xdp_swap_slow.bpf.o"));
    let o = bpfbench(&["ab", &a, &b, "--db", &db, "--tag", "pr-7", "--format", "json", "--max-time", "2"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("stored as paired comparison 1"), "{}", stderr(&o));
    let printed: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let shown = bpfbench(&["show", "--ab", "1", "--db", &db, "--format", "json"]);
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&shown.stdout).unwrap(), printed);
    let listed = stdout(&bpfbench(&["history", "--ab", "--db", &db]));
    assert!(
        listed.contains("pr-7") && listed.contains("xdp_swap_slow.bpf.o") && listed.contains("1 slower"),
        "{listed}"
    );
    let table = stdout(&bpfbench(&["show", "--ab", "1", "--db", &db]));
    assert!(table.contains("rests on") && table.contains(" pairs, "), "{table}");
    // As a pull request's Markdown table: a header, its separator, and a
    // row per case with every column, the verdict among them.
    let md = stdout(&bpfbench(&["show", "--ab", "1", "--db", &db, "--format", "markdown"]));
    let rows = common::markdown_rows(&md);
    assert_eq!(
        rows[0],
        [
            "benchmark",
            "A ns/op",
            "B ns/op",
            "B/A",
            "95 % CI",
            "rests on",
            "verdict",
            "program output",
            "entry instructions"
        ],
        "{md}"
    );
    assert!(rows[1].iter().all(|c| c.starts_with("---") || c.ends_with("--:")), "{md}");
    let case = rows.iter().find(|r| r[0].contains("xdp_swap")).unwrap_or_else(|| panic!("{md}"));
    assert_eq!(case.len(), 9, "{md}");
    // Two builds of different code: each one's instructions, the slow one's more.
    let (na, nb) = case[8].split_once(" -> ").unwrap_or_else(|| panic!("{md}"));
    assert!(na.parse::<u32>().unwrap() < nb.parse::<u32>().unwrap(), "{md}");
    assert_eq!(case[6], format!("**{}**", printed["cases"][0]["verdict"].as_str().unwrap()), "{md}");
    // What the program did with the packet: the MAC swap sends it back, its size unchanged.
    assert_eq!(case[7], "XDP_TX, 60 -> 60", "{md}");
    assert!(case[3].parse::<f64>().is_ok() && case[5].contains(" pairs, "), "{md}");
    // A run has no Markdown form: one line, before anything runs.
    let o = bpfbench(&["run", &a, "--format", "markdown", "--no-store"]);
    assert!(stderr(&o).contains("--format markdown: a run is written as"), "{}", stderr(&o));
    let missing = bpfbench(&["show", "--ab", "9", "--db", &db]);
    assert!(stderr(&missing).contains("no paired comparison 9"), "{}", stderr(&missing));
}

/// Ctrl-C stops a comparison between batches: the cases finished so far
/// are printed, the exit code is 130, and no worker or program is left.
#[test]
fn ctrl_c_ends_a_comparison_with_what_it_has_and_leaves_nothing_behind() {
    let _machine = common::machine();
    let exe = env!("CARGO_BIN_EXE_bpfbench");
    let before = common::leftovers::Snapshot::take();
    let child = std::process::Command::new(exe)
        .args([
            "ab",
            exe,
            exe,
            "--no-store",
            "--format",
            "json",
            "--max-time",
            "60",
            "--min-rounds",
            "100000",
            "--",
            "-s",
            "tcp-v4-lru-hit",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    // This run's workers (another bpfbench on the machine may have its own).
    let workers = std::process::Command::new("pgrep").args(["-P", &child.id().to_string()]).output().unwrap();
    let workers: Vec<String> =
        String::from_utf8_lossy(&workers.stdout).split_whitespace().map(str::to_string).collect();
    assert_eq!(workers.len(), 2, "two workers running: {workers:?}");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", String::from_utf8_lossy(&out.stderr));
    let rec: PairedRecord = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rec.interrupted && rec.cases[0].stop == "interrupted" && rec.cases[0].round_ratios.len() >= 2, "{rec:?}");
    let alive: Vec<&String> = workers.iter().filter(|pid| std::path::Path::new("/proc").join(pid).exists()).collect();
    assert!(alive.is_empty(), "workers left: {alive:?}");
    before.assert_nothing_left("an interrupted ab");
}
