//! State a case checks besides the verdict and the packet, against the
//! real kernel. The maps after its packets (`--expect-map`, a spec case's
//! `expect-maps`): a counter and a flow table (xdp_flow_count) hold what
//! one run of each packet leaves, from the maps as set up, also in a case
//! that follows another's timing loop; a value or an absence that does not
//! hold fails validation naming the map, the entry and the field; bad
//! expectations are one-line errors. A flow dissector's keys
//! (`--expect-flow-keys`), shown and checked, with its input flags
//! (`--flow-flags`) changing what it parses of a first fragment.

use crate::common;

use common::{assert_one_line_error, bpfbench, stderr, temp_dir, test_object};
use serde_json::{Value, json};

const FLOW: &str = "eth/ipv4(src=10.0.0.1,dst=10.0.0.2)/udp(sport=1000,dport=53)/payload(18)";

/// xdp_flow_count's key of FLOW: ports and addresses as the packet holds
/// them (network order in native-order fields: 1000 -> 0xe803).
fn flow_key(src: &str) -> Value {
    json!({"family": 4, "proto": 17, "sport": 0xe803, "dport": 0x3500, "src": src, "dst": "a00:2::"})
}

fn run_json(args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--samples", "3", "--batch-ms", "1", "--no-store", "--format", "json"]);
    let o = bpfbench(&all);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code(), doc["results"].as_array().cloned().unwrap_or_default(), stderr(&o))
}

#[test]
fn maps_hold_what_one_run_of_each_packet_leaves_from_the_maps_as_set_up() {
    let _machine = common::machine();
    let dir = temp_dir("map-state");
    let object = test_object("xdp_flow_count.bpf.o").display().to_string();
    let totals = dir.join("totals.json");
    // Two packets: two frames, no bad checksum; `unchecked` and `other` not given, not compared.
    std::fs::write(
        &totals,
        json!([{"key": 0, "value": {"frames": 2, "bad_ip_csum": 0, "bad_l4_csum": 0}}]).to_string(),
    )
    .unwrap();
    let flows = dir.join("flows.json");
    std::fs::write(
        &flows,
        json!([{"key": flow_key("a00:1::"), "value": 2}, {"key": flow_key("a00:9::"), "absent": true}]).to_string(),
    )
    .unwrap();
    let (t, f) = (format!("totals={}", totals.display()), format!("flows={}", flows.display()));
    let (code, results, err) = run_json(&[
        &object,
        "--packet",
        FLOW,
        "--packet",
        FLOW,
        "--expect",
        "XDP_DROP",
        "--expect-map",
        &t,
        "--expect-map",
        &f,
    ]);
    assert_eq!(code, Some(0), "{err}");
    let r = &results[0];
    assert!(r["error"].is_null(), "{r}");
    assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "timed: {r}");
    assert_eq!(r["outcome"]["expected"]["maps"], json!(["totals", "flows"]), "{r}");
    let checks: Vec<&str> = r["checks"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(checks.iter().any(|c| c.starts_with("map totals: 1 entry as expected and 0 key(s) absent")), "{checks:?}");
    assert!(checks.iter().any(|c| c.starts_with("map flows: 1 entry as expected and 1 key(s) absent")), "{checks:?}");

    // A spec file, inline: the second case starts from the maps as set up,
    // not from the millions of runs the first case's timing left.
    let spec = dir.join("counts.toml");
    let key = flow_key("a00:1::").to_string();
    std::fs::write(
        &spec,
        format!(
            r#"object = "{object}"
[[case]]
name = "two"
packet = ["{FLOW}", "{FLOW}"]
expect = "XDP_DROP"
expect-maps = {{ totals = [{{ key = 0, value = {{ frames = 2 }} }}] }}
[[case]]
name = "one"
packet = "{FLOW}"
expect = "XDP_DROP"
expect-maps = {{ totals = [{{ key = 0, value = {{ frames = 1 }} }}], flows = "{}" }}
"#,
            dir.join("one-flow.json").display()
        ),
    )
    .unwrap();
    std::fs::write(dir.join("one-flow.json"), format!(r#"[{{"key": {key}, "value": 1}}]"#)).unwrap();
    let (code, results, err) = run_json(&[spec.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(r["error"].is_null(), "{r}");
    }
    assert_eq!(results[1]["outcome"]["expected"]["maps"], json!(["flows", "totals"]), "{}", results[1]);

    // What does not hold fails the case, naming the map, the entry and the field.
    std::fs::write(&totals, json!([{"key": 0, "value": {"frames": 3}}]).to_string()).unwrap();
    let (_, results, _) = run_json(&[&object, "--packet", FLOW, "--packet", FLOW, "--expect-map", &t]);
    let error = results[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("map totals, entry 0 of")
            && error.contains("key 0: frames: expected 0300000000000000, got 0200000000000000"),
        "{error}"
    );
    std::fs::write(&flows, json!([{"key": flow_key("a00:1::"), "absent": true}]).to_string()).unwrap();
    let (_, results, _) = run_json(&[&object, "--packet", FLOW, "--expect-map", &f]);
    let error = results[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("map flows, entry 0") && error.contains("is present, expected absent"), "{error}");
}

#[test]
fn bad_map_expectations_are_one_line_errors() {
    let dir = temp_dir("map-state-bad");
    let object = test_object("xdp_flow_count.bpf.o").display().to_string();
    let file = dir.join("e.json");
    let flag = format!("totals={}", file.display());
    for (content, says) in [
        (r#"{"key": 0}"#, "expected a JSON array"),
        (r#"[{"key": 0}]"#, "entry 0 needs either \"value\" or \"absent\": true"),
        (r#"[{"value": 1}]"#, "entry 0 needs a \"key\""),
        (r#"[{"key": 0, "value": 1, "count": 2}]"#, "unknown member \"count\""),
        ("[", "not valid JSON"),
    ] {
        std::fs::write(&file, content).unwrap();
        assert_one_line_error(&["run", &object, "--expect-map", &flag, "--no-store"], says);
    }
    assert_one_line_error(
        &["run", &object, "--expect-map", "totals", "--no-store"],
        "--expect-map expects NAME=FILE.json",
    );
    std::fs::write(&file, "[]").unwrap();
    assert_one_line_error(
        &["run", &object, "--expect-map", &format!("nosuch={}", file.display()), "--no-store"],
        "has no map 'nosuch'; its maps: flows, totals",
    );
    assert_one_line_error(
        &["run", &object, "--expect-map", &format!("totals={}/missing.json", dir.display()), "--no-store"],
        "cannot read the file",
    );
}

#[test]
fn a_flow_dissectors_keys_are_shown_and_checked_and_its_flags_reach_it() {
    let _machine = common::machine();
    let flow = test_object("flow_ipv4.bpf.o").display().to_string();
    // A first fragment: its ports only with PARSE_1ST_FRAG (flow_ipv4 reads the flags).
    let fragment = "eth/ipv4(mf=1)/udp(sport=1000,dport=53)/payload(18)";
    let keys =
        r#"{"ip_proto": 17, "is_frag": 1, "is_first_frag": 1, "sport": 1000, "dport": 53, "ipv4_dst": "10.0.0.2"}"#;
    let (code, results, err) =
        run_json(&[&flow, "--packet", fragment, "--flow-flags", "PARSE_1ST_FRAG", "--expect-flow-keys", keys]);
    assert_eq!(code, Some(0), "{err}");
    let r = &results[0];
    assert!(r["error"].is_null(), "{r}");
    assert_eq!(r["outcome"]["expected"]["flow_keys"], json!(true), "{r}");
    let checks = r["checks"].to_string();
    assert!(
        checks.contains("flow keys of packet 0: nhoff=14 thoff=34 addr_proto=2048 is_frag=1 is_first_frag=1 ip_proto=17 n_proto=2048 sport=1000 dport=53 ipv4_src=10.0.0.1 ipv4_dst=10.0.0.2 flags=1"),
        "{checks}"
    );
    assert!(r["notes"].to_string().contains("flow dissector flags: PARSE_1ST_FRAG in every test run"), "{r}");

    // Without the flag the dissector stops before the ports: the same expectation fails, naming them.
    let (code, results, _) = run_json(&[&flow, "--packet", fragment, "--expect-flow-keys", keys]);
    assert_eq!(code, Some(1));
    let error = results[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("flow keys differ from")
            && error.contains("sport: expected 03e8, got 0000; dport: expected 0035, got 0000"),
        "{error}"
    );
    assert!(!error.contains("pcap"), "flow keys are no packet to capture: {error}");

    // Flags and flow keys are a flow dissector's; a bad flag is named.
    let swap = test_object("xdp_swap.bpf.o").display().to_string();
    assert_one_line_error(&["run", &swap, "--flow-flags", "PARSE_1ST_FRAG", "--no-store"], "are for flow dissectors");
    assert_one_line_error(
        &["run", &flow, "--flow-flags", "STOP_AT_L4", "--no-store"],
        "--flow-flags STOP_AT_L4: not a flow dissector flag; the flags are PARSE_1ST_FRAG, STOP_AT_FLOW_LABEL, STOP_AT_ENCAP",
    );
    assert_one_line_error(&["run", &flow, "--expect-flow-keys", r#"{"no_field": 1}"#, "--no-store"], "no_field");
}
