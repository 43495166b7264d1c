//! The load balancer against the real kernel: every scenario validates,
//! validation catches a one-byte difference and a wrong code path, and a
//! short timed run orders the code paths as their work implies.

mod common;

use std::time::Duration;

use bpfbench::harness::runner::{RunOptions, Runner};
use bpfbench::harness::{ScenarioInfo, Workload};
use common::loaded_lb;

fn scenario(w: &dyn Workload, name: &str) -> ScenarioInfo {
    w.scenarios().iter().find(|s| s.name == name).unwrap().clone()
}

#[test]
fn all_24_scenarios_validate_in_the_kernel() {
    let mut lb = loaded_lb();
    assert_eq!(lb.scenarios().len(), 24);
    let mut failures = Vec::new();
    for s in lb.scenarios().to_vec() {
        match lb.validate(&s) {
            Ok(v) => assert!(v.checks.len() >= 5, "{}: too few checks: {:?}", s.name, v.checks),
            Err(e) => failures.push(format!("{}: {e:#}", s.name)),
        }
    }
    assert!(failures.is_empty(), "scenarios failed validation:\n{}", failures.join("\n"));
}

#[test]
fn validation_fails_when_the_expected_packet_differs_by_one_byte() {
    let mut lb = loaded_lb();
    let s = scenario(&lb, "tcp-v4-lru-hit");
    lb.validate(&s).expect("valid as built");
    // Byte 26 is the first byte of the outer IPv4 source address.
    lb.corrupt_expected_byte = Some(26);
    let err = format!("{:#}", lb.validate(&s).unwrap_err());
    assert!(err.contains("outer IPv4 source address (bytes 26..30)"), "{err}");
    // Early-exit packets are compared too.
    lb.corrupt_expected_byte = Some(0);
    let err = format!("{:#}", lb.validate(&scenario(&lb, "pass-non-ip")).unwrap_err());
    assert!(err.contains("Ethernet destination MAC"), "{err}");
}

#[test]
fn expired_udp_entries_miss_the_lru() {
    let mut lb = loaded_lb();
    let s = scenario(&lb, "udp-v4-lru-hit");
    lb.validate(&s).expect("fresh UDP entries hit");
    // With a zero timeout every UDP entry is stale: the hit path must not be taken.
    lb.udp_timeout_ns = Some(0);
    let err = format!("{:#}", lb.validate(&s).unwrap_err());
    assert!(err.contains("LRU hits: expected 8192, got 0"), "{err}");
    // TCP entries do not expire.
    lb.validate(&scenario(&lb, "tcp-v4-lru-hit")).expect("TCP unaffected by the UDP timeout");
}

#[test]
fn timed_code_paths_are_ordered_by_their_work() {
    let mut lb = loaded_lb();
    let mut runner = Runner::new(RunOptions {
        samples: 15,
        batch_ms: 3.0,
        warmup: Duration::from_millis(20),
        max_scenario_time: Duration::from_secs(5),
        baseline_samples: 10,
        progress: false,
    });
    let mut median = |name: &str| {
        let s = scenario(&lb, name);
        let rec = runner.run_scenario(&mut lb, &s);
        assert!(rec.validated, "{name}: {:?}", rec.error);
        let m = rec.measurement.unwrap_or_else(|| panic!("{name}: {:?}", rec.error));
        assert_eq!(m.samples_ns.len(), 15);
        assert!(m.overhead.summary.median > 0.0);
        (m.summary.median, m.overhead.summary.median)
    };
    let (miss, _) = median("tcp-v4-lru-miss");
    let (hit, _) = median("tcp-v4-lru-hit");
    let (exit, loop_cost) = median("drop-v4-frag");
    assert!(miss > hit, "LRU miss ({miss:.1} ns) should cost more than a hit ({hit:.1} ns)");
    assert!(hit > exit, "LRU hit ({hit:.1} ns) should cost more than an early exit ({exit:.1} ns)");
    assert!(exit >= loop_cost * 0.9, "an early exit ({exit:.1} ns) cannot be cheaper than the empty loop ({loop_cost:.1} ns)");
}
