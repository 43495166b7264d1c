//! The corpus as one suite (`bpfbench run corpus`, `bpfbench run DIR/`):
//! every spec file of a folder validated and timed, grouped by project;
//! the kernel selftests' programs built from Debian's kernel tree and
//! validated with what their selftests assert; specs whose objects are not
//! built listed with the command that builds them.

use crate::common;

use common::{bpfbench, stderr, stdout, temp_dir};

/// What the selftests assert of each of their cases (prog_tests/l4lb_all.c,
/// xdp_noinline.c, flow_dissector.c, cls_redirect.c): (row, verdict, bytes out).
const SELFTESTS: &[(&str, &str, u64)] = &[
    ("selftests-l4lb/ipv4", "TC_ACT_REDIRECT", 54),
    ("selftests-l4lb/ipv6", "TC_ACT_REDIRECT", 74),
    ("selftests-xdp-noinline-v4/ipv4", "XDP_DROP", 54),
    ("selftests-xdp-noinline-v6/ipv6", "XDP_DROP", 74),
    ("selftests-flow-dissector/ipv4", "BPF_OK", 56),
    ("selftests-flow-dissector/802.1ad-ipv6", "BPF_OK", 56),
    ("selftests-flow-dissector/ipv6-no-flow-label", "BPF_OK", 56),
    ("selftests-flow-dissector/ipip-no-encap", "BPF_OK", 56),
    ("selftests-flow-dissector/ipip-encap-dissector-continue", "BPF_FLOW_DISSECTOR_CONTINUE", 56),
    // cls_redirect.c: every packet redirected; accepted ones decapsulated, forwarded ones not.
    ("selftests-cls-redirect/ipv4-tcp-accept-unknown-no-hops-syn", "TC_ACT_REDIRECT", 54),
    ("selftests-cls-redirect/ipv6-tcp-accept-unknown-no-hops-ack", "TC_ACT_REDIRECT", 74),
    ("selftests-cls-redirect/ipv4-udp-accept-unknown-no-hops", "TC_ACT_REDIRECT", 42),
    ("selftests-cls-redirect/ipv4-tcp-forward-unknown-one-hop-ack", "TC_ACT_REDIRECT", 94),
    ("selftests-cls-redirect/ipv6-udp-forward-unknown-one-hop", "TC_ACT_REDIRECT", 102),
];

#[test]
fn a_folder_of_specs_runs_as_one_suite_grouped_by_project() {
    let _m = common::machine();
    let dir = temp_dir("corpus");
    let corpus = common::corpus_with_selftests(&dir);
    let args = [
        "run",
        corpus.to_str().unwrap(),
        "--samples",
        "2",
        "--batch-ms",
        "1",
        "--sweeps",
        "1",
        "--warmup",
        "0",
        "--no-store",
        "--format",
        "json",
    ];
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(args)
        .env("BPFBENCH_SAY_AFTER_MS", "200")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let run: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = run["results"].as_array().unwrap();
    let row = |name: &str| {
        rows.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("no row {name} in {}", stdout(&o)))
    };
    // The selftests' cases, each validated against what its selftest
    // asserts (verdict, size, the magic bytes, the stats map, the flow keys)
    // and timed, in one group.
    let selftests: Vec<_> = rows.iter().filter(|r| r["group"] == "linux selftests").collect();
    assert_eq!(selftests.len(), 2 + 1 + 1 + 14 + 14, "{selftests:#?}");
    for r in &selftests {
        assert_eq!(r["workload"], "corpus");
        assert!(r["error"].is_null() && r["validated"] == true, "{}: {}", r["name"], r["error"]);
        assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{}", r["name"]);
    }
    for (name, verdict, out) in SELFTESTS {
        let r = row(name);
        assert_eq!(r["verdict"], *verdict, "{name}");
        assert_eq!(r["outcome"]["bytes"]["output"][0], *out, "{name}");
        assert_eq!(r["outcome"]["expected"]["verdict"], true, "{name}");
    }
    for name in ["selftests-l4lb/ipv4", "selftests-xdp-noinline-v6/ipv6"] {
        let expected = &row(name)["outcome"]["expected"];
        assert_eq!(expected["packet"], true, "{name}: the magic bytes are checked");
        assert!(expected["maps"].to_string().contains("stats"), "{name}: {expected}");
    }
    assert_eq!(row("selftests-flow-dissector/ipv6-frag")["outcome"]["expected"]["flow_keys"], true);
    // A large program's batch loop, placed once per loop. Whether the
    // verifier takes test_cls_redirect inline is the kernel's call (6.18.44
    // takes the first inline form; earlier 6.18 builds refused it, 8193
    // jumps too complex): either way the later cases of the same loop do
    // not walk the refused forms again, and their notes say how they were
    // placed.
    let noted = |name: &str, text: &str| {
        row(name)["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap_or("").contains(text))
    };
    let first = "selftests-cls-redirect/ipv4-tcp-accept-unknown-no-hops-syn";
    if noted(first, "not inline: inline,") {
        assert!(noted("selftests-cls-redirect/ipv6-udp-accept-known-one-hop", "not inline: inline,"));
        // The verifier's budget is counted in instructions (the same on any machine).
        assert!(noted(first, "instructions over the inline forms, past bpfbench's budget of 1200000"));
    } else {
        assert!(noted(first, "timing: in BPF, the program inline in the batch loop"), "{}", row(first)["notes"]);
    }
    assert!(noted("selftests-cls-redirect/ipv6-udp-accept-known-one-hop", "placed as an earlier build of this loop"));
    // (Said after 0.2 s here, BPFBENCH_SAY_AFTER_MS; after 2 s by default.)
    let said = stderr(&o);
    let wait = "selftests-cls-redirect/ipv4-tcp-accept-unknown-no-hops-syn: the verifier checks the may-goto loop around the program";
    assert!(said.contains(&format!("{wait}: 0 s so far")) && said.contains(&format!("{wait}: done in ")), "{said}");
    // The other projects' specs have no objects in the copy: one N/A row
    // each, in its project's group, naming the command that builds it.
    for (spec, project, flag) in [
        ("katran-balancer", "katran", "--katran"),
        ("xdp-forward", "xdp-tools", "--xdp-tools"),
        ("cilium-xdp", "cilium", "--cilium"),
    ] {
        let r = row(spec);
        assert_eq!(r["group"], project);
        let why = r["unavailable"].as_str().unwrap_or_else(|| panic!("{spec}: {r}"));
        assert!(why.contains(&format!("build it with examples/corpus/build.sh {flag}")), "{spec}: {why}");
    }
}

#[test]
fn corpus_outside_the_checkout_says_where_it_runs_and_a_bad_spec_is_one_failed_row() {
    let dir = temp_dir("corpus-errors");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["run", "corpus"])
        .current_dir(&*dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("bpfbench run corpus runs the spec files of examples/corpus/"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    // A folder whose one spec is broken: the suite runs, that spec is one
    // failed row naming the fault, and the exit status says so.
    let _m = common::machine();
    std::fs::write(dir.join("broken.toml"), "object = \"x.bpf.o\"\n[[case]]\nname = \"a\"\nexpect = \"XDP_PASS\"\n")
        .unwrap();
    std::fs::write(dir.join("x.bpf.o"), b"not an object").unwrap();
    let o = bpfbench(&["run", dir.to_str().unwrap(), "--samples", "2", "--no-store"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o) + &stderr(&o);
    assert!(out.contains("broken: "), "{out}");
    assert!(out.contains("x.bpf.o is not an ELF file"), "{out}");
}
