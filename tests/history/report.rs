//! `bpfbench report`: a 200-run history rendered to one HTML file and
//! opened in a real browser (Debian's headless Chromium): every section and
//! plot is there, nothing was loaded from anywhere, and it lays out at a
//! phone's width and prints.

use crate::common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use bpfbench::history::History;
use bpfbench::record::live::parse_live;
use bpfbench::record::{Figure, Guest, Runtime, Testbed};
use common::{bpfbench, paired_record, run_of, stderr, temp_dir};

const SCENARIOS: [&str; 24] = [
    "tcp-v4-lru-hit",
    "tcp-v4-lru-miss",
    "tcp-v6-lru-hit",
    "tcp-v6-lru-miss",
    "udp-v4-lru-hit",
    "udp-v4-lru-miss",
    "udp-v6-lru-hit",
    "udp-v6-lru-miss",
    "tcp-v4-syn",
    "tcp-v6-syn",
    "tcp-v4-rst",
    "tcp-v6-rst",
    "icmp-v4-echo",
    "icmp-v6-echo",
    "quic-v4",
    "quic-v6",
    "gue-v4",
    "gue-v6",
    "pass-non-ip",
    "drop-v4-frag",
    "drop-v6-frag",
    "pass-unknown-vip",
    "pass-arp",
    "drop-ttl",
];

/// 200 runs of 24 benchmarks on one testbed, one a minute: the first
/// benchmark 6 % slower from run 151 on (a new commit); the newest run on
/// this kernel also timed two scenarios in userspace; three older runs in an
/// emulated guest of another kernel.
fn two_hundred_runs(path: &Path) {
    let mut h = History::open(path).unwrap();
    for i in 0..200u64 {
        let jitter = 1.0 + ((i * 7919 % 13) as f64 - 6.0) / 500.0;
        let medians: Vec<(&str, f64)> = SCENARIOS
            .iter()
            .enumerate()
            .map(|(k, s)| (*s, (20.0 + 12.0 * k as f64) * jitter * if k == 0 && i >= 150 { 1.06 } else { 1.0 }))
            .collect();
        let mut r = run_of(&medians);
        r.environment.started_at = 1_800_000_000 + i * 60;
        r.environment.git_commit = if i >= 150 { "c2".into() } else { "c1".into() };
        r.environment.testbed = Some(Testbed { id: "t1".into(), name: "lab-1".into() });
        if (100..103).contains(&i) {
            r.environment.kernel = "6.1.0-28-amd64".into();
            r.environment.guest =
                Some(Guest { image: "vmlinuz-6.1".into(), cmdline: String::new(), accelerator: "tcg".into() });
        }
        if i == 199 {
            for k in 0..2 {
                let mut user = r.results[k].clone();
                user.runtime = Runtime::User;
                let Some(Figure::Time(m)) = user.figure.as_mut() else { panic!("timed") };
                m.summary.median *= 0.8;
                r.results.push(user);
            }
        }
        h.store(&r).unwrap();
    }
    let mut p = paired_record();
    p.environment.testbed = Some(Testbed { id: "t1".into(), name: "lab-1".into() });
    h.store_paired(&p).unwrap();
    let live = parse_live(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/live-v1.json")).unwrap(),
    )
    .unwrap();
    h.store_live(&live).unwrap();
}

/// Headless Chromium, as the project's tests start it (a fresh profile, no
/// background connections), given at most a minute.
fn chromium(profile: &Path, args: &[&str]) -> Output {
    // Files, not pipes: a page's DOM outgrows a pipe nobody reads meanwhile.
    std::fs::create_dir_all(profile).unwrap();
    let (out, err) = (profile.join("stdout"), profile.join("stderr"));
    let mut child = Command::new("chromium")
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"])
        .args(["--disable-background-networking", "--disable-component-update", "--disable-sync"])
        // INFO level: the console's messages (a refused load among them).
        .args(["--enable-logging=stderr", "--log-level=0"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .expect("chromium is not installed: scripts/setup.sh test installs Debian's chromium");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            // The whole group: the browser's renderer and helper processes too.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("chromium did not finish in a minute");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Helpers still shutting down go with it: nothing is left running.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    end_processes_of(profile);
    Output { status, stdout: std::fs::read(&out).unwrap(), stderr: std::fs::read(&err).unwrap() }
}

/// Ends every process started with this profile (the crash handler runs in
/// a session of its own), and waits until they are gone.
fn end_processes_of(profile: &Path) {
    let needle = profile.to_string_lossy().into_owned();
    let start = Instant::now();
    loop {
        let pids: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
            })
            .collect();
        if pids.is_empty() {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "chromium's processes {pids:?} do not end");
        for pid in pids {
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What the browser's console said of the page: a page without scripts says
/// nothing unless a load failed or its policy blocked one.
fn load_failures(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE") || l.contains("net::ERR_")).collect()
}

#[test]
fn a_two_hundred_run_report_opens_whole_in_a_real_browser() {
    let _machine = common::machine();
    let dir = temp_dir("report");
    let db = dir.join("history.sqlite");
    two_hundred_runs(&db);
    let html = dir.join("report.html");
    let start = Instant::now();
    let o = bpfbench(&["report", "--db", db.to_str().unwrap(), "-o", html.to_str().unwrap()]);
    let took = start.elapsed();
    assert!(o.status.success(), "{}", stderr(&o));
    eprintln!(
        "report over 200 runs x 24 benchmarks: {:.3} s, {} bytes",
        took.as_secs_f64(),
        html.metadata().unwrap().len()
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains("<script") && !page.contains("src=\"http") && !page.contains("href=\"http"),
        "self-contained"
    );

    let profile = dir.join("profile");
    let url = format!("file://{}", html.display());
    let o = chromium(&profile, &["--dump-dom", &url]);
    let dom = String::from_utf8_lossy(&o.stdout);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    assert!(load_failures(&log).is_empty(), "the page failed to load something: {:?}", load_failures(&log));
    for id in ["latest", "runtimes", "kernels", "paired", "live", "trends"] {
        assert!(dom.contains(&format!("<section id=\"{id}\">")), "section {id} missing");
    }
    // A plot of the latest run, one of the paired comparison, one of the
    // live sweep, and a trend per benchmark.
    // The emulated guest's runs are series of their own (24 more trends).
    assert_eq!(dom.matches("<svg").count(), 1 + 1 + 1 + 24 + 24, "plots");
    assert!(
        dom.contains("xdp-lb/drop-ttl on lab-1, in an emulated (TCG) guest of vmlinuz-6.1: 3 runs"),
        "the guest's series"
    );
    assert!(
        dom.contains(
            "xdp-lb/tcp-v4-lru-hit on lab-1: 197 runs; change at run 151 (+6.0 %, p = 0.002, 147 | 50 runs, c1 → c2)"
        ),
        "the change point (the host's runs): {:?}",
        dom.lines().filter(|l| l.contains("tcp-v4-lru-hit on")).collect::<Vec<_>>()
    );
    assert!(
        dom.contains("6.1.0-28-amd64 (TCG)") && dom.contains("emulated guest"),
        "the kernel matrix, its emulated column marked"
    );
    assert_eq!(dom.matches("<td>0.800</td>").count(), 2, "kernel against userspace: two scenarios, 0.8x each");
    assert!(dom.contains("[21.10, 21.40] n=200</td>"), "each median with its interval and samples");
    let matrix = &dom[dom.find("<section id=\"kernels\">").unwrap()..];
    let matrix = &matrix[..matrix.find("</section>").unwrap()];
    assert_eq!(
        matrix.matches("<tr>").count(),
        1 + 24 + 2,
        "the matrix keeps kernel and userspace rows apart: {matrix}"
    );
    assert!(dom.contains("a.bpf.o") && dom.contains("<b>slower</b>"), "the paired comparison");
    assert!(dom.contains("<h3>live 1: xdp-lb (native XDP)"), "the live sweep");

    // At a phone's width, and on paper.
    let shot = dir.join("phone.png");
    let o = chromium(&profile, &["--window-size=412,2400", &format!("--screenshot={}", shot.display()), &url]);
    assert!(o.status.success() && shot.metadata().unwrap().len() > 10_000, "{}", String::from_utf8_lossy(&o.stderr));
    let pdf = dir.join("report.pdf");
    let o = chromium(&profile, &[&format!("--print-to-pdf={}", pdf.display()), &url]);
    assert!(o.status.success() && pdf.metadata().unwrap().len() > 10_000, "{}", String::from_utf8_lossy(&o.stderr));
    if let Some(keep) = std::env::var_os("BPFBENCH_KEEP_REPORT") {
        // For the record: measurements/report-target.sh keeps what the browser drew.
        std::fs::create_dir_all(&keep).unwrap();
        for f in [&html, &shot, &pdf] {
            std::fs::copy(f, Path::new(&keep).join(f.file_name().unwrap())).unwrap();
        }
    }

    // Trends of one benchmark: its own only.
    let one = dir.join("one.html");
    let o = bpfbench(&["report", "--db", db.to_str().unwrap(), "-o", one.to_str().unwrap(), "-s", "drop-ttl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page_one = std::fs::read_to_string(&one).unwrap();
    let trends = &page_one[page_one.find("<section id=\"trends\">").unwrap()..];
    assert_eq!(trends.matches("<h3>").count(), 2, "drop-ttl on the host and in the guest");
    assert!(trends.contains("xdp-lb/drop-ttl on lab-1: 197 runs") && !trends.contains("tcp-v4-lru-hit"));

    // The check above sees a page that loads something: the same page with
    // one outside image is refused by its own policy, and the log says so.
    let leaky = dir.join("leaky.html");
    std::fs::write(&leaky, page.replace("</h1>", "</h1><img src=\"http://198.51.100.1/x.png\">")).unwrap();
    let o = chromium(&profile, &["--dump-dom", &format!("file://{}", leaky.display())]);
    assert!(!load_failures(&String::from_utf8_lossy(&o.stderr)).is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn an_empty_selection_and_a_missing_history_are_one_line_errors() {
    let _machine = common::machine();
    let dir = temp_dir("report-errors");
    let db = dir.join("history.sqlite");
    let mut h = History::open(&db).unwrap();
    h.store(&run_of(&[("tcp-v4-lru-hit", 100.0)])).unwrap();
    let out = dir.join("r.html");
    let (db, out) = (db.to_str().unwrap(), out.to_str().unwrap());
    common::assert_one_line_error(&["report", "--db", db, "-o", out, "-s", "nope"], "no stored run measured 'nope'");
    common::assert_one_line_error(&["report", "--db", db, "-o", out, "--testbed", "nowhere"], "is selected");
    let missing = dir.join("none.sqlite");
    common::assert_one_line_error(&["report", "--db", missing.to_str().unwrap(), "-o", out], "no history yet");
    assert!(!Path::new(out).exists(), "no file is left by a failed report");
}
