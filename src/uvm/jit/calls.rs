//! What JIT code calls: the helpers, as C functions taking BPF's r1–r5,
//! and the out-of-line arithmetic. The helpers reach the run's maps and
//! helper state through [`HelperEnv`], set for the duration of one run.
//!
//! A helper must not panic (it would abort the process from inside JIT
//! code): each checks what it is given and answers as the kernel does.

use std::cell::Cell;

use super::super::helpers::{self, Found, Helpers};
use super::super::maps::UserMaps;
use super::super::uapi::*;
use super::super::{tc, xdp};

/// A run's helper state and maps, and the XDP frame the packet lives in.
pub struct HelperEnv {
    pub helpers: *mut Helpers,
    pub maps: *mut UserMaps,
    /// The XDP frame's first byte (adjust_head may not go below it).
    pub frame: u64,
    /// Where tail calls may land, by kernel program id (a few: a scan).
    pub targets: *const Vec<(u32, TailEntry)>,
    /// Tail calls the run made so far (the kernel's count).
    pub tail_calls: u32,
    /// What a helper could not do as the kernel would (a tail call into a
    /// program not compiled here, a packet past the page): the run is void.
    pub error: Option<String>,
}

impl HelperEnv {
    pub fn new(helpers: &mut Helpers, maps: &mut UserMaps, frame: u64, targets: &Vec<(u32, TailEntry)>) -> HelperEnv {
        HelperEnv { helpers, maps, frame, targets, tail_calls: 0, error: None }
    }
}

/// A compiled program a tail call can jump to: its code, and its may_goto
/// budget, which starts afresh as in a new program run.
#[derive(Debug, Clone, Copy)]
pub struct TailEntry {
    pub code: u64,
    pub may_goto_left: *mut u64,
}

thread_local! {
    static ENV: Cell<*mut HelperEnv> = const { Cell::new(std::ptr::null_mut()) };
}

/// Sets the environment for the helpers for as long as the guard lives.
pub struct HelperEnvGuard(());

impl HelperEnvGuard {
    /// # Safety
    /// `env` and what it points to must outlive the guard, and nothing else
    /// may touch the helpers or maps while it lives.
    pub unsafe fn set(env: &mut HelperEnv) -> HelperEnvGuard {
        ENV.with(|e| e.set(env));
        HelperEnvGuard(())
    }
}

impl Drop for HelperEnvGuard {
    fn drop(&mut self) {
        ENV.with(|e| e.set(std::ptr::null_mut()));
    }
}

/// The current run's environment.
fn env<'a>() -> Option<(&'a mut Helpers, &'a mut UserMaps, u64)> {
    let p = ENV.with(Cell::get);
    // SAFETY: set by HelperEnvGuard::set for the duration of the run (see its contract).
    unsafe { p.as_mut().map(|e| (&mut *e.helpers, &mut *e.maps, e.frame)) }
}

/// `len` bytes at `addr`, a pointer the verifier proved readable.
unsafe fn slice<'a>(addr: u64, len: usize) -> &'a [u8] {
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(addr as *const u8, len) }
}

/// What a lookup leaves in r0: the value's address, the inner map's handle, or NULL.
fn in_register(found: Found<'_>) -> u64 {
    match found {
        Found::Value(v) => v.as_mut_ptr() as u64,
        Found::Map(handle) => handle,
        Found::Nothing => 0,
    }
}

extern "C" fn map_lookup_elem(map: u64, key: u64) -> u64 {
    let Some((h, maps, _)) = env() else { return 0 };
    let Some(i) = helpers::map_index(map, maps.maps.len()) else { return 0 };
    let m = &mut maps.maps[i];
    // SAFETY: the verifier checked the key is key_size readable bytes.
    let key = unsafe { slice(key, m.def.key_size) };
    in_register(helpers::lookup(m, key, h.cpu))
}

/// A lookup in a map the call site knows (`map` points at it; see
/// `LookupPlan::Direct`), as `cpu`.
pub extern "C" fn lookup_direct(map: u64, key: u64, cpu: u64) -> u64 {
    // SAFETY: the runtime keeps the map where it was while code naming it lives (it drops the code when maps move).
    let m = unsafe { &mut *(map as *mut super::super::maps::UserMap) };
    // SAFETY: the verifier checked the key is key_size readable bytes.
    let key = unsafe { slice(key, m.def.key_size) };
    in_register(helpers::lookup(m, key, cpu as usize))
}

extern "C" fn map_update_elem(map: u64, key: u64, value: u64, flags: u64) -> u64 {
    let Some((h, maps, _)) = env() else { return (-EINVAL) as u64 };
    let Some(i) = helpers::map_index(map, maps.maps.len()) else { return (-EINVAL) as u64 };
    let m = &mut maps.maps[i];
    // SAFETY: the verifier checked both are readable, of the map's sizes.
    let (key, value) = unsafe { (slice(key, m.def.key_size), slice(value, m.def.value_size)) };
    m.update_from_program(key, value, flags, h.cpu) as u64
}

extern "C" fn map_delete_elem(map: u64, key: u64) -> u64 {
    let Some((_, maps, _)) = env() else { return (-EINVAL) as u64 };
    let Some(i) = helpers::map_index(map, maps.maps.len()) else { return (-EINVAL) as u64 };
    let m = &mut maps.maps[i];
    // SAFETY: as in map_update_elem.
    let key = unsafe { slice(key, m.def.key_size) };
    m.delete(key) as u64
}

extern "C" fn ktime_get_ns() -> u64 {
    crate::system::monotonic_ns()
}

extern "C" fn get_prandom_u32() -> u64 {
    env().map_or(0, |(h, _, _)| h.prandom_u32())
}

extern "C" fn get_smp_processor_id() -> u64 {
    env().map_or(0, |(h, _, _)| h.cpu as u64)
}

extern "C" fn csum_diff(from: u64, from_size: u64, to: u64, to_size: u64, seed: u64) -> u64 {
    // SAFETY: the verifier proved `from` and `to` readable for their sizes
    // (ARG_PTR_TO_MEM with ARG_CONST_SIZE_OR_ZERO); a zero size reads nothing.
    // A pointer with a zero size may be NULL, which no slice may hold.
    let bytes =
        |addr: u64, size: u64| if size as u32 == 0 { &[][..] } else { unsafe { slice(addr, size as u32 as usize) } };
    helpers::csum_diff(bytes(from, from_size), bytes(to, to_size), seed as u32)
}

extern "C" fn perf_event_output(_ctx: u64, map: u64, flags: u64, _data: u64, _size: u64) -> u64 {
    let Some((h, maps, _)) = env() else { return (-EINVAL) as u64 };
    let Some(i) = helpers::map_index(map, maps.maps.len()) else { return (-EINVAL) as u64 };
    match helpers::perf_event_output(maps.maps[i].def.max_entries, flags, h.cpu) {
        Ok(rc) => rc,
        Err(why) => {
            // SAFETY: set by HelperEnvGuard::set for the duration of the run.
            if let Some(e) = unsafe { ENV.with(Cell::get).as_mut() } {
                e.error = Some(why);
            }
            (-EINVAL) as u64
        }
    }
}

/// What the tail-call helper leaves in rax and rdx: the chain's verdict,
/// and whether the call happened (then the caller's function returns it).
#[repr(C)]
pub struct TailCallResult {
    r0: u64,
    done: u64,
}

/// bpf_tail_call as x86's JIT checks it: the index, then the count (which
/// a call into an empty slot spends too), then the slot. The target runs
/// as a native call here, and JIT code returns its verdict from the
/// function that made the tail call: what the kernel's jump gives, with
/// the caller's frame left on the native stack until the chain exits.
pub extern "C" fn tail_call(ctx: u64, map: u64, index: u64) -> TailCallResult {
    let failed = TailCallResult { r0: 0, done: 0 };
    let p = ENV.with(Cell::get);
    // SAFETY: set by HelperEnvGuard::set for the duration of the run (see its contract).
    let Some(e) = (unsafe { p.as_mut() }) else { return failed };
    // SAFETY: as above.
    let maps = unsafe { &mut *e.maps };
    // Not counted as a map operation (the interpreter counts; JIT code's helpers do not).
    let Some(i) = helpers::map_index(map, maps.maps.len()) else { return failed };
    let Some(slot) = maps.maps[i].prog_in_slot(index as u32) else { return failed };
    let within = e.tail_calls < MAX_TAIL_CALLS;
    e.tail_calls = e.tail_calls.saturating_add(1);
    let (Some(id), true) = (slot, within) else { return failed };
    // SAFETY: the runtime's table, alive for the run.
    let Some(t) = unsafe { e.targets.as_ref() }.and_then(|t| t.iter().find(|(i, _)| *i == id)).map(|(_, t)| *t) else {
        e.error =
            Some(format!("a tail call reached the program with kernel id {id}, which is not in the userspace runtime"));
        return failed;
    };
    // SAFETY: the target's budget cell lives with its compiled code, which
    // the runtime keeps while the run lasts; the code is a program the
    // kernel verified, of the caller's type (a prog array takes no other).
    let r0 = unsafe {
        *t.may_goto_left = crate::insn::MAY_GOTO_BUDGET;
        let f: extern "C" fn(u64) -> u64 = std::mem::transmute(t.code);
        f(ctx)
    };
    TailCallResult { r0, done: 1 }
}

/// `struct xdp_md`'s pointer fields, 32-bit addresses below 4 GiB.
#[repr(C)]
pub struct XdpMd {
    pub data: u32,
    pub data_end: u32,
    pub data_meta: u32,
    pub ingress_ifindex: u32,
    pub rx_queue_index: u32,
    pub egress_ifindex: u32,
}

fn adjust(ctx: u64, delta: u64, id: i32) -> u64 {
    let Some((_, _, frame)) = env() else { return (-EINVAL) as u64 };
    // SAFETY: r1 of an XDP program is the context the runtime handed it.
    let md = unsafe { &mut *(ctx as *mut XdpMd) };
    let mut b = xdp::XdpBounds {
        buf_start: frame,
        data_meta: u64::from(md.data_meta),
        data: u64::from(md.data),
        data_end: u64::from(md.data_end),
    };
    let rc = b.adjust(id, i64::from(delta as i32));
    // Below 4 GiB: the frame is.
    (md.data_meta, md.data, md.data_end) = (b.data_meta as u32, b.data as u32, b.data_end as u32);
    rc
}

extern "C" fn xdp_adjust_head(ctx: u64, delta: u64) -> u64 {
    adjust(ctx, delta, XDP_ADJUST_HEAD)
}

extern "C" fn xdp_adjust_tail(ctx: u64, delta: u64) -> u64 {
    adjust(ctx, delta, XDP_ADJUST_TAIL)
}

extern "C" fn xdp_adjust_meta(ctx: u64, delta: u64) -> u64 {
    adjust(ctx, delta, XDP_ADJUST_META)
}

/// The tc run's packet, from its `__sk_buff` (`ctx`: the runtime's, in
/// the 32-bit page, its data fields real addresses).
fn skb_packet(ctx: u64) -> Option<tc::SkbPacket> {
    let p = ENV.with(Cell::get);
    // SAFETY: set by HelperEnvGuard::set for the duration of the run.
    let frame = unsafe { p.as_ref() }?.frame;
    // SAFETY: r1 of a tc program is the __sk_buff the runtime handed it.
    let field = |at: usize| u64::from(unsafe { ((ctx as usize + at) as *const u32).read_unaligned() });
    Some(tc::SkbPacket { frame, data: field(tc::SKB_DATA), data_end: field(tc::SKB_DATA_END), skb: ctx as *mut u8 })
}

extern "C" fn skb_load_bytes(ctx: u64, off: u64, to: u64, len: u64) -> u64 {
    // SAFETY: the verifier proved `to` writable for `len` bytes.
    skb_packet(ctx).map_or((-EINVAL) as u64, |p| unsafe { p.load_bytes(off, to, len) })
}

extern "C" fn skb_store_bytes(ctx: u64, off: u64, from: u64, len: u64, flags: u64) -> u64 {
    // SAFETY: the verifier proved `from` readable for `len` bytes.
    skb_packet(ctx).map_or((-EINVAL) as u64, |mut p| unsafe { p.store_bytes(off, from, len, flags) })
}

extern "C" fn l3_csum_replace(ctx: u64, off: u64, from: u64, to: u64, flags: u64) -> u64 {
    skb_packet(ctx).map_or((-EINVAL) as u64, |mut p| p.l3_csum_replace(off, from, to, flags))
}

extern "C" fn l4_csum_replace(ctx: u64, off: u64, from: u64, to: u64, flags: u64) -> u64 {
    skb_packet(ctx).map_or((-EINVAL) as u64, |mut p| p.l4_csum_replace(off, from, to, flags))
}

extern "C" fn redirect(ifindex: u64, flags: u64) -> u64 {
    tc::redirect(ifindex, flags)
}

extern "C" fn skb_pull_data(ctx: u64, len: u64) -> u64 {
    skb_packet(ctx).map_or((-EINVAL) as u64, |p| p.pull_data(len))
}

extern "C" fn skb_change_tail(ctx: u64, new_len: u64, flags: u64) -> u64 {
    skb_resize(ctx, tc::SKB_DATA_END, |p| p.change_tail(new_len, flags).map(|rc| (rc, p.data_end)))
}

extern "C" fn skb_change_proto(ctx: u64, proto: u64, flags: u64) -> u64 {
    skb_resize(ctx, tc::SKB_DATA, |p| p.change_proto(proto, flags).map(|rc| (rc, p.data)))
}

/// A helper that moves one end of the packet: on success the new end goes
/// into the `__sk_buff` field at `field` (below 4 GiB: the frame is); a
/// refusal says why in the run's error and returns -EINVAL.
fn skb_resize(ctx: u64, field: usize, resize: impl FnOnce(&mut tc::SkbPacket) -> Result<(u64, u64), String>) -> u64 {
    let Some(mut p) = skb_packet(ctx) else { return (-EINVAL) as u64 };
    match resize(&mut p) {
        Ok((rc, end)) => {
            // SAFETY: the runtime's __sk_buff.
            unsafe { ((ctx as usize + field) as *mut u32).write_unaligned(end as u32) };
            rc
        }
        Err(why) => {
            // SAFETY: set by HelperEnvGuard::set for the duration of the run.
            if let Some(e) = unsafe { ENV.with(Cell::get).as_mut() } {
                e.error = Some(why);
            }
            (-EINVAL) as u64
        }
    }
}

extern "C" fn skb_change_type(ctx: u64, pkt_type: u64) -> u64 {
    skb_packet(ctx).map_or((-EINVAL) as u64, |mut p| p.change_type(pkt_type))
}

extern "C" fn set_hash(ctx: u64, hash: u64) -> u64 {
    skb_packet(ctx).map_or((-EINVAL) as u64, |mut p| p.set_hash(Some(hash)))
}

extern "C" fn set_hash_invalid(ctx: u64) -> u64 {
    skb_packet(ctx).map_or((-EINVAL) as u64, |mut p| p.set_hash(None))
}

/// The address JIT code calls for helper `id`, if the runtime has it
/// (the same set as the interpreter's, [`helpers::supported`]).
pub fn address(id: i32) -> Option<u64> {
    Some(match id {
        MAP_LOOKUP_ELEM => map_lookup_elem as *const () as usize,
        MAP_UPDATE_ELEM => map_update_elem as *const () as usize,
        MAP_DELETE_ELEM => map_delete_elem as *const () as usize,
        KTIME_GET_NS => ktime_get_ns as *const () as usize,
        GET_PRANDOM_U32 => get_prandom_u32 as *const () as usize,
        GET_SMP_PROCESSOR_ID => get_smp_processor_id as *const () as usize,
        CSUM_DIFF => csum_diff as *const () as usize,
        PERF_EVENT_OUTPUT => perf_event_output as *const () as usize,
        XDP_ADJUST_HEAD => xdp_adjust_head as *const () as usize,
        XDP_ADJUST_TAIL => xdp_adjust_tail as *const () as usize,
        XDP_ADJUST_META => xdp_adjust_meta as *const () as usize,
        SKB_LOAD_BYTES => skb_load_bytes as *const () as usize,
        SKB_STORE_BYTES => skb_store_bytes as *const () as usize,
        L3_CSUM_REPLACE => l3_csum_replace as *const () as usize,
        L4_CSUM_REPLACE => l4_csum_replace as *const () as usize,
        REDIRECT => redirect as *const () as usize,
        SKB_PULL_DATA => skb_pull_data as *const () as usize,
        SKB_CHANGE_TAIL => skb_change_tail as *const () as usize,
        SKB_CHANGE_PROTO => skb_change_proto as *const () as usize,
        SKB_CHANGE_TYPE => skb_change_type as *const () as usize,
        SET_HASH => set_hash as *const () as usize,
        SET_HASH_INVALID => set_hash_invalid as *const () as usize,
        _ => return None,
    } as u64)
}

/// Division and modulo, by the interpreter's rules: `how` is the
/// instruction's code, and its offset (1: signed) in bits 8–23.
pub extern "C" fn alu(d: u64, s: u64, how: u64) -> u64 {
    let code = how as u8;
    let off = (how >> 8) as u16 as i16;
    let i = crate::insn::Insn::new(code, 0, 0, off, 0);
    super::super::interp::alu(i.op(), i.class() == crate::insn::ALU64, off, s as i32, d, s, i.reads_src()).unwrap_or(0)
}

/// An atomic operation other than a plain add, on `size` (4 or 8, in
/// bits 32+ of `how`) bytes at `addr`; `how`'s low half is the operation.
/// Returns the old value (what fetch, xchg and cmpxchg give back).
/// The runtime runs one program at a time, so a read and a write suffice.
pub extern "C" fn atomic(addr: u64, operand: u64, r0: u64, how: u64) -> u64 {
    use crate::insn::{ATOMIC_ADD, ATOMIC_AND, ATOMIC_OR, ATOMIC_XOR, CMPXCHG, FETCH, XCHG};
    let wide = how >> 32 == 8;
    let op = how as u32 as i32;
    // SAFETY: the verifier checked the access; alignment is the program's (read_unaligned covers any).
    let old = unsafe {
        if wide { (addr as *const u64).read_unaligned() } else { u64::from((addr as *const u32).read_unaligned()) }
    };
    let mask = if wide { u64::MAX } else { 0xffff_ffff };
    let new = match op {
        XCHG => operand,
        CMPXCHG => {
            if old == r0 & mask {
                operand
            } else {
                old
            }
        }
        op => match op & !FETCH {
            ATOMIC_ADD => old.wrapping_add(operand),
            ATOMIC_OR => old | operand,
            ATOMIC_AND => old & operand,
            ATOMIC_XOR => old ^ operand,
            _ => old,
        },
    };
    // SAFETY: as above.
    unsafe {
        if wide { (addr as *mut u64).write_unaligned(new) } else { (addr as *mut u32).write_unaligned(new as u32) }
    }
    old
}
