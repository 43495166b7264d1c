//! The loaded load balancer: its two timed programs, its maps and the
//! operations scenarios need on them (configure, reset, read counters).
//! Struct layouts and constants come from the object's BTF (lb_common.h).

use std::net::IpAddr;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::LazyLock;

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use super::addressing::{NEXT_HOP_MAC, Pool, UDP_LRU_TIMEOUT_NS, VIPS, reals};
use super::maglev::{RingMember, build_ring};
use crate::harness::inline::{self, Scrub};
use crate::harness::timing::{BodyChoice, SharedRuntime, TimedProgram, cannot_inline, place, programs_of_other_loops};
use crate::kernel::FuncInfo;
use crate::kernel::load::{LoadSpec, load_program};
use crate::kernel::prepared::PreparedCode;
use crate::kernel::prog_type::ProgKind;
use crate::kernel::skeleton::{self, ObjectSource, object_map, object_map_sized, object_prog};
use crate::record::{Body, LoopConstruct, Runtime};
use crate::system::cpu::possible_cpus;

crate::bpf_skeleton!("xdp_lb");
pub use skel::types::{
    lb_counter as Counter, lb_flowgen as FlowGen, lb_flowgen_offset as FlowGenOffset, lb_limit as Limit,
};
use skel::types::{
    lb_ctl, lb_flow_key, lb_real, lb_real_flag, lb_real_pos_lru, lb_stat, lb_vip_flag, lb_vip_key, lb_vip_meta,
};
pub(super) use skel::types::{lb_flow_table, lb_flow_words};

crate::impl_pod!(lb_vip_key, lb_vip_meta, lb_real, lb_ctl, lb_stat, FlowGen, lb_flow_words, lb_flow_table);

/// Slots of each VIP's consistent-hash ring.
pub const RING_SIZE: u32 = Limit::LB_RING_SIZE.0;
/// Flow spaces up to this size have their words precomputed (lb_flow_table).
const FLOW_TABLE_SIZE: usize = Limit::LB_FLOW_TABLE_SIZE.0 as usize;

/// Each VIP's consistent-hash ring, indexed by VIP number. The topology is
/// fixed, so they are built once per process: a paired comparison sets the
/// load balancer up afresh for every round, and building the rings took
/// most of the 200 ms a set-up took.
static RINGS: LazyLock<Vec<Vec<u32>>> = LazyLock::new(|| {
    let mut rings = vec![Vec::new(); VIPS.iter().map(|v| v.num as usize + 1).max().unwrap_or(0)];
    for vip in VIPS {
        let members: Vec<RingMember> = reals(vip.pool).iter().map(|r| RingMember { pos: r.pos, weight: 1 }).collect();
        rings[vip.num as usize] = build_ring(&members, RING_SIZE);
    }
    rings
});

/// An address as the datapath stores it: network-order bytes in 32-bit
/// words, IPv4 in the first word.
pub fn addr_words(addr: IpAddr) -> [u32; 4] {
    let mut bytes = [0u8; 16];
    match addr {
        IpAddr::V4(a) => bytes[..4].copy_from_slice(&a.octets()),
        IpAddr::V6(a) => bytes = a.octets(),
    }
    std::array::from_fn(|i| u32::from_ne_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes")))
}

fn key(k: u32) -> [u8; 4] {
    k.to_ne_bytes()
}

/// xdp_lb and its overhead twin with their bodies (lb_body, lb_empty_body)
/// inline in the may_goto loop, loaded by hand beside the object's own.
fn load_inline(code: &PreparedCode) -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    // Loads `prog` with its call to `body` inlined; returns the bytes zeroed after each copy.
    let one = |prog: &str, body: &str, scrub: Scrub| -> Result<(std::os::fd::OwnedFd, i64)> {
        let insns = code.programs.get(prog).with_context(|| format!("no instructions of {prog}"))?;
        let named = code.functions.get(prog).with_context(|| format!("no function records of {prog}"))?;
        let at =
            named.iter().find(|(_, n)| n == body).with_context(|| format!("{prog} has no function {body}"))?.0.insn_off
                as usize;
        let funcs: Vec<FuncInfo> = named.iter().map(|(f, _)| *f).collect();
        let inlined = inline::inline_calls(insns, &funcs, at, scrub)?;
        let spec = LoadSpec {
            kind: ProgKind::Xdp,
            name: prog,
            license: "Dual BSD/GPL",
            attach: 0,
            flags: 0,
            funcs: Some((code.btf_fd.context("the object's BTF is not in the kernel")?, &inlined.funcs)),
        };
        let fd =
            load_program(&spec, &inlined.insns).context("the kernel refused the datapath inline in the batch loop")?;
        Ok((fd, inlined.scrubbed))
    };
    // The datapath's paths leave its stack slots in different forms, which
    // the verifier never prunes at the loop head (measured on 6.18: "the
    // sequence of 8193 jumps is too complex" after ~3 s): each exit zeroes
    // the slots its paths wrote. Zeroing the whole frame (120 bytes) after
    // every iteration instead cost the overhead loop 1.4 ns of its 2.5.
    let (body, scrubbed) = one("xdp_lb", "lb_body", Scrub::Written)?;
    let (overhead, _) = one("xdp_lb_overhead", "lb_empty_body", Scrub::Bytes(scrubbed))?;
    Ok((body, overhead))
}

/// The load balancer, loaded: two timed programs and the maps they share.
pub struct LoadedLb {
    pub body: TimedProgram,
    pub overhead: TimedProgram,
    /// The loop construct both timed programs were built with.
    pub construct: LoopConstruct,
    /// Whether the datapath runs inline in the loop, or is called.
    pub placement: Body,
    /// Why it is called, where inline was asked for or possible.
    pub why_called: Option<String>,
    /// The datapath alone, for an interface (`bpfbench live`); builds of
    /// xdp_lb.bpf.c from before it existed have none.
    pub live: Option<std::os::fd::OwnedFd>,
    /// The programs' relocated instructions and their maps, for the
    /// userspace runtime.
    pub code: crate::kernel::prepared::PreparedCode,
    /// The userspace runtime the timed programs run in, when they do. Setup
    /// still writes the kernel's maps (one setup code for both); each
    /// change is then copied over, and counters are read from it.
    user: Option<SharedRuntime>,
    vip_map: MapHandle,
    reals: MapHandle,
    ch_rings: MapHandle,
    lru_mapping: MapHandle,
    /// The loaded object: its map descriptors are the ones `code`'s
    /// instructions name, so [`LoadedLb::place_again`] can load them again.
    object: Option<libbpf_rs::Object>,
    /// The per-CPU connection tables `lru_mapping` holds now (kept so that a
    /// scenario can have its own back, see [`LoadedLb::lru_tables`]).
    lru_tables: Vec<MapHandle>,
    fallback_lru: MapHandle,
    ctl_array: MapHandle,
    vip_stats: MapHandle,
    real_stats: MapHandle,
    counters: MapHandle,
    flowgen: MapHandle,
    flow_words: MapHandle,
}

impl LoadedLb {
    /// The build of xdp_lb.bpf.c compiled into bpfbench.
    pub fn builtin() -> ObjectSource {
        ObjectSource::Builtin { name: "xdp_lb", bytes: crate::bpf_object_bytes!("xdp_lb") }
    }

    /// Loads a build of xdp_lb.bpf.c with its timed programs of
    /// `construct`, checks that its maps have this host's layouts, and
    /// fills VIPs, reals, rings and per-CPU LRUs.
    pub fn load(source: &ObjectSource, construct: LoopConstruct) -> Result<LoadedLb> {
        Self::load_placed(source, construct, BodyChoice::Call, Runtime::Kernel)
    }

    /// [`LoadedLb::load`], with the datapath inline in the loop where
    /// `placed` asks for that, `runtime` allows it and the kernel accepts it.
    pub fn load_placed(
        source: &ObjectSource,
        construct: LoopConstruct,
        placed: BodyChoice,
        runtime: Runtime,
    ) -> Result<LoadedLb> {
        let label = source.label();
        let mut open = source.open()?;
        let (body, overhead) =
            (format!("xdp_lb{}", construct.program_suffix()), format!("xdp_lb_overhead{}", construct.program_suffix()));
        let has = |name: &str| open.progs().any(|p| p.name().to_str() == Some(name));
        // A build without xdp_lb at all is another program: named as such below.
        if has("xdp_lb") && !has(&body) {
            bail!(
                "{label} has no program {body} for --timing-mode {}: it was built before bpfbench timed with that loop",
                construct.as_str()
            );
        }
        skeleton::leave_unloaded(&mut open, &programs_of_other_loops(&["xdp_lb", "xdp_lb_overhead"], construct));
        let (obj, code) = skeleton::load_object_keeping_code(open, &format!("the xdp-lb programs of {label}"))?;
        let map = |name: &str, key: usize, value: usize| object_map_sized(&obj, name, key, value, &label);
        let timed = |name: &str| -> Result<TimedProgram> {
            TimedProgram::new(
                object_prog(&obj, name, &label)?,
                object_map(&obj, "bench_ctl", &label)?,
                object_map(&obj, "bench_result", &label)?,
            )
        };
        let u32s = size_of::<u32>();
        let ctl =
            |p| TimedProgram::new(p, object_map(&obj, "bench_ctl", &label)?, object_map(&obj, "bench_result", &label)?);
        let placed = place(
            placed,
            cannot_inline(construct, runtime),
            || {
                let (b, o) = load_inline(&code)?;
                Ok((ctl(b)?, ctl(o)?))
            },
            || Ok((timed(&body)?, timed(&overhead)?)),
        )?;
        let (body_prog, overhead_prog) = placed.value;
        let mut lb = LoadedLb {
            code,
            user: None,
            body: body_prog,
            overhead: overhead_prog,
            construct,
            placement: placed.body,
            why_called: placed.why_called,
            live: object_prog(&obj, "xdp_lb_live", &label).ok(),
            vip_map: map("vip_map", size_of::<lb_vip_key>(), size_of::<lb_vip_meta>())?,
            reals: map("reals", u32s, size_of::<lb_real>())?,
            ch_rings: map("ch_rings", u32s, u32s)?,
            lru_mapping: map("lru_mapping", u32s, u32s)?,
            lru_tables: Vec::new(),
            object: None,
            fallback_lru: map("fallback_lru", size_of::<lb_flow_key>(), size_of::<lb_real_pos_lru>())?,
            ctl_array: map("ctl_array", u32s, size_of::<lb_ctl>())?,
            vip_stats: map("vip_stats", u32s, size_of::<lb_stat>())?,
            real_stats: map("real_stats", u32s, size_of::<lb_stat>())?,
            counters: map("lb_counters", u32s, size_of::<u64>())?,
            flowgen: map("flowgen", u32s, size_of::<FlowGen>())?,
            flow_words: map("flow_words", u32s, size_of::<lb_flow_table>())?,
        };
        lb.object = Some(obj);
        lb.configure()?;
        Ok(lb)
    }

    /// Runs the timed programs in the userspace runtime from now on, with
    /// the maps as setup left them.
    pub fn run_in_user(&mut self, cpu: usize) -> Result<()> {
        let runtime = std::rc::Rc::new(std::cell::RefCell::new(crate::uvm::UserRuntime::new(&self.code, cpu)?));
        self.body.run_in_user(runtime.clone(), "xdp_lb")?;
        self.overhead.run_in_user(runtime.clone(), "xdp_lb_overhead")?;
        self.user = Some(runtime);
        Ok(())
    }

    /// The userspace runtime, when the programs run there.
    pub fn user(&self) -> Option<&SharedRuntime> {
        self.user.as_ref()
    }

    /// Copies the maps setup just changed in the kernel to the userspace runtime.
    fn sync(&self, names: &[&str]) -> Result<()> {
        if let Some(rt) = &self.user {
            for name in names {
                rt.borrow_mut().resync(name)?;
            }
        }
        Ok(())
    }

    /// Every CPU's value of `key` in `map` (called `name` in the object),
    /// from where the programs run.
    fn percpu_values(&self, map: &MapHandle, name: &str, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        match &self.user {
            Some(rt) => rt.borrow().map(name)?.peek_all(key).with_context(|| format!("{name} has no slot {key:?}")),
            None => map.lookup_percpu(key, MapFlags::ANY)?.with_context(|| format!("{name} has no slot {key:?}")),
        }
    }

    fn configure(&mut self) -> Result<()> {
        self.set_udp_timeout(UDP_LRU_TIMEOUT_NS)?;
        for pool in [Pool::V4, Pool::V6] {
            for r in reals(pool) {
                let flags = if r.addr.is_ipv6() { lb_real_flag::LB_REAL_IPV6.0 as u8 } else { 0 };
                let def = lb_real { addr: addr_words(r.addr), flags, ..Default::default() };
                self.reals.update(&key(r.pos), bytemuck::bytes_of(&def), MapFlags::ANY)?;
            }
        }
        for vip in VIPS {
            let k = lb_vip_key { addr: addr_words(vip.addr), port: vip.port.to_be(), proto: vip.proto, _pad: 0 };
            let flags = if vip.lru_bypass { lb_vip_flag::LB_VIP_LRU_BYPASS.0 } else { 0 };
            let meta = lb_vip_meta { flags, vip_num: vip.num };
            self.vip_map.update(bytemuck::bytes_of(&k), bytemuck::bytes_of(&meta), MapFlags::ANY)?;
        }
        self.fill_rings()?;
        self.reset_lru()
    }

    /// Writes every VIP's ring into `ch_rings` through a shared mapping of
    /// the array (one copy instead of a syscall's work per slot).
    fn fill_rings(&self) -> Result<()> {
        // The kernel stores array values 8-byte aligned: each u32 slot takes 8 bytes.
        let stride = (self.ch_rings.value_size() as usize).next_multiple_of(8) / size_of::<u32>();
        let len = self.ch_rings.max_entries() as usize * stride * size_of::<u32>();
        // SAFETY: a shared mapping of the whole value area of an mmapable
        // array (BPF_F_MMAPABLE, u32 values); unmapped below, never aliased.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.ch_rings.as_fd().as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error())
                .context("mapping ch_rings (is it BPF_F_MMAPABLE in this build of xdp_lb.bpf.c?)");
        }
        // SAFETY: `len` bytes of u32 words, page-aligned.
        let words = unsafe { std::slice::from_raw_parts_mut(base.cast::<u32>(), len / size_of::<u32>()) };
        for vip in VIPS {
            let start = (vip.num * RING_SIZE) as usize;
            for (i, &pos) in RINGS[vip.num as usize].iter().enumerate() {
                words[(start + i) * stride] = pos;
            }
        }
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(base, len) };
        Ok(())
    }

    /// Writes the control map: the next-hop MAC and the UDP LRU timeout.
    pub fn set_udp_timeout(&self, udp_lru_timeout_ns: u64) -> Result<()> {
        let ctl = lb_ctl { default_mac: NEXT_HOP_MAC, udp_lru_timeout_ns, ..Default::default() };
        self.ctl_array.update(&key(0), bytemuck::bytes_of(&ctl), MapFlags::ANY).context("writing ctl_array")?;
        self.sync(&["ctl_array"])
    }

    /// The real position the VIP's ring holds for `hash`.
    pub fn ring_slot(&self, vip_num: u32, hash: u32) -> u32 {
        RINGS[vip_num as usize][(hash % RING_SIZE) as usize]
    }

    /// Gives every CPU a fresh, empty connection table of the suite's size.
    pub fn reset_lru(&mut self) -> Result<()> {
        self.reset_lru_sized(Limit::LB_LRU_SIZE.0)
    }

    /// Gives every CPU a fresh, empty connection table of `entries`
    /// (an LRU hash in a map-of-maps may have any size).
    pub fn reset_lru_sized(&mut self, entries: u32) -> Result<()> {
        let mut tables = Vec::new();
        for _ in 0..possible_cpus()?.min(Limit::LB_MAX_CPUS.0 as usize) {
            // Like the fallback table, whose types are the inner template's.
            let lru = crate::kernel::maps::create_like(&self.fallback_lru, "lb_lru", entries)
                .context("creating a per-CPU LRU")?;
            tables.push(lru);
        }
        self.use_lru_tables(tables)?;
        let keys: Vec<Vec<u8>> = self.fallback_lru.keys().collect();
        for k in keys {
            let _ = self.fallback_lru.delete(&k);
        }
        self.sync(&["lru_mapping", "fallback_lru"])
    }

    /// Loads the timed programs again where they are inline (loaded by
    /// hand; a called body is the object's own program and stays), with a
    /// new VIP table of the same contents. Each load is one draw of what
    /// the kernel randomises, and a short path's time follows the draw:
    /// the JIT image lands at a random offset (the early exits read 4.2
    /// or 4.6 ns/op, load to load), and a hash map seeds its buckets at
    /// random, so a lookup that misses costs what its bucket holds
    /// (pass-v6-no-vip: 25.6 to 28.3 ns/op, run to run). A run draws
    /// afresh each sweep, so its figures cover several draws, not one.
    pub fn place_again(&mut self) -> Result<()> {
        if self.placement != crate::record::Body::Inline || self.user.is_some() {
            return Ok(());
        }
        let vips = crate::kernel::maps::create_like(&self.vip_map, "vip_map", self.vip_map.max_entries())?;
        let entries: Vec<(Vec<u8>, Vec<u8>)> = self
            .vip_map
            .keys()
            .filter_map(|k| self.vip_map.lookup(&k, MapFlags::ANY).ok().flatten().map(|v| (k, v)))
            .collect();
        for (k, v) in &entries {
            vips.update(k, v, MapFlags::ANY).context("copying the VIP table")?;
        }
        let old = self.code.maps.iter().find(|(_, _, name)| name == "vip_map").map(|(fd, _, _)| *fd);
        let old = old.context("the prepared code names no vip_map")?;
        let id = vips.info().context("reading the new VIP table's id")?.info.id;
        self.code.replace_map(old, vips.as_fd().as_raw_fd(), id);
        let (body, overhead) = load_inline(&self.code)?;
        self.body.replace_program(body);
        self.overhead.replace_program(overhead);
        // The new table's descriptor is the one the code names now: kept open with it.
        self.vip_map = vips;
        Ok(())
    }

    /// CPU `cpu`'s connection table, as a new handle: a scenario resumed
    /// later gets it back with [`LoadedLb::use_lru_table`], with the
    /// connections it left in it.
    pub fn lru_table(&self, cpu: usize) -> Result<MapHandle> {
        let table = self.lru_tables.get(cpu).with_context(|| format!("no connection table for CPU {cpu}"))?;
        Ok(MapHandle::try_from(table)?)
    }

    /// Puts `table` in place as CPU `cpu`'s connection table (one update of
    /// the map of maps: the kernel waits for an RCU grace period on each,
    /// ~10 ms here, so a resume swaps only the CPU it runs on).
    pub fn use_lru_table(&mut self, cpu: usize, table: MapHandle) -> Result<()> {
        let fd = table.as_fd().as_raw_fd() as u32;
        self.lru_mapping.update(&key(cpu as u32), &fd.to_ne_bytes(), MapFlags::ANY)?;
        self.lru_tables[cpu] = table;
        Ok(())
    }

    /// Puts `tables` (one per CPU) in place as the connection tables.
    fn use_lru_tables(&mut self, tables: Vec<MapHandle>) -> Result<()> {
        for (cpu, table) in tables.iter().enumerate() {
            let fd = table.as_fd().as_raw_fd() as u32;
            self.lru_mapping.update(&key(cpu as u32), &fd.to_ne_bytes(), MapFlags::ANY)?;
        }
        self.lru_tables = tables;
        Ok(())
    }

    /// Zeroes every per-CPU counter.
    pub fn reset_counters(&self) -> Result<()> {
        let cpus = possible_cpus()?;
        for (map, entries, size) in [
            (&self.counters, Counter::LB_CNT_MAX.0, size_of::<u64>()),
            (&self.vip_stats, Limit::LB_MAX_VIPS.0, size_of::<lb_stat>()),
            (&self.real_stats, Limit::LB_MAX_REALS.0, size_of::<lb_stat>()),
        ] {
            let zeros = vec![vec![0u8; size]; cpus];
            for k in 0..entries {
                map.update_percpu(&key(k), &zeros, MapFlags::ANY)?;
            }
        }
        self.sync(&["lb_counters", "vip_stats", "real_stats"])
    }

    /// A counter summed over CPUs.
    pub fn counter(&self, c: Counter) -> Result<u64> {
        let per_cpu = self.percpu_values(&self.counters, "lb_counters", &key(c.0))?;
        Ok(per_cpu.iter().map(|v| bytemuck::pod_read_unaligned::<u64>(&v[..8])).sum())
    }

    fn stat(&self, map: &MapHandle, name: &str, idx: u32) -> Result<lb_stat> {
        let per_cpu = self.percpu_values(map, name, &key(idx))?;
        Ok(per_cpu
            .iter()
            .map(|v| bytemuck::pod_read_unaligned::<lb_stat>(v))
            .fold(lb_stat::default(), |a, s| lb_stat { packets: a.packets + s.packets, bytes: a.bytes + s.bytes }))
    }

    /// Packets and bytes counted for a VIP, summed over CPUs.
    pub fn vip_stat(&self, vip_num: u32) -> Result<(u64, u64)> {
        self.stat(&self.vip_stats, "vip_stats", vip_num).map(|s| (s.packets, s.bytes))
    }

    /// Packets and bytes counted for the real at `pos`, summed over CPUs.
    pub fn real_stat(&self, pos: u32) -> Result<(u64, u64)> {
        self.stat(&self.real_stats, "real_stats", pos).map(|s| (s.packets, s.bytes))
    }

    /// Sets the flow generator; a flow space the table holds gets its
    /// words precomputed there (what lb_flowgen_write would compute).
    pub fn set_flowgen(&self, g: FlowGen) -> Result<()> {
        if g.enabled != 0 && (g.mask as usize) < FLOW_TABLE_SIZE {
            let mut table: lb_flow_table = bytemuck::Zeroable::zeroed();
            for idx in 0..=g.mask {
                table.w[idx as usize] = flow_words_of(&g, idx);
            }
            self.flow_words.update(&key(0), bytemuck::bytes_of(&table), MapFlags::ANY).context("writing flow_words")?;
        }
        self.flowgen.update(&key(0), bytemuck::bytes_of(&g), MapFlags::ANY).context("writing flowgen")?;
        self.sync(&["flow_words", "flowgen"])
    }
}

/// Flow `idx`'s address word and checksums as the frame holds them (raw
/// memory words, as lb_flowgen_write computes them; RFC 1624 from the
/// partial sums flowgen_for() made).
pub(super) fn flow_words_of(g: &FlowGen, idx: u32) -> lb_flow_words {
    let addr = g.base_addr ^ idx.to_be();
    let with = |partial: u32| {
        let mut sum = partial + (addr & 0xffff) + (addr >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        sum = (sum & 0xffff) + (sum >> 16);
        !(sum as u16)
    };
    let l4 = with(g.l4_partial);
    lb_flow_words {
        addr,
        l3_csum: if g.l3_csum_off != 0 { with(g.l3_partial) } else { 0 },
        l4_csum: if g.l4_is_udp != 0 && l4 == 0 { 0xffff } else { l4 },
    }
}
