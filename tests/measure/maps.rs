//! Map microbenchmarks against the real kernel: every op validates on every
//! map type, a wrong expectation fails validation, the costs order as the
//! work implies, producers really run at once on distinct CPUs, and
//! impossible requests are refused.

use crate::common;

use bpfbench::harness::timing::RestoreMode;
use bpfbench::harness::{Variant, Workload};
use bpfbench::kernel::features;
use bpfbench::system::cpu;
use bpfbench::workloads::maps::instance::{LoadedMapBench, MapConfig};
use bpfbench::workloads::maps::{KeyLayout, MapBench, MapKind, MapOp, MapParams, Suite};
use common::{prepared_cpu, quick_runner, scenario};

fn bench(suite: Suite, edit: impl FnOnce(&mut MapParams)) -> MapBench {
    let mut p = MapParams::defaults(suite);
    p.entries = vec![1000];
    edit(&mut p);
    MapBench::new(suite, p).expect("valid parameters")
}

#[test]
fn every_op_validates_on_every_map_type() {
    let _machine = common::machine();
    let w = bench(Suite::Maps, |p| {
        p.ops = vec![
            MapOp::Noop,
            MapOp::Baseline,
            MapOp::Lookup,
            MapOp::Insert,
            MapOp::Update,
            MapOp::Delete,
            MapOp::Drain,
        ];
    });
    let mut loaded = w.setup(prepared_cpu()).unwrap();
    let mut failures = Vec::new();
    let mut validated = 0;
    for s in w.scenarios() {
        if let Some(why) = loaded.unavailable(s) {
            // Only arrays refuse, and only ops that change the key set.
            assert!(s.name.contains("array/"), "{}: unexpectedly N/A: {why}", s.name);
            continue;
        }
        match loaded.validate(s) {
            Ok((v, mut prepared)) => {
                assert!(v.checks.len() >= 3, "{}: too few checks: {:?}", s.name, v.checks);
                // Timing runs on the validated state, and ops that consume keys
                // (insert, delete) refill between batches without a failure.
                for _ in 0..4 {
                    let t = prepared.run_batch(Variant::Body, 700).unwrap_or_else(|e| panic!("{}: {e:#}", s.name));
                    assert!(t.iters > 0 && t.elapsed_ns > 0, "{}: empty batch", s.name);
                }
                validated += 1;
            }
            Err(e) => failures.push(format!("{}: {e:#}", s.name)),
        }
    }
    assert!(failures.is_empty(), "validation failed:\n{}", failures.join("\n"));
    assert_eq!(validated, 7 * 7 - 2 * 3, "every map type (7) x op (7) except the arrays' insert, delete and drain");
}

#[test]
fn lookups_of_keys_that_are_not_there_fail_validation() {
    let _machine = common::machine();
    let cpu = prepared_cpu();
    let mut w = bench(Suite::LpmTrie, |p| p.ops = vec![MapOp::Lookup]);
    let s = scenario(&w, "lookup");
    assert!(w.setup(cpu).unwrap().validate(&s).is_ok(), "valid as built");
    // Shift the keys BPF looks up past the filled range: every lookup misses.
    w.key_offset = 1000;
    let err = match w.setup(cpu).unwrap().validate(&s) {
        Ok(_) => panic!("lookups of absent keys validated"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("lookups missed: 1000 of 1000"), "{err}");
}

/// `free` needs fentry/fexit: it must be timed exactly where an independent
/// probe finds tracing programs allowed, and N/A with the reason elsewhere.
#[test]
fn free_is_timed_where_tracing_works_and_unavailable_where_it_does_not() {
    let _machine = common::machine();
    let w = bench(Suite::LpmTrie, |p| p.ops = vec![MapOp::Free]);
    let mut loaded = w.setup(prepared_cpu()).unwrap();
    let s = scenario(&w, "free");
    match (features::tracing_programs(), loaded.unavailable(&s)) {
        (Err(kernel), Some(why)) => {
            assert!(why.contains("fentry/fexit on bpf_map_free_deferred"), "{why}");
            assert!(why.contains("drain"), "the stand-in is named: {why}");
            eprintln!("tracing refused here ({kernel}); free: N/A ({why})");
        }
        (Ok(()), None) => {
            let (v, mut prepared) = loaded.validate(&s).expect("free validates where fentry works");
            assert!(v.checks.iter().any(|c| c.contains("fexit saw the map freed")), "{:?}", v.checks);
            let t = prepared.run_batch(Variant::Body, 1).unwrap();
            assert!(t.elapsed_ns > 0 && t.iters == 1);
        }
        (Ok(()), Some(why)) => panic!("tracing programs work here, yet free is unavailable: {why}"),
        (Err(kernel), None) => panic!("tracing programs are refused ({kernel}), yet free claims to be available"),
    }
}

#[test]
fn drain_is_given_per_key_as_every_op_and_ab_give_it_with_the_whole_map_beside() {
    let _machine = common::machine();
    let o = common::bpfbench(&[
        "run",
        "maps",
        "--map",
        "hash",
        "--op",
        "drain",
        "--entries",
        "1000",
        "--samples",
        "3",
        "--batch-ms",
        "2",
        "--no-store",
    ]);
    let out = common::stdout(&o);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let line = out.lines().find(|l| l.contains("hash/drain/1000:")).unwrap_or_else(|| panic!("{out}"));
    // "latency   42.309 ns/op  (n=3; 42.309 us per map of 1000 keys)"
    let after = |marker: &str| -> (f64, String) {
        let rest = line.split(marker).nth(1).unwrap_or_else(|| panic!("{marker} in {line}")).trim_start();
        let mut words = rest.split_whitespace();
        (words.next().unwrap().parse().unwrap(), words.next().unwrap().to_string())
    };
    let (per_key, unit) = after("latency");
    assert_eq!(unit, "ns/op", "{line}");
    let (per_map, map_unit) = after("n=3;");
    assert!(line.ends_with("per map of 1000 keys)"), "{line}");
    let scale = match map_unit.as_str() {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        other => panic!("{other} in {line}"),
    };
    let ratio = per_map * scale / (per_key * 1000.0);
    assert!((ratio - 1.0).abs() < 0.01, "{line}");
}

#[test]
fn lookup_costs_more_than_the_harness_alone() {
    let _machine = common::machine();
    let w = bench(Suite::LpmTrie, |p| {
        p.ops = vec![MapOp::Noop, MapOp::Lookup];
        p.entries = vec![10_000];
    });
    let mut loaded = w.setup(prepared_cpu()).unwrap();
    let mut runner = quick_runner(15, 2.0);
    let mut median = |name: &str| {
        let rec = runner.run_scenario("lpm-trie", loaded.as_mut(), &scenario(&w, name)).expect("not interrupted");
        rec.measurement().cloned().unwrap_or_else(|| panic!("{name}: {:?}", rec.error)).summary.median
    };
    let noop = median("noop");
    let lookup = median("lookup");
    // A trie walk over 10K /32 prefixes is several times the empty loop.
    assert!(lookup > 2.0 * noop, "lookup {lookup:.1} ns vs noop {noop:.1} ns");
}

#[test]
fn producers_run_at_once_on_distinct_cpus() {
    let _machine = common::machine();
    let run_cpu = prepared_cpu();
    let allowed = cpu::allowed_cpus().unwrap();
    assert!(allowed.len() >= 2, "this test needs two CPUs (the project's machines have them); got {allowed:?}");
    let other = *allowed.iter().find(|&&c| c != run_cpu).unwrap();
    let cpus = [run_cpu, other];
    let config = MapConfig {
        kind: MapKind::Hash,
        op: MapOp::Lookup,
        entries: 1000,
        key: KeyLayout { size: 4, lpm_prefix: None },
        value_size: 8,
        random: false,
        key_offset: 0,
    };
    let mut inst = LoadedMapBench::load(
        config,
        &LoadedMapBench::builtin(),
        bpfbench::record::LoopConstruct::MayGoto,
        bpfbench::record::Runtime::Kernel,
        run_cpu,
    )
    .unwrap();
    inst.fill(0, 1000).unwrap();
    // Batches of ~20 ms each: long enough that threads started together overlap.
    let iters = 200_000;
    let timings = inst.body.run_batch_parallel(&[0u8; 64], iters, &cpus).unwrap();
    assert_eq!(timings.len(), 2);
    for t in &timings {
        assert_eq!(t.iters, u64::from(iters));
    }
    // Each producer's ops were counted on its own CPU's slot.
    let states = inst.states().unwrap();
    for &c in &cpus {
        assert_eq!(states[c].ops, u64::from(iters), "CPU {c} ran {} ops", states[c].ops);
        assert_eq!(states[c].failures, 0);
    }
    // The two batches' [start, end) intervals overlap: they ran at once.
    let (a, b) = (timings[0], timings[1]);
    let (end_a, end_b) = (a.started_ns + a.elapsed_ns, b.started_ns + b.elapsed_ns);
    assert!(a.started_ns < end_b && b.started_ns < end_a, "batches did not overlap: {a:?} {b:?}");
    // And through the workload: insert and lookup with two producers validate and time.
    let w = bench(Suite::LpmTrie, |p| {
        p.ops = vec![MapOp::Insert, MapOp::Lookup];
        p.producers = 2;
    });
    let mut loaded = w.setup(run_cpu).unwrap();
    for name in ["insert", "lookup"] {
        let (v, mut prepared) = loaded.validate(&scenario(&w, name)).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert!(v.notes.iter().any(|n| n.contains(&format!("{cpus:?}"))), "{name}: {:?}", v.notes);
        let t = prepared.run_batch(Variant::Body, 400).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(t.iters, 400, "{name}");
    }
    // The overhead program is untouched by producers.
    let (t, _) = inst.overhead.run_batch(&[0u8; 64], 100, RestoreMode::BENCH_RESTORE_NONE, run_cpu).unwrap();
    assert_eq!(t.iters, 100);
}

#[test]
fn impossible_requests_are_refused_in_one_line() {
    let _machine = common::machine();
    let refuse = |edit: fn(&mut MapParams), needle: &str| {
        let mut p = MapParams::defaults(Suite::LpmTrie);
        edit(&mut p);
        let err = MapBench::new(Suite::LpmTrie, p).err().expect("refused").to_string();
        assert!(err.contains(needle) && !err.contains('\n'), "{err}");
    };
    refuse(
        |p| {
            p.ops = vec![MapOp::Insert];
            p.ops_explicit = true;
            p.random = true;
        },
        "--random cannot be used with --op insert",
    );
    refuse(|p| p.prefix_len = 40, "--prefix-len must be between 1 and 32");
    refuse(
        |p| {
            p.prefix_len = 8;
            p.entries = vec![1000];
        },
        "does not fit in /8 prefixes",
    );
    refuse(|p| p.maps = Vec::new(), "nothing to run");
}
