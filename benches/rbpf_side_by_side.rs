//! bpfbench's userspace engines beside rbpf 0.4's, on the same relocated
//! instructions: which of the programs bpfbench runs each can run at all,
//! and how fast each runs the ones both can.
//!
//! `cargo bench --bench rbpf_side_by_side` (as root: libbpf creates the
//! objects' maps). Nothing else should run meanwhile; the engines are
//! timed in alternation, in short rounds, on one CPU.

use std::time::Instant;

use bpfbench::uvm::interp::{Env, Interpreter};
use bpfbench::uvm::jit::{JitProgram, Resolve};
use bpfbench::uvm::memory::{Memory, RegionKind};
use std::collections::BTreeMap;

use bpfbench::insn::Insn;
use bpfbench::kernel::prepared::PreparedCode;
use bpfbench::uvm::Counts;

/// Runs per timed round, and rounds per engine.
const RUNS: u32 = 200_000;
const ROUNDS: usize = 15;

fn test_object(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("OUT_DIR"), "/test-objects")).join(name)
}

/// The object's programs as libbpf relocated them, decoded.
fn prepared(open: libbpf_rs::OpenObject) -> BTreeMap<String, Vec<Insn>> {
    let mut open = open;
    let code = PreparedCode::capture(&mut open).expect("libbpf prepares the object");
    code.programs
}

fn bytes_of(insns: &[Insn]) -> Vec<u8> {
    insns.iter().flat_map(|i| i.encode()).collect()
}

/// A stand-in for each helper bpfbench's runtime has, so that rbpf's JIT
/// is judged on the instructions, not on helpers nobody registered.
fn stand_in(_: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    0
}

/// Whether rbpf's verifier and JIT take `insns`, or why not.
fn rbpf_takes(insns: &[Insn]) -> Result<(), String> {
    let bytes = bytes_of(insns);
    let outcome = std::panic::catch_unwind(|| -> Result<(), String> {
        let mut vm = rbpf::EbpfVmRaw::new(Some(&bytes)).map_err(|e| format!("verifier: {e}"))?;
        for id in bpfbench::uvm::helpers::supported_ids() {
            vm.register_helper(id as u32, stand_in).map_err(|e| format!("registering helper {id}: {e}"))?;
        }
        vm.jit_compile().map_err(|e| format!("JIT: {e}"))
    });
    outcome.unwrap_or_else(|_| Err("JIT: panicked (an instruction it does not implement)".into()))
}

/// Whether bpfbench's JIT takes `insns` (maps resolved to placeholders).
fn ours_takes(insns: &[Insn]) -> Result<(), String> {
    JitProgram::compile(insns, &mut Placeholders).map(|_| ()).map_err(|e| e.to_string())
}

struct Placeholders;

impl Resolve for Placeholders {
    fn map_handle(&mut self, fd: i32) -> Result<u64, String> {
        Ok(0x1000 + fd as u64)
    }
    fn map_value(&mut self, _fd: i32, _off: u32) -> Result<u64, String> {
        Ok(0x2000)
    }
}

/// An XDP frame below 4 GiB (xdp_md's 32-bit pointers are then real):
/// the packet at 256, `struct xdp_md` at 2048.
struct Frame {
    base: *mut u8,
}

const PACKET_AT: usize = 256;
const MD_AT: usize = 2048;

impl Frame {
    fn new(packet: &[u8]) -> Frame {
        // SAFETY: a fresh private mapping, unmapped on drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_32BIT,
                -1,
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let f = Frame { base: p.cast() };
        let data = f.base as u32 + PACKET_AT as u32;
        let md: [u32; 6] = [data, data + packet.len() as u32, data, 0, 0, 0];
        // SAFETY: both fit the page.
        unsafe {
            std::ptr::copy_nonoverlapping(md.as_ptr().cast::<u8>(), f.base.add(MD_AT), 24);
        }
        f.reset(packet);
        f
    }
    fn reset(&self, packet: &[u8]) {
        // SAFETY: the packet fits between PACKET_AT and MD_AT.
        unsafe { std::ptr::copy_nonoverlapping(packet.as_ptr(), self.base.add(PACKET_AT), packet.len()) };
    }
    fn md(&mut self) -> &mut [u8] {
        // SAFETY: the context's 24 bytes, in this page.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(MD_AT), 24) }
    }
    fn md_addr(&self) -> u64 {
        self.base as u64 + MD_AT as u64
    }
    fn packet(&self, len: usize) -> &[u8] {
        // SAFETY: as in reset.
        unsafe { std::slice::from_raw_parts(self.base.add(PACKET_AT), len) }
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new.
        unsafe { libc::munmap(self.base.cast(), 4096) };
    }
}

/// No helpers, no maps: what the timed programs need.
struct NoEnv;

impl Env for NoEnv {
    fn helper(&mut self, id: i32, _: [u64; 5], _: &mut Memory) -> Result<u64, String> {
        Err(format!("helper {id}"))
    }
    fn reach(&mut self) -> Option<(&mut bpfbench::uvm::helpers::Helpers, Option<&mut bpfbench::uvm::maps::UserMaps>)> {
        None
    }
    fn context_load(&self, _: u64, _: usize) -> Option<u64> {
        None
    }
}

/// One engine: runs the program once on the frame, returns r0.
type Engine<'a> = Box<dyn FnMut(&mut Frame) -> u64 + 'a>;

fn engines<'a>(insns: &'a [Insn], bytes: &'a [u8], packet_len: usize) -> Vec<(&'static str, Engine<'a>)> {
    let mut ours = JitProgram::compile(insns, &mut Placeholders).expect("bpfbench's JIT compiles it");
    let mut rbpf_jit = rbpf::EbpfVmRaw::new(Some(bytes)).expect("rbpf's verifier takes it");
    rbpf_jit.jit_compile().expect("rbpf's JIT compiles it");
    let mut rbpf_interp = rbpf::EbpfVmRaw::new(Some(bytes)).expect("rbpf's verifier takes it");
    let interp = Interpreter::new(insns);
    let mut registered = false;
    vec![
        // SAFETY: a program the kernel's verifier accepted (the caller loads it first), XDP.
        ("bpfbench JIT", Box::new(move |f: &mut Frame| unsafe { ours.call(f.md_addr()) })),
        // SAFETY: as above; rbpf's JIT checks nothing at run time.
        (
            "rbpf JIT",
            Box::new(move |f: &mut Frame| unsafe { rbpf_jit.execute_program_jit(f.md()).expect("rbpf's JIT runs it") }),
        ),
        (
            "bpfbench interpreter",
            Box::new(move |f: &mut Frame| {
                let mut mem = Memory::default();
                mem.add(f.md_addr() as *const u8, 24, false, RegionKind::Context);
                let p = f.packet(packet_len);
                mem.add(p.as_ptr(), p.len(), true, RegionKind::Packet);
                interp.run(f.md_addr(), &mut NoEnv, &mut mem, &mut Counts::default()).expect("the interpreter runs it")
            }),
        ),
        (
            "rbpf interpreter",
            Box::new(move |f: &mut Frame| {
                if !registered {
                    let p = f.packet(packet_len).as_ptr() as u64;
                    rbpf_interp.register_allowed_memory(p..p + packet_len as u64);
                    registered = true;
                }
                rbpf_interp.execute_program(f.md()).expect("rbpf's interpreter runs it")
            }),
        ),
    ]
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times `object`'s program `prog` on `packet` in each engine (after
/// checking each gives the same verdict and packet), in rounds that
/// alternate the engines; prints ns per run.
fn time_program(object: &str, prog: &str, packet: &[u8]) {
    let open = libbpf_rs::ObjectBuilder::default().open_file(test_object(object)).expect("the test object opens");
    let code = prepared(open);
    let insns = &code[prog];
    let bytes = bytes_of(insns);
    let mut frame = Frame::new(packet);
    let mut engines = engines(insns, &bytes, packet.len());
    let mut outputs = Vec::new();
    for (name, run) in &mut engines {
        frame.reset(packet);
        let r0 = run(&mut frame);
        outputs.push((*name, r0, frame.packet(packet.len()).to_vec()));
    }
    for o in &outputs[1..] {
        assert_eq!((o.1, &o.2), (outputs[0].1, &outputs[0].2), "{} and {} disagree on {prog}", o.0, outputs[0].0);
    }
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); engines.len()];
    for _ in 0..ROUNDS {
        for (i, (_, run)) in engines.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..RUNS {
                frame.reset(packet);
                std::hint::black_box(run(&mut frame));
            }
            ns[i].push(t.elapsed().as_nanos() as f64 / f64::from(RUNS));
        }
    }
    // The packet restore each run costs the same for all: measured alone.
    let mut restore = Vec::new();
    for _ in 0..ROUNDS {
        let t = Instant::now();
        for _ in 0..RUNS {
            frame.reset(std::hint::black_box(packet));
        }
        restore.push(t.elapsed().as_nanos() as f64 / f64::from(RUNS));
    }
    let restore = median(&mut restore);
    println!(
        "\n{object} ({prog}, {} instructions), ns per run less the packet's restore ({restore:.1} ns), median of {ROUNDS} rounds of {RUNS}:",
        insns.len()
    );
    let base = median(&mut ns[0].clone()) - restore;
    for (i, (name, _)) in engines.iter().enumerate() {
        let m = median(&mut ns[i]) - restore;
        println!("  {name:<22} {m:>8.1} ns   {:>6.2}x bpfbench's JIT", m / base);
    }
}

fn main() {
    if let Some(cpu) =
        std::env::args().skip(1).find_map(|a| a.strip_prefix("--cpu=").and_then(|c| c.parse::<usize>().ok()))
    {
        bpfbench::system::cpu::pin_to_cpu(cpu).expect("pinning");
    }
    bpfbench::system::check_privileges().expect("run as root: libbpf creates the objects' maps");

    // Which programs each JIT takes at all.
    println!(
        "Programs bpfbench runs, as libbpf relocated them: does each JIT take them? (rbpf gets stand-ins for the helpers bpfbench has)"
    );
    let lb = bpfbench::workloads::xdp_lb::fuzz_corpus(0).expect("the load balancer loads");
    let mut sources: Vec<(String, BTreeMap<String, Vec<Insn>>)> = vec![
        ("xdp-lb (built in)".into(), lb.names.iter().cloned().zip(lb.programs.iter().cloned()).collect()),
        (
            "maps (built in)".into(),
            prepared(bpfbench::workloads::maps::instance::LoadedMapBench::builtin().open().unwrap()),
        ),
    ];
    let mut objects: Vec<_> = std::fs::read_dir(test_object(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".bpf.o") && n.starts_with("xdp_"))
        .collect();
    objects.sort();
    for o in objects {
        let open = libbpf_rs::ObjectBuilder::default().open_file(test_object(&o)).unwrap();
        sources.push((o, prepared(open)));
    }
    let (mut both, mut ours_only, mut total) = (0, 0, 0);
    for (label, code) in &sources {
        for (prog, insns) in code {
            total += 1;
            let (r, o) = (rbpf_takes(insns), ours_takes(insns));
            match (&r, &o) {
                (Ok(()), Ok(())) => both += 1,
                (Err(_), Ok(())) => ours_only += 1,
                _ => {}
            }
            let say = |x: &Result<(), String>| match x {
                Ok(()) => "yes".to_string(),
                Err(e) => format!("no: {}", e.lines().next().unwrap_or_default()),
            };
            println!("  {label:<24} {prog:<24} rbpf: {:<70} bpfbench: {}", say(&r), say(&o));
        }
    }
    println!("  {total} programs: both JITs take {both}; bpfbench's alone {ours_only}");

    // Speed where both run: packet work without helpers or maps.
    let mut frame = vec![0u8; 64];
    for (i, b) in frame.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(29).wrapping_add(3);
    }
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    time_program("xdp_swap.bpf.o", "xdp_swap", &frame);
    time_program("xdp_swap_slow.bpf.o", "xdp_swap", &frame);
}
