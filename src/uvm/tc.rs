//! tc as a userspace program sees it: the packet in a page laid out as for
//! XDP, and `struct __sk_buff` as the kernel's test run filled it for that
//! packet and context (read there by a probe, [`crate::kernel::skb_view`]:
//! the protocol, packet type, length and the fields the context sets), its
//! `data`, `data_end` and `data_meta` giving the packet's addresses. The tc
//! helpers the runtime has, as the kernel defines them, shared by both
//! engines ([`SkbPacket`]); the interpreter's environment ([`TcEnv`]).

use super::PacketOutcome;
use super::helpers::Helpers;
use super::interp::{Counts, Env, Interpreter, VmError};
use super::maps::UserMaps;
use super::memory::{Memory, RegionKind};
use super::uapi::{
    EFAULT, EINVAL, ENOMEM, ENOTSUPP, L3_CSUM_REPLACE, L4_CSUM_REPLACE, REDIRECT, SET_HASH, SET_HASH_INVALID,
    SKB_CHANGE_PROTO, SKB_CHANGE_TAIL, SKB_CHANGE_TYPE, SKB_LOAD_BYTES, SKB_PULL_DATA, SKB_STORE_BYTES,
};
use super::xdp::{FRAME, HEADROOM, TAILROOM};

/// Offsets in `struct __sk_buff` (uapi: fixed).
pub const SKB_LEN: usize = 0;
pub const SKB_PKT_TYPE: usize = 4;
pub const SKB_PROTOCOL: usize = 16;
pub const SKB_HASH: usize = 68;
pub const SKB_DATA: usize = 76;
pub const SKB_DATA_END: usize = 80;
pub const SKB_DATA_META: usize = 140;
/// `sizeof(struct __sk_buff)` since 5.16 (hwtstamp, its last field).
pub const SKB_BYTES: usize = 192;

const ETH_HLEN: u64 = 14;
const TC_ACT_SHOT: u64 = 2;
const TC_ACT_REDIRECT: u64 = 7;
const BPF_F_INGRESS: u64 = 1;
/// bpf_skb_store_bytes's flags: RECOMPUTE_CSUM, INVALIDATE_HASH, NO_PULL.
const STORE_FLAGS: u64 = 1 | 2 | 16;
const BPF_F_INVALIDATE_HASH: u64 = 2;
/// bpf_l3/l4_csum_replace's flags: the field's size, and l4's own.
const HDR_FIELD_MASK: u64 = 0xf;
const BPF_F_PSEUDO_HDR: u64 = 1 << 4;
const BPF_F_MARK_MANGLED_0: u64 = 1 << 5;
const BPF_F_MARK_ENFORCE: u64 = 1 << 6;
const BPF_F_IPV6: u64 = 1 << 7;
const CSUM_MANGLED_0: u16 = 0xffff;

/// The tc helpers this runtime has, beyond the common ones.
pub const HELPERS: &[i32] = &[
    SKB_STORE_BYTES,
    L3_CSUM_REPLACE,
    L4_CSUM_REPLACE,
    REDIRECT,
    SKB_LOAD_BYTES,
    SKB_CHANGE_TAIL,
    SKB_PULL_DATA,
    SKB_CHANGE_PROTO,
    SKB_CHANGE_TYPE,
    SET_HASH_INVALID,
    SET_HASH,
];

/// EtherTypes in network order, as `__sk_buff.protocol` holds them.
const ETH_P_IP: u32 = 0x0800u16.to_be() as u32;
const ETH_P_IPV6: u32 = 0x86ddu16.to_be() as u32;
/// IPv6's header less IPv4's: what bpf_skb_change_proto moves.
const V4_V6_DIFF: u64 = 20;
/// PACKET_OTHERHOST: the highest packet type bpf_skb_change_type takes.
const PACKET_OTHERHOST: u32 = 3;

/// A tc run's packet, [data, data_end), in a frame of FRAME bytes at
/// `frame`, and the run's `__sk_buff` (whose length and hash the helpers
/// keep up to date). A test run's skb is linear: every byte is in reach.
pub struct SkbPacket {
    pub frame: u64,
    pub data: u64,
    pub data_end: u64,
    pub skb: *mut u8,
}

/// What a helper does: the kernel's return value, or why this runtime
/// cannot do what the kernel would (the run is void).
pub type HelperResult = Result<u64, String>;

fn errno(e: i64) -> u64 {
    (-e) as u64
}

impl SkbPacket {
    fn len(&self) -> u64 {
        self.data_end - self.data
    }

    fn set_u32(&mut self, at: usize, v: u32) {
        // SAFETY: `skb` is the run's SKB_BYTES-byte __sk_buff.
        unsafe { (self.skb.add(at) as *mut u32).write_unaligned(v) };
    }

    fn u32_at(&self, at: usize) -> u32 {
        // SAFETY: as above.
        unsafe { (self.skb.add(at) as *const u32).read_unaligned() }
    }

    /// Whether bytes [0, end) of the packet are there to write
    /// (`bpf_try_make_writable`: a pull that fails past the end).
    fn writable(&self, end: u64) -> bool {
        end <= self.len()
    }

    /// bpf_skb_load_bytes: `len` bytes from `off` to `to`, or -EFAULT and `to` cleared.
    ///
    /// # Safety
    /// `to` must be `len` writable bytes (the verifier's ARG_PTR_TO_UNINIT_MEM).
    pub unsafe fn load_bytes(&self, off: u64, to: u64, len: u64) -> u64 {
        let (off, len) = (off as u32 as u64, len as u32 as u64);
        // SAFETY: the caller's contract; the source lies inside the packet.
        unsafe {
            if off > i32::MAX as u64 || off + len > self.len() {
                std::ptr::write_bytes(to as *mut u8, 0, len as usize);
                return errno(EFAULT);
            }
            std::ptr::copy((self.data + off) as *const u8, to as *mut u8, len as usize);
        }
        0
    }

    /// bpf_skb_store_bytes: `len` bytes from `from` at `off`.
    ///
    /// # Safety
    /// `from` must be `len` readable bytes (ARG_PTR_TO_MEM).
    pub unsafe fn store_bytes(&mut self, off: u64, from: u64, len: u64, flags: u64) -> u64 {
        let (off, len) = (off as u32 as u64, len as u32 as u64);
        if flags & !STORE_FLAGS != 0 {
            return errno(EINVAL);
        }
        if off > i32::MAX as u64 || !self.writable(off + len) {
            return errno(EFAULT);
        }
        // SAFETY: the caller's contract; the destination lies inside the packet.
        unsafe { std::ptr::copy(from as *const u8, (self.data + off) as *mut u8, len as usize) };
        // A test run's skb carries no checksum state to recompute (CHECKSUM_NONE).
        if flags & BPF_F_INVALIDATE_HASH != 0 {
            self.set_u32(SKB_HASH, 0);
        }
        0
    }

    /// The checksum field at `off` for l3/l4_csum_replace, if the kernel reaches it.
    fn sum_at(&self, off: u64) -> Result<*mut u16, u64> {
        let off = off as u32 as u64;
        if off > 0xffff || off & 1 != 0 || !self.writable(off + 2) {
            return Err(errno(EFAULT));
        }
        Ok((self.data + off) as *mut u16)
    }

    /// bpf_l3_csum_replace.
    pub fn l3_csum_replace(&mut self, off: u64, from: u64, to: u64, flags: u64) -> u64 {
        if flags & !HDR_FIELD_MASK != 0 {
            return errno(EINVAL);
        }
        let sum = match self.sum_at(off) {
            Ok(p) => p,
            Err(e) => return e,
        };
        // SAFETY: two bytes inside the packet (sum_at).
        let old = unsafe { sum.read_unaligned() };
        let new = match replace(old, from, to, flags & HDR_FIELD_MASK) {
            Some(v) => v,
            None => return errno(EINVAL),
        };
        // SAFETY: as above.
        unsafe { sum.write_unaligned(new) };
        0
    }

    /// bpf_l4_csum_replace, on a test run's skb (CHECKSUM_NONE: the
    /// pseudo-header flag changes nothing else).
    pub fn l4_csum_replace(&mut self, off: u64, from: u64, to: u64, flags: u64) -> u64 {
        let allowed = BPF_F_MARK_MANGLED_0 | BPF_F_MARK_ENFORCE | BPF_F_PSEUDO_HDR | HDR_FIELD_MASK | BPF_F_IPV6;
        if flags & !allowed != 0 {
            return errno(EINVAL);
        }
        let sum = match self.sum_at(off) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (mangled_0, enforce) = (flags & BPF_F_MARK_MANGLED_0 != 0, flags & BPF_F_MARK_ENFORCE != 0);
        // SAFETY: two bytes inside the packet (sum_at).
        let old = unsafe { sum.read_unaligned() };
        if mangled_0 && !enforce && old == 0 {
            return 0;
        }
        let mut new = match replace(old, from, to, flags & HDR_FIELD_MASK) {
            Some(v) => v,
            None => return errno(EINVAL),
        };
        if mangled_0 && new == 0 {
            new = CSUM_MANGLED_0;
        }
        // SAFETY: as above.
        unsafe { sum.write_unaligned(new) };
        0
    }

    /// bpf_skb_change_tail: the packet trimmed or grown (zeroes) to `new_len`.
    pub fn change_tail(&mut self, new_len: u64, flags: u64) -> HelperResult {
        let new_len = new_len as u32 as u64;
        if flags != 0 || new_len < ETH_HLEN {
            return Ok(errno(EINVAL));
        }
        let room = (FRAME - TAILROOM) as u64 - (self.data - self.frame);
        if new_len > room {
            return Err(format!(
                "bpf_skb_change_tail to {new_len} bytes: the userspace runtime's packet page holds {room}"
            ));
        }
        let end = self.data + new_len;
        if end > self.data_end {
            // SAFETY: [data_end, end) lies inside the frame (checked above).
            unsafe { std::ptr::write_bytes(self.data_end as *mut u8, 0, (end - self.data_end) as usize) };
        }
        self.data_end = end;
        self.set_u32(SKB_LEN, new_len as u32);
        Ok(0)
    }

    /// bpf_skb_change_proto: IPv4 to IPv6 or back, as the kernel does it:
    /// 20 bytes of zeroes inserted after the MAC header (or the first 20
    /// after it removed), the protocol set, the hash cleared; any other
    /// change is refused (-ENOTSUPP), any flag too (-EINVAL).
    pub fn change_proto(&mut self, proto: u64, flags: u64) -> HelperResult {
        let (from, to) = (self.u32_at(SKB_PROTOCOL), proto as u16 as u32);
        if flags != 0 {
            return Ok(errno(EINVAL));
        }
        let mac = ETH_HLEN as usize;
        match (from, to) {
            (ETH_P_IP, ETH_P_IPV6) => {
                if self.data - self.frame < V4_V6_DIFF {
                    return Err("bpf_skb_change_proto: no headroom left in the userspace runtime's packet page".into());
                }
                self.data -= V4_V6_DIFF;
                // SAFETY: [data, data_end) lies in the frame; the MAC header moves forward over the room.
                unsafe {
                    std::ptr::copy((self.data + V4_V6_DIFF) as *const u8, self.data as *mut u8, mac);
                    std::ptr::write_bytes((self.data as *mut u8).add(mac), 0, V4_V6_DIFF as usize);
                }
            }
            (ETH_P_IPV6, ETH_P_IP) => {
                if self.len() < ETH_HLEN + V4_V6_DIFF {
                    return Ok(errno(ENOMEM));
                }
                // SAFETY: as above; the MAC header moves back over the bytes removed.
                unsafe { std::ptr::copy(self.data as *const u8, (self.data + V4_V6_DIFF) as *mut u8, mac) };
                self.data += V4_V6_DIFF;
            }
            (a, b) if a == b => return Ok(0),
            _ => return Ok(errno(ENOTSUPP)),
        }
        self.set_u32(SKB_LEN, self.len() as u32);
        self.set_u32(SKB_PROTOCOL, to);
        self.set_u32(SKB_HASH, 0);
        Ok(0)
    }

    /// bpf_skb_change_type: host, broadcast, multicast or other host only.
    pub fn change_type(&mut self, pkt_type: u64) -> u64 {
        let (from, to) = (self.u32_at(SKB_PKT_TYPE), pkt_type as u32);
        if from > PACKET_OTHERHOST || to > PACKET_OTHERHOST {
            return errno(EINVAL);
        }
        self.set_u32(SKB_PKT_TYPE, to);
        0
    }

    /// bpf_set_hash (`Some`) and bpf_set_hash_invalid (`None`).
    pub fn set_hash(&mut self, hash: Option<u64>) -> u64 {
        self.set_u32(SKB_HASH, hash.map_or(0, |h| h as u32));
        0
    }

    /// bpf_skb_pull_data: a test run's skb is linear, so only a length past its end fails.
    pub fn pull_data(&self, len: u64) -> u64 {
        if self.writable(len as u32 as u64) { 0 } else { errno(ENOMEM) }
    }
}

/// bpf_redirect: the verdict it gives (the target is the kernel's business
/// after the program returns, which a test run does not reach).
pub fn redirect(_ifindex: u64, flags: u64) -> u64 {
    if flags & !BPF_F_INGRESS != 0 { TC_ACT_SHOT } else { TC_ACT_REDIRECT }
}

/// Ones' complement addition of 32-bit words (the kernel's csum_add).
fn csum_add(a: u32, b: u32) -> u32 {
    let (sum, carry) = a.overflowing_add(b);
    sum.wrapping_add(carry as u32)
}

/// The kernel's csum_fold: 32 bits folded to 16, complemented.
fn csum_fold(sum: u32) -> u16 {
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = (sum & 0xffff) + (sum >> 16);
    !(sum as u16)
}

/// 16-bit ones' complement addition (csum16_add).
fn csum16_add(a: u16, b: u16) -> u16 {
    let (sum, carry) = a.overflowing_add(b);
    sum.wrapping_add(carry as u16)
}

/// The checksum `old` with a field of `size` bytes changed from `from` to
/// `to` (0: `to` is a diff from bpf_csum_diff and `from` must be 0), as
/// csum_replace2/4 and csum_replace_by_diff compute it; None where the
/// kernel gives -EINVAL.
fn replace(old: u16, from: u64, to: u64, size: u64) -> Option<u16> {
    Some(match size {
        0 if from != 0 => return None,
        0 => csum_fold(csum_add(to as u32, !u32::from(old))),
        2 => !csum16_add(csum16_add(!old, !(from as u16)), to as u16),
        4 => csum_fold(csum_add(csum_add(!u32::from(old), !(from as u32)), to as u32)),
        _ => return None,
    })
}

/// The interpreter's view of a tc run: the packet, and the helpers and maps.
struct TcEnv<'a> {
    packet: SkbPacket,
    helpers: &'a mut Helpers,
    maps: Option<&'a mut UserMaps>,
}

impl TcEnv<'_> {
    fn tc_helper(&mut self, id: i32, a: [u64; 5], mem: &mut Memory) -> HelperResult {
        let check = |addr: u64, len: u64, write: bool| {
            if len == 0 { Ok(()) } else { mem.check(addr, len as usize, write).map(drop).map_err(|e| e.to_string()) }
        };
        Ok(match id {
            SKB_LOAD_BYTES => {
                check(a[2], a[3] as u32 as u64, true)?;
                // SAFETY: checked writable for its length.
                unsafe { self.packet.load_bytes(a[1], a[2], a[3]) }
            }
            SKB_STORE_BYTES => {
                check(a[2], a[3] as u32 as u64, false)?;
                // SAFETY: checked readable for its length.
                unsafe { self.packet.store_bytes(a[1], a[2], a[3], a[4]) }
            }
            L3_CSUM_REPLACE => self.packet.l3_csum_replace(a[1], a[2], a[3], a[4]),
            L4_CSUM_REPLACE => self.packet.l4_csum_replace(a[1], a[2], a[3], a[4]),
            REDIRECT => redirect(a[0], a[1]),
            SKB_PULL_DATA => self.packet.pull_data(a[1]),
            SKB_CHANGE_TAIL => {
                let rc = self.packet.change_tail(a[1], a[2])?;
                mem.reset(RegionKind::Packet, self.packet.data, self.packet.len());
                rc
            }
            SKB_CHANGE_PROTO => {
                let rc = self.packet.change_proto(a[1], a[2])?;
                mem.reset(RegionKind::Packet, self.packet.data, self.packet.len());
                rc
            }
            SKB_CHANGE_TYPE => self.packet.change_type(a[1]),
            SET_HASH => self.packet.set_hash(Some(a[1])),
            SET_HASH_INVALID => self.packet.set_hash(None),
            _ => unreachable!("only tc helpers come here"),
        })
    }
}

impl Env for TcEnv<'_> {
    fn helper(&mut self, id: i32, args: [u64; 5], mem: &mut Memory) -> Result<u64, String> {
        if HELPERS.contains(&id) {
            self.tc_helper(id, args, mem)
        } else {
            self.helpers.call(id, args, self.maps.as_deref_mut(), mem)
        }
    }

    fn reach(&mut self) -> Option<(&mut Helpers, Option<&mut UserMaps>)> {
        Some((&mut *self.helpers, self.maps.as_deref_mut()))
    }

    fn context_load(&self, off: u64, size: usize) -> Option<u64> {
        match (off as usize, size) {
            (SKB_DATA, 4) | (SKB_DATA_META, 4) => Some(self.packet.data),
            (SKB_DATA_END, 4) => Some(self.packet.data_end),
            _ => None,
        }
    }
}

/// Runs a tc program once on `packet`, its `__sk_buff` `view` (as the
/// kernel's test run filled it for this packet), with `maps` if it has any.
pub fn run(
    interp: &Interpreter<'_>,
    packet: &[u8],
    view: &[u8],
    helpers: &mut Helpers,
    mut maps: Option<&mut UserMaps>,
    counts: &mut Counts,
) -> Result<PacketOutcome, VmError> {
    let fail = |what: String| VmError { pc: 0, insn: Default::default(), what };
    if HEADROOM + packet.len() > FRAME - TAILROOM {
        return Err(fail(format!("a {}-byte packet does not fit the page the userspace runtime uses", packet.len())));
    }
    if view.len() < SKB_BYTES {
        return Err(fail(format!("a __sk_buff of {} bytes, not {SKB_BYTES}", view.len())));
    }
    let mut buf = vec![0u8; FRAME];
    buf[HEADROOM..HEADROOM + packet.len()].copy_from_slice(packet);
    let frame = buf.as_mut_ptr() as u64;
    let data = frame + HEADROOM as u64;
    let mut skb = view[..SKB_BYTES].to_vec();
    let mut mem = Memory::default();
    // Writable: the verifier allows a tc program to write its fields.
    mem.add(skb.as_mut_ptr(), skb.len(), true, RegionKind::Context);
    mem.add(data as *const u8, packet.len(), true, RegionKind::Packet);
    let packet = SkbPacket { frame, data, data_end: data + packet.len() as u64, skb: skb.as_mut_ptr() };
    let mut env = TcEnv { packet, helpers, maps: maps.as_deref_mut() };
    let verdict = interp.run(skb.as_ptr() as u64, &mut env, &mut mem, counts);
    let (start, end) = ((env.packet.data - frame) as usize, (env.packet.data_end - frame) as usize);
    if let Some(m) = maps {
        m.end_run();
    }
    Ok(PacketOutcome { verdict: verdict? as u32, packet: buf[start..end].to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_replacements_agree_with_a_checksum_computed_afresh() {
        // An IPv4 header's checksum, then its TTL changed (the 16-bit word
        // TTL|protocol) and its source address changed (32 bits).
        let csum = |h: &[u8]| -> u16 {
            let mut s: u32 = h.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
            while s >> 16 != 0 {
                s = (s & 0xffff) + (s >> 16);
            }
            !(s as u16)
        };
        let mut h = [0x45u8, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2];
        let before = csum(&h);
        h[10..12].copy_from_slice(&before.to_be_bytes());
        // The field values as a BPF program loads them: native-endian reads of network bytes.
        let word = |h: &[u8], at: usize| u64::from(u16::from_ne_bytes([h[at], h[at + 1]]));
        let old_ttl = word(&h, 8);
        h[8] = 63;
        let stored = u16::from_ne_bytes([h[10], h[11]]);
        let got = replace(stored, old_ttl, word(&h, 8), 2).unwrap();
        h[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(got.to_ne_bytes(), csum(&h).to_be_bytes());
        h[10..12].copy_from_slice(&got.to_ne_bytes());
        let addr = |h: &[u8]| u64::from(u32::from_ne_bytes(h[12..16].try_into().unwrap()));
        let old_addr = addr(&h);
        h[12..16].copy_from_slice(&[192, 168, 1, 1]);
        let got = replace(got, old_addr, addr(&h), 4).unwrap();
        h[10..12].copy_from_slice(&[0, 0]);
        assert_eq!(got.to_ne_bytes(), csum(&h).to_be_bytes());
        // A diff of 0 changes nothing; a size of 3 or a `from` with a diff is refused.
        assert_eq!(replace(got, 0, 0, 0), Some(got));
        assert_eq!(replace(got, 1, 0, 0), None);
        assert_eq!(replace(got, 0, 0, 3), None);
    }

    #[test]
    fn a_change_of_l3_protocol_moves_20_bytes_after_the_mac_header_and_back() {
        let packet: Vec<u8> = (0..60u8).collect();
        let mut buf = vec![0u8; FRAME];
        buf[HEADROOM..HEADROOM + packet.len()].copy_from_slice(&packet);
        let frame = buf.as_mut_ptr() as u64;
        let mut skb = vec![0u8; SKB_BYTES];
        let data = frame + HEADROOM as u64;
        let mut p = SkbPacket { frame, data, data_end: data + packet.len() as u64, skb: skb.as_mut_ptr() };
        p.set_u32(SKB_PROTOCOL, ETH_P_IP);
        p.set_u32(SKB_HASH, 0x1234);
        let bytes = |p: &SkbPacket| buf_at(p.data, p.len());
        assert_eq!(p.change_proto(u64::from(ETH_P_IPV6), 0), Ok(0));
        let v6 = bytes(&p);
        assert_eq!(v6.len(), 80);
        assert_eq!((&v6[..14], &v6[14..34], &v6[34..]), (&packet[..14], &[0u8; 20][..], &packet[14..]));
        assert_eq!((p.u32_at(SKB_LEN), p.u32_at(SKB_PROTOCOL), p.u32_at(SKB_HASH)), (80, ETH_P_IPV6, 0));
        // Back: the 20 bytes after the MAC header go (whatever they hold).
        assert_eq!(p.change_proto(u64::from(ETH_P_IP), 0), Ok(0));
        assert_eq!((bytes(&p), p.u32_at(SKB_PROTOCOL)), (packet.clone(), ETH_P_IP));
        // Flags, or a protocol the helper does not translate, are refused.
        assert_eq!(p.change_proto(u64::from(ETH_P_IPV6), 1), Ok(errno(EINVAL)));
        assert_eq!(p.change_proto(u64::from(0x8100u16.to_be()), 0), Ok(errno(ENOTSUPP)));
        // The packet type: host to other host and back; none above that.
        assert_eq!((p.change_type(3), p.u32_at(SKB_PKT_TYPE)), (0, 3));
        assert_eq!(p.change_type(7), errno(EINVAL));
        assert_eq!((p.set_hash(Some(9)), p.u32_at(SKB_HASH)), (0, 9));
        assert_eq!((p.set_hash(None), p.u32_at(SKB_HASH)), (0, 0));
    }

    /// `len` bytes at `addr`, in a buffer of the test's.
    fn buf_at(addr: u64, len: u64) -> Vec<u8> {
        // SAFETY: inside the test's frame.
        unsafe { std::slice::from_raw_parts(addr as *const u8, len as usize) }.to_vec()
    }
}
