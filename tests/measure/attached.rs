//! Programs attached on their real hooks (`bpfbench run FILE.bpf.o` of
//! tracing, probe and cgroup programs; `bpfbench overhead -- TOOL`),
//! against the real kernel: each validated by its runs per event under its
//! trigger, timed by bpf_stats beside an empty program on the same hook,
//! the trigger's slowdown measured, and nothing left attached, mounted or
//! made after success, failure, SIGINT or SIGKILL.

use serde_json::Value;

use crate::common;
use common::leftovers::Snapshot;
use common::{assert_one_line_error, bpfbench, object, stderr, stdout};

/// `bpfbench run ARGS --samples 5 --no-store --format json`: (exit code, results, stderr).
fn run_json(args: &[&str]) -> (Option<i32>, Vec<Value>, String) {
    let mut all: Vec<&str> = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--samples", "5", "--batch-ms", "2", "--no-store", "--format", "json"]);
    let o = bpfbench(&all);
    let doc: Value =
        serde_json::from_str(&stdout(&o)).unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    (o.status.code(), doc["results"].as_array().cloned().unwrap_or_default(), stderr(&o))
}

fn row<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("no row {name} in {rows:#?}"))
}

/// A validated attached row: its runs per event, ns per run and the empty
/// program's beside it.
fn assert_timed_on_its_hook(r: &Value, point: &str, runs_per_event: f64) {
    assert!(r["validated"] == true && r["error"].is_null(), "{r:#}");
    assert_eq!(r["timing"]["mode"], "bpf-stats");
    let a = &r["attached"];
    assert_eq!(a["point"], point, "{a:#}");
    let (events, runs) = (a["events"].as_f64().unwrap(), a["runs"].as_f64().unwrap());
    assert!(events >= 20.0, "{a:#}");
    let per_event = runs / events;
    assert!(
        per_event >= runs_per_event && per_event < runs_per_event * 1.2,
        "{}: {per_event} runs per event",
        r["name"]
    );
    let m = &r["figure"];
    assert_eq!(m["metric"], "time");
    let median = m["summary"]["median"].as_f64().unwrap();
    let empty = m["overhead"]["summary"]["median"].as_f64().unwrap();
    // bpf_stats' own floor (its clock reads, the entry, the return) is tens of ns here.
    assert!(median > 1.0 && empty > 1.0, "{}: {median} ns per run, the empty program {empty}", r["name"]);
    assert!(m["overhead"]["key"].as_str().unwrap().contains(&format!("at {point}")), "{}", m["overhead"]["key"]);
}

/// The trigger's slowdown with the object attached: positive, beside the
/// trigger's own cost, over pairs of phases.
fn assert_slowdown(r: &Value, programs: usize) {
    let s = &r["attached"]["slowdown"];
    assert_eq!(s["programs"].as_array().unwrap().len(), programs, "{s:#}");
    assert!(s["differences"]["n"].as_u64().unwrap() >= 4, "{s:#}");
    assert!(s["differences"]["median"].as_f64().unwrap() > 0.0, "{s:#}");
    assert!(s["detached"]["median"].as_f64().unwrap() > 0.0, "{s:#}");
}

#[test]
fn a_tracepoint_program_is_timed_on_its_hook_under_its_syscall() {
    let _m = common::machine();
    let before = Snapshot::take();
    let (code, rows, err) = run_json(&[&object("tp_getppid.bpf.o")]);
    assert_eq!(code, Some(0), "{err}");
    let r = row(&rows, "count_getppid");
    assert_timed_on_its_hook(r, "tp/syscalls/sys_enter_getppid", 1.0);
    assert_eq!(r["attached"]["trigger"], "getppid()");
    assert_eq!(r["attached"]["mechanism"], "tracepoint");
    assert_slowdown(r, 1);
    // Its pairs fired from several threads in turn, each thread's median kept.
    let s = &r["attached"]["slowdown"];
    let threads = bpfbench::trigger::FIRING_THREADS;
    assert!(s["phases"].as_str().unwrap().contains(&format!("fired from {threads} threads in turn")), "{s:#}");
    let per_thread = s["per_thread_ns"].as_array().unwrap();
    assert!((2..=threads).contains(&per_thread.len()), "{s:#}");
    before.assert_nothing_left("an attached run");
}

#[test]
fn an_attached_runs_figures_are_written_as_csv_and_bmf_each_named() {
    let _m = common::machine();
    let quick = ["--samples", "5", "--batch-ms", "2", "--no-store"];
    let tp = object("tp_getppid.bpf.o");
    let out = bpfbench(&[&["run", tp.as_str(), "--format", "csv"][..], &quick].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let mut csv = csv::Reader::from_reader(out.stdout.as_slice());
    let header = csv.headers().unwrap().clone();
    let rec = csv.records().next().expect("a row").unwrap();
    let col =
        |name: &str| rec.get(header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name}"))).unwrap();
    assert_eq!(col("timing"), "attached, bpf_stats");
    assert_eq!(col("runs_per_event").parse::<f64>().unwrap(), 1.0);
    let slowdown: f64 = col("slowdown_ns").parse().unwrap();
    let (lo, hi): (f64, f64) =
        (col("slowdown_ci95_low_ns").parse().unwrap(), col("slowdown_ci95_high_ns").parse().unwrap());
    assert!(slowdown > 0.0 && lo <= slowdown && slowdown <= hi, "{slowdown} in {lo}..{hi}");
    assert!(col("trigger_alone_ns").parse::<f64>().unwrap() > 0.0);
    assert_eq!(col("tool_cpu_ns_per_event"), "", "no tool here");
    // Stored, the HTML report says the slowdown and where it went, as the table does.
    let dir = common::temp_dir("attached-report");
    let (db, html) = (dir.join("h.sqlite"), dir.join("r.html"));
    let (db, html) = (db.to_str().unwrap(), html.to_str().unwrap());
    let out = bpfbench(&["run", tp.as_str(), "--samples", "5", "--batch-ms", "2", "--db", db]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = bpfbench(&["report", "--db", db, "-o", html]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = std::fs::read_to_string(html).unwrap();
    assert!(page.contains("getppid(): +") && page.contains("ns per event with 'count_getppid' attached"), "{page}");
    assert!(page.contains("in BPF: count_getppid"), "no split of the slowdown in the report");
    assert!(page.contains("threads' medians"), "no spread of the firing threads in the report");
    let out = bpfbench(&[&["run", tp.as_str(), "--format", "bmf"][..], &quick].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let bmf: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (name, measures) = bmf.as_object().unwrap().iter().next().expect("a benchmark");
    assert!(name.contains("count_getppid"), "{name}");
    for m in ["latency", "runs_per_event", "slowdown"] {
        assert!(measures[m]["value"].as_f64().is_some_and(|v| v > 0.0), "{m} in {measures:#}");
    }
}

#[test]
fn a_raw_tracepoint_is_attached_when_asked_and_test_run_otherwise() {
    let _m = common::machine();
    let raw = object("raw_tp_sys_enter.bpf.o");
    let (code, rows, err) = run_json(&[&raw, "--attach"]);
    assert_eq!(code, Some(0), "{err}");
    let r = row(&rows, "count_sys_enter");
    assert_timed_on_its_hook(r, "raw_tp/sys_enter", 1.0);
    assert_eq!(r["attached"]["mechanism"], "raw tracepoint");
    assert_slowdown(r, 1);
    // Without --attach, the kernel test-runs it.
    let (code, rows, err) = run_json(&[&raw]);
    assert_eq!(code, Some(0), "{err}");
    assert_ne!(row(&rows, "count_sys_enter")["timing"]["mode"], "bpf-stats");
}

#[test]
fn uprobe_and_usdt_programs_fire_on_bpfbenchs_own_function_and_their_ring_buffer_is_read() {
    let _m = common::machine();
    let before = Snapshot::take();
    let (code, rows, err) = run_json(&[&object("uprobe_usdt.bpf.o")]);
    assert_eq!(code, Some(0), "{err}");
    let call = row(&rows, "on_call");
    assert_timed_on_its_hook(call, "uprobe (bpfbench's trigger function)", 1.0);
    let probe = row(&rows, "on_probe");
    assert_timed_on_its_hook(probe, "usdt (bpfbench's probe bpfbench:trigger)", 1.0);
    assert_eq!(probe["attached"]["mechanism"], "USDT probe (uprobe)");
    // One record per call, every one read by the reader thread.
    let records = &call["attached"]["records"];
    assert_eq!(records["records"], call["attached"]["events"], "{records:#}");
    assert_eq!(records["lost"], 0);
    assert_slowdown(call, 2);
    before.assert_nothing_left("a uprobe run");
}

#[test]
fn a_perf_event_program_samples_every_page_fault_or_context_switch_on_every_cpu() {
    let _m = common::machine();
    let before = Snapshot::take();
    let perf = object("perf_event_faults.bpf.o");
    // A bare perf_event section: the page-fault software event, one sample a fault.
    let (code, rows, err) = run_json(&[&perf]);
    assert_eq!(code, Some(0), "{err}");
    let r = row(&rows, "count_samples");
    assert_timed_on_its_hook(r, "perf_event/page-faults", 1.0);
    assert_eq!(r["attached"]["mechanism"], "perf event");
    assert!(r["attached"]["trigger"].as_str().unwrap().starts_with("a page fault"), "{r:#}");
    assert_slowdown(r, 1);
    // Another event by --attach, with the trigger that event calls for.
    let (code, rows, err) = run_json(&[&perf, "--attach", "perf_event/context-switches"]);
    assert_eq!(code, Some(0), "{err}");
    assert_timed_on_its_hook(row(&rows, "count_samples"), "perf_event/context-switches", 2.0);
    before.assert_nothing_left("a perf_event run");
    assert_one_line_error(
        &["run", &perf, "--attach", "perf_event/cycles"],
        "bpfbench attaches perf_event programs to the software events perf_event/page-faults, perf_event/context-switches",
    );
}

#[test]
fn cgroup_hooks_fire_for_bpfbenchs_own_cgroup_and_it_is_removed_after() {
    let _m = common::machine();
    let before = Snapshot::take();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let (code, rows, err) = run_json(&[&object("cgroup_connect4.bpf.o")]);
    assert_eq!(code, Some(0), "{err}");
    let connect = row(&rows, "count_connect4");
    assert_timed_on_its_hook(connect, "cgroup/connect4", 1.0);
    assert_eq!(connect["attached"]["trigger"], "a TCP connect + accept on loopback");
    // sockops: several callbacks per connection (connect, established on both ends, ...).
    let sockops = row(&rows, "count_sockops");
    assert!(sockops["attached"]["runs"].as_u64() > sockops["attached"]["events"].as_u64(), "{sockops:#}");
    assert!(rows.iter().any(|r| r["attached"]["slowdown"].is_object()));
    before.assert_nothing_left("a cgroup run");
    assert_eq!(std::fs::read_to_string("/proc/self/cgroup").unwrap(), own, "the test process never moved");
}

#[test]
fn sockmap_programs_run_on_the_messages_of_sockets_in_their_map() {
    let _m = common::machine();
    let before = Snapshot::take();
    let (code, rows, err) = run_json(&[&object("sockmap_msg.bpf.o")]);
    assert_eq!(code, Some(0), "{err}");
    // One send, one receipt an event: the sk_msg program on the sender's
    // socket, the stream verdict on the receiver's.
    let sent = row(&rows, "count_messages");
    assert_timed_on_its_hook(sent, "sk_msg", 1.0);
    assert_timed_on_its_hook(row(&rows, "count_received"), "sk_skb/stream_verdict", 1.0);
    assert!(sent["attached"]["trigger"].as_str().unwrap().contains("sockmap"), "{sent:#}");
    assert_slowdown(sent, 2);
    before.assert_nothing_left("a sockmap run");
}

#[test]
fn kprobes_and_trampolines_run_where_the_kernel_has_them_and_are_na_with_the_guest_to_use_where_not() {
    let _m = common::machine();
    for (file, names) in [
        ("kprobe_openat.bpf.o", ["on_openat", "on_openat_return"]),
        ("kprobe_multi_openat.bpf.o", ["on_openat", "on_openat_return"]),
        ("fentry_openat.bpf.o", ["on_openat", "on_openat_exit"]),
    ] {
        let (code, rows, err) = run_json(&[&object(file)]);
        assert_eq!(code, Some(0), "{file}: {err}");
        for name in names {
            let r = row(&rows, name);
            match r["unavailable"].as_str() {
                // This machine's kernel: no kprobes, trampolines refused.
                Some(why) => assert!(why.contains("bpfbench vm --kernel trixie"), "{file}: {why}"),
                None => assert_timed_on_its_hook(r, r["attached"]["point"].as_str().unwrap(), 1.0),
            }
        }
    }
    if !std::path::Path::new("/sys/bus/event_source/devices/kprobe").exists() {
        let (_, rows, _) = run_json(&[&object("kprobe_openat.bpf.o")]);
        let why = row(&rows, "on_openat")["unavailable"].as_str().unwrap().to_string();
        assert!(why.contains("this kernel has no kprobes"), "{why}");
    }
}

#[test]
fn validation_refuses_fewer_runs_than_the_trigger_calls_for() {
    let _m = common::machine();
    let (code, rows, err) = run_json(&[&object("tp_getppid.bpf.o"), "--expect-runs", "2"]);
    assert_eq!(code, Some(1), "{err}");
    let why = row(&rows, "count_getppid")["error"].as_str().unwrap().to_string();
    assert!(why.contains("fewer than the 2 per event expected"), "{why}");
    // A trigger that does not reach the hook: no run, not timed.
    let (code, rows, _) = run_json(&[&object("tp_getppid.bpf.o"), "--trigger", "getpid"]);
    assert_eq!(code, Some(1));
    let why = row(&rows, "count_getppid")["error"].as_str().unwrap().to_string();
    assert!(why.contains("did not run: ") && why.contains("getpid()"), "{why}");
}

#[test]
fn a_command_fires_the_programs_when_given_after_trigger() {
    let _m = common::machine();
    let tp = object("tp_openat.bpf.o");
    let args = ["run", &tp, "--samples", "5", "--batch-ms", "2", "--no-store", "--format", "json", "--trigger", "--"];
    let o = bpfbench(&[&args[..], &["cat", "/proc/self/stat"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = doc["results"].as_array().unwrap().clone();
    let r = row(&rows, "on_openat");
    assert_eq!(r["attached"]["trigger"], "a run of `cat /proc/self/stat`");
    // A process's start opens its libraries: several runs per event, at least one.
    assert!(r["attached"]["runs"].as_u64() >= r["attached"]["events"].as_u64(), "{r:#}");
}

#[test]
fn bad_attach_input_gets_one_line_errors() {
    let tp = object("tp_getppid.bpf.o");
    assert_one_line_error(&["run", &tp, "--trigger", "nope"], "--trigger nope: give one of getpid, openat");
    assert_one_line_error(&["run", &tp, "--trigger"], "--trigger needs a NAME, or a command after --");
    assert_one_line_error(
        &["run", &tp, "--attach", "tp/nocategory"],
        "names no target: attach it with --attach tp/CATEGORY/NAME",
    );
    assert_one_line_error(&["run", &tp, "--program", "nope"], "has no program 'nope'; it has count_getppid");
    assert_one_line_error(
        &["run", &tp, "--trigger", "sockmap-message"],
        "tp_getppid.bpf.o has no sockmap or sockhash: sk_msg and sk_skb programs attach to one",
    );
    assert_one_line_error(&["overhead"], "give the tool's command after --: bpfbench overhead -- opensnoop");
    assert_one_line_error(&["overhead", "--", "/nonexistent-tool"], "starting /nonexistent-tool");
}

#[test]
fn a_run_stopped_by_sigint_detaches_everything_and_a_killed_runs_cgroup_is_removed_by_the_next() {
    let _m = common::machine();
    let before = Snapshot::take();
    let cgroup = object("cgroup_connect4.bpf.o");
    let start = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_bpfbench"))
            .args(["run", &cgroup, "--samples", "500", "--no-store"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let own_cgroup = |pid: u32| {
        let root = bpfbench::system::cgroup::mount_point().unwrap();
        root.join(format!("bpfbench-{pid}"))
    };
    let wait_for = |path: &std::path::Path| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while !path.exists() {
            assert!(std::time::Instant::now() < deadline, "{} never appeared", path.display());
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        // Past the set-up: the programs attached and measured.
        std::thread::sleep(std::time::Duration::from_secs(3));
    };
    // SIGINT: the run stops between batches and puts everything back.
    let mut run = start();
    wait_for(&own_cgroup(run.id()));
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    before.assert_nothing_left("a run stopped by SIGINT");
    // SIGKILL: the kernel drops its links with its descriptors; its empty
    // cgroup stays until the next run removes it.
    let mut run = start();
    let left = own_cgroup(run.id());
    wait_for(&left);
    run.kill().unwrap();
    run.wait().unwrap();
    assert!(left.exists(), "a SIGKILL leaves the cgroup");
    let (code, _, err) = run_json(&[&cgroup]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!left.exists(), "the next run removes {}", left.display());
    before.assert_nothing_left("a killed run and the next");
    // ... and so does `bpfbench cleanup`, saying what it removed.
    let mut run = start();
    let left = own_cgroup(run.id());
    wait_for(&left);
    run.kill().unwrap();
    run.wait().unwrap();
    let out = bpfbench(&["cleanup"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&left.display().to_string()), "{}", stdout(&out));
    assert!(!left.exists(), "cleanup removes {}", left.display());
    let out = bpfbench(&["cleanup"]);
    assert!(stdout(&out).starts_with("nothing to remove"), "{}", stdout(&out));
    before.assert_nothing_left("a killed run and bpfbench cleanup");
}

/// Debian's libbpf-tools (the set-up script installs them for the tests).
fn tool(name: &str) -> String {
    let path = format!("/usr/sbin/{name}");
    assert!(std::path::Path::new(&path).exists(), "{path} is missing: scripts/setup.sh test installs libbpf-tools");
    path
}

#[test]
fn overhead_measures_opensnoop_as_it_runs() {
    let _m = common::machine();
    let before = Snapshot::take();
    let o = bpfbench(&[
        "overhead",
        "--samples",
        "5",
        "--batch-ms",
        "2",
        "--no-store",
        "--format",
        "json",
        "--",
        &tool("opensnoop"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rows = doc["results"].as_array().unwrap();
    for name in ["tracepoint__syscalls__sys_enter_openat", "tracepoint__syscalls__sys_exit_openat"] {
        let r = row(rows, name);
        let point = r["attached"]["point"].as_str().unwrap().to_string();
        assert!(point.starts_with("tp/syscalls/sys_e"), "{point}");
        assert_timed_on_its_hook(r, &point, 1.0);
    }
    let first = rows.iter().find(|r| r["attached"]["tool"].is_object()).expect("the tool's cost on one row");
    let cost = &first["attached"]["tool"];
    assert!(cost["cpu_ns_per_event"].as_f64().unwrap() > 0.0, "{cost:#}");
    // opensnoop prints a line per open it sees: the trigger's, and a few of other processes'.
    let lines = cost["lines_per_event"].as_f64().unwrap();
    assert!((0.9..1.5).contains(&lines), "{lines} lines per event");
    assert_slowdown(first, 2);
    assert!(
        first["attached"]["slowdown"]["phases"].as_str().unwrap().contains("rounds of opensnoop running and stopped")
    );
    assert!(
        std::process::Command::new("pgrep").args(["-x", "opensnoop"]).status().unwrap().code() == Some(1),
        "opensnoop outlived the run"
    );
    before.assert_nothing_left("overhead -- opensnoop");
}

#[test]
fn a_tool_started_by_overhead_dies_with_a_killed_run() {
    let _m = common::machine();
    let mut run = std::process::Command::new(env!("CARGO_BIN_EXE_bpfbench"))
        .args(["overhead", "--samples", "500", "--no-store", "--", &tool("execsnoop")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let running = || std::process::Command::new("pgrep").args(["-x", "execsnoop"]).status().unwrap().success();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !running() {
        assert!(std::time::Instant::now() < deadline, "execsnoop never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    run.kill().unwrap();
    run.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while running() {
        assert!(std::time::Instant::now() < deadline, "execsnoop outlived the killed run");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
