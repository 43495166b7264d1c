//! Map microbenchmarks against the real kernel: every op validates on every
//! map type, a wrong expectation fails validation, the costs order as the
//! work implies, and impossible requests are refused.

mod common;

use std::time::Duration;

use bpfbench::harness::runner::{RunOptions, Runner};
use bpfbench::harness::{ScenarioInfo, Variant, Workload, system};
use bpfbench::workloads::maps::{MapBench, MapOp, MapParams, Suite};
use common::prepared_cpu;

fn bench(suite: Suite, edit: impl FnOnce(&mut MapParams)) -> MapBench {
    let mut p = MapParams::defaults(suite);
    p.entries = vec![1000];
    edit(&mut p);
    MapBench::new(suite, p).expect("valid parameters")
}

fn scenario(w: &dyn Workload, name: &str) -> ScenarioInfo {
    w.scenarios().iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no scenario {name}")).clone()
}

#[test]
fn every_op_validates_on_every_map_type() {
    let cpu = prepared_cpu();
    let mut w = bench(Suite::Maps, |p| {
        p.ops = vec![MapOp::Noop, MapOp::Baseline, MapOp::Lookup, MapOp::Insert, MapOp::Update, MapOp::Delete, MapOp::Drain];
    });
    w.setup(cpu).unwrap();
    let mut failures = Vec::new();
    let mut validated = 0;
    for s in w.scenarios().to_vec() {
        if let Some(why) = w.unavailable(&s) {
            // Only arrays refuse, and only ops that change the key set.
            assert!(s.name.contains("array/"), "{}: unexpectedly N/A: {why}", s.name);
            continue;
        }
        match w.validate(&s) {
            Ok(v) => {
                assert!(v.checks.len() >= 3, "{}: too few checks: {:?}", s.name, v.checks);
                // Timing runs on the validated state, and ops that consume keys
                // (insert, delete) refill between batches without a failure.
                for _ in 0..4 {
                    let t = w.run_batch(Variant::Body, 700).unwrap_or_else(|e| panic!("{}: {e:#}", s.name));
                    assert!(t.iters > 0 && t.elapsed_ns > 0, "{}: empty batch", s.name);
                }
                validated += 1;
            }
            Err(e) => failures.push(format!("{}: {e:#}", s.name)),
        }
    }
    assert!(failures.is_empty(), "validation failed:\n{}", failures.join("\n"));
    assert_eq!(validated, 6 * 7 - 2 * 3, "every map type x op except the arrays' insert, delete and drain");
}

#[test]
fn lookups_of_keys_that_are_not_there_fail_validation() {
    let cpu = prepared_cpu();
    let mut w = bench(Suite::LpmTrie, |p| p.ops = vec![MapOp::Lookup]);
    w.setup(cpu).unwrap();
    let s = scenario(&w, "lookup");
    w.validate(&s).expect("valid as built");
    // Shift the keys BPF looks up past the filled range: every lookup misses.
    w.key_offset = 1000;
    let err = format!("{:#}", w.validate(&s).unwrap_err());
    assert!(err.contains("lookups missed: 1000 of 1000"), "{err}");
}

#[test]
fn free_is_timed_or_reported_unavailable_with_the_reason() {
    let cpu = prepared_cpu();
    let mut w = bench(Suite::LpmTrie, |p| p.ops = vec![MapOp::Free]);
    w.setup(cpu).unwrap();
    let s = scenario(&w, "free");
    match w.unavailable(&s) {
        // This kernel refuses tracing programs: the reason must say so.
        Some(why) => assert!(why.contains("fentry/fexit on bpf_map_free_deferred"), "{why}"),
        None => {
            let v = w.validate(&s).expect("free validates where fentry works");
            assert!(v.checks.iter().any(|c| c.contains("freed")), "{:?}", v.checks);
        }
    }
}

#[test]
fn lookup_costs_more_than_the_harness_alone() {
    let cpu = prepared_cpu();
    let mut w = bench(Suite::LpmTrie, |p| {
        p.ops = vec![MapOp::Noop, MapOp::Lookup];
        p.entries = vec![10_000];
    });
    w.setup(cpu).unwrap();
    let mut runner = Runner::new(RunOptions {
        samples: 15,
        batch_ms: 2.0,
        warmup: Duration::from_millis(20),
        max_scenario_time: Duration::from_secs(5),
        baseline_samples: 10,
        progress: false,
    });
    let median = |w: &mut MapBench, runner: &mut Runner, name: &str| {
        let s = scenario(w, name);
        let rec = runner.run_scenario(w, &s);
        rec.measurement.unwrap_or_else(|| panic!("{name}: {:?}", rec.error)).summary.median
    };
    let noop = median(&mut w, &mut runner, "noop");
    let lookup = median(&mut w, &mut runner, "lookup");
    // A trie walk over 10K /32 prefixes is several times the empty loop.
    assert!(lookup > 2.0 * noop, "lookup {lookup:.1} ns vs noop {noop:.1} ns");
}

#[test]
fn producers_run_at_once_on_distinct_cpus() {
    let cpu = prepared_cpu();
    if system::allowed_cpus().unwrap().len() < 2 {
        eprintln!("skipped: this machine gives the tests one CPU");
        return;
    }
    let mut w = bench(Suite::LpmTrie, |p| {
        p.ops = vec![MapOp::Insert, MapOp::Lookup];
        p.producers = 2;
    });
    w.setup(cpu).unwrap();
    for name in ["insert", "lookup"] {
        let s = scenario(&w, name);
        w.validate(&s).unwrap();
        for _ in 0..3 {
            let t = w.run_batch(Variant::Body, 400).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert!(t.iters > 0, "{name}");
        }
    }
}

#[test]
fn impossible_requests_are_refused_in_one_line() {
    let refuse = |edit: fn(&mut MapParams), needle: &str| {
        let mut p = MapParams::defaults(Suite::LpmTrie);
        edit(&mut p);
        let err = MapBench::new(Suite::LpmTrie, p).err().expect("refused").to_string();
        assert!(err.contains(needle) && !err.contains('\n'), "{err}");
    };
    refuse(|p| {
        p.ops = vec![MapOp::Insert];
        p.ops_explicit = true;
        p.random = true;
    }, "--random cannot be used with --op insert");
    refuse(|p| p.prefix_len = 40, "--prefix-len must be between 1 and 32");
    refuse(|p| {
        p.prefix_len = 8;
        p.entries = vec![1000];
    }, "does not fit in /8 prefixes");
    refuse(|p| p.maps = Vec::new(), "nothing to run");
}
