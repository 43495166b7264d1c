//! Maps in userspace, with the kernel's semantics, built from the kernel's
//! own maps of the prepared object and filled with what they hold: so the
//! same setup code fills both.
//!
//! Values live in boxes whose addresses stay put while the program holds
//! them: a deleted value is kept until the run ends, as the kernel's RCU
//! keeps it until the program is done.

pub mod lpm;
pub mod lru;

use std::collections::HashMap;

use anyhow::{Context, Result, bail};
use libbpf_rs::{MapCore, MapFlags, MapType};

use super::uapi::{BPF_EXIST, BPF_NOEXIST, E2BIG, EEXIST, EINVAL, ENOENT};
use lpm::Lpm;
use lru::LruHash;

/// A map's shape.
#[derive(Debug, Clone)]
pub struct MapDef {
    pub name: String,
    pub map_type: MapType,
    pub key_size: usize,
    pub value_size: usize,
    pub max_entries: u32,
    /// Frozen global data (.rodata): the program may not write it.
    pub read_only: bool,
}

/// The tables keyed by a program's bytes: foldhash, several times faster
/// than the standard SipHash on 4–40-byte keys, and with a fixed seed (no
/// untrusted input reaches it, and runs repeat exactly).
pub(super) type Table<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

enum Store {
    /// Array and global data: per CPU copy (one for a plain array), the
    /// values side by side, `stride` bytes apart (value_size rounded up to
    /// 8, as the kernel lays them out), so the JIT can index them inline.
    Array { stride: usize, copies: Vec<Box<[u8]>> },
    /// Hash: one box per key holding every CPU's copy, `stride` bytes
    /// apart (a per-CPU hash has one copy per CPU, others one).
    Hash { stride: usize, table: Table<Box<[u8]>, Box<[u8]>> },
    /// LRU hash, with the kernel's eviction; a per-CPU one keeps every
    /// CPU's copy in the element's value, `stride` bytes apart (value_size
    /// rounded up to 8), a plain one its value (`stride` = value_size).
    Lru { stride: usize, lru: Box<LruHash> },
    /// LPM trie, with the kernel's longest-prefix match.
    Lpm(Box<Lpm>),
    /// A perf event array: its slots would hold perf events, which only a
    /// reader opens; here none does, so every slot is empty (as in the
    /// kernel under bpfbench) and the program's output goes nowhere.
    PerfEvents,
}

/// The index an array's `key` names, or the kernel's error for an update
/// there with `flags`.
fn array_slot(key: &[u8], max_entries: u32, flags: u64) -> Result<usize, i64> {
    let i = key.try_into().ok().map(u32::from_ne_bytes).ok_or(-EINVAL)?;
    if i >= max_entries {
        return Err(-E2BIG);
    }
    if flags == BPF_NOEXIST {
        return Err(-EEXIST);
    }
    Ok(i as usize)
}

/// One map.
pub struct UserMap {
    pub def: MapDef,
    store: Store,
    cpus: usize,
    /// Values deleted during a run, freed after it.
    graveyard: Vec<Box<[u8]>>,
}

fn percpu(t: MapType) -> bool {
    matches!(t, MapType::PercpuArray | MapType::PercpuHash | MapType::LruPercpuHash)
}

/// Maps whose values are maps: here, the index of the inner map in [`UserMaps`].
pub fn of_maps(t: MapType) -> bool {
    matches!(t, MapType::ArrayOfMaps | MapType::HashOfMaps)
}

/// An array of maps' slot that holds no map.
pub const NO_INNER_MAP: u32 = u32::MAX;

impl UserMap {
    /// An empty map of `def`'s shape, or a one-line refusal naming the type.
    pub fn new(def: MapDef, cpus: usize) -> Result<UserMap> {
        let copies = if percpu(def.map_type) { cpus } else { 1 };
        let store = match def.map_type {
            MapType::Array | MapType::PercpuArray | MapType::ArrayOfMaps | MapType::ProgArray => {
                if def.key_size != 4 {
                    bail!("map {}: an array's key is 4 bytes, not {}", def.name, def.key_size);
                }
                // An array of maps starts with no map in any slot.
                let fill = if of_maps(def.map_type) { 0xff } else { 0 };
                let stride = def.value_size.next_multiple_of(8);
                Store::Array {
                    stride,
                    copies: (0..copies)
                        .map(|_| vec![fill; stride * def.max_entries as usize].into_boxed_slice())
                        .collect(),
                }
            }
            MapType::Hash | MapType::PercpuHash | MapType::HashOfMaps => {
                Store::Hash { stride: def.value_size.next_multiple_of(8), table: Table::default() }
            }
            MapType::LpmTrie => {
                if def.key_size <= 4 || def.key_size > 4 + lpm::MAX_DATA {
                    bail!(
                        "map {}: an LPM trie's key is a 4-byte prefix length and 1 to {} bytes of data, not {} bytes",
                        def.name,
                        lpm::MAX_DATA,
                        def.key_size
                    );
                }
                Store::Lpm(Box::new(Lpm::new(def.key_size - 4, def.max_entries)))
            }
            MapType::LruHash | MapType::LruPercpuHash => {
                let stride = if percpu(def.map_type) { def.value_size.next_multiple_of(8) } else { def.value_size };
                Store::Lru { stride, lru: Box::new(LruHash::new(def.max_entries as usize, stride * copies, cpus)) }
            }
            MapType::PerfEventArray => Store::PerfEvents,
            t => {
                let why = format!("map {}: type {t:?} is not in bpfbench's userspace runtime yet", def.name);
                return Err(super::Lacks(why).into());
            }
        };
        Ok(UserMap { def, store, cpus: copies, graveyard: Vec::new() })
    }

    /// Slot `index` of a prog array: the kernel id of its program, None
    /// where it is empty (the kernel gives ids where it holds programs; an
    /// empty slot holds 0, no id). None outside the array.
    pub fn prog_in_slot(&mut self, index: u32) -> Option<Option<u32>> {
        if self.def.map_type != MapType::ProgArray {
            return None;
        }
        let v = self.lookup(&index.to_ne_bytes(), 0)?;
        let id = u32::from_ne_bytes(v.get(..4)?.try_into().ok()?);
        Some((id != 0).then_some(id))
    }

    fn copies(&self) -> usize {
        self.cpus
    }

    /// The value's address for `cpu`, or None (a program's lookup).
    pub fn lookup(&mut self, key: &[u8], cpu: usize) -> Option<&mut [u8]> {
        let c = cpu.min(self.copies() - 1);
        match &mut self.store {
            Store::Lru { stride, lru } => lru.lookup(key).map(|v| &mut v[c * *stride..][..self.def.value_size]),
            Store::Lpm(m) => m.lookup(key),
            Store::Array { stride, copies } => {
                let i = u32::from_ne_bytes(key.try_into().ok()?) as usize;
                copies[c].get_mut(i * *stride..)?.get_mut(..self.def.value_size)
            }
            Store::Hash { stride, table } => table.get_mut(key).map(|v| &mut v[c * *stride..][..self.def.value_size]),
            Store::PerfEvents => None,
        }
    }

    /// A program's update on `cpu`: a per-CPU map's element gets `value`
    /// in that CPU's copy only (a new element's other copies zeroed), as
    /// the kernel's helper does; other maps as [`Self::update`].
    pub fn update_from_program(&mut self, key: &[u8], value: &[u8], flags: u64, cpu: usize) -> i64 {
        if !percpu(self.def.map_type) {
            return self.update(key, &[value], flags, cpu);
        }
        if flags > BPF_EXIST || value.len() != self.def.value_size {
            return -EINVAL;
        }
        let (c, copies, size) = (cpu.min(self.copies() - 1), self.copies(), self.def.value_size);
        let full = self.key_count() >= self.def.max_entries as usize;
        match &mut self.store {
            Store::Array { stride, copies } => match array_slot(key, self.def.max_entries, flags) {
                Ok(i) => {
                    copies[c][i * *stride..][..size].copy_from_slice(value);
                    0
                }
                Err(e) => e,
            },
            // In place: the kernel writes a per-CPU element's copy where it is.
            Store::Hash { stride, table } => match table.get_mut(key) {
                Some(_) if flags == BPF_NOEXIST => -EEXIST,
                Some(v) => {
                    v[c * *stride..][..size].copy_from_slice(value);
                    0
                }
                None if flags == BPF_EXIST => -ENOENT,
                None if full => -E2BIG,
                None => {
                    let mut v = vec![0u8; *stride * copies].into_boxed_slice();
                    v[c * *stride..][..size].copy_from_slice(value);
                    table.insert(key.into(), v);
                    0
                }
            },
            Store::Lru { stride, lru } => lru.update_in_place(key, flags, cpu, |v, new| {
                if new {
                    v.fill(0);
                }
                v[c * *stride..][..size].copy_from_slice(value);
            }),
            Store::Lpm(_) => unreachable!("an LPM trie has one copy"),
            Store::PerfEvents => unreachable!("a perf event array has one copy"),
        }
    }

    /// Userspace's update (the syscall's), as done on `cpu`: `key` gets
    /// `values`, one per CPU copy (or one for all). Returns 0 or -errno.
    pub fn update(&mut self, key: &[u8], values: &[&[u8]], flags: u64, cpu: usize) -> i64 {
        if flags > BPF_EXIST || values.iter().any(|v| v.len() != self.def.value_size) {
            return -EINVAL;
        }
        let copies = self.copies();
        let value_for = |c: usize| values[c.min(values.len() - 1)];
        match &mut self.store {
            // Its values are perf event fds, which this runtime has none of.
            Store::PerfEvents => -EINVAL,
            Store::Lru { lru, .. } if !percpu(self.def.map_type) => lru.update(key, values[0], flags, cpu),
            Store::Lru { stride, lru } => lru.update_in_place(key, flags, cpu, |v, _| {
                for c in 0..copies {
                    v[c * *stride..][..self.def.value_size].copy_from_slice(value_for(c));
                }
            }),
            Store::Lpm(m) => match m.update(key, values[0], flags) {
                Ok(old) => {
                    // The program may still hold the old value: it lives until the run ends.
                    self.graveyard.extend(old);
                    0
                }
                Err(e) => e,
            },
            Store::Array { stride, copies } => {
                let i = match array_slot(key, self.def.max_entries, flags) {
                    Ok(i) => i,
                    Err(e) => return e,
                };
                let at = i * *stride;
                for (c, copy) in copies.iter_mut().enumerate() {
                    copy[at..at + self.def.value_size].copy_from_slice(value_for(c));
                }
                0
            }
            Store::Hash { stride, table } => {
                // A new box: a program holding the old value keeps reading what it read.
                let (stride, size) = (*stride, self.def.value_size);
                let fresh = || {
                    let mut v = vec![0u8; stride * copies].into_boxed_slice();
                    for c in 0..copies {
                        v[c * stride..][..size].copy_from_slice(value_for(c));
                    }
                    v
                };
                let full = table.len() >= self.def.max_entries as usize;
                match table.get_mut(key) {
                    Some(_) if flags == BPF_NOEXIST => -EEXIST,
                    Some(slot) => {
                        self.graveyard.push(std::mem::replace(slot, fresh()));
                        0
                    }
                    None if flags == BPF_EXIST => -ENOENT,
                    None if full => -E2BIG,
                    None => {
                        table.insert(key.into(), fresh());
                        0
                    }
                }
            }
        }
    }

    pub fn delete(&mut self, key: &[u8]) -> i64 {
        match &mut self.store {
            Store::Lru { lru, .. } => lru.delete(key),
            Store::Lpm(m) => match m.delete(key) {
                Ok(old) => {
                    self.graveyard.push(old);
                    0
                }
                Err(e) => e,
            },
            Store::Array { .. } | Store::PerfEvents => -EINVAL,
            Store::Hash { table, .. } => match table.remove(key) {
                Some(old) => {
                    self.graveyard.push(old);
                    0
                }
                None => -ENOENT,
            },
        }
    }

    /// An array's values for `cpu` as the JIT indexes them: (address of
    /// value 0, bytes from one value to the next). None for other types.
    pub fn array_layout(&mut self, cpu: usize) -> Option<(u64, usize)> {
        let c = cpu.min(self.copies() - 1);
        match &mut self.store {
            Store::Array { stride, copies } => Some((copies[c].as_mut_ptr() as u64, *stride)),
            _ => None,
        }
    }

    /// Frees what was deleted during the run just ended.
    pub fn end_run(&mut self) {
        self.graveyard.clear();
    }

    /// Every CPU's value of `key`, as userspace's lookup gives it (no LRU
    /// reference bit set).
    pub fn peek_all(&self, key: &[u8]) -> Option<Vec<Vec<u8>>> {
        match &self.store {
            Store::Lru { stride, lru } => {
                lru.peek(key).map(|v| v.chunks(*stride).map(|c| c[..self.def.value_size].to_vec()).collect())
            }
            Store::Array { stride, copies } => {
                let i = u32::from_ne_bytes(key.try_into().ok()?);
                (i < self.def.max_entries)
                    .then(|| copies.iter().map(|c| c[i as usize * stride..][..self.def.value_size].to_vec()).collect())
            }
            Store::Hash { stride, table } => {
                table.get(key).map(|v| v.chunks(*stride).map(|c| c[..self.def.value_size].to_vec()).collect())
            }
            Store::Lpm(m) => m.peek(key).map(|v| vec![v.to_vec()]),
            Store::PerfEvents => None,
        }
    }

    /// Keys a walk of the map's keys finds (an array: every index).
    pub fn key_count(&self) -> usize {
        match &self.store {
            Store::Array { .. } => self.def.max_entries as usize,
            Store::Hash { table, .. } => table.len(),
            Store::Lru { lru, .. } => lru.key_count(),
            Store::Lpm(m) => m.key_count(),
            Store::PerfEvents => 0,
        }
    }

    /// Every (key, per-CPU values), for comparisons and copying back.
    pub fn entries(&self) -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
        match &self.store {
            Store::Array { stride, copies } => (0..self.def.max_entries)
                .map(|i| {
                    (
                        i.to_ne_bytes().to_vec(),
                        copies.iter().map(|c| c[i as usize * stride..][..self.def.value_size].to_vec()).collect(),
                    )
                })
                .collect(),
            Store::Hash { stride, table } => table
                .iter()
                .map(|(k, v)| (k.to_vec(), v.chunks(*stride).map(|c| c[..self.def.value_size].to_vec()).collect()))
                .collect(),
            Store::Lru { stride, lru } => lru
                .entries()
                .into_iter()
                .map(|(k, v)| (k, v.chunks(*stride).map(|c| c[..self.def.value_size].to_vec()).collect()))
                .collect(),
            Store::Lpm(m) => m.entries().map(|(k, v)| (k.to_vec(), vec![v.to_vec()])).collect(),
            Store::PerfEvents => Vec::new(),
        }
    }
}

/// The maps of one object, by the kernel fd its instructions name.
pub struct UserMaps {
    pub maps: Vec<UserMap>,
    by_fd: HashMap<i32, usize>,
    /// The kernel map each of the object's own maps was copied from, by name.
    ids: HashMap<String, (u32, usize)>,
    /// Slots of inner maps no outer map holds any more, for the next copies.
    free: Vec<usize>,
}

impl UserMaps {
    /// Copies the loaded object's maps, shapes and contents (the inner
    /// maps of maps of maps too).
    pub fn mirror(obj: &libbpf_rs::Object) -> Result<UserMaps> {
        use std::os::fd::{AsFd, AsRawFd};
        let mut named = Vec::new();
        for m in obj.maps() {
            let id = libbpf_rs::MapInfo::new(m.as_fd())?.info.id;
            named.push((m.as_fd().as_raw_fd(), id, m.name().to_string_lossy().into_owned()));
        }
        UserMaps::mirror_ids(&named)
    }

    /// Copies the maps (fd in the instructions, id, name) as they are now.
    pub fn mirror_ids(maps: &[(i32, u32, String)]) -> Result<UserMaps> {
        let cpus = crate::system::cpu::possible_cpus()?;
        let mut out = UserMaps { maps: Vec::new(), by_fd: HashMap::new(), ids: HashMap::new(), free: Vec::new() };
        let mut inner_by_id = HashMap::new();
        for (fd, id, name) in maps {
            // Objects that share a map (by pinning) name it by other fds: one copy.
            if let Some(&(_, i)) = out.ids.values().find(|(copied, _)| copied == id) {
                out.by_fd.insert(*fd, i);
                continue;
            }
            let m = match libbpf_rs::MapHandle::from_map_id(*id) {
                Ok(m) => m,
                // Gone with the object: only programs left unloaded used it
                // (a loop construct the kernel was not given), and those
                // never run here.
                Err(e) if e.kind() == libbpf_rs::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("opening map {name}")),
            };
            let i = out.mirror_one(&m, name.clone(), cpus, &mut inner_by_id)?;
            out.by_fd.insert(*fd, i);
            out.ids.insert(name.clone(), (*id, i));
        }
        Ok(out)
    }

    /// Copies the object's map `name` again from the kernel's, after setup
    /// code changed it there. A map of maps' old inner maps are dropped.
    pub fn resync(&mut self, name: &str) -> Result<()> {
        let &(id, i) = self.ids.get(name).with_context(|| format!("the object has no map {name}"))?;
        if of_maps(self.maps[i].def.map_type) {
            for (_, values) in self.maps[i].entries() {
                let inner = u32::from_ne_bytes(values[0][..4].try_into().expect("4-byte inner map index"));
                if inner != NO_INNER_MAP {
                    self.free.push(inner as usize);
                }
            }
        }
        let m = libbpf_rs::MapHandle::from_map_id(id).with_context(|| format!("opening map {name}"))?;
        let copy = self.mirror_one(&m, name.to_string(), crate::system::cpu::possible_cpus()?, &mut HashMap::new())?;
        // The copy takes the map's own slot: the instructions' fds lead there.
        self.maps.swap(i, copy);
        self.free.push(copy);
        Ok(())
    }

    /// Copies one map; returns its index.
    fn mirror_one<M: MapCore>(
        &mut self,
        m: &M,
        name: String,
        cpus: usize,
        inner_by_id: &mut HashMap<u32, usize>,
    ) -> Result<usize> {
        let def = MapDef {
            read_only: name.ends_with(".rodata") || name.contains(".rodata."),
            name: name.clone(),
            map_type: m.map_type(),
            key_size: m.key_size() as usize,
            value_size: m.value_size() as usize,
            max_entries: m.max_entries(),
        };
        let mut um = UserMap::new(def, cpus)?;
        if m.map_type() == MapType::PerfEventArray {
            // Nothing to copy: a reader's perf events, and bpfbench opens none.
            return Ok(self.place(um));
        }
        // Plain maps come over in batches (a load balancer's rings hold
        // hundreds of thousands of values: one syscall each took seconds).
        if !percpu(m.map_type())
            && !of_maps(m.map_type())
            && m.map_type() != MapType::ProgArray
            && let Ok(batches) = m.lookup_batch(4096, MapFlags::ANY, MapFlags::ANY)
        {
            for (key, value) in batches {
                let rc = um.update(&key, &[&value], 0, 0);
                if rc != 0 {
                    bail!("copying map {name} to userspace: error {rc}");
                }
            }
            return Ok(self.place(um));
        }
        for key in m.keys() {
            let mut values: Vec<Vec<u8>> = if percpu(m.map_type()) {
                m.lookup_percpu(&key, MapFlags::ANY).with_context(|| format!("reading map {name}"))?.unwrap_or_default()
            } else {
                m.lookup(&key, MapFlags::ANY).with_context(|| format!("reading map {name}"))?.into_iter().collect()
            };
            if values.is_empty() {
                continue;
            }
            if of_maps(m.map_type()) {
                // The kernel gives the inner map's id: copy that map once, keep its index.
                let id = u32::from_ne_bytes(values[0][..4].try_into().context("an inner map id")?);
                let index = match inner_by_id.get(&id) {
                    Some(&i) => i,
                    None => {
                        let inner = libbpf_rs::MapHandle::from_map_id(id)
                            .with_context(|| format!("opening the inner map {id} of {name}"))?;
                        // Named by its outer map, not by id: counts by map must not change between runs.
                        let i = self.mirror_one(&inner, format!("{name}[inner]"), cpus, inner_by_id)?;
                        inner_by_id.insert(id, i);
                        i
                    }
                };
                values = vec![(index as u32).to_ne_bytes().to_vec()];
            }
            let refs: Vec<&[u8]> = values.iter().map(|v| v.as_slice()).collect();
            let rc = um.update(&key, &refs, 0, 0);
            if rc != 0 {
                bail!("copying map {name} to userspace: error {rc}");
            }
        }
        Ok(self.place(um))
    }

    /// Puts a copied map in a free slot or at the end; returns its index.
    fn place(&mut self, um: UserMap) -> usize {
        match self.free.pop() {
            Some(slot) => {
                self.maps[slot] = um;
                slot
            }
            None => {
                self.maps.push(um);
                self.maps.len() - 1
            }
        }
    }

    /// The map an instruction's fd names.
    pub fn index_of_fd(&self, fd: i32) -> Option<usize> {
        self.by_fd.get(&fd).copied()
    }

    /// The object's own map `name` (not an inner map).
    pub fn by_name(&self, name: &str) -> Option<&UserMap> {
        self.ids.get(name).map(|&(_, i)| &self.maps[i])
    }

    pub fn by_name_mut(&mut self, name: &str) -> Option<&mut UserMap> {
        self.ids.get(name).map(|&(_, i)| &mut self.maps[i])
    }

    pub fn end_run(&mut self) {
        for m in &mut self.maps {
            m.end_run();
        }
    }
}
