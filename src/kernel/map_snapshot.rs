//! A map's entries kept to be put back: the state a case that checks the
//! maps after its packets starts from, and the state a test framework's
//! test is timed from, put back before every call of its fresh timing.
//!
//! Real datapaths declare large maps they hardly fill (Cilium's tests: a
//! per-CPU array of 524,288 entries, LRU hashes of 512 Ki), so a snapshot
//! reads each map in batches (`BPF_MAP_LOOKUP_BATCH`, key by key where a
//! type has none), keeps an array's non-zero slots only, and a restore
//! writes only what differs; [`Dirty`] narrows the restore that runs
//! before every call to the entries one run changed.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys as sys;

use super::maps::{keys, lookup, map_by_id, resettable, update, update_batch, value_len};

/// A map's (key, value) pairs as read.
type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// Entries a batch lookup asks for at once.
const BATCH: u32 = 4096;

/// Whether a map of this type holds other maps (its values are their ids
/// when read, their descriptors when written).
fn holds_maps(map_type: u32) -> bool {
    matches!(map_type, sys::BPF_MAP_TYPE_ARRAY_OF_MAPS | sys::BPF_MAP_TYPE_HASH_OF_MAPS)
}

/// Whether the map behind `map` can be snapshot and put back: a hash,
/// array, LRU or LPM map (or a per-CPU one) that programs may write, or
/// a map of maps (whose inner maps are snapshot with it).
pub fn restorable(map: BorrowedFd<'_>) -> Result<bool> {
    let info = libbpf_rs::MapInfo::new(map).context("reading a map's info")?.info;
    Ok(holds_maps(info.type_) || (resettable(info.type_) && info.map_flags & sys::BPF_F_RDONLY_PROG == 0))
}

pub struct MapSnapshot {
    /// Shared: a test framework keeps a snapshot per test of every map.
    map: Arc<OwnedFd>,
    /// Array slots are rewritten, never deleted; a slot not kept is zeroes.
    array: bool,
    of_maps: bool,
    key_size: usize,
    value_len: usize,
    /// Every entry (an array's non-zero slots only), by key.
    entries: HashMap<Vec<u8>, Vec<u8>>,
    /// A map of maps' inner maps (each once), put back with it.
    inner: Vec<MapSnapshot>,
}

impl MapSnapshot {
    /// The entries of `map` (a [`restorable`] map) now.
    pub fn take(map: BorrowedFd<'_>, possible_cpus: usize) -> Result<MapSnapshot> {
        MapSnapshot::take_shared(&Arc::new(map.try_clone_to_owned()?), possible_cpus)
    }

    /// As [`MapSnapshot::take`], the map's descriptor shared with other snapshots of it.
    pub fn take_shared(shared: &Arc<OwnedFd>, possible_cpus: usize) -> Result<MapSnapshot> {
        let map = shared.as_fd();
        let info = libbpf_rs::MapInfo::new(map).context("reading a map's info")?.info;
        let of_maps = holds_maps(info.type_);
        if !resettable(info.type_) && !of_maps {
            bail!("a map of type {} cannot be read whole", info.type_);
        }
        let array = matches!(
            info.type_,
            sys::BPF_MAP_TYPE_ARRAY | sys::BPF_MAP_TYPE_PERCPU_ARRAY | sys::BPF_MAP_TYPE_ARRAY_OF_MAPS
        );
        let key_size = info.key_size as usize;
        let value_len = if of_maps { 4 } else { value_len(&info, possible_cpus) };
        let mut snapshot = MapSnapshot {
            map: shared.clone(),
            array,
            of_maps,
            key_size,
            value_len,
            entries: HashMap::new(),
            inner: Vec::new(),
        };
        snapshot.entries = snapshot.read()?;
        let mut seen = std::collections::HashSet::new();
        for value in snapshot.entries.values().filter(|_| of_maps) {
            let id = u32::from_ne_bytes(value[..4].try_into().expect("4-byte id"));
            if !seen.insert(id) {
                continue;
            }
            let fd = map_by_id(id)?;
            if restorable(fd.as_fd())? {
                snapshot.inner.push(MapSnapshot::take(fd.as_fd(), possible_cpus).context("reading an inner map")?);
            }
        }
        Ok(snapshot)
    }

    /// The map's entries now (an array's non-zero slots only).
    fn read(&self) -> Result<HashMap<Vec<u8>, Vec<u8>>> {
        let all = match self.read_batched()? {
            Some(all) => all,
            None => {
                let map = self.map.as_fd();
                let mut all = Vec::new();
                for key in keys(map, self.key_size)? {
                    // A key deleted meanwhile is simply not there.
                    if let Some(value) = lookup(map, &key, self.value_len)? {
                        all.push((key, value));
                    }
                }
                all
            }
        };
        Ok(all.into_iter().filter(|(_, v)| !self.array || v.iter().any(|b| *b != 0)).collect())
    }

    /// Every entry by `BPF_MAP_LOOKUP_BATCH`; None where the map's type has
    /// no batch lookup (LPM tries, maps of maps).
    fn read_batched(&self) -> Result<Option<Entries>> {
        if self.of_maps {
            return Ok(None);
        }
        let opts = libbpf_opts!(bpf_map_batch_opts {});
        // The batch token: a hash map's is a bucket (u32), an array's a key.
        let token = self.key_size.max(8);
        let (mut in_batch, mut out_batch) = (vec![0u8; token], vec![0u8; token]);
        let mut keys = vec![0u8; self.key_size * BATCH as usize];
        let mut values = vec![0u8; self.value_len * BATCH as usize];
        let mut out = Vec::new();
        let mut first = true;
        loop {
            let mut count = BATCH;
            let in_ptr = if first { std::ptr::null_mut() } else { in_batch.as_mut_ptr().cast() };
            // SAFETY: the key and value buffers hold BATCH entries, the tokens `token` bytes.
            let rc = unsafe {
                sys::bpf_map_lookup_batch(
                    self.map.as_raw_fd(),
                    in_ptr,
                    out_batch.as_mut_ptr().cast(),
                    keys.as_mut_ptr().cast(),
                    values.as_mut_ptr().cast(),
                    &mut count,
                    &opts,
                )
            };
            let err = (rc != 0).then(std::io::Error::last_os_error);
            match err.as_ref().and_then(std::io::Error::raw_os_error) {
                None | Some(libc::ENOENT) => {}
                Some(524) | Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) if first => return Ok(None),
                _ => return Err(err.expect("an error")).context("reading a map in batches"),
            }
            for i in 0..count as usize {
                let key = keys[i * self.key_size..(i + 1) * self.key_size].to_vec();
                let value = values[i * self.value_len..(i + 1) * self.value_len].to_vec();
                out.push((key, value));
            }
            if err.is_some() {
                return Ok(Some(out));
            }
            std::mem::swap(&mut in_batch, &mut out_batch);
            first = false;
        }
    }

    /// The keys whose entries differ now from the snapshot's (added,
    /// removed or changed), and whether an inner map differs.
    fn differences(&self) -> Result<(Vec<Vec<u8>>, bool)> {
        let now = self.read()?;
        let mut keys: Vec<Vec<u8>> = now
            .iter()
            .filter(|(k, v)| self.entries.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .chain(self.entries.keys().filter(|k| !now.contains_key(*k)).cloned())
            .collect();
        keys.sort();
        keys.dedup();
        let mut inner = false;
        for m in &self.inner {
            let (k, i) = m.differences()?;
            inner |= !k.is_empty() || i;
        }
        Ok((keys, inner))
    }

    /// Puts the entries at `keys` back as they were: a key the snapshot
    /// lacks is deleted (an array's slot zeroed).
    fn put_back(&self, keys: &[Vec<u8>]) -> Result<()> {
        let map = self.map.as_fd();
        let zeroes = vec![0u8; self.value_len];
        let (mut batch_keys, mut batch_values) = (Vec::new(), Vec::new());
        for key in keys {
            match (self.entries.get(key), self.array) {
                (Some(value), _) if self.of_maps => {
                    let inner = map_by_id(u32::from_ne_bytes(value[..4].try_into().expect("4-byte id")))?;
                    let fd = inner.as_raw_fd() as u32;
                    update(map, key, &fd.to_ne_bytes()).context("pointing an entry at its inner map again")?;
                }
                (Some(value), _) => {
                    batch_keys.extend_from_slice(key);
                    batch_values.extend_from_slice(value);
                }
                (None, true) => {
                    batch_keys.extend_from_slice(key);
                    batch_values.extend_from_slice(&zeroes);
                }
                (None, false) => {
                    // SAFETY: a key of the map's size; the kernel copies it.
                    if unsafe { sys::bpf_map_delete_elem(map.as_raw_fd(), key.as_ptr().cast()) } != 0 {
                        let err = std::io::Error::last_os_error();
                        if err.raw_os_error() != Some(libc::ENOENT) {
                            return Err(err).context("deleting an entry added since");
                        }
                    }
                }
            }
        }
        let n = batch_keys.len() / self.key_size.max(1);
        if n > 0 {
            update_batch(map, &batch_keys, &batch_values, n as u32).context("writing entries back")?;
        }
        Ok(())
    }

    /// Puts the map back as it was taken, writing only what differs; a map
    /// of maps' inner maps too.
    pub fn restore(&self) -> Result<()> {
        let (keys, _) = self.differences()?;
        self.put_back(&keys)?;
        for inner in &self.inner {
            inner.restore()?;
        }
        Ok(())
    }
}

/// What one run from a snapshot's state changed: the maps and keys to put
/// back before the next run from the same state. Found by a run and a
/// comparison ([`Dirty::after`]); the same path from the same state
/// changes the same entries, except keys it draws at random (a SNAT
/// port): those a later run adds stay until the whole restore a
/// fresh-state timing makes before each batch (up to 200 calls; Cilium's
/// SNAT map held up to ~100 such entries, measured). Reading a hash map
/// whole before every call instead made the first packet of
/// tc_nodeport_nat_fwd cost 4,489 ns instead of 974: its 512 Ki buckets
/// walked through the cache, which times the restore, not the packet.
pub struct Dirty {
    /// (snapshot, its keys that changed; None: the whole map, a map of maps).
    changed: Vec<(usize, Option<Vec<Vec<u8>>>)>,
}

impl Dirty {
    /// What `run` changes in the maps `state` holds (they are restored
    /// first and after).
    pub fn after(state: &[MapSnapshot], run: impl FnOnce() -> Result<()>) -> Result<Dirty> {
        restore_all(state)?;
        run()?;
        let mut changed = Vec::new();
        for (i, m) in state.iter().enumerate() {
            let (keys, inner) = m.differences()?;
            if inner || (m.of_maps && !keys.is_empty()) {
                changed.push((i, None));
            } else if !keys.is_empty() {
                changed.push((i, Some(keys)));
            }
        }
        restore_all(state)?;
        Ok(Dirty { changed })
    }

    /// Puts back what the run changed.
    pub fn restore(&self, state: &[MapSnapshot]) -> Result<()> {
        for (i, keys) in &self.changed {
            match keys {
                Some(keys) => state[*i].put_back(keys)?,
                None => state[*i].restore()?,
            }
        }
        Ok(())
    }

    /// How many maps the run changed.
    pub fn maps(&self) -> usize {
        self.changed.len()
    }
}

/// Puts every map of `state` back.
pub fn restore_all(state: &[MapSnapshot]) -> Result<()> {
    state.iter().try_for_each(MapSnapshot::restore)
}
