//! Your own objects against the real kernel: test objects (MAC swap + TX,
//! IPIP encapsulation behind a hash-map lookup, a tc program) validate and
//! time, spliced into the batch loop; wrong expectations fail with a
//! field-named diff and a pcap; map JSON in both forms fills a BTF-typed
//! map; ranges make exactly as many flows as they say; the README's spec
//! file runs; the verifier command reports every object; bad inputs get
//! one-line errors; chains of tail calls the object declares run whole
//! (two and three programs, and one that reaches the kernel's limit).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Bpffs, bpfbench, object, stderr, stdout, temp_dir};
use serde_json::{Value, json};

/// `bpfbench run ARGS --samples 5 --no-store --format json`: (exit code, results, stderr).
pub(crate) fn run_json(args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let mut all: Vec<&str> = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--samples", "5", "--batch-ms", "2", "--no-store", "--format", "json"]);
    let o = bpfbench(&all);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    let results = doc["results"].as_array().cloned().unwrap_or_default();
    (o.status.code(), results, stderr(&o))
}

/// The encapsulation example's services, filled from JSON in both forms.
fn services() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/encap/services.json").to_string_lossy().into_owned()
}

#[test]
fn test_objects_validate_and_time_spliced_into_the_batch_loop() {
    let _machine = common::machine();
    let encap = object("xdp_encap.bpf.o");
    let swap = object("xdp_swap.bpf.o");
    let tc = object("tc_ttl.bpf.o");
    let map = format!("services={}", services());
    for (args, verdict) in [
        (vec![swap.as_str(), "--expect", "XDP_TX"], "XDP_TX"),
        (
            vec![
                encap.as_str(),
                "--map",
                &map,
                "--packet",
                "eth/ipv4(dst=10.0.0.10)/tcp(dport=80)/payload(32)",
                "--expect",
                "XDP_TX",
            ],
            "XDP_TX",
        ),
        (vec![tc.as_str(), "--packet", "eth/ipv4(ttl=9)/udp/payload(30)", "--expect", "TC_ACT_OK"], "TC_ACT_OK"),
    ] {
        let (code, results, err) = run_json(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let r = &results[0];
        assert_eq!(r["verdict"], verdict, "{r}");
        assert_eq!(r["timing"]["mode"], "in-bpf", "{args:?}: {}", r["timing"]);
        let m = &r["figure"];
        assert_eq!(m["samples_ns"].as_array().unwrap().len(), 5);
        let (p50, overhead) =
            (m["summary"]["median"].as_f64().unwrap(), m["overhead"]["summary"]["median"].as_f64().unwrap());
        assert!(p50 > 0.0 && overhead > 0.0, "{m}");
        // The record names the user's own program, with the verifier's figures.
        assert!(r["program"]["verifier"]["processed_insns"].as_u64().unwrap() > 0, "{}", r["program"]);
        assert!(
            r["checks"].as_array().unwrap().iter().any(|c| c.as_str().unwrap().contains("spliced into the batch loop")),
            "{r}"
        );
    }
}

#[test]
fn a_tc_programs_field_writes_are_put_back_before_every_iteration() {
    let _machine = common::machine();
    // tc_fields returns TC_ACT_OK only from the case's fields; the driver puts
    // back those the program writes (found in its instructions), or the
    // spliced program's last iteration returns TC_ACT_SHOT and the case is
    // timed per call instead.
    let tc = object("tc_fields.bpf.o");
    for body in ["inline", "call"] {
        let (code, results, err) = run_json(&[tc.as_str(), "--expect", "TC_ACT_OK", "--body", body]);
        assert_eq!(code, Some(0), "{body}: {err}");
        let r = &results[0];
        assert_eq!(r["verdict"], "TC_ACT_OK", "{r}");
        assert_eq!((r["timing"]["mode"].as_str(), r["timing"]["body"].as_str()), (Some("in-bpf"), Some(body)), "{r}");
    }
}

#[test]
fn chains_declared_in_their_prog_array_run_whole_and_are_timed_in_bpf_or_per_call() {
    let _machine = common::machine();
    // The object fills its prog array itself; the chain's programs load with
    // the program asked for. On a raw Ethernet frame, payload byte 28 is the
    // one chain_mid and chain_deep count in.
    let chain = object("xdp_chain.bpf.o");
    let frame = "eth(type=0x88b5)/payload(46)";
    let with_count = |src: &str, dst: &str, count: &str| {
        format!("eth(src={src},dst={dst},type=0x88b5)/payload(hex={}{count}{})", "00".repeat(28), "00".repeat(17))
    };
    let (a, b) = ("02:00:00:00:00:01", "02:00:00:00:00:02");
    for (program, out, tail_calls) in [
        // Two programs: only chain_tx swaps the addresses. Entered from the
        // chain loop by a tail call: 2 tail calls per pass, 15 passes per run.
        ("chain_entry", with_count(b, a, "00"), Some(2)),
        // Three: chain_mid counts once, then chain_tx swaps.
        ("chain_three", with_count(b, a, "01"), Some(3)),
        // One program calling itself until the kernel refuses: 1 + 33 tail
        // calls; no loop can hold it (the loop's own tail call would leave
        // it one fewer), so per call, saying why.
        ("chain_deep", with_count(a, b, "22"), None),
    ] {
        let args =
            [chain.as_str(), "--program", program, "--packet", frame, "--expect", "XDP_TX", "--expect-packet", &out];
        let (code, results, err) = run_json(&args);
        assert_eq!(code, Some(0), "{program}: {err}");
        let r = &results[0];
        assert_eq!(r["verdict"], "XDP_TX", "{r}");
        let timing = &r["timing"];
        match tail_calls {
            Some(n) => {
                assert_eq!((timing["mode"].as_str(), timing["tail_calls"].as_u64()), (Some("chain"), Some(n)), "{r}");
                assert_eq!(timing["per_run"].as_u64(), Some(33 / n - 1), "{timing}");
                // The timed passes are the validated path: each run's last pass is checked.
                assert!(r["checks"].to_string().contains("the chain's checked pass of every run matched"), "{r}");
            }
            None => {
                assert_eq!(timing["mode"], "per-call", "{timing}");
                assert!(timing["reason"].as_str().unwrap().contains("33 tail calls or more per packet"), "{timing}");
            }
        }
        assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Forced per call, the chain runs whole from its entry as well.
    let (code, results, err) = run_json(&[chain.as_str(), "--program", "chain_three", "--per-call"]);
    assert_eq!((code, results[0]["timing"]["mode"].as_str()), (Some(0), Some("per-call")), "{err}");
    // The output checked is the chain's: expecting the entry's own verdict fails.
    let (code, results, err) = run_json(&[chain.as_str(), "--program", "chain_entry", "--expect", "XDP_PASS"]);
    assert_eq!(code, Some(1), "{err}");
    let error = results[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("verdict XDP_TX, expected XDP_PASS"), "{}", results[0]);
    remove_failure_pcap("xdp_chain", "chain_entry");
}

/// The capture a failed validation writes for the user, removed once the test has seen the failure.
fn remove_failure_pcap(object: &str, case: &str) {
    let _ = std::fs::remove_file(std::env::temp_dir().join(format!("bpfbench-{object}-{case}-mismatch.pcap")));
}

#[test]
fn socket_filters_cgroup_skb_flow_dissectors_sk_lookup_and_netfilter_programs_validate_and_are_timed_per_call() {
    let _machine = common::machine();
    let sock = object("sock_udp_head.bpf.o");
    let cgroup = object("cgroup_allow_http.bpf.o");
    let flow = object("flow_ipv4.bpf.o");
    let lookup = object("lookup_no_ssh.bpf.o");
    let nf = object("nf_small_v4.bpf.o");
    for (program, packet, expect, verdict) in [
        // A socket filter returns the bytes to keep: 64 of a UDP datagram, none of the rest.
        (&sock, "eth/ipv4/udp/payload(100)", "64", "64 (keep up to 64 bytes)"),
        (&sock, "eth/ipv4/tcp/payload(100)", "0", "0 (drop)"),
        // cgroup_skb allows (1) or denies (0): TCP to port 80 only.
        (&cgroup, "eth/ipv4/tcp(dport=80)/payload(20)", "allow", "ALLOW"),
        (&cgroup, "eth/ipv6/tcp(dport=80)/payload(20)", "DENY", "DENY"),
        (&cgroup, "eth/ipv4/tcp(dport=22)/payload(20)", "0", "DENY"),
        // A flow dissector's output is its flow keys: BPF_OK for IPv4, BPF_DROP for the rest.
        (&flow, "eth/ipv4/tcp(dport=80)/payload(20)", "BPF_OK", "BPF_OK"),
        (&flow, "eth(type=0x0806)/payload(46)", "BPF_DROP", "BPF_DROP"),
        // An sk_lookup program is asked about each packet's flow: TCP to port 22 refused.
        (&lookup, "eth/ipv4/tcp(dport=22)/payload(20)", "SK_DROP", "SK_DROP"),
        (&lookup, "eth/ipv6/tcp(dport=22)/payload(20)", "SK_DROP", "SK_DROP"),
        (&lookup, "eth/ipv4/tcp(dport=80)/payload(20)", "SK_PASS", "SK_PASS"),
        (&lookup, "eth/ipv4/udp(dport=22)/payload(20)", "SK_PASS", "SK_PASS"),
        // A netfilter program gets the packet and its hook's state (the family of its IP version).
        (&nf, "eth/ipv4/udp/payload(18)", "NF_ACCEPT", "NF_ACCEPT"),
        (&nf, "eth/ipv4/udp/payload(200)", "NF_DROP", "NF_DROP"),
        (&nf, "eth/ipv6/udp/payload(18)", "NF_DROP", "NF_DROP"),
    ] {
        let (code, results, err) = run_json(&[program.as_str(), "--packet", packet, "--expect", expect]);
        assert_eq!(code, Some(0), "{program} {packet}: {err}");
        let r = &results[0];
        assert_eq!(r["verdict"], verdict, "{r}");
        assert_eq!(r["timing"]["mode"], "per-call", "{r}");
        assert!(r["timing"]["reason"].as_str().unwrap().starts_with("no batch loop runs"), "{r}");
        assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{r}");
    }
    let o = bpfbench(&["run", lookup.as_str(), "--packet", "eth(type=0x0806)/payload(28)", "--no-store"]);
    assert!(stderr(&o).contains("an sk_lookup program is asked about a TCP or UDP flow"), "{}", stderr(&o));
    let o = bpfbench(&["run", nf.as_str(), "--expect-packet", "eth/ipv4/udp/payload(18)", "--no-store"]);
    assert!(stderr(&o).contains("whose test run gives no packet back"), "{}", stderr(&o));
    let o = bpfbench(&["run", flow.as_str(), "--expect-packet", "eth/ipv4/udp/payload(18)", "--no-store"]);
    assert!(stderr(&o).contains("whose output is its flow keys, not a packet"), "{}", stderr(&o));
    // A wrong expectation fails naming the verdicts.
    let (code, results, err) =
        run_json(&[cgroup.as_str(), "--packet", "eth/ipv4/tcp(dport=22)/payload(20)", "--expect", "ALLOW"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(results[0]["error"].as_str().unwrap().contains("verdict DENY, expected ALLOW"), "{}", results[0]);
    remove_failure_pcap("cgroup_allow_http", "cgroup_allow_http");
    // Another type's verdict: one line before anything is loaded.
    let o = bpfbench(&["run", cgroup.as_str(), "--expect", "XDP_PASS", "--no-store"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("--expect XDP_PASS is a verdict of another program type") && err.trim().lines().count() == 1,
        "{err}"
    );
}

#[test]
fn skb_fields_from_the_command_line_and_the_spec_file_reach_every_run() {
    let _machine = common::machine();
    let tc = object("tc_mark_cb.bpf.o");
    // Dropped only when both fields are set, in validation and in the timed loop.
    for (skb, verdict) in [
        (Some(r#"{"mark": 7, "cb": [42]}"#), "TC_ACT_SHOT"),
        (Some(r#"{"mark": 7}"#), "TC_ACT_OK"),
        (None, "TC_ACT_OK"),
    ] {
        let mut args = vec![tc.as_str(), "--expect", verdict];
        if let Some(skb) = skb {
            args.extend(["--skb", skb]);
        }
        let (code, results, err) = run_json(&args);
        assert_eq!(code, Some(0), "{skb:?}: {err}");
        let r = &results[0];
        assert_eq!((r["verdict"].as_str(), r["timing"]["mode"].as_str()), (Some(verdict), Some("in-bpf")), "{r}");
        assert_eq!(r["notes"].to_string().contains("context: __sk_buff with"), skb.is_some(), "{r}");
    }
    // The same from a spec file's case.
    let dir = temp_dir("skb-spec");
    let spec = dir.join("mark.toml");
    std::fs::write(
        &spec,
        format!("object = \"{tc}\"\n[[case]]\nname = \"marked\"\nskb = {{ mark = 7, cb = [42] }}\nexpect = \"TC_ACT_SHOT\"\n"),
    )
    .unwrap();
    let (code, results, err) = run_json(&[spec.to_str().unwrap()]);
    assert_eq!((code, results[0]["verdict"].as_str()), (Some(0), Some("TC_ACT_SHOT")), "{err}");
    // A field __sk_buff lacks, one the kernel does not let a test set, and an XDP program: one line each.
    let swap = object("xdp_swap.bpf.o");
    for (target, skb, says) in [
        (&tc, r#"{"nosuch": 1}"#, "no field 'nosuch'"),
        (&tc, r#"{"len": 5}"#, "refused the context"),
        (&swap, r#"{"mark": 1}"#, "skb fields are for tc, socket filter and cgroup_skb programs"),
    ] {
        let o = bpfbench(&["run", target.as_str(), "--skb", skb, "--no-store"]);
        // Refused before loading (stderr), or as the case's validation failure (stdout).
        let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
        assert_eq!(o.status.code(), Some(1), "{skb}: {out}");
        assert!(out.contains(says), "{skb}: {out}");
    }
}

#[test]
fn tc_chains_are_timed_in_bpf_each_pass_with_the_context_put_back() {
    let _machine = common::machine();
    let chain = object("tc_chain.bpf.o");
    // entry -> mark drops; a packet that came marked 9 gets TC_ACT_PIPE, and
    // only if every pass sees the mark again (the chain overwrites it).
    for (skb, verdict) in [(None, "TC_ACT_SHOT"), (Some(r#"{"mark": 9}"#), "TC_ACT_PIPE")] {
        let mut args = vec![chain.as_str(), "--program", "tc_chain_entry", "--expect", verdict];
        if let Some(skb) = skb {
            args.extend(["--skb", skb]);
        }
        let (code, results, err) = run_json(&args);
        assert_eq!(code, Some(0), "{skb:?}: {err}");
        let t = &results[0]["timing"];
        assert_eq!(
            (t["mode"].as_str(), t["tail_calls"].as_u64(), t["per_run"].as_u64()),
            (Some("chain"), Some(2), Some(15)),
            "{t}"
        );
    }
    // count -> mark: the payload byte counted once, the packet put back before every pass.
    let counted = format!("eth(type=0x88b5)/payload(hex={}01{})", "00".repeat(28), "00".repeat(17));
    let (code, results, err) = run_json(&[
        chain.as_str(),
        "--program",
        "tc_chain_count",
        "--packet",
        "eth(type=0x88b5)/payload(46)",
        "--expect",
        "TC_ACT_SHOT",
        "--expect-packet",
        &counted,
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(results[0]["timing"]["mode"], "chain", "{}", results[0]);
}

#[test]
fn packets_that_differ_past_64_bytes_are_put_back_in_the_batch_loop() {
    let _machine = common::machine();
    // Two packets differing at byte 142: the loop writes back 144 bytes per
    // iteration (each group of the copy's cases above 64 bytes once copied
    // 64 words more than it checked, and the verifier refused the loop).
    let pass = object("xdp_pass.bpf.o");
    let packet = |b: &str| format!("eth/ipv4/udp/payload(hex={}{b}{})", "00".repeat(100), "00".repeat(5));
    let (a, b) = (packet("01"), packet("02"));
    let (code, results, err) = run_json(&[pass.as_str(), "--packet", &a, "--packet", &b]);
    assert_eq!(code, Some(0), "{err}");
    let r = &results[0];
    assert_eq!(r["timing"]["mode"], "in-bpf", "{r}");
    assert!(r["notes"].to_string().contains("144 bytes written back per iteration"), "{r}");
}

#[test]
fn frames_of_any_length_are_written_back_whole_in_the_batch_loop() {
    let _machine = common::machine();
    // xdp_trailer flips the frame's last byte: the loop writes the whole
    // frame back, a TCP ACK's 54 bytes, a SYN's 60, 61, 90 as well as 64
    // (it wrote whole words only, and timed these per call).
    let trailer = object("xdp_trailer.bpf.o");
    for (len, packet) in [
        (14, "eth"),
        (54, "eth/ipv4/tcp"),
        (60, "eth/ipv4/tcp/payload(6)"),
        (61, "eth/ipv4/tcp/payload(7)"),
        (64, "eth/ipv4/tcp/payload(10)"),
        (90, "eth/ipv4/udp/payload(48)"),
    ] {
        for runtime in ["kernel", "user"] {
            let (code, results, err) =
                run_json(&[trailer.as_str(), "--packet", packet, "--expect", "XDP_TX", "--runtime", runtime]);
            assert_eq!(code, Some(0), "{len} bytes, {runtime}: {err}");
            let r = &results[0];
            assert_eq!(r["timing"]["mode"], "in-bpf", "{len} bytes, {runtime}: {r}");
            let notes = r["notes"].to_string();
            assert!(notes.contains(&format!("{len} bytes written back per iteration")), "{len}: {notes}");
            assert!(r["checks"].to_string().contains("the last iteration of every checked batch matched"), "{r}");
        }
    }
}

#[test]
fn legacy_map_definitions_are_read_as_btf_defined_maps_in_both_runtimes() {
    let _machine = common::machine();
    let dir = temp_dir("legacy-maps");
    // As clang builds it (its BTF has a 'maps' DATASEC), and with no BTF at
    // all (older toolchains): both are read, the file never changed.
    let built = object("xdp_legacy_maps.bpf.o");
    let bare = dir.join("xdp_legacy_maps_no_btf.bpf.o");
    let stripped = std::process::Command::new("llvm-objcopy-19")
        .args(["--remove-section=.BTF", "--remove-section=.BTF.ext", &built, bare.to_str().unwrap()])
        .status()
        .expect("running llvm-objcopy-19");
    assert!(stripped.success());
    // The first map holds the verdict (none: XDP_PASS); filled, XDP_DROP.
    let drop = dir.join("drop.json");
    std::fs::write(&drop, r#"[{"key": "00000000", "value": "01000000"}]"#).unwrap();
    let verdicts = format!("verdicts={}", drop.display());
    for file in [built.as_str(), bare.to_str().unwrap()] {
        let before = std::fs::read(file).unwrap();
        for runtime in ["kernel", "user"] {
            let (code, results, err) = run_json(&[file, "--runtime", runtime, "--expect", "XDP_PASS"]);
            assert_eq!(code, Some(0), "{file} {runtime}: {err}");
            let r = &results[0];
            assert_eq!(r["verdict"], "XDP_PASS", "{r}");
            assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{r}");
            assert!(r["notes"].to_string().contains("maps verdicts, lengths: legacy definitions"), "{}", r["notes"]);
            let (code, results, err) =
                run_json(&[file, "--runtime", runtime, "--map", &verdicts, "--expect", "XDP_DROP"]);
            assert_eq!(code, Some(0), "{file} {runtime}: {err}");
            assert_eq!(results[0]["verdict"], "XDP_DROP", "{}", results[0]);
        }
        assert_eq!(std::fs::read(file).unwrap(), before, "{file} was changed");
    }
}

#[test]
fn globals_set_before_load_choose_the_programs_path_in_both_runtimes() {
    let _machine = common::machine();
    // xdp_config is configured by `volatile const` globals, as libbpf
    // programs are: the same packet takes another path for other values.
    let config = object("xdp_config.bpf.o");
    let packet = "eth(dst=02:00:00:00:00:02)/ipv4(dst=10.0.0.10)/tcp(dport=80)";
    let service = ["--global", "service_ip=10.0.0.10", "--global", "service_port=80"];
    let next_hop = "--global=next_hop=02:00:00:00:00:99";
    let forwarded = "eth(src=02:00:00:00:00:02,dst=02:00:00:00:00:99)/ipv4(dst=10.0.0.10)/tcp(dport=80)";
    for runtime in ["kernel", "user"] {
        let mut args = vec![config.as_str(), "--packet", packet, "--runtime", runtime, next_hop];
        args.extend(service);
        // To the service: sent on to the next hop, its MAC from a global.
        let tx = [&args[..], &["--expect", "XDP_TX", "--expect-packet", forwarded]].concat();
        let (code, results, err) = run_json(&tx);
        assert_eq!(code, Some(0), "{runtime}: {err}");
        let r = &results[0];
        assert_eq!((r["verdict"].as_str(), r["timing"]["mode"].as_str()), (Some("XDP_TX"), Some("in-bpf")), "{r}");
        for note in ["global service_ip=10.0.0.10: set before load", "global next_hop=02:00:00:00:00:99"] {
            assert!(r["notes"].to_string().contains(note), "{note}: {}", r["notes"]);
        }
        // Another port: not the service, so passed; with drop_others, dropped.
        let other = [&args[..], &["--global", "service_port=443", "--expect", "XDP_PASS"]].concat();
        let (code, _, err) = run_json(&other);
        assert_eq!(code, Some(0), "{runtime}: {err}");
        let dropped =
            [&args[..], &["--global", "service_port=443", "--global", "drop_others=true", "--expect", "XDP_DROP"]]
                .concat();
        let (code, _, err) = run_json(&dropped);
        assert_eq!(code, Some(0), "{runtime}: {err}");
        // One field of a struct; the other keeps its compiled value (1500).
        let short_lived = [&args[..], &["--global", r#"limits={"ttl_min": 65}"#, "--expect", "XDP_DROP"]].concat();
        let (code, _, err) = run_json(&short_lived);
        assert_eq!(code, Some(0), "{runtime}: {err}");
    }
    // A spec file's [globals], .data and .bss ones too.
    let dir = temp_dir("globals");
    let spec = dir.join("config.toml");
    std::fs::write(
        &spec,
        format!(
            "object = \"{config}\"\n[globals]\nservice_ip = \"10.0.0.10\"\nservice_port = 80\nforwarded = 7\nothers = 9\n\
             [[case]]\nname = \"to-service\"\npacket = \"{packet}\"\nexpect = \"XDP_TX\"\n"
        ),
    )
    .unwrap();
    let (code, results, err) = run_json(&[spec.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    assert!(results[0]["notes"].to_string().contains("global others=9: set before load"), "{}", results[0]["notes"]);
    // Wrong names and values: one line naming the variable.
    for (extra, needle) in [
        ("--global=no_such=1", "has no global variable 'no_such'; its globals are"),
        ("--global=service_port=70000", "service_port=70000: 70000 does not fit in 2 bytes"),
        ("--global=service_ip=10.0.0.300", "service_ip=10.0.0.300: '10.0.0.300' is neither an address"),
        ("--global=limits={\"ttl\": 1}", "no field 'ttl'; the fields are max_len, ttl_min"),
        ("--global=drop_others", "--global expects NAME=VALUE"),
    ] {
        common::assert_one_line_error(&["run", config.as_str(), "--packet", packet, "--no-store", extra], needle);
    }
    common::assert_one_line_error(
        &["run", spec.to_str().unwrap(), "--global", "service_port=1", "--no-store"],
        "--global are set in",
    );
}

#[test]
fn a_field_from_the_clock_is_left_out_of_every_comparison_with_ignore() {
    let _machine = common::machine();
    // xdp_stamp writes the clock into the TCP sequence number: without
    // --ignore its two reference runs differ; with it, validation and every
    // batch's check compare the rest, and the table says what was left out.
    let stamp = object("xdp_stamp.bpf.o");
    let packet = "eth/ipv4/tcp(seq=1)";
    let (code, results, err) = run_json(&[stamp.as_str(), "--packet", packet]);
    assert_eq!(code, Some(1), "{err}");
    let error = results[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("TCP sequence number") && error.contains("--ignore"), "{error}");
    // The cure with the symptom: the flags that accept exactly these differences.
    assert!(
        error.contains("they differ only in fields a clock or a random draw fills: --ignore tcp.seq accepts them"),
        "{error}"
    );
    for runtime in ["kernel", "user"] {
        // The expected packet's own sequence number is left out too, and
        // the checksum over it (the program leaves it as it was).
        let args =
            [stamp.as_str(), "--packet", packet, "--runtime", runtime, "--ignore", "tcp.seq", "--ignore", "tcp.csum"];
        let expect = ["--expect", "XDP_TX", "--expect-packet", "eth/ipv4/tcp(seq=99)"];
        let (code, results, err) = run_json(&[&args[..], &expect].concat());
        assert_eq!(code, Some(0), "{runtime}: {err}");
        let r = &results[0];
        assert_eq!(r["timing"]["mode"], "in-bpf", "{runtime}: {r}");
        assert_eq!(r["outcome"]["expected"]["ignored"], "tcp.seq, tcp.csum", "{r}");
        let checks = r["checks"].to_string();
        assert!(checks.contains("byte-exact as expected outside tcp.seq, tcp.csum"), "{checks}");
        assert!(checks.contains("the last iteration of every checked batch matched"), "{checks}");
        // Only that field: another difference still fails.
        let (code, results, err) = run_json(&[&args[..], &["--expect-packet", "eth/ipv4(ttl=7)/tcp(seq=99)"]].concat());
        assert_eq!(code, Some(1), "{err}");
        let error = results[0]["error"].as_str().unwrap_or_default();
        assert!(error.contains("IPv4 TTL"), "{error}");
        remove_failure_pcap("xdp_stamp", "xdp_stamp");
    }
    // The table's expected column says it; the verdict alone with `packet`.
    let o = bpfbench(&[
        "run",
        &stamp,
        "--packet",
        packet,
        "--ignore",
        "packet",
        "--expect",
        "XDP_TX",
        "--samples",
        "3",
        "--no-store",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("verdict (ignored: packet)"), "{}", stdout(&o));
    common::assert_one_line_error(
        &["run", &stamp, "--packet", packet, "--ignore", "tcp.sequence", "--no-store"],
        "--ignore tcp.sequence: not a field, a byte range (38..42) or 'packet'; the fields are",
    );
}

#[test]
fn tc_programs_that_resize_the_packet_are_timed_or_refused_before_timing_never_failing_mid_run() {
    let _machine = common::machine();
    // A decapsulation shrinking at the front ran 64 checked iterations and
    // then failed mid-run ("measurement failed ... TC_ACT_SHOT"): the
    // loop's tail restore walks its data, and its helper fails near 64 KiB.
    let resize = object("tc_resize.bpf.o");
    for (program, packet, verdict) in [
        ("tc_decap", "eth/ipv4/ipv4/tcp/payload(10)", "TC_ACT_REDIRECT"),
        ("tc_encap", "eth/ipv4/tcp/payload(10)", "TC_ACT_REDIRECT"),
        ("tc_vlan_push", "eth/ipv4/tcp/payload(10)", "TC_ACT_OK"),
        ("tc_vlan_pop", "eth/vlan(id=42)/ipv4/tcp/payload(10)", "TC_ACT_REDIRECT"),
    ] {
        let (code, results, err) =
            run_json(&[resize.as_str(), "--program", program, "--packet", packet, "--expect", verdict]);
        assert_eq!(code, Some(0), "{program}: {err}");
        let r = &results[0];
        assert!(r["error"].is_null() && r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{program}: {r}");
        match (program, r["timing"]["mode"].as_str()) {
            // The decapsulation's length goes back at the MAC header, where it took it.
            ("tc_decap", mode) => {
                assert_eq!(mode, Some("in-bpf"), "{r}");
                let notes = r["notes"].to_string();
                assert!(
                    notes.contains("puts it back after every iteration (bpf_skb_adjust_room at the MAC header)"),
                    "{notes}"
                );
            }
            // The encapsulation marks the skb encapsulated, which no loop can undo; the VLAN tag is the skb's.
            (_, Some("per-call")) => {
                let reason = r["timing"]["reason"].as_str().unwrap();
                assert!(reason.starts_with("in a check batch of"), "{program}: {reason}");
            }
            (_, other) => panic!("{program}: timed {other:?}"),
        }
    }
}

/// One program per helper that changes a packet's size (resize_helpers.bpf.c;
/// tc_resize above has adjust_room and the VLAN helpers, xdp_meta below
/// adjust_meta): each validates with the sizes it makes and is timed in
/// BPF, in both runtimes, or refused before timing saying why.
#[test]
fn each_helper_that_resizes_a_packet_is_timed_in_bpf_or_refused_before_timing() {
    let _machine = common::machine();
    let object = object("resize_helpers.bpf.o");
    let packet = "eth/ipv4/udp/payload(40)";
    for (program, verdict, out) in [
        ("xdp_grow_head", "XDP_TX", 98),
        ("xdp_shrink_head", "XDP_PASS", 68),
        ("xdp_grow_tail", "XDP_TX", 98),
        ("xdp_shrink_tail", "XDP_TX", 66),
        ("tc_grow_tail", "TC_ACT_REDIRECT", 98),
        ("tc_shrink_tail", "TC_ACT_REDIRECT", 66),
        ("tc_change_head", "TC_ACT_REDIRECT", 98),
    ] {
        for runtime in ["kernel", "user"] {
            let args =
                [object.as_str(), "--program", program, "--packet", packet, "--expect", verdict, "--runtime", runtime];
            let (_, results, err) = run_json(&args);
            let r = results.first().unwrap_or_else(|| panic!("{program} {runtime}: {err}"));
            if program == "tc_change_head" && runtime == "user" {
                // The runtime lacks the helper: N/A there, naming it.
                let why = r["unavailable"].as_str().unwrap_or_default();
                assert!(
                    r["error"].is_null() && why.contains("calls helper 43 (bpf_skb_change_head)"),
                    "{program}: {r}"
                );
                continue;
            }
            assert!(r["error"].is_null(), "{program} {runtime}: {r}");
            assert_eq!(r["outcome"]["bytes"]["output"], json!([out, out]), "{program} {runtime}: {r}");
            match program {
                // Neither the tail's nor the MAC header's restore puts a grown head back.
                "tc_change_head" => {
                    assert_eq!(r["timing"]["mode"], "per-call", "{program}: {r}");
                    let reason = r["timing"]["reason"].as_str().unwrap();
                    assert!(reason.starts_with("in a check batch of") && reason.contains("before timing"), "{reason}");
                }
                _ => assert_eq!(r["timing"]["mode"], "in-bpf", "{program} {runtime}: {r}"),
            }
        }
    }
}

#[test]
fn metadata_a_program_leaves_is_dropped_between_iterations() {
    let _machine = common::machine();
    // xdp_meta aborts unless it starts without metadata, and leaves 4 bytes:
    // timed in the loop only if the loop drops them after every iteration.
    // The userspace runtime keeps metadata as the kernel does (its output
    // starts with it, as the kernel's test run's).
    let meta = object("xdp_meta.bpf.o");
    for runtime in ["kernel", "user"] {
        let (code, results, err) = run_json(&[meta.as_str(), "--expect", "XDP_PASS", "--runtime", runtime]);
        assert_eq!(code, Some(0), "{runtime}: {err}");
        let r = &results[0];
        assert_eq!(r["timing"]["mode"], "in-bpf", "{runtime}: {r}");
        assert!(r["checks"].to_string().contains("the last iteration of every checked batch matched"), "{r}");
    }
}

#[test]
fn programs_in_sections_only_their_loader_knows_take_a_type_from_the_command_line() {
    let _machine = common::machine();
    let own = object("xdp_own_section.bpf.o");
    let o = bpfbench(&["run", &own, "--no-store"]);
    let error = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{error}");
    assert!(
        error.contains("(section xdp/entry)") && error.contains("--program-type TYPE, one of xdp, sched_cls"),
        "{error}"
    );
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    let (code, results, err) = run_json(&[own.as_str(), "--program-type", "xdp", "--expect", "XDP_DROP"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(results[0]["timing"]["mode"], "in-bpf", "{}", results[0]);
}

#[test]
fn raw_tracepoint_and_syscall_programs_take_their_context_and_are_timed() {
    let _machine = common::machine();
    // Their test runs report no time. A raw tracepoint is entered from the
    // chain loop (timed in BPF); a syscall program (sleepable: no prog
    // array may hold it) is timed per call by the host, and says so.
    let raw_tp = object("raw_tp_args.bpf.o");
    let syscall = object("syscall_ctx.bpf.o");
    for (program, tail_calls) in [("raw_tp_sum", 1), ("raw_tp_chain", 2)] {
        let (code, results, err) =
            run_json(&[raw_tp.as_str(), "--program", program, "--ctx", "[1, 2, 3]", "--expect", "6"]);
        assert_eq!(code, Some(0), "{program}: {err}");
        let t = &results[0]["timing"];
        assert_eq!((t["mode"].as_str(), t["tail_calls"].as_u64()), (Some("chain"), Some(tail_calls)), "{t}");
        assert!(results[0]["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{}", results[0]);
    }
    // A wrong expectation names the verdict the program gave.
    let (code, results, _) =
        run_json(&[raw_tp.as_str(), "--program", "raw_tp_sum", "--ctx", "[1, 2, 3]", "--expect", "7"]);
    assert_eq!(code, Some(1));
    assert!(results[0]["error"].as_str().unwrap_or_default().contains("verdict 6, expected 7"), "{}", results[0]);
    // The syscall program's context comes back written (product 42), from a spec file too.
    let dir = temp_dir("syscall-spec");
    let spec = dir.join("syscall.toml");
    std::fs::write(
        &spec,
        format!("object = \"{syscall}\"\n[[case]]\nname = \"six-by-seven\"\nctx = [6, 7, 0]\nexpect = \"13\"\n"),
    )
    .unwrap();
    let (code, results, err) = run_json(&[spec.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let r = &results[0];
    assert_eq!(
        (r["timing"]["mode"].as_str(), r["timing"]["host_timed"].as_bool()),
        (Some("per-call"), Some(true)),
        "{r}"
    );
    assert!(r["notes"].to_string().contains("timed by the host around its system call"), "{r}");
    // Bad input: one line each.
    let xdp = object("xdp_pass.bpf.o");
    let ctx_for_xdp = ["run", xdp.as_str(), "--ctx", "[1]", "--no-store"];
    let packet_for_raw_tp =
        ["run", raw_tp.as_str(), "--program", "raw_tp_sum", "--packet", "eth/ipv4/udp", "--no-store"];
    let thirteen = format!("[{}]", vec!["1"; 13].join(", "));
    let too_many = ["run", raw_tp.as_str(), "--program", "raw_tp_sum", "--ctx", thirteen.as_str(), "--no-store"];
    for (args, needle) in [
        (&ctx_for_xdp[..], "--ctx is for raw tracepoint and syscall programs"),
        (&packet_for_raw_tp[..], "takes a context and no packet: drop --packet/--pcap and give --ctx"),
        (&too_many[..], "context holds at most 96 bytes (12 u64 arguments)"),
    ] {
        let o = bpfbench(args);
        let error = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {error}");
        assert!(error.contains(needle) && error.trim().lines().count() == 1, "{args:?}: {error}");
    }
}

#[test]
fn chains_run_in_the_userspace_runtime_with_the_kernels_tail_calls() {
    let _machine = common::machine();
    // The same chains through the userspace runtime's tail calls: checked
    // against the kernel's outputs packet by packet, then timed in the same
    // chain loop, which keeps 33 tail calls per run as the kernel does.
    let chain = object("xdp_chain.bpf.o");
    let swap = object("xdp_swap.bpf.o");
    let frame = "eth(type=0x88b5)/payload(46)";
    let fill = format!("open_slots:0=xdp_swap@{swap}");
    for (program, extra) in
        [("chain_entry", vec![]), ("chain_three", vec![]), ("chain_open", vec!["--tail-call", &fill])]
    {
        let mut args =
            vec![chain.as_str(), "--program", program, "--packet", frame, "--runtime", "user", "--expect", "XDP_TX"];
        args.extend(extra);
        let (code, results, err) = run_json(&args);
        assert_eq!(code, Some(0), "{program}: {err}");
        let r = &results[0];
        assert_eq!(r["timing"]["mode"], "chain", "{r}");
        let checks = r["checks"].to_string();
        assert!(
            checks.contains("in the userspace runtime, the chain alone gave the kernel's verdict and output"),
            "{r}"
        );
        assert!(checks.contains("the chain's checked pass of every run matched"), "{r}");
        assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Counted by the interpreter: chain_three's two tail calls per packet,
    // each an operation on its prog array.
    let o = bpfbench(&[
        "run",
        &chain,
        "--program",
        "chain_three",
        "--packet",
        frame,
        "--metric",
        "insns",
        "--no-store",
        "--format",
        "json",
    ]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    let counts = &doc["results"][0]["figure"];
    assert_eq!(
        counts["helpers"]["bpf_tail_call"].as_i64(),
        Some(2 * counts["packets"].as_i64().unwrap()),
        "{}\n{}",
        doc,
        stderr(&o)
    );
    // A chain that reaches the limit runs as far as the kernel's (its
    // count byte says how far; another output would fail first); no loop
    // holds it, and the userspace runtime has no per-call timing: one line.
    let (code, results, _) =
        run_json(&[chain.as_str(), "--program", "chain_deep", "--packet", frame, "--runtime", "user"]);
    assert_eq!(code, Some(1));
    let error = results[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the userspace runtime times chains in the batch loop only") && !error.contains('\n'),
        "{error}"
    );
}

#[test]
fn tc_programs_run_in_the_userspace_runtime_with_the_kernels_context_and_helpers() {
    let _machine = common::machine();
    // Each checked against the kernel's output packet by packet (its
    // __sk_buff read from the kernel for each packet), then timed in the
    // same driver loop; tc_skb_echo writes its whole context into the
    // packet, so any field the userspace runtime gave otherwise shows.
    let (ttl, mark_cb, fields) = (object("tc_ttl.bpf.o"), object("tc_mark_cb.bpf.o"), object("tc_fields.bpf.o"));
    let (echo, nat, chain) = (object("tc_skb_echo.bpf.o"), object("tc_nat.bpf.o"), object("tc_chain.bpf.o"));
    let skb = r#"{"mark": 7, "priority": 3, "cb": [42, 1, 2, 3, 4], "tstamp": 123456789012}"#;
    let udp = "eth/ipv4(dst=10.0.0.10)/udp(dport=53)/payload(102)";
    let tcp = "eth/ipv4(dst=10.0.0.10)/tcp(dport=80)/payload(10)";
    let cases: [(&str, Vec<&str>, &str); 8] = [
        (&ttl, vec!["--packet", "eth/ipv4(ttl=9)/udp/payload(30)"], "TC_ACT_OK"),
        (&mark_cb, vec!["--skb", r#"{"mark": 7, "cb": [42]}"#], "TC_ACT_SHOT"),
        (&fields, vec![], "TC_ACT_OK"),
        (&echo, vec!["--packet", "eth(dst=ff:ff:ff:ff:ff:ff)/ipv4/udp/payload(80)", "--skb", skb], "TC_ACT_OK"),
        // Load, store, both checksums, a trim to 80 bytes, a redirect.
        (&nat, vec!["--program", "tc_nat", "--packet", udp], "TC_ACT_REDIRECT"),
        (&nat, vec!["--program", "tc_nat", "--packet", tcp], "TC_ACT_REDIRECT"),
        (&nat, vec!["--program", "tc_nat_diff", "--packet", tcp], "TC_ACT_OK"),
        // A tc chain through the userspace runtime's tail calls.
        (&chain, vec!["--program", "tc_chain_entry", "--skb", r#"{"mark": 9}"#], "TC_ACT_PIPE"),
    ];
    for (object, extra, verdict) in cases {
        let mut args = vec![object, "--runtime", "user", "--expect", verdict];
        args.extend(extra.iter().copied());
        let (code, results, err) = run_json(&args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        let r = &results[0];
        let checks = r["checks"].to_string();
        assert!(
            checks.contains("in the userspace runtime, the program alone gave the kernel's verdict and output")
                || checks.contains("in the userspace runtime, the chain alone gave the kernel's verdict and output"),
            "{args:?}: {r}"
        );
        assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Counted by the interpreter, with tc's helpers by name.
    let o = bpfbench(&[
        "run",
        &nat,
        "--program",
        "tc_nat",
        "--packet",
        udp,
        "--metric",
        "insns",
        "--no-store",
        "--format",
        "json",
    ]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    let helpers = &doc["results"][0]["figure"]["helpers"];
    for h in [
        "bpf_skb_load_bytes",
        "bpf_skb_store_bytes",
        "bpf_l3_csum_replace",
        "bpf_l4_csum_replace",
        "bpf_skb_change_tail",
        "bpf_redirect",
    ] {
        assert!(helpers[h].as_i64().unwrap_or(0) > 0, "{h}: {doc}\n{}", stderr(&o));
    }
    // A helper the runtime lacks, per path: the case whose packet reaches
    // it is N/A, naming it (not a failure: the runtime lacks it); the
    // program still runs the cases that do not.
    let vlan = |packet: &str| run_json(&[&nat, "--program", "tc_vlan", "--runtime", "user", "--packet", packet]);
    let (code, results, err) = vlan("eth/ipv4/udp");
    assert_eq!(code, Some(0), "{err}");
    assert!(results[0]["error"].is_null(), "{}", results[0]);
    let error = results[0]["unavailable"].as_str().unwrap_or_default();
    assert!(
        error.contains("calls helper 18 (bpf_skb_vlan_push), which bpfbench's userspace runtime does not have"),
        "{error}"
    );
    let (code, results, err) = vlan("eth/ipv6/udp");
    assert_eq!(code, Some(0), "{err}");
    let r = &results[0];
    assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{r}");
    assert!(r["notes"].to_string().contains("the userspace runtime lacks helper 18 (bpf_skb_vlan_push)"), "{r}");
}

#[test]
fn prog_array_slots_are_filled_from_the_command_line_and_the_spec_file() {
    let _machine = common::machine();
    let chain = object("xdp_chain.bpf.o");
    let swap = object("xdp_swap.bpf.o");
    // Empty, chain_open's tail call falls through and it passes the packet:
    // validation fails naming the slot, unless it is said to be empty on purpose.
    let (code, results, err) = run_json(&[chain.as_str(), "--program", "chain_open"]);
    assert_eq!(code, Some(1), "{err}");
    let error = results[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("tail-calls slot 0 of prog array 'open_slots', which is empty")
            && error.contains("--tail-call open_slots:0=none"),
        "{}",
        results[0]
    );
    let (code, results, err) =
        run_json(&[chain.as_str(), "--program", "chain_open", "--tail-call", "open_slots:0=none"]);
    assert_eq!((code, results[0]["verdict"].as_str()), (Some(0), Some("XDP_PASS")), "{err}");
    assert!(results[0]["notes"].to_string().contains("slot 0 left empty"), "{}", results[0]);
    // A slot the object fills, emptied: chain_mid's tail call falls through.
    let (code, results, err) =
        run_json(&[chain.as_str(), "--program", "chain_three", "--tail-call", "chain_slots:1=none"]);
    assert_eq!((code, results[0]["verdict"].as_str()), (Some(0), Some("XDP_ABORTED")), "{err}");
    // Filled with a program of the same object, or of another one.
    for fill in ["open_slots:0=chain_tx".to_string(), format!("open_slots:0=xdp_swap@{swap}")] {
        let (code, results, err) = run_json(&[chain.as_str(), "--program", "chain_open", "--tail-call", &fill]);
        assert_eq!(code, Some(0), "{fill}: {err}");
        let r = &results[0];
        assert_eq!(r["verdict"], "XDP_TX", "{fill}: {r}");
        assert_eq!(r["timing"]["mode"], "chain", "{}", r["timing"]);
        let program = fill.split(['=', '@']).nth(1).unwrap();
        let note = format!("prog array open_slots: slot 0 holds {program}");
        assert!(r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().starts_with(&note)), "{r}");
    }
    // The same from a spec file, the object's path relative to it.
    let dir = temp_dir("tail-call-spec");
    std::fs::copy(&swap, dir.join("swap.bpf.o")).unwrap();
    let spec = dir.join("chain.toml");
    std::fs::write(
        &spec,
        format!(
            "object = \"{chain}\"\nprogram = \"chain_open\"\ntail-calls = [\"open_slots:1=chain_tx\", \"open_slots:0=xdp_swap@swap.bpf.o\"]\n[[case]]\nname = \"filled\"\nexpect = \"XDP_TX\"\n"
        ),
    )
    .unwrap();
    let (code, results, err) = run_json(&[spec.to_str().unwrap()]);
    assert_eq!((code, results[0]["verdict"].as_str()), (Some(0), Some("XDP_TX")), "{err}");
    // --map fills a map of the object a slot's program comes from.
    let encap = object("xdp_encap.bpf.o");
    let services = format!("{}/examples/encap/services.json", env!("CARGO_MANIFEST_DIR"));
    let to_service = "eth/ipv4(dst=10.0.0.10)/tcp(dport=80)/payload(32)";
    let fill = format!("open_slots:0=xdp_encap@{encap}");
    let args = ["--program", "chain_open", "--tail-call", &fill, "--packet", to_service];
    let (code, results, err) =
        run_json(&[&[chain.as_str()][..], &args, &["--map", &format!("services={services}")]].concat());
    assert_eq!((code, results[0]["verdict"].as_str()), (Some(0), Some("XDP_TX")), "{err}");
    assert!(results[0]["notes"].to_string().contains("map services of"), "{}", results[0]);
    let o = bpfbench(
        &[&["run", chain.as_str(), "--no-store"][..], &args, &["--map", &format!("nosuch={services}")]].concat(),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("nor the objects of --tail-call have a map 'nosuch'") && err.trim().lines().count() == 1,
        "{err}"
    );
    // Bad slots: one line naming what is wrong.
    for (fill, says) in [
        ("open_slots:7=chain_tx", "prog array 'open_slots' has slots 0 to 1, not 7"),
        ("nomap:0=chain_tx", "has no map 'nomap'; its maps are chain_slots, open_slots"),
        ("open_slots:0=nothere", "names program 'nothere', which"),
        ("open_slots:0", "--tail-call expects MAP:SLOT=PROG, MAP:SLOT=PROG@OBJECT or MAP:SLOT=none"),
        ("open_slots:9=none", "prog array 'open_slots' has slots 0 to 1, not 9"),
    ] {
        let o = bpfbench(&["run", chain.as_str(), "--program", "chain_open", "--tail-call", fill, "--no-store"]);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{fill}: {err}");
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{fill}: {err}");
    }
}

#[test]
fn map_json_in_both_forms_fills_a_btf_typed_map() {
    let _machine = common::machine();
    // Service .10 is written as fields, service .11 as hex bytes; each sends
    // the packet to its own backend, so the kernel's output proves both.
    let encap = object("xdp_encap.bpf.o");
    let map = format!("services={}", services());
    for (dst, backend, mac) in
        [("10.0.0.10", "192.168.1.1", "02:00:00:00:00:99"), ("10.0.0.11", "192.168.1.2", "02:00:00:00:00:9a")]
    {
        let input = format!("eth/ipv4(src=10.0.0.1,dst={dst})/tcp(dport=80)/payload(16)");
        let expect = format!(
            "eth(src=02:00:00:00:00:02,dst={mac})/ipv4(src={dst},dst={backend})/ipv4(src=10.0.0.1,dst={dst})/tcp(dport=80)/payload(16)"
        );
        let (code, results, err) = run_json(&[&encap, "--map", &map, "--packet", &input, "--expect-packet", &expect]);
        assert_eq!(code, Some(0), "{dst}: {err}");
        assert!(
            results[0]["checks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c.as_str().unwrap().contains("byte-exact as expected"))
        );
    }
    // Anonymous unions and structs: their fields are named as in C.
    let dir = temp_dir("anon-json");
    let anon = dir.join("dests.json");
    std::fs::write(&anon, r#"[{"key": {"v4": "10.9.9.9", "family": 4}, "value": {"verdict": 3, "reason": 7}}]"#)
        .unwrap();
    let (code, results, err) = run_json(&[
        &object("xdp_anon.bpf.o"),
        "--map",
        &format!("dests={}", anon.display()),
        "--packet",
        "eth/ipv4(dst=10.9.9.9)/udp/payload(18)",
        "--expect",
        "XDP_TX",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(results[0]["verdict"], "XDP_TX");
    std::fs::write(&anon, r#"[{"key": {"v5": "10.9.9.9"}, "value": "0300070000000000"}]"#).unwrap();
    let (_, _, err) = run_json(&[&object("xdp_anon.bpf.o"), "--map", &format!("dests={}", anon.display())]);
    assert!(err.contains("no field 'v5'; the fields are v4, v6, family, pad"), "{err}");
    // A field that the value's struct does not have is named.
    let dir = temp_dir("bad-json");
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"key": {"addr": "10.0.0.10", "port": 80, "proto": 6}, "value": {"addr": "1.2.3.4", "weight": 3}}]"#,
    )
    .unwrap();
    let (code, _, err) = run_json(&[&encap, "--map", &format!("services={}", bad.display())]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("entry 0: value: no field 'weight'; the fields are addr, mac, flags, meta")
            && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn a_wrong_expectation_fails_with_a_field_named_diff_and_a_pcap_wireshark_reads() {
    let _machine = common::machine();
    let tc = object("tc_ttl.bpf.o");
    let o = bpfbench(&[
        "run",
        &tc,
        "--packet",
        "eth/ipv4(ttl=64)/tcp/payload(20)",
        "--expect-packet",
        "eth/ipv4(ttl=62)/tcp/payload(20)",
        "--samples",
        "3",
        "--no-store",
    ]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("IPv4 TTL (bytes 22..23): expected 0x3e, got 0x3f"), "{out}");
    assert!(out.contains("IPv4 header checksum (bytes 24..26)"), "{out}");
    let path = out
        .lines()
        .find_map(|l| l.split("packets written to ").nth(1))
        .map(|p| PathBuf::from(p.trim_end_matches(')')))
        .expect("a pcap path");
    let packets = bpfbench::packet::pcap::read(&path).unwrap();
    assert_eq!(packets.len(), 2, "expected, then actual");
    assert_eq!((packets[0][22], packets[1][22]), (62, 63));
    // tshark (installed by setup.sh) reads it without a warning of its own.
    let t = Command::new("tshark").args(["-r"]).arg(&path).output().expect("tshark is installed by scripts/setup.sh");
    let warnings: Vec<String> = String::from_utf8_lossy(&t.stderr)
        .lines()
        .filter(|l| !l.contains("Running as user"))
        .map(String::from)
        .collect();
    assert!(t.status.success() && warnings.is_empty(), "tshark: {warnings:?}");
    assert_eq!(String::from_utf8_lossy(&t.stdout).lines().count(), 2);
    let _ = std::fs::remove_file(&path);
    // A wrong verdict fails too, and says which it got.
    let (code, _, _) = run_json(&[&tc, "--packet", "eth/ipv4(ttl=1)/tcp", "--expect", "TC_ACT_OK"]);
    assert_eq!(code, Some(1));
    // It wrote its pcap where the first did.
    assert!(path.exists(), "the wrong verdict's pcap at {}", path.display());
    let _ = std::fs::remove_file(&path);
}

#[test]
fn ranges_make_exactly_that_many_distinct_flows() {
    let _machine = common::machine();
    // The counting program's map, pinned here so the test can read it after the run.
    let fs = Bpffs::mount("flows");
    let pin = fs.0.join("flows");
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    let mut map = libbpf_rs::MapHandle::create(libbpf_rs::MapType::Hash, Some("flows"), 16, 8, 1 << 17, &opts).unwrap();
    map.pin(&pin).unwrap();
    let flows = object("xdp_flows.bpf.o");
    let spec = "eth/ipv4(src=10.2.0.1-10.2.0.25,dst=10.0.0.1-10.0.0.4)/udp(sport=7000-7009)/payload(20)";
    let (code, results, err) = run_json(&[&flows, "--map-pin", &format!("flows={}", pin.display()), "--packet", spec]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(results[0]["timing"]["mode"], "in-bpf", "{}", results[0]);
    use libbpf_rs::MapCore;
    let keys: Vec<Vec<u8>> = map.keys().collect();
    assert_eq!(keys.len(), 25 * 4 * 10, "distinct flows the program saw");
    // Every flow was seen many times: the packets were cycled per iteration.
    for k in &keys {
        let n = u64::from_ne_bytes(map.lookup(k, libbpf_rs::MapFlags::ANY).unwrap().unwrap()[..8].try_into().unwrap());
        assert!(n >= 2, "a flow seen {n} times");
    }
    map.unpin(&pin).unwrap();
}

#[test]
fn the_readme_spec_file_example_runs() {
    let _machine = common::machine();
    // As the README says: compile the example with clang, run its spec file.
    let dir = temp_dir("spec-example");
    common::compile_example(&dir);
    let spec = dir.join("bench.toml");
    let (code, results, err) = run_json(&[spec.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{err}");
    let names: Vec<&str> = results.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["to-service", "to-service-4k-clients", "other-traffic"]);
    for r in &results {
        assert_eq!(r["workload"], "bench");
        assert!(r["validated"].as_bool().unwrap() && r["figure"]["metric"] == "time", "{r}");
    }
    assert_eq!(results[0]["verdict"], "XDP_TX");
    assert_eq!(results[2]["verdict"], "XDP_PASS");
    // Each case's sizes in and out, and what it expected, are in the record:
    // the encapsulation adds an outer IPv4 header (20 bytes).
    assert_eq!(results[0]["outcome"]["bytes"]["input"], serde_json::json!([86, 86]));
    assert_eq!(results[0]["outcome"]["bytes"]["output"], serde_json::json!([106, 106]));
    assert_eq!(results[0]["outcome"]["expected"], serde_json::json!({"verdict": true, "packet": true}));
    assert_eq!(results[1]["outcome"]["expected"], serde_json::json!({"verdict": true, "packet": false}));
    assert_eq!(results[2]["outcome"]["bytes"]["output"], serde_json::json!([74, 74]));
    // A spec file says what the options would: they are refused beside it.
    let o = bpfbench(&["run", spec.to_str().unwrap(), "--packet", "eth"]);
    assert!(stderr(&o).contains("--packet are set in") && o.status.code() == Some(1), "{}", stderr(&o));
}

#[test]
fn the_table_shows_what_each_case_returned_and_a_case_that_expected_nothing_once() {
    let _machine = common::machine();
    let encap = object("xdp_encap.bpf.o");
    let map = format!("services={}", services());
    // The packet language's default destination misses the service: the
    // program passes the packet on unchanged, and nothing said otherwise.
    // Returns the table and the case's verdict, bytes and expectations cells.
    let run = |extra: &[&str]| -> (String, Vec<String>) {
        let mut args = vec!["run", &encap, "--map", &map, "--samples", "5", "--batch-ms", "2", "--no-store"];
        args.extend_from_slice(extra);
        let o = bpfbench(&args);
        let out = stdout(&o);
        assert!(o.status.success(), "{}", stderr(&o));
        common::assert_boxed_aligned(&out);
        // The last: the first such line is the heading ("xdp_encap in ...").
        let row = out.lines().rfind(|l| l.starts_with("| xdp_encap ")).unwrap_or_else(|| panic!("{out}"));
        let cells = row.split('|').map(|c| c.trim().to_string()).skip(2).take(3).collect();
        (out, cells)
    };
    let (out, cells) = run(&["--packet", "eth/ipv4/tcp(dport=80)"]);
    assert_eq!(cells, ["XDP_PASS", "54 -> 54", "nothing"], "{out}");
    let warned: Vec<&str> = out.lines().filter(|l| l.starts_with("nothing expected of")).collect();
    assert_eq!(warned.len(), 1, "{out}");
    assert!(warned[0].contains("xdp_encap (XDP_PASS)") && warned[0].contains("--expect"), "{out}");
    // To the service, with its verdict expected: no such line.
    let (out, cells) = run(&["--packet", "eth/ipv4(dst=10.0.0.10)/tcp(dport=80)", "--expect", "XDP_TX"]);
    assert_eq!(cells, ["XDP_TX", "54 -> 74", "verdict"], "{out}");
    assert!(!out.contains("nothing expected"), "{out}");
}

#[test]
fn packets_of_different_lengths_are_timed_per_call_and_labelled_so() {
    let _machine = common::machine();
    let swap = object("xdp_swap.bpf.o");
    let (code, results, err) =
        run_json(&[&swap, "--packet", "eth/ipv4/udp/payload(18)", "--packet", "eth/ipv4/udp/payload(100)"]);
    assert_eq!(code, Some(0), "{err}");
    let r = &results[0];
    assert_eq!(r["timing"]["mode"], "per-call");
    assert!(r["timing"]["reason"].as_str().unwrap().contains("differ in length"), "{r}");
    // Its benchmark name keeps it apart from in-BPF figures, and the table says so.
    let o = bpfbench(&[
        "run",
        &swap,
        "--packet",
        "eth/ipv4/udp/payload(18)",
        "--packet",
        "eth/ipv4/udp/payload(100)",
        "--samples",
        "3",
        "--no-store",
    ]);
    let out = stdout(&o);
    assert!(
        out.contains("timed per call (BPF_PROG_TEST_RUN, by the kernel)")
            && out.contains("xdp_swap: timed per call because the case's packets differ in length"),
        "{out}"
    );
    let o = bpfbench(&["run", &swap, "--per-call", "--samples", "3", "--no-store", "--format", "gobench"]);
    assert!(stdout(&o).contains("BenchmarkXdpSwap/xdp_swap@per-call"), "{}", stdout(&o));
}

#[test]
fn a_program_the_kernel_refuses_spliced_falls_back_with_the_verifiers_reason() {
    let _machine = common::machine();
    let (code, results, err) = run_json(&[&object("xdp_bigstack.bpf.o")]);
    assert_eq!(code, Some(0), "{err}");
    let r = &results[0];
    assert_eq!(r["timing"]["mode"], "per-call", "{r}");
    let reason = r["timing"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("refused the program spliced into the batch loop") && reason.contains("combined stack size"),
        "{reason}"
    );
    assert!(
        r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("stack depth")),
        "the verifier's tail: {r}"
    );
}

#[test]
fn the_verifier_command_reports_every_object() {
    let _machine = common::machine();
    for (name, loads) in [
        ("xdp_swap.bpf.o", true),
        ("xdp_encap.bpf.o", true),
        ("tc_ttl.bpf.o", true),
        ("xdp_flows.bpf.o", true),
        ("xdp_reject.bpf.o", false),
    ] {
        let o = bpfbench(&["verifier", &object(name), "--format", "json"]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        let p = &doc["objects"][0]["programs"][0];
        assert_eq!(p["loaded"], loads, "{name}: {p}");
        assert!(p["stats"]["processed_insns"].as_u64().unwrap() > 0, "{name}: {p}");
        if loads {
            assert!(p["jited_bytes"].as_u64().unwrap() > 0, "{name}: {p}");
        } else {
            assert!(p["error"].as_str().unwrap().contains("outside of the packet"), "{name}: {p}");
        }
    }
    // Two objects side by side, with deltas.
    let o = bpfbench(&["verifier", &object("xdp_swap.bpf.o"), &object("xdp_swap.bpf.o")]);
    let out = stdout(&o);
    assert!(out.contains("xdp_swap: loads -> loads") && out.contains("(+0, +0.0%)"), "{out}");
    let o = bpfbench(&["verifier", &object("xdp_encap.bpf.o"), "--format", "csv"]);
    assert!(stdout(&o).starts_with("object,program,section,prog_type,loaded"), "{}", stdout(&o));
    // A section only its own loader knows: libbpf's refusal, named as
    // libbpf's (it blamed the kernel's verifier); typed, it loads.
    let own = object("xdp_own_section.bpf.o");
    let first = |args: &[&str]| -> Value {
        let o = bpfbench(&[&["verifier"][..], args, &["--format", "json"]].concat());
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        serde_json::from_slice::<Value>(&o.stdout).unwrap()["objects"][0]["programs"][0].clone()
    };
    let p = first(&[&own]);
    let error = p["error"].as_str().unwrap();
    assert!(
        error.starts_with("libbpf refused to load program 'own_section'") && error.contains("--program-type"),
        "{p}"
    );
    assert_eq!(first(&[&own, "--program-type", "xdp"])["loaded"], true);
    // Globals as `run` sets them: frozen .rodata the verifier sees as
    // constants, so it walks fewer instructions.
    let config = object("xdp_config.bpf.o");
    let walked = |p: Value| p["stats"]["processed_insns"].as_u64().unwrap();
    let (unset, set) = (
        walked(first(&[&config])),
        walked(first(&[&config, "--global", "service_port=80", "--global", "drop_others=true"])),
    );
    assert!(set < unset, "{set} instructions with globals set, {unset} without");
    common::assert_one_line_error(&["verifier", &config, "--global", "nope=1"], "has no global variable 'nope'");
}

#[test]
fn bad_inputs_get_one_line_errors() {
    let _machine = common::machine();
    let dir = temp_dir("bad-inputs");
    let text = dir.join("notelf.o");
    std::fs::write(&text, "hello").unwrap();
    let bad_json = dir.join("bad.json");
    std::fs::write(&bad_json, "{not json").unwrap();
    let swap = object("xdp_swap.bpf.o");
    let encap = object("xdp_encap.bpf.o");
    let bad_map = format!("services={}", bad_json.display());
    for (args, needle) in [
        (vec!["/nonexistent/x.bpf.o"], "/nonexistent/x.bpf.o does not exist"),
        (vec![text.to_str().unwrap()], "is not an ELF file"),
        (vec!["/bin/true"], "is an ELF file for X86_64, not a BPF object"),
        (vec![&swap, "--program", "nope"], "has no program 'nope'; it has xdp_swap (xdp)"),
        (vec![&object("xdp_reject.bpf.o")], "the kernel's verifier refused program 'xdp_reject'"),
        // libbpf's own reason, and what to do.
        (vec![&object("xdp_unknown_map_field.bpf.o")], "map 'counts': unknown field 'no_such_field'"),
        // A compiler's support routine (GCC 12's BPF byte swap), named.
        (vec![&object("xdp_libcall.bpf.o")], "calls __bswapsi2: compiler support functions (libgcc's)"),
        (vec![&encap, "--map", &bad_map], "--map services="),
        (vec![&encap, "--map", "nomap=x.json"], "has no map 'nomap'; its maps are services, hits"),
        (vec![&swap, "--packet", "eth/ipv4(src=1.2.3)/tcp"], "'1.2.3' is not an IPv4 address"),
        (vec![&swap, "--packet", "eth/ipv9"], "unknown layer 'ipv9'"),
        (vec![&swap, "--expect", "XDP_TXX"], "--expect XDP_TXX: not a verdict"),
        (vec![&swap, "--op", "lookup"], "--op applies to lpm-trie and maps"),
    ] {
        let mut all = vec!["run"];
        all.extend_from_slice(&args);
        all.push("--no-store");
        common::assert_one_line_error(&all, needle);
    }
    assert!(stderr(&bpfbench(&["run", &encap, "--map", &bad_map, "--no-store"])).contains("not valid JSON"));
}
