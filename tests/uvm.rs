//! The userspace runtime against the kernel: the same prepared object run
//! in the interpreter and with BPF_PROG_TEST_RUN gives the same verdict and
//! packet; what the interpreter counts is deterministic; bytecode the
//! verifier would refuse ends in an error naming the instruction.

mod common;

use std::os::fd::{AsFd, AsRawFd};

use bpfbench::insn::{Insn, call_helper, exit, ja, ldx, mov64_imm, st_imm};
use bpfbench::kernel::prepared;
use bpfbench::kernel::test_run;
use bpfbench::uvm::helpers::Helpers;
use bpfbench::uvm::maps::UserMaps;
use bpfbench::uvm::runtime::Engine;
use bpfbench::uvm::{self, Counts, Interpreter, xdp};
use common::test_object;
use libbpf_rs::{MapCore, MapFlags};

/// A UDP frame with distinct bytes everywhere.
fn frame() -> Vec<u8> {
    (0..98u8).map(|i| i.wrapping_mul(37).wrapping_add(11)).collect()
}

/// An object prepared by libbpf, loaded, and mirrored in userspace.
struct Both {
    obj: libbpf_rs::Object,
    insns: Vec<Insn>,
    maps: UserMaps,
    prog: String,
}

impl Both {
    fn open(object: &str, prog: &str) -> Both {
        Both::open_with(object, prog, |_| {})
    }

    /// Opens, runs `setup` on the loaded object (the kernel's maps), then mirrors.
    fn open_with(object: &str, prog: &str, setup: impl FnOnce(&libbpf_rs::Object)) -> Both {
        bpfbench::system::check_privileges().unwrap();
        let mut open = libbpf_rs::ObjectBuilder::default().open_file(test_object(object)).unwrap();
        bpfbench::kernel::prepared::prepare(&mut open).unwrap();
        let insns = prepared::insns_of(&open.progs().find(|p| p.name() == prog).unwrap());
        let obj = open.load().unwrap();
        setup(&obj);
        let maps = UserMaps::mirror(&obj).unwrap();
        Both { obj, insns, maps, prog: prog.into() }
    }

    /// One run in each, `helpers` claiming the CPU the kernel runs on.
    fn run_with(&mut self, helpers: &mut Helpers, packet: &[u8]) {
        xdp::run(&Interpreter::new(&self.insns), packet, helpers, Some(&mut self.maps), &mut Counts::default())
            .unwrap();
        let p = self.obj.progs().find(|p| p.name() == self.prog.as_str()).unwrap();
        test_run::run(p.as_fd(), packet).unwrap();
    }

    /// The program's global `long last`, in the kernel and in userspace.
    fn kernel_last(&self) -> i64 {
        let bss = self.obj.maps().find(|m| m.name().to_string_lossy().ends_with(".bss")).unwrap();
        i64::from_ne_bytes(bss.lookup(&0u32.to_ne_bytes(), MapFlags::ANY).unwrap().unwrap()[..8].try_into().unwrap())
    }

    fn user_last(&self) -> i64 {
        let bss = self.maps.maps.iter().find(|m| m.def.name.ends_with(".bss")).unwrap();
        i64::from_ne_bytes(bss.entries()[0].1[0][..8].try_into().unwrap())
    }

    /// One run in userspace, then one in the kernel.
    fn run(&mut self, packet: &[u8]) -> (uvm::PacketOutcome, Counts, test_run::RunOutput) {
        let mut counts = Counts::default();
        let user = xdp::run(
            &Interpreter::new(&self.insns),
            packet,
            &mut Helpers::new(0, 1),
            Some(&mut self.maps),
            &mut counts,
        )
        .unwrap();
        let p = self.obj.progs().find(|p| p.name() == self.prog.as_str()).unwrap();
        let kernel = test_run::run(p.as_fd(), packet).unwrap();
        (user, counts, kernel)
    }
}

/// Runs `prog` of `object` in userspace (from the prepared instructions) and in the kernel.
fn both(object: &str, prog: &str, packet: &[u8]) -> (uvm::PacketOutcome, Counts, test_run::RunOutput) {
    Both::open(object, prog).run(packet)
}

#[test]
fn userspace_runs_give_the_kernels_verdicts_and_packets() {
    let _machine = common::machine();
    for (object, prog) in [
        ("xdp_swap.bpf.o", "xdp_swap"),
        ("xdp_swap_slow.bpf.o", "xdp_swap"),
        ("xdp_drop.bpf.o", "xdp_drop"),
        ("xdp_pass.bpf.o", "xdp_pass"),
    ] {
        let (user, counts, kernel) = both(object, prog, &frame());
        assert_eq!(user.verdict, kernel.retval, "{object}");
        assert_eq!(user.packet, kernel.packet, "{object}");
        assert!(counts.insns > 0);
    }
    // A frame too short for the Ethernet header takes the other path
    // (the kernel's test run refuses frames under 14 bytes, so only here).
    let mut open = libbpf_rs::ObjectBuilder::default().open_file(test_object("xdp_swap.bpf.o")).unwrap();
    bpfbench::kernel::prepared::prepare(&mut open).unwrap();
    let insns = prepared::insns_of(&open.progs().next().unwrap());
    let short =
        xdp::run(&Interpreter::new(&insns), &frame()[..10], &mut Helpers::new(0, 1), None, &mut Counts::default())
            .unwrap();
    assert_eq!(short.verdict, 1, "XDP_DROP");
}

#[test]
fn instruction_counts_are_identical_run_after_run_and_see_added_work() {
    let _machine = common::machine();
    let counts: Vec<Counts> = (0..10).map(|_| both("xdp_swap.bpf.o", "xdp_swap", &frame()).1).collect();
    assert!(counts.iter().all(|c| *c == counts[0]), "{counts:?}");
    // xdp_swap_slow is xdp_swap with a chain of multiplications added.
    let slow = both("xdp_swap_slow.bpf.o", "xdp_swap", &frame()).1;
    assert!(slow.insns > counts[0].insns, "{slow:?} vs {:?}", counts[0]);
}

fn run_raw(insns: &[Insn]) -> Result<uvm::PacketOutcome, uvm::VmError> {
    xdp::run(&Interpreter::new(insns), &frame(), &mut Helpers::new(0, 1), None, &mut Counts::default())
}

#[test]
fn bytecode_the_verifier_would_refuse_ends_in_an_error_naming_the_instruction() {
    let _machine = common::machine();
    let exit = exit();
    // r0 = *(u64 *)(r1 + 4096): far past the context.
    let e = run_raw(&[ldx(8, 0, 1, 4096), exit]).unwrap_err();
    assert_eq!(e.pc, 0);
    assert!(e.to_string().contains("outside the stack, context, packet and map values"), "{e}");
    // *(u32 *)(r1 + 0) = 1: the context is read-only.
    let e = run_raw(&[st_imm(4, 1, 0, 1), exit]).unwrap_err();
    assert!(e.to_string().contains("read-only context"), "{e}");
    // goto -1: a loop without end is stopped by the budget.
    let e = run_raw(&[ja(-1)]).unwrap_err();
    assert!(e.to_string().contains("budget"), "{e}");
    // No exit: the program runs off its end.
    let e = run_raw(&[mov64_imm(0, 2)]).unwrap_err();
    assert_eq!(e.pc, 1);
    // A helper the runtime lacks is named (6: bpf_trace_printk).
    let e = run_raw(&[call_helper(6), exit]).unwrap_err();
    assert!(
        e.to_string().contains("calls helper 6 (bpf_trace_printk), which bpfbench's userspace runtime does not have"),
        "{e}"
    );
    // A map lookup on what is not a map (r1 is the context).
    let e = run_raw(&[call_helper(1), exit]).unwrap_err();
    assert!(e.to_string().contains("is not a map"), "{e}");
    // r10 is read-only.
    let e = run_raw(&[mov64_imm(10, 0), exit]).unwrap_err();
    assert!(e.to_string().contains("r10"), "{e}");
}

#[test]
fn random_bytecode_ends_in_a_result_or_an_error_never_a_crash() {
    let _machine = common::machine();
    // A short, bounded run for CI: 20,000 programs of 1 to 32 random
    // instructions (any opcode, any register number), 10,000 steps each.
    let mut runtime = uvm::UserRuntime::new(&bpfbench::kernel::prepared::PreparedCode::default(), 0).unwrap();
    let r = uvm::fuzz::run(&mut runtime, &[], &[frame()], 20_000, 0x9e37_79b9_7f4a_7c15, 10_000);
    assert!(r.panics.is_empty(), "{:?}", r.panics);
    assert_eq!((r.programs, r.random), (20_000, 20_000));
    assert!(r.finished > 0 && r.refused > 0, "{} ran, {} refused", r.finished, r.refused);
}

/// An IPv4 UDP frame from source port `sport`.
fn udp(sport: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[23] = 17;
    f[26..30].copy_from_slice(&[10, 0, 0, 1]);
    f[30..34].copy_from_slice(&[10, 0, 0, 2]);
    f[34..36].copy_from_slice(&sport.to_be_bytes());
    f[36..38].copy_from_slice(&53u16.to_be_bytes());
    f
}

#[test]
fn a_hash_map_ends_as_the_kernels_does() {
    let _machine = common::machine();
    // xdp_flows counts each flow: a lookup, an atomic add, or an update with BPF_NOEXIST.
    let mut b = Both::open("xdp_flows.bpf.o", "xdp_flows");
    for round in 0..3u16 {
        for sport in 1000..1000 + 5 * (round + 1) {
            let (user, _, kernel) = b.run(&udp(sport));
            assert_eq!((user.verdict, &user.packet), (kernel.retval, &kernel.packet));
        }
    }
    let kernel_map = b.obj.maps().find(|m| m.name() == "flows").unwrap();
    let mut kernel: Vec<(Vec<u8>, Vec<u8>)> = kernel_map
        .keys()
        .map(|k| {
            let v = kernel_map.lookup(&k, MapFlags::ANY).unwrap().unwrap();
            (k, v)
        })
        .collect();
    let mut user: Vec<(Vec<u8>, Vec<u8>)> =
        b.maps.by_name("flows").unwrap().entries().into_iter().map(|(k, v)| (k, v[0].clone())).collect();
    kernel.sort();
    user.sort();
    assert_eq!(user.len(), 15);
    assert_eq!(user, kernel);
    // Ports 1000..1005 were seen in all three rounds.
    let counts: Vec<u64> = user.iter().map(|(_, v)| u64::from_ne_bytes(v[..8].try_into().unwrap())).collect();
    assert_eq!(counts.iter().filter(|&&n| n == 3).count(), 5, "{counts:?}");
}

/// A frame that asks xdp_lru for `op` on `key`.
fn lru_op(key: u32, op: u8) -> Vec<u8> {
    let mut f = vec![0u8; 32];
    f[14..18].copy_from_slice(&key.to_ne_bytes());
    f[18] = op;
    f
}

/// Drives `object` (xdp_lru over an LRU hash, plain or per-CPU, or a per-CPU hash) in both
/// runtimes, each operation on the CPU `cpu_of` picks for it (pinned, and
/// claimed by the userspace helpers), and compares every result, the keys
/// left and every CPU's value of each.
fn map_ops_match_the_kernel(object: &str, cpu_of: impl Fn(usize) -> usize) {
    let mut b = Both::open(object, "xdp_lru");
    // A mix: inserts past the 16 entries, lookups that make some keys
    // referenced (and count in the value), refused inserts, deletes, replacements.
    let mut ops = Vec::new();
    for round in 0..6u32 {
        for k in 0..12u32 {
            let key = round * 7 + k;
            ops.push((key, 1));
            if k % 3 == 0 {
                ops.push((key / 2, 0));
            }
            if k % 5 == 0 {
                ops.push((key.saturating_sub(4), 2));
            }
            if k % 7 == 6 {
                ops.push((key.saturating_sub(2), 3));
            }
        }
    }
    // Lookups of the newest keys, which stay.
    ops.extend([(44, 0), (45, 0), (46, 0), (45, 0)]);
    for (i, &(key, op)) in ops.iter().enumerate() {
        let cpu = cpu_of(i);
        bpfbench::system::cpu::pin_to_cpu(cpu).unwrap();
        b.run_with(&mut Helpers::new(cpu, 1), &lru_op(key, op));
        assert_eq!(b.user_last(), b.kernel_last(), "operation {i}: {op} on key {key}, CPU {cpu}");
    }
    let kernel_map = b.obj.maps().find(|m| m.name() == "lru").unwrap();
    let percpu = kernel_map.map_type().is_percpu();
    let mut kernel: Vec<(Vec<u8>, Vec<Vec<u8>>)> = kernel_map
        .keys()
        .map(|k| {
            let values = if percpu {
                kernel_map.lookup_percpu(&k, MapFlags::ANY).unwrap().unwrap()
            } else {
                vec![kernel_map.lookup(&k, MapFlags::ANY).unwrap().unwrap()]
            };
            (k, values)
        })
        .collect();
    let mut user = b.maps.by_name("lru").unwrap().entries();
    kernel.sort();
    user.sort();
    // More keys went in than the 16 entries hold (evicted, or refused by a hash).
    assert!((8..=16).contains(&kernel.len()), "{}", kernel.len());
    assert_eq!(user, kernel, "the keys and values left after {} operations", ops.len());
    // Lookups counted in some values (on the CPU that looked, in a per-CPU map:
    // a copy the update left zeroed then counts from zero).
    let counted = user.iter().any(|(k, vs)| {
        let key = u64::from(u32::from_ne_bytes(k[..4].try_into().unwrap()));
        vs.iter().map(|v| u64::from_ne_bytes(v[..8].try_into().unwrap())).any(|v| v != 0 && v != 3 * key)
    });
    assert!(counted, "no value left shows a lookup's count: {user:?}");
}

#[test]
fn an_lru_hash_evicts_what_the_kernels_evicts() {
    let _machine = common::machine();
    let cpu = common::prepared_cpu();
    map_ops_match_the_kernel("xdp_lru.bpf.o", |_| cpu);
    map_ops_match_the_kernel("xdp_lru_percpu.bpf.o", |_| cpu);
}

#[test]
fn an_lru_hash_shared_by_cpus_evicts_as_the_kernels() {
    let _machine = common::machine();
    // Runs of five operations on each CPU in turn: each CPU keeps its own
    // free and pending nodes, and a refill on one CPU shrinks what the
    // other's flushed. (Stealing, for when every node sits in some CPU's
    // local lists, is not reached by this sequence.) In the per-CPU map a
    // program's update writes its own CPU's copy only (a new key's others
    // zeroed), and a lookup reads and counts in its own.
    let cpus = bpfbench::system::cpu::allowed_cpus().unwrap();
    map_ops_match_the_kernel("xdp_lru.bpf.o", |i| cpus[(i / 5) % cpus.len()]);
    map_ops_match_the_kernel("xdp_lru_percpu.bpf.o", |i| cpus[(i / 5) % cpus.len()]);
}

#[test]
fn a_per_cpu_hash_keeps_each_cpus_copy_as_the_kernels() {
    let _machine = common::machine();
    // A program's update writes its CPU's copy in place (a new key's other
    // copies zeroed); a full map refuses new keys.
    let cpus = bpfbench::system::cpu::allowed_cpus().unwrap();
    map_ops_match_the_kernel("xdp_percpu_hash.bpf.o", |i| cpus[(i / 5) % cpus.len()]);
}

#[test]
fn an_array_of_maps_reaches_the_inner_maps_setup_put_there() {
    let _machine = common::machine();
    // Setup as a load balancer's host does it: inner maps made here and
    // put into slots 0 and 2; slots 1 and 3 stay empty.
    let mut b = Both::open_with("xdp_mim.bpf.o", "xdp_mim", |obj| {
        let outer = obj.maps().find(|m| m.name() == "tables").unwrap();
        for (slot, base) in [(0u32, 100u64), (2, 200)] {
            let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
                sz: size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
                ..Default::default()
            };
            let inner =
                libbpf_rs::MapHandle::create(libbpf_rs::MapType::Hash, Some("bpfbench_inner"), 4, 8, 8, &opts).unwrap();
            for key in 0..4u32 {
                inner.update(&key.to_ne_bytes(), &(base + u64::from(key)).to_ne_bytes(), MapFlags::ANY).unwrap();
            }
            outer.update(&slot.to_ne_bytes(), &inner.as_fd().as_raw_fd().to_ne_bytes(), MapFlags::ANY).unwrap();
        }
    });
    let mut helpers = Helpers::new(0, 1);
    let mut seen = Vec::new();
    for (slot, key) in [(0u8, 1u32), (0, 1), (2, 3), (1, 0), (2, 9), (3, 1), (2, 3), (0, 0)] {
        let mut f = vec![0u8; 32];
        f[14] = slot;
        f[15..19].copy_from_slice(&key.to_ne_bytes());
        b.run_with(&mut helpers, &f);
        assert_eq!(b.user_last(), b.kernel_last(), "slot {slot} key {key}");
        seen.push(b.user_last());
    }
    assert_eq!(seen, [101, 102, 203, -1, -2, -1, 204, 100]);
}

#[test]
fn an_lpm_trie_finds_the_kernels_longest_prefixes() {
    let _machine = common::machine();
    // Setup puts two prefixes in; the program adds, looks up and deletes more.
    let mut b = Both::open_with("xdp_lpm.bpf.o", "xdp_lpm", |obj| {
        let m = obj.maps().find(|m| m.name() == "prefixes").unwrap();
        for (plen, addr, value) in [(8u32, [10u8, 0, 0, 0], 8u64), (0, [0, 0, 0, 0], 1)] {
            m.update(&[plen.to_ne_bytes().as_slice(), &addr].concat(), &value.to_ne_bytes(), MapFlags::ANY).unwrap();
        }
    });
    let mut helpers = Helpers::new(0, 1);
    let op = |addr: [u8; 4], op: u8, plen: u8| {
        let mut f = vec![0u8; 32];
        f[14..18].copy_from_slice(&addr);
        f[18] = op;
        f[19] = plen;
        f
    };
    let steps = [
        op([10, 1, 2, 3], 0, 0),
        op([192, 168, 1, 1], 0, 0),
        op([10, 1, 0, 0], 1, 16),
        op([10, 1, 2, 0], 1, 24),
        op([10, 1, 2, 3], 1, 32),
        op([10, 1, 2, 99], 1, 33), // longer than the key: refused
        op([10, 1, 2, 3], 0, 0),   // the /32
        op([10, 1, 2, 4], 0, 0),   // the /24
        op([10, 1, 9, 9], 0, 0),   // the /16
        op([10, 2, 0, 0], 0, 0),   // the /8
        op([11, 0, 0, 0], 0, 0),   // the /0
        op([10, 1, 2, 77], 1, 24), // the same /24, other host bits: replaces
        op([10, 1, 2, 4], 0, 0),
        op([10, 1, 2, 3], 2, 32),
        op([10, 1, 2, 3], 0, 0),  // back to the /24
        op([10, 1, 2, 3], 2, 32), // gone already
        op([10, 1, 0, 0], 2, 16),
        op([10, 1, 9, 9], 0, 0), // the /8
    ];
    let mut seen = Vec::new();
    for (i, f) in steps.iter().enumerate() {
        b.run_with(&mut helpers, f);
        assert_eq!(b.user_last(), b.kernel_last(), "step {i}");
        seen.push(b.user_last());
    }
    assert_eq!(seen, [8, 1, 0, 0, 0, -22, 32010, 24010, 16010, 8, 1, 0, 24010, 0, 24010, -2, 0, 8]);
}

/// The JSON of `bpfbench run ARGS --format json --no-store`.
fn run_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend(["--format", "json", "--no-store"]);
    let o = common::bpfbench(&all);
    assert!(o.status.success(), "{all:?}: {}", common::stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn every_lb_scenario_validates_in_userspace_and_counts_the_same_each_run() {
    let _machine = common::machine();
    let counts: Vec<Vec<serde_json::Value>> = (0..3)
        .map(|_| {
            let run = run_json(&["xdp-lb", "--metric", "insns"]);
            let results = run["results"].as_array().unwrap().clone();
            assert_eq!(results.len(), 24);
            for r in &results {
                assert_eq!(r["validated"], true, "{}: {}", r["name"], r["error"]);
                assert_eq!(r["runtime"], "user");
                assert!(r["checks"].as_array().unwrap().len() >= 3, "{}: the kernel's checks ran", r["name"]);
            }
            results.iter().map(|r| r["figure"].clone()).collect()
        })
        .collect();
    assert_eq!(counts[0], counts[1]);
    assert_eq!(counts[0], counts[2]);
    let hit = &counts[0][0];
    let per_packet = (hit["body_insns"].as_u64().unwrap() - hit["loop_insns"].as_u64().unwrap()) as f64
        / hit["packets"].as_u64().unwrap() as f64;
    assert!(
        per_packet > 200.0 && per_packet.fract() == 0.0,
        "an LRU hit's path is a whole number of instructions: {per_packet}"
    );
    assert_eq!(
        hit["map_ops"]["vip_map: bpf_map_lookup_elem"].as_i64(),
        hit["packets"].as_i64(),
        "one VIP lookup per packet"
    );
}

#[test]
fn runtime_both_times_each_scenario_in_the_kernel_and_in_userspace() {
    let _machine = common::machine();
    let args = [
        "xdp-lb",
        "--runtime",
        "both",
        "--scenario",
        "tcp-v4-lru-hit",
        "--scenario",
        "udp-v4-lru-miss",
        "--samples",
        "5",
        "--batch-ms",
        "2",
        "--warmup",
        "0",
    ];
    let run = run_json(&args);
    let results = run["results"].as_array().unwrap();
    let names: Vec<(&str, &str)> =
        results.iter().map(|r| (r["name"].as_str().unwrap(), r["runtime"].as_str().unwrap())).collect();
    assert_eq!(
        names,
        [
            ("tcp-v4-lru-hit", "kernel"),
            ("tcp-v4-lru-hit", "user"),
            ("udp-v4-lru-miss", "kernel"),
            ("udp-v4-lru-miss", "user")
        ]
    );
    for r in results {
        let m = &r["figure"];
        assert!(m["summary"]["median"].as_f64().unwrap() > 0.0, "{}/{}", r["name"], r["runtime"]);
        assert!(m["overhead"]["summary"]["median"].as_f64().unwrap() > 0.0);
    }
    let o = common::bpfbench(&[&["run"], &args[..], &["--no-store"]].concat());
    assert!(o.status.success(), "{}", common::stderr(&o));
    let table = common::stdout(&o);
    assert!(table.contains("tcp-v4-lru-hit (user)") && table.contains("Kernel vs userspace runtime"), "{table}");
}

#[test]
fn a_one_instruction_change_is_counted_as_exactly_one_more() {
    let _machine = common::machine();
    let dir = common::temp_dir("uvm-one-insn");
    let (a, b) = (dir.join("a.bpf.o"), dir.join("b.bpf.o"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/build-object.sh");
    for (out, extra) in [(&a, None), (&b, Some("-DLB_EXTRA_INSN"))] {
        let mut c = std::process::Command::new(script);
        c.arg("xdp-lb").arg(out).args(extra);
        assert!(c.status().unwrap().success());
    }
    let o = common::bpfbench(&[
        "ab",
        "--workload",
        "xdp-lb",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--metric",
        "insns",
        "--scenario",
        "tcp-v4-lru-hit",
        "--scenario",
        "tcp-v6-ch",
        "--scenario",
        "pass-v4-icmp",
        "--format",
        "json",
        "--fail-on-regression",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(1), "more instructions fail the gate: {}", common::stderr(&o));
    let cmp: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let delta = |name: &str| {
        let d = cmp["deltas"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["metric"] == "insns" && d["benchmark"] == format!("xdp-lb/{name}@user@insns"))
            .unwrap();
        d["b"].as_f64().unwrap() - d["a"].as_f64().unwrap()
    };
    assert_eq!(delta("tcp-v4-lru-hit"), 1.0);
    assert_eq!(delta("tcp-v6-ch"), 1.0);
    assert_eq!(delta("pass-v4-icmp"), 0.0, "ICMP leaves before the extra instruction");
    // Which line: the one the build added, matched by its text although
    // every line after it moved down; nothing else changed.
    let lines = |name: &str| {
        cmp["deltas"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["metric"] == "insns" && d["benchmark"] == format!("xdp-lb/{name}@user@insns"))
            .unwrap()["lines"]
            .clone()
    };
    assert_eq!(lines("tcp-v4-lru-hit"), serde_json::json!({"xdp_lb.bpf.c: asm volatile(\"r0 = r0\");": [0.0, 1.0]}));
    assert!(lines("pass-v4-icmp").is_null(), "{}", lines("pass-v4-icmp"));
    let err = common::stderr(&o);
    assert!(
        err.contains("regression: xdp-lb/tcp-v4-lru-hit@user@insns executes +0.4% instructions per packet"),
        "{err}"
    );
}

#[test]
fn runtime_and_metric_mistakes_get_one_line() {
    let _machine = common::machine();
    for (args, needle) in [
        (
            vec!["run", "--metric", "insns", "--runtime", "kernel"],
            "--metric insns counts in the userspace runtime only",
        ),
        (
            vec!["run", "maps", "--runtime", "user", "--producers", "2"],
            "--producers 2: the userspace runtime runs one producer",
        ),
    ] {
        common::assert_one_line_error(&args, needle);
    }
}

#[test]
fn a_path_that_reaches_a_helper_the_runtime_lacks_fails_naming_it_and_other_paths_run() {
    let _machine = common::machine();
    let (call, exit) = (call_helper, exit());
    let btf = libbpf_rs::btf::Btf::from_vmlinux().unwrap();
    let kfunc: libbpf_rs::btf::types::Func<'_> = btf.type_by_name("bpf_dynptr_from_skb").unwrap();
    let kfunc_call =
        Insn::new(bpfbench::insn::CALL_OP, 0, bpfbench::insn::KFUNC_CALL, 0, u32::from(kfunc.type_id()) as i32);
    let tunnel = libbpf_rs::libbpf_sys::BPF_FUNC_skb_set_tunnel_key as i32;
    // Named as the kernel's BTF names them (they read "helper 21", "a kfunc").
    for (missing, named) in [
        (call(69), "calls helper 69 (bpf_fib_lookup)".to_string()),
        (call(tunnel), format!("calls helper {tunnel} (bpf_skb_set_tunnel_key)")),
        (kfunc_call, "calls kfunc bpf_dynptr_from_skb".to_string()),
    ] {
        // The path that reaches the call, and one that jumps over it (XDP_PASS).
        let mut code = bpfbench::kernel::prepared::PreparedCode {
            programs: [
                ("reaches".to_string(), vec![missing, exit]),
                ("avoids".to_string(), vec![mov64_imm(0, 2), ja(1), missing, exit]),
            ]
            .into(),
            ..Default::default()
        };
        // Even where the kernel verified it, the checked interpreter runs it:
        // the JIT compiles only programs whose every call the runtime has.
        for verified in [false, true] {
            if verified {
                code.verified.extend(["reaches".to_string(), "avoids".to_string()]);
            }
            let mut rt =
                uvm::UserRuntime::new(&code, 0).expect("loaded: the program runs until a path reaches the call");
            let engine = rt.engine_of("reaches");
            assert_eq!(engine, Engine::Interpreter);
            let err = format!("{:#}", rt.run("reaches", &[0u8; 64]).expect_err("the call is reached"));
            assert!(
                err.contains(&format!("{named}, which bpfbench's userspace runtime does not have")),
                "{engine:?}: {err}"
            );
            assert_eq!(rt.run("avoids", &[0u8; 64]).unwrap().verdict, 2, "{engine:?}");
        }
    }
    assert_eq!(
        uvm::runtime::missing_calls(&[call(69), kfunc_call, call(69)]),
        ["helper 69 (bpf_fib_lookup)", "kfunc bpf_dynptr_from_skb"]
    );
    let mut fine = bpfbench::kernel::prepared::PreparedCode {
        programs: [("times".to_string(), vec![call(5), exit])].into(),
        maps: vec![],
        ..Default::default()
    };
    let unverified = uvm::UserRuntime::new(&fine, 0).unwrap();
    assert_eq!(
        unverified.engine_of("times"),
        Engine::Interpreter,
        "the JIT runs only what the kernel's verifier accepted"
    );
    fine.verified.insert("times".to_string());
    assert_eq!(uvm::UserRuntime::new(&fine, 0).unwrap().engine_of("times"), Engine::Jit);
}

#[test]
fn the_jit_gives_the_interpreters_verdicts_and_packets_for_every_scenario() {
    let _machine = common::machine();
    bpfbench::system::check_privileges().unwrap();
    let corpus = bpfbench::workloads::xdp_lb::fuzz_corpus(0).unwrap();
    let mut rt = corpus.runtime;
    for prog in &corpus.names {
        assert_eq!(rt.engine_of(prog), Engine::Jit, "{prog}: the kernel verified it");
        for (i, packet) in corpus.packets.iter().enumerate() {
            // Twice each, in both orders: a first packet of a flow and one that finds it.
            let jit = rt.run(prog, packet).unwrap();
            rt.set_engine(Engine::Interpreter);
            let interpreted = rt.run(prog, packet).unwrap();
            let again = rt.run(prog, packet).unwrap();
            rt.set_engine(Engine::Jit);
            let jit_again = rt.run(prog, packet).unwrap();
            assert_eq!(jit, interpreted, "{prog}, scenario packet {i}");
            assert_eq!(again, jit_again, "{prog}, scenario packet {i}");
        }
    }
}

#[test]
fn ab_compares_the_kernel_and_the_userspace_jit_in_alternation() {
    let _machine = common::machine();
    let o = common::bpfbench(&[
        "ab",
        "--workload",
        "xdp-lb",
        "kernel",
        "user",
        "--scenario",
        "tcp-v4-lru-hit",
        "--format",
        "json",
        "--no-store",
        "--max-time",
        "3",
        "--min-rounds",
        "2",
        "--pairs-per-round",
        "4",
        "--batch-ms",
        "0.5",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((&rec["a"], &rec["b"]), (&serde_json::json!("kernel"), &serde_json::json!("userspace")), "{rec}");
    let case = &rec["cases"][0];
    assert_eq!(case["name"], "tcp-v4-lru-hit");
    let (ratio, lo, hi) = (
        case["ratio"].as_f64().unwrap(),
        case["ratio_ci95"][0].as_f64().unwrap(),
        case["ratio_ci95"][1].as_f64().unwrap(),
    );
    // Generous: the JIT's LRU hit measured 0.6-0.8x the kernel's here; a broken JIT or an interpreter is 10-80x.
    assert!(ratio > 0.05 && ratio < 5.0 && lo <= ratio && ratio <= hi, "{case}");
    for (args, needle) in [
        (
            vec!["ab", "kernel", "user"],
            "to compare runtimes name the workload: bpfbench ab --workload xdp-lb kernel user",
        ),
        (
            vec!["ab", "--workload", "xdp-lb", "user", "user"],
            "A and B are both the userspace runtime; compare kernel with user",
        ),
        (
            vec!["ab", "--workload", "xdp-lb", "kernel", "user", "--metric", "insns"],
            "--metric insns counts in the userspace runtime only",
        ),
    ] {
        common::assert_one_line_error(&args, needle);
    }
}

#[test]
fn mutated_load_balancer_programs_end_in_a_result_or_an_error() {
    let _machine = common::machine();
    // A short, bounded run for CI; `bpfbench fuzz-uvm` runs a million.
    bpfbench::system::check_privileges().unwrap();
    let corpus = bpfbench::workloads::xdp_lb::fuzz_corpus(0).unwrap();
    let mut runtime = corpus.runtime;
    let r = uvm::fuzz::run(&mut runtime, &corpus.programs, &corpus.packets, 20_000, 7, 20_000);
    assert!(r.panics.is_empty(), "{:?}", r.panics);
    assert_eq!(r.programs, 20_000);
    assert!(r.mutated > 5_000 && r.finished > 0 && r.refused > 0, "{r:?}");
}

/// The encapsulation example's command line: a hash map filled from JSON, IPIP out.
fn encap_args() -> Vec<String> {
    let services = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/encap/services.json");
    [
        "xdp_encap.bpf.o",
        "--map",
        &format!("services={services}"),
        "--packet",
        "eth/ipv4(src=10.9.0.1-10.9.0.8,dst=10.0.0.10)/tcp(dport=80)/payload(32)",
        "--expect",
        "XDP_TX",
    ]
    .iter()
    .enumerate()
    .map(|(i, a)| if i == 0 { test_object(a).to_string_lossy().into_owned() } else { a.to_string() })
    .collect()
}

#[test]
fn your_objects_validate_against_the_kernel_and_time_in_userspace() {
    let _machine = common::machine();
    let args = encap_args();
    let mut both: Vec<&str> = args.iter().map(String::as_str).collect();
    both.extend(["--runtime", "both", "--samples", "5", "--batch-ms", "2", "--warmup", "0"]);
    let run = run_json(&both);
    let results = run["results"].as_array().unwrap();
    let runtimes: Vec<&str> = results.iter().map(|r| r["runtime"].as_str().unwrap()).collect();
    assert_eq!(runtimes, ["kernel", "user"]);
    let user = &results[1];
    assert_eq!(user["validated"], true, "{}", user["error"]);
    assert_eq!(user["verdict"], "XDP_TX");
    assert_eq!(user["timing"]["mode"], "in-bpf", "{}", user["timing"]);
    let checks: Vec<&str> = user["checks"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(checks.iter().any(|c| c.contains("in the userspace runtime, the program alone gave the kernel's verdict and output for each of the 8 packet(s)")), "{checks:?}");
    assert!(checks.iter().any(|c| c.contains("spliced into the batch loop")), "{checks:?}");
    assert!(user["figure"]["summary"]["median"].as_f64().unwrap() > 0.0);

    // Counted twice: the same figures, one service lookup per packet.
    let mut counted: Vec<&str> = args.iter().map(String::as_str).collect();
    counted.extend(["--metric", "insns"]);
    let counts: Vec<serde_json::Value> = (0..2).map(|_| run_json(&counted)["results"][0]["figure"].clone()).collect();
    assert_eq!(counts[0], counts[1]);
    let c = &counts[0];
    assert!(c["body_insns"].as_u64().unwrap() > c["loop_insns"].as_u64().unwrap(), "{c}");
    assert_eq!(c["map_ops"]["services: bpf_map_lookup_elem"].as_i64(), c["packets"].as_i64(), "{c}");
}

/// A `--profile` count's lines add up to its instructions per packet
/// exactly (every instruction belongs to a line or to "(no line record)").
fn lines_add_up(c: &serde_json::Value) -> Vec<(String, String, i64)> {
    let lines: Vec<(String, String, i64)> = c["lines"]
        .as_array()
        .unwrap_or_else(|| panic!("--profile keeps the lines: {c}"))
        .iter()
        .map(|l| {
            (
                l["at"].as_str().unwrap().to_string(),
                l["text"].as_str().unwrap().to_string(),
                l["insns"].as_i64().unwrap(),
            )
        })
        .collect();
    let total = c["body_insns"].as_i64().unwrap() - c["loop_insns"].as_i64().unwrap();
    assert_eq!(lines.iter().map(|l| l.2).sum::<i64>(), total, "{lines:?}");
    lines
}

#[test]
fn profile_counts_and_samples_each_source_line_of_your_object_and_of_the_balancer() {
    let _machine = common::machine();
    let args = encap_args();
    let mut profiled: Vec<&str> = args.iter().map(String::as_str).collect();
    profiled.push("--profile");
    let c = run_json(&profiled)["results"][0]["figure"].clone();
    let packets = c["packets"].as_i64().unwrap();
    let lines = lines_add_up(&c);
    // The service lookup's line, in the object's own source, on every packet.
    let lookup =
        lines.iter().find(|l| l.1.contains("bpf_map_lookup_elem(&services")).unwrap_or_else(|| panic!("{lines:?}"));
    assert!(lookup.0.starts_with("xdp_encap.bpf.c:") && lookup.2 > 0 && lookup.2 % packets == 0, "{lookup:?}");
    // The driver's restore of the moved head is the driver's line, not the program's.
    assert!(lines.iter().any(|l| l.0.starts_with("driver_xdp.bpf.c:") && l.2 > 0), "{lines:?}");

    let mut counted: Vec<&str> = args.iter().map(String::as_str).collect();
    counted.extend(["--metric", "insns"]);
    let plain = run_json(&counted)["results"][0]["figure"].clone();
    assert!(plain.get("lines").is_none() && plain.get("time").is_none(), "lines and time only with --profile: {plain}");
    assert_eq!(plain["body_insns"], c["body_insns"], "profiling counts the same instructions");

    let lb = run_json(&["xdp-lb", "--profile", "--scenario", "tcp-v4-lru-hit"])["results"][0]["figure"].clone();
    let lines = lines_add_up(&lb);
    assert!(
        lines.iter().any(|l| l.0.starts_with("xdp_lb.bpf.c:") && l.1.contains("bpf_map_lookup_elem(&vip_map")),
        "{lines:?}"
    );

    // Time, sampled in the JIT for a second: every sample in the program
    // or a helper it called lands on one line; the VIP lookup's call (a
    // hash lookup, out of line) is seen, and time spent in that helper.
    let time = &lb["time"];
    let samples = time["samples"].as_u64().unwrap_or_else(|| panic!("--profile samples the time: {lb}"));
    assert!(samples > 500, "a second at ~10,000 samples/s: {time}");
    let per_line: u64 = lb["lines"].as_array().unwrap().iter().map(|l| l["samples"].as_u64().unwrap_or(0)).sum();
    assert_eq!(per_line, samples, "{lb}");
    let vip = lb["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["text"].as_str().unwrap().contains("bpf_map_lookup_elem(&vip_map"))
        .unwrap();
    assert!(vip["samples"].as_u64().unwrap_or(0) > samples / 100, "{vip} of {samples}");
    assert!(time["helpers"]["bpf_map_lookup_elem"].as_u64().unwrap_or(0) > samples / 20, "{time}");
    assert!(
        time["map_ops"]["vip_map: bpf_map_lookup_elem"].as_u64().unwrap_or(0) > samples / 100,
        "the call site names its map: {time}"
    );
    assert!(time["batches"]["median"].as_f64().unwrap() > 0.0 && time["batches"]["n"].as_u64().unwrap() >= 2, "{time}");
    let o = common::bpfbench(&["run", "xdp-lb", "--profile", "--scenario", "tcp-v4-lru-hit", "--no-store"]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let table = common::stdout(&o);
    assert!(
        table.contains("insns/packet  share   time ns/packet  source") && table.contains("in bpf_map_lookup_elem"),
        "{table}"
    );
    common::assert_one_line_error(
        &["run", "--profile", "--runtime", "both"],
        "--profile counts in the userspace runtime only",
    );
}

#[test]
fn what_the_userspace_runtime_cannot_run_of_your_objects_is_refused_in_one_line() {
    let _machine = common::machine();
    let object = |name: &str| test_object(name).to_string_lossy().into_owned();
    let (sock, swap, fib) = (object("sock_udp_head.bpf.o"), object("xdp_swap.bpf.o"), object("xdp_fib.bpf.o"));
    for (args, needle) in [
        (
            vec!["run", sock.as_str(), "--runtime", "user"],
            "'sock_udp_head' is a socket_filter program; the userspace runtime runs XDP and tc programs only: use --runtime kernel",
        ),
        (vec!["run", swap.as_str(), "--runtime", "user", "--per-call"], "drop --per-call or use --runtime kernel"),
    ] {
        common::assert_one_line_error(&args, needle);
    }
    // A helper the runtime lacks: the case whose path reaches it is N/A
    // there, naming it (every path of xdp_fib does); not a failure.
    let o = common::bpfbench(&["run", &fib, "--runtime", "user", "--samples", "3", "--no-store"]);
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
    let report = common::stdout(&o);
    assert!(
        report.contains("xdp_fib (user): N/A (case xdp_fib: cannot run in the userspace runtime")
            && report.contains("calls helper 69 (bpf_fib_lookup), which bpfbench's userspace runtime does not have"),
        "{report}"
    );
    // The kernel refuses the spliced program (its stack and the loop's exceed
    // 512 bytes): the kernel times it per call; userspace cannot time it.
    let big = object("xdp_bigstack.bpf.o");
    let o = common::bpfbench(&["run", &big, "--runtime", "user", "--samples", "3", "--no-store"]);
    assert_ne!(o.status.code(), Some(0));
    let report = common::stdout(&o);
    assert!(
        report.contains(
            "cannot run in the userspace runtime: the kernel refused the program spliced into the batch loop"
        ),
        "{report}"
    );
}

#[test]
fn every_map_operation_validates_in_userspace_and_counts_the_same_each_run() {
    let _machine = common::machine();
    // Every map type and operation of the maps suite, and the LPM-trie suite.
    for suite in ["maps", "lpm-trie"] {
        let mut args =
            vec![suite, "--runtime", "user", "--samples", "3", "--batch-ms", "1", "--warmup", "0", "--entries", "2000"];
        if suite == "maps" {
            args.extend(["--op", "lookup,update,insert,delete,drain"]);
        }
        let run = run_json(&args);
        let results = run["results"].as_array().unwrap();
        assert!(results.len() >= 7, "{suite}: {} scenarios", results.len());
        for r in results {
            assert_eq!(r["runtime"], "user");
            if let Some(why) = r["unavailable"].as_str() {
                // Arrays have no insert or delete, in the kernel as here; free is the kernel's own step.
                let free = r["name"].as_str().unwrap().starts_with("free");
                assert!(!free || why.contains("times the kernel freeing a map"), "{r}");
                continue;
            }
            assert_eq!(r["validated"], true, "{suite} {}: {}", r["name"], r["error"]);
            let checks = r["checks"].as_array().unwrap();
            assert!(!checks.is_empty(), "{}", r["name"]);
            assert!(r["figure"]["summary"]["median"].as_f64().unwrap() > 0.0, "{}", r["name"]);
        }
    }
    // Counts: the same twice; one lookup per operation, on the benchmark's map.
    let counted = [
        "maps",
        "--map",
        "lpm_trie,lru_hash,percpu_array",
        "--op",
        "lookup,insert",
        "--entries",
        "1000",
        "--metric",
        "insns",
    ];
    let counts: Vec<Vec<serde_json::Value>> = (0..2)
        .map(|_| run_json(&counted)["results"].as_array().unwrap().iter().map(|r| r["figure"].clone()).collect())
        .collect();
    assert_eq!(counts[0], counts[1]);
    assert_eq!(counts[0].len(), 6);
    let lookup = &counts[0][0];
    assert_eq!(lookup["map_ops"]["bench_map: bpf_map_lookup_elem"].as_i64(), lookup["packets"].as_i64(), "{lookup}");
    let insert = &counts[0][1];
    assert_eq!(insert["map_ops"]["bench_map: bpf_map_update_elem"].as_i64(), insert["packets"].as_i64(), "{insert}");

    // Both runtimes in one table: each runtime's matrix apart, then the ratios.
    let o = common::bpfbench(&[
        "run",
        "maps",
        "--map",
        "hash,lpm_trie",
        "--op",
        "lookup",
        "--entries",
        "1000",
        "--runtime",
        "both",
        "--samples",
        "3",
        "--batch-ms",
        "1",
        "--no-store",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let table = common::stdout(&o);
    for needle in [
        "hash/lookup/1000 (user): throughput",
        "1000 entries, kernel (map type x operation)",
        "1000 entries, userspace runtime (map type x operation)",
        "Kernel vs userspace runtime",
    ] {
        assert!(table.contains(needle), "{needle}: {table}");
    }
}

#[test]
fn csum_diff_gives_the_kernels_checksums_in_both_engines() {
    let _machine = common::machine();
    bpfbench::system::check_privileges().unwrap();
    // The same object a second time, prepared for the runtime and verified, for the JIT.
    let mut open = libbpf_rs::ObjectBuilder::default().open_file(test_object("xdp_csum.bpf.o")).unwrap();
    let mut code = bpfbench::kernel::prepared::PreparedCode::capture(&mut open).unwrap();
    let obj = open.load().unwrap();
    code.mark_verified(&obj);
    let mut jit = uvm::UserRuntime::new(&code, 0).unwrap();
    assert_eq!(jit.engine_of("xdp_csum"), Engine::Jit);
    let mut b = Both::open("xdp_csum.bpf.o", "xdp_csum");
    let mut helpers = Helpers::new(0, 1);
    let mut rng = 0x243f_6a88_85a3_08d3u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // Sizes: none, whole words, a header's 20 and 40 bytes, and odd ones (tails of 1-3 bytes).
    let sizes = [0u8, 4, 8, 12, 20, 40, 60, 2, 6, 63];
    let mut results = std::collections::BTreeSet::new();
    for i in 0..400 {
        let mut f: Vec<u8> = (0..160).map(|_| next() as u8).collect();
        f[14] = sizes[i % sizes.len()];
        f[15] = sizes[(i / sizes.len()) % sizes.len()];
        if i % 7 == 0 {
            f[16..20].fill(if i % 2 == 0 { 0 } else { 0xff }); // seeds 0 and ~0
        }
        b.run_with(&mut helpers, &f);
        let kernel = b.kernel_last();
        assert_eq!(b.user_last(), kernel, "packet {i}: sizes {} and {}, interpreter", f[14], f[15]);
        jit.run("xdp_csum", &f).unwrap();
        let bss = jit.maps.maps.iter().find(|m| m.def.name.ends_with(".bss")).unwrap();
        let by_jit = i64::from_ne_bytes(bss.entries()[0].1[0][..8].try_into().unwrap());
        assert_eq!(by_jit, kernel, "packet {i}: sizes {} and {}, JIT", f[14], f[15]);
        results.insert(kernel);
    }
    assert!(results.len() > 300, "distinct checksums: {}", results.len());
}

/// `ab --metric insns` of two builds from files of their own names
/// (before.bpf.c, after.bpf.c, one line changed): their cases meet by case
/// name and their lines by file and text, the renamed file taken as the
/// same, so the profile names the changed lines alone (it said "no
/// scenario in common", and every line -N/+N).
#[test]
fn ab_counts_two_builds_of_their_own_names_case_by_case_and_line_by_line() {
    let _machine = common::machine();
    let dir = common::temp_dir("ab-insns-names");
    let source =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/encap/xdp_encap.bpf.c")).unwrap();
    assert!(source.contains("*n += 1;"));
    for (name, text) in
        [("before", source.clone()), ("after", source.replace("*n += 1;", "__sync_fetch_and_add(n, 1);"))]
    {
        let c = dir.join(format!("{name}.bpf.c"));
        std::fs::write(&c, text).unwrap();
        let cc = std::process::Command::new("clang-19")
            .args(["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"])
            .arg(&c)
            .arg("-o")
            .arg(dir.join(format!("{name}.bpf.o")))
            .output()
            .unwrap();
        assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    }
    let services = format!("services={}", concat!(env!("CARGO_MANIFEST_DIR"), "/examples/encap/services.json"));
    let (a, b) = (dir.join("before.bpf.o"), dir.join("after.bpf.o"));
    let o = common::bpfbench(&[
        "ab",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--map",
        &services,
        "--packet",
        "eth/ipv4(dst=10.0.0.10)/tcp(dport=80)/payload(32)",
        "--expect",
        "XDP_TX",
        "--metric",
        "insns",
        "--no-store",
        "--format",
        "json",
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let deltas = rec["deltas"].as_array().unwrap();
    assert_eq!(deltas.len(), 1, "{rec}");
    let d = &deltas[0];
    assert_eq!(d["metric"], "insns", "{d}");
    assert_eq!(d["benchmark"], "before/xdp_encap@user@insns", "{d}");
    // The counter's add became one atomic add: only the lines around it changed.
    let lines: Vec<&String> = d["lines"].as_object().unwrap().keys().collect();
    assert!(lines.iter().any(|l| *l == "before.bpf.c: *n += 1;"), "{lines:?}");
    assert!(lines.iter().any(|l| *l == "before.bpf.c: __sync_fetch_and_add(n, 1);"), "{lines:?}");
    assert!(lines.len() <= 4, "only the lines around the edit: {lines:?}");
    assert!(!lines.iter().any(|l| l.contains("bpf_map_lookup_elem(&services")), "{lines:?}");
}
