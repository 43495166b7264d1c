//! The traffic generator against the kernel: frames sent out of a veth
//! arrive at an XDP counter on its peer, in the namespace the topology
//! made, with the spec's flows and valid checksums.

use crate::common;

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::process::Command;

use bpfbench::traffic::topology::{Topology, XdpMode, remove_leftovers};
use common::{bpfbench, stderr, stdout, test_object};
use libbpf_rs::{MapCore, MapFlags};

/// The counter program attached to the topology's inner end.
struct Counter {
    obj: libbpf_rs::Object,
    _link: std::os::fd::OwnedFd,
}

#[derive(Debug, Default, PartialEq)]
struct Totals {
    frames: u64,
    bad_ip_csum: u64,
    bad_l4_csum: u64,
    unchecked: u64,
    other: u64,
}

impl Counter {
    fn attach(t: &Topology) -> Counter {
        Counter::attach_program(t, "xdp_flow_count")
    }

    /// xdp_flow_count, or another program of the same maps (xdp_flow_scribble).
    fn attach_program(t: &Topology, name: &str) -> Counter {
        // Not pinned: gen, a child process, inherits this thread's CPUs.
        bpfbench::system::check_privileges().unwrap();
        let obj = libbpf_rs::ObjectBuilder::default()
            .open_file(test_object(&format!("{name}.bpf.o")))
            .unwrap()
            .load()
            .unwrap();
        let prog = obj.progs().find(|p| p.name() == name).unwrap();
        let link = t.attach_inner(prog.as_fd(), XdpMode::Native).unwrap();
        Counter { obj, _link: link }
    }

    fn map(&self, name: &str) -> libbpf_rs::Map<'_> {
        self.obj.maps().find(|m| m.name() == name).unwrap()
    }

    fn totals(&self) -> Totals {
        let v = self.map("totals").lookup(&0u32.to_ne_bytes(), MapFlags::ANY).unwrap().unwrap();
        let n = |i: usize| u64::from_ne_bytes(v[i * 8..i * 8 + 8].try_into().unwrap());
        Totals { frames: n(0), bad_ip_csum: n(1), bad_l4_csum: n(2), unchecked: n(3), other: n(4) }
    }

    /// Frames per flow: (source address, source port, destination port) -> count.
    fn flows(&self) -> BTreeMap<(Vec<u8>, u16, u16), u64> {
        let m = self.map("flows");
        m.keys()
            .map(|k| {
                let v = m.lookup(&k, MapFlags::ANY).unwrap().unwrap();
                let src = if k[0] == 4 { k[8..12].to_vec() } else { k[8..24].to_vec() };
                let port = |i: usize| u16::from_be_bytes([k[i], k[i + 1]]);
                ((src, port(2), port(4)), u64::from_ne_bytes(v[..8].try_into().unwrap()))
            })
            .collect()
    }
}

fn gen_json(args: &[&str]) -> serde_json::Value {
    let o = bpfbench(&[&["gen"], args, &["--format", "json"]].concat());
    assert!(o.status.success(), "gen {args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)))
}

#[test]
fn every_frame_arrives_with_the_specs_flows_and_valid_checksums() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    let counter = Counter::attach(&t);
    // 4 sources x 256 source ports = 1024 flows, each sent 3 times; paced
    // so that the counter (which sums every byte) keeps up.
    let spec = "eth/ipv4(src=10.9.0.1-10.9.0.4,dst=10.9.1.1)/udp(sport=1000-1255,dport=53)/payload(18)";
    let doc = gen_json(&[&t.outer, "--packet", spec, "--count", "3072", "--rate", "200k"]);
    assert_eq!(doc["schema"], "bpfbench.gen/1");
    assert_eq!(doc["sent"], 3072);
    assert_eq!(doc["flows"], 1024);
    assert_eq!(doc["stopped_by"], "count");
    assert_eq!(doc["errors"], 0, "{doc}");
    assert_eq!(doc["device_tx"], 3072, "the veth counts what its peer's XDP took");
    let totals = counter.totals();
    assert_eq!(totals, Totals { frames: 3072, ..Default::default() }, "every frame arrived, parsed, checksums valid");
    let flows = counter.flows();
    assert_eq!(flows.len(), 1024);
    for src in 1..=4u8 {
        for sport in 1000..=1255u16 {
            assert_eq!(flows.get(&(vec![10, 9, 0, src], sport, 53)), Some(&3), "10.9.0.{src}:{sport}");
        }
    }
}

#[test]
fn frames_dropped_are_blamed_on_what_dropped_them() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    // No program on the peer: every frame is refused, and the line says why.
    let o = bpfbench(&["gen", &t.outer, "--count", "20000"]);
    let out = stdout(&o);
    assert!(out.contains("took none of the frames") && out.contains("only when its peer has an XDP program"), "{out}");
    // A peer with a program that takes frames more slowly than they come
    // counts what found its ring full as dropped (this machine's veths pace
    // the sender instead, so the counts are set as such a veth gives them):
    // the program is not said to be missing.
    let counter = Counter::attach(&t);
    let mut rec: bpfbench::record::traffic::GenRecord =
        serde_json::from_value(gen_json(&[&t.outer, "--count", "20000"])).unwrap();
    assert_eq!((rec.device_tx, rec.rate.errors, counter.totals().frames), (Some(20000), Some(0), 20000));
    (rec.device_tx, rec.rate.errors) = (Some(12000), Some(8000));
    let out = bpfbench::report::gen_table::summary(&rec);
    assert!(!out.contains("only when its peer has an XDP program"), "{out}");
    assert!(out.contains("dropped 40.0% of the frames: its peer took them more slowly than they came"), "{out}");
}

#[test]
fn frames_a_receiver_overwrote_go_out_whole_again() {
    let _machine = common::machine();
    // The receiver writes over every frame's headers; the page pool hands
    // the same pages back to the generator, which must not send the garbage.
    let t = Topology::create().unwrap();
    let counter = Counter::attach_program(&t, "xdp_flow_scribble");
    let spec = "eth/ipv4(src=10.9.0.1-10.9.0.4,dst=10.9.1.1)/udp(sport=1000-1255,dport=53)/payload(18)";
    for order in ["sequential", "random"] {
        let doc = gen_json(&[&t.outer, "--packet", spec, "--count", "3072", "--rate", "200k", "--flow-order", order]);
        assert_eq!(doc["sent"], 3072, "{order}");
    }
    assert_eq!(counter.totals(), Totals { frames: 6144, ..Default::default() }, "every frame parsed, checksums valid");
    let flows = counter.flows();
    assert!(
        flows.keys().all(|(src, sport, dport)| src[..3] == [10, 9, 0]
            && (1..=4).contains(&src[3])
            && (1000..=1255).contains(sport)
            && *dport == 53),
        "{flows:?}"
    );
    // Sequential order sends each of the 1024 flows 3 times; random adds more.
    assert_eq!(flows.len(), 1024);
    assert!(flows.values().all(|&n| n >= 3), "{flows:?}");
}

#[test]
fn two_threads_send_ipv6_tcp_flows_padded_to_size() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    let counter = Counter::attach(&t);
    let spec = "eth/ipv6(src=fc00::1:fff0-fc00::2:000f,dst=fc00::99)/tcp(sport=7,dport=80-111,flags=A)";
    let doc =
        gen_json(&[&t.outer, "--packet", spec, "--size", "128", "--threads", "2", "--count", "4096", "--rate", "100k"]);
    assert_eq!(doc["threads"], 2);
    assert_eq!(doc["frame_bytes"][0], 128);
    assert_eq!(doc["sent"], 4096);
    assert_eq!(doc["errors"], 0, "{doc}");
    assert_eq!(counter.totals(), Totals { frames: 4096, ..Default::default() });
    let flows = counter.flows();
    // 32 sources across a 16-bit word boundary x 32 ports; each thread sends each flow twice.
    assert_eq!(flows.len(), 1024);
    assert!(flows.values().all(|&n| n == 4), "{flows:?}");
    let last = flows.keys().map(|(src, _, _)| src.clone()).max().unwrap();
    assert_eq!(last[12..], [0, 2, 0, 0x0f]);
}

#[test]
fn random_order_draws_flows_from_the_spec_unevenly() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    let counter = Counter::attach(&t);
    let spec = "eth/ipv4(src=10.9.0.1-10.9.0.4)/udp(sport=2000-2003)";
    let doc = gen_json(&[&t.outer, "--packet", spec, "--count", "2000", "--rate", "200k", "--flow-order", "random"]);
    assert_eq!(doc["flow_order"], "random");
    assert_eq!(counter.totals(), Totals { frames: 2000, ..Default::default() });
    let flows = counter.flows();
    // All 16 flows appear (missing one has odds of about 16 x (15/16)^2000)
    // and only those; sequential order would give each exactly 125.
    assert_eq!(flows.len(), 16, "{flows:?}");
    assert!(
        flows.keys().all(|(src, sport, _)| src[..3] == [10, 9, 0]
            && (1..=4).contains(&src[3])
            && (2000..=2003).contains(sport))
    );
    assert!(flows.values().any(|&n| n != 125), "{flows:?}");
}

#[test]
fn rate_paces_frames_over_the_duration() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    let counter = Counter::attach(&t);
    let doc = gen_json(&[&t.outer, "--rate", "20000", "--duration", "1"]);
    let sent = doc["sent"].as_u64().unwrap();
    // Generous: pacing is measured in the note; this only shows it paces.
    assert!((19_000..=21_000).contains(&sent), "{sent} frames at 20 kpps for 1 s");
    assert_eq!(counter.totals().frames, sent);
    assert_eq!(doc["stopped_by"], "duration");
    assert!(!doc["seconds"].as_array().unwrap().is_empty());
}

#[test]
fn bad_inputs_get_one_line_errors() {
    let _machine = common::machine();
    let cases: [(&[&str], &str); 7] = [
        (&["gen", "lo", "--tcp", "127.0.0.1:9", "--threads", "2"], "leave --threads at 1"),
        (&["gen", "lo", "--tcp", "127.0.0.1:9", "--count", "1"], "native XDP on lo"),
        (&["gen", "bpfbench-nosuch", "--count", "1"], "no network interface 'bpfbench-nosuch'"),
        (
            &["gen", "lo", "--packet", "eth/ipv4(ttl=1-9)/udp", "--count", "1"],
            "a range in ipv4.ttl cannot vary per frame",
        ),
        (&["gen", "lo", "--packet", "eth/ipv5", "--count", "1"], "unknown layer 'ipv5'"),
        (&["gen", "lo", "--size", "20", "--count", "1"], "--size 20 is shorter than the packet's"),
        (&["gen", "lo", "--batch-size", "0", "--count", "1"], "--batch-size must be 1 to 256"),
    ];
    for (args, needle) in cases {
        common::assert_one_line_error(args, needle);
    }
    let o = bpfbench(&["gen", "lo", "--rate", "fast"]);
    assert!(stderr(&o).contains("not a rate"), "{}", stderr(&o));
}

#[test]
fn a_killed_runs_namespace_and_veths_are_removed_by_the_next() {
    let _machine = common::machine();
    // A pid that is gone: a child that has exited.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let (ns, g, d) = (format!("bpfbench-{dead}"), format!("bpfbench{dead:x}g"), format!("bpfbench{dead:x}d"));
    let ip = |args: &[&str]| assert!(Command::new("ip").args(args).status().unwrap().success(), "ip {args:?}");
    ip(&["netns", "add", &ns]);
    ip(&["link", "add", &g, "type", "veth", "peer", "name", &d, "netns", &ns]);
    let removed = remove_leftovers().unwrap();
    assert!(removed.contains(&format!("veth {g}")) && removed.contains(&format!("netns {ns}")), "{removed:?}");
    let links = String::from_utf8(Command::new("ip").args(["-o", "link"]).output().unwrap().stdout).unwrap();
    assert!(!links.contains(&g), "{links}");
    assert!(!std::path::Path::new("/run/netns").join(&ns).exists());
    // A live run's are left alone: this process is alive.
    let t = Topology::create().unwrap();
    assert!(remove_leftovers().unwrap().is_empty());
    let (outer, netns) = (t.outer.clone(), t.netns.clone());
    drop(t);
    let links = String::from_utf8(Command::new("ip").args(["-o", "link"]).output().unwrap().stdout).unwrap();
    assert!(
        !links.contains(&outer) && !std::path::Path::new("/run/netns").join(&netns).exists(),
        "dropped topology removed"
    );
}

/// A listening socket in the topology's namespace, behind an XDP_PASS
/// program on the inner end (a veth takes redirected frames only into XDP).
struct Receiver {
    peer: std::net::SocketAddr,
    reader: std::thread::JoinHandle<(Vec<u8>, usize)>,
    _pass: (libbpf_rs::Object, std::os::fd::OwnedFd),
}

impl Receiver {
    /// Reads one connection to its end; keeps the stream's first `keep` bytes.
    fn start(t: &Topology, ipv6: bool, keep: usize) -> Receiver {
        Receiver::behind(t, "xdp_pass.bpf.o", ipv6, keep)
    }

    /// The same behind another XDP program on the inner end.
    fn behind(t: &Topology, object: &str, ipv6: bool, keep: usize) -> Receiver {
        let (_, inner) = t.add_addresses(ipv6).unwrap();
        let obj = libbpf_rs::ObjectBuilder::default().open_file(test_object(object)).unwrap().load().unwrap();
        let prog = obj.progs().next().unwrap();
        let link = t.attach_inner(prog.as_fd(), XdpMode::Native).unwrap();
        let listener = t.in_netns(move || Ok(std::net::TcpListener::bind((inner, 0))?)).unwrap();
        let peer = listener.local_addr().unwrap();
        let reader = std::thread::spawn(move || {
            use std::io::Read;
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
            let (mut kept, mut total, mut buf) = (Vec::new(), 0usize, vec![0u8; 1 << 16]);
            loop {
                let n = s.read(&mut buf).unwrap();
                if n == 0 {
                    return (kept, total);
                }
                let room = keep.saturating_sub(kept.len()).min(n);
                kept.extend_from_slice(&buf[..room]);
                total += n;
            }
        });
        Receiver { peer, reader, _pass: (obj, link) }
    }
}

#[test]
fn tcp_mode_moves_the_counted_segments_into_a_socket() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    let rx = Receiver::start(&t, false, 1 << 20);
    let doc = gen_json(&[&t.outer, "--tcp", &rx.peer.to_string(), "--count", "20000"]);
    let (kept, total) = rx.reader.join().unwrap();
    let tcp = &doc["tcp"];
    let payload = tcp["payload_bytes"].as_u64().unwrap() as usize;
    // A full MSS with timestamps on a 2000-byte MTU.
    assert_eq!(tcp["mss"], 2000 - 20 - 20 - 12, "{doc}");
    assert_eq!(payload, 1948);
    assert_eq!(total, 20_000 * payload, "{doc}");
    assert_eq!(tcp["bytes_acked"], total as u64);
    assert_eq!(tcp["fin_acked"], true);
    assert_eq!(doc["stopped_by"], "count");
    assert_eq!(doc["sent"], tcp["segments"]);
    assert_eq!(tcp["segments"].as_u64().unwrap() - tcp["retransmitted"].as_u64().unwrap(), 20_000, "{doc}");
    // In order and whole: every segment carries the same bytes.
    let expected: Vec<u8> = (0..kept.len()).map(|i| bpfbench::traffic::tcp::payload_byte(i % payload)).collect();
    assert!(kept == expected, "the stream's bytes differ from the segments'");
}

#[test]
fn tcp_mode_recovers_from_lost_segments() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    // Drops one data segment in 500.
    let rx = Receiver::behind(&t, "xdp_lossy.bpf.o", false, 1 << 22);
    let doc = gen_json(&[&t.outer, "--tcp", &rx.peer.to_string(), "--count", "30000"]);
    let (kept, total) = rx.reader.join().unwrap();
    let tcp = &doc["tcp"];
    let payload = tcp["payload_bytes"].as_u64().unwrap() as usize;
    assert_eq!(total, 30_000 * payload, "{doc}");
    assert_eq!(tcp["fin_acked"], true, "{doc}");
    assert!(tcp["retransmitted"].as_u64().unwrap() > 0, "{doc}");
    let rewinds = tcp["rewinds_dupack"].as_u64().unwrap() + tcp["rewinds_timer"].as_u64().unwrap();
    assert!(rewinds >= 30_000 / 500 / 2, "at least one rewind per two losses: {doc}");
    let expected: Vec<u8> = (0..kept.len()).map(|i| bpfbench::traffic::tcp::payload_byte(i % payload)).collect();
    assert!(kept == expected, "the stream's bytes differ from the segments'");
}

#[test]
fn tcp_mode_gives_up_a_stream_its_receiver_stops_acknowledging() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    // The handshake passes; every data segment is dropped: nothing is ever acknowledged.
    let rx = Receiver::behind(&t, "xdp_blackhole.bpf.o", false, 0);
    let started = std::time::Instant::now();
    // Bounded here, so that a run that never ends fails the test (Ctrl-C's
    // exit, 130) instead of hanging it.
    let o = std::process::Command::new("timeout")
        .args([
            "-s",
            "INT",
            "60",
            env!("CARGO_BIN_EXE_bpfbench"),
            "gen",
            &t.outer,
            "--tcp",
            &rx.peer.to_string(),
            "--count",
            "1000",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(1), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(err.contains("the receiver acknowledged nothing new for 5 s"), "{err}");
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["stopped_by"], "stalled", "{doc}");
    assert_eq!(doc["tcp"]["bytes_acked"], 0, "{doc}");
    assert!(
        took < std::time::Duration::from_secs(30),
        "ended after the stall and the FIN's grace, not never: {took:?}"
    );
    // The reader gets no byte and times out on its own (its thread is not joined).
}

#[test]
fn tcp_mode_ends_at_the_duration_before_a_count_it_did_not_reach() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    let rx = Receiver::start(&t, false, 0);
    let doc = gen_json(&[&t.outer, "--tcp", &rx.peer.to_string(), "--count", "1000000", "--duration", "0.3"]);
    let (_, total) = rx.reader.join().unwrap();
    assert_eq!(doc["stopped_by"], "duration", "{doc}");
    assert_eq!(doc["tcp"]["fin_acked"], true, "{doc}");
    assert_eq!(doc["tcp"]["bytes_acked"], total as u64, "{doc}");
}

#[test]
fn tcp_mode_over_ipv6_ends_a_timed_stream_with_fin() {
    let _machine = common::machine();
    let t = Topology::create().unwrap();
    let rx = Receiver::start(&t, true, 0);
    let doc = gen_json(&[&t.outer, "--tcp", &rx.peer.to_string(), "--duration", "0.5", "--size", "600"]);
    let (_, total) = rx.reader.join().unwrap();
    let tcp = &doc["tcp"];
    assert_eq!(doc["frame_bytes"][0], 600);
    // Ethernet, IPv6, TCP with timestamps.
    assert_eq!(tcp["payload_bytes"], 600 - 14 - 40 - 32);
    assert_eq!(doc["stopped_by"], "duration");
    assert_eq!(tcp["fin_acked"], true, "{doc}");
    assert!(total > 0);
    assert_eq!(tcp["bytes_acked"], total as u64, "{doc}");
    assert!(doc["seconds"][0]["goodput_gbps"].as_f64().unwrap() > 0.0, "{doc}");
}
