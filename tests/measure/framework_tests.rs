//! A test framework's own tests as benchmarks (`bpfbench run --tests
//! cilium`), against the real kernel, on tc_framework_tests.bpf.c: a test
//! object in Cilium's shape (pktgen, a setup that tail-calls the datapath
//! entry, a check reporting a protobuf SuiteResult). Its five tests show
//! the replay in name order (b_reply passes only after a_request made its
//! flow), the two states, the state-dependent label (a_request's later
//! packets are dropped), a failing CHECK reported with its own message,
//! a check-only test that is checked and not timed, and programs calling
//! functions of other programs' sections (copied into .text in memory).

use crate::common;

use common::{assert_one_line_error, bpfbench, stderr, temp_dir, test_object};
use serde_json::Value;

fn run_json(object: &str, extra: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let mut args = vec!["run", object, "--tests", "cilium"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--samples", "3", "--batch-ms", "1", "--no-store", "--format", "json"]);
    let o = bpfbench(&args);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code(), doc["results"].as_array().cloned().unwrap_or_default(), stderr(&o))
}

fn row<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {}", serde_json::to_string_pretty(rows).unwrap()))
}

fn texts(r: &Value, field: &str) -> String {
    r[field].as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n")).unwrap_or_default()
}

#[test]
fn a_test_objects_tests_replay_in_name_order_and_time_their_entry_steady_and_fresh() {
    let _machine = common::machine();
    let object = test_object("tc_framework_tests.bpf.o").display().to_string();
    let (code, rows, err) = run_json(&object, &[]);
    // c_wrong_verdict fails its own CHECK: the run fails, the others are measured.
    assert_eq!(code, Some(1), "{err}");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["name"].as_str()).collect();
    let g = "tc_framework_tests";
    assert_eq!(
        names,
        [
            format!("{g}/a_request/steady"),
            format!("{g}/a_request/fresh"),
            format!("{g}/b_reply/steady"),
            format!("{g}/b_reply/fresh"),
            format!("{g}/c_wrong_verdict/steady"),
            format!("{g}/c_wrong_verdict/fresh"),
            format!("{g}/d_unit"),
            format!("{g}/e_reply_again/steady"),
            format!("{g}/e_reply_again/fresh"),
        ],
        "tests in name order, each entry in two states"
    );
    assert!(rows.iter().all(|r| r["workload"] == "cilium"));

    // b_reply needs the flow a_request made: it passes only when replayed after it.
    for state in ["steady", "fresh"] {
        let b = row(&rows, &format!("{g}/b_reply/{state}"));
        assert_eq!(b["validated"], true, "{b}");
        assert_eq!(b["verdict"], "TC_ACT_OK", "{b}");
        assert!(b["figure"]["metric"] == "time", "{b}");
        assert!(texts(b, "checks").contains("its own CHECK passed in the replay"), "{b}");
    }
    // Steady: in BPF, the chain loop putting mark and cb[0] back (the entry drops without them).
    let steady = row(&rows, &format!("{g}/b_reply/steady"));
    assert_eq!(steady["timing"]["mode"], "chain", "{steady}");
    assert!(
        texts(steady, "notes").contains("the skb put back after each as the test run made it (mark, cb[]"),
        "{steady}"
    );
    let fresh = row(&rows, &format!("{g}/b_reply/fresh"));
    assert_eq!(fresh["timing"]["mode"], "per-call", "{fresh}");

    // a_request: the flow's later packets are dropped, so its steady state is another path.
    let a = row(&rows, &format!("{g}/a_request/steady"));
    assert_eq!(a["verdict"], "TC_ACT_OK (state-dependent)", "{a}");
    let notes = texts(a, "notes");
    assert!(
        notes.contains("the flow's second packet takes another path than its first (verdict TC_ACT_SHOT"),
        "{notes}"
    );
    assert!(notes.contains("after the batches, the flow's next packet fails its own CHECK"), "{notes}");
    // From the fresh state every call is the first packet: not state-dependent.
    let a_fresh = row(&rows, &format!("{g}/a_request/fresh"));
    assert_eq!(a_fresh["verdict"], "TC_ACT_OK", "{a_fresh}");
    assert!(a_fresh["figure"]["metric"] == "time", "{a_fresh}");

    // c_wrong_verdict: its own CHECK's message, as Cilium's runner prints it.
    for state in ["steady", "fresh"] {
        let c = row(&rows, &format!("{g}/c_wrong_verdict/{state}"));
        assert_eq!(c["validated"], false, "{c}");
        let error = c["error"].as_str().unwrap_or_default();
        assert!(
            error.contains("test c_wrong_verdict failed its own CHECK in the replay: its CHECK returned fail; subtest verdict: fail: expected verdict 7, got 0"),
            "{error}"
        );
    }
    // e_reply_again: its pktgen and check call b_reply's (functions of other
    // programs' sections), copied into .text in memory: it replays and times.
    for state in ["steady", "fresh"] {
        let e = row(&rows, &format!("{g}/e_reply_again/{state}"));
        assert_eq!(e["verdict"], "TC_ACT_OK", "{e}");
        assert!(e["figure"]["metric"] == "time", "{e}");
        let notes = texts(e, "notes");
        assert!(
            notes.contains("copied into .text in memory") && notes.contains("b_reply_pktgen, b_reply_check"),
            "{notes}"
        );
    }
    // d_unit: checked, not timed.
    let d = row(&rows, &format!("{g}/d_unit"));
    let why = d["unavailable"].as_str().unwrap_or_default();
    assert!(
        why.contains("not timed: the test drives no datapath entry") && why.contains("its own CHECK passed"),
        "{d}"
    );
}

#[test]
fn a_folder_of_test_objects_and_bad_input_are_one_line_errors() {
    let dir = temp_dir("framework-tests");
    // A folder with no test objects names the command that builds them.
    assert_one_line_error(
        &["run", dir.to_str().unwrap(), "--tests", "cilium"],
        "holds no test objects (*.o with sections PREFIX/test/NAME/check): build them with examples/corpus/build.sh --cilium-tests",
    );
    // An object without tests is not a test object.
    let plain = test_object("xdp_pass.bpf.o").display().to_string();
    assert_one_line_error(
        &["run", &plain, "--tests", "cilium"],
        "holds no test programs (no section PREFIX/test/NAME/check)",
    );
    assert_one_line_error(&["run", "missing.o", "--tests", "cilium"], "missing.o does not exist");
    // A folder holding a test object lists its tests.
    std::fs::copy(test_object("tc_framework_tests.bpf.o"), dir.join("tc_framework_tests.o")).unwrap();
    let o = bpfbench(&["list", dir.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("tc_framework_tests/a_request/steady") && out.contains("tc_framework_tests/d_unit"), "{out}");
}
