//! The continuous-benchmarking layer: history store, exports, compare and
//! the gate, on synthetic runs (no BPF needed) and through the command line.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use bpfbench::compare::{Gate, RunNoise, compare_runs};
use bpfbench::history::{DB_SCHEMA_VERSION, History};
use bpfbench::record::{Layout, Metric, ProgramRecord, ProgramSize, RunRecord, Unit, parse_run};
use bpfbench::report::compare_table;
use bpfbench::report::export::{BmfMeasure, bmf};
use bpfbench::stats::two_sample::Verdict;
use common::{paired_record, run, run_of, samples};

/// A database path in a directory that lives as long as the returned guard.
fn temp_path(name: &str) -> (common::TempDir, PathBuf) {
    let dir = common::temp_dir(name);
    let path = dir.join("history.sqlite");
    (dir, path)
}

fn gate(pct: f64) -> Gate {
    Gate { fail_on_regression: Some(pct), ..Gate::default() }
}

#[test]
fn json_round_trip_keeps_every_field() {
    let r = run(Some("main"), 1.0);
    let text = serde_json::to_string(&r).unwrap();
    let back = parse_run(&text).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&r).unwrap());
}

#[test]
fn corrupt_foreign_and_newer_json_get_errors_naming_the_problem() {
    let err = |t: &str| parse_run(t).unwrap_err().to_string();
    assert!(err("{not json").contains("not valid JSON"), "{}", err("{not json"));
    assert!(err(r#"{"hello": 1}"#).contains("not a bpfbench result"));
    assert!(err(r#"{"schema": "bpfbench.run/99"}"#).contains("newer bpfbench"));
    assert!(
        err(r#"{"schema": "bpfbench.run/4", "results": 3}"#)
            .contains("bpfbench.run/4 document with a missing or malformed field")
    );
    assert!(err(r#"{"schema": "bpfbench.run/1"}"#).contains("too old"));
}

/// Histories stored before schema 3 hold version-2 documents, whose facts
/// were strings in `params`: they are read back with typed facts.
#[test]
fn version_2_documents_are_upgraded_on_read() {
    let mut doc = as_version_3(&run(None, 1.0));
    doc["schema"] = "bpfbench.run/2".into();
    let results = doc["results"].as_array_mut().unwrap();
    for r in results.iter_mut() {
        r.as_object_mut().unwrap().remove("facts");
    }
    results[0]["params"] = serde_json::json!({"map": "lpm_trie", "op": "drain", "entries": "1000", "key_size": "8",
        "value_size": "8", "random": "false", "producers": "2", "prefix_len": "24"});
    let back = parse_run(&doc.to_string()).unwrap();
    assert_eq!(back.schema, bpfbench::record::schema());
    assert!(back.results.iter().all(|r| r.measurement().is_some()), "the figures kept");
    let f = &back.results[0].facts;
    assert_eq!((f.layout, f.producers, f.unit), (Layout::OpLines, 2, Unit::Map { keys: 1000 }));
    let m = f.map.as_ref().unwrap();
    assert_eq!(
        (m.map_type.as_str(), m.op.as_str(), m.entries, m.key_size, m.prefix_len),
        ("lpm_trie", "drain", 1000, 8, Some(24))
    );
    let plain = &back.results[1].facts;
    assert_eq!((plain.layout, plain.producers, plain.unit, plain.map.is_none()), (Layout::Table, 1, Unit::Op, true));
}

/// `run` as schema 3 wrote it: each figure in the optional field of its
/// metric (`measurement`, `instructions`, `kernel_insns`), the others null.
fn as_version_3(run: &RunRecord) -> serde_json::Value {
    let mut doc = serde_json::to_value(run).unwrap();
    doc["schema"] = "bpfbench.run/3".into();
    for r in doc["results"].as_array_mut().unwrap() {
        let r = r.as_object_mut().unwrap();
        let mut figure = r.remove("figure").unwrap();
        for field in ["measurement", "instructions"] {
            r.insert(field.into(), serde_json::Value::Null);
        }
        if let Some(fields) = figure.as_object_mut() {
            let field = match fields.remove("metric").unwrap().as_str().unwrap() {
                "time" => "measurement",
                "insns" => "instructions",
                _ => "kernel_insns",
            };
            r.insert(field.into(), figure);
        }
    }
    doc
}

/// Runs as bpfbench wrote them before schema 4 (these by the build of
/// 3b0d739: `run`, `run --metric insns`, `vm --metric kernel-insns`'s
/// column) kept a figure in one of three optional fields. Read back, from a
/// file and from a history's row, each scenario has that one figure, every
/// field kept, and stores and reads again alike.
#[test]
fn version_3_documents_are_read_with_their_one_figure() {
    let (_dir, path) = temp_path("v3");
    History::open(&path).unwrap();
    for (file, metric, field) in [
        ("run-v3-time.json", Metric::Time, "measurement"),
        ("run-v3-insns.json", Metric::Insns, "instructions"),
        ("run-v3-kernel-insns.json", Metric::KernelInsns, "kernel_insns"),
    ] {
        let text = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(file))
            .unwrap();
        let old: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(old["schema"], "bpfbench.run/3", "{file}");
        let run = parse_run(&text).unwrap();
        assert_eq!(run.schema, bpfbench::record::schema());
        let results = old["results"].as_array().unwrap();
        assert!(!results.is_empty() && results.len() == run.results.len(), "{file}");
        for (r, o) in run.results.iter().zip(results) {
            assert_eq!(r.metric(), Some(metric), "{file}: {}", r.name);
            assert!(!r.failed(), "{file}: {}", r.name);
            let mut figure = serde_json::to_value(r.figure.as_ref().unwrap()).unwrap();
            assert_eq!(figure.as_object_mut().unwrap().remove("metric").unwrap(), metric.name());
            assert_eq!(figure, o[field], "{file}: {}: every field of the figure kept", r.name);
        }
        // A history's row of that time: read through the same upgrade.
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute(
            "INSERT INTO runs (tag, started_at, git_commit, kernel, cpu_model, report_json) VALUES (?1, 1, 'abc', '6.18', 'cpu', ?2)",
            rusqlite::params![file, text],
        )
        .unwrap();
        let id = conn.last_insert_rowid();
        drop(conn);
        let mut h = History::open(&path).unwrap();
        let back = h.load(id).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&run).unwrap(), "{file}");
        let again = h.store(&back).unwrap();
        assert_eq!(serde_json::to_value(h.load(again).unwrap()).unwrap(), serde_json::to_value(&run).unwrap());
    }
}

#[test]
fn bmf_has_benchmark_measure_value_and_bounds() {
    let doc = serde_json::to_value(bmf(&run(None, 1.0))).unwrap();
    let obj = doc.as_object().unwrap();
    assert_eq!(obj.len(), 2);
    for (name, measures) in obj {
        assert!(name.starts_with("xdp-lb/"), "{name}");
        let measures = measures.as_object().unwrap();
        assert_eq!(measures.keys().collect::<Vec<_>>(), ["latency", "throughput"]);
        for m in measures.values() {
            let m: BmfMeasure = serde_json::from_value(m.clone()).unwrap();
            assert!(m.lower_value <= m.value && m.value <= m.upper_value, "{m:?}");
        }
    }
}

#[test]
fn stored_runs_come_back_and_tags_find_the_newest() {
    let (_dir, path) = temp_path("store");
    let mut h = History::open(&path).unwrap();
    let a = h.store(&run(Some("main"), 1.0)).unwrap();
    let b = h.store(&run(Some("main"), 1.1)).unwrap();
    assert_eq!(h.runs_with_tag("main", 1).unwrap(), vec![b]);
    let back = h.load(a).unwrap();
    assert_eq!(back.results[0].measurement().unwrap().samples_ns, samples(50.0, 1));
    let listed = h.list(&["xdp-lb/tcp-v4-lru-hit".to_string()], 10).unwrap();
    assert_eq!(listed.len(), 2);
    assert!(listed[0].median_ns.unwrap() > listed[1].median_ns.unwrap());
    let (lo, hi) = listed[0].ci95_ns.unwrap();
    assert!(lo <= listed[0].median_ns.unwrap() && listed[0].median_ns.unwrap() <= hi && listed[0].samples == Some(200));
    // One run a side, nothing known of run-to-run noise: 10% is within what the machine does.
    let cmp = compare_runs(&[h.load(a).unwrap()], "a", &[h.load(b).unwrap()], "b", 0.02, &Default::default());
    assert!(
        cmp.times().all(|c| c.result.verdict == Verdict::Uncertain && c.result.run_noise_assumed),
        "{}",
        compare_table::render(&cmp)
    );
    assert!(gate(5.0).regressions(&cmp).is_empty());
    // Known noise of 1%: the 10% is a regression, beyond a 5% limit but not a 15% one.
    let noise: RunNoise = cmp.times().map(|c| (c.benchmark.clone(), (0.01, 5))).collect();
    let cmp = compare_runs(&[h.load(a).unwrap()], "a", &[h.load(b).unwrap()], "b", 0.02, &noise);
    assert!(cmp.times().all(|c| c.result.verdict == Verdict::Slower), "{}", compare_table::render(&cmp));
    assert_eq!(gate(5.0).regressions(&cmp).len(), 2);
    assert!(gate(15.0).regressions(&cmp).is_empty());
}

#[test]
fn run_to_run_noise_of_identical_code_widens_the_comparison() {
    use bpfbench::compare::run_noise_from_history;
    let with_program = |scale: f64, tag: &str| {
        let mut r = run(None, scale);
        for s in &mut r.results {
            s.program = Some(ProgramRecord {
                name: "xdp_lb".into(),
                tag: tag.into(),
                size: ProgramSize { xlated_bytes: 1, jited_bytes: 1 },
                verifier: None,
            });
        }
        r
    };
    let (_dir, path) = temp_path("noise");
    let mut h = History::open(&path).unwrap();
    // Runs of the same code whose medians differ by a few percent.
    for scale in [0.98, 1.0, 1.02] {
        h.store(&with_program(scale, "aaaa")).unwrap();
    }
    let a = with_program(1.0, "aaaa");
    let b = with_program(1.05, "bbbb");
    let noise = run_noise_from_history(&h, &a).unwrap();
    let (cv, runs) = noise["xdp-lb/tcp-v4-lru-hit"];
    assert_eq!(runs, 3);
    assert!((cv - 0.02).abs() < 0.002, "{cv}");
    // With 2% run-to-run noise known (or none known), a 5% shift is uncertain.
    let bare = compare_runs(std::slice::from_ref(&a), "a", std::slice::from_ref(&b), "b", 0.02, &Default::default());
    assert!(bare.times().all(|c| c.result.verdict == Verdict::Uncertain), "{}", compare_table::render(&bare));
    let widened = compare_runs(std::slice::from_ref(&a), "a", std::slice::from_ref(&b), "b", 0.02, &noise);
    assert!(
        widened.times().all(|c| c.result.verdict == Verdict::Uncertain && c.noise_runs == 3),
        "{}",
        compare_table::render(&widened)
    );
    // Code with no stored history gets no estimate, and the table says so.
    let other = with_program(1.0, "cccc");
    assert!(run_noise_from_history(&h, &other).unwrap().is_empty());
    let text = compare_table::render(&bare);
    assert!(
        text.contains("run noise ~14.6%: assumed for 2 benchmark(s)")
            && text.contains("200v200 samples")
            && text.contains("rests on"),
        "{text}"
    );
}

#[test]
fn several_runs_a_side_are_compared_by_their_medians() {
    // Run levels that wander by about 2% between runs, as on a shared VM.
    let levels = [1.0, 1.02, 0.99, 1.01, 0.98];
    let a: Vec<RunRecord> = levels.iter().map(|&l| run(None, l)).collect();
    let b_slow: Vec<RunRecord> = levels.iter().map(|&l| run(None, l * 1.10)).collect();
    let b_same: Vec<RunRecord> = levels.iter().rev().map(|&l| run(None, l)).collect();
    let slow = compare_runs(&a, "a", &b_slow, "b", 0.02, &Default::default());
    for c in slow.times() {
        assert_eq!((c.method.as_str(), c.n_a, c.n_b), ("runs", 5, 5));
        assert_eq!(c.result.verdict, Verdict::Slower, "{}", compare_table::render(&slow));
        assert!(
            c.result.ratio_ci95.0 <= 1.10 && 1.10 <= c.result.ratio_ci95.1 + 0.02,
            "{}",
            compare_table::render(&slow)
        );
    }
    let same = compare_runs(&a, "a", &b_same, "b", 0.02, &Default::default());
    assert!(
        same.times().all(|c| !matches!(c.result.verdict, Verdict::Slower | Verdict::Faster)),
        "{}",
        compare_table::render(&same)
    );
    assert!(compare_table::render(&slow).contains("5v5 runs"));
}

#[test]
fn concurrent_writers_are_both_stored() {
    let (_dir, path) = temp_path("concurrent");
    History::open(&path).unwrap();
    let writers: Vec<_> = (0..4)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                // Each writer has its own connection, as separate processes would.
                let mut h = History::open(&path).unwrap();
                (0..10).map(|_| h.store(&run(Some(&format!("w{i}")), 1.0)).unwrap()).collect::<Vec<_>>()
            })
        })
        .collect();
    let mut ids: Vec<i64> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 40);
    assert_eq!(History::open(&path).unwrap().list(&[], 100).unwrap().len(), 40);
}

/// Set in the child process of the test below: the database to half-write.
const HALF_WRITER_ENV: &str = "BPFBENCH_TEST_HALF_WRITE_DB";

#[test]
fn a_writer_killed_mid_write_leaves_the_database_consistent() {
    if let Some(db) = std::env::var_os(HALF_WRITER_ENV) {
        // Child: write inside a transaction, say so, and wait to be killed.
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE; INSERT INTO runs (tag, started_at, git_commit, kernel, cpu_model, report_json) VALUES ('half', 0, 'x', 'y', 'z', '{');").unwrap();
        std::fs::write(PathBuf::from(&db).with_extension("ready"), b"").unwrap();
        std::thread::sleep(std::time::Duration::from_secs(60));
        return;
    }
    let (_dir, path) = temp_path("killed");
    let mut h = History::open(&path).unwrap();
    h.store(&run(Some("before"), 1.0)).unwrap();
    drop(h);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "stored::a_writer_killed_mid_write_leaves_the_database_consistent", "--nocapture"])
        .env(HALF_WRITER_ENV, &path)
        .spawn()
        .unwrap();
    let ready = path.with_extension("ready");
    let start = std::time::Instant::now();
    while !ready.exists() {
        assert!(start.elapsed().as_secs() < 30, "the child never started writing");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL in the middle of the transaction
    child.wait().unwrap();
    let mut h = History::open(&path).unwrap();
    let runs = h.list(&[], 10).unwrap();
    assert_eq!(runs.len(), 1, "only the committed run is visible");
    assert_eq!(runs[0].stamp.tag.as_deref(), Some("before"));
    assert!(h.load(runs[0].stamp.run).is_ok());
    // And the database takes new runs again (no lock left behind).
    h.store(&run(Some("after"), 1.0)).unwrap();
}

#[test]
fn a_database_from_a_newer_bpfbench_is_refused_clearly() {
    let (_dir, path) = temp_path("newer");
    History::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [(DB_SCHEMA_VERSION + 1).to_string()])
        .unwrap();
    drop(conn);
    let err = format!("{:#}", History::open(&path).err().expect("refused"));
    assert!(err.contains("written by a newer bpfbench"), "{err}");
}

#[test]
fn compare_cli_reads_files_gates_regressions_and_names_bad_input() {
    let (dir, _) = temp_path("cli");
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    std::fs::write(&a, serde_json::to_string(&run(None, 1.0)).unwrap()).unwrap();
    // Twice as slow: beyond any level shift assumed between two single runs.
    std::fs::write(&b, serde_json::to_string(&run(None, 2.0)).unwrap()).unwrap();
    let bpfbench =
        |args: &[&std::ffi::OsStr]| Command::new(env!("CARGO_BIN_EXE_bpfbench")).args(args).output().unwrap();
    let o =
        bpfbench(&["compare".as_ref(), a.as_os_str(), b.as_os_str(), "--fail-on-regression".as_ref(), "5".as_ref()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("slower") && out.contains("geomean"), "{out}");
    let o =
        bpfbench(&["compare".as_ref(), a.as_os_str(), a.as_os_str(), "--fail-on-regression".as_ref(), "5".as_ref()]);
    // A run against itself: nothing slower, and with one run a side not even "same".
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("0 slower, 0 faster, 0 same, 2 uncertain"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    // As a pull request's Markdown table: every benchmark with its verdict,
    // what it rests on and the noise allowed for, and the reason under it.
    let o = bpfbench(&["compare".as_ref(), a.as_os_str(), b.as_os_str(), "--format".as_ref(), "markdown".as_ref()]);
    let md = String::from_utf8_lossy(&o.stdout);
    let rows = common::markdown_rows(&md);
    let header = ["benchmark", "A ns/op", "B ns/op", "B/A", "95 % CI", "p (Holm)", "rests on", "run noise", "verdict"];
    assert_eq!(rows[0], header, "{md}");
    assert!(rows[1].iter().all(|c| c.starts_with("---") || c.ends_with("--:")), "{md}");
    let hit = rows.iter().find(|r| r[0] == "xdp-lb/tcp-v4-lru-hit").unwrap_or_else(|| panic!("{md}"));
    assert_eq!(hit.len(), header.len(), "{md}");
    assert_eq!(hit[8], "**slower**", "{md}");
    assert!((hit[3].parse::<f64>().unwrap() - 2.0).abs() < 0.05 && hit[6] == "200v200 samples", "{md}");
    assert!(rows.iter().any(|r| r[0] == "geomean") && md.contains("2 slower, 0 faster"), "{md}");
    assert!(md.contains("> run noise ~14.6%: assumed"), "{md}");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"schema\": \"bpfbench.run/2\", ").unwrap();
    let o = bpfbench(&["compare".as_ref(), bad.as_os_str(), a.as_os_str()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("bad.json cannot be compared: not valid JSON") && err.lines().count() == 1, "{err}");
}

/// Two stored kernel-insns runs compare count for count, as `ab --kernel`
/// does: a real run (pass-non-ip in trixie) against itself is the same, and
/// against a copy whose JIT image ran two more instructions a packet it is
/// more, in every form.
#[test]
fn compare_cli_compares_stored_kernel_counts() {
    let (dir, _) = temp_path("kernel-counts");
    let a = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-v3-kernel-insns.json");
    let mut more: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
    let counts = &mut more["results"][0]["kernel_insns"]["counts"];
    counts["jit"] = (counts["jit"].as_f64().unwrap() + 2.0).into();
    let b = dir.join("b.json");
    std::fs::write(&b, more.to_string()).unwrap();
    let compare = |b: &std::path::Path, format: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
            .args(["compare".as_ref(), a.as_os_str(), b.as_os_str(), "--format".as_ref(), format.as_ref()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let same = compare(&a, "table");
    assert!(same.contains("kernel instructions per packet"), "{same}");
    assert!(same.contains("0 more, 0 fewer, 1 same"), "{same}");
    let table = compare(&b, "table");
    assert!(
        table.contains("1 more, 0 fewer, 0 same") && table.contains("JIT images, the loop's taken off: 60.0 -> 62.0"),
        "{table}"
    );
    let md = compare(&b, "markdown");
    let rows = common::markdown_rows(&md);
    let row = rows.iter().find(|r| r[0] == "xdp-lb/pass-non-ip@inline").unwrap_or_else(|| panic!("{md}"));
    assert_eq!((row[1].as_str(), row[2].as_str(), row[3].as_str()), ("60", "62", "+2"), "{md}");
    assert!(md.contains("1 more, 0 fewer, 0 same: the kernel's native instructions"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&compare(&b, "json")).unwrap();
    assert_eq!(json["deltas"][0]["metric"], "kernel-insns", "{json}");
    assert_eq!(json["deltas"].as_array().unwrap().len(), 1, "{json}");
    let csv = compare(&b, "csv");
    assert!(csv.starts_with("benchmark,a_insns_per_packet,b_insns_per_packet,delta,ratio\n"), "{csv}");
}

/// The gate fails only on regressions every re-measurement confirms, and
/// re-measures only the suspects.
#[test]
fn the_gate_confirms_suspects_by_re_measuring_them() {
    let base = run_of(&[("a", 100.0), ("b", 100.0), ("c", 100.0)]);
    // Run-to-run noise known to be 1%, as if from stored runs.
    let noise: RunNoise = ["a", "b", "c"].iter().map(|n| (format!("xdp-lb/{n}"), (0.01, 5))).collect();
    // a and b are 30% slower, c is unchanged.
    let first = compare_runs(
        std::slice::from_ref(&base),
        "base",
        &[run_of(&[("a", 130.0), ("b", 130.0), ("c", 100.0)])],
        "new",
        0.02,
        &noise,
    );
    let g = gate(10.0);
    assert_eq!(g.regressions(&first).len(), 2);
    // Re-measurement 1: a is still slower, b is back to normal; 2: a again.
    let mut asked: Vec<Vec<String>> = Vec::new();
    let decision = g
        .decide(&first, 2, |suspects, number| {
            asked.push(suspects.to_vec());
            let again = if number == 1 { run_of(&[("a", 131.0), ("b", 100.0)]) } else { run_of(&[("a", 129.0)]) };
            Ok(compare_runs(std::slice::from_ref(&base), "base", &[again], "again", 0.02, &noise))
        })
        .unwrap();
    assert_eq!(asked, vec![vec!["xdp-lb/a".to_string(), "xdp-lb/b".to_string()], vec!["xdp-lb/a".to_string()]]);
    assert_eq!(decision.cleared, vec![("xdp-lb/b".to_string(), 1)]);
    assert_eq!(decision.regressions.iter().map(|b| b.benchmark.as_str()).collect::<Vec<_>>(), ["xdp-lb/a"]);
    assert!(decision.failed());
    assert_eq!(decision.confirmations.len(), 2);
    // A suspect that one re-measurement clears does not fail the gate.
    let decision = g
        .decide(&first, 2, |_, _| {
            Ok(compare_runs(
                std::slice::from_ref(&base),
                "base",
                &[run_of(&[("a", 100.0), ("b", 101.0)])],
                "again",
                0.02,
                &noise,
            ))
        })
        .unwrap();
    assert!(!decision.failed() && decision.confirmations.len() == 1, "{decision:?}");
    // Without --fail-on-regression nothing is a regression.
    assert!(Gate::default().regressions(&first).is_empty());
}

/// A paired comparison as `bpfbench ab` stores it.
#[test]
fn paired_comparisons_are_stored_in_their_own_table_and_come_back_whole() {
    let (_dir, path) = temp_path("paired");
    let mut h = History::open(&path).unwrap();
    let rec = paired_record();
    let id = h.store_paired(&rec).unwrap();
    assert_eq!(serde_json::to_value(h.load_paired(id).unwrap()).unwrap(), serde_json::to_value(&rec).unwrap());
    let listed = h.list_paired(10).unwrap();
    assert_eq!((listed.len(), listed[0].0, listed[0].1.cases[0].round_ratios.len()), (1, id, 4));
    // Paired comparisons are not runs.
    assert!(h.list(&[], 10).unwrap().is_empty());
    assert!(format!("{:#}", h.load_paired(id + 1).unwrap_err()).contains("no paired comparison"));
}

#[test]
fn a_version_1_database_gains_the_paired_table_and_keeps_its_runs() {
    let (_dir, path) = temp_path("v1");
    // What bpfbench wrote before paired comparisons.
    let location = bpfbench::history::Location::from(&path);
    let mut conn = bpfbench::history::sql::Connection::open(&location).unwrap();
    bpfbench::history::schema::migrate_to(&mut conn, &location, 1).unwrap();
    conn.execute(
        "INSERT INTO runs (tag, started_at, git_commit, kernel, cpu_model, report_json) VALUES ('main', 1, 'abc', '6.18', 'cpu', $1)",
        &[serde_json::to_string(&run(Some("main"), 1.0)).unwrap().into()],
    )
    .unwrap();
    assert!(conn.execute("SELECT * FROM paired", &[]).is_err(), "no paired table at version 1");
    drop(conn);
    let mut h = History::open(&path).unwrap();
    let run_id = h.list(&[], 1).unwrap()[0].stamp.run;
    assert_eq!(h.load(run_id).unwrap().tag.as_deref(), Some("main"));
    h.store_paired(&paired_record()).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: String =
        conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap();
    assert_eq!(version, DB_SCHEMA_VERSION.to_string());
}

#[test]
fn import_knows_a_record_it_holds_under_an_older_schema() {
    let (_dir, path) = temp_path("import-old");
    let (_dir2, source_path) = temp_path("import-source");
    let rec = run(Some("main"), 1.0);
    // The target holds the run as bpfbench.run/2 wrote it: facts as strings in `params`.
    let mut old = as_version_3(&rec);
    old["schema"] = "bpfbench.run/2".into();
    for r in old["results"].as_array_mut().unwrap() {
        let r = r.as_object_mut().unwrap();
        r.remove("facts");
        r.insert("params".into(), serde_json::json!({}));
    }
    History::open(&path).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute(
        "INSERT INTO runs (tag, started_at, git_commit, kernel, cpu_model, report_json) VALUES ('main', ?1, 'abc', '6.18', 'cpu', ?2)",
        rusqlite::params![rec.environment.started_at as i64, old.to_string()],
    )
    .unwrap();
    drop(conn);
    let mut source = History::open(&source_path).unwrap();
    source.store(&rec).unwrap();
    let done = History::open(&path).unwrap().import_from(&source).unwrap();
    assert_eq!((done.runs, done.already), (0, 1), "{done:?}");
}

/// A run of the maps suite's hash lookups in 10,000 entries, with these key and value sizes.
fn map_run(key_size: u32, value_size: u32) -> RunRecord {
    let mut r = run(Some("maps"), 1.0);
    r.results.truncate(1);
    let s = &mut r.results[0];
    (s.workload, s.name) = ("maps".into(), "hash/lookup/10000".into());
    s.facts.map = Some(bpfbench::record::MapFacts {
        map_type: "hash".into(),
        op: "lookup".into(),
        entries: 10000,
        key_size,
        value_size,
        prefix_len: None,
        random: false,
    });
    r
}

#[test]
fn a_version_4_database_gives_its_map_runs_their_full_identity() {
    let (_dir, path) = temp_path("v4");
    let location = bpfbench::history::Location::from(&path);
    let mut conn = bpfbench::history::sql::Connection::open(&location).unwrap();
    bpfbench::history::schema::migrate_to(&mut conn, &location, 4).unwrap();
    // As version 4 stored them: both sizes under one name.
    for (i, sizes) in [(4, 8), (16, 64)].into_iter().enumerate() {
        let json = serde_json::to_string(&map_run(sizes.0, sizes.1)).unwrap();
        conn.execute(
            "INSERT INTO runs (tag, started_at, git_commit, kernel, cpu_model, report_json) VALUES ('maps', $1, 'abc', '6.18', 'cpu', $2)",
            &[(i as i64).into(), json.into()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO results (run_id, benchmark, median_ns) VALUES ($1, 'maps/hash/lookup/10000', 10.0)",
            &[(i as i64 + 1).into()],
        )
        .unwrap();
    }
    drop(conn);
    let mut h = History::open(&path).unwrap();
    let names = h.benchmarks_named("hash/lookup/10000").unwrap();
    assert_eq!(names, ["maps/hash/lookup/10000[key=16,value=64]", "maps/hash/lookup/10000[key=4,value=8]"]);
    // A new run is stored under the name the migration gave its kind.
    h.store(&map_run(16, 64)).unwrap();
    let listed = h.list(&[names[0].clone()], 10).unwrap();
    assert_eq!(listed.iter().map(|r| r.stamp.run).collect::<Vec<_>>(), [3, 2]);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let indexed: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'runs_by_start'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(indexed, 1);
}

/// 24 runs, one a minute: tcp-v4-lru-hit 8 % slower from run 13 on (a new
/// commit), pass-non-ip unchanged; each run's medians jitter by about 1 %.
fn history_with_a_step(path: &std::path::Path) {
    let mut h = History::open(path).unwrap();
    for i in 0..24u64 {
        let jitter = 1.0 + ((i * 7919 % 13) as f64 - 6.0) / 600.0;
        let step = if i >= 12 { 1.08 } else { 1.0 };
        let mut r = run_of(&[("tcp-v4-lru-hit", 150.0 * jitter * step), ("pass-non-ip", 20.0 / jitter)]);
        r.environment.started_at = 1_800_000_000 + i * 60;
        r.environment.git_commit = if i >= 12 { "c2".into() } else { "c1".into() };
        h.store(&r).unwrap();
        if i == 11 {
            // A paired comparison of the two commits, made between the runs.
            let mut p = paired_record();
            p.environment.started_at = 1_800_000_000 + i * 60 + 30;
            h.store_paired(&p).unwrap();
        }
    }
}

#[test]
fn changes_finds_the_step_where_it_is_and_nothing_where_there_is_none() {
    let (dir, path) = temp_path("changes");
    history_with_a_step(&path);
    let db = path.to_str().unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["changes", "--db", db, "--format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "{doc}");
    let hit = series.iter().find(|s| s["benchmark"].as_str().unwrap().contains("tcp-v4-lru-hit")).unwrap();
    let quiet = series.iter().find(|s| s["benchmark"].as_str().unwrap().contains("pass-non-ip")).unwrap();
    assert_eq!(quiet["changes"].as_array().unwrap().len(), 0, "{quiet}");
    let changes = hit["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{hit}");
    let c = &changes[0];
    assert_eq!((c["before"]["run"].as_i64(), c["after"]["run"].as_i64()), (Some(12), Some(13)), "{c}");
    assert!((c["ratio"].as_f64().unwrap() - 1.08).abs() < 0.01, "{c}");
    // The runs jitter by about 1 % either side of the step.
    for side in ["spread_before", "spread_after"] {
        let spread = c[side].as_f64().unwrap();
        assert!(spread > 0.002 && spread < 0.02, "{side} {spread}: {c}");
    }
    assert!(c["p_value"].as_f64().unwrap() <= 0.01, "{c}");
    assert!(c["environment_changes"].as_array().unwrap().iter().any(|e| e == "bpfbench commit: c1 -> c2"), "{c}");
    assert_eq!(c["paired"][0]["verdict"], "slower", "{c}");
    assert_eq!((c["paired"][0]["rounds"].as_u64(), c["paired"][0]["pairs"].as_u64()), (Some(4), Some(4)), "{c}");
    // The pull request's form: one row for the one change.
    let o = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["changes", "--db", db, "--format", "markdown"])
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&o.stdout);
    let rows = common::markdown_rows(&md);
    assert_eq!(rows.len(), 3, "{md}");
    assert_eq!(rows[0][0], "benchmark");
    assert!(rows[2][0].contains("tcp-v4-lru-hit") && rows[2][6] == "**+8.0 %**" && rows[2][8] == "12 / 12", "{md}");
    assert!(md.contains("1 change(s) in 2 series; 1 series without a change"), "{md}");
    // The text: a block for the series that changed, one line for the rest.
    let o = Command::new(env!("CARGO_BIN_EXE_bpfbench")).args(["changes", "--db", db]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(text.matches(" runs, ").count(), 1, "{text}");
    assert!(text.contains("1 series without a change: xdp-lb/pass-non-ip on"), "{text}");
    // Selections and bad input.
    let o = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["changes", "--db", db, "-s", "pass-non-ip"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("1 series without a change: xdp-lb/pass-non-ip on") && !text.contains("tcp-v4-lru-hit"),
        "{text}"
    );
    common::assert_one_line_error(&["changes", "--db", db, "--alpha", "2"], "is not a significance level");
    common::assert_one_line_error(&["changes", "--db", db, "-s", "nope"], "no stored run measured 'nope'");
    common::assert_one_line_error(&["changes", "--db", db, "--testbed", "elsewhere"], "no stored run in");
    let missing = dir.join("none.sqlite");
    common::assert_one_line_error(&["changes", "--db", missing.to_str().unwrap()], "no history yet");
}
