//! One loaded map benchmark: map_ops.bpf.c with its map shaped and its
//! operation fixed before load, plus the host-side operations the harness
//! needs on it (fill, empty, count, read and rewind the per-CPU key cursors).

use std::os::fd::AsFd;

use anyhow::{Context, Result, ensure};
use libbpf_rs::{MapCore, MapFlags, MapHandle};

use crate::kernel::maps;

use super::ops::{KeyLayout, MapKind, MapOp};
use crate::harness::timing::{SharedRuntime, TimedProgram, programs_of_other_loops};
use crate::kernel::skeleton::{
    self, ObjectSource, edit_section, object_map, object_map_sized, object_prog, open_map_mut,
};
use crate::record::{LoopConstruct, Runtime};
use crate::system::cpu::possible_cpus;
use crate::uvm::UserRuntime;

crate::bpf_skeleton!("map_ops");
/// The per-CPU key cursor and counts of map_ops.h.
pub use skel::types::map_op_state as OpState;
use skel::types::{bss as Bss, key_kind, map_op, map_ops_limit, rodata as Rodata};

crate::impl_pod!(OpState, Rodata, Bss);

/// Limits from map_ops.h.
pub const MAX_KEY_SIZE: u32 = map_ops_limit::MAX_KEY_SIZE.0;
pub const MAX_VALUE_SIZE: u32 = map_ops_limit::MAX_VALUE_SIZE.0;
/// Byte every inserted or updated value is filled with; the fill writes zeros,
/// so validation can tell which values an operation wrote.
pub const WRITTEN_BYTE: u8 = 0xa5;
/// Extra LRU capacity per possible CPU. The kernel's LRU keeps free nodes on
/// per-CPU lists and evicts before max_entries is reached (measured: 1000
/// keys into a 1000-entry LRU kept 976), so an LRU sized exactly would lose
/// keys the benchmark expects; the headroom keeps all `entries` resident.
const LRU_HEADROOM_PER_CPU: u32 = 256;
/// Keys per BPF_MAP_*_BATCH syscall when filling or emptying.
const SYSCALL_BATCH: usize = 8192;

/// The BPF loop body of `op` (`enum map_op`).
fn bpf_op(op: MapOp) -> map_op {
    match op {
        MapOp::Noop | MapOp::Free => map_op::MAP_OP_NOOP,
        MapOp::Baseline => map_op::MAP_OP_BASELINE,
        MapOp::Lookup => map_op::MAP_OP_LOOKUP,
        MapOp::Insert => map_op::MAP_OP_INSERT,
        MapOp::Update => map_op::MAP_OP_UPDATE,
        MapOp::Delete | MapOp::Drain => map_op::MAP_OP_DELETE,
    }
}

/// What one instance benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapConfig {
    pub kind: MapKind,
    pub op: MapOp,
    pub entries: u32,
    pub key: KeyLayout,
    pub value_size: u32,
    pub random: bool,
    /// Test hook: added to every key BPF uses, so lookups miss on purpose.
    pub key_offset: u32,
}

pub struct LoadedMapBench {
    pub config: MapConfig,
    pub body: TimedProgram,
    /// The same loop around an empty call: the harness's own cost.
    pub overhead: TimedProgram,
    /// The loop both programs time in.
    pub construct: LoopConstruct,
    map: MapHandle,
    state: MapHandle,
    ncpus: usize,
    /// The userspace runtime the programs run in, when they do; the map
    /// and the key cursors are then its copies, and the host's fills,
    /// empties and reads go there.
    user: Option<SharedRuntime>,
}

const KEY0: [u8; 4] = 0u32.to_ne_bytes();

/// max_entries for a map meant to hold `entries` keys. An LPM trie gets one
/// more: older kernels refuse to update a key of a full trie in place
/// (measured: every update failed on Debian 11's 5.10), and an unused slot
/// costs a trie nothing (it allocates nodes on demand).
pub fn capacity(kind: MapKind, entries: u32, ncpus: usize) -> u32 {
    match kind {
        k if k.is_lru() => entries.saturating_add(LRU_HEADROOM_PER_CPU * ncpus as u32),
        MapKind::LpmTrie => entries.saturating_add(1),
        _ => entries,
    }
}

/// Per-CPU values are laid out 8-byte aligned in syscalls.
fn percpu_stride(value_size: u32) -> usize {
    (value_size as usize).div_ceil(8) * 8
}

impl LoadedMapBench {
    /// The build of map_ops.bpf.c compiled into bpfbench.
    pub fn builtin() -> ObjectSource {
        ObjectSource::Builtin { name: "map_ops", bytes: crate::bpf_object_bytes!("map_ops") }
    }

    /// Loads an instance of a build of map_ops.bpf.c for `config`, whose
    /// sizes `MapParams::check` accepted, its programs timed in `construct`'s
    /// loop and run in `runtime` as if on `cpu`. The kernel loads it either
    /// way (its verifier decides what the userspace JIT may run).
    pub fn load(
        config: MapConfig,
        source: &ObjectSource,
        construct: LoopConstruct,
        runtime: Runtime,
        cpu: usize,
    ) -> Result<LoadedMapBench> {
        let MapConfig { kind, op, entries, key, value_size, random, key_offset } = config;
        let label = source.label();
        let mut open = source.open()?;
        let (body, empty) = (
            format!("map_bench{}", construct.program_suffix()),
            format!("map_bench_empty{}", construct.program_suffix()),
        );
        ensure!(
            open.progs().any(|p| p.name().to_str() == Some(body.as_str())),
            "{label} has no program {body} for --timing-mode {}: it was built before bpfbench timed maps with that loop",
            construct.as_str()
        );
        skeleton::leave_unloaded(&mut open, &programs_of_other_loops(&["map_bench", "map_bench_empty"], construct));
        let ncpus = possible_cpus()?;
        {
            let mut m = open_map_mut(&mut open, "bench_map", &label)?;
            m.set_type(kind.map_type())?;
            m.set_key_size(key.size)?;
            m.set_value_size(value_size)?;
            m.set_max_entries(capacity(kind, entries, ncpus))?;
            if kind == MapKind::LpmTrie {
                // The kernel requires LPM tries to allocate on demand.
                m.set_map_flags(maps::NO_PREALLOC)?;
            }
        }
        edit_section(&mut open, ".rodata", &label, |ro: &mut Rodata| {
            ro.cfg_op = bpf_op(op);
            ro.cfg_key_kind = if key.lpm_prefix.is_some() { key_kind::KEY_LPM } else { key_kind::KEY_INDEX };
            ro.cfg_entries = entries;
            ro.cfg_random = random as u32;
            ro.cfg_prefix_len = key.lpm_prefix.unwrap_or(32);
            ro.cfg_key_offset = key_offset;
        })?;
        edit_section(&mut open, ".bss", &label, |bss: &mut Bss| {
            bss.update_value = [WRITTEN_BYTE; MAX_VALUE_SIZE as usize]
        })?;

        let what = format!("the {kind} {op} benchmark of {label}");
        let (obj, code) = match runtime {
            Runtime::Kernel => (skeleton::load_object(open, &what)?, None),
            Runtime::User => skeleton::load_object_keeping_code(open, &what).map(|(obj, code)| (obj, Some(code)))?,
        };
        let map = |name: &str| object_map(&obj, name, &label);
        let timed =
            |name: &str| TimedProgram::new(object_prog(&obj, name, &label)?, map("bench_ctl")?, map("bench_result")?);
        let mut bench = LoadedMapBench {
            config,
            body: timed(&body)?,
            overhead: timed(&empty)?,
            construct,
            map: map("bench_map")?,
            state: object_map_sized(&obj, "op_state", size_of::<u32>(), size_of::<OpState>(), &label)?,
            ncpus,
            user: None,
        };
        if let Some(code) = code {
            let rt = std::rc::Rc::new(std::cell::RefCell::new(UserRuntime::new(&code, cpu)?));
            bench.body.run_in_user(rt.clone(), &body)?;
            bench.overhead.run_in_user(rt.clone(), &empty)?;
            bench.user = Some(rt);
        }
        Ok(bench)
    }

    /// The userspace runtime the programs run in, if they do.
    pub fn user(&self) -> Option<&SharedRuntime> {
        self.user.as_ref()
    }

    /// Runs `f` on the userspace runtime's copy of map `name`.
    fn in_user<T>(
        rt: &SharedRuntime,
        name: &str,
        f: impl FnOnce(&mut crate::uvm::maps::UserMap, usize) -> Result<T>,
    ) -> Result<T> {
        let mut rt = rt.borrow_mut();
        let cpu = rt.cpu();
        f(rt.map_mut(name)?, cpu)
    }

    /// Inserts keys [from, to) with zeroed values.
    pub fn fill(&self, from: u32, to: u32) -> Result<()> {
        let Some(rt) = &self.user else { return fill_map(&self.map, &self.config, self.ncpus, from, to) };
        let zeros = vec![0u8; self.config.value_size as usize];
        Self::in_user(rt, "bench_map", |m, cpu| {
            for i in from..to {
                let rc = m.update(&self.config.key.key(i), &[&zeros], 0, cpu);
                ensure!(rc == 0, "filling the {} map in userspace: key {i}: error {rc}", self.config.kind);
            }
            Ok(())
        })
    }

    /// Deletes keys [from, to), which must all be present.
    pub fn empty(&self, from: u32, to: u32) -> Result<()> {
        if let Some(rt) = &self.user {
            return Self::in_user(rt, "bench_map", |m, _| {
                for i in from..to {
                    let rc = m.delete(&self.config.key.key(i));
                    ensure!(rc == 0, "emptying the {} map in userspace: key {i}: error {rc}", self.config.kind);
                }
                Ok(())
            });
        }
        let idx: Vec<u32> = (from..to).collect();
        let mut keys = Vec::new();
        for chunk in idx.chunks(SYSCALL_BATCH) {
            keys.clear();
            for &i in chunk {
                self.config.key.encode(i, &mut keys);
            }
            maps::delete_batch(self.map.as_fd(), &keys, chunk.len() as u32)
                .with_context(|| format!("emptying the {} map", self.config.kind))?;
        }
        Ok(())
    }

    /// Elements in the map, counted by walking its keys.
    pub fn count(&self) -> usize {
        match &self.user {
            Some(rt) => rt.borrow().map("bench_map").map_or(0, |m| m.key_count()),
            None => self.map.keys().count(),
        }
    }

    pub fn contains(&self, idx: u32) -> Result<bool> {
        let key = self.config.key.key(idx);
        if let Some(rt) = &self.user {
            return Ok(rt.borrow().map("bench_map")?.peek_all(&key).is_some());
        }
        Ok(if self.config.kind.is_percpu() {
            self.map.lookup_percpu(&key, MapFlags::ANY)?.is_some()
        } else {
            self.map.lookup(&key, MapFlags::ANY)?.is_some()
        })
    }

    /// The value of key `idx` as `cpu` sees it.
    pub fn value(&self, idx: u32, cpu: usize) -> Result<Option<Vec<u8>>> {
        let key = self.config.key.key(idx);
        if let Some(rt) = &self.user {
            let copy = if self.config.kind.is_percpu() { cpu } else { 0 };
            return Ok(rt.borrow().map("bench_map")?.peek_all(&key).and_then(|v| v.into_iter().nth(copy)));
        }
        Ok(if self.config.kind.is_percpu() {
            self.map.lookup_percpu(&key, MapFlags::ANY)?.and_then(|v| v.into_iter().nth(cpu))
        } else {
            self.map.lookup(&key, MapFlags::ANY)?
        })
    }

    /// Every CPU's op_state.
    pub fn states(&self) -> Result<Vec<OpState>> {
        let per_cpu = match &self.user {
            Some(rt) => rt.borrow().map("op_state")?.peek_all(&KEY0),
            None => self.state.lookup_percpu(&KEY0, MapFlags::ANY)?,
        }
        .context("op_state slot missing")?;
        Ok(per_cpu.iter().map(|v| bytemuck::pod_read_unaligned(v)).collect())
    }

    /// Rewrites every CPU's op_state.
    pub fn set_states(&self, states: &[OpState]) -> Result<()> {
        let values: Vec<Vec<u8>> = states.iter().map(|s| bytemuck::bytes_of(s).to_vec()).collect();
        if let Some(rt) = &self.user {
            let refs: Vec<&[u8]> = values.iter().map(Vec::as_slice).collect();
            return Self::in_user(rt, "op_state", |m, cpu| {
                let rc = m.update(&KEY0, &refs, 0, cpu);
                ensure!(rc == 0, "writing op_state in userspace: error {rc}");
                Ok(())
            });
        }
        self.state.update_percpu(&KEY0, &values, MapFlags::ANY).context("writing op_state")
    }

    pub fn possible_cpus(&self) -> usize {
        self.ncpus
    }
}

/// A map named `name` shaped as `config` says, outside any program: one
/// whose last reference the host holds (to time its freeing).
pub fn create_bare_map(config: &MapConfig, name: &str) -> Result<MapHandle> {
    let max_entries = capacity(config.kind, config.entries, possible_cpus()?);
    maps::create(config.kind.map_type(), name, config.key.size, config.value_size, max_entries)
}

/// Inserts keys [from, to) of `config`'s layout with zeroed values, in batches.
pub fn fill_map(map: &MapHandle, config: &MapConfig, ncpus: usize, from: u32, to: u32) -> Result<()> {
    let stride =
        if config.kind.is_percpu() { percpu_stride(config.value_size) * ncpus } else { config.value_size as usize };
    let mut keys = Vec::new();
    let idx: Vec<u32> = (from..to).collect();
    for chunk in idx.chunks(SYSCALL_BATCH) {
        keys.clear();
        for &i in chunk {
            config.key.encode(i, &mut keys);
        }
        let values = vec![0u8; stride * chunk.len()];
        maps::update_batch(map.as_fd(), &keys, &values, chunk.len() as u32)
            .with_context(|| format!("filling the {} map", config.kind))?;
    }
    Ok(())
}
