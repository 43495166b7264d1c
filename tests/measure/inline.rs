//! The body inline in the batch loop, against the real kernel: your own
//! objects run inline where the verifier accepts it, validated and timed,
//! with a loop overhead measured in the same placement; the body called
//! and inline give the same verdicts; every xdp-lb scenario validates
//! inline (its datapath's stack zeroed after each iteration, so the
//! verifier's states converge) and called, and says which ran; impossible
//! requests get one-line errors. (Equal map state and outputs of both placements:
//! the unit test in src/engine/spliced.rs.)

use crate::common;

use common::{assert_one_line_error, bpfbench, object, stderr, stdout};
use serde_json::Value;

/// `bpfbench run ARGS` as JSON: every result.
fn results(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["run", "--no-store", "--samples", "5", "--batch-ms", "1", "--format", "json"];
    all.extend_from_slice(args);
    let out = bpfbench(&all);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("a JSON run record");
    doc["results"].as_array().cloned().unwrap_or_default()
}

#[test]
fn own_objects_run_inline_with_the_verdict_of_the_call_and_say_which_ran() {
    let _machine = common::machine();
    let swap = object("xdp_swap.bpf.o");
    let tc = object("tc_ttl.bpf.o");
    let lru = object("xdp_lru.bpf.o");
    let cases: [(Vec<&str>, &str); 3] = [
        (vec![swap.as_str(), "--expect", "XDP_TX"], "XDP_TX"),
        (vec![tc.as_str(), "--packet", "eth/ipv4(ttl=9)/udp/payload(30)", "--expect", "TC_ACT_OK"], "TC_ACT_OK"),
        (vec![lru.as_str()], ""),
    ];
    for (args, verdict) in cases {
        let mut verdicts = Vec::new();
        for body in ["inline", "call"] {
            let mut a = args.clone();
            a.extend(["--body", body]);
            let r = &results(&a)[0];
            assert_eq!(r["timing"]["mode"], "in-bpf", "{a:?}: {r}");
            assert_eq!(r["timing"]["body"], body, "{a:?}: {}", r["timing"]);
            assert!(r["figure"]["overhead"]["key"].as_str().unwrap().contains(&format!("body {body}")), "{r}");
            let note = if body == "inline" { "inline in the batch loop" } else { "called from the batch loop" };
            assert!(r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains(note)), "{r}");
            verdicts.push(r["verdict"].clone());
        }
        assert_eq!(verdicts[0], verdicts[1], "{args:?}");
        if !verdict.is_empty() {
            assert_eq!(verdicts[0], verdict);
        }
    }
    // Unasked, the object runs inline: its benchmark is named so.
    let out = bpfbench(&["run", &swap, "--samples", "3", "--batch-ms", "1", "--no-store", "--format", "gobench"]);
    assert!(stdout(&out).contains("xdp_swap@inline"), "{}", stdout(&out));
}

#[test]
fn every_xdp_lb_scenario_validates_inline_and_called_and_says_which_ran() {
    let _machine = common::machine();
    // On a kernel with may_goto the datapath runs inline (its frame zeroed
    // after each iteration so that the verifier's states converge; 6.18
    // refuses it otherwise): a fallback to the call here is a regression.
    let features = bpfbench::kernel::features::probe().expect("tests run as root");
    let want_inline = features.may_goto.is_ok();
    // Validation checks each scenario's verdict, output packet and path
    // counters against the same expectations in both placements.
    for body in ["auto", "call"] {
        let all = results(&["--body", body]);
        assert_eq!(all.len(), 24);
        for r in &all {
            assert_eq!(r["validated"], true, "--body {body}: {r}");
            assert!(r["figure"]["metric"] == "time", "--body {body}: {r}");
            let t = &r["timing"];
            match (body, t["body"].as_str().unwrap()) {
                ("call", "call") => assert_eq!(t["why_called"], "asked for with --body call", "{t}"),
                ("auto", "inline") => assert!(want_inline, "{t}"),
                ("auto", "call") => assert!(!want_inline, "may_goto, yet called: {t}"),
                other => panic!("{other:?}: {t}"),
            }
        }
    }
}

#[test]
fn impossible_placements_are_refused_in_one_line() {
    let _machine = common::machine();
    let swap = object("xdp_swap.bpf.o");
    assert_one_line_error(
        &["run", &swap, "--body", "inline", "--timing-mode", "bounded", "--no-store"],
        "--body inline needs the may_goto loop",
    );
    assert_one_line_error(&["run", &swap, "--body", "inline", "--per-call", "--no-store"], "--body inline");
    assert_one_line_error(&["run", "maps", "--body", "inline", "--no-store"], "--body applies to xdp-lb");
}
