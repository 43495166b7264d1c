//! Objects as Aya (Rust) builds them: aya-ebpf's two map styles beside
//! the same logic in C, and the workflow of the Aya guide (docs/src/guide/
//! aya.md): a regression caught paired, gated, measured live and sent to
//! Bencher. The objects are built by scripts/build-aya-objects.sh from
//! examples/aya/ and kept in tests/objects/aya/.

use crate::common;

use std::path::{Path, PathBuf};

use common::{bpfbench, object, stderr, stdout, temp_dir};
use serde_json::Value;

use super::objects::run_json;

fn aya_object(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/objects/aya").join(name)
}

#[test]
fn aya_objects_in_both_map_styles_validate_their_map_entry_and_are_timed_in_both_runtimes() {
    let _machine = common::machine();
    let dir = temp_dir("aya");
    // Built by aya-ebpf and bpf-linker (scripts/build-aya-objects.sh): with
    // #[map] (a legacy 'maps' section) and #[btf_map] ('.maps'); and the same
    // logic in C. 10.0.0.15 is a Buzz (2): divisible by 5, not by 3.
    let (map, btf_map) = (aya_object("fun-xdp-map.o"), aya_object("fun-xdp-btf-map.o"));
    let buzz = dir.join("buzz.json");
    std::fs::write(&buzz, r#"[{"key": "0f00000a", "value": "02000000"}]"#).unwrap();
    let expect = format!("SOURCES={}", buzz.display());
    let packet = "eth/ipv4(src=10.0.0.15)/udp";
    let c = object("fun_xdp.bpf.o");
    for file in [map.to_str().unwrap(), btf_map.to_str().unwrap(), c.as_str()] {
        for runtime in ["kernel", "user"] {
            let args =
                [file, "--packet", packet, "--runtime", runtime, "--expect", "XDP_PASS", "--expect-map", &expect];
            let (code, results, err) = run_json(&args);
            assert_eq!(code, Some(0), "{file} {runtime}: {err}");
            let r = &results[0];
            assert_eq!(r["verdict"], "XDP_PASS", "{r}");
            assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 1.0, "{r}");
            if runtime == "kernel" {
                assert_eq!(r["timing"]["mode"], "in-bpf", "{file}: {r}");
            }
        }
    }
    // The same entry by the maps' types (u32 -> u32), which the #[map]
    // build's BTF names only in its PhantomData members: a number each.
    let typed = dir.join("buzz-typed.json");
    std::fs::write(&typed, r#"[{"key": 167772175, "value": 2}]"#).unwrap();
    for file in [&map, &btf_map] {
        let args =
            [file.to_str().unwrap(), "--packet", packet, "--expect-map", &format!("SOURCES={}", typed.display())];
        let (code, _, err) = run_json(&args);
        assert_eq!(code, Some(0), "{}: {err}", file.display());
    }
    // A Fizz expected of a Buzz fails validation, naming the entry.
    let fizz = dir.join("fizz.json");
    std::fs::write(&fizz, r#"[{"key": "0f00000a", "value": "01000000"}]"#).unwrap();
    let (code, results, err) =
        run_json(&[map.to_str().unwrap(), "--packet", packet, "--expect-map", &format!("SOURCES={}", fizz.display())]);
    assert_eq!(code, Some(1), "{err}");
    let said = format!("{err}{}", results.first().map(|r| r["error"].to_string()).unwrap_or_default());
    assert!(said.contains("expected 01000000, got 02000000"), "{said}");
    // The two map styles, paired: the same program either way.
    let o = bpfbench(&["ab", map.to_str().unwrap(), btf_map.to_str().unwrap(), "--packet", packet, "--no-store"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("fun-xdp-map/fun_xdp"), "{}", stdout(&o));
}

/// fun_xdp with its fibonacci feature (the 13 values matched) and with
/// fib-loop (the sequence walked for every packet): 10.0.1.233 is neither
/// Fizz nor Buzz, and 233 is a Fibonacci number, 13 steps into the loop.
#[test]
fn an_aya_programs_regression_is_found_paired_gated_measured_live_and_written_for_bencher() {
    let _machine = common::machine();
    let dir = temp_dir("aya-fib");
    let (fib, fib_loop) = (aya_object("fun-xdp-fib.o"), aya_object("fun-xdp-fib-loop.o"));
    let (fib, fib_loop) = (fib.to_str().unwrap(), fib_loop.to_str().unwrap());
    let fibonacci = dir.join("fibonacci.json");
    std::fs::write(&fibonacci, r#"[{"key": "e901000a", "value": "04000000"}]"#).unwrap();
    let expect_map = format!("SOURCES={}", fibonacci.display());
    let packet = "eth/ipv4(src=10.0.1.233)/udp";
    let checks = ["--packet", packet, "--expect", "XDP_PASS", "--expect-map", expect_map.as_str()];
    for file in [fib, fib_loop] {
        for runtime in ["kernel", "user"] {
            let (code, results, err) = run_json(&[&[file, "--runtime", runtime][..], &checks].concat());
            assert_eq!(code, Some(0), "{file} {runtime}: {err}");
            assert_eq!(results[0]["verdict"], "XDP_PASS", "{}", results[0]);
        }
    }
    // Paired: the loop's build is slower (about 5 % here); gated at 2 %,
    // the pull request that adds the loop fails and the one that takes it
    // out passes.
    let ab = |a: &str, b: &str, rest: &[&str]| bpfbench(&[&["ab", a, b, "--no-store"][..], &checks, rest].concat());
    let o = ab(fib, fib_loop, &["--format", "json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let record: Value = serde_json::from_slice(&o.stdout).unwrap();
    let case = &record["cases"][0];
    assert_eq!(case["verdict"], "slower", "{case}");
    assert!(case["ratio_ci95"][0].as_f64().unwrap() > 1.0, "{case}");
    let added = ab(fib, fib_loop, &["--fail-on-regression", "2"]);
    assert_eq!(added.status.code(), Some(1), "{}{}", stdout(&added), stderr(&added));
    assert!(stderr(&added).contains("regression: fun-xdp-fib/fun_xdp"), "{}", stderr(&added));
    let removed = ab(fib_loop, fib, &["--fail-on-regression", "2"]);
    assert_eq!(removed.status.code(), Some(0), "{}{}", stdout(&removed), stderr(&removed));
    // Live, attached to a veth with bpf_stats on: every frame passed, ns per packet measured.
    for file in [fib, fib_loop] {
        let live = ["live", file, "--packet", packet, "--duration", "0.5", "--warmup", "0.2", "--no-store"];
        let o = bpfbench(&[&live[..], &["--format", "json"]].concat());
        assert!(o.status.success(), "{file}: {}", stderr(&o));
        let step = &serde_json::from_slice::<Value>(&o.stdout).unwrap()["steps"][0];
        assert!(step["ns_per_packet"].as_f64().unwrap() > 1.0, "{step}");
        assert_eq!(step["verdicts"]["pass"], step["verdicts"]["packets"], "{step}");
    }
    // BMF, as Bencher's json adapter reads it: checked against Bencher's
    // JSON Schema by python3-jsonschema.
    for (what, args) in [("run", vec!["run", fib_loop]), ("ab", vec!["ab", fib, fib_loop, "--no-store"])] {
        let bmf = dir.join(format!("{what}.bmf.json"));
        let mut args = [&args[..], &checks, &["--format", "bmf", "--output", bmf.to_str().unwrap()]].concat();
        if what == "run" {
            args.push("--no-store");
        }
        let o = bpfbench(&args);
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let check = bencher_schema_check(&bmf);
        assert!(check.status.success(), "{what}'s BMF: {}", stderr(&check));
        let doc: Value = serde_json::from_slice(&std::fs::read(&bmf).unwrap()).unwrap();
        let latency = &doc.as_object().unwrap().values().next().unwrap()["latency"];
        assert!(latency["value"].as_f64().unwrap() > 1.0, "{what}: {doc}");
    }
    // Bencher's schema holds a document that is not BMF to be wrong.
    let not_bmf = dir.join("not-bmf.json");
    std::fs::write(&not_bmf, r#"{"fun_xdp": {"latency": {"lower_value": 1.0}}}"#).unwrap();
    assert!(!bencher_schema_check(&not_bmf).status.success(), "a measure without a value passed the schema");
}

/// `file` checked against Bencher's JSON Schema of BMF
/// (tests/fixtures/bmf.schema.json) by python3-jsonschema.
fn bencher_schema_check(file: &Path) -> std::process::Output {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bmf.schema.json");
    let validate =
        "import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))";
    std::process::Command::new("python3").args(["-c", validate]).arg(file).arg(schema).output().unwrap()
}

/// fun_xdp with its log feature: aya-log's `info!` for every packet, into
/// the AYA_LOGS perf event array, as an Aya template's program logs. The
/// object names no license (Aya's loader takes it as GPL, which the GPL-only
/// bpf_perf_event_output needs); no reader opens AYA_LOGS here, so each
/// record is formatted and then dropped, in both runtimes alike.
#[test]
fn an_aya_program_that_logs_loads_as_aya_loads_it_and_its_logging_is_timed() {
    let _machine = common::machine();
    let dir = temp_dir("aya-log");
    let (map, log) = (aya_object("fun-xdp-map.o"), aya_object("fun-xdp-log.o"));
    let (map, log) = (map.to_str().unwrap(), log.to_str().unwrap());
    let buzz = dir.join("buzz.json");
    std::fs::write(&buzz, r#"[{"key": "0f00000a", "value": "02000000"}]"#).unwrap();
    let expect = format!("SOURCES={}", buzz.display());
    let packet = "eth/ipv4(src=10.0.0.15)/udp";
    for runtime in ["kernel", "user"] {
        let args = [log, "--packet", packet, "--runtime", runtime, "--expect", "XDP_PASS", "--expect-map", &expect];
        let (code, results, err) = run_json(&args);
        assert_eq!(code, Some(0), "{runtime}: {err}");
        let r = &results[0];
        assert_eq!(r["verdict"], "XDP_PASS", "{r}");
        if runtime == "kernel" {
            assert_eq!(r["timing"]["mode"], "in-bpf", "{r}");
        }
        let notes = r["notes"].to_string();
        assert!(notes.contains("loaded as \\\"GPL\\\", as Aya's loader takes it"), "{notes}");
        assert!(notes.contains("map AYA_LOGS: a perf event array no reader opens here"), "{notes}");
    }
    // The objects without logging name no license either, and need none.
    let (_, results, _) = run_json(&[map, "--packet", packet]);
    assert!(results[0]["notes"].to_string().contains("loaded as"), "{}", results[0]);
    // What logging costs a packet, paired: formatting the record is most of the program.
    let o = bpfbench(&["ab", map, log, "--packet", packet, "--no-store", "--format", "json", "--max-time", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rec: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &rec["cases"][0];
    assert_eq!(c["verdict"], "slower", "{c}");
    assert!(c["ratio"].as_f64().unwrap() > 1.2, "{c}");
}
