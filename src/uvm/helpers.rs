//! The helpers a program calls, as the kernel defines them, and the map
//! handles `ld_imm64` gives. An unsupported helper is an error naming it.

use std::collections::BTreeMap;

use super::maps::{UserMap, UserMaps};
use super::memory::{Memory, RegionKind};
use super::uapi::{
    CSUM_DIFF, E2BIG, EINVAL, ENOENT, GET_PRANDOM_U32, GET_SMP_PROCESSOR_ID, KTIME_GET_NS, MAP_DELETE_ELEM,
    MAP_LOOKUP_ELEM, MAP_UPDATE_ELEM, PERF_EVENT_OUTPUT, TAIL_CALL, XDP_ADJUST_HEAD, XDP_ADJUST_META, XDP_ADJUST_TAIL,
};

/// What `ld_imm64` of a map puts in a register: a tag the program cannot
/// dereference (no region holds it), and the map's index.
const MAP_HANDLE_TAG: u64 = 0x4d41_5000_0000_0000;

/// The helpers this runtime has: a program calling any other is refused
/// when it is loaded. (tc's own: [`super::tc::HELPERS`].)
const COMMON: &[i32] = &[
    MAP_LOOKUP_ELEM,
    MAP_UPDATE_ELEM,
    MAP_DELETE_ELEM,
    KTIME_GET_NS,
    GET_PRANDOM_U32,
    GET_SMP_PROCESSOR_ID,
    CSUM_DIFF,
    XDP_ADJUST_HEAD,
    XDP_ADJUST_TAIL,
    XDP_ADJUST_META,
    TAIL_CALL,
    PERF_EVENT_OUTPUT,
];

/// Whether the runtime has helper `id` (for any program type).
pub fn supported(id: i32) -> bool {
    COMMON.contains(&id) || super::tc::HELPERS.contains(&id)
}

/// Every helper the runtime has.
pub fn supported_ids() -> impl Iterator<Item = i32> {
    COMMON.iter().chain(super::tc::HELPERS).copied()
}

/// The helpers' state: the CPU a run claims to be on, prandom's, and the
/// map operations done, by (map index, helper id).
pub struct Helpers {
    pub cpu: usize,
    prandom: u64,
    pub map_ops: BTreeMap<(usize, i32), u64>,
}

impl Helpers {
    /// `seed` makes bpf_get_prandom_u32's sequence repeatable.
    pub fn new(cpu: usize, seed: u64) -> Helpers {
        Helpers { cpu, prandom: seed | 1, map_ops: BTreeMap::new() }
    }

    pub fn map_handle(&self, maps: Option<&UserMaps>, fd: i32) -> Result<u64, String> {
        let i = maps
            .and_then(|m| m.index_of_fd(fd))
            .ok_or_else(|| format!("names map fd {fd}, which the object does not have"))?;
        Ok(MAP_HANDLE_TAG | i as u64)
    }

    /// Global data: byte `off` of the map's only value.
    pub fn map_value(&self, maps: Option<&mut UserMaps>, fd: i32, off: u32, mem: &mut Memory) -> Result<u64, String> {
        let (value, writable) = self.global_data(maps, fd, off)?;
        mem.add(value.as_mut_ptr(), value.len(), writable, RegionKind::MapValue);
        Ok(value.as_ptr() as u64 + u64::from(off))
    }

    /// Map `fd`'s only value (global data), checked to hold byte `off`, and whether the program may write it.
    pub fn global_data<'m>(
        &self,
        maps: Option<&'m mut UserMaps>,
        fd: i32,
        off: u32,
    ) -> Result<(&'m mut [u8], bool), String> {
        let maps = maps.ok_or_else(|| format!("names map fd {fd}, which the object does not have"))?;
        let i = maps.index_of_fd(fd).ok_or_else(|| format!("names map fd {fd}, which the object does not have"))?;
        let map = &mut maps.maps[i];
        let writable = !map.def.read_only;
        let name = map.def.name.clone();
        let value = map.lookup(&0u32.to_ne_bytes(), self.cpu).ok_or_else(|| format!("map {name} has no value 0"))?;
        if off as usize > value.len() {
            return Err(format!("offset {off} is past the end of a {}-byte value", value.len()));
        }
        Ok((value, writable))
    }

    /// The map a helper's argument names, with the operation counted.
    fn map_of<'m>(&mut self, maps: Option<&'m mut UserMaps>, handle: u64, op: i32) -> Result<&'m mut UserMap, String> {
        match maps {
            Some(m) => {
                let i = map_index(handle, m.maps.len()).ok_or_else(|| format!("{handle:#x} is not a map"))?;
                *self.map_ops.entry((i, op)).or_default() += 1;
                Ok(&mut m.maps[i])
            }
            None => Err(format!("{handle:#x} is not a map")),
        }
    }

    /// The slot `bpf_tail_call(ctx, handle, index)` reaches (see
    /// [`UserMap::prog_in_slot`]), counted as an operation on the prog array.
    pub fn tail_slot(&mut self, maps: Option<&mut UserMaps>, handle: u64, index: u64) -> Option<Option<u32>> {
        let m = self.map_of(maps, handle, TAIL_CALL).ok()?;
        // The kernel takes the index as u32.
        m.prog_in_slot(index as u32)
    }

    /// bpf_get_prandom_u32: xorshift64*, repeatable from the seed.
    pub fn prandom_u32(&mut self) -> u64 {
        self.prandom ^= self.prandom >> 12;
        self.prandom ^= self.prandom << 25;
        self.prandom ^= self.prandom >> 27;
        (self.prandom.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) & 0xffff_ffff
    }

    /// Reads `len` bytes the program points at.
    fn bytes(mem: &Memory, addr: u64, len: usize) -> Result<Vec<u8>, String> {
        mem.check(addr, len, false).map_err(|e| e.to_string())?;
        // SAFETY: checked to lie inside a region of this run.
        Ok(unsafe { std::slice::from_raw_parts(addr as *const u8, len) }.to_vec())
    }

    pub fn call(&mut self, id: i32, a: [u64; 5], maps: Option<&mut UserMaps>, mem: &mut Memory) -> Result<u64, String> {
        Ok(match id {
            MAP_LOOKUP_ELEM => {
                let m = self.map_of(maps, a[0], MAP_LOOKUP_ELEM)?;
                let key = Self::bytes(mem, a[1], m.def.key_size)?;
                let writable = !m.def.read_only;
                match lookup(m, &key, self.cpu) {
                    Found::Value(v) => {
                        mem.add(v.as_mut_ptr(), v.len(), writable, RegionKind::MapValue);
                        v.as_ptr() as u64
                    }
                    Found::Map(handle) => handle,
                    Found::Nothing => 0,
                }
            }
            MAP_UPDATE_ELEM => {
                let m = self.map_of(maps, a[0], MAP_UPDATE_ELEM)?;
                let key = Self::bytes(mem, a[1], m.def.key_size)?;
                let value = Self::bytes(mem, a[2], m.def.value_size)?;
                m.update_from_program(&key, &value, a[3], self.cpu) as u64
            }
            MAP_DELETE_ELEM => {
                let m = self.map_of(maps, a[0], MAP_DELETE_ELEM)?;
                let key = Self::bytes(mem, a[1], m.def.key_size)?;
                m.delete(&key) as u64
            }
            KTIME_GET_NS => crate::system::monotonic_ns(),
            GET_PRANDOM_U32 => self.prandom_u32(),
            GET_SMP_PROCESSOR_ID => self.cpu as u64,
            CSUM_DIFF => {
                let (from_size, to_size) = (a[1] as u32 as usize, a[3] as u32 as usize);
                let from = if from_size == 0 { Vec::new() } else { Self::bytes(mem, a[0], from_size)? };
                let to = if to_size == 0 { Vec::new() } else { Self::bytes(mem, a[2], to_size)? };
                csum_diff(&from, &to, a[4] as u32)
            }
            PERF_EVENT_OUTPUT => {
                let m = self.map_of(maps, a[1], PERF_EVENT_OUTPUT)?;
                perf_event_output(m.def.max_entries, a[2], self.cpu)?
            }
            _ => return Err(unsupported(id)),
        })
    }
}

/// `bpf_perf_event_output(ctx, map, flags, data, size)` as the kernel
/// answers it when the slot holds no perf event (no reader opened one, as
/// under bpfbench in the kernel too): the flags checked, then -ENOENT; the
/// record is dropped before it is copied. Copying the context's own bytes
/// (a length in the flags' upper half) is refused: this runtime has no
/// such copy, and a packet shorter than the length would change the answer.
pub fn perf_event_output(max_entries: u32, flags: u64, cpu: usize) -> Result<u64, String> {
    const INDEX_MASK: u64 = 0xffff_ffff;
    const CURRENT_CPU: u64 = INDEX_MASK;
    const CTXLEN_MASK: u64 = 0xf_ffff << 32;
    if flags & !(INDEX_MASK | CTXLEN_MASK) != 0 {
        return Ok(-EINVAL as u64);
    }
    if flags & CTXLEN_MASK != 0 {
        return Err(format!("bpf_perf_event_output with context bytes (flags {flags:#x}), {LACKED}"));
    }
    let index = match flags & INDEX_MASK {
        CURRENT_CPU => cpu as u64,
        i => i,
    };
    Ok(if index >= u64::from(max_entries) { -E2BIG } else { -ENOENT } as u64)
}

/// Ones' complement sum of `buf` added to `seed`, in 32 bits with
/// end-around carry, as x86-64's csum_partial adds it: native-endian
/// 32-bit words, then a 16-bit word and a last byte of the tail.
fn csum_partial(buf: &[u8], seed: u32) -> u32 {
    let mut sum = u64::from(seed);
    let mut words = buf.chunks_exact(4);
    for w in &mut words {
        sum += u64::from(u32::from_ne_bytes(w.try_into().expect("4 bytes")));
    }
    let mut tail = words.remainder();
    if tail.len() >= 2 {
        sum += u64::from(u16::from_ne_bytes([tail[0], tail[1]]));
        tail = &tail[2..];
    }
    if let [byte] = tail {
        sum += u64::from(*byte);
    }
    while sum >> 32 != 0 {
        sum = (sum & 0xffff_ffff) + (sum >> 32);
    }
    sum as u32
}

/// `a - b` in ones' complement (the kernel's csum_sub).
fn csum_sub(a: u32, b: u32) -> u32 {
    let (sum, carry) = a.overflowing_add(!b);
    sum.wrapping_add(carry as u32)
}

/// bpf_csum_diff as this kernel computes it: the checksum of `to` less
/// that of `from`, from `seed`, folded to 16 bits (any sizes: older
/// kernels refused those not a multiple of 4).
pub fn csum_diff(from: &[u8], to: &[u8], seed: u32) -> u64 {
    let sum = match (from.is_empty(), to.is_empty()) {
        (false, false) => csum_sub(csum_partial(to, seed), csum_partial(from, 0)),
        (true, false) => csum_partial(to, seed),
        (false, true) => !csum_partial(from, !seed),
        (true, true) => seed,
    };
    // csum_from32to16: the two halves added, the carry folded in.
    u64::from(sum.wrapping_add(sum.rotate_right(16)) >> 16)
}

/// What a map's handle carries besides its index.
pub fn map_handle_tag() -> u64 {
    MAP_HANDLE_TAG
}

/// The index of the map `handle` names among `count` maps.
pub fn map_index(handle: u64, count: usize) -> Option<usize> {
    let i = (handle & !MAP_HANDLE_TAG) as usize;
    (handle & MAP_HANDLE_TAG == MAP_HANDLE_TAG && i < count).then_some(i)
}

/// What a program's lookup finds.
pub enum Found<'m> {
    Value(&'m mut [u8]),
    /// A map of maps gives the inner map's handle, which the program can only pass on.
    Map(u64),
    Nothing,
}

/// bpf_map_lookup_elem on `m`, as run on `cpu`.
pub fn lookup<'m>(m: &'m mut UserMap, key: &[u8], cpu: usize) -> Found<'m> {
    let of_maps = super::maps::of_maps(m.def.map_type);
    match m.lookup(key, cpu) {
        Some(v) if of_maps => {
            let inner = u32::from_ne_bytes(v[..4].try_into().expect("4-byte inner map index"));
            if inner == super::maps::NO_INNER_MAP {
                Found::Nothing
            } else {
                Found::Map(MAP_HANDLE_TAG | u64::from(inner))
            }
        }
        Some(v) => Found::Value(v),
        None => Found::Nothing,
    }
}

/// Names of the helpers a datapath commonly calls, for messages.
fn helper_name(id: i32) -> Option<&'static str> {
    Some(match id {
        1 => "bpf_map_lookup_elem",
        2 => "bpf_map_update_elem",
        3 => "bpf_map_delete_elem",
        5 => "bpf_ktime_get_ns",
        6 => "bpf_trace_printk",
        9 => "bpf_skb_store_bytes",
        7 => "bpf_get_prandom_u32",
        8 => "bpf_get_smp_processor_id",
        10 => "bpf_l3_csum_replace",
        11 => "bpf_l4_csum_replace",
        12 => "bpf_tail_call",
        18 => "bpf_skb_vlan_push",
        23 => "bpf_redirect",
        25 => "bpf_perf_event_output",
        26 => "bpf_skb_load_bytes",
        28 => "bpf_csum_diff",
        31 => "bpf_skb_change_proto",
        32 => "bpf_skb_change_type",
        38 => "bpf_skb_change_tail",
        39 => "bpf_skb_pull_data",
        41 => "bpf_set_hash_invalid",
        48 => "bpf_set_hash",
        44 => "bpf_xdp_adjust_head",
        51 => "bpf_redirect_map",
        54 => "bpf_xdp_adjust_meta",
        65 => "bpf_xdp_adjust_tail",
        69 => "bpf_fib_lookup",
        113 => "bpf_probe_read_kernel",
        125 => "bpf_ktime_get_boot_ns",
        130 => "bpf_ringbuf_output",
        131 => "bpf_ringbuf_reserve",
        181 => "bpf_loop",
        _ => return None,
    })
}

/// How a refusal of a call the runtime lacks ends ([`VmError::lacks`](super::VmError::lacks)).
pub const LACKED: &str = "which bpfbench's userspace runtime does not have";

/// The one-line refusal of helper `id`, named as the kernel's BTF names it.
pub fn unsupported(id: i32) -> String {
    format!("calls {}, {LACKED}", helper_label(id))
}

/// The one-line refusal of the kfunc of BTF id `id`.
pub fn missing_kfunc(id: i32) -> String {
    format!("calls {}, {LACKED}", kfunc_label(id))
}

/// "helper 21 (bpf_skb_set_tunnel_key)": named as the kernel's BTF names it.
pub fn helper_label(id: i32) -> String {
    helper_name(id)
        .map(str::to_string)
        .or_else(|| crate::kernel::btf_names::helper_name(id))
        .map_or_else(|| format!("helper {id}"), |n| format!("helper {id} ({n})"))
}

/// "kfunc bpf_dynptr_from_skb", for the kfunc of BTF id `id`.
pub fn kfunc_label(id: i32) -> String {
    crate::kernel::btf_names::kfunc_name(id).map_or_else(|| "a kfunc".to_string(), |n| format!("kfunc {n}"))
}

/// The name a count table shows for helper `id`.
pub fn name_of(id: i32) -> String {
    helper_name(id).map_or_else(|| format!("helper {id}"), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_event_output_answers_as_the_kernel_does_with_no_perf_event_open() {
        const CURRENT_CPU: u64 = 0xffff_ffff;
        // Two slots (two CPUs), both empty: the record is dropped.
        assert_eq!(perf_event_output(2, CURRENT_CPU, 1), Ok(-ENOENT as u64));
        assert_eq!(perf_event_output(2, 1, 0), Ok(-ENOENT as u64));
        // A slot past the array, and flags the helper does not know.
        assert_eq!(perf_event_output(2, 2, 0), Ok(-E2BIG as u64));
        assert_eq!(perf_event_output(2, CURRENT_CPU, 7), Ok(-E2BIG as u64));
        assert_eq!(perf_event_output(2, 1 << 63, 0), Ok(-EINVAL as u64));
        // The context's own bytes (XDP's packet, tc's skb): refused by name.
        let e = perf_event_output(2, (64 << 32) | CURRENT_CPU, 0).unwrap_err();
        assert!(e.contains("context bytes"), "{e}");
    }
}
