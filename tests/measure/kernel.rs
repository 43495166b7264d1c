//! The load balancer against the real kernel: every scenario validates,
//! validation catches a one-byte difference and a wrong code path, and a
//! short timed run orders the code paths as their work implies.

use crate::common;

use bpfbench::harness::runner::Runner;
use bpfbench::harness::{LoadedWorkload, Variant, Workload};
use bpfbench::workloads::xdp_lb::XdpLb;
use common::{prepared_cpu, quick_runner, scenario};

/// The error of validating `name` with the workload `w`.
fn validation_error(w: &XdpLb, name: &str) -> String {
    let mut loaded = w.setup(prepared_cpu()).expect("loading xdp-lb");
    let s = scenario(w, name);
    match loaded.validate(&s) {
        Ok(_) => panic!("{name} validated against a wrong expectation"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn all_24_scenarios_validate_and_time_in_the_kernel() {
    let _machine = common::machine();
    let w = XdpLb::default();
    let mut loaded = w.setup(prepared_cpu()).expect("loading xdp-lb");
    assert_eq!(w.scenarios().len(), 24);
    let mut failures = Vec::new();
    for s in w.scenarios() {
        match loaded.validate(s) {
            Ok((v, mut prepared)) => {
                assert!(v.checks.len() >= 5, "{}: too few checks: {:?}", s.name, v.checks);
                for variant in [Variant::Body, Variant::Overhead] {
                    let t =
                        prepared.run_batch(variant, 500).unwrap_or_else(|e| panic!("{} {variant:?}: {e:#}", s.name));
                    assert_eq!(t.iters, 500, "{}", s.name);
                }
            }
            Err(e) => failures.push(format!("{}: {e:#}", s.name)),
        }
    }
    assert!(failures.is_empty(), "scenarios failed validation:\n{}", failures.join("\n"));
}

#[test]
fn validation_fails_when_the_expected_packet_differs_by_one_byte() {
    let _machine = common::machine();
    // Byte 26 is the first byte of the outer IPv4 source address.
    let w = XdpLb { corrupt_expected_byte: Some(26), ..Default::default() };
    let err = validation_error(&w, "tcp-v4-lru-hit");
    assert!(err.contains("outer IPv4 source address (bytes 26..30)"), "{err}");
    // Early-exit packets are compared too.
    let w = XdpLb { corrupt_expected_byte: Some(0), ..Default::default() };
    let err = validation_error(&w, "pass-non-ip");
    assert!(err.contains("Ethernet destination MAC"), "{err}");
}

#[test]
fn expired_udp_entries_miss_the_lru() {
    let _machine = common::machine();
    let w = XdpLb::default();
    let mut loaded = w.setup(prepared_cpu()).unwrap();
    loaded.validate(&scenario(&w, "udp-v4-lru-hit")).expect("fresh UDP entries hit");
    // With a zero timeout every UDP entry is stale: the hit path must not be taken.
    let stale = XdpLb { udp_timeout_ns: Some(0), ..Default::default() };
    let err = validation_error(&stale, "udp-v4-lru-hit");
    assert!(err.contains("LRU hits: expected 8192, got 0"), "{err}");
    // TCP entries do not expire.
    let mut loaded = stale.setup(prepared_cpu()).unwrap();
    loaded.validate(&scenario(&stale, "tcp-v4-lru-hit")).expect("TCP unaffected by the UDP timeout");
}

/// (median, loop overhead median) of `name`, timed by `runner`.
fn median(runner: &mut Runner, loaded: &mut dyn LoadedWorkload, w: &XdpLb, name: &str) -> (f64, f64) {
    let rec = runner.run_scenario("xdp-lb", loaded, &scenario(w, name)).expect("not interrupted");
    assert!(rec.validated, "{name}: {:?}", rec.error);
    assert_eq!(rec.program.as_ref().map(|p| p.name.as_str()), Some("xdp_lb"), "the timed program is recorded");
    let m = rec.measurement().cloned().unwrap_or_else(|| panic!("{name}: {:?}", rec.error));
    assert_eq!(m.samples_ns.len(), 15);
    assert!(m.overhead.summary.median > 0.0);
    (m.summary.median, m.overhead.summary.median)
}

#[test]
fn timed_code_paths_are_ordered_by_their_work() {
    let _machine = common::machine();
    let w = XdpLb::default();
    let mut loaded = w.setup(prepared_cpu()).unwrap();
    let mut runner = quick_runner(15, 3.0);
    let (miss, _) = median(&mut runner, loaded.as_mut(), &w, "tcp-v4-lru-miss");
    let (hit, _) = median(&mut runner, loaded.as_mut(), &w, "tcp-v4-lru-hit");
    // A fresh runner measures the exit's own loop overhead right after it,
    // so both sit in the same phase of the machine.
    let (exit, loop_cost) = median(&mut quick_runner(15, 3.0), loaded.as_mut(), &w, "drop-v4-frag");
    assert!(miss > hit, "LRU miss ({miss:.1} ns) should cost more than a hit ({hit:.1} ns)");
    assert!(hit > exit, "LRU hit ({hit:.1} ns) should cost more than an early exit ({exit:.1} ns)");
    assert!(
        exit >= loop_cost * 0.9,
        "an early exit ({exit:.1} ns) cannot be cheaper than the empty loop ({loop_cost:.1} ns)"
    );
}
