//! Maps bpfbench makes or fills outside any object: a map of a chosen
//! shape (LPM tries need on-demand allocation), batch and single updates
//! by descriptor, with per-CPU values laid out as the syscall takes them.

use std::os::fd::{AsRawFd, BorrowedFd};

use anyhow::{Context, Result, bail};
use libbpf_rs::libbpf_sys as sys;
use libbpf_rs::{MapHandle, MapType};

/// The flag LPM tries need: the kernel requires them to allocate on demand.
pub const NO_PREALLOC: u32 = sys::BPF_F_NO_PREALLOC;

/// A map of `map_type` named `name`, outside any object, held by the
/// returned handle only.
pub fn create(map_type: MapType, name: &str, key_size: u32, value_size: u32, entries: u32) -> Result<MapHandle> {
    let opts =
        libbpf_opts!(bpf_map_create_opts { map_flags: if map_type == MapType::LpmTrie { NO_PREALLOC } else { 0 } });
    MapHandle::create(map_type, Some(name), key_size, value_size, entries, &opts)
        .with_context(|| format!("creating a {map_type:?} map '{name}' of {entries} entries"))
}

/// As [`create`], with the key and value types of `like`'s BTF: an inner
/// map of a map-of-maps must match the template's BTF on some kernels
/// (6.1 refuses a BTF-less one with EINVAL; libbpf issue 816).
pub fn create_like(like: &MapHandle, name: &str, entries: u32) -> Result<MapHandle> {
    use libbpf_rs::MapCore;
    let info = like.info().with_context(|| format!("reading the BTF of map '{name}'s template"))?;
    let mut opts = libbpf_opts!(bpf_map_create_opts {});
    let btf = (info.info.btf_id != 0).then(|| {
        // SAFETY: a plain syscall wrapper; a negative result is an error.
        unsafe { sys::bpf_btf_get_fd_by_id(info.info.btf_id) }
    });
    let btf = match btf {
        Some(fd) if fd >= 0 => {
            // SAFETY: a new fd we own.
            Some(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
        }
        _ => None,
    };
    if let Some(fd) = &btf {
        opts.btf_fd = fd.as_raw_fd() as u32;
        opts.btf_key_type_id = info.info.btf_key_type_id;
        opts.btf_value_type_id = info.info.btf_value_type_id;
    }
    let map_type = like.map_type();
    MapHandle::create(map_type, Some(name), like.key_size(), like.value_size(), entries, &opts)
        .with_context(|| format!("creating a {map_type:?} map '{name}' of {entries} entries"))
}

/// Writes `count` keys and values at once (`BPF_MAP_UPDATE_BATCH`), or one
/// by one where the kernel has no batch updates for the map's type. A
/// per-CPU map's value is one 8-byte-aligned slot per possible CPU.
pub fn update_batch(map: BorrowedFd<'_>, keys: &[u8], values: &[u8], count: u32) -> Result<()> {
    if count == 0 || !keys.len().is_multiple_of(count as usize) || !values.len().is_multiple_of(count as usize) {
        bail!("a batch of {count} entries with {} key and {} value bytes", keys.len(), values.len());
    }
    let opts = libbpf_opts!(bpf_map_batch_opts {});
    let mut done = count;
    // SAFETY: `keys` and `values` hold `count` entries each, as checked above.
    let rc = unsafe {
        sys::bpf_map_update_batch(map.as_raw_fd(), keys.as_ptr().cast(), values.as_ptr().cast(), &mut done, &opts)
    };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if !batch_unsupported(&err) {
            bail!("{err}");
        }
        let (k, v) = (keys.len() / count as usize, values.len() / count as usize);
        for (key, value) in keys.chunks_exact(k).zip(values.chunks_exact(v)) {
            update(map, key, value)?;
        }
    }
    Ok(())
}

/// Deletes `count` keys laid out one after another in `keys`, in one
/// syscall, or one by one where the kernel has no batch deletes for the
/// map's type. Fails with the kernel's error.
pub fn delete_batch(map: BorrowedFd<'_>, keys: &[u8], count: u32) -> Result<()> {
    if count == 0 || !keys.len().is_multiple_of(count as usize) {
        bail!("a batch of {count} keys in {} bytes", keys.len());
    }
    let opts = libbpf_opts!(bpf_map_batch_opts {});
    let mut done = count;
    // SAFETY: `keys` holds `count` keys, as checked above.
    let rc = unsafe { sys::bpf_map_delete_batch(map.as_raw_fd(), keys.as_ptr().cast(), &mut done, &opts) };
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if !batch_unsupported(&err) {
            bail!("{err}");
        }
        for key in keys.chunks_exact(keys.len() / count as usize) {
            // SAFETY: a key of the map's size; the kernel copies it.
            if unsafe { sys::bpf_map_delete_elem(map.as_raw_fd(), key.as_ptr().cast()) } != 0 {
                bail!("{}", std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The kernel has no batch operations for this map type (lpm_trie on
/// Debian 11's 5.10 answers ENOTSUPP, 524): the batch calls above then go
/// one entry at a time.
fn batch_unsupported(err: &std::io::Error) -> bool {
    matches!(err.raw_os_error(), Some(524) | Some(libc::EOPNOTSUPP))
}

/// Writes one entry (`BPF_ANY`); `value` holds every CPU's slot for a
/// per-CPU map. Fails with the kernel's error.
pub fn update(map: BorrowedFd<'_>, key: &[u8], value: &[u8]) -> std::io::Result<()> {
    // SAFETY: the key and value buffers are the map's sizes (the caller's
    // BTF- or info-sized buffers); the kernel copies them.
    let rc = unsafe { sys::bpf_map_update_elem(map.as_raw_fd(), key.as_ptr().cast(), value.as_ptr().cast(), 0) };
    if rc != 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) }
}

/// Whether a map of this type (a `bpf_map_info.type`) holds descriptors
/// of other kernel objects, which JSON cannot name.
pub fn holds_descriptors(map_type: u32) -> bool {
    matches!(
        map_type,
        sys::BPF_MAP_TYPE_PROG_ARRAY
            | sys::BPF_MAP_TYPE_ARRAY_OF_MAPS
            | sys::BPF_MAP_TYPE_HASH_OF_MAPS
            | sys::BPF_MAP_TYPE_DEVMAP
            | sys::BPF_MAP_TYPE_CPUMAP
            | sys::BPF_MAP_TYPE_XSKMAP
    )
}

/// Whether a map of this type can be read whole and written back: hash,
/// array, LRU and LPM trie maps and their per-CPU forms.
pub fn resettable(map_type: u32) -> bool {
    matches!(
        map_type,
        sys::BPF_MAP_TYPE_HASH
            | sys::BPF_MAP_TYPE_ARRAY
            | sys::BPF_MAP_TYPE_PERCPU_HASH
            | sys::BPF_MAP_TYPE_PERCPU_ARRAY
            | sys::BPF_MAP_TYPE_LRU_HASH
            | sys::BPF_MAP_TYPE_LRU_PERCPU_HASH
            | sys::BPF_MAP_TYPE_LPM_TRIE
    )
}

/// Bytes one CPU's value of `value_size` bytes takes in a per-CPU map's
/// lookup or update buffer: each starts 8-byte aligned.
pub fn percpu_stride(value_size: usize) -> usize {
    value_size.div_ceil(8) * 8
}

/// Bytes a lookup of one value of the map `info` describes fills: one
/// 8-byte-aligned slot per possible CPU for a per-CPU map.
pub fn value_len(info: &sys::bpf_map_info, possible_cpus: usize) -> usize {
    if MapType::from(info.type_).is_percpu() {
        percpu_stride(info.value_size as usize) * possible_cpus
    } else {
        info.value_size as usize
    }
}

/// The value at `key`, every CPU's slot for a per-CPU map (`len` bytes,
/// [`value_len`]), or `None` where the map has no such key.
pub fn lookup(map: BorrowedFd<'_>, key: &[u8], len: usize) -> Result<Option<Vec<u8>>> {
    let mut value = vec![0u8; len];
    // SAFETY: `key` is the map's key size and `value` holds `len` bytes,
    // what the kernel writes for the map's type.
    let rc = unsafe { sys::bpf_map_lookup_elem(map.as_raw_fd(), key.as_ptr().cast(), value.as_mut_ptr().cast()) };
    if rc == 0 {
        return Ok(Some(value));
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ENOENT) { Ok(None) } else { Err(err.into()) }
}

/// Every key of the map, in the kernel's order.
pub(super) fn keys(map: BorrowedFd<'_>, key_size: usize) -> Result<Vec<Vec<u8>>> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut next = vec![0u8; key_size];
    loop {
        let prev = keys.last().map_or(std::ptr::null(), |k| k.as_ptr().cast());
        // SAFETY: `prev` is null or a key of the map's size, `next` holds one.
        let rc = unsafe { sys::bpf_map_get_next_key(map.as_raw_fd(), prev, next.as_mut_ptr().cast()) };
        if rc != 0 {
            let err = std::io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::ENOENT) {
                return Ok(keys);
            }
            return Err(err.into());
        }
        keys.push(next.clone());
    }
}

/// A descriptor of the map of id `id` (an inner map of a map of maps).
pub(super) fn map_by_id(id: u32) -> Result<std::os::fd::OwnedFd> {
    // SAFETY: a plain syscall wrapper; a negative result is an error.
    let fd = unsafe { sys::bpf_map_get_fd_by_id(id) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("opening inner map {id}"));
    }
    // SAFETY: a new descriptor we own.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}
