//! Timing modes on the running kernel: each loop construct, forced, loads,
//! validates and times xdp-lb's scenarios; the mode is recorded per
//! scenario; a forced mode the workload lacks is refused in one line.
//! (Kernels that lack a construct are tested in guests: tests/guests/debian.rs.)

use crate::common;

use common::{assert_one_line_error, bpfbench, stderr, stdout};

const SCENARIOS: [&str; 3] = ["tcp-v4-lru-hit", "tcp-v4v6-lru-hit", "pass-non-ip"];

fn run_json(mode: &str) -> serde_json::Value {
    let mut args =
        vec!["run", "--no-store", "--samples", "5", "--batch-ms", "1", "--format", "json", "--timing-mode", mode];
    for s in SCENARIOS {
        args.extend(["-s", s]);
    }
    let out = bpfbench(&args);
    assert!(out.status.success(), "--timing-mode {mode}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("a JSON run record")
}

/// The loops of `modes` this kernel verifies; the others are skipped with
/// a line (tests/guests/debian.rs covers kernels that lack them).
fn loops_here(modes: &[&'static str]) -> Vec<&'static str> {
    let features = bpfbench::kernel::features::probe().expect("tests run as root");
    let has = |mode: &str| match mode {
        "may-goto" => features.may_goto.is_ok(),
        "bpf-loop" => features.bpf_loop.is_ok(),
        _ => features.bounded_loops.is_ok(),
    };
    modes
        .iter()
        .copied()
        .filter(|m| {
            has(m) || {
                eprintln!("skipping {m}: this kernel lacks it (tests/guests/debian.rs covers such kernels)");
                false
            }
        })
        .collect()
}

#[test]
fn every_loop_construct_validates_and_times_and_is_recorded() {
    let _machine = common::machine();
    for mode in loops_here(&["may-goto", "bpf-loop", "bounded"]) {
        let run = run_json(mode);
        let results = run["results"].as_array().unwrap();
        assert_eq!(results.len(), SCENARIOS.len());
        for r in results {
            assert_eq!(r["timing"]["mode"], "in-bpf", "{mode}: {r}");
            assert_eq!(r["timing"]["loop"], mode, "{mode}: {}", r["name"]);
            assert!(r["error"].is_null(), "{mode}: {} failed: {}", r["name"], r["error"]);
            let m = &r["figure"];
            let (p50, loop_p50) =
                (m["summary"]["median"].as_f64().unwrap(), m["overhead"]["summary"]["median"].as_f64().unwrap());
            assert!(
                p50 > 0.0 && loop_p50 > 0.0 && p50 > loop_p50 * 0.5,
                "{mode}: {} p50 {p50} loop {loop_p50}",
                r["name"]
            );
            if mode == "bounded" {
                let cap = bpfbench::harness::timing::BOUNDED_LOOP_ITERS as u64;
                assert!(m["batch_iters"].as_u64().unwrap() <= cap, "{mode}: batches beyond the cap: {m}");
            }
        }
        assert_eq!(run["environment"]["features"]["bounded_loops"], true);
    }
}

#[test]
fn the_table_names_a_mode_other_than_may_goto() {
    let _machine = common::machine();
    let out = bpfbench(&[
        "run",
        "--no-store",
        "--samples",
        "3",
        "--batch-ms",
        "1",
        "-s",
        "pass-non-ip",
        "--timing-mode",
        "bounded",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The heading names the mode the rows were timed in, not the default's.
    let table = stdout(&out);
    assert!(table.contains("timed inside BPF (bounded loop, body called)"), "{table}");
    assert!(!table.contains("may-goto") && !table.contains("may_goto loop"), "{table}");
    common::assert_boxed_aligned(&table);
}

#[test]
fn a_mode_the_workload_lacks_is_refused_in_one_line() {
    let _machine = common::machine();
    assert_one_line_error(
        &["run", "-s", "pass-non-ip", "--timing-mode", "per-call"],
        "xdp-lb has no --timing-mode per-call",
    );
    assert_one_line_error(&["run", "maps", "--timing-mode", "per-call"], "maps has no --timing-mode per-call");
}

#[test]
fn features_lists_each_probe_and_the_mode_runs_take() {
    let _machine = common::machine();
    let out = bpfbench(&["features"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for feature in ["may_goto loops", "bpf_loop helper", "bounded loops", "XDP live frames", "BPF_ENABLE_STATS"] {
        assert!(text.contains(feature), "{feature} missing:\n{text}");
    }
    let best = bpfbench::kernel::features::probe().unwrap().best_loop().unwrap();
    assert!(text.contains(&format!("(--timing-mode auto): {}", best.as_str())), "{text}");
}

#[test]
fn compare_warns_where_two_runs_timed_in_different_modes() {
    let _machine = common::machine();
    let dir = common::temp_dir("modes-compare");
    let mut files = Vec::new();
    for mode in ["may-goto", "bounded"] {
        let out = bpfbench(&[
            "run",
            "--no-store",
            "--samples",
            "5",
            "--batch-ms",
            "1",
            "-s",
            "pass-non-ip",
            "--format",
            "json",
            "--timing-mode",
            mode,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let path = dir.join(format!("{mode}.json"));
        std::fs::write(&path, stdout(&out)).unwrap();
        files.push(path.display().to_string());
    }
    let out = bpfbench(&["compare", &files[0], &files[1]]);
    let text = stdout(&out);
    assert!(out.status.success(), "a warning, not a verdict: {}", stderr(&out));
    assert!(
        text.contains("changed: timing mode of xdp-lb/pass-non-ip: may-goto -> bounded (figures of different modes are not compared)"),
        "{text}"
    );
    assert!(
        text.contains("only in A: xdp-lb/pass-non-ip") && text.contains("only in B: xdp-lb/pass-non-ip@bounded"),
        "{text}"
    );
}

/// Your own objects in each driver loop the kernel verifies: the program
/// is spliced into the loop, validated (the last iteration of every checked
/// batch matched its own output) and timed, and the loop is recorded. The
/// encapsulation example grows the packet (the loop puts it back every
/// iteration) and cycles through 8 packets; tc_ttl is a tc program.
#[test]
fn your_own_objects_time_in_may_goto_and_bounded_loops() {
    let _machine = common::machine();
    let encap = common::test_object("xdp_encap.bpf.o").display().to_string();
    let tc = common::test_object("tc_ttl.bpf.o").display().to_string();
    let services = format!("services={}/examples/encap/services.json", env!("CARGO_MANIFEST_DIR"));
    let packet = "eth/ipv4(dst=10.0.0.10,src=10.1.0.1-10.1.0.8)/tcp(dport=80)/payload(32)";
    let quick = ["--no-store", "--samples", "3", "--batch-ms", "1", "--format", "json", "--timing-mode"];
    for mode in loops_here(&["may-goto", "bounded"]) {
        let xdp = [&["run", &encap, "--map", &services, "--packet", packet, "--expect", "XDP_TX"][..], &quick, &[mode]];
        let tc = [&["run", &tc][..], &quick, &[mode]];
        for args in [xdp.concat(), tc.concat()] {
            let out = bpfbench(&args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
            let run: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            for r in run["results"].as_array().unwrap() {
                assert!(r["error"].is_null(), "{mode}: {} failed: {}", r["name"], r["error"]);
                assert_eq!(r["timing"]["loop"], mode, "{mode}: {r}");
                let checks = r["checks"].to_string();
                assert!(checks.contains("spliced into the batch loop"), "{mode}: {checks}");
                if mode == "bounded" {
                    let cap = bpfbench::harness::timing::BOUNDED_LOOP_ITERS as u64;
                    assert!(r["figure"]["batch_iters"].as_u64().unwrap() <= cap, "{mode}: {r}");
                }
            }
        }
    }
    assert_one_line_error(
        &["run", &encap, "--timing-mode", "bpf-loop"],
        "your own objects have no --timing-mode bpf-loop",
    );
}

/// Map operations in each loop the kernel verifies: validated (every key
/// of the batch found, inserted, deleted) and timed, the loop recorded, a
/// bounded loop's batches capped; drain, one batch per whole map, is N/A
/// in a bounded loop.
#[test]
fn map_operations_time_in_every_loop_construct() {
    let _machine = common::machine();
    for mode in loops_here(&["may-goto", "bpf-loop", "bounded"]) {
        let quick = ["--no-store", "--samples", "3", "--batch-ms", "1", "--format", "json", "--timing-mode", mode];
        let maps = [&["run", "maps", "--map", "hash,lru_hash", "--op", "lookup,insert,delete"][..], &quick].concat();
        let lpm = [&["run", "lpm-trie", "--op", "lookup,update,drain"][..], &quick].concat();
        for args in [maps, lpm] {
            let out = bpfbench(&args);
            assert!(out.status.success(), "{args:?}: {}", stderr(&out));
            let run: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
            for r in run["results"].as_array().unwrap() {
                if r["name"] == "drain" && mode == "bounded" {
                    assert!(
                        r["unavailable"].as_str().unwrap().contains("a bounded loop's batch stops at 256 keys"),
                        "{r}"
                    );
                    continue;
                }
                assert!(r["error"].is_null(), "{mode}: {} failed: {}", r["name"], r["error"]);
                assert_eq!(r["timing"]["loop"], mode, "{mode}: {r}");
                let m = &r["figure"];
                assert!(m["summary"]["median"].as_f64().unwrap() > 0.0, "{mode}: {m}");
                if mode == "bounded" {
                    let cap = bpfbench::harness::timing::BOUNDED_LOOP_ITERS as u64;
                    assert!(m["batch_iters"].as_u64().unwrap() <= cap, "{mode}: {m}");
                }
            }
        }
    }
}
