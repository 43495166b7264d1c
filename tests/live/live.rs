//! `bpfbench live` against the kernel: the built-in load balancer and a
//! test object on a veth under generated traffic, the sweep's figures, and
//! the cleanup after errors, SIGTERM and SIGKILL.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::leftovers::Snapshot;
use common::{Bpffs, bpfbench, stderr, stdout, test_object};
use libbpf_rs::{MapCore, MapFlags};

/// Short steps: the tests check plumbing and proportions, not speed.
const QUICK: &[&str] = &["--duration", "0.3", "--warmup", "0.2", "--no-store", "--format", "json"];

fn live_json(args: &[&str]) -> serde_json::Value {
    let o = bpfbench(&[&["live"], args, QUICK].concat());
    assert!(o.status.success(), "live {args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

/// The namespace a running bpfbench with `pid` made, once it exists.
fn wait_for_netns(pid: u32) -> bool {
    let path = std::path::PathBuf::from(format!("/run/netns/bpfbench-{pid}"));
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        // The veths come after the namespace: wait for the inner one too.
        if path.exists()
            && Command::new("ip")
                .args(["-n", &format!("bpfbench-{pid}"), "-o", "link"])
                .output()
                .is_ok_and(|o| o.stdout.len() > 200)
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn the_load_balancer_hits_its_lru_as_its_size_predicts_and_tx_every_packet() {
    let _machine = common::machine();
    let before = Snapshot::take();
    // 500 flows fit a 1000-entry table; 4000 random flows hit it a quarter of the time.
    let doc = live_json(&["xdp-lb", "--lru-size", "1000", "--sweep", "src-ports=500,4000", "--no-cross-check"]);
    assert_eq!(doc["schema"], "bpfbench.live/2");
    assert_eq!(doc["notes"][0], "connection tables of 1000 entries per CPU");
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2);
    for s in steps {
        let v = &s["verdicts"];
        let packets = v["packets"].as_u64().unwrap();
        assert!(packets > 10_000, "{s}");
        // Every packet encapsulated and sent back: frames the balancer wrote
        // into come back from the generator restored.
        assert_eq!(v["tx"], v["packets"], "{s}");
        // bpf_stats counted the program's every run.
        assert_eq!(s["run_cnt"], v["packets"], "{s}");
        assert!(s["ns_per_packet"].as_f64().unwrap() > 0.0);
    }
    // The balancer's named counters and the ratio it makes of them.
    for s in steps {
        let c = &s["counters"];
        assert!(c["lru_hits"].as_u64().unwrap() + c["lru_misses"].as_u64().unwrap() > 10_000, "{s}");
        assert_eq!(s["ratios"][0]["name"], "LRU hit rate", "{s}");
    }
    let hit = |i: usize| steps[i]["ratios"][0]["value"].as_f64().unwrap();
    assert!(hit(0) > 0.98, "500 flows in 1000 entries: {}", hit(0));
    assert!((hit(1) - 0.25).abs() < 0.08, "1000 entries over 4000 flows: {}", hit(1));
    assert_eq!(steps[1]["ratios"][0]["predicted"], 0.25);
    // The statistics' cost was measured (four on/off pairs), not assumed;
    // unless the machine keeps them on, when they cannot be turned off.
    let stats = &doc["stats_overhead"];
    if std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled").unwrap().trim() == "1" {
        assert!(
            stats["note"].as_str().unwrap().starts_with("not measured: /proc/sys/kernel/bpf_stats_enabled is 1"),
            "{stats}"
        );
    } else {
        assert_eq!(stats["pairs_ns"].as_array().unwrap().len(), 4, "{stats}");
        assert!(stats["ns_per_packet"].is_f64());
    }
    for s in steps {
        // 0.3 s in 100 ms windows, whose run counts add up to the step's
        let windows = s["windows"].as_array().unwrap();
        assert!(windows.len() >= 3, "{s}");
        // (softirq work deferred past the last window counts in the step only)
        let (in_windows, total) =
            (windows.iter().map(|w| w["run_cnt"].as_u64().unwrap()).sum::<u64>(), s["run_cnt"].as_u64().unwrap());
        assert!(in_windows <= total && in_windows as f64 >= 0.99 * total as f64, "{in_windows} of {total}");
        assert!(s["ns_per_packet_cv"].is_f64(), "{s}");
    }
    before.assert_nothing_left("live xdp-lb");
}

#[test]
fn your_object_runs_with_a_pinned_map_and_sees_valid_frames() {
    let _machine = common::machine();
    // The test loads the counter object to pin its totals; live reuses the
    // pinned map, so the counts are readable here afterwards.
    let fs = Bpffs::mount("live-pin");
    let mut obj =
        libbpf_rs::ObjectBuilder::default().open_file(test_object("xdp_flow_count.bpf.o")).unwrap().load().unwrap();
    let mut totals = obj.maps_mut().find(|m| m.name() == "totals").unwrap();
    let pin = fs.0.join("totals");
    totals.pin(&pin).unwrap();
    let before = Snapshot::take();
    let object = test_object("xdp_flow_count.bpf.o");
    let spec = "eth/ipv4(src=10.9.0.1,dst=10.9.1.1)/udp(sport=1000-1063,dport=53)/payload(18)";
    let doc = live_json(&[
        object.to_str().unwrap(),
        "--map-pin",
        &format!("totals={}", pin.display()),
        "--packet",
        spec,
        "--sweep",
        "size=64,256",
    ]);
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps[1]["frame_bytes"], 256);
    let mut measured = 0;
    for s in steps {
        assert_eq!(s["verdicts"]["drop"], s["verdicts"]["packets"], "the counter drops all: {s}");
        assert_eq!(s["flows"], 64);
        measured += s["verdicts"]["packets"].as_u64().unwrap();
    }
    let v =
        obj.maps().find(|m| m.name() == "totals").unwrap().lookup(&0u32.to_ne_bytes(), MapFlags::ANY).unwrap().unwrap();
    let n = |i: usize| u64::from_ne_bytes(v[i * 8..i * 8 + 8].try_into().unwrap());
    // Warm-up and the statistics' cost are sent too, beyond the steps.
    assert!(n(0) >= measured, "counted {} of at least {measured}", n(0));
    assert_eq!((n(1), n(2), n(4)), (0, 0, 0), "bad IP checksums, bad L4 checksums, others");
    assert!(doc["notes"][0].as_str().unwrap().contains("pinned"), "{}", doc["notes"]);
    before.assert_nothing_left("live with a pinned map");
}

#[test]
fn the_plot_has_labelled_axes_and_csv_a_row_per_step() {
    let _machine = common::machine();
    let dir = common::temp_dir("live-plot");
    let svg = dir.join("sweep.svg");
    let o = bpfbench(&[
        "live",
        test_object("xdp_drop.bpf.o").to_str().unwrap(),
        "--sweep",
        "threads=1,2",
        "--plot",
        svg.to_str().unwrap(),
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--no-store",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let rec: bpfbench::record::live::LiveRecord = serde_json::from_slice(&o.stdout).unwrap();
    // `--format csv` renders this record.
    let csv = bpfbench::report::render_as(&rec, bpfbench::report::Format::Csv).unwrap();
    let rows: Vec<String> = csv.lines().map(str::to_string).collect();
    assert_eq!(rows.len(), 3, "header and two steps: {rows:?}");
    assert!(rows[0].starts_with("program,sweep,value,") && rows[2].contains(",threads,2,"), "{rows:?}");
    let text = std::fs::read_to_string(&svg).unwrap();
    for label in ["generator threads", "Mpps", "ns per packet"] {
        assert!(text.contains(label), "{label} missing from the plot");
    }
    // The x axis is labelled at the sweep's values only, once a panel (it
    // read "1 1 1 1 1 2 2 2 2 2" when ticks were spaced evenly).
    let labels: Vec<&str> = text.split("</text>").filter_map(|t| t.rsplit('>').next()).map(str::trim).collect();
    let whole: Vec<&str> =
        labels.iter().copied().filter(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit())).collect();
    assert_eq!(whole, ["1", "2", "1", "2"], "the x labels of two panels: {labels:?}");
    // The same plot as a PNG (`--plot sweep.png`): a picture of the SVG's
    // size, with more than the background in it.
    let png = dir.join("sweep.png");
    bpfbench::report::live_plot::plot(&rec, &png).unwrap();
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(&png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    let svg_width = text.split("width=\"").nth(1).and_then(|r| r.split('"').next()).unwrap();
    assert_eq!(frame.width.to_string(), svg_width);
    let distinct: std::collections::HashSet<&[u8]> = pixels[..frame.buffer_size()].chunks(3).collect();
    assert!(distinct.len() > 3, "{} colours: an empty picture", distinct.len());
}

#[test]
fn ctrl_c_and_sigterm_end_a_run_with_nothing_left() {
    let _machine = common::machine();
    let before = Snapshot::take();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let child = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
            .args(["live", "--duration", "30", "--warmup", "0", "--no-store", "--no-cross-check"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        assert!(wait_for_netns(child.id()), "no topology appeared");
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, signal) };
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(130), "signal {signal}: {}", stderr(&o));
        before.assert_nothing_left(&format!("live stopped by signal {signal}"));
    }
}

#[test]
fn a_killed_runs_leftovers_are_found_by_cleanup() {
    let _machine = common::machine();
    let before = Snapshot::take();
    let mut child = Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["live", "--duration", "30", "--warmup", "0", "--no-store", "--no-cross-check"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    assert!(wait_for_netns(pid), "no topology appeared");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(before.left_now().contains(&format!("netns bpfbench-{pid}")), "a SIGKILL leaves the namespace");
    let o = bpfbench(&["live", "--cleanup"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&format!("netns bpfbench-{pid}")), "{}", stdout(&o));
    // Programs went with the process (links are the kernel's to undo), the
    // namespace and veths with the cleanup.
    before.assert_nothing_left("a killed live run and its cleanup");
}

#[test]
fn bad_inputs_get_one_line_errors() {
    let _machine = common::machine();
    let before = Snapshot::take();
    let drop = test_object("xdp_drop.bpf.o");
    let tc = test_object("tc_ttl.bpf.o");
    let cases: [(&[&str], &str); 6] = [
        (&["no-such-thing"], "no such target 'no-such-thing'"),
        (&["--sweep", "speed=1"], "unknown variable 'speed'"),
        (&[drop.to_str().unwrap(), "--lru-size", "10"], "--lru-size sizes xdp-lb's connection tables"),
        (&[tc.to_str().unwrap()], "bpfbench live attaches programs to an interface's XDP hook"),
        (&["--plot", "x.svg"], "--plot draws a sweep"),
        (&["--packet", "eth/ipv5"], "unknown layer 'ipv5'"),
    ];
    for (args, want) in cases {
        let o = bpfbench(&[&["live"], args, &["--no-store"]].concat());
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = stderr(&o);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    before.assert_nothing_left("live with bad input");
}

#[test]
fn a_live_run_is_stored_and_shown_again() {
    let _machine = common::machine();
    let dir = common::temp_dir("live-history");
    let db = dir.join("h.sqlite");
    let db = db.to_str().unwrap();
    let drop = test_object("xdp_drop.bpf.o");
    let o = bpfbench(&[
        "live",
        drop.to_str().unwrap(),
        "--duration",
        "0.2",
        "--warmup",
        "0",
        "--tag",
        "t1",
        "--db",
        db,
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let ran: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let listed = bpfbench(&["history", "--live", "--db", db]);
    assert!(
        stdout(&listed).lines().nth(1).is_some_and(|l| l.contains("t1") && l.contains("xdp_drop")),
        "{}",
        stdout(&listed)
    );
    let shown = bpfbench(&["show", "--live", "1", "--db", db, "--format", "json"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let back: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(back["steps"], ran["steps"]);
    let missing = bpfbench(&["show", "--live", "9", "--db", db]);
    assert!(stderr(&missing).contains("no live run 9"), "{}", stderr(&missing));
}

/// A live run stored by the previous version (bpfbench.live/1, the load
/// balancer's `lru` per step) still reads: its figures become counters and
/// the LRU hit rate, its table size a note.
#[test]
fn a_live_run_of_the_previous_schema_still_reads() {
    let _machine = common::machine();
    let text = include_str!("../fixtures/live-v1.json");
    let old: serde_json::Value = serde_json::from_str(text).unwrap();
    let rec = bpfbench::record::live::parse_live(text).unwrap();
    assert_eq!(rec.schema, "bpfbench.live/2");
    assert_eq!(rec.notes[0], "connection tables of 1000 entries per CPU");
    assert_eq!(rec.steps.len(), 2);
    for (s, was) in rec.steps.iter().zip(old["steps"].as_array().unwrap()) {
        let lru = &was["lru"];
        assert_eq!(s.counters["lru_hits"], lru["hits"].as_u64().unwrap());
        assert_eq!(s.counters["lru_misses"], lru["misses"].as_u64().unwrap());
        let r = s.ratio("LRU hit rate").unwrap();
        assert_eq!(r.value, lru["hit_rate"].as_f64().unwrap());
        assert_eq!(r.predicted, lru["predicted_hit_rate"].as_f64());
    }
    // Shown as a new one is, with the hit rate's columns.
    let table = bpfbench::report::live_table::render(&rec);
    assert!(table.contains("LRU hit rate") && table.contains("23.4%") && table.contains("25.0%"), "{table}");
    assert!(bpfbench::record::live::parse_live(&text.replace("live/1", "live/9")).is_err());
}
