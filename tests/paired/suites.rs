//! Two builds of a suite compared paired (`bpfbench ab --tests cilium
//! A_DIR B_DIR`), against the real kernel, on tc_framework_tests (a test
//! object in Cilium's shape) and its builds with a slower entry and with
//! two tests broken: every entry case both builds have is compared with its
//! entry's instructions, the geomean taken; a test failing on both builds,
//! a file one build lacks and a test B broke are reported as not compared,
//! and the gate fails on the slower entries and on the broken tests.
//! Statistical checks use generous margins.

use crate::common;

use bpfbench::record::paired::PairedRecord;
use bpfbench::stats::two_sample::Verdict;
use common::{assert_one_line_error, bpfbench, object, stderr, stdout, temp_dir};

/// A folder holding `object` as `tc_framework_tests.bpf.o` (one file name
/// in both builds, as a project's build names its objects), and `extra`
/// objects under their own names.
fn suite(dir: &std::path::Path, name: &str, object_name: &str, extra: &[&str]) -> String {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::copy(object(object_name), folder.join("tc_framework_tests.bpf.o")).unwrap();
    for e in extra {
        std::fs::copy(object("tc_framework_tests.bpf.o"), folder.join(e)).unwrap();
    }
    folder.display().to_string()
}

/// `bpfbench ab --tests cilium A B` with short cases: (exit code, record, stderr).
fn ab_suites(a: &str, b: &str, extra: &[&str]) -> (Option<i32>, Option<PairedRecord>, String) {
    let mut args = vec!["--tests", "cilium", a, b];
    args.extend_from_slice(extra);
    ab_folders(&args)
}

/// `bpfbench ab ARGS` with short cases: (exit code, record, stderr and stdout).
fn ab_folders(extra: &[&str]) -> (Option<i32>, Option<PairedRecord>, String) {
    let mut args = vec!["ab", "--no-store", "--min-rounds", "4", "--max-time", "1"];
    args.extend_from_slice(extra);
    let o = bpfbench(&args);
    let record = if extra.contains(&"markdown") { None } else { serde_json::from_slice(&o.stdout).ok() };
    (o.status.code(), record, stderr(&o) + &stdout(&o))
}

const ENTRY_CASES: [&str; 6] = [
    "tc_framework_tests/a_request/steady",
    "tc_framework_tests/a_request/fresh",
    "tc_framework_tests/b_reply/steady",
    "tc_framework_tests/b_reply/fresh",
    "tc_framework_tests/e_reply_again/steady",
    "tc_framework_tests/e_reply_again/fresh",
];

#[test]
fn two_builds_of_a_suite_compare_every_entry_both_have() {
    let _machine = common::machine();
    let dir = temp_dir("ab-suites");
    let a = suite(&dir, "before", "tc_framework_tests.bpf.o", &[]);
    let b = suite(&dir, "after", "tc_framework_tests_slow.bpf.o", &["added.bpf.o"]);
    let (code, rec, err) = ab_suites(&a, &b, &["--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    let rec = rec.unwrap_or_else(|| panic!("no record: {err}"));
    assert!(rec.suite, "{rec:?}");
    let names: Vec<&str> = rec.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ENTRY_CASES, "every entry case both builds have, in the suite's order");
    for c in &rec.cases {
        // 40 multiplications more on the path: slower in both states.
        assert!(c.ratio > 1.02 && c.median_b > c.median_a, "{c:?}");
        if c.name.ends_with("/steady") {
            assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
        }
        // The entry's instructions after the verifier, each build's own code.
        let [pa, pb] = c.programs.as_ref().expect("the entry's programs are recorded");
        assert!(pa.size.xlated_bytes < pb.size.xlated_bytes && pa.tag != pb.tag, "{pa:?} {pb:?}");
        assert!(c.instructions().is_some_and(|i| i.contains(" -> ")), "{c:?}");
        assert!(c.round_ratios.len() >= 2, "{c:?}");
    }
    assert!(rec.geomean_ratio.is_some_and(|g| g > 1.02), "{rec:?}");
    let why = |name: &str| {
        rec.not_compared
            .iter()
            .find(|n| n.name == name)
            .unwrap_or_else(|| panic!("{name} is not among {:?}", rec.not_compared))
    };
    // Its CHECK fails on both builds: not compared, and not B's doing.
    let wrong = why("tc_framework_tests/c_wrong_verdict/steady");
    assert!(wrong.why.starts_with("fails on A and B: ") && wrong.why.contains("expected verdict 7"), "{wrong:?}");
    assert!(!wrong.fails_on_b_only);
    // A file only B has.
    assert!(why("added/a_request/steady").why.starts_with("only in B ("), "{:?}", rec.not_compared);
    assert!(rec.not_compared.iter().all(|n| !n.fails_on_b_only), "{:?}", rec.not_compared);
    // The check-only test is not timed on either: said, not compared.
    assert!(err.contains("tc_framework_tests/d_unit: N/A (not timed"), "{err}");

    // For a pull request: the geomean, the entries that moved with their
    // instructions, every case and those not compared folded away.
    let (code, _, md) = ab_suites(&a, &b, &["--format", "markdown"]);
    assert_eq!(code, Some(0), "{md}");
    assert!(md.contains("geomean B/A **"), "{md}");
    assert!(md.contains("Moved (entry instructions"), "{md}");
    assert!(md.contains("<details><summary>All 6 cases</summary>"), "{md}");
    assert!(md.contains("- `added/d_unit`: only in B ("), "{md}");
    // The gate: the slower entries fail it.
    let (code, _, err) = ab_suites(&a, &b, &["--format", "json", "--fail-on-regression", "1"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("regression: cilium/tc_framework_tests/b_reply/steady@chain is +"), "{err}");
}

#[test]
fn a_test_the_second_build_breaks_is_not_compared_and_fails_the_gate() {
    let _machine = common::machine();
    let dir = temp_dir("ab-suites-broken");
    let a = suite(&dir, "before", "tc_framework_tests.bpf.o", &[]);
    let b = suite(&dir, "after", "tc_framework_tests_broken.bpf.o", &[]);
    let (code, rec, err) = ab_suites(&a, &b, &["--format", "json", "-g", "tc_framework_tests"]);
    assert_eq!(code, Some(0), "{err}");
    let rec = rec.unwrap_or_else(|| panic!("no record: {err}"));
    let broken: Vec<&str> = rec.not_compared.iter().filter(|n| n.fails_on_b_only).map(|n| n.name.as_str()).collect();
    assert_eq!(
        broken,
        [
            "tc_framework_tests/b_reply/steady",
            "tc_framework_tests/b_reply/fresh",
            "tc_framework_tests/e_reply_again/steady",
            "tc_framework_tests/e_reply_again/fresh"
        ],
        "{:?}",
        rec.not_compared
    );
    let n = &rec.not_compared.iter().find(|n| n.fails_on_b_only).unwrap().why;
    assert!(n.starts_with("fails on B only: ") && n.contains("expected verdict 0 and TTL 63"), "{n}");
    // a_request's path does not reach the change: compared.
    assert!(rec.cases.iter().any(|c| c.name == "tc_framework_tests/a_request/steady"), "{:?}", rec.cases);
    // However fast B is, a test it broke fails the gate.
    let (code, _, err) = ab_suites(&a, &b, &["--format", "json", "--fail-on-regression", "50"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("regression: tc_framework_tests/b_reply/steady: fails on B only: "), "{err}");
}

#[test]
fn two_builds_of_the_corpus_compare_case_by_case() {
    let _machine = common::machine();
    let dir = temp_dir("ab-corpus");
    // The kernel selftests' programs as their Makefile builds them
    // (-mcpu=v3), and with -mcpu=v2 (no 32-bit jumps or ALU32).
    let v3 = common::corpus_with_selftests(&dir.join("v3")).display().to_string();
    let v2 = common::corpus_built_with(&dir.join("v2"), "-mcpu=v2").display().to_string();
    // Three programs' cases (cls_redirect's inline verification takes 5 s a load).
    let cases = [
        "selftests-l4lb/ipv4",
        "selftests-l4lb/ipv6",
        "selftests-xdp-noinline-v4/ipv4",
        "selftests-flow-dissector/ipv4",
        "selftests-flow-dissector/ipv6",
    ];
    let mut args = vec![v3.as_str(), v2.as_str(), "--format", "json"];
    args.extend(cases.iter().flat_map(|c| ["-s", c]));
    let (code, rec, err) = ab_folders(&args);
    assert_eq!(code, Some(0), "{err}");
    let rec = rec.unwrap_or_else(|| panic!("no record: {err}"));
    assert!(rec.suite && rec.geomean_ratio.is_some(), "{rec:?}");
    let mut names: Vec<&str> = rec.cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    let mut want = cases.to_vec();
    want.sort_unstable();
    assert_eq!(names, want, "every selected case, compared");
    // Each case validated on both builds, and timed on two builds of its code.
    for c in &rec.cases {
        let [a, b] = c.programs.as_ref().expect("the programs are recorded");
        assert!(a.tag != b.tag, "-mcpu=v2 built the same code: {a:?} {b:?}");
        assert!(c.ratio > 0.5 && c.ratio < 2.0 && c.round_ratios.len() >= 2, "{c:?}");
    }
    assert!(rec.not_compared.is_empty(), "{:?}", rec.not_compared);
}

#[test]
fn suites_refuse_what_is_not_two_builds_of_one() {
    let dir = temp_dir("ab-suites-bad");
    let a = suite(&dir, "before", "tc_framework_tests.bpf.o", &[]);
    let file = object("tc_framework_tests.bpf.o");
    assert_one_line_error(&["ab", "--tests", "cilium", &a, &file, "--no-store"], "before is a folder and");
    let missing = dir.join("nowhere").display().to_string();
    assert_one_line_error(&["ab", &a, &missing, "--no-store"], "nowhere does not exist; to compare two builds");
    let b = suite(&dir, "after", "tc_framework_tests_slow.bpf.o", &[]);
    assert_one_line_error(
        &["ab", "--tests", "cilium", &a, &b, "--metric", "insns", "--no-store"],
        "--metric insns counts in the userspace runtime, which runs no suite's tests",
    );
    // Two folders with no test in common.
    let other = dir.join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(object("tc_framework_tests.bpf.o"), other.join("renamed.bpf.o")).unwrap();
    let other = other.display().to_string();
    assert_one_line_error(
        &["ab", "--tests", "cilium", &a, &other, "--no-store"],
        "have no case in common; two builds of a suite are compared on the cases both have",
    );
}
